"""What one pointwise run is: its program (:class:`PointwiseSpec`) and its sizes
(:class:`PointwisePlan`), decided once and checked against the device before
any launch.

The sweep loop itself is :class:`cljacobi.host.pointwise.PointwiseHSVD`; the
up-front check of a public call (:func:`cljacobi.host.preflight.preflight`)
asks for the same plan, so the two never compute a size apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyopencl as cl

from ..errors import DeviceCapabilityError
from ..strategies import STRATEGIES
from .device import require_fp64
from .diagonal import DIAG_DTYPE, DIAG_DTYPE_SINGLE
from .limits import check_global_memory, check_local_memory, choose_work_group_size
from .operands import ROW_ALIGNMENT, Operands, bordered_columns, leading_dimensions
from .programs import KERNEL_STRATEGIES, check_layout, work_group_limit
from .signatures import KernelSignature, buffer, c_defines, c_struct, int_arg
from .sizes import REAL_ELEMENT_BYTES, check_power_of_two, round_up

__all__ = ["POINTWISE_DTYPES", "PointwisePlan", "PointwiseSpec"]

#: Element types of the pointwise kernels: double precision, and single
#: precision for devices without fp64.
POINTWISE_DTYPES = ("float64", "complex128", "float32", "complex64")

#: Alignment of the packed-diagonal entry ``cjac_diag`` (16 bytes in both precisions).
_DIAG_ALIGNMENT = 16


@dataclass(frozen=True)
class PointwiseSpec:
    """Specialization parameters of ``templates/pointwise.cl.mako``.

    Attributes
    ----------
    dtype : str
        Element type of G and V, one of :data:`POINTWISE_DTYPES`.
    work_group_size : int
        Work-items per work-group, a power of two (one work-group per pivot pair).
    accumulate_v : bool
        Whether ``cjac_step`` also transforms V.
    layout : str
        Storage of complex G and V: ``"interleaved"`` or ``"split"`` (one of
        :data:`cljacobi.host.programs.COMPLEX_LAYOUTS`); real dtypes take
        ``"interleaved"``.
    strategy : {"mm", "table"}
        Where ``cjac_step`` gets its pivot pairs: ``"mm"`` from the
        closed-form modified modulus stepper in device memory (Novaković &
        Singer 2011, Algorithms 4.3/4.4); ``"table"`` from a step table
        uploaded once per run (:func:`cljacobi.strategies.step_table`; the
        strategies ``"me"``, ``"ring"`` and ``"round-robin"`` share this
        program).
    rotation : {1, 2, 3}
        Rotation algorithm of Zhou & Brent (1997), Sect. 2: 1 plain, 2
        exchange then rotate, 3 Nash's rotation (``docs/design.md``,
        Appendix B).
    """

    family: ClassVar[str] = "pointwise"
    dtype: str
    work_group_size: int
    accumulate_v: bool
    layout: str = "interleaved"
    strategy: str = "mm"
    rotation: int = 1

    def __post_init__(self) -> None:
        if self.dtype not in POINTWISE_DTYPES:
            raise ValueError(f"dtype must be one of {sorted(POINTWISE_DTYPES)}, "
                             f"not {self.dtype!r}")
        check_layout(self.layout, self.complex_)
        check_power_of_two("work_group_size", self.work_group_size)
        if self.strategy not in KERNEL_STRATEGIES:
            raise ValueError(
                f"strategy must be one of {KERNEL_STRATEGIES} (the table strategies share "
                f"'table'), not {self.strategy!r}"
            )
        if self.rotation not in (1, 2, 3):
            raise ValueError(f"rotation must be 1, 2 or 3, not {self.rotation!r}")

    @property
    def complex_(self) -> bool:
        return self.dtype.startswith("complex")

    @property
    def single(self) -> bool:
        """Whether the kernels compute in float (devices without fp64)."""
        return _single(self.dtype)

    @property
    def diag_dtype(self) -> np.dtype:
        """The packed-diagonal entry (d, rho, j) as the host reads it (``cjac_diag``)."""
        return _diag_dtype(self.dtype)

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The arguments of the kernels, declared once.

        ``cjac_step`` takes V (and its ``ldv``, ``mv`` rows) only when it
        accumulates V, the ``stepper`` or else the step table (``pairs``, and
        the ``step`` to read) by the strategy, and ``real_columns`` (the border
        starts there) only with rotation 3; the table strategies also have
        ``cjac_round_positions``, which lays out a certified sweep's rounds.
        """
        store = "cjac_real2" if self.complex_ and self.layout == "interleaved" else "cjac_real"
        columns = f"__global {store} *"
        diagonal = buffer("D", "__global cjac_diag *")
        peak = buffer("peak", "__global cjac_real *")
        stepper = buffer("stepper", "__global int4 *")
        status = buffer("status", "__global int *")
        rotations = buffer("rotations", "__global int *")
        precompute = KernelSignature("cjac_precompute", (
            buffer("G", f"__global const {store} *"), int_arg("ldg"), int_arg("m"), diagonal,
            peak, int_arg("keep_peaks"), stepper, int_arg("r"), int_arg("p"),
        ))
        step = [buffer("G", columns), int_arg("ldg"), int_arg("m")]
        if self.accumulate_v:
            step += [buffer("V", columns), int_arg("ldv"), int_arg("mv")]
        step += [diagonal, peak, int_arg("peak_rounding")]
        if self.strategy == "mm":
            step += [stepper]
        else:
            step += [buffer("pairs", "__global const int2 *"), int_arg("step")]
        step += [status, rotations, int_arg("r")]
        if self.rotation == 3:
            step += [int_arg("real_columns")]
        sweep_status = KernelSignature("cjac_sweep_status", (
            status, rotations, int_arg("slots"), buffer("summary", "__global int *"),
        ))
        kernels = [precompute, KernelSignature("cjac_step", tuple(step)), sweep_status]
        if self.strategy != "mm":  # the rounds of a certified sweep
            kernels.append(KernelSignature("cjac_round_positions", (
                buffer("D", "__global const cjac_diag *"), int_arg("r"),
                buffer("members", "__global const int2 *"), int_arg("first"),
                int_arg("count"), buffer("position", "__global int *"),
                buffer("table", "__global int2 *"),
            )))
        return {sig.name: sig for sig in kernels}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        diag = self.diag_dtype
        return {
            "real_ctype": "float" if self.single else "double",
            "work_group_size": self.work_group_size,
            "accumulate_v": self.accumulate_v,
            "complex_": self.complex_,
            "layout": self.layout,
            "store_ctype": "cjac_real2" if self.complex_ and self.layout == "interleaved"
            else "cjac_real",
            "strategy": self.strategy,
            "rotation": self.rotation,
            "size_defines": c_defines({"WG": self.work_group_size,
                                       "CJAC_DIAG_BYTES": diag.itemsize}),
            "diag_struct": c_struct("cjac_diag", diag, aligned=_DIAG_ALIGNMENT),
            "signatures": self.signatures,
        }


