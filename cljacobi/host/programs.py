"""Rendering the Mako templates and building (and caching) the OpenCL programs.

A :class:`KernelSpec` is the complete, hashable list of specialization
parameters of a kernel family; it is the only input of rendering and, together
with the device, the key of the in-process program cache.  PyOpenCL's own
binary cache serves later processes.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import warnings
from functools import cache
from pathlib import Path

import pyopencl as cl
from mako.exceptions import MakoException
from mako.lookup import TemplateLookup

__all__ = [
    "COMPLEX_LAYOUTS", "KERNEL_STRATEGIES", "KernelSpec", "build_program", "clear_cache",
    "render",
]

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"

_REAL_CTYPES = {"float64": "double", "float32": "float"}
#: Element type -> the real type of its parts.
_PART_CTYPES = {**_REAL_CTYPES, "complex128": "double", "complex64": "float"}
#: Storage of complex columns (see arith.cl.mako, def element): interleaved
#: (re, im) pairs, or split (a column's real parts, then its imaginary parts).
COMPLEX_LAYOUTS = ("interleaved", "split")

#: How a kernel finds its pivot pairs: the MM stepper or an uploaded table.
KERNEL_STRATEGIES = ("mm", "table")


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """Specialization parameters of one kernel family.

    Attributes
    ----------
    family : str
        Template file stem, e.g. ``"pointwise"`` for ``pointwise.cl.mako``.
    dtype : str
        Element type of the matrices: ``"float64"`` or ``"complex128"``
        (``"float32"``, ``"complex64"`` only where a device lacks fp64).
    work_group_size : int
        Work-items per work-group, a power of two.
    accumulate_v : bool
        Whether the step kernel also transforms V.
    layout : str
        Storage of complex G and V: ``"interleaved"`` or ``"split"`` (one of
        :data:`COMPLEX_LAYOUTS`; the driver's default is ``"split"``); real
        dtypes take ``"interleaved"``.
    strategy : {"mm", "table"}
        Where the step kernel gets its pivot pairs: ``"mm"`` from the
        closed-form modified modulus stepper in device memory (Novaković &
        Singer 2011, Algorithms 4.3/4.4); ``"table"`` from a step table
        uploaded once per run (:func:`cljacobi.strategies.step_table`; the
        strategies ``"me"``, ``"ring"`` and ``"round-robin"`` share this
        program).
    rotation : {1, 2, 3}
        Rotation algorithm of Zhou & Brent (1997), Sect. 2: 1 plain, 2
        exchange then rotate, 3 Nash's rotation (see ``pointwise.cl.mako``).
    """

    family: str
    dtype: str
    work_group_size: int
    accumulate_v: bool
    layout: str = "interleaved"
    strategy: str = "mm"
    rotation: int = 1

    def __post_init__(self) -> None:
        if self.dtype not in _PART_CTYPES:
            raise ValueError(f"dtype must be one of {sorted(_PART_CTYPES)}, not {self.dtype!r}")
        if self.layout not in COMPLEX_LAYOUTS:
            raise ValueError(f"layout must be one of {COMPLEX_LAYOUTS}, not {self.layout!r}")
        if self.dtype in _REAL_CTYPES and self.layout != "interleaved":
            raise ValueError(f"layout {self.layout!r} applies to complex dtypes only")
        w = self.work_group_size
        if w < 1 or w & (w - 1):
            raise ValueError(f"work_group_size must be a power of two, not {w}")
        if self.strategy not in KERNEL_STRATEGIES:
            raise ValueError(
                f"strategy must be one of {KERNEL_STRATEGIES} (the table strategies share "
                f"'table'), not {self.strategy!r}"
            )
        if self.rotation not in (1, 2, 3):
            raise ValueError(f"rotation must be 1, 2 or 3, not {self.rotation!r}")

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        complex_ = self.dtype not in _REAL_CTYPES
        args: dict[str, object] = {
            "real_ctype": _PART_CTYPES[self.dtype],
            "work_group_size": self.work_group_size,
            "accumulate_v": self.accumulate_v,
            "complex_": complex_,
            "layout": self.layout,
            "store_ctype": "cjac_real2" if complex_ and self.layout == "interleaved"
            else "cjac_real",
            "strategy": self.strategy,
            "rotation": self.rotation,
        }
        return args


@cache
def _lookup() -> TemplateLookup:
    return TemplateLookup(directories=[str(TEMPLATE_DIR)], strict_undefined=True)


@cache
def render(spec: KernelSpec) -> str:
    """OpenCL C source of the kernel family `spec` names."""
    try:
        template = _lookup().get_template(f"{spec.family}.cl.mako")
        return template.render(**spec.render_args())
    except (MakoException, NameError, KeyError, TypeError) as error:
        raise RuntimeError(f"rendering {spec} failed: {error}") from error


_log = logging.getLogger("cljacobi")

_programs: dict[tuple[int, int, KernelSpec], cl.Program] = {}
_programs_lock = threading.Lock()


def build_program(context: cl.Context, device: cl.Device, spec: KernelSpec) -> cl.Program:
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
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", cl.CompilerWarning)
                    program = cl.Program(context, source).build(devices=[device])
                for warning in caught:
                    if issubclass(warning.category, cl.CompilerWarning):
                        _log.debug("building %s for %r: %s", spec, device.name.strip(),
                                   program.get_build_info(device, cl.program_build_info.LOG))
                    else:
                        warnings.warn_explicit(warning.message, warning.category,
                                               warning.filename, warning.lineno)
            except cl.RuntimeError as error:
                raise RuntimeError(
                    f"building {spec} for device {device.name.strip()!r} failed:\n{error}"
                ) from error
            _programs[key] = program
        return program


def clear_cache() -> None:
    """Forget every built program (they are rebuilt on next use)."""
    with _programs_lock:
        _programs.clear()
    render.cache_clear()
