"""Choosing between the pointwise and the blocked variants, and the block width."""

from __future__ import annotations

import math
import numbers

import pyopencl as cl

from .blocked import BLOCK_VARIANTS, REAL_ELEMENT_BYTES, local_memory_fit, offdiag_takes
from .matrix_products import mma_teamed, native_mma

__all__ = [
    "AUTO_BLOCKED_MIN_ORDER",
    "AUTO_BLOCKED_VARIANT",
    "AUTO_BLOCK_WIDTHS",
    "AUTO_COMPLEX_BLOCK_WIDTHS",
    "BATCHED_VARIANT",
    "VARIANTS",
    "check_variant_options",
    "choose_variant",
]

VARIANTS = ("auto", "pointwise", *BLOCK_VARIANTS)

#: The batched kernel: a whole stack of small matrices in one launch
#: (:mod:`cljacobi.host.batched`; eig_indefinite and eigh only).
BATCHED_VARIANT = "batched"

# The measurements behind these rules are in bench/README.md, "Tuning of the
# blocked kernels and of variant='auto'"; each line names its results file.

#: ``variant="auto"`` takes the blocked variant on a GPU from this order of the
#: factor on, else pointwise: since "offdiag" it is 1.4x to 3.3x faster from
#: n = 128 to 1024 (H200, eig_indefinite 0.026 / 0.020 / 0.049 / 0.094 s
#: against 0.036 / 0.050 / 0.143 / 0.314 s pointwise at n = 128 / 256 / 512 /
#: 1024, svd 2.0x-2.2x; bench/results/eig-small-orders-2-H200-2026-11-26.json,
#: svd-small-orders-..., eig-complex-small-orders-...; smaller orders were not
#: measured).  Before, with "bo", from 1024 on
#: (bench/results/eig-H200-2026-11-22-variants3.json).
AUTO_BLOCKED_MIN_ORDER = 128

#: The blocked variant ``"auto"`` takes: "offdiag", the parallel block-oriented
#: algorithm of Novakovic & Singer 2011, Sect. 5 (the pairs within the blocks
#: once a sweep, then only the off-diagonal block), which beat "bo" on an
#: H200 at every order and family measured (real n = 2048 / 4096 / 8192:
#: 0.192 / 0.695 / 3.59 s against 0.238 / 0.787 / 3.82 s; complex, rank-
#: deficient, svd; bench/results/eig-offdiag-H200-2026-11-26.json and the
#: files bench/README.md names).  An odd block width has no "offdiag" (its
#: columns cannot be paired within a block); "auto" takes "bo" for it.
AUTO_BLOCKED_VARIANT = "offdiag"

#: Block widths the blocked variants try without ``block_width``, by order (the
#: first entry whose order the factor reaches; within it the first width whose
#: kernels fit the device's local memory), for real data: 32 from n = 512 on
#: since "offdiag" (H200, eig_indefinite: n = 512 0.049 / 0.048 s at w = 32
#: against 0.055 / 0.057 s at 16 in two runs, n = 768 0.075 against 0.083 s,
#: n = 1024 0.094 / 0.097 / 0.085 s against 0.113 / 0.122 / 0.079 s in three;
#: n = 256 0.020 s at 16 against 0.022 s; svd within 2-4% either way;
#: bench/results/eig-small-orders-H200-2026-11-26.json, -small-orders-2-...,
#: eig-offdiag-1024-...; before, with "bo", 32 from 2048 on,
#: eig-H200-2026-11-22-variants3.json).
AUTO_BLOCK_WIDTHS = ((512, (32, 16, 8)), (0, (16, 8)))

#: The same for complex data, whose 16-byte elements need more local memory:
#: 16 wherever it fits, since the tensor-core and one-launch kernels
#: (bench/results/eig-complex-H200-2026-11-26-widths.json, -widths-1024.json;
#: before them 8 below n = 4096, eig-complex-H200-2026-11-22-blocked.json);
#: 32 from n = 4096 on where the tensor cores multiply it (the teamed Gram
#: kernel, NVIDIA compute capability 9.0 and its static local memory; H200,
#: eig_indefinite 2048 / 4096 / 8192: 0.2557 / 1.2270 / 8.158 s against
#: 0.2514 / 1.2568 / 9.103 s at 16; with the fma kernels 32 was no faster
#: than 16, 1.86 s at 4096; bench/README.md, "Complex block width 32").
AUTO_COMPLEX_BLOCK_WIDTHS = ((4096, (32, 16, 8)), (0, (16, 8)))


def _auto_takes(device: cl.Device, block_width: int, element_bytes: int) -> bool:
    """Whether "auto" may take `block_width`: a width whose Z has
    :data:`~cljacobi.host.matrix_products.MMA_TEAMED_REAL_COLUMNS` real
    columns (complex w = 32) only where the device's tensor cores multiply
    it; every other width wherever it fits."""
    if not mma_teamed(block_width, element_bytes > REAL_ELEMENT_BYTES):
        return True
    return native_mma(device) == "mma.m16n8k4"


