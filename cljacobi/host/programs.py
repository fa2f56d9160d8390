"""Rendering the Mako templates and building (and caching) the OpenCL programs.

Every kernel family has its own spec: a frozen, hashable dataclass of exactly
the specialization parameters its template uses, with a ``family`` (the
template's file stem) and ``render_args()`` (:class:`~cljacobi.host.pointwise_plan.PointwiseSpec`,
:class:`~cljacobi.host.blocked.BlockedSpec`,
:class:`~cljacobi.host.factorization.BunchParlettSpec`,
:class:`~cljacobi.host.qr.ColumnQRSpec`,
:class:`~cljacobi.host.operands.ColumnsSpec`,
:class:`~cljacobi.host.hz.HZSpec`, :class:`~cljacobi.host.batched.BatchedSpec`,
:class:`~cljacobi.host.classical.ClassicalSpec`,
:class:`~cljacobi.host.two_sided.TwoSidedSpec`).  The spec is the only input of
rendering and, together with the device, the key of the in-process program
cache.  PyOpenCL's own binary cache serves later processes.

A spec may also ask, through a ``resident_groups`` attribute, that a compute
unit hold at least that many work-groups of each of its kernels at once; on
NVIDIA's OpenCL, whose program binary is PTX, the program is then rebuilt
from its PTX with the ``.minnctapersm`` directive on each kernel that has a
required work-group size (PTX ISA, "Performance-Tuning Directives"), which
caps the registers a work-item takes; elsewhere it changes nothing.  The
arithmetic is the same instructions either way.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from functools import cache
from pathlib import Path
from typing import Protocol

import pyopencl as cl
from mako.exceptions import MakoException
from mako.lookup import TemplateLookup

__all__ = ["COMPLEX_LAYOUTS", "KERNEL_STRATEGIES", "KernelFamilySpec", "build_program",
           "built", "check_layout", "clear_cache", "render", "with_resident_groups",
           "work_group_limit"]

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"

#: Storage of complex columns (see arith.cl.mako, def element): interleaved
#: (re, im) pairs, or split (a column's real parts, then its imaginary parts).
COMPLEX_LAYOUTS = ("interleaved", "split")



def check_layout(layout: str, complex_: bool) -> None:
    """Raise ValueError unless `layout` is one of :data:`COMPLEX_LAYOUTS`, and
    ``"interleaved"`` for real data (the layouts are of complex columns)."""
    if layout not in COMPLEX_LAYOUTS:
        raise ValueError(f"layout must be one of {COMPLEX_LAYOUTS}, not {layout!r}")
    if not complex_ and layout != "interleaved":
        raise ValueError(f"layout {layout!r} applies to complex dtypes only")


#: How a kernel finds its pivot pairs: the MM stepper or an uploaded table.
KERNEL_STRATEGIES = ("mm", "table")


class KernelFamilySpec(Protocol):
    """What rendering and the program cache need of a family's spec (which is
    also hashable: a frozen dataclass)."""

    family: str

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the family's template is rendered with."""


@cache
def _lookup() -> TemplateLookup:
    return TemplateLookup(directories=[str(TEMPLATE_DIR)], strict_undefined=True)


@cache
def render(spec: KernelFamilySpec) -> str:
    """OpenCL C source of the kernel family `spec` names."""
    try:
        template = _lookup().get_template(f"{spec.family}.cl.mako")
        return template.render(**spec.render_args())
    except (MakoException, NameError, KeyError, TypeError) as error:
        raise RuntimeError(f"rendering {spec} failed: {error}") from error


_log = logging.getLogger("cljacobi")

_programs: dict[tuple[int, int, KernelFamilySpec], cl.Program] = {}
_programs_lock = threading.Lock()


