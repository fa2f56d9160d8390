"""The blocked one-sided hyperbolic Jacobi driver ("bo", "offdiag", "fb" and "stream" variants).

Novaković & Singer, implicit Hari-Zimmermann GSVD on GPUs, Sect. 2.3-2.5:
the columns of G are grouped into blocks of width w; each parallel step
transforms r/(2w) disjoint block pairs, one work-group each (the kernel in
``templates/blocked.cl.mako``); the outer strategy over the blocks is the
Mantharam-Eberlein table of :mod:`cljacobi.strategies`.  Outer convergence
counts "big" transformations (|t| > sqrt(eps)/2, GSVD paper Sect. 2.5), so
rounding noise in the Gram matrices cannot keep the sweeps going.

The Gram matrix squares the condition number of the pivot block, so the
blocked phase is followed by pointwise sweeps (:class:`PointwiseHSVD`) that
decide final convergence with the relative-orthogonality test of the 2011
paper: the accuracy of the result is that of the pointwise method.

Real (float64) and complex Hermitian (complex128, either storage layout of
:data:`cljacobi.host.programs.COMPLEX_LAYOUTS`) data run the same kernels:
the Gram matrices are ``[G_P G_Q]^* [G_P G_Q]`` and the inner rotations carry
the phase of ``a_ij`` as the pointwise kernel's do.  Complex elements take 16
bytes of local memory, so narrower blocks fit a device
(:func:`blocked_local_bytes`).

:class:`BlockedSpec` holds exactly the template's specialization parameters
and declares the kernels' arguments once (:mod:`cljacobi.host.signatures`);
:meth:`BlockedPlan.for_device` decides every size of a run (work-groups,
local memory, W in local memory or not, row chunks) and checks them against
the device before any launch (docs/design.md, "Kernel families and their
specialization").
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
import pyopencl as cl

from ..strategies import step_table
from .certificate import FinishingCertificate, certificate_mask_bytes
from .device import require_fp64
from .launch import enqueue_kernel, set_scalar_arg
from .limits import (
    check_local_memory,
    check_work_group_size,
    choose_work_group_size,
    static_local_memory,
)
from .matrix_products import (
    MATRIX_PRODUCTS,
    MMA_TEAMED_REAL_COLUMNS,
    PTX_FORMS,
    check_request,
    choose_matrix_products,
    mma_real_columns,
    mma_takes,
    mma_teamed,
)
from .operands import Operands, download, upload
from .pointwise import complex_layout
from .pointwise_plan import PointwiseSpec
from .programs import build_program, check_layout
from .signatures import KernelSignature, buffer, c_defines, int_arg
from .sizes import COMPLEX_ELEMENT_BYTES, REAL_ELEMENT_BYTES, round_up
from .sweeps import RunStats, sweep_until_converged

__all__ = [
    "BLOCK_VARIANTS",
    "COMPLEX_ELEMENT_BYTES",
    "FULL_BLOCK_INNER_SWEEPS",
    "REAL_ELEMENT_BYTES",
    "STREAM_HANDOVER_FRACTION",
    "BlockedHSVD",
    "BlockedPlan",
    "BlockedSpec",
    "LocalMemoryFit",
    "RowChunks",
    "blocked_local_bytes",
    "blocked_tuning",
    "certified_handover",
    "default_gram_stages",
    "default_gram_warps",
    "default_loads_ahead",
    "default_transform_lanes",
    "default_update_column_parts",
    "default_update_groups_per_unit",
    "default_update_products",
    "default_update_stages",
    "default_update_warps",
    "gram_mma_teams",
    "gram_mma_tiles",
    "gram_team_stages_most",
    "gram_work_group_size",
    "inner_step_pairs",
    "local_memory_fit",
    "offdiag_step_pairs",
    "offdiag_takes",
    "stream_stalled",
    "update_work_group_size",
]

BLOCK_VARIANTS = ("bo", "offdiag", "fb", "stream")

#: What the rotate kernel does with the Gram matrix of a block pair: inner
#: Jacobi sweeps ("bo", "fb"), one inner sweep that annihilates only the
#: off-diagonal block G_P^* G_Q except in the first outer step of a sweep
#: ("offdiag": the parallel block-oriented algorithm of Novakovic & Singer
#: 2011, Sect. 5; :func:`offdiag_step_pairs`) or the stream SVD's block
#: transformation ("stream": all rotations from the stale Gram matrix,
#: composed in a fixed order; Strumpen, Hoffmann & Agarwal 2003).
INNER_METHODS = {"bo": "sweeps", "offdiag": "offdiag", "fb": "sweeps", "stream": "stream"}

#: "stream": the blocked sweeps end, and the pointwise sweeps take over, at
#: the first sweep that rotates fewer than this fraction of the pairs and
#: more than half as many as the sweep before (the stale rotations of a
#: block transformation slow to linear convergence near the end, on graded
#: columns more than on others; bench/results/svd-stream-H200-2026-11-25.json).
STREAM_HANDOVER_FRACTION = 0.1


def stream_stalled(rotations_per_sweep: list[int], pairs: int) -> bool:
    """Whether the "stream" blocked sweeps should hand over to the pointwise
    ones (:data:`STREAM_HANDOVER_FRACTION`)."""
    if len(rotations_per_sweep) < 2:
        return False
    last, before = rotations_per_sweep[-1], rotations_per_sweep[-2]
    return last < STREAM_HANDOVER_FRACTION * pairs and 2 * last > before


#: Blocked sweeps followed by certified ones hand over after a sweep of at
#: most this many times r rotations (:func:`certified_handover`) ...
CERTIFIED_HANDOVER_PER_COLUMN = 2

#: ... that rotated at most this fraction of the pairs the sweep before did.
CERTIFIED_HANDOVER_DROP = 1 / 8

#: They also hand over after a sweep of at most this many times r rotations
#: (and the drop) ...
CERTIFIED_HANDOVER_MOST_PER_COLUMN = 8

#: ... where the quadratic estimate of the next sweep's rotations,
#: last^2 / before, is at most this many times r.
CERTIFIED_HANDOVER_NEXT_PER_COLUMN = 1 / 8


def certified_handover(rotations_per_sweep: list[int], columns: int) -> bool:
    """Whether blocked sweeps followed by certified ones should hand over
    after the last sweep: it rotated at most
    :data:`CERTIFIED_HANDOVER_DROP` times as many pairs as the sweep before,
    and at most :data:`CERTIFIED_HANDOVER_PER_COLUMN` times `columns` (r),
    or at most :data:`CERTIFIED_HANDOVER_MOST_PER_COLUMN` times r where the
    next sweep would rotate few: ``last**2 / before``, the count that
    quadratic convergence (the angles squared from sweep to sweep) gives,
    at most :data:`CERTIFIED_HANDOVER_NEXT_PER_COLUMN` times r.

    The run then ends on the certified sweeps' test, as it does after a
    blocked sweep without a big transformation; what changes is who makes
    the last rotations.  Where the counts fall quadratically, the sweep
    after one of a few hundred rotations rotates a handful of pairs
    (``bench/results/eig-H200-2026-11-27-loads-ahead.json``: 201274, 380,
    then 1 at real n = 4096; 80827, 189, then 3 at 8192), yet costs as much
    as any blocked sweep, and a certified sweep rotates that handful for the
    price of one sweep of Gram matrices.  A certified sweep took at most r
    candidates when this rule was set (with more it was a full pointwise
    sweep; now up to 8 r,
    :data:`~cljacobi.host.pointwise.CERTIFIED_CANDIDATES_PER_COLUMN`): in
    the blocked runs under ``bench/results`` a sweep that met both bounds
    was followed
    by one of at most 0.29 r.  Where the counts fall slowly (exact
    clusters of eigenvalues: 23164, 9508, 3893 at n = 2048), the certified
    sweeps would too, each a Gram sweep plus rounds of a few hundred pairs
    (19 of them, ``eig-cluster-H200-2026-11-27-handover-no-drop.json``, against 8
    blocked sweeps): the drop keeps those runs blocked.

    The estimate takes the sweeps of 2 r to 8 r rotations whose successor
    rotates a handful.  On the H200 (``bench/README.md``, "Handing over on
    the estimate of the next sweep"), complex n = 4096 rotated 1585127,
    16262, then 15 (the estimate 167, 0.04 r) and graded real 2048 880816,
    14145, then 14 (227, 0.11 r): each now hands over a sweep earlier.
    Clusters 1e-10 apart, 209763, 15841, then 474 (1196, 0.58 r) at complex
    2048 and 119285, 9230, 296 (714, 0.35 r) real, stay blocked: handed
    over, their certified sweeps rotated 387, 66, 1, 0 (four Gram sweeps
    for one blocked and two certified ones).
    """
    if len(rotations_per_sweep) < 2:
        return False
    last, before = rotations_per_sweep[-2:][::-1]
    if last > CERTIFIED_HANDOVER_DROP * before:
        return False
    return (last <= CERTIFIED_HANDOVER_PER_COLUMN * columns
            or (last <= CERTIFIED_HANDOVER_MOST_PER_COLUMN * columns
                and last * last <= CERTIFIED_HANDOVER_NEXT_PER_COLUMN * columns * before))


#: Inner sweeps of the full-block variant at most (the GSVD paper's bound).
FULL_BLOCK_INNER_SWEEPS = 30

#: Inner strategy on the 2w x 2w pivot block (the GSVD paper uses ME at both levels).
INNER_STRATEGY = "me"

# The measurements behind the defaults below are in bench/README.md, "Tuning of
# the blocked kernels and of variant='auto'"; each line names its results file.

#: Outer strategy over the block columns, a step table of :mod:`cljacobi.strategies`
#: (both sweep parities are uploaded): ME, the fewest outer sweeps (PoCL, no file).
OUTER_STRATEGY = "me"

#: Rows of G per Gram tile in local memory, and the granularity of the row chunks
#: (bench/results/tune-blocked-H200-2026-11-22-update.json).
TILE_ROWS = 64

#: Gram kernel: each work-item sums a GRAM_MICRO_TILE^2 block of the Gram matrix in
#: registers, on and above the diagonal (bench/results/tune-blocked-H200-2026-11-22.json).
GRAM_MICRO_TILE = 4

#: Gram kernel: row slices (groups of work-items sharing a tile's rows) at most
#: (bench/results/tune-blocked-H200-2026-11-22.json).
GRAM_MAX_ROW_SLICES = 8

#: Update kernel: rows of X (G or V) per tile in local memory beside W, for 2w > 32
#: (bench/results/tune-blocked-H200-2026-11-22-update.json).
UPDATE_TILE_ROWS = 32

#: Update tile rows for narrow blocks (2w <= 32), where W is small
#: (bench/results/tune-blocked-H200-2026-11-22-update.json).
UPDATE_TILE_ROWS_NARROW = 64

#: The rotate kernel runs min(w^2, ROTATE_MAX_WORK_GROUP) work-items
#: (bench/results/tune-blocked-H200-2026-11-22.json).
ROTATE_MAX_WORK_GROUP = 512

#: Update kernel: each work-item computes a UPDATE_MICRO_ROWS x UPDATE_MICRO_COLS block
#: of a tile's product in registers (bench/results/tune-blocked-H200-2026-11-22-update.json).
UPDATE_MICRO_ROWS = 4
UPDATE_MICRO_COLS = 4

#: Update kernel: row chunks for this many work-groups per compute unit and step
#: (the Gram kernel keeps 4) (bench/results/tune-blocked-H200-2026-11-22-update.json).
UPDATE_GROUPS_PER_UNIT = 16

#: The same for the tensor-core ("mma") update kernel, whose work-groups each
#: copy the block pair's W to local memory first: fewer, longer chunks
#: (bench/results/tune-mma-chunks-H200-2026-11-26-4096.json, -8192.json), and
#: for complex data, whose work-groups have UPDATE_WARPS_COMPLEX warps
#: (bench/README.md, "The complex update kernel stores whole elements").
UPDATE_MMA_GROUPS_PER_UNIT = 4
UPDATE_MMA_GROUPS_PER_UNIT_COMPLEX = 3

#: The same where Z has 128 real columns (real w = 64, complex w = 32), whose
#: staged update kernel holds one work-group a compute unit (complex n = 4096
#: on an H200 with 8 update warps, 4 stages: 2 / 3 / 4 / 5 / 6 work-groups a
#: unit 1.049 / 1.016 / 0.996 and 1.003-1.008 / 1.039 / 1.034 s;
#: bench/README.md, "The update and Gram kernels' rows through local memory").
UPDATE_MMA_GROUPS_PER_UNIT_TEAMED = 4

#: The tensor-core Gram kernel's row chunks hold at most this many rows
#: (device seconds of the Gram kernel per sweep on the H200, chunks of
#: 832 / 512 / 256 rows at real n = 4096: 0.0106 / 0.0080 / 0.0092 s; of
#: 1664 / 960 / 512 rows at 8192: 0.0745 / 0.0611 / 0.0580 s; complex 4096,
#: 832 / 512 / 256 rows: 0.0326 / 0.0308 / 0.0347 s; bench/README.md).
GRAM_MMA_MAX_CHUNK_ROWS = 512

#: The same for the staged form (``gram_stages``; device seconds of the Gram
#: and rotate kernels a sweep on the H200, real n = 8192, chunks of at most
#: 512 / 768 / 1024 / 1664 rows: Gram 0.0486 / 0.0483 / 0.0453 / 0.0529 s,
#: rotate 0.0212 / 0.0208 / 0.0200 / 0.0196 s; bench/README.md, "The real
#: Gram kernel's rows through local memory").
GRAM_STAGED_MAX_CHUNK_ROWS = 1024

#: The tensor-core ("mma") forms of the Gram and update kernels
#: (:mod:`cljacobi.host.matrix_products`): warps per work-group of each (the
#: Gram kernel's for Z of fewer than 64 real columns, and from 64 on; the
#: update kernel's for real and for complex data), and the blocks of 16 rows
#: an update warp computes at a time (bench/results/tune-mma-H100-2026-11-25.json,
#: tune-mma-complex-H100-2026-11-25.json; the complex Gram kernel with its
#: loads ahead, complex n = 4096, w = 16, on the H200: 2 / 4 / 8 warps
#: 0.0239 / 0.0272 / 0.0362 s a sweep, tune-loads-ahead-complex-H200-2026-11-27-4096.json
#: and experiment-mma-kernels-H200-2026-11-27.md; the complex update kernel
#: with whole-element stores, bench/README.md, "The complex update kernel
#: stores whole elements").
GRAM_WARPS = 4
GRAM_WARPS_WIDE = 2
UPDATE_WARPS = 8
UPDATE_WARPS_COMPLEX = 4
UPDATE_MMA_ROWS = 1

#: The update kernel's warps where Z has 128 real columns (real w = 64,
#: complex w = 32), two a block of rows (:data:`UPDATE_COLUMN_PARTS_TEAMED`):
#: its 135 KB copy of M leaves one work-group a compute unit, and a warp
#: computing all 128 columns holds 248 registers.  With its rows staged
#: (:data:`UPDATE_STAGES_TEAMED`), complex n = 4096 on an H200, one process
#: a variant: 4 / 8 / 12 / 16 warps, two a block, 1.084 / 1.016 / 1.029 /
#: 1.192 s; 4 and 8 warps, a warp a block, 1.067 and 1.026 s (bench/README.md,
#: "The update and Gram kernels' rows through local memory").
UPDATE_WARPS_TEAMED = 8

#: The update warps that share a block of rows, each computing its part of
#: the product's columns (:attr:`BlockedSpec.update_column_parts`): one
#: computes all of them, except where Z has 128 real columns
#: (:func:`default_update_column_parts`; real w = 32 on an H200, 2 parts of
#: 8 warps: 0.532 s at n = 4096 against 0.492 s).
UPDATE_COLUMN_PARTS = 1
UPDATE_COLUMN_PARTS_TEAMED = 2

#: Stages in local memory through which the update warps of a block of rows
#: copy their rows (:attr:`BlockedSpec.update_stages`; 0: the A fragments are
#: loaded from global memory into registers), where Z has 128 real columns,
#: and the columns of Z a stage holds (:data:`UPDATE_STAGE_COLUMNS`).
#: Complex n = 4096 on an H200 with 12 update warps: 0 / 2 / 4 stages
#: 1.134 / 1.168 / 1.140 s before the Gram kernel's stages; with them and 8
#: warps, 2 / 4 / 8 stages 1.069 / 1.016 / 1.018 s (bench/README.md).
UPDATE_STAGES_TEAMED = 4
UPDATE_STAGE_COLUMNS = 16
#: Real products per complex product of the mma update kernel
#: (:attr:`BlockedSpec.update_products`): the real 2K x 2K matrix M of W
#: (4), or Gauss's three for complex data where the kernel is staged
#: (:func:`default_update_products`).
UPDATE_PRODUCTS = 4
UPDATE_PRODUCTS_STAGED_COMPLEX = 3

#: Named barriers a work-group may use beside the work-group's own (PTX's
#: ``bar.sync`` takes barriers 0..15): the update warps of each block of rows
#: that share it wait on their own.
ROW_WARP_BARRIERS = 15


def default_gram_warps(block_width: int, complex_: bool = False) -> int:
    """Warps of the mma Gram kernel by default: fewer where Z has 64 real
    columns (real w = 32, complex w = 16), whose 20 tiles a warp keeps take
    most of its registers; a warp per team where the tiles are split
    (:func:`gram_mma_teams`)."""
    if mma_teamed(block_width, complex_):
        return len(gram_mma_teams(block_width, complex_))
    return GRAM_WARPS_WIDE if mma_real_columns(block_width, complex_) >= 64 else GRAM_WARPS


def default_update_warps(complex_: bool = False, block_width: int | None = None) -> int:
    """Warps of the mma update kernel by default (`block_width`: None, or a
    width whose Z has 128 real columns, :data:`UPDATE_WARPS_TEAMED`)."""
    if block_width is not None and mma_teamed(block_width, complex_):
        return UPDATE_WARPS_TEAMED
    return UPDATE_WARPS_COMPLEX if complex_ else UPDATE_WARPS


def default_update_column_parts(matrix_products: str, complex_: bool = False,
                                block_width: int | None = None) -> int:
    """Update warps a block of rows by default: :data:`UPDATE_COLUMN_PARTS_TEAMED`
    for the mma kernels of Z with 128 real columns, else one."""
    if matrix_products != "fma" and block_width is not None and mma_teamed(block_width,
                                                                            complex_):
        return UPDATE_COLUMN_PARTS_TEAMED
    return UPDATE_COLUMN_PARTS


def default_update_stages(matrix_products: str, complex_: bool = False,
                          block_width: int | None = None) -> int:
    """Stages of the mma update kernel by default: :data:`UPDATE_STAGES_TEAMED`
    for the NVIDIA tensor-core forms of Z with 128 real columns, else 0."""
    if matrix_products in PTX_FORMS and block_width is not None and mma_teamed(
            block_width, complex_):
        return UPDATE_STAGES_TEAMED
    return 0


def default_update_products(complex_: bool = False, update_stages: int = 0) -> int:
    """Real products per complex product of the mma update kernel by
    default: :data:`UPDATE_PRODUCTS_STAGED_COMPLEX` for complex data in the
    staged kernel (the one form that has them), else :data:`UPDATE_PRODUCTS`."""
    return UPDATE_PRODUCTS_STAGED_COMPLEX if complex_ and update_stages else UPDATE_PRODUCTS


def update_matrix_shape(block_width: int, complex_: bool = False,
                        update_products: int = UPDATE_PRODUCTS) -> tuple[int, int]:
    """(rows, columns) of the real matrices the mma update kernel keeps in
    local memory and multiplies Z's rows by: M (RK x RK, RK = 2K for
    complex data, K for real) with four products; Re W, Im W and
    Re W + Im W one below the other (3K x K) with three."""
    K = 2 * block_width
    if update_products == 3:
        return 3 * K, K
    RK = mma_real_columns(block_width, complex_)
    return RK, RK


def _check_update_products(spec: BlockedSpec) -> None:
    """ValueError unless ``spec.update_products`` is 4, or 3 where the staged
    update kernel has them (complex data)."""
    products = spec.update_products
    if products == 4 or (products == 3 and spec.complex_ and spec.update_stages):
        return
    raise ValueError(
        f"update_products={products!r}: the mma update kernel takes 4 real products a complex "
        f"product, or 3 (Gauss) for complex data in the staged kernel, not "
        f"dtype={spec.dtype!r}, update_stages={spec.update_stages}")


def update_stage_reals(update_mma_rows: int = UPDATE_MMA_ROWS) -> int:
    """Doubles of one stage of the staged mma update kernel:
    :data:`UPDATE_STAGE_COLUMNS` columns of ``16 update_mma_rows`` rows, at
    the column stride :func:`gram_stage_ld`."""
    return UPDATE_STAGE_COLUMNS * gram_stage_ld(16 * update_mma_rows)


def _check_update_stages(spec: BlockedSpec) -> None:
    """ValueError unless ``spec.update_stages`` is 0 or a form the staged
    update kernel has."""
    stages = spec.update_stages
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 0:
        raise ValueError(f"update_stages must be a non-negative integer, not {stages!r}")
    if not stages:
        return
    RK = mma_real_columns(spec.block_width, spec.complex_)
    slices = RK // UPDATE_STAGE_COLUMNS if RK % UPDATE_STAGE_COLUMNS == 0 else 0
    rows = 16 * spec.update_mma_rows
    if (not spec.mma or spec.update_loads_ahead or stages < 2 or not slices or 32 % rows
            or (UPDATE_STAGE_COLUMNS // (32 // rows)) % spec.update_column_parts):
        raise ValueError(
            f"update_stages={stages}: the staged update kernel takes an mma form, no loads "
            f"ahead, 2 or more stages, Z in slices of {UPDATE_STAGE_COLUMNS} columns and "
            f"1 or 2 blocks of 16 rows, not "
            f"matrix_products={spec.matrix_products!r}, "
            f"update_loads_ahead={spec.update_loads_ahead}, "
            f"update_mma_rows={spec.update_mma_rows} at w={spec.block_width} ({spec.dtype})")


def default_update_groups_per_unit(matrix_products: str, complex_: bool = False,
                                   block_width: int | None = None) -> int:
    """Work-groups of the update kernel per compute unit and step that its
    row chunks aim at by default (`block_width`: None, or a width whose Z has
    128 real columns, :data:`UPDATE_MMA_GROUPS_PER_UNIT_TEAMED`)."""
    if matrix_products == "fma":
        return UPDATE_GROUPS_PER_UNIT
    if block_width is not None and mma_teamed(block_width, complex_):
        return UPDATE_MMA_GROUPS_PER_UNIT_TEAMED
    return UPDATE_MMA_GROUPS_PER_UNIT_COMPLEX if complex_ else UPDATE_MMA_GROUPS_PER_UNIT


#: Groups of 4 rows whose loads a Gram warp issues before their products,
#: for real and for complex data (device seconds of the mma Gram kernel a
#: sweep on the H200, 1 / 2 / 3 / 4 groups: real n = 4096, w = 32, 0.0112 /
#: 0.0080 / 0.0076 / 0.0074 s; n = 8192 0.0859 / 0.0584 / 0.0553 / 0.0513 s;
#: complex n = 4096, w = 16, 0.0288 / 0.0279 / 0.0304 / 0.0297 s;
#: bench/README.md, "Loads in flight in the tensor-core Gram kernel").
GRAM_MMA_STEPS = 4
GRAM_MMA_STEPS_COMPLEX = 2


def gram_mma_steps(complex_: bool = False) -> int:
    """Groups of 4 rows a warp of the mma Gram kernel loads at a time."""
    return GRAM_MMA_STEPS_COMPLEX if complex_ else GRAM_MMA_STEPS


def gram_stage_ld(stage_rows: int) -> int:
    """The column stride of a stage of the staged mma Gram kernel, in doubles:
    at least `stage_rows`, even (16-byte copies), and 4 or 12 mod 16, so that
    the reads of a half-warp, ``Z[r + t][8 j + g]`` at ``(8 j + g) ld + t``
    for 4 values of g and t, hit 16 distinct banks of 8 bytes."""
    ld = stage_rows
    while ld % 16 not in (4, 12):
        ld += 2
    return ld


def gram_mma_local_reals(block_width: int, complex_: bool, gram_warps: int,
                         gram_stages: int) -> int:
    """Doubles of the mma Gram kernel's local array: the sums of Z^T Z
    (RK x (RK + 1)), or the warps' stages if larger (they share it); teamed,
    the stored tiles (128 doubles each)."""
    RK = mma_real_columns(block_width, complex_)
    if mma_teamed(block_width, complex_):
        return 128 * len(gram_mma_tiles(block_width, complex_))
    rows = 4 * gram_mma_steps(complex_)
    return max(RK * (RK + 1), gram_warps * gram_stages * RK * gram_stage_ld(rows))


def _check_gram_stages(stages: int, matrix_products: str, complex_: bool,
                       loads_ahead: bool, block_width: int = 8) -> None:
    """ValueError unless `stages` is 0 or a form the staged Gram kernel has."""
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 0:
        raise ValueError(f"gram_stages must be a non-negative integer, not {stages!r}")
    if not stages:
        return
    if matrix_products != "fma" and mma_teamed(block_width, complex_):
        most = gram_team_stages_most(block_width, complex_)
        if loads_ahead or not 2 <= stages <= most:
            raise ValueError(
                f"gram_stages={stages}: the staged teamed Gram kernel (w={block_width}) takes "
                f"2 to {most} stages and no loads ahead, not gram_loads_ahead={loads_ahead}")
        return
    if matrix_products == "fma" or complex_ or loads_ahead or stages < 2:
        raise ValueError(
            f"gram_stages={stages}: the staged Gram kernel takes at least 2 stages, "
            f"real data, an mma form and no loads ahead, not "
            f"matrix_products={matrix_products!r}, complex={complex_}, "
            f"gram_loads_ahead={loads_ahead}")
    if 32 % (2 * gram_mma_steps(complex_)):
        raise ValueError("the staged Gram kernel copies stretches of 4, 8 or 16 rows")


#: Rows of a stage of the teamed mma Gram kernel (Z of 128 real columns),
#: whose warps share the stages (:attr:`BlockedSpec.gram_stages`).
GRAM_TEAM_STAGE_ROWS = 16


def gram_team_stages_most(block_width: int, complex_: bool = False) -> int:
    """The most stages of the teamed mma Gram kernel: as many as its stored
    tiles' memory holds (the stages lie there until the tiles are stored)."""
    RK = mma_real_columns(block_width, complex_)
    tiles = 128 * len(gram_mma_tiles(block_width, complex_))
    return tiles // (RK * gram_stage_ld(GRAM_TEAM_STAGE_ROWS))


