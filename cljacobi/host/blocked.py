"""The blocked one-sided hyperbolic Jacobi driver ("bo" and "fb" variants).

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
"""

from __future__ import annotations

import time

import numpy as np
import pyopencl as cl

from ..errors import DeviceCapabilityError
from ..strategies import step_table
from .device import require_fp64
from .limits import check_local_memory, choose_work_group_size
from .operands import Operands, download, upload
from .pointwise import STATUS_BIG, STATUS_BROKEN, RunStats, complex_layout
from .pointwise_plan import PointwiseSpec
from .programs import KernelSpec, build_program
from .sizes import COMPLEX_ELEMENT_BYTES, REAL_ELEMENT_BYTES, round_up

__all__ = [
    "BLOCK_VARIANTS", "COMPLEX_ELEMENT_BYTES", "FULL_BLOCK_INNER_SWEEPS", "REAL_ELEMENT_BYTES",
    "BlockedHSVD", "blocked_local_bytes", "gram_work_group_size", "update_work_group_size",
]

BLOCK_VARIANTS = ("bo", "fb")

#: Inner sweeps of the full-block variant at most (the GSVD paper's bound).
FULL_BLOCK_INNER_SWEEPS = 30

#: Inner strategy on the 2w x 2w pivot block (the GSVD paper uses ME at both levels).
INNER_STRATEGY = "me"

#: Outer strategy over the block columns (a step table of
#: :mod:`cljacobi.strategies`; both sweep parities are uploaded, so the
#: alternating tables of "mm" and "ring" work too).  Mantharam-Eberlein, as
#: the GSVD paper uses at both levels: on the 2011 paper's spectra (PoCL,
#: n = 256 and 384, w = 8, two matrices each) "bo" needed 41 outer sweeps in
#: all against 45 with modified modulus, whose sweeps also have one step more.
OUTER_STRATEGY = "me"

#: Rows of G per Gram tile in local memory (and the granularity of the row
#: chunks of the Gram and update kernels).  64 rather than 32: on the H200,
#: n = 4096, seconds of the Gram kernel per blocked sweep 0.0697 -> 0.0597
#: (w = 8), 0.0369 -> 0.0346 (w = 16), 0.0217 -> 0.0188 (w = 32)
#: (bench/results/tune-blocked-H200-2026-11-22-update.json).
TILE_ROWS = 64

#: Gram kernel: every work-item accumulates a GRAM_MICRO_TILE x
#: GRAM_MICRO_TILE block of the 2w x 2w Gram matrix in registers, reading
#: 2 GRAM_MICRO_TILE values from local memory per row for GRAM_MICRO_TILE^2
#: FMAs (1 would read two values per FMA: bound by local memory bandwidth).
#: Only the blocks on and above the diagonal are computed.
GRAM_MICRO_TILE = 4

#: Gram kernel: the rows of a tile are split among this many groups of
#: work-items at most (row slices, added in a fixed order at the end).  By
#: default as many slices as keep the work-group within the update kernel's
#: work-group size; a slice should still get a few rows of every tile
#: between the barriers.
GRAM_MAX_ROW_SLICES = 8

#: Update kernel ([X_P X_Q] <- [X_P X_Q] W, X = G or V): rows of X per tile in
#: local memory.  The tile (UPDATE_TILE_ROWS x 2w) shares the 48 KiB of local
#: memory of a GPU work-group with W (2w x 2w): at w = 32 W alone takes
#: 32 KiB and 32 rows the other 16 KiB.
UPDATE_TILE_ROWS = 32

#: Update tile rows for narrow blocks (2w <= 32), where W is small: 64 rows
#: and 4 x 4 micro-tiles gave 0.0249 s per sweep at w = 16 against 0.0285
#: with 32 rows (H200, n = 4096).
UPDATE_TILE_ROWS_NARROW = 64

#: The rotate kernel runs min(w^2, ROTATE_MAX_WORK_GROUP) work-items (one per
#: 2 x 2 block of a step's rotations): at w = 32, 512 items took 0.0212 s per
#: sweep against 0.0234 with 256 (H200, n = 4096).
ROTATE_MAX_WORK_GROUP = 512