def check_variant_options(variant: object, block_width: object, *, batched: bool = False
                          ) -> None:
    """Device-independent checks of ``variant`` and ``block_width`` (ValueError).

    ``batched=True``: the caller also runs :data:`BATCHED_VARIANT`, the
    batched kernel of stacks of small matrices (eig_indefinite).

    ``block_width`` is the width of the blocked variants: with
    ``variant="pointwise"`` it is refused, with ``"auto"`` it asks for the
    blocked variant of that width (:func:`choose_variant`); ``"offdiag"``
    takes even widths and 1 (:func:`cljacobi.host.blocked.offdiag_step_pairs`).
    """
    allowed = (*VARIANTS, BATCHED_VARIANT) if batched else VARIANTS
    if variant not in allowed:
        raise ValueError(f"variant must be one of {allowed}, not {variant!r}")
    if block_width is not None and variant == BATCHED_VARIANT:
        raise ValueError(f"block_width={block_width} applies only to the blocked variants "
                         f"{BLOCK_VARIANTS}; variant='batched' has no blocks")
    if block_width is None:
        return
    if (
        isinstance(block_width, bool)
        or not isinstance(block_width, numbers.Integral)
        or block_width < 1
    ):
        raise ValueError(f"block_width must be a positive integer, not {block_width!r}")
    if variant == "pointwise":
        raise ValueError(
            f"block_width={block_width} applies only to the blocked variants "
            f"{BLOCK_VARIANTS} (or 'auto', where it selects one of them); variant='pointwise' "
            "has no blocks"
        )
    if variant == "offdiag" and not offdiag_takes(block_width):
        raise ValueError(
            f"variant='offdiag' needs an even block_width (or 1), not {block_width}: the "
            "columns of a block are paired within it once a sweep; 'bo' takes odd widths")


def choose_variant(
    device: cl.Device, order: int, variant: str, block_width: int | None, *,
    element_bytes: int = REAL_ELEMENT_BYTES, rows: int | None = None,
) -> tuple[str, int]:
    """Validate ``variant``/``block_width`` and resolve ``"auto"``.

    Parameters
    ----------
    device : pyopencl.Device
        Where the kernels run (its type and local memory decide).
    order : int
        Columns of the factor.
    variant : {"auto", "pointwise", "bo", "offdiag", "fb", "stream"}
        ``"auto"`` is :data:`AUTO_BLOCKED_VARIANT` on a GPU from
        :data:`AUTO_BLOCKED_MIN_ORDER` on, else "pointwise"; with a
        `block_width` it is always the blocked variant of that width
        (:data:`AUTO_BLOCKED_VARIANT`, "bo" for an odd width), on any device
        and at any order (the width is a request for the blocked kernels).
    block_width : int or None
        Requested block width, or None to choose one from
        :data:`AUTO_BLOCK_WIDTHS` (for ``"stream"`` at most the largest power
        of two <= sqrt(order)); not with ``"pointwise"``.
    element_bytes : int, optional
        Bytes of an element of the factor (8 for float64, 16 for
        complex128): what fits the local memory depends on it
        (:func:`cljacobi.host.blocked.local_memory_fit` with the default
        tile sizes, the formula the run's :class:`~cljacobi.host.blocked.BlockedPlan`
        checks).
    rows : int, optional
        Rows of the factor (default `order`).  A tall factor (the ``n x r``
        G of a singular M) makes every pointwise step read ``rows`` entries a
        column, so "auto" takes the blocked kernels when the rows reach
        :data:`AUTO_BLOCKED_MIN_ORDER`, whatever the columns.

    Returns
    -------
    tuple of (str, int)
        ``(variant, block_width)`` with variant one of ``"pointwise"``,
        ``"bo"``, ``"offdiag"``, ``"fb"``, ``"stream"`` (block width 0 for
        pointwise).

    Raises
    ------
    ValueError
        Unknown variant; a block width that is not a positive integer, given
        with ``"pointwise"``, odd with ``"offdiag"``, or whose pivot block does not fit the device's
        local memory (the message names the device and the limit).
    """
    check_variant_options(variant, block_width)
    if block_width is not None:
        block_width = int(block_width)
        fit = local_memory_fit(device, block_width, element_bytes=element_bytes,
                               stream=variant == "stream")
        if not fit.fits:
            raise ValueError(
                f"block_width={block_width} needs {fit.need} bytes of local memory per "
                f"work-group; device {device.name.strip()!r} has {fit.have}"
            )
    if variant == "pointwise":
        return "pointwise", 0
    if variant == "auto":
        is_gpu = bool(device.type & cl.device_type.GPU)
        size = max(order, rows or 0)
        if block_width is None and (not is_gpu or size < AUTO_BLOCKED_MIN_ORDER):
            return "pointwise", 0
        variant = "bo" if block_width is not None and not offdiag_takes(block_width) \
            else AUTO_BLOCKED_VARIANT
    if block_width is None:
        rule = AUTO_COMPLEX_BLOCK_WIDTHS if element_bytes > REAL_ELEMENT_BYTES else \
            AUTO_BLOCK_WIDTHS
        widths = next(widths for least, widths in rule if order >= least)
        fitting = [w for w in widths
                   if _auto_takes(device, w, element_bytes)
                   and local_memory_fit(device, w, element_bytes=element_bytes,
                                        stream=variant == "stream").fits]
        if not fitting:
            return "pointwise", 0
        block_width = fitting[0]
        if variant == "stream":
            # The stream SVD's transformations grow with R = w linearly up to
            # R = sqrt(n) and much faster beyond (Strumpen, Hoffmann & Agarwal
            # 2003, Tables 1-2): the default width stays at or below sqrt(n).
            root = math.isqrt(max(order, 1))
            block_width = min(block_width, 1 << (root.bit_length() - 1))
    return variant, block_width