def _single(dtype: str) -> bool:
    return dtype in ("float32", "complex64")


def _diag_dtype(dtype: str) -> np.dtype:
    return DIAG_DTYPE_SINGLE if _single(dtype) else DIAG_DTYPE


def _run_dtype(dtype: np.dtype, single: bool) -> str:
    """The pointwise kernels' element type for data of `dtype`'s kind."""
    complex_ = np.dtype(dtype).kind == "c"
    if single:
        return "complex64" if complex_ else "float32"
    return "complex128" if complex_ else "float64"


@dataclass(frozen=True)
class PointwisePlan:
    """Every size of one pointwise run, decided once (:meth:`for_device`,
    :meth:`for_operands`).

    Attributes
    ----------
    spec : PointwiseSpec
        The program, its work-group size included.
    m, r : int
        Rows and columns of the factor G.
    columns : int
        Columns on the device: `r` bordered to an even count (a multiple of
        the blocked phase's ``2w`` when one runs first), eq. (4.1) of
        Novaković & Singer 2011.
    rows : int
        Rows in use: ``m`` plus one per border column.
    ldg, ldv : int
        Leading dimensions of G and V on the device.
    strategy : str
        The pivot strategy of :mod:`cljacobi.strategies` (``"mm"``, or a
        table strategy, whose tables the run uploads).
    requested : bool
        Whether the work-group size was the caller's (then never narrowed).
    """

    spec: PointwiseSpec
    m: int
    r: int
    columns: int
    rows: int
    ldg: int
    ldv: int
    strategy: str = "mm"
    requested: bool = False

    @classmethod
    def for_device(
        cls, device: cl.Device, rows: int, columns: int, dtype: np.dtype, *,
        accumulate_v: bool, layout: str = "interleaved", strategy: str = "mm",
        rotation: int = 1, single: bool = False, work_group_size: int | None = None,
        column_multiple: int = 2, context: cl.Context | None = None,
    ) -> PointwisePlan:
        """The plan for a ``rows x columns`` factor of `dtype`'s kind on `device`,
        after checking the device (before any launch).

        Parameters
        ----------
        device : pyopencl.Device
            Where the run goes (or anything with the attributes the checks read).
        rows, columns : int
            Shape of the factor G (``columns >= 1``).
        dtype : numpy.dtype
            Real or complex: the kernels run float64/complex128, or with
            `single` float32/complex64 (for a device without fp64).
        accumulate_v, layout, strategy, rotation
            As :class:`PointwiseSpec` (`layout` applies to complex data only;
            `strategy` is a name of :data:`cljacobi.strategies.STRATEGIES`).
        work_group_size : int, optional
            Force a work-group size (a power of two); default by device and rows
            (:func:`cljacobi.host.limits.choose_work_group_size`).
        column_multiple : int
            Border the columns to a multiple of this (even).
        context : pyopencl.Context, optional
            With a context the program is built, and a work-group size larger
            than a compiled kernel takes is halved until it fits.

        Raises
        ------
        DeviceCapabilityError
            No fp64 (double precision), too large a requested work-group, too
            small a device work-group or too little local memory.
        DeviceMemoryError
            The buffers do not fit (also a :class:`MemoryError`).
        """
        return cls._decide(
            device, rows, columns, bordered_columns(columns, column_multiple),
            _run_dtype(dtype, single), accumulate_v=accumulate_v,
            layout=layout, strategy=strategy, rotation=rotation,
            work_group_size=work_group_size, context=context)

    @staticmethod
    def buffers_of(rows: int, columns: int, dtype: np.dtype, *, accumulate_v: bool,
                   strategy: str = "mm", single: bool = False,
                   column_multiple: int = 2) -> dict[str, int]:
        """:attr:`buffers` of the plan :meth:`for_device` makes of these
        arguments, without a device."""
        padded = bordered_columns(columns, column_multiple)
        _, ldg, ldv = leading_dimensions(rows, columns, padded)
        return _buffers(np.dtype(_run_dtype(dtype, single)), padded, ldg, ldv,
                        accumulate_v=accumulate_v, strategy=strategy)

    @classmethod
    def for_operands(
        cls, device: cl.Device, operands: Operands, *, accumulate_v: bool,
        layout: str = "interleaved", strategy: str = "mm", rotation: int = 1,
        work_group_size: int | None = None, context: cl.Context | None = None,
    ) -> PointwisePlan:
        """The plan for sweeps on `operands` (already bordered, in their
        precision), as :meth:`for_device`; raises ValueError if the operands'
        rows in use and leading dimensions are not those of their shape."""
        ops = operands
        rows, ldg, _ = leading_dimensions(ops.m, ops.r, ops.columns)
        expected = (rows, ldg, round_up(ops.v_rows, ROW_ALIGNMENT))
        if (ops.rows, ops.ldg, ops.ldv) != expected:
            raise ValueError(f"operands with (rows, ldg, ldv) = {(ops.rows, ops.ldg, ops.ldv)}; "
                             f"a bordered {ops.m} x {ops.r} factor has {expected}")
        return cls._decide(
            device, ops.m, ops.r, ops.columns, ops.dtype.name, accumulate_v=accumulate_v,
            layout=layout, strategy=strategy, rotation=rotation,
            work_group_size=work_group_size, context=context)

    @classmethod
    def _decide(
        cls, device: cl.Device, m: int, r: int, columns: int, dtype: str, *,
        accumulate_v: bool, layout: str, strategy: str, rotation: int,
        work_group_size: int | None, context: cl.Context | None,
    ) -> PointwisePlan:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; allowed: {STRATEGIES}")
        if not _single(dtype):  # the single precision kernels run without fp64
            require_fp64(device)
        rows, ldg, ldv = leading_dimensions(m, r, columns)
        check_global_memory(device, _buffers(
            np.dtype(dtype), columns, ldg, ldv, accumulate_v=accumulate_v, strategy=strategy))
        size = choose_work_group_size(device, rows, requested=work_group_size)
        spec = PointwiseSpec(
            dtype, size, accumulate_v, layout if dtype.startswith("complex") else "interleaved",
            strategy="mm" if strategy == "mm" else "table", rotation=rotation)
        plan = cls(spec, m, r, columns, rows, ldg, ldv, strategy, work_group_size is not None)
        plan._check_local_memory(device)
        return plan if context is None else plan._fit_kernels(context, device)

    @property
    def work_group_size(self) -> int:
        return self.spec.work_group_size

    @property
    def slots(self) -> int:
        """Pivot pairs per step: one work-group each."""
        return self.columns // 2

    @property
    def local_bytes(self) -> int:
        """Local memory reserved per work-group: 16 bytes per work-item, twice
        what the largest kernel needs (``cjac_step`` and ``cjac_precompute``
        hold one real per work-item, ``cjac_sweep_status`` two ints)."""
        return 2 * self.work_group_size * REAL_ELEMENT_BYTES

    @property
    def buffers(self) -> dict[str, int]:
        """Bytes of every device buffer of the run, by name."""
        return _buffers(np.dtype(self.spec.dtype), self.columns, self.ldg, self.ldv,
                        accumulate_v=self.spec.accumulate_v, strategy=self.strategy)

    def _check_local_memory(self, device: cl.Device) -> None:
        check_local_memory(device, self.local_bytes, "the pointwise step kernel")

    def _fit_kernels(self, context: cl.Context, device: cl.Device) -> PointwisePlan:
        """This plan, its work-group narrowed to what every compiled kernel takes
        (register pressure can leave a kernel below the device's maximum)."""
        plan = self
        while True:
            kernel_max = work_group_limit(context, device, plan.spec)
            size = plan.work_group_size
            if size <= kernel_max:
                return plan
            if plan.requested or size == 1:
                raise DeviceCapabilityError(
                    f"the pointwise kernels run with at most {kernel_max} work-items per "
                    f"work-group on device {device.name.strip()!r}; {size} were requested"
                )
            plan = dataclasses.replace(
                plan, spec=dataclasses.replace(plan.spec, work_group_size=size // 2))
            plan._check_local_memory(device)


def _buffers(dtype: np.dtype, columns: int, ldg: int, ldv: int, *, accumulate_v: bool,
             strategy: str) -> dict[str, int]:
    """Bytes of the device buffers of a run (:attr:`PointwisePlan.buffers`)."""
    diag = _diag_dtype(dtype.name)
    slots = columns // 2
    buffers = {"G": dtype.itemsize * ldg * columns}
    if accumulate_v:
        buffers["V"] = dtype.itemsize * ldv * columns
    buffers["packed diagonal"] = diag.itemsize * columns
    buffers["column peaks"] = diag["d"].itemsize * columns
    buffers["stepper"] = 16 * slots  # int4 per work-group
    buffers["status words"] = 2 * 4 * slots + 8  # status, rotations; the summary
    if strategy != "mm":
        # int2 position pairs, one per work-group and step (columns - 1 steps);
        # two sweeps' worth for the ring
        buffers["step table"] = 8 * slots * (columns - 1) * (2 if strategy == "ring" else 1)
    return buffers
