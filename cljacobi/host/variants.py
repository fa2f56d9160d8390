"""Choosing between the pointwise and the blocked variants, and the block width."""

from __future__ import annotations

import numbers

import pyopencl as cl

from .blocked import BLOCK_VARIANTS, blocked_local_bytes

__all__ = [
    "AUTO_BLOCKED_MIN_ORDER",
    "AUTO_BLOCK_WIDTH",
    "AUTO_WIDE_BLOCK_MIN_ORDER",
    "VARIANTS",
    "check_variant_options",
    "choose_variant",
]

VARIANTS = ("auto", "pointwise", *BLOCK_VARIANTS)

#: Block widths ``variant="auto"`` tries on GPUs, in order, taking the first
#: that fits local memory: 8 below :data:`AUTO_WIDE_BLOCK_MIN_ORDER`, else 16
#: first.
AUTO_BLOCK_WIDTH = (16, 8)

#: ``variant="auto"`` takes the blocked "bo" variant on a GPU from this order of
#: the factor on; below it (and on CPU devices) the pointwise kernel.
#: Measured on an NVIDIA H200 through NVIDIA's OpenCL, the 2011 paper's
#: spectra, seconds of the sweeps (bench/results/eig-H200-2026-11-22-final2.json;
#: pointwise with the me/2 default, blocked with the ME outer strategy):
#:
#: ======  =========  =====  =====
#:    n    pointwise  bo:8   bo:16
#: ======  =========  =====  =====
#:   1024    0.266    0.105    -
#:   2048    0.458    0.326  0.367
#:   4096    4.125    2.029  1.798
#: ======  =========  =====  =====
#:
#: On CPU devices the pointwise kernel stays: PoCL on 2 cores of the CI
#: machine, same family, seconds of the sweeps: n = 256 pointwise 1.15, bo:8
#: 1.11, bo:16 1.08, fb:8 1.24; n = 512 pointwise 6.09, bo:8 9.28, bo:16 9.48,
#: fb:8 9.83 (a CPU work-group runs on one core, so the blocked kernels'
#: shorter streams buy nothing and their Gram and update work costs).
AUTO_BLOCKED_MIN_ORDER = 1024

#: From this order on ``variant="auto"`` prefers block width 16 to 8 (above).
AUTO_WIDE_BLOCK_MIN_ORDER = 4096


def check_variant_options(variant: object, block_width: object) -> None:
    """Device-independent checks of ``variant`` and ``block_width`` (ValueError)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    if block_width is not None and (
        isinstance(block_width, bool)
        or not isinstance(block_width, numbers.Integral)
        or block_width < 1
    ):
        raise ValueError(f"block_width must be a positive integer, not {block_width!r}")


def choose_variant(
    device: cl.Device, order: int, variant: str, block_width: int | None
) -> tuple[str, int]:
    """Validate ``variant``/``block_width`` and resolve ``"auto"``.

    Returns ``(variant, block_width)`` with variant one of ``"pointwise"``,
    ``"bo"``, ``"fb"`` (block width 0 for pointwise).

    Raises
    ------
    ValueError
        Unknown variant; a block width that is not a positive integer, or
        whose pivot block does not fit the device's local memory (the
        message names the device and the limit).
    """
    check_variant_options(variant, block_width)
    if block_width is not None:
        block_width = int(block_width)
        need, have = blocked_local_bytes(block_width), int(device.local_mem_size)
        if need > have:
            raise ValueError(
                f"block_width={block_width} needs {need} bytes of local memory per "
                f"work-group; device {device.name.strip()!r} has {have}"
            )
    if variant == "pointwise":
        return "pointwise", 0
    if variant == "auto":
        is_gpu = bool(device.type & cl.device_type.GPU)
        if not is_gpu or order < AUTO_BLOCKED_MIN_ORDER:
            if block_width is None:
                return "pointwise", 0
        variant = "bo"
    if block_width is None:
        widths = AUTO_BLOCK_WIDTH if order >= AUTO_WIDE_BLOCK_MIN_ORDER else AUTO_BLOCK_WIDTH[1:]
        fitting = [w for w in widths
                   if blocked_local_bytes(w, transform_in_local=True)
                   <= int(device.local_mem_size)]
        if not fitting:
            return "pointwise", 0
        block_width = fitting[0]
    return variant, block_width