#: Stages a warp of the mma Gram kernel copies its rows through, for real
#: data (0: the register form; device seconds of the Gram kernel a sweep on
#: the H200, real w = 32, the register form / 2 stages with 2 warps / 2, 3
#: and 4 stages with 1 warp: n = 4096 0.0074 / 0.0070 / 0.0069 / 0.0070 /
#: 0.0074 s, n = 8192 0.0512 / 0.0488 / 0.0499 / 0.0510 / 0.0501 s;
#: bench/results/tune-gram-stages-H200-2026-11-27-4096.json, -8192.json).
GRAM_STAGES = 2

#: Stages the warps of the teamed mma Gram kernel share (Z of 128 real
#: columns; complex n = 4096 on an H200, 0 / 2 / 3 stages: 1.134 / 1.026 /
#: 1.029 s with 12 update warps, - / 1.020 / 1.016 s with 8).
GRAM_TEAM_STAGES = 3


def default_gram_stages(complex_: bool = False, block_width: int | None = None) -> int:
    """Stages of the mma Gram kernel by default (0: no stages): real data's,
    none for complex data, and :data:`GRAM_TEAM_STAGES` for the teamed
    kernel of Z with 128 real columns (`block_width` given)."""
    if block_width is not None and mma_teamed(block_width, complex_):
        return GRAM_TEAM_STAGES
    return 0 if complex_ else GRAM_STAGES