#: Update kernel: every work-item computes an RR x RC (UPDATE_MICRO_ROWS x
#: UPDATE_MICRO_COLS) block of a tile's product in registers, reading RR + RC
#: values from local memory for RR * RC FMAs (a work-item per row, as before,
#: read one value of W per FMA: bound by local memory bandwidth).  4 x 4 reads
#: as much per FMA as the Gram kernel's default micro-tile; the work-group has
#: UPDATE_TILE_ROWS / RR * ceil(2w / RC) items (32, 64, 128 at w = 8, 16, 32).
UPDATE_MICRO_ROWS = 4
UPDATE_MICRO_COLS = 4

#: Update kernel: row chunks such that a step has this many work-groups per
#: compute unit (its work-groups are small; the Gram kernel keeps 4, as its
#: partial sums are added by the rotate kernel).
UPDATE_GROUPS_PER_UNIT = 16


def _gram_micro_tiles(block_width: int, micro_tile: int) -> int:
    """Micro-tiles on and above the diagonal of the 2w x 2w Gram matrix."""
    per_side = -(-2 * block_width // micro_tile)
    return per_side * (per_side + 1) // 2


def gram_work_group_size(block_width: int, micro_tile: int, row_slices: int) -> int:
    """Work-items per work-group of the Gram kernel.

    One per micro-tile on and above the diagonal and row slice (the
    template computes the same number for its ``reqd_work_group_size``).

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
    micro_rows`` micro-tiles down, ``ceil(2w / micro_cols)`` across (the
    template computes the same number for its ``reqd_work_group_size``).

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


def blocked_local_bytes(
    block_width: int, *, transform_in_local: bool = False, tile_rows: int = TILE_ROWS,
    gram_micro_tile: int = GRAM_MICRO_TILE, update_tile_rows: int | None = None,
    update_micro_cols: int = UPDATE_MICRO_COLS, element_bytes: int = REAL_ELEMENT_BYTES,
) -> int:
    """Local memory per work-group of the largest blocked kernel, in bytes.

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

    Returns
    -------
    int
        The maximum over the kernels of: the Gram kernel's tile
        (tile_rows x (K' | 1) elements, K' = K rounded up to the micro-tile),
        which its staged K x (K + 1) result reuses; the rotate kernel's Gram
        matrix and transformation (if in local memory), K x (K + 1) elements
        each, its rotation parameters (c real, s_j and s_i elements) and
        pairs; the update kernel's copy of W (K x K' elements, K' = K rounded
        up to its micro-tile's columns) and its tile (update_tile_rows x K
        elements).

    Examples
    --------
    On a device with 48 KiB (49152 bytes) of local memory, complex w = 16
    fits, with W in local memory (the update kernel's 32 x 32 W and 64-row
    tile take exactly 49152 bytes, the rotate kernel with W 34948); complex
    w = 32 does not (the update kernel takes 98304, the Gram tile 66560):

    >>> blocked_local_bytes(16, transform_in_local=True, element_bytes=16)
    49152
    >>> blocked_local_bytes(32, element_bytes=16)
    98304
    """
    K = 2 * block_width
    e = element_bytes
    padded = round_up(K, gram_micro_tile)
    gram = e * max(tile_rows * (padded | 1), K * (K + 1))
    # rot_c (8 bytes), rot_s and rot_si (elements), rot_pair (int2) per pair;
    # for e = 8 the 8 * 4 * w of the real kernel.
    rotate = e * K * (K + 1) * (2 if transform_in_local else 1) \
        + (8 + 2 * e + 8) * block_width + 4 * (4 * block_width + K + 1)
    if update_tile_rows is None:
        update_tile_rows = default_update_tile_rows(block_width)
    update = e * K * (round_up(K, update_micro_cols) + update_tile_rows)
    return max(gram, rotate, update)


def _row_chunks(
    rows: int, slots: int, device: cl.Device, groups_per_unit: int = 4
) -> tuple[int, int]:
    """(chunks, chunk_rows): split the rows so that each step has
    `groups_per_unit` work-groups per compute unit (or chunks of
    4 TILE_ROWS rows at least); chunk_rows a multiple of TILE_ROWS."""
    target = groups_per_unit * int(device.max_compute_units)
    chunks = max(1, min(-(-target // slots), -(-rows // (4 * TILE_ROWS))))
    chunk_rows = round_up(-(-rows // chunks), TILE_ROWS)
    return -(-rows // chunk_rows), chunk_rows


class BlockedHSVD:
    """Device buffers and the outer sweep loop of the blocked method.

    Parameters
    ----------
    queue : pyopencl.CommandQueue
    accumulate_v : bool
    block_width : int
        Width w of a block column; the pivot block is 2w x 2w.
    variant : {"bo", "fb"}
        One inner sweep per block pair, or inner sweeps until the block has
        no big rotation (at most :data:`FULL_BLOCK_INNER_SWEEPS`).
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
        work-groups per compute unit (default :data:`UPDATE_GROUPS_PER_UNIT`).

    These tuning parameters exist to compare kernel variants; every choice
    gives the same rotations up to the rounding of the Gram sums (the
    update kernel's results do not depend on its tile and micro-tile).

    Raises
    ------
    ValueError
        A tuning parameter that is not a positive integer, or update tile
        rows that are no multiple of the micro-tile's rows.
    DeviceCapabilityError
        The kernels need more local memory than the device has (here for
        real data; for complex data, whose elements take 16 bytes, when run),
        or larger work-groups than it allows (when run).
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
    ) -> None:
        if variant not in BLOCK_VARIANTS:
            raise ValueError(f"variant must be one of {BLOCK_VARIANTS}, not {variant!r}")
        self.queue = queue
        self.device = queue.device
        require_fp64(self.device)
        self.accumulate_v = accumulate_v
        self.block_width = block_width
        self.inner_sweeps = 1 if variant == "bo" else FULL_BLOCK_INNER_SWEEPS
        for name, value in (("gram_micro_tile", gram_micro_tile),
                            ("update_groups_per_unit", update_groups_per_unit),
                            ("gram_row_slices", gram_row_slices),
                            ("rotate_work_group_size", rotate_work_group_size),
                            ("tile_rows", tile_rows),
                            ("update_tile_rows", update_tile_rows),
                            ("update_micro_rows", update_micro_rows),
                            ("update_micro_cols", update_micro_cols)):
            if value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, np.integer))
                    or value < 1):
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        self.gram_micro_tile = GRAM_MICRO_TILE if gram_micro_tile is None else int(gram_micro_tile)
        self.gram_row_slices = None if gram_row_slices is None else int(gram_row_slices)
        self.rotate_work_group_size = (
            None if rotate_work_group_size is None else int(rotate_work_group_size))
        self.tile_rows = TILE_ROWS if tile_rows is None else int(tile_rows)
        self.update_groups_per_unit = (
            UPDATE_GROUPS_PER_UNIT if update_groups_per_unit is None
            else int(update_groups_per_unit))
        if update_tile_rows is None:
            update_tile_rows = default_update_tile_rows(block_width)
        self.update_tile_rows = int(update_tile_rows)
        self.update_micro_rows = (
            UPDATE_MICRO_ROWS if update_micro_rows is None else int(update_micro_rows))
        self.update_micro_cols = (
            UPDATE_MICRO_COLS if update_micro_cols is None else int(update_micro_cols))
        if self.update_tile_rows % self.update_micro_rows:
            raise ValueError(
                f"update_tile_rows={self.update_tile_rows} must be a multiple of "
                f"update_micro_rows={self.update_micro_rows}")
        sizes = {"tile_rows": self.tile_rows, "gram_micro_tile": self.gram_micro_tile,
                 "update_tile_rows": self.update_tile_rows,
                 "update_micro_cols": self.update_micro_cols}
        check_local_memory(
            self.device, blocked_local_bytes(block_width, **sizes),
            f"the blocked kernels with block_width={block_width}",
        )
        self.transform_in_local = blocked_local_bytes(
            block_width, transform_in_local=True, **sizes) <= int(self.device.local_mem_size)
        self.requested_work_group_size = work_group_size

    def _kernel_sizes(self, wg: int) -> tuple[int, int, int, int]:
        """``(gram_row_slices, gram_work_group, rotate_work_group,
        update_work_group)`` for a base work-group size `wg`, the defaults
        resolved and checked against the device's maximal work-group size."""
        w, tile = self.block_width, self.gram_micro_tile
        slices = self.gram_row_slices
        if slices is None:
            slices = max(1, min(GRAM_MAX_ROW_SLICES, wg // _gram_micro_tiles(w, tile)))
        gram_wg = gram_work_group_size(w, tile, slices)
        rotate_wg = self.rotate_work_group_size or min(
            w * w, ROTATE_MAX_WORK_GROUP, int(self.device.max_work_group_size))
        update_wg = update_work_group_size(
            w, self.update_tile_rows, self.update_micro_rows, self.update_micro_cols)
        device_max = int(self.device.max_work_group_size)
        for what, size in (("Gram", gram_wg), ("rotate", rotate_wg), ("update", update_wg)):
            if size > device_max:
                raise DeviceCapabilityError(
                    f"the blocked {what} kernel with block_width={w} needs work-groups of "
                    f"{size} work-items; device {self.device.name.strip()!r} allows "
                    f"{device_max} (gram_micro_tile={tile}, gram_row_slices={slices}, "
                    f"rotate_work_group_size={rotate_wg}, "
                    f"update_tile_rows={self.update_tile_rows}, "
                    f"update_micro_rows={self.update_micro_rows}, "
                    f"update_micro_cols={self.update_micro_cols})"
                )
        return slices, gram_wg, rotate_wg, update_wg

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

    def _transform_in_local(self, element_bytes: int) -> bool:
        """Whether W fits local memory beside the rest, for this element size;
        DeviceCapabilityError if even the kernels without it do not fit."""
        if element_bytes == REAL_ELEMENT_BYTES:
            return self.transform_in_local  # checked when the driver was made
        sizes = {"tile_rows": self.tile_rows, "gram_micro_tile": self.gram_micro_tile,
                 "update_tile_rows": self.update_tile_rows,
                 "update_micro_cols": self.update_micro_cols,
                 "element_bytes": element_bytes}
        w = self.block_width
        check_local_memory(
            self.device, blocked_local_bytes(w, **sizes),
            f"the complex blocked kernels with block_width={w}",
        )
        return blocked_local_bytes(w, transform_in_local=True, **sizes) <= \
            int(self.device.local_mem_size)

    def run_operands(self, operands: Operands, *, max_sweeps: int) -> RunStats:
        """Blocked sweeps on the device operands, in place.

        ``operands`` hold float64 or complex128 data (complex ones in the
        layout ``operands.split`` says, rendered into the kernels) with
        ``operands.columns`` a multiple of ``2 * block_width``.
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
        element_bytes = COMPLEX_ELEMENT_BYTES if complex_ else REAL_ELEMENT_BYTES
        transform_in_local = self._transform_in_local(element_bytes)
        r_pad, m_used, ldg, ldv = ops.columns, ops.rows, ops.ldg, ops.ldv
        blocks = r_pad // w
        slots = blocks // 2
        wg = choose_work_group_size(self.device, m_used, requested=self.requested_work_group_size)
        gram_slices, gram_wg, rotate_wg, update_wg = self._kernel_sizes(wg)
        spec = KernelSpec("blocked", "complex128" if complex_ else "float64", wg, False,
                          "split" if complex_ and ops.split else "interleaved",
                          block_width=w, inner_strategy=INNER_STRATEGY,
                          tile_rows=self.tile_rows, transform_in_local=transform_in_local,
                          gram_micro_tile=self.gram_micro_tile,
                          gram_row_slices=gram_slices, rotate_work_group_size=rotate_wg,
                          update_tile_rows=self.update_tile_rows,
                          update_micro_rows=self.update_micro_rows,
                          update_micro_cols=self.update_micro_cols)
        program = build_program(self.queue.context, self.device, spec)
        status_program = build_program(
            self.queue.context, self.device, PointwiseSpec("float64", wg, False))
        chunks, chunk_rows = _row_chunks(m_used, slots, self.device)
        # The update has no partial sums to combine: its own, finer chunks.
        g_chunks, g_chunk_rows = _row_chunks(
            m_used, slots, self.device, self.update_groups_per_unit)
        v_chunks, v_chunk_rows = _row_chunks(
            r_pad, slots, self.device, self.update_groups_per_unit)
        K = 2 * w

        outer_tables = [step_table(OUTER_STRATEGY, blocks, sweep=s) for s in (0, 1)]
        outer_steps = outer_tables[0].steps
        outer = np.ascontiguousarray(
            np.concatenate([table.pairs for table in outer_tables]), dtype=np.int32
        )
        mf = cl.mem_flags
        ctx = self.queue.context
        g_buf, v_buf = ops.g, ops.v
        signs_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=ops.signs())
        outer_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=outer)
        # Partial Gram matrices and transformations: elements (double2 for
        # complex data whatever the layout of G).
        partial_buf = cl.Buffer(ctx, mf.READ_WRITE, element_bytes * slots * chunks * K * K)
        transforms_buf = cl.Buffer(ctx, mf.READ_WRITE, element_bytes * slots * K * K)
        rotated_buf = cl.Buffer(ctx, mf.READ_WRITE, 4 * slots)
        # the largest squared norm of every column so far (cjac_block_rotate),
        # handed on to the pointwise sweeps
        if ops.peak is None:
            ops.peak = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(r_pad))
        peak_buf = ops.peak
        zeros = np.zeros(slots, np.int32)
        status_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        rotations_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        summary_buf = cl.Buffer(ctx, mf.READ_WRITE, 8)

        gram = cl.Kernel(program, "cjac_block_gram")
        gram.set_args(g_buf, np.int32(ldg), np.int32(m_used), np.int32(chunk_rows), outer_buf,
                      np.int32(0), partial_buf)
        rotate = cl.Kernel(program, "cjac_block_rotate")
        rotate.set_args(partial_buf, np.int32(chunks), np.int32(m_used), signs_buf, peak_buf,
                        outer_buf, np.int32(0), np.int32(self.inner_sweeps), transforms_buf,
                        rotated_buf, status_buf, rotations_buf)
        update_g = cl.Kernel(program, "cjac_block_update")
        update_g.set_args(g_buf, np.int32(ldg), np.int32(m_used), np.int32(g_chunk_rows),
                          outer_buf, np.int32(0), transforms_buf, rotated_buf)
        launches = [(gram, 5, (slots * gram_wg, chunks), (gram_wg, 1)),
                    (rotate, 6, (slots * rotate_wg,), (rotate_wg,)),
                    (update_g, 5, (slots * update_wg, g_chunks), (update_wg, 1))]
        if self.accumulate_v:
            update_v = cl.Kernel(program, "cjac_block_update")
            update_v.set_args(v_buf, np.int32(ldv), np.int32(r_pad), np.int32(v_chunk_rows),
                              outer_buf, np.int32(0), transforms_buf, rotated_buf)
            launches.append((update_v, 5, (slots * update_wg, v_chunks), (update_wg, 1)))
        reduce_status = cl.Kernel(status_program, "cjac_sweep_status")
        reduce_status.set_args(status_buf, rotations_buf, np.int32(slots), summary_buf)

        stats = RunStats(work_group_size=wg)
        summary = np.empty(2, np.int32)
        sweep_start = time.perf_counter()
        for sweep in range(max_sweeps):
            for s in range(outer_steps):
                step_index = np.int32((sweep % 2) * outer_steps + s)
                for kernel, step_arg, global_size, local_size in launches:
                    kernel.set_arg(step_arg, step_index)
                    cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, local_size)
            cl.enqueue_nd_range_kernel(self.queue, reduce_status, (wg,), (wg,))
            cl.enqueue_copy(self.queue, summary, summary_buf)
            stats.sweeps += 1
            stats.last_status = int(summary[0])
            stats.rotations_per_sweep.append(int(summary[1]))
            # Pairs the Gram matrices cannot resolve wait for the pointwise sweeps.
            stats.breakdown |= bool(summary[0] & STATUS_BROKEN)
            if not summary[0] & STATUS_BIG:
                stats.converged = True
                break
        seconds["sweeps"] += time.perf_counter() - sweep_start
        stats.rotations = sum(stats.rotations_per_sweep)

        stats.seconds = seconds
        return stats
