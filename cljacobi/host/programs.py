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
    block_width : int
        Block width w of the blocked family (0 for the pointwise one).  The
        blocked family takes ``dtype`` ``"float64"`` or ``"complex128"`` and,
        for complex data, the ``layout`` of G and V (the pointwise phase that
        follows works on the same buffers).
    inner_strategy : str
        Strategy of the inner sweeps on the 2w x 2w pivot block (blocked family).
    tile_rows : int
        Rows of G per Gram tile in local memory (blocked family).
    transform_in_local : bool
        Keep the block transformation in local memory (blocked family).
    gram_micro_tile : int
        Blocked family: every work-item of the Gram kernel accumulates a
        ``gram_micro_tile`` x ``gram_micro_tile`` block of the Gram matrix in
        registers (0 for the other families).
    gram_row_slices : int
        Blocked family: groups of work-items of the Gram kernel that share a
        tile's rows; its work-group size follows from this and the micro-tile
        (:func:`cljacobi.host.blocked.gram_work_group_size`).
    rotate_work_group_size : int
        Blocked family: work-items of the inner-sweep (rotate) kernel, any
        positive count (``work_group_size`` sizes none of the blocked kernels).
    update_tile_rows : int
        Blocked family: rows of G (or V) per tile of the update kernel in
        local memory, a multiple of ``update_micro_rows``.
    update_micro_rows, update_micro_cols : int
        Blocked family: every work-item of the update kernel computes an
        ``update_micro_rows`` x ``update_micro_cols`` block of a tile's
        product in registers; its work-group size follows from these and
        ``update_tile_rows`` (:func:`cljacobi.host.blocked.update_work_group_size`).
    """

    family: str
    dtype: str
    work_group_size: int
    accumulate_v: bool
    layout: str = "interleaved"
    strategy: str = "mm"
    rotation: int = 1
    block_width: int = 0
    inner_strategy: str = ""
    tile_rows: int = 0
    transform_in_local: bool = True
    gram_micro_tile: int = 0
    gram_row_slices: int = 0
    rotate_work_group_size: int = 0
    update_tile_rows: int = 0
    update_micro_rows: int = 0
    update_micro_cols: int = 0

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
        if self.block_width:
            if self.dtype not in ("float64", "complex128"):
                raise ValueError(
                    f"the blocked family runs float64 or complex128 data, not {self.dtype!r}")
            for name in ("gram_micro_tile", "gram_row_slices", "rotate_work_group_size",
                         "tile_rows", "update_tile_rows", "update_micro_rows",
                         "update_micro_cols"):
                value = getattr(self, name)
                if not isinstance(value, int) or value < 1:
                    raise ValueError(
                        f"{name} must be a positive integer for the blocked family, "
                        f"not {value!r}")
            if self.update_tile_rows % self.update_micro_rows:
                raise ValueError(
                    f"update_tile_rows={self.update_tile_rows} must be a multiple of "
                    f"update_micro_rows={self.update_micro_rows}")

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
        if self.block_width:
            from ..strategies import step_table

            table = step_table(self.inner_strategy, 2 * self.block_width)
            args["block_width"] = self.block_width
            args["tile_rows"] = self.tile_rows
            args["transform_in_local"] = self.transform_in_local
            args["gram_micro_tile"] = self.gram_micro_tile
            args["gram_row_slices"] = self.gram_row_slices
            args["rotate_work_group_size"] = self.rotate_work_group_size
            args["update_tile_rows"] = self.update_tile_rows
            args["update_micro_rows"] = self.update_micro_rows
            args["update_micro_cols"] = self.update_micro_cols
            args["inner_pairs"] = tuple(
                tuple((int(i), int(j)) for i, j in step) for step in table.pairs
            )
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