def default_loads_ahead(complex_: bool = False, block_width: int | None = None
                        ) -> tuple[bool, bool]:
    """Whether the mma Gram and update kernels load their next rows ahead, by
    default: (Gram, update).

    Loaded ahead, a warp's values for its next rows are in flight while its
    products (and the update's stores) of these rows run; the products are
    the same, in the same order (the same bits).  Device seconds a sweep on
    the H200 (``bench/README.md``, "Rows loaded ahead in the tensor-core
    kernels"; ``bench/results/tune-loads-ahead-*H200-2026-11-27-*.json``):
    the update kernel, real n = 4096 0.0139 -> 0.0112 s and n = 8192
    0.1061 -> 0.0828 s, but complex n = 4096 0.0524 -> 0.0605 s; the Gram
    kernel, complex n = 4096 0.0309 -> 0.0272 s (4 warps), while for real
    data (20 tiles a warp) a second set of values spills registers
    (0.0074 -> 0.0096 s at n = 4096).  The teamed Gram kernel (Z of 128
    real columns, `block_width` given) has no loads ahead.
    """
    gram, update = (True, False) if complex_ else (False, True)
    if block_width is not None and mma_teamed(block_width, complex_):
        gram = False
    return gram, update


def gram_mma_tiles(block_width: int, complex_: bool = False) -> tuple[tuple[int, int], ...]:
    """The 16 x 8 tiles (i, j) of the RK x RK Gram matrix of Z
    (:func:`mma_real_columns`) that a warp of the mma Gram kernel
    accumulates: those with j >= 2 i, which hold every entry on and above
    the diagonal."""
    RK = mma_real_columns(block_width, complex_)
    return tuple((i, j) for i in range(RK // 16) for j in range(RK // 8) if j >= 2 * i)


def gram_mma_teams(block_width: int, complex_: bool = False
                   ) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The tiles of :func:`gram_mma_tiles` by the warps of the mma Gram
    kernel that keep them: one team of all of them, or, for Z of 128 real
    columns (72 tiles, too many for one warp's registers), four teams of the
    halves L = columns 0..63 and H = 64..127: the triangles L^T L and H^T H
    (20 tiles each, 8 column groups loaded) and the square L^T H by halves of
    its rows (16 tiles each, 12 groups)."""
    tiles = gram_mma_tiles(block_width, complex_)
    if not mma_teamed(block_width, complex_):
        return (tiles,)
    RK = MMA_TEAMED_REAL_COLUMNS
    half_rows, half_groups = RK // 32, RK // 16  # row tiles and column groups of a half
    return (tuple((i, j) for i, j in tiles if j < half_groups),
            tuple((i, j) for i, j in tiles if i >= half_rows),
            tuple((i, j) for i, j in tiles if j >= half_groups and i < half_rows // 2),
            tuple((i, j) for i, j in tiles
                  if j >= half_groups and half_rows // 2 <= i < half_rows))


def _gram_micro_tiles(block_width: int, micro_tile: int) -> int:
    """Micro-tiles on and above the diagonal of the 2w x 2w Gram matrix."""
    per_side = -(-2 * block_width // micro_tile)
    return per_side * (per_side + 1) // 2


def gram_work_group_size(block_width: int, micro_tile: int, row_slices: int) -> int:
    """Work-items per work-group of the Gram kernel.

    One per micro-tile on and above the diagonal and row slice
    (:attr:`BlockedSpec.gram_work_group_size`; the template renders it as its
    ``reqd_work_group_size``).

    Parameters
    ----------
    block_width : int
        Block width w; the Gram matrix is 2w x 2w.
    micro_tile : int
        Edge of the register micro-tile (2w is padded to a multiple of it).
    row_slices : int
        Groups of work-items sharing the rows of a tile.

    Returns
    -------
    int
    """
    return _gram_micro_tiles(block_width, micro_tile) * row_slices


def update_work_group_size(block_width: int, tile_rows: int, micro_rows: int,
                           micro_cols: int) -> int:
    """Work-items per work-group of the update kernel.

    One per register micro-tile of a tile's product: ``tile_rows //
    micro_rows`` micro-tiles down, ``ceil(2w / micro_cols)`` across
    (:attr:`BlockedSpec.update_work_group_size`; the template renders it as
    its ``reqd_work_group_size``).

    Parameters
    ----------
    block_width : int
        Block width w; the tile has 2w columns.
    tile_rows : int
        Rows per tile, a multiple of `micro_rows`.
    micro_rows, micro_cols : int
        Shape of the register micro-tile (2w is padded to a multiple of
        `micro_cols`).

    Returns
    -------
    int
    """
    return tile_rows // micro_rows * -(-2 * block_width // micro_cols)


def default_update_tile_rows(block_width: int) -> int:
    """Rows of the update kernel's tile by default: more for narrow blocks."""
    return UPDATE_TILE_ROWS_NARROW if 2 * block_width <= 32 else UPDATE_TILE_ROWS


def _gram_local_elements(block_width: int, micro_tile: int, tile_rows: int) -> int:
    """Elements of the Gram kernel's local array: the tile (`tile_rows` rows of
    2w columns padded to the micro-tile, odd row stride), which the staged
    2w x (2w + 1) sums reuse."""
    K = 2 * block_width
    return max(tile_rows * (round_up(K, micro_tile) | 1), K * (K + 1))


def transform_registers_take(inner_method: str, block_width: int, work_group_size: int,
                             transform_in_local: bool, lanes: int | None = None,
                             shuffle: str = "local") -> bool:
    """Whether the rotate kernel can keep W in registers in the steps across
    the blocks (``BlockedSpec.transform_in_registers``) with `lanes` work-items
    a row of W (None: ``work_group_size // 2w``, a row each): variant
    "offdiag" (whose steps across pair column a of P with column (a + s) mod
    w of Q), W not in local memory, and L = `lanes` a divisor of 32 (a row's
    lanes in one warp) and of w, each work-item holding ``2w L /
    work_group_size >= 1`` rows (a whole number).  Where the lanes pass W on
    through local memory (`shuffle` "local") L must divide w / 2, each lane
    holding w / L >= 2 columns of P: with one column a lane, PoCL's CPU device
    computed another A (bench/README.md, "W in registers in the rotate
    kernel")."""
    K = 2 * block_width
    if lanes is None:
        lanes = work_group_size // K
    columns = 2 if shuffle == "local" else 1
    return (inner_method == "offdiag" and not transform_in_local and lanes >= 1
            and 32 % lanes == 0 and block_width % (columns * lanes) == 0
            and work_group_size % lanes == 0 and (K * lanes) % work_group_size == 0)


def shuffle_of(matrix_products: str) -> str:
    """How the rotate kernel's lanes pass W's entries on beside the matrix
    products `matrix_products`: ``"ptx"`` (``shfl.sync``) beside the NVIDIA
    tensor-core forms, else ``"local"`` (local memory)."""
    return "ptx" if matrix_products in PTX_FORMS else "local"


def default_transform_lanes(block_width: int, work_group_size: int, shuffle: str) -> int:
    """``BlockedSpec.transform_lanes`` by default: where the lanes pass W on
    by ``shfl.sync``, a lane for every column of P (w lanes, each holding
    ``2w w / work_group_size`` rows; its pair's rotation is the same in every
    row, so a lane reads it once a step), where that layout fits the
    work-group; else 0, a row a work-item.  On the H200 the rotate launch at
    real w = 32 (4 rows a lane) took 65.8 instead of 70.9 us (median over a
    solve at n = 4096; bench/README.md, "W in registers in the rotate
    kernel")."""
    if shuffle == "ptx" and transform_registers_take(
            "offdiag", block_width, work_group_size, False, block_width, shuffle):
        return block_width
    return 0


def rotate_exchange_elements(block_width: int) -> int:
    """Elements of the rotate kernel's local exchange of W's entries (W in
    registers, passed on through local memory): the w entries of Q that each
    of the 2w rows offers, for two steps."""
    return 2 * 2 * block_width * block_width


def _transform_stride(block_width: int, transform_in_local: bool) -> int:
    """Row stride of W in the rotate kernel: odd (2w + 1) in local memory; 2w
    in its global slot, the layout the update kernel reads."""
    return 2 * block_width + 1 if transform_in_local else 2 * block_width


def blocked_local_bytes(
    block_width: int, *, transform_in_local: bool = False, tile_rows: int = TILE_ROWS,
    gram_micro_tile: int = GRAM_MICRO_TILE, update_tile_rows: int | None = None,
    update_micro_cols: int = UPDATE_MICRO_COLS, element_bytes: int = REAL_ELEMENT_BYTES,
    stream: bool = False, matrix_products: str = "fma", gram_warps: int = GRAM_WARPS,
    update_warps: int = UPDATE_WARPS, gram_stages: int = 0, rotate_exchange: int = 0,
    update_stages: int = 0, update_column_parts: int = UPDATE_COLUMN_PARTS,
    update_mma_rows: int = UPDATE_MMA_ROWS, update_products: int = UPDATE_PRODUCTS,
) -> int:
    """Local memory per work-group of the largest blocked kernel, in bytes.

    The one formula of the blocked family's local memory: the plan
    (:meth:`BlockedPlan.for_device`) and the block widths of
    :func:`cljacobi.host.variants.choose_variant` both go through
    :func:`local_memory_fit`, which calls this; the array lengths are those
    :class:`BlockedSpec` renders into the template.

    Parameters
    ----------
    block_width : int
        Block width w; K = 2w.
    transform_in_local : bool
        Whether the rotate kernel keeps the transformation W in local memory.
    tile_rows : int
        Rows of the Gram kernel's tile.
    gram_micro_tile : int
        Edge of the Gram kernel's register micro-tile (pads the tile's
        columns to a multiple of it).
    update_tile_rows : int, optional
        Rows of the update kernel's tile (default
        :func:`default_update_tile_rows`).
    update_micro_cols : int
        Columns of the update kernel's register micro-tile (pads the columns
        of its copy of W to a multiple of it).
    element_bytes : int
        Bytes of an element: :data:`REAL_ELEMENT_BYTES` (float64) or
        :data:`COMPLEX_ELEMENT_BYTES` (complex128; the kernels keep whole
        elements in local memory).
    stream : bool
        The rotate kernel of variant "stream": the Gram matrix and its
        product with W, W (if in local memory), the K x K tangents of phase 1
        (doubles), the signs and largest norms of the columns, and three
        counters per work-item (at most ``min(w^2, ROTATE_MAX_WORK_GROUP)``).
    matrix_products : str
        The form of the Gram and update kernels
        (:mod:`cljacobi.host.matrix_products`): the mma forms keep the sums
        of Z^T Z (RK x (RK + 1) doubles, RK = K for real and 2K for complex
        data) and W as a real matrix (RK x (RK + 4)) in local memory, and
        "mma.emulated" 96 doubles of scratch per warp (`gram_warps`,
        `update_warps`); the tile sizes above are then unused.
    rotate_exchange : int
        Elements of the rotate kernel's exchange of W's entries through
        local memory (:attr:`BlockedSpec.rotate_exchange`).
    update_stages, update_column_parts, update_mma_rows : int
        The staged mma update kernel's stages (:attr:`BlockedSpec.update_stages`),
        for each of its ``update_warps / update_column_parts`` blocks of
        rows, of :func:`update_stage_reals` doubles each.
    update_products : int
        Real products per complex product of the mma update kernel
        (:attr:`BlockedSpec.update_products`): with 3 it keeps Re W, Im W
        and Re W + Im W (3 K x (K + 4) doubles) instead of M.

    Returns
    -------
    int
        The maximum over the kernels of: the Gram kernel's tile
        (tile_rows x (K' | 1) elements, K' = K rounded up to the micro-tile),
        which its staged K x (K + 1) result reuses; the rotate kernel's Gram
        matrix and transformation (if in local memory), K x (K + 1) elements
        each, its rotation parameters (c - 1 real, s_j and s_i elements),
        pairs and flags, and the signs and largest norms of its columns; the
        update kernel's copy of W (K x K' elements, K' = K rounded
        up to its micro-tile's columns) and its tile (update_tile_rows x K
        elements).

    Examples
    --------
    On a device with 48 KiB (49152 bytes) of local memory, complex w = 16
    fits, with W in local memory (the update kernel's 32 x 32 W and 64-row
    tile take exactly 49152 bytes, the rotate kernel with W 36260); complex
    w = 32 does not (the update kernel takes 98304, the Gram tile 66560):

    >>> blocked_local_bytes(16, transform_in_local=True, element_bytes=16)
    49152
    >>> blocked_local_bytes(32, element_bytes=16)
    98304
    """
    K = 2 * block_width
    e = element_bytes
    if matrix_products == "fma":
        gram = e * _gram_local_elements(block_width, gram_micro_tile, tile_rows)
    else:  # doubles: the sums of Z^T Z, M, the scratch of the emulated product
        RK = K * e // REAL_ELEMENT_BYTES
        scratch = 8 * 96 if matrix_products == "mma.emulated" else 0
        gram = 8 * gram_mma_local_reals(block_width, e != REAL_ELEMENT_BYTES, gram_warps,
                                        gram_stages) + scratch * gram_warps
        if (matrix_products == "mma.emulated" and gram_stages
                and mma_teamed(block_width, e != REAL_ELEMENT_BYTES)):
            # emulated, the teamed kernel's stages lie apart from its tiles
            gram += 8 * gram_stages * RK * gram_stage_ld(GRAM_TEAM_STAGE_ROWS)
    # The arrays cjac_block_rotate declares: A (K x LDA) and W (K x LDW, if in
    # local memory) of elements; per pair rot_cm1 (a double), rot_s and rot_si
    # (elements), rot_pair (int2) and five int flags; per column sgn (int) and
    # peak0 (double); block_big; the inner pair table.
    transform = e * K * _transform_stride(block_width, True) if transform_in_local else 0
    if stream:
        items = min(block_width * block_width, ROTATE_MAX_WORK_GROUP)
        rotate = 2 * e * K * (K + 1) + transform + 8 * K * K + (4 + 8) * K + 3 * 4 * items
    else:
        rotate = e * K * (K + 1) + transform \
            + (8 + 2 * e + 8 + 5 * 4) * block_width + (4 + 8) * K + 4 \
            + inner_table_bytes(block_width) + e * rotate_exchange
    if update_tile_rows is None:
        update_tile_rows = default_update_tile_rows(block_width)
    if matrix_products == "fma":
        update = e * K * (round_up(K, update_micro_cols) + update_tile_rows)
    else:
        m_rows, m_columns = update_matrix_shape(block_width, e != REAL_ELEMENT_BYTES,
                                                update_products)
        update = 8 * m_rows * (m_columns + 4) + scratch * update_warps \
            + 8 * (update_warps // update_column_parts) * update_stages \
            * update_stage_reals(update_mma_rows)
    return max(gram, rotate, update)


class LocalMemoryFit(NamedTuple):
    """How the blocked kernels of one block width fit a device's local memory.

    Attributes
    ----------
    need : int
        Bytes per work-group with the transformation W in global memory.
    need_in_local : int
        Bytes per work-group with W in local memory.
    have : int
        The device's local memory per work-group.
    """

    need: int
    need_in_local: int
    have: int

    @property
    def fits(self) -> bool:
        """Whether the kernels run at all (W in global memory)."""
        return self.need <= self.have

    @property
    def transform_in_local(self) -> bool:
        """Whether W fits in local memory beside the rest."""
        return self.need_in_local <= self.have


def local_memory_fit(device: cl.Device, block_width: int, *,
                     element_bytes: int = REAL_ELEMENT_BYTES, stream: bool = False,
                     **sizes: int | str) -> LocalMemoryFit:
    """:func:`blocked_local_bytes` of width `block_width` against `device`'s local memory.

    Parameters
    ----------
    device : pyopencl.Device
        Its local memory for static arrays (every local array of the
        blocked kernels is static): :func:`~cljacobi.host.limits.static_local_memory`.
    block_width : int
        Block width w.
    element_bytes : int, optional
        8 (float64) or 16 (complex128).
    stream : bool, optional
        The rotate kernel of variant "stream".
    **sizes
        The tile sizes :func:`blocked_local_bytes` takes (``tile_rows``,
        ``gram_micro_tile``, ``update_tile_rows``, ``update_micro_cols``);
        the defaults where left out.

    Returns
    -------
    LocalMemoryFit
    """
    return LocalMemoryFit(
        blocked_local_bytes(block_width, element_bytes=element_bytes, stream=stream, **sizes),
        blocked_local_bytes(block_width, transform_in_local=True, element_bytes=element_bytes,
                            stream=stream, **sizes),
        static_local_memory(device))


def inner_table_bytes(block_width: int) -> int:
    """Bytes of the inner strategy's table in local memory (``inner.cl.mako``,
    ``local_pair_table``): 2w - 1 steps of w pairs of uchar indices."""
    return 2 * block_width * (2 * block_width - 1)


@functools.cache
def inner_step_pairs(strategy: str, order: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The step table of the inner sweeps on a K x K pivot block (K = `order`)
    as the templates render it: a tuple of steps, each a tuple of (i, j);
    made once per (strategy, K) and kept, as :func:`offdiag_step_pairs`.

    Raises
    ------
    ValueError
        A step does not cover 0..K-1: the fused row and column update of the
        inner steps (``templates/inner.cl.mako``) relies on it.
    """
    steps = tuple(tuple((int(i), int(j)) for i, j in step)
                  for step in step_table(strategy, order).pairs)
    for step in steps:
        if sorted(i for pair in step for i in pair) != list(range(order)):
            raise ValueError(f"inner strategy {strategy!r}: a step of order {order} does "
                             f"not cover 0..{order - 1}")
    return steps


def offdiag_takes(block_width: int) -> bool:
    """Whether variant "offdiag" runs at this block width: 1 or an even width
    (an odd one cannot pair the columns of a block within it in steps that
    cover it, :func:`offdiag_step_pairs`)."""
    return block_width == 1 or block_width % 2 == 0


@functools.cache
def offdiag_step_pairs(strategy: str, block_width: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The step table of variant "offdiag" on a K x K pivot block, K = 2w:
    first the pairs within each block, then the pairs across the blocks.

    Novakovic & Singer 2011, Sect. 5 ("the parallel block-oriented
    algorithm"): in the first outer step of a sweep every entry of the strict
    upper triangle of the pivot block ``A_P`` is annihilated once; in all
    other steps only the entries of the off-diagonal block ``G_i^T G_j``.
    The rotate kernel runs the whole table in the first outer step of a
    sweep (where every block appears once) and only its last w steps in the
    others.  The paper's inner strategy is row-cyclic; on the GPU a step
    rotates w disjoint pairs at once, so the steps are parallel ones:

    - w - 1 steps within the blocks: step s of `strategy` on the w columns
      of block P and the same step on those of block Q (w/2 pairs each);
    - w steps across: step s pairs column a of P with column
      ``w + (a + s) mod w`` of Q.

    Every step covers 0..K-1, as the fused update of ``inner.cl.mako``
    needs, and every pair i < j of the K columns appears once.  Made once
    per (strategy, w) and kept (about 0.9 ms at w = 32, which every plan of
    a solve paid).

    Raises
    ------
    ValueError
        An odd block width above 1 (its columns cannot be paired within the
        block in steps that cover it).
    """
    w = block_width
    if not offdiag_takes(w):
        raise ValueError(f"variant 'offdiag' needs an even block width (or 1), not w={w}")
    within = () if w == 1 else tuple(
        tuple((int(i) + half, int(j) + half) for half in (0, w) for i, j in step)
        for step in step_table(strategy, w).pairs)
    across = tuple(tuple((a, w + (a + s) % w) for a in range(w)) for s in range(w))
    return within + across


@dataclass(frozen=True, kw_only=True)
class BlockedSpec:
    """Specialization parameters of ``templates/blocked.cl.mako``.

    Every field is rendered into the program, so two specs give the same
    source exactly when they are equal (the program cache's key).  The sizes
    derived from the fields (work-groups, padded tiles, strides, local array
    lengths) are computed here once, rendered as ``#define`` lines
    (:attr:`constants`) and only checked by the template.

    Attributes
    ----------
    dtype : {"float64", "complex128"}
        Element type of G and V.
    layout : {"interleaved", "split"}
        Storage of complex G and V (:data:`cljacobi.host.programs.COMPLEX_LAYOUTS`);
        ``"interleaved"`` for real data.  The partial Gram matrices and the
        transformations are whole elements in either layout.
    block_width : int
        Block width w; the pivot block is K x K with K = 2w.
    inner_strategy : str
        Strategy of the inner sweeps on the pivot block (a step table of
        :mod:`cljacobi.strategies` of order K, rendered as constants; for
        "offdiag" of order w within the blocks, :func:`offdiag_step_pairs`);
        every step must cover the indices 0..K-1.
    inner_method : {"sweeps", "offdiag", "stream"}
        What the rotate kernel does with the Gram matrix: inner Jacobi
        sweeps, one inner sweep over the off-diagonal block (all pairs in the
        first outer step of a sweep), or the stream SVD's block
        transformation (:data:`INNER_METHODS`).
    tile_rows : int
        Rows of G per tile of the Gram kernel in local memory.
    transform_in_local : bool
        Whether the rotate kernel keeps W in local memory (else in its global
        slot).
    gram_micro_tile : int
        RB: every work-item of the Gram kernel accumulates an RB x RB block
        of the Gram matrix in registers.
    gram_row_slices : int
        Groups of work-items of the Gram kernel that share a tile's rows.
    rotate_work_group_size : int
        Work-items of the rotate kernel (any positive count).
    update_tile_rows : int
        Rows of X (G or V) per tile of the update kernel in local memory, a
        multiple of `update_micro_rows`.
    update_micro_rows, update_micro_cols : int
        Every work-item of the update kernel computes an ``update_micro_rows``
        x ``update_micro_cols`` block of a tile's product in registers.
    matrix_products : str
        How the Gram and update kernels multiply
        (:mod:`cljacobi.host.matrix_products`).
    gram_warps, update_warps, update_mma_rows : int
        The mma forms' warps per work-group, and the blocks of 16 rows an
        update warp computes at a time.
    update_column_parts : int
        The mma update warps that share a block of rows, each computing its
        part of the product's columns: 1 (all of them), or 2 (block P's and
        block Q's; the warps of a block wait for each other before they
        store, a named barrier on NVIDIA).  The same products in the same
        order: the same bits.
    gram_loads_ahead, update_loads_ahead : bool
        Whether the mma Gram and update kernels load a warp's next rows while
        the products of its current rows run (:func:`default_loads_ahead`;
        the same products in the same order).
    gram_stages : int
        0, or the stages in local memory through which each warp of the mma
        Gram kernel copies its rows (real data; :func:`gram_stage_ld`), or,
        in the teamed kernel of Z with 128 real columns, which its warps
        share (:func:`gram_team_stages_most`): the copies of the next
        ``gram_stages - 1`` stretches are in flight while the products of
        this one run, the same products in the same order.
    update_stages : int
        0, or the stages in local memory through which the warps of each
        block of rows of the mma update kernel copy their rows
        (:data:`UPDATE_STAGE_COLUMNS` columns of Z a stage,
        :func:`update_stage_reals`): the copies of the next ``update_stages -
        1`` slices are in flight while the products of this one run, the
        same products in the same order (the same bits).
    update_products : int
        Real products per complex product in the mma update kernel: 4, Z
        times the real 2K x 2K matrix M = [[Re W, Im W], [-Im W, Re W]]; or
        (complex data, staged kernel) 3, Gauss's
        ``T1 = Re X Re W``, ``T2 = Im X Im W``,
        ``T3 = (Re X + Im X)(Re W + Im W)``, ``Re(X W) = T1 - T2``,
        ``Im(X W) = T3 - T1 - T2``: three quarters of the products, and the
        rounding of the two sums (Higham, *Accuracy and Stability of
        Numerical Algorithms*, 2nd ed., Sect. 23.2.4: normwise stable).
    transform_in_registers : bool
        Whether the rotate kernel of "offdiag" keeps W in registers during
        the steps across the blocks (:func:`transform_registers_take`; W's
        global slot otherwise, and in the steps within the blocks): the same
        operations on every entry in the same order, the same W.  The lanes
        of a row pass W's entries on by ``shfl.sync`` (inline PTX) where the
        matrix products are an NVIDIA tensor-core form, else through local
        memory.
    transform_lanes : int
        With `transform_in_registers`, the work-items a row of W (each holds
        ``2w transform_lanes / rotate_work_group_size`` rows, w /
        `transform_lanes` columns of P in each); 0: ``rotate_work_group_size
        // 2w``, a row each (:func:`default_transform_lanes`).
    """

    family: ClassVar[str] = "blocked"
    dtype: str
    layout: str = "interleaved"
    block_width: int
    inner_strategy: str = INNER_STRATEGY
    inner_method: str = "sweeps"
    tile_rows: int
    transform_in_local: bool
    gram_micro_tile: int
    gram_row_slices: int
    rotate_work_group_size: int
    update_tile_rows: int
    update_micro_rows: int
    update_micro_cols: int
    matrix_products: str = "fma"
    gram_warps: int = GRAM_WARPS
    update_warps: int = UPDATE_WARPS
    update_mma_rows: int = UPDATE_MMA_ROWS
    update_column_parts: int = UPDATE_COLUMN_PARTS
    gram_loads_ahead: bool = False
    update_loads_ahead: bool = False
    gram_stages: int = 0
    update_stages: int = 0
    update_products: int = UPDATE_PRODUCTS
    transform_in_registers: bool = False
    transform_lanes: int = 0

    def __post_init__(self) -> None:
        if self.dtype not in ("float64", "complex128"):
            raise ValueError(
                f"the blocked family runs float64 or complex128 data, not {self.dtype!r}")
        check_layout(self.layout, self.dtype == "complex128")
        if self.inner_method not in ("sweeps", "offdiag", "stream"):
            raise ValueError(f"inner_method must be 'sweeps', 'offdiag' or 'stream', "
                             f"not {self.inner_method!r}")
        for name in ("block_width", "gram_micro_tile", "gram_row_slices",
                     "rotate_work_group_size", "tile_rows", "update_tile_rows",
                     "update_micro_rows", "update_micro_cols", "gram_warps",
                     "update_warps", "update_mma_rows", "update_column_parts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"{name} must be a positive integer for the blocked family, not {value!r}")
        for name in ("transform_in_local", "gram_loads_ahead", "update_loads_ahead",
                     "transform_in_registers"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, not {getattr(self, name)!r}")
        if not self.mma and (self.gram_loads_ahead or self.update_loads_ahead):
            raise ValueError("loads ahead are a form of the mma kernels, not of "
                             f"matrix_products={self.matrix_products!r}")
        _check_gram_stages(self.gram_stages, self.matrix_products, self.complex_,
                           self.gram_loads_ahead, self.block_width)
        parts = self.update_column_parts
        if parts > 1 and (parts != 2 or not self.mma or self.update_warps % parts
                          or self.update_warps // parts > ROW_WARP_BARRIERS):
            raise ValueError(
                f"update_column_parts={parts}: the mma update kernel splits the columns "
                f"in 2 parts, among an even number of at most {2 * ROW_WARP_BARRIERS} "
                f"warps, not matrix_products={self.matrix_products!r}, "
                f"update_warps={self.update_warps}")
        _check_update_stages(self)
        _check_update_products(self)
        if self.update_tile_rows % self.update_micro_rows:
            raise ValueError(
                f"update_tile_rows={self.update_tile_rows} must be a multiple of "
                f"update_micro_rows={self.update_micro_rows}")
        self.inner_pairs  # noqa: B018 -- raises for a table the kernels cannot run
        if self.matrix_products not in MATRIX_PRODUCTS:
            raise ValueError(f"matrix_products must be one of {MATRIX_PRODUCTS}, "
                             f"not {self.matrix_products!r}")
        lanes = self.transform_lanes
        if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 0:
            raise ValueError(f"transform_lanes must be a non-negative integer, not {lanes!r}")
        if lanes and not self.transform_in_registers:
            raise ValueError("transform_lanes is a layout of W in registers: "
                             "transform_in_registers=True")
        if self.transform_in_registers and not transform_registers_take(
                self.inner_method, self.block_width, self.rotate_work_group_size,
                self.transform_in_local, self.w_lanes, self.shuffle):
            raise ValueError(
                f"transform_in_registers needs inner_method 'offdiag', W outside local "
                f"memory and L lanes a row of W, L a divisor of 32 and of w (of w/2 where "
                f"the shuffle is 'local'), the rotate work-group a divisor of 2w L, not "
                f"inner_method={self.inner_method!r}, "
                f"transform_in_local={self.transform_in_local}, L={self.w_lanes}, "
                f"rotate_work_group_size={self.rotate_work_group_size} at w={self.block_width}")
        if self.mma and not mma_takes(self.block_width, self.complex_):
            raise ValueError(
                f"matrix_products={self.matrix_products!r} needs a block width that is a "
                f"multiple of 8, at most 32 for real data and 16 for complex data (or 64 "
                f"and 32), not w={self.block_width} for {self.dtype}")
        if self.mma and len(self.gram_teams) > 1 and (
                self.gram_warps != len(self.gram_teams) or self.gram_loads_ahead):
            raise ValueError(
                f"the mma Gram kernel of w={self.block_width} ({self.dtype}) splits its tiles "
                f"among {len(self.gram_teams)} warps: gram_warps={len(self.gram_teams)} and no "
                f"loads ahead, not gram_warps={self.gram_warps}, "
                f"gram_loads_ahead={self.gram_loads_ahead}")

    @property
    def inner_pairs(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """The inner step table the template renders (:func:`inner_step_pairs`,
        or :func:`offdiag_step_pairs` for "offdiag")."""
        if self.inner_method == "offdiag":
            return offdiag_step_pairs(self.inner_strategy, self.block_width)
        return inner_step_pairs(self.inner_strategy, 2 * self.block_width)

    @property
    def gram_teams(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """The mma Gram kernel's tiles by warp (:func:`gram_mma_teams`); ()
        for the fma kernels."""
        return gram_mma_teams(self.block_width, self.complex_) if self.mma else ()

    @property
    def w_lanes(self) -> int:
        """Work-items a row of W in registers (`transform_lanes`, or a row a
        work-item)."""
        return self.transform_lanes or self.rotate_work_group_size // (2 * self.block_width)

    @property
    def mma(self) -> bool:
        """Whether the Gram and update kernels multiply 16 x 8 x 4 fragments
        (:mod:`cljacobi.host.matrix_products`)."""
        return self.matrix_products != "fma"

    @property
    def shuffle(self) -> str:
        """How the rotate kernel's lanes pass W's entries on
        (`transform_in_registers`): ``"ptx"`` (``shfl.sync``) beside the
        NVIDIA tensor-core forms, else ``"local"`` (local memory)."""
        return shuffle_of(self.matrix_products)

    @property
    def rotate_exchange(self) -> int:
        """Elements of the rotate kernel's local exchange of W's entries where
        the shuffle goes through local memory (two steps' offers of every
        lane, :func:`rotate_exchange_elements`), else 0."""
        if self.transform_in_registers and self.shuffle == "local":
            return rotate_exchange_elements(self.block_width)
        return 0

    @property
    def whole_group_arg(self) -> bool:
        """Whether the rotate kernel takes ``whole_group`` (1 in the first
        outer step of a sweep, where every block appears once): "offdiag"
        and "stream" rotate the pairs within the blocks only then."""
        return self.inner_method in ("offdiag", "stream")

    @property
    def complex_(self) -> bool:
        """Whether the data are complex Hermitian."""
        return self.dtype == "complex128"

    @property
    def store_ctype(self) -> str:
        """What the G and V buffers hold: ``cjac_real2`` pairs for interleaved
        complex data, else ``cjac_real`` (split complex: re, then im)."""
        return "cjac_real2" if self.complex_ and self.layout == "interleaved" else "cjac_real"

    @property
    def element_bytes(self) -> int:
        """Bytes of an element (in local memory, and of the internal buffers)."""
        return COMPLEX_ELEMENT_BYTES if self.complex_ else REAL_ELEMENT_BYTES

    @property
    def gram_work_group_size(self) -> int:
        """Work-items of the Gram kernel (:func:`gram_work_group_size`, or
        whole warps for the mma form)."""
        if self.mma:
            return 32 * self.gram_warps
        return gram_work_group_size(self.block_width, self.gram_micro_tile,
                                    self.gram_row_slices)

    @property
    def update_work_group_size(self) -> int:
        """Work-items of the update kernel (:func:`update_work_group_size`,
        or whole warps for the mma form)."""
        if self.mma:
            return 32 * self.update_warps
        return update_work_group_size(self.block_width, self.update_tile_rows,
                                      self.update_micro_rows, self.update_micro_cols)

    @property
    def constants(self) -> dict[str, int]:
        """The sizes the template is written in, as its ``#define`` names."""
        w = self.block_width
        K = 2 * w
        RB, UR, UC = self.gram_micro_tile, self.update_micro_rows, self.update_micro_cols
        NB = -(-K // RB)  # micro-tiles per side
        update_nc = -(-K // UC)
        return {
            "BW": w, "K": K, "TILE_ROWS": self.tile_rows,
            "INNER_STEPS": (steps := len(self.inner_pairs)),
            # "offdiag": the steps within the blocks, ahead of those across
            "WITHIN_STEPS": steps - w,
            "GRAM_RB": RB, "GRAM_NB": NB, "GRAM_KP": NB * RB,
            "GRAM_TILES": _gram_micro_tiles(w, RB), "GRAM_SLICES": self.gram_row_slices,
            "GRAM_WG": self.gram_work_group_size,
            # Odd strides against bank conflicts (see the comments at the kernels).
            "GRAM_TILE_STRIDE": (NB * RB) | 1, "GRAM_RESULT_STRIDE": K + 1,
            "GRAM_LOCAL": _gram_local_elements(w, RB, self.tile_rows),
            "ROTATE_WG": self.rotate_work_group_size,
            # W in registers: lanes a row, columns of P a lane, rows a work-item
            # (the rows lid / W_LANES + W_ROW_STEP r)
            "W_LANES": (lanes := self.w_lanes if self.transform_in_registers else 1),
            "W_COLS": w // lanes, "W_ROWS": max(K * lanes // self.rotate_work_group_size, 1),
            "W_ROW_STEP": self.rotate_work_group_size // lanes,
            "W_EXCHANGE": self.rotate_exchange,
            "LDA": K + 1, "LDW": _transform_stride(w, self.transform_in_local),
            "UPDATE_TR": self.update_tile_rows, "UPDATE_RR": UR, "UPDATE_RC": UC,
            "UPDATE_NR": self.update_tile_rows // UR, "UPDATE_NC": update_nc,
            "UPDATE_KP": update_nc * UC, "UPDATE_WG": self.update_work_group_size,
            # the mma form (cljacobi.host.matrix_products); UPDATE_LDW is 4 mod 16
            "GRAM_WARPS": self.gram_warps, "GRAM_MMA_STEPS": gram_mma_steps(self.complex_),
            "UPDATE_WARPS": self.update_warps, "UPDATE_MR": self.update_mma_rows,
            "UPDATE_COLUMN_PARTS": (parts := self.update_column_parts),
            "UPDATE_ROW_WARPS": self.update_warps // parts,
            "RK": (RK := mma_real_columns(w, self.complex_)), "MMA_SUMS_STRIDE": RK + 1,
            # the update's real matrices: M (RK x RK), or Re W, Im W, Re W + Im W
            "UPDATE_M_ROWS": (shape := update_matrix_shape(w, self.complex_,
                                                           self.update_products))[0],
            "UPDATE_NK": (NK := shape[1]),
            "UPDATE_LDW": NK + 4, "UPDATE_PART_TILES": NK // 8 // parts,
            # the staged mma update kernel (update_stages > 0)
            "UPDATE_STAGES": self.update_stages,
            "UPDATE_STAGE_ROWS": (update_rows := 16 * self.update_mma_rows),
            "UPDATE_STAGE_COLUMNS": UPDATE_STAGE_COLUMNS,
            "UPDATE_STAGE_LD": gram_stage_ld(update_rows),
            "UPDATE_STAGE_REALS": update_stage_reals(self.update_mma_rows),
            # the staged mma Gram kernel (gram_stages > 0)
            "GRAM_STAGES": self.gram_stages,
            "GRAM_STAGE_ROWS": (rows := GRAM_TEAM_STAGE_ROWS if len(self.gram_teams) > 1
                                else 4 * gram_mma_steps(self.complex_)),
            "GRAM_STAGE_LD": (ld := gram_stage_ld(rows)), "GRAM_STAGE_REALS": RK * ld,
            "GRAM_MMA_LOCAL": gram_mma_local_reals(w, self.complex_, self.gram_warps,
                                                  self.gram_stages),
            # the teamed mma Gram kernel (RK = 128): its stored tiles
            "GRAM_TILE_COLUMNS": RK // 8,
            "GRAM_TEAM_SUMS": 128 * len(gram_mma_tiles(w, self.complex_)),
        }

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The arguments of the four kernels, declared once."""
        store = self.store_ctype
        outer = buffer("outer_pairs", "__global const int2 *")
        gram = KernelSignature("cjac_block_gram", (
            buffer("G", f"__global const {store} *"), int_arg("ldg"), int_arg("m"),
            int_arg("chunk_rows"), outer, int_arg("step"),
            buffer("partial", "__global cjac_elem *"),
        ))
        rotate = KernelSignature("cjac_block_rotate", (
            buffer("partial", "__global const cjac_elem *"), int_arg("chunks"), int_arg("m"),
            buffer("signs", "__global const int *"), buffer("peak", "__global cjac_real *"),
            outer, int_arg("step"), int_arg("inner_sweeps"),
            buffer("transforms", "__global cjac_elem *"), buffer("rotated", "__global int *"),
            buffer("status", "__global int *"), buffer("rotations", "__global int *"),
        ) + ((int_arg("whole_group"),) if self.whole_group_arg else ()))
        update = KernelSignature("cjac_block_update", (
            buffer("X", f"__global {store} *"), int_arg("ldx"), int_arg("m"),
            int_arg("chunk_rows"), outer, int_arg("step"),
            buffer("transforms", "__global const cjac_elem *"),
            buffer("rotated", "__global const int *"),
        ))
        certify = KernelSignature("cjac_block_certify", (
            buffer("partial", "__global const cjac_elem *"), int_arg("chunks"), int_arg("m"),
            int_arg("step"), buffer("masks", "__global uint *"),
            buffer("found", "__global int *"),
        ))
        return {sig.name: sig for sig in (gram, rotate, update, certify)}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        constants = self.constants
        return {
            "real_ctype": "double", "complex_": self.complex_, "layout": self.layout,
            "store_ctype": self.store_ctype, "inner_method": self.inner_method,
            "transform_in_local": self.transform_in_local,
            "inner_pairs": self.inner_pairs,
            # what the Mako loops unroll
            "gram_micro_tile": constants["GRAM_RB"], "gram_nb": constants["GRAM_NB"],
            "update_micro_rows": constants["UPDATE_RR"],
            "update_micro_cols": constants["UPDATE_RC"],
            "matrix_products": self.matrix_products, "w": self.block_width, "K": 2 * self.block_width,
            "gram_tiles": gram_mma_tiles(self.block_width, self.complex_) if self.mma else (),
            "gram_teams": self.gram_teams,
            "mma_steps": gram_mma_steps(self.complex_), "update_mr": self.update_mma_rows,
            "update_column_parts": self.update_column_parts,
            "gram_loads_ahead": self.gram_loads_ahead,
            "update_loads_ahead": self.update_loads_ahead,
            "gram_stages": self.gram_stages,
            "update_stages": self.update_stages,
            "update_stage_columns": UPDATE_STAGE_COLUMNS,
            "three_products": self.update_products == 3,
            "transform_in_registers": self.transform_in_registers,
            "shuffle": self.shuffle, "w_cols": constants["W_COLS"],
            "w_rows": constants["W_ROWS"],
            "size_defines": c_defines(constants),
            "signatures": self.signatures,
        }


def _integer(name: str, value: object, least: int = 1) -> int | None:
    """`value` as an int, None for None; ValueError if not an integer of at
    least `least` (1: positive, 0: non-negative)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        kind = "positive" if least == 1 else "non-negative"
        raise ValueError(f"{name} must be a {kind} integer, not {value!r}")
    return int(value)


def blocked_tuning(
    block_width: int, *, gram_micro_tile: int | None = None,
    gram_row_slices: int | None = None, rotate_work_group_size: int | None = None,
    tile_rows: int | None = None, update_tile_rows: int | None = None,
    update_micro_rows: int | None = None, update_micro_cols: int | None = None,
    update_groups_per_unit: int | None = None, gram_warps: int | None = None,
    update_warps: int | None = None, update_mma_rows: int | None = None,
    gram_loads_ahead: bool | None = None, update_loads_ahead: bool | None = None,
    gram_stages: int | None = None, transform_in_registers: bool | None = None,
    update_column_parts: int | None = None, update_stages: int | None = None,
    update_products: int | None = None,
) -> dict[str, int | bool | None]:
    """The tuning knobs of :class:`BlockedHSVD`, checked, with the defaults
    that do not depend on the device filled in.

    ``gram_row_slices``, ``rotate_work_group_size``, ``gram_warps``,
    ``update_warps``, ``update_column_parts``, ``update_stages``, ``update_products``,
    ``update_groups_per_unit`` and ``transform_in_registers`` stay None unless given:
    their defaults depend on the device, the rows, the data or the kernels'
    matrix products (:meth:`BlockedPlan.for_device`).

    Raises
    ------
    ValueError
        A knob that is not a positive integer, or update tile rows that are
        no multiple of the micro-tile's rows.
    TypeError
        A loads-ahead or transform_in_registers choice that is neither a
        bool nor None.
    """
    given = {"gram_micro_tile": gram_micro_tile,
             "update_groups_per_unit": update_groups_per_unit,
             "gram_row_slices": gram_row_slices,
             "rotate_work_group_size": rotate_work_group_size,
             "tile_rows": tile_rows, "update_tile_rows": update_tile_rows,
             "update_micro_rows": update_micro_rows, "update_micro_cols": update_micro_cols,
             "gram_warps": gram_warps, "update_warps": update_warps,
             "update_mma_rows": update_mma_rows, "update_column_parts": update_column_parts}
    values = {name: _integer(name, value) for name, value in given.items()}
    defaults = {"gram_micro_tile": GRAM_MICRO_TILE, "tile_rows": TILE_ROWS,
                "update_tile_rows": default_update_tile_rows(block_width),
                "update_micro_rows": UPDATE_MICRO_ROWS, "update_micro_cols": UPDATE_MICRO_COLS,
                "update_mma_rows": UPDATE_MMA_ROWS}
    for name, default in defaults.items():
        if values[name] is None:
            values[name] = default
    if values["update_tile_rows"] % values["update_micro_rows"]:
        raise ValueError(
            f"update_tile_rows={values['update_tile_rows']} must be a multiple of "
            f"update_micro_rows={values['update_micro_rows']}")
    for name, value in (("gram_loads_ahead", gram_loads_ahead),
                        ("update_loads_ahead", update_loads_ahead),
                        ("transform_in_registers", transform_in_registers)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool or None, not {value!r}")
        values[name] = value
    values["gram_stages"] = _integer("gram_stages", gram_stages, least=0)
    values["update_stages"] = _integer("update_stages", update_stages, least=0)
    if update_products not in (None, 3, 4) or isinstance(update_products, bool):
        raise ValueError(f"update_products must be 3 or 4, not {update_products!r}")
    values["update_products"] = update_products
    return values


class RowChunks(NamedTuple):
    """The rows of a kernel's launch split into `count` chunks of `rows` rows
    (the last one partial), one work-group row each."""

    count: int
    rows: int


def _row_chunks(
    rows: int, slots: int, device: cl.Device, groups_per_unit: int = 4
) -> RowChunks:
    """Split the rows so that each step has `groups_per_unit` work-groups per
    compute unit (or chunks of 4 TILE_ROWS rows at least); chunk rows a
    multiple of TILE_ROWS."""
    target = groups_per_unit * int(device.max_compute_units)
    chunks = max(1, min(-(-target // slots), -(-rows // (4 * TILE_ROWS))))
    chunk_rows = round_up(-(-rows // chunks), TILE_ROWS)
    return RowChunks(-(-rows // chunk_rows), chunk_rows)


def _gram_chunks(rows: int, slots: int, device: cl.Device, products: str,
                 staged: bool = False) -> RowChunks:
    """The Gram kernel's row chunks: 4 work-groups per compute unit
    (:func:`_row_chunks`), chunks of at most :data:`GRAM_MMA_MAX_CHUNK_ROWS`
    rows for the tensor-core kernel (:data:`GRAM_STAGED_MAX_CHUNK_ROWS` in
    its staged form)."""
    chunks = _row_chunks(rows, slots, device)
    most = GRAM_STAGED_MAX_CHUNK_ROWS if staged else GRAM_MMA_MAX_CHUNK_ROWS
    if products == "fma" or chunks.rows <= most:
        return chunks
    return RowChunks(-(-rows // most), most)


@dataclass(frozen=True)
class BlockedPlan:
    """Every size of one blocked run, decided once (:meth:`for_device`).

    Attributes
    ----------
    spec : BlockedSpec
        The program.
    rows, columns : int
        Rows of G and (bordered) columns of G, a multiple of 2w.
    accumulate_v : bool
        Whether the update kernel also runs on V (`v_rows` rows).
    inner_sweeps : int
        Inner sweeps at most: 1 ("bo", and "stream", which has none) or
        :data:`FULL_BLOCK_INNER_SWEEPS` ("fb").
    work_group_size : int
        Work-items of the sweep status reduction; it also bounds the default
        Gram row slices.
    local_bytes : int
        Local memory per work-group of the largest kernel, as specialized.
    gram_chunks : RowChunks
        Row chunks of the Gram kernel (partial Gram matrices the rotate
        kernel adds).
    update_g_chunks, update_v_chunks : RowChunks
        Row chunks of the update of G and of V (their own, finer chunks: no
        partial sums to add).
    v_rows : int
        Rows of V: ``columns``, or all rows of a distributed run's columns.
    """

    spec: BlockedSpec
    rows: int
    columns: int
    accumulate_v: bool
    inner_sweeps: int
    work_group_size: int
    local_bytes: int
    gram_chunks: RowChunks
    update_g_chunks: RowChunks
    update_v_chunks: RowChunks
    v_rows: int

    @classmethod
    def for_device(
        cls, device: cl.Device, *, rows: int, columns: int, dtype: object,
        layout: str = "interleaved", block_width: int, variant: str, accumulate_v: bool,
        work_group_size: int | None = None, v_rows: int | None = None,
        matrix_products: str | None = None, **tuning: int | None,
    ) -> BlockedPlan:
        """The plan for a ``rows x columns`` factor on `device`, after checking
        that the device has fp64, the local memory and the work-group sizes
        the kernels need (before any launch).

        Parameters
        ----------
        device : pyopencl.Device
        rows, columns : int
            Rows of G and its columns, a multiple of ``2 * block_width``.
        dtype : numpy.dtype or str
            float64 or complex128.
        layout : {"interleaved", "split"}
            Storage of complex G and V ("interleaved" for real data).
        block_width : int
            Block width w.
        variant : {"bo", "fb", "stream"}
            One inner sweep per block pair, up to
            :data:`FULL_BLOCK_INNER_SWEEPS`, or the stream block transformation.
        accumulate_v : bool
            Whether V is updated too.
        work_group_size : int, optional
            Work-items of the status reduction (a power of two; default from
            the device and the rows, :func:`~cljacobi.host.limits.choose_work_group_size`).
        v_rows : int, optional
            Rows of V (default `columns`).
        matrix_products : str, optional
            The form of the Gram and update kernels, ``"auto"`` or one of
            :data:`~cljacobi.host.matrix_products.MATRIX_PRODUCTS` (default:
            ``CLJACOBI_MATRIX_PRODUCTS``, else ``"auto"``;
            :func:`~cljacobi.host.matrix_products.choose_matrix_products`).
        **tuning
            The knobs of :func:`blocked_tuning` (None or left out: default).

        Raises
        ------
        ValueError
            Unknown variant or dtype, columns no multiple of 2w, a knob that
            is not a positive integer.
        DeviceCapabilityError
            No fp64; the kernels need more local memory per work-group than
            the device has (checked first), or larger work-groups than it
            allows.  The message names the device's limit.
        """
        require_fp64(device)
        if variant not in BLOCK_VARIANTS:
            raise ValueError(f"variant must be one of {BLOCK_VARIANTS}, not {variant!r}")
        w = block_width
        if columns % (2 * w):
            raise ValueError(f"blocked columns must be a multiple of {2 * w}, not {columns}")
        sizes = blocked_tuning(w, **tuning)
        dtype = np.dtype(dtype).name
        complex_ = dtype == "complex128"
        products = choose_matrix_products(device, complex_=complex_, block_width=w,
                                          requested=matrix_products, rows=rows)
        if sizes["gram_warps"] is None:
            sizes["gram_warps"] = default_gram_warps(w, complex_)
        if sizes["update_warps"] is None:
            sizes["update_warps"] = default_update_warps(complex_, w)
        if sizes["update_column_parts"] is None:
            sizes["update_column_parts"] = default_update_column_parts(products, complex_, w)
        if sizes["gram_stages"] is None:  # the register form where loads ahead are asked for
            sizes["gram_stages"] = 0 if products == "fma" or sizes["gram_loads_ahead"] \
                else default_gram_stages(complex_, w)
        ahead = (False, False) if products == "fma" else default_loads_ahead(complex_, w)
        for name, default in zip(("gram_loads_ahead", "update_loads_ahead"), ahead):
            if sizes[name] is None:
                sizes[name] = default
        if sizes["update_stages"] is None:  # the register form where loads ahead are asked for
            sizes["update_stages"] = 0 if sizes["update_loads_ahead"] \
                else default_update_stages(products, complex_, w)
        if sizes["update_products"] is None:
            sizes["update_products"] = default_update_products(complex_, sizes["update_stages"])
        fit_sizes = {
            "element_bytes": COMPLEX_ELEMENT_BYTES if complex_ else REAL_ELEMENT_BYTES,
            "stream": variant == "stream", "matrix_products": products,
            **{name: sizes[name] for name in (
                "tile_rows", "gram_micro_tile", "update_tile_rows", "update_micro_cols",
                "gram_warps", "update_warps", "gram_stages", "update_stages",
                "update_column_parts", "update_mma_rows", "update_products")}}
        fit = local_memory_fit(device, w, **fit_sizes)
        kernels = f"the {'complex ' if complex_ else ''}blocked kernels with block_width={w}"
        check_local_memory(device, fit.need, kernels, fit.have)
        # A width that fits the local memory the device reports is planned
        # within it, as on every device; one that fits only the static local
        # memory of compute capability 9.0 (static_local_memory) takes it all.
        reported = fit._replace(have=int(device.local_mem_size))
        in_local = (reported if reported.fits else fit).transform_in_local
        wg = choose_work_group_size(device, rows, requested=work_group_size)
        device_max = int(device.max_work_group_size)
        slices = sizes["gram_row_slices"]
        if slices is None:
            slices = max(1, min(GRAM_MAX_ROW_SLICES, wg // _gram_micro_tiles(w, sizes[
                "gram_micro_tile"])))
        rotate_wg = sizes["rotate_work_group_size"] or min(w * w, ROTATE_MAX_WORK_GROUP,
                                                           device_max)
        in_registers = sizes["transform_in_registers"]
        if in_registers is None:  # by default where the lanes pass W on by shfl.sync
            in_registers = products in PTX_FORMS and transform_registers_take(
                INNER_METHODS[variant], w, rotate_wg, in_local and reported.fits)
            # A width that fits only the static local memory keeps A there and
            # W in registers (complex w = 32 on an H200: 1.234 -> 1.217 s at
            # n = 4096, bench/README.md, "Complex block width 32").
            in_local = in_local and not in_registers
        elif in_registers and products not in PTX_FORMS:  # W passed on through local memory
            fit = local_memory_fit(device, w, **fit_sizes,
                                   rotate_exchange=rotate_exchange_elements(w))
            check_local_memory(device, fit.need, f"{kernels} and W in registers", fit.have)
        lanes = default_transform_lanes(
            w, rotate_wg, shuffle_of(products)) if in_registers else 0
        spec = BlockedSpec(
            dtype=dtype, layout=layout, block_width=w, inner_method=INNER_METHODS[variant],
            tile_rows=sizes["tile_rows"],
            transform_in_local=in_local, gram_micro_tile=sizes["gram_micro_tile"],
            gram_row_slices=slices, rotate_work_group_size=rotate_wg,
            update_tile_rows=sizes["update_tile_rows"],
            update_micro_rows=sizes["update_micro_rows"],
            update_micro_cols=sizes["update_micro_cols"], matrix_products=products,
            gram_warps=sizes["gram_warps"], update_warps=sizes["update_warps"],
            update_mma_rows=sizes["update_mma_rows"],
            update_column_parts=sizes["update_column_parts"],
            gram_loads_ahead=sizes["gram_loads_ahead"],
            update_loads_ahead=sizes["update_loads_ahead"], gram_stages=sizes["gram_stages"],
            update_stages=sizes["update_stages"], update_products=sizes["update_products"],
            transform_in_registers=in_registers, transform_lanes=lanes)
        for what, size in (("Gram", spec.gram_work_group_size), ("rotate", rotate_wg),
                           ("update", spec.update_work_group_size)):
            check_work_group_size(
                device, size, f"the blocked {what} kernel with block_width={w}",
                f" (gram_micro_tile={spec.gram_micro_tile}, "
                f"gram_row_slices={slices}, rotate_work_group_size={rotate_wg}, "
                f"update_tile_rows={spec.update_tile_rows}, "
                f"update_micro_rows={spec.update_micro_rows}, "
                f"update_micro_cols={spec.update_micro_cols}, "
                f"matrix_products={products!r}, gram_warps={spec.gram_warps}, "
                f"update_warps={spec.update_warps})")
        slots = columns // (2 * w)
        per_unit = sizes["update_groups_per_unit"] or default_update_groups_per_unit(
            products, complex_, w)
        v_rows = columns if v_rows is None else v_rows
        return cls(
            spec, rows, columns, accumulate_v,
            FULL_BLOCK_INNER_SWEEPS if variant == "fb" else 1, wg,
            fit.need_in_local if in_local else fit.need,
            _gram_chunks(rows, slots, device, products,
                         spec.gram_stages > 0 and len(spec.gram_teams) == 1),
            _row_chunks(rows, slots, device, per_unit),
            _row_chunks(v_rows, slots, device, per_unit), v_rows)

    @property
    def blocks(self) -> int:
        """Block columns of width w."""
        return self.columns // self.spec.block_width

    @property
    def slots(self) -> int:
        """Block pairs per parallel step (one work-group row each)."""
        return self.blocks // 2

    @property
    def partial_bytes(self) -> int:
        """The partial Gram matrices: one K x K matrix per pair and row chunk."""
        K = 2 * self.spec.block_width
        return self.spec.element_bytes * self.slots * self.gram_chunks.count * K * K

    @property
    def transforms_bytes(self) -> int:
        """The transformations W: one K x K matrix per pair."""
        K = 2 * self.spec.block_width
        return self.spec.element_bytes * self.slots * K * K

    def launches(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """(global size, local size) of the Gram, rotate and update launches
        (the update of V as ``"update_v"``)."""
        spec, slots = self.spec, self.slots
        gram_wg, rotate_wg = spec.gram_work_group_size, spec.rotate_work_group_size
        update_wg = spec.update_work_group_size
        return {
            "gram": ((slots * gram_wg, self.gram_chunks.count), (gram_wg, 1)),
            "rotate": ((slots * rotate_wg,), (rotate_wg,)),
            "update_g": ((slots * update_wg, self.update_g_chunks.count), (update_wg, 1)),
            "update_v": ((slots * update_wg, self.update_v_chunks.count), (update_wg, 1)),
        }


class BlockedHSVD:
    """Device buffers and the outer sweep loop of the blocked method.

    Parameters
    ----------
    queue : pyopencl.CommandQueue
    accumulate_v : bool
    block_width : int
        Width w of a block column; the pivot block is 2w x 2w.
    variant : {"bo", "fb", "stream"}
        One inner sweep per block pair, inner sweeps until the block has no
        big rotation (at most :data:`FULL_BLOCK_INNER_SWEEPS`), or the stream
        SVD's block transformation (Strumpen, Hoffmann & Agarwal 2003: the
        rotations of all pairs across the two blocks from the same Gram
        matrix, applied in a fixed order as one 2w x 2w transformation; in
        the first outer step of a sweep the pairs within each block first,
        then those across with the Gram matrix brought up to date).
    work_group_size : int, optional
        Work-items per work-group of the sweep status reduction (a power of
        two), which also bound the default Gram row slices and rotate
        work-group; chosen from the device and the row count by default.

    Other Parameters
    ----------------
    gram_micro_tile : int, optional
        Edge of the Gram kernel's register micro-tile (default
        :data:`GRAM_MICRO_TILE`).
    gram_row_slices : int, optional
        Row slices of the Gram kernel's work-group (default: as many as keep
        it within the update kernel's work-group, at most
        :data:`GRAM_MAX_ROW_SLICES`).
    rotate_work_group_size : int, optional
        Work-items of the rotate kernel (default: w^2, at most
        :data:`ROTATE_MAX_WORK_GROUP` and the device's limit).
    tile_rows : int, optional
        Rows of the Gram kernel's tile (default :data:`TILE_ROWS`; the row
        chunks stay multiples of :data:`TILE_ROWS`).
    update_tile_rows : int, optional
        Rows of the update kernel's tile (default
        :data:`UPDATE_TILE_ROWS_NARROW` for 2w <= 32, else
        :data:`UPDATE_TILE_ROWS`), a multiple of `update_micro_rows`.
    update_micro_rows, update_micro_cols : int, optional
        Shape of the update kernel's register micro-tile (defaults
        :data:`UPDATE_MICRO_ROWS`, :data:`UPDATE_MICRO_COLS`); the kernel's
        work-group size follows (:func:`update_work_group_size`).
    update_groups_per_unit : int, optional
        Row chunks of the update kernels such that a step has this many
        work-groups per compute unit (default :data:`UPDATE_GROUPS_PER_UNIT`,
        :data:`UPDATE_MMA_GROUPS_PER_UNIT` for the tensor-core kernels).
    matrix_products : str, optional
        How the Gram and update kernels multiply: ``"auto"`` or one of
        :data:`~cljacobi.host.matrix_products.MATRIX_PRODUCTS` (default
        ``CLJACOBI_MATRIX_PRODUCTS``, else ``"auto"``: the device's FP64
        tensor cores for real data and w a multiple of 8).
    gram_warps, update_warps, update_mma_rows : int, optional
        The mma forms' warps per Gram and update work-group, and the blocks
        of 16 rows an update warp computes at a time (defaults
        :func:`default_gram_warps`, :func:`default_update_warps`,
        :data:`UPDATE_MMA_ROWS`).
    update_column_parts : int, optional
        The mma update warps a block of rows, each computing its part of the
        product's columns (1 or 2; default :func:`default_update_column_parts`).
    gram_loads_ahead, update_loads_ahead : bool, optional
        Whether the mma Gram and update kernels load a warp's next rows
        during its products (default :func:`default_loads_ahead`; the same
        bits either way).
    gram_stages : int, optional
        Stages in local memory through which each warp of the real mma Gram
        kernel (all warps of the teamed one, together) copies its rows, 0 for
        the register form (default
        :func:`default_gram_stages`, or 0 where Gram loads ahead are asked
        for; the same products either way).
    update_stages : int, optional
        Stages in local memory through which the warps of each block of rows
        of the mma update kernel copy their rows, 0 for the register form
        (default :func:`default_update_stages`, or 0 where update loads ahead
        are asked for; the same products either way).
    update_products : int, optional
        Real products per complex product in the mma update kernel, 4 or 3
        (default :func:`default_update_products`: 3 for complex data in the
        staged kernel; :attr:`BlockedSpec.update_products`).
    transform_in_registers : bool, optional
        Whether the rotate kernel of variant "offdiag" keeps W in registers
        in the steps across the blocks (default: where it runs and the
        matrix products are an NVIDIA tensor-core form,
        :func:`transform_registers_take`; the same W either way).

    These tuning parameters exist to compare kernel variants; every choice
    gives the same rotations up to the rounding of the Gram sums (the
    update kernel's results do not depend on its tile and micro-tile).  The
    sizes of a run are decided by :meth:`BlockedPlan.for_device` when it
    starts (:attr:`plan`: the last run's).

    Raises
    ------
    ValueError
        An unknown variant, a tuning parameter that is not a positive
        integer, or update tile rows that are no multiple of the
        micro-tile's rows.
    DeviceCapabilityError
        No fp64; when run (before any launch): the kernels need more local
        memory than the device has, or larger work-groups than it allows.
    """

    def __init__(
        self,
        queue: cl.CommandQueue,
        *,
        accumulate_v: bool,
        block_width: int,
        variant: str,
        work_group_size: int | None = None,
        gram_micro_tile: int | None = None,
        gram_row_slices: int | None = None,
        rotate_work_group_size: int | None = None,
        tile_rows: int | None = None,
        update_tile_rows: int | None = None,
        update_micro_rows: int | None = None,
        update_micro_cols: int | None = None,
        update_groups_per_unit: int | None = None,
        matrix_products: str | None = None,
        gram_warps: int | None = None,
        update_warps: int | None = None,
        update_mma_rows: int | None = None,
        gram_loads_ahead: bool | None = None,
        update_loads_ahead: bool | None = None,
        gram_stages: int | None = None,
        transform_in_registers: bool | None = None,
        update_column_parts: int | None = None,
        update_stages: int | None = None,
        update_products: int | None = None,
    ) -> None:
        if variant not in BLOCK_VARIANTS:
            raise ValueError(f"variant must be one of {BLOCK_VARIANTS}, not {variant!r}")
        self.queue = queue
        self.device = queue.device
        require_fp64(self.device)
        self.accumulate_v = accumulate_v
        self.block_width = block_width
        self.variant = variant
        self.inner_sweeps = FULL_BLOCK_INNER_SWEEPS if variant == "fb" else 1
        self.requested_work_group_size = work_group_size
        #: The tuning knobs (:func:`blocked_tuning`), for :meth:`BlockedPlan.for_device`.
        self.tuning = blocked_tuning(
            block_width, gram_micro_tile=gram_micro_tile, gram_row_slices=gram_row_slices,
            rotate_work_group_size=rotate_work_group_size, tile_rows=tile_rows,
            update_tile_rows=update_tile_rows, update_micro_rows=update_micro_rows,
            update_micro_cols=update_micro_cols, update_groups_per_unit=update_groups_per_unit,
            gram_warps=gram_warps, update_warps=update_warps, update_mma_rows=update_mma_rows,
            gram_loads_ahead=gram_loads_ahead, update_loads_ahead=update_loads_ahead,
            gram_stages=gram_stages, transform_in_registers=transform_in_registers,
            update_column_parts=update_column_parts, update_stages=update_stages,
            update_products=update_products)
        check_request(matrix_products)
        self.matrix_products = matrix_products
        # The knobs as attributes (bench/tune_blocked.py records them; the
        # device-dependent defaults stay None until a run's plan).
        for name, value in self.tuning.items():
            setattr(self, name, value)
        self.plan: BlockedPlan | None = None
        #: The last run's :class:`~cljacobi.host.certificate.FinishingCertificate`
        #: (None after a run on given `outer_pairs`, or where its masks do not
        #: fit one buffer).
        self.certificate: FinishingCertificate | None = None

    def run(self, G: np.ndarray, signs: np.ndarray, *, max_sweeps: int,
            layout: str | None = None):
        """Blocked sweeps on `G` (m x r, `signs` sorted, +1 first) until no big
        transformation happens.

        Parameters
        ----------
        G : numpy.ndarray
            Real (computed in float64) or complex (complex128) factor.
        signs : numpy.ndarray
            The signature of the r columns, +1 or -1.
        max_sweeps : int
            Outer sweeps at most.
        layout : {"interleaved", "split"}, optional
            Device storage of complex G and V (default
            :func:`cljacobi.host.pointwise.complex_layout`, the pointwise
            kernels' default); ignored for real G.

        Returns
        -------
        tuple
            ``(G, V, stats)``: the transformed G, the accumulated V (or None)
            with ``G_new = G @ V``, and the :class:`RunStats`.
        """
        complex_ = np.iscomplexobj(G)
        split = complex_ and complex_layout(layout, blocked=True) == "split"
        operands = upload(self.queue, G, signs, accumulate_v=self.accumulate_v,
                          column_multiple=2 * self.block_width,
                          dtype=np.complex128 if complex_ else np.float64, split=split)
        stats = self.run_operands(operands, max_sweeps=max_sweeps)
        G, V = download(self.queue, operands)
        stats.seconds["transfer"] = operands.transfer_seconds
        return G, V, stats

    def run_operands(self, operands: Operands, *, max_sweeps: int,
                     outer_pairs: np.ndarray | None = None,
                     certified_finish: bool = False) -> RunStats:
        """Blocked sweeps on the device operands, in place.

        ``operands`` hold float64 or complex128 data (complex ones in the
        layout ``operands.split`` says, rendered into the kernels) with
        ``operands.columns`` a multiple of ``2 * block_width``.
        `outer_pairs` (``steps x blocks/2 x 2`` block pairs, each block
        once a step) replaces the outer strategy's table of a sweep (a
        distributed run's steps that pair only the blocks of two stripes).
        `certified_finish`: the caller's pointwise sweeps take the
        certificate this run leaves (:attr:`certificate`), so the blocked
        sweeps may end early (:func:`certified_handover`).
        """
        seconds = {"sweeps": 0.0, "sort": 0.0}
        w = self.block_width
        ops = operands
        if ops.columns % (2 * w) or ops.dtype not in (np.float64, np.complex128) or (
                self.accumulate_v and ops.v is None):
            raise ValueError(
                f"blocked operands must be float64 or complex128 with columns a multiple "
                f"of {2 * w}" + (" and V" if self.accumulate_v else "")
            )
        complex_ = ops.dtype == np.complex128
        plan = self.plan = BlockedPlan.for_device(
            self.device, rows=ops.rows, columns=ops.columns, dtype=ops.dtype,
            layout="split" if complex_ and ops.split else "interleaved", block_width=w,
            variant=self.variant, accumulate_v=self.accumulate_v,
            work_group_size=self.requested_work_group_size, v_rows=ops.v_rows,
            matrix_products=self.matrix_products, **self.tuning)
        wg = plan.work_group_size
        program = build_program(self.queue.context, self.device, plan.spec)
        status_spec = PointwiseSpec("float64", wg, False)
        status_program = build_program(self.queue.context, self.device, status_spec)

        if outer_pairs is None:
            tables = [step_table(OUTER_STRATEGY, plan.blocks, sweep=s).pairs for s in (0, 1)]
        else:
            if outer_pairs.ndim != 3 or outer_pairs.shape[1:] != (plan.slots, 2) or not all(
                    np.array_equal(np.sort(step.ravel()), np.arange(plan.blocks))
                    for step in outer_pairs):
                raise ValueError(f"outer_pairs must pair each of the {plan.blocks} blocks "
                                 f"once a step, not {outer_pairs.tolist()}")
            tables = [outer_pairs, outer_pairs]
        outer_steps = len(tables[0])
        outer = np.ascontiguousarray(np.concatenate(tables), dtype=np.int32)
        mf = cl.mem_flags
        ctx = self.queue.context
        slots = plan.slots
        signs_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=ops.signs())
        outer_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=outer)
        # Partial Gram matrices and transformations: elements (double2 for
        # complex data whatever the layout of G).
        partial_buf = cl.Buffer(ctx, mf.READ_WRITE, plan.partial_bytes)
        transforms_buf = cl.Buffer(ctx, mf.READ_WRITE, plan.transforms_bytes)
        rotated_buf = cl.Buffer(ctx, mf.READ_WRITE, 4 * slots)
        # the largest squared norm of every column so far (cjac_block_rotate),
        # handed on to the pointwise sweeps
        if ops.peak is None:
            ops.peak = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                 hostbuf=np.zeros(ops.columns))
        zeros = np.zeros(slots, np.int32)
        status_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        rotations_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        summary_buf = cl.Buffer(ctx, mf.READ_WRITE, 8)

        gram_sig, rotate_sig, update_sig = (
            plan.spec.signatures[f"cjac_block_{name}"] for name in ("gram", "rotate", "update"))
        step = {"outer_pairs": outer_buf, "step": 0}
        gram = gram_sig.kernel(program, G=ops.g, ldg=ops.ldg, m=ops.rows,
                               chunk_rows=plan.gram_chunks.rows, partial=partial_buf, **step)
        stream = plan.spec.inner_method == "stream"
        takes_group = plan.spec.whole_group_arg
        rotate = rotate_sig.kernel(
            program, partial=partial_buf, chunks=plan.gram_chunks.count, m=ops.rows,
            signs=signs_buf, peak=ops.peak, inner_sweeps=plan.inner_sweeps,
            transforms=transforms_buf, rotated=rotated_buf, status=status_buf,
            rotations=rotations_buf, **step, **({"whole_group": 0} if takes_group else {}))
        # "offdiag" and "stream": the first outer step of a sweep, where every
        # block appears once, also rotates the pairs within the blocks.
        whole_group = rotate_sig.position("whole_group") if takes_group else None
        update = {"transforms": transforms_buf, "rotated": rotated_buf, **step}
        update_g = update_sig.kernel(program, X=ops.g, ldx=ops.ldg, m=ops.rows,
                                     chunk_rows=plan.update_g_chunks.rows, **update)
        ranges = plan.launches()
        launches = [(gram, gram_sig, ranges["gram"]), (rotate, rotate_sig, ranges["rotate"]),
                    (update_g, update_sig, ranges["update_g"])]
        if self.accumulate_v:
            update_v = update_sig.kernel(program, X=ops.v, ldx=ops.ldv, m=ops.v_rows,
                                         chunk_rows=plan.update_v_chunks.rows, **update)
            launches.append((update_v, update_sig, ranges["update_v"]))
        # The step is set before every launch, at its position found by name
        # once (KernelSignature.bind per launch would look it up every time).
        launches = [(kernel, sig.position("step"), *sizes) for kernel, sig, sizes in launches]
        reduce_status = status_spec.signatures["cjac_sweep_status"].kernel(
            status_program, status=status_buf, rotations=rotations_buf, slots=slots,
            summary=summary_buf)

        def enqueue_sweep(sweep: int) -> None:
            for s in range(outer_steps):
                step_index = np.int32((sweep % 2) * outer_steps + s)
                if whole_group is not None and s < 2:  # 1 in the first step, else 0
                    set_scalar_arg(rotate, whole_group, np.int32(s == 0))
                for kernel, step_arg, global_size, local_size in launches:
                    set_scalar_arg(kernel, step_arg, step_index)
                    enqueue_kernel(self.queue, kernel, global_size, local_size)

        # The finishing certificate runs one sweep of the outer table (every
        # pair of blocks once), so not on the steps of a distributed run.
        mask_bytes = certificate_mask_bytes(outer_steps, slots, w)
        certifies = outer_pairs is None and mask_bytes <= int(self.device.max_mem_alloc_size)

        # Pairs the Gram matrices cannot resolve (stats.breakdown) wait for
        # the pointwise sweeps.
        sweep_start = time.perf_counter()
        pairs = ops.columns * (ops.columns - 1) // 2
        if stream:
            stalled = lambda counts: stream_stalled(counts, pairs)
        elif certified_finish and certifies:
            stalled = lambda counts: certified_handover(counts, ops.columns)
        else:
            stalled = None
        stats = sweep_until_converged(
            self.queue, max_sweeps=max_sweeps, enqueue_sweep=enqueue_sweep,
            reduce_status=reduce_status, work_group_size=wg, summary_buf=summary_buf,
            stalled=stalled)
        seconds["sweeps"] += time.perf_counter() - sweep_start

        self.certificate = None
        if certifies:
            certify_sig = plan.spec.signatures["cjac_block_certify"]
            masks_buf = cl.Buffer(ctx, mf.READ_WRITE, mask_bytes)
            found_buf = cl.Buffer(ctx, mf.READ_WRITE, 4 * outer_steps * slots)
            certify = certify_sig.kernel(program, partial=partial_buf,
                                         chunks=plan.gram_chunks.count, m=ops.rows, step=0,
                                         masks=masks_buf, found=found_buf)
            self.certificate = FinishingCertificate(
                self.queue, gram=gram, gram_step=gram_sig.position("step"), certify=certify,
                certify_step=certify_sig.position("step"), ranges=ranges,
                table=tables[0], block_width=w, masks=masks_buf, found=found_buf,
                buffers=(outer_buf, partial_buf))
        stats.seconds = seconds
        return stats