def build_program(context: cl.Context, device: cl.Device, spec: KernelFamilySpec) -> cl.Program:
    """The built program for (`device`, `spec`), built once per process.

    A successful build's log (NVIDIA's compiler writes one for every program,
    which pyopencl turns into a ``CompilerWarning``) goes to the ``cljacobi``
    logger at DEBUG level instead of a warning on the caller's line.
    """
    key = (context.int_ptr, device.int_ptr, spec)
    with _programs_lock:
        program = _programs.get(key)
        if program is None:
            source = render(spec)
            try:
                program = built(cl.Program(context, source), device, spec)
            except cl.RuntimeError as error:
                raise RuntimeError(
                    f"building {spec} for device {device.name.strip()!r} failed:\n{error}"
                ) from error
            groups = getattr(spec, "resident_groups", 0)
            if groups:
                program = _resident(context, device, program, groups, spec)
            _programs[key] = program
        return program


_limits: dict[tuple[int, int, KernelFamilySpec], int] = {}


def work_group_limit(context: cl.Context, device: cl.Device, spec: KernelFamilySpec) -> int:
    """The most work-items a work-group of every kernel of (`device`,
    `spec`)'s program may have (``CL_KERNEL_WORK_GROUP_SIZE``, which register
    pressure can put below the device's maximum), found once per program:
    asking means a kernel object of each, some 0.1 ms apiece."""
    key = (context.int_ptr, device.int_ptr, spec)
    with _programs_lock:
        limit = _limits.get(key)
    if limit is None:
        program = build_program(context, device, spec)
        limit = min(k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
                    for k in program.all_kernels())
        with _programs_lock:
            _limits[key] = limit
    return limit


def built(program: cl.Program, device: cl.Device, what: object) -> cl.Program:
    """`program` built for `device`, a successful build's log sent to the
    ``cljacobi`` debug logger (naming `what` was built) rather than warned.

    Every build of the package goes through here: NVIDIA's compiler writes
    a log for every program, which pyopencl would turn into a
    ``CompilerWarning`` on the caller's line.  Other warnings pass through.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cl.CompilerWarning)
        program = program.build(devices=[device])
    for warning in caught:
        if issubclass(warning.category, cl.CompilerWarning):
            _log.debug("building %s for %r: %s", what, device.name.strip(),
                       program.get_build_info(device, cl.program_build_info.LOG))
        else:
            warnings.warn_explicit(warning.message, warning.category,
                                   warning.filename, warning.lineno)
    return program


def with_resident_groups(ptx: str, groups: int) -> str | None:
    """`ptx` with ``.minnctapersm groups`` on every kernel (``.entry``) that
    has a ``.reqntid`` directive, or None if it has no such kernel (or is no
    PTX)."""
    entry = re.compile(r"(\.entry\s+\w+\s*\([^)]*\))(\s*(?:\.(?!minnctapersm)\w+[^\n{]*\s*)*)")
    changed = 0

    def hint(match: re.Match) -> str:
        nonlocal changed
        if ".reqntid" not in match.group(2):
            return match.group(0)
        changed += 1
        return f"{match.group(1)}\n.minnctapersm {groups}{match.group(2)}"

    text = entry.sub(hint, ptx)
    return text if changed else None


def _resident(context: cl.Context, device: cl.Device, program: cl.Program, groups: int,
              spec: KernelFamilySpec) -> cl.Program:
    """`program` rebuilt from its PTX with `groups` resident work-groups a
    compute unit (:func:`with_resident_groups`), or as it is where its binary
    is no PTX or the rebuild fails."""
    devices = program.get_info(cl.program_info.DEVICES)
    binary = program.get_info(cl.program_info.BINARIES)[devices.index(device)]
    try:
        ptx = with_resident_groups(binary.decode("ascii"), groups)
    except UnicodeDecodeError:
        ptx = None
    if ptx is None:
        return program
    try:
        return built(cl.Program(context, [device], [ptx.encode("ascii")]), device, spec)
    except cl.Error as error:
        _log.debug("rebuilding %s with %d resident work-groups failed: %s", spec, groups, error)
        return program


def clear_cache() -> None:
    """Forget every built program (they are rebuilt on next use)."""
    with _programs_lock:
        _programs.clear()
        _limits.clear()
    render.cache_clear()
