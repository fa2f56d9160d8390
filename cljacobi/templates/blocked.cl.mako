## Blocked one-sided hyperbolic Jacobi: one work-group per pair of block columns.
##
## Novakovic & Singer, implicit Hari-Zimmermann GSVD on GPUs, Sect. 2.3-2.5 and
## 3.5 (block-oriented "bo" and full-block "fb" variants), applied to the
## hyperbolic SVD.  A parallel step transforms disjoint block pairs (P, Q) of
## width w in three launches, so that every block pair keeps several
## work-groups busy (row chunks):
##   cjac_block_gram    partial Gram matrices [G_P G_Q]^T [G_P G_Q] (2w x 2w)
##                      of one row chunk each;
##   cjac_block_rotate  one work-group per pair: sums the partials in a fixed
##                      order, runs the inner Jacobi sweeps on the Gram matrix
##                      in local memory (two-sided form of the one-sided method:
##                      every rotation R updates A <- R^T A R and W <- W R) and
##                      stores W;
##   cjac_block_update  [G_P G_Q] <- [G_P G_Q] W for one row chunk (V likewise).
##
## Render parameters (all explicit, see cljacobi.host.programs.KernelSpec):
##   real_ctype        "double" | "float"
##   work_group_size   not used by these kernels (the host bounds the default
##                     sizes of the Gram and rotate work-groups by it)
##   block_width       w; the pivot block is K x K with K = 2w
##   transform_in_local  keep the 2w x 2w transformation W in local memory
##                     (else in its global slot, when local memory is short)
##   inner_pairs       the inner strategy's step table for order K, a tuple of
##                     steps, each a tuple of w (i, j) pairs covering 0..K-1
##   tile_rows         rows of G per Gram tile in local memory
##   gram_micro_tile   RB: every work-item of cjac_block_gram accumulates an
##                     RB x RB block of the Gram matrix in registers
##   gram_row_slices   S: cjac_block_gram splits the rows of each tile among S
##                     groups of work-items; its work-group has T * S items,
##                     T = NB (NB + 1) / 2 the micro-tiles on and above the
##                     diagonal, NB = ceil(K / RB) (the host computes the same
##                     number: cljacobi.host.blocked.gram_work_group_size)
##   rotate_work_group_size  work-items of cjac_block_rotate (any count; w^2
##                     maps one 2 x 2 block of A and W to every item)
##   update_tile_rows  TR: rows of X per tile of cjac_block_update in local
##                     memory (a multiple of update_micro_rows)
##   update_micro_rows RR, update_micro_cols RC: every work-item of
##                     cjac_block_update computes an RR x RC block of the
##                     tile's product in registers; its work-group has
##                     (TR / RR) * ceil(K / RC) items (the host computes the
##                     same number: cljacobi.host.blocked.update_work_group_size)
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude(real_ctype)}
${arith.rotation_functions()}
<%
    w = block_width
    K = 2 * w
    inner_steps = len(inner_pairs)
    for step in inner_pairs:  # the fused update of cjac_block_rotate relies on this
        assert sorted(i for pair in step for i in pair) == list(range(K)), step
    RB = gram_micro_tile
    NB = (K + RB - 1) // RB          # micro-tiles per side
    KP = NB * RB                     # tile columns, K padded to a multiple of RB
    gram_tiles = NB * (NB + 1) // 2  # micro-tiles on and above the diagonal
    gram_wg = gram_tiles * gram_row_slices
    # Odd strides against bank conflicts (see the comments at the kernels).
    tile_stride = KP | 1
    gram_result_stride = K + 1
    gram_local = max(tile_rows * tile_stride, K * gram_result_stride)
    ld_a = K + 1
    ld_w = K + 1 if transform_in_local else K  # global W keeps the layout update reads
    UR = update_micro_rows
    UC = update_micro_cols
    assert update_tile_rows % UR == 0, (update_tile_rows, UR)
    update_nr = update_tile_rows // UR  # micro-tiles per tile column
    update_nc = (K + UC - 1) // UC      # micro-tiles per tile row
%>
#define BW ${w}
#define K ${K}
#define TILE_ROWS ${tile_rows}
#define INNER_STEPS ${inner_steps}
#define GRAM_RB ${RB}
#define GRAM_NB ${NB}
#define GRAM_KP ${KP}
#define GRAM_TILES ${gram_tiles}
#define GRAM_SLICES ${gram_row_slices}
#define GRAM_WG ${gram_wg}
#define GRAM_TILE_STRIDE ${tile_stride}
#define GRAM_RESULT_STRIDE ${gram_result_stride}
#define ROTATE_WG ${rotate_work_group_size}
#define LDA ${ld_a}
#define LDW ${ld_w}
#define UPDATE_TR ${update_tile_rows}
#define UPDATE_NR ${update_nr}
#define UPDATE_NC ${update_nc}
#define UPDATE_KP ${update_nc * UC}
#define UPDATE_WG ${update_nr * update_nc}

/* The inner strategy (pairs of local columns 0..K-1), one row per step. */
__constant int2 cjac_inner_pairs[INNER_STEPS * BW] = {
%for step in inner_pairs:
    ${", ".join(f"(int2)({i}, {j})" for i, j in step)},
%endfor
};

/* Global column of local column a of the block pair (P, Q). */
inline int cjac_block_column(const int2 blocks, const int a)
{
    return a < BW ? blocks.x * BW + a : blocks.y * BW + (a - BW);
}

/* Partial Gram matrix of block pair k over the rows of chunk c: work-group
 * (k, c) of an (slots x chunks) grid.
 *
 * Tiles of TILE_ROWS rows of the K columns go through local memory row by
 * row: tile[rr * GRAM_TILE_STRIDE + a] is row rr of local column a.  The
 * stride is odd, so the transposing store of the coalesced column loads
 * (consecutive work-items, consecutive rows of one column) hits distinct
 * banks.
 *
 * Register micro-tiles: the Gram matrix is cut cyclically into NB x NB
 * micro-tiles of RB x RB entries, micro-tile (I, J) holding the entries
 * (I + i NB, J + j NB), 0 <= i, j < RB.  Only the micro-tiles with I <= J
 * are computed (the matrix is symmetric: (J, I) holds the transposes of
 * (I, J)); a work-item reads RB + RB values of a row for RB * RB FMAs.  The
 * cyclic cut makes the reads of the work-items of one row slice (micro-tiles
 * numbered row by row, J fastest) one broadcast per value for I and
 * consecutive addresses for J: free of bank conflicts (but where a warp
 * spans two slices, i.e. two rows).
 *
 * Row slices: work-item lid computes micro-tile lid % GRAM_TILES over the
 * rows rr = s, s + S, ... (s = lid / GRAM_TILES) of every tile; the slices
 * are added in the order 0, 1, ..., S-1 at the end.  Every entry has a fixed
 * summation order (bitwise reproducible).  The sums are staged in local
 * memory (reusing the tile; stride K + 1 is odd) and written out as the full
 * row-major K x K matrix in coalesced stores: entry (a, b) of a micro-tile
 * with I > J is read from the stored (b, a). */
__kernel __attribute__((reqd_work_group_size(GRAM_WG, 1, 1)))
void cjac_block_gram(__global const cjac_real *G, const int ldg, const int m,
                     const int chunk_rows, __global const int2 *outer_pairs,
                     const int step, __global cjac_real *partial)
{
    __local cjac_real lmem[${gram_local}];  /* the tile, then the staged sums */
    const int k = get_group_id(0), c = get_group_id(1);
    const int slots = get_num_groups(0), chunks = get_num_groups(1);
    const int lid = get_local_id(0);
    const int slice = lid / GRAM_TILES;
    /* Micro-tile lid % GRAM_TILES of the upper triangle, row by row. */
    int I = 0, J = lid % GRAM_TILES;
    while (J >= GRAM_NB - I) {
        J -= GRAM_NB - I;
        ++I;
    }
    J += I;
    const int2 blocks = outer_pairs[step * slots + k];
    const int first = c * chunk_rows;
    const int last = min(m, first + chunk_rows);

%for i in range(RB):
%for j in range(RB):
    cjac_real acc_${i}_${j} = 0;
%endfor
%endfor
    for (int row0 = first; row0 < last; row0 += TILE_ROWS) {
        const int rows = min(TILE_ROWS, last - row0);
        for (int x = lid; x < GRAM_KP * TILE_ROWS; x += GRAM_WG) {
            const int a = x / TILE_ROWS, rr = x % TILE_ROWS;
            lmem[rr * GRAM_TILE_STRIDE + a] = a < K && rr < rows
                ? G[(size_t)cjac_block_column(blocks, a) * ldg + row0 + rr] : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int rr = slice; rr < rows; rr += GRAM_SLICES) {
            __local const cjac_real *tile_row = lmem + rr * GRAM_TILE_STRIDE;
%for i in range(RB):
            const cjac_real x_${i} = tile_row[I + ${i * NB}];
%endfor
%for j in range(RB):
            const cjac_real y_${j} = tile_row[J + ${j * NB}];
%endfor
%for i in range(RB):
%for j in range(RB):
            acc_${i}_${j} = fma(x_${i}, y_${j}, acc_${i}_${j});
%endfor
%endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* Add the slices in order into the staged sums (entries (a, b) of the
     * micro-tiles with I <= J, row stride GRAM_RESULT_STRIDE). */
    __local cjac_real *sums = lmem;
    for (int s = 0; s < GRAM_SLICES; ++s) {
        if (slice == s) {
%for i in range(RB):
%for j in range(RB):
            {
                const int a = I + ${i * NB}, b = J + ${j * NB};
                if (a < K && b < K) {
                    __local cjac_real *entry = sums + a * GRAM_RESULT_STRIDE + b;
                    *entry = s ? *entry + acc_${i}_${j} : acc_${i}_${j};
                }
            }
%endfor
%endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    __global cjac_real *out = partial + ((size_t)k * chunks + c) * (K * K);
    for (int e = lid; e < K * K; e += GRAM_WG) {
        const int a = e / K, b = e % K;
        out[e] = a % GRAM_NB <= b % GRAM_NB ? sums[a * GRAM_RESULT_STRIDE + b]
                                            : sums[b * GRAM_RESULT_STRIDE + a];
    }
}

/* Inner sweeps on the Gram matrix of block pair k ("bo": inner_sweeps = 1;
 * "fb": until no big rotation, at most inner_sweeps); stores W and whether
 * anything rotated.
 *
 * Layout: A and (in local memory) W are row-major with the odd row stride
 * K + 1.  A stride of K (a multiple of the 16 banks of doubles for w >= 8)
 * puts a column into one bank: work-items reading one column in different
 * rows, as the block rows of the update that share a warp do, would
 * conflict.
 *
 * One inner step is two phases between barriers: the rotation parameters of
 * the w pairs (one work-item per pair), then the update.  The pairs of a step
 * cover the indices 0..K-1, so A and W split into w x w blocks of 2 x 2
 * entries, block (q1, q2) holding rows (i1, j1) of pair q1 and columns
 * (i2, j2) of pair q2.  A work-item per block applies R_q2 to its columns
 * (A R, W R) and then R_q1 to its rows (R^T (A R)) in registers: the same
 * operations on the same values as updating all columns, then all rows, with
 * no barrier between.  Work-items q2 = 0, 1, ... of one block row read
 * columns i2 (then j2) of the same rows; for the ME tables of K = 16..64
 * these are distinct modulo 16 but for pairs, at most 2-way bank conflicts.
 * The pairs are copied to local memory: work-items reading different
 * entries of a __constant table may be serialized. */
__kernel __attribute__((reqd_work_group_size(ROTATE_WG, 1, 1)))
void cjac_block_rotate(__global const cjac_real *partial, const int chunks,
                       __global const int *signs, __global const int2 *outer_pairs,
                       const int step, const int inner_sweeps,
                       __global cjac_real *transforms, __global int *rotated,
                       __global int *status, __global int *rotations)
{
    __local cjac_real A[K * LDA];      /* Gram matrix, then R^T A R */
%if transform_in_local:
    __local cjac_real W[K * LDW];      /* accumulated transformation */
#define CJAC_FENCE CLK_LOCAL_MEM_FENCE
%else:
    __global cjac_real *W = transforms + (size_t)get_group_id(0) * (K * K);
#define CJAC_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
%endif
    __local cjac_real rot_c[BW], rot_t[BW], rot_ti[BW];
    __local int2 rot_pair[BW];         /* the step's pairs, read by many items */
    __local int rot_flag[BW], rot_count[BW], rot_big[BW], sweep_big[BW];
    __local int sgn[K];
    __local int block_big;

    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    const int slots = get_num_groups(0);
    const int2 blocks = outer_pairs[step * slots + k];

    for (int a = lid; a < K; a += ROTATE_WG)
        sgn[a] = signs[cjac_block_column(blocks, a)];
    for (int e = lid; e < K * K; e += ROTATE_WG) {
        __global const cjac_real *p = partial + (size_t)k * chunks * (K * K) + e;
        const int row = e / K, col = e % K;
        cjac_real sum = 0;
        for (int c = 0; c < chunks; ++c)  /* fixed order: reproducible */
            sum += p[(size_t)c * (K * K)];
        A[row * LDA + col] = sum;
        W[row * LDW + col] = row == col ? 1 : 0;
    }
    /* Every pair index q belongs to work-item q % ROTATE_WG throughout. */
    for (int q = lid; q < BW; q += ROTATE_WG) {
        rot_count[q] = 0;
        rot_big[q] = 0;
        sweep_big[q] = 0;
    }
    barrier(CJAC_FENCE);

    for (int sweep = 0; sweep < inner_sweeps; ++sweep) {
        for (int inner = 0; inner < INNER_STEPS; ++inner) {
            for (int q = lid; q < BW; q += ROTATE_WG) {
                const int2 p = cjac_inner_pairs[inner * BW + q];
                const cjac_real a_ii = A[p.x * LDA + p.x], a_jj = A[p.y * LDA + p.y];
                const cjac_real a_ij = A[p.x * LDA + p.y];
                const bool hyperbolic = sgn[p.x] != sgn[p.y];
                cjac_real t = 0;
                /* The column norms, once for the skip test and the "big" measure. */
                const cjac_real norm_i = sqrt(a_ii), norm_j = sqrt(a_jj);
                /* eq. (2.3) of the 2011 paper, on the Gram matrix */
                if (fabs(a_ij) > CJAC_EPS * norm_i * norm_j)
                    t = hyperbolic ? cjac_hyp_tangent(a_ii, a_jj, a_ij)
                                   : cjac_trig_tangent(a_ii, a_jj, a_ij);
                rot_pair[q] = p;
                rot_flag[q] = t != 0;
                rot_t[q] = t;
                rot_ti[q] = hyperbolic ? t : -t;
                rot_c[q] = hyperbolic ? 1 / sqrt((1 - t) * (1 + t)) : 1 / sqrt(fma(t, t, 1));
                if (t != 0) {
                    rot_count[q] += 1;
                    /* "big" as in the pointwise kernel: |t| measured against
                     * the shorter column (GSVD paper Sect. 2.5 counts these). */
                    const cjac_real moved =
                        fabs(t) * (fmax(norm_i, norm_j) / fmin(norm_i, norm_j));
                    if (moved > sqrt(CJAC_EPS) / 2) {
                        rot_big[q] = 1;
                        sweep_big[q] = 1;
                    }
                }
            }
            barrier(CJAC_FENCE);
            /* Block (q1, q2): A <- R^T A R, W <- W R (eqs. (2.4)/(2.5)). */
            for (int x = lid; x < BW * BW; x += ROTATE_WG) {
                const int q1 = x / BW, q2 = x % BW;
                const int rows = rot_flag[q1], cols = rot_flag[q2];
                const int2 p1 = rot_pair[q1], p2 = rot_pair[q2];
                if (rows | cols) {
                    __local cjac_real *a_i = A + p1.x * LDA, *a_j = A + p1.y * LDA;
                    cjac_real a_ii = a_i[p2.x], a_ij = a_i[p2.y];
                    cjac_real a_ji = a_j[p2.x], a_jj = a_j[p2.y];
                    if (cols) {  /* columns i2, j2 of rows i1, j1: A R */
                        const cjac_real c = rot_c[q2], t = rot_t[q2], ti = rot_ti[q2];
                        const cjac_real b_ii = c * fma(ti, a_ij, a_ii);
                        const cjac_real b_ij = c * fma(t, a_ii, a_ij);
                        const cjac_real b_ji = c * fma(ti, a_jj, a_ji);
                        const cjac_real b_jj = c * fma(t, a_ji, a_jj);
                        a_ii = b_ii; a_ij = b_ij; a_ji = b_ji; a_jj = b_jj;
                    }
                    if (rows) {  /* rows i1, j1 of A R: R^T (A R) */
                        const cjac_real c = rot_c[q1], t = rot_t[q1], ti = rot_ti[q1];
                        const cjac_real b_ii = c * fma(ti, a_ji, a_ii);
                        const cjac_real b_ji = c * fma(t, a_ii, a_ji);
                        const cjac_real b_ij = c * fma(ti, a_jj, a_ij);
                        const cjac_real b_jj = c * fma(t, a_ij, a_jj);
                        a_ii = b_ii; a_ij = b_ij; a_ji = b_ji; a_jj = b_jj;
                    }
                    if (q1 == q2)  /* the pivot entries: annihilated by construction */
                        a_ij = a_ji = 0;
                    a_i[p2.x] = a_ii;
                    a_i[p2.y] = a_ij;
                    a_j[p2.x] = a_ji;
                    a_j[p2.y] = a_jj;
                }
                if (cols) {  /* rows i1, j1 of W R */
                    const cjac_real c = rot_c[q2], t = rot_t[q2], ti = rot_ti[q2];
%for row in ("x", "y"):
                    {
%if transform_in_local:
                        __local cjac_real *w_row = W + p1.${row} * LDW;
%else:
                        __global cjac_real *w_row = W + p1.${row} * LDW;
%endif
                        const cjac_real wi = w_row[p2.x], wj = w_row[p2.y];
                        w_row[p2.x] = c * fma(ti, wj, wi);
                        w_row[p2.y] = c * fma(t, wi, wj);
                    }
%endfor
                }
            }
            barrier(CJAC_FENCE);
        }
        /* sweep_big was last written before the barrier ahead of the final
         * update; it is cleared for the next sweep before the barrier below. */
        if (lid == 0) {
            int big = 0;
            for (int q = 0; q < BW; ++q) {
                big |= sweep_big[q];
                sweep_big[q] = 0;
            }
            block_big = big;
        }
        barrier(CJAC_FENCE);
        if (!block_big)
            break;  /* uniform over the work-group */
    }
%if transform_in_local:
    __global cjac_real *out = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * K; e += ROTATE_WG)
        out[e] = W[(e / K) * LDW + e % K];
%endif
    if (lid == 0) {
        int count = 0, big = 0;
        for (int q = 0; q < BW; ++q) {
            count += rot_count[q];
            big |= rot_big[q];
        }
        rotated[k] = count > 0;
        status[k] |= big ? 3 : (count ? 1 : 0);
        rotations[k] += count;
    }
}
#undef CJAC_FENCE

/* [X_P X_Q] <- [X_P X_Q] W_k for the rows of chunk c (X = G or V):
 * work-group (k, c) of an (slots x chunks) grid, a small GEMM per tile.
 *
 * W_k goes to local memory once: W[a * UPDATE_KP + b], row-major, the
 * columns padded with zeros to UPDATE_KP = UPDATE_NC * RC (RC =
 * update_micro_cols).  Tiles of UPDATE_TR rows of the K columns of X follow
 * column by column: tile[a * UPDATE_TR + rr] is row rr of local column a,
 * loaded with coalesced reads (consecutive work-items, consecutive rows of
 * one column) into consecutive addresses.
 *
 * Register micro-tiles: the UPDATE_TR x K output tile is cut cyclically, as
 * in cjac_block_gram, into UPDATE_NR x UPDATE_NC micro-tiles of RR x RC
 * entries (RR = update_micro_rows, UPDATE_NR = UPDATE_TR / RR): work-item
 * lid = i + UPDATE_NR * j computes the rows i + p UPDATE_NR (0 <= p < RR)
 * and the columns j + q UPDATE_NC (0 <= q < RC), reading RR + RC values from
 * local memory per a for RR * RC FMAs.  Every output is the fma chain over
 * a = 0, 1, ..., K-1 from 0, whatever the tile and micro-tile shape (bitwise
 * reproducible, the same numbers as one work-item per row).
 *
 * Banks: at one instant the lanes of a warp read, for one a, the values
 * tile[a * UPDATE_TR + i + p UPDATE_NR] over consecutive i (i is the fastest
 * index of lid; lanes with another j but the same i read the same address, a
 * broadcast) and W[a * UPDATE_KP + j + q UPDATE_NC] over a few consecutive j
 * (broadcast within one j).  Both are runs of consecutive addresses, distinct
 * banks whatever the strides, so neither layout needs padding (W's padding
 * only rounds K up to the micro-tile); the stores of the loads are
 * consecutive too.  With i fastest the lanes of a warp also write
 * consecutive rows of one output column to global memory.
 *
 * In place: all of a tile is in local memory (barrier) before any of its
 * rows is written, and the next tile's load waits (barrier) until every
 * work-item has finished reading this one.  Both barriers are reached by
 * all work-items: partial tiles guard the loads (zeros) and the stores. */
__kernel __attribute__((reqd_work_group_size(UPDATE_WG, 1, 1)))
void cjac_block_update(__global cjac_real *X, const int ldx, const int m,
                       const int chunk_rows, __global const int2 *outer_pairs,
                       const int step, __global const cjac_real *transforms,
                       __global const int *rotated)
{
    __local cjac_real W[K * UPDATE_KP];
    __local cjac_real tile[K * UPDATE_TR];
    const int k = get_group_id(0), c = get_group_id(1);
    const int slots = get_num_groups(0);
    if (!rotated[k])
        return;  /* uniform over the work-group, before any barrier */
    const int lid = get_local_id(0);
    const int i = lid % UPDATE_NR, j = lid / UPDATE_NR;
    const int2 blocks = outer_pairs[step * slots + k];
    __global const cjac_real *w_global = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * UPDATE_KP; e += UPDATE_WG) {
        const int a = e / UPDATE_KP, b = e % UPDATE_KP;
        W[e] = b < K ? w_global[a * K + b] : 0;
    }
    /* W is complete after the first tile's barrier. */
%for q in range(UC):
    const int b_${q} = j + ${q} * UPDATE_NC;
    const size_t col_${q} = b_${q} < K ? (size_t)cjac_block_column(blocks, b_${q}) * ldx : 0;
%endfor
    const int first = c * chunk_rows;
    const int last = min(m, first + chunk_rows);
    for (int row0 = first; row0 < last; row0 += UPDATE_TR) {  /* uniform */
        const int rows = min(UPDATE_TR, last - row0);
        for (int x = lid; x < K * UPDATE_TR; x += UPDATE_WG) {
            const int a = x / UPDATE_TR, rr = x % UPDATE_TR;
            tile[x] = rr < rows
                ? X[(size_t)cjac_block_column(blocks, a) * ldx + row0 + rr] : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
%for p in range(UR):
%for q in range(UC):
        cjac_real acc_${p}_${q} = 0;
%endfor
%endfor
        for (int a = 0; a < K; ++a) {
            __local const cjac_real *x_col = tile + a * UPDATE_TR + i;
            __local const cjac_real *w_row = W + a * UPDATE_KP + j;
%for p in range(UR):
            const cjac_real x_${p} = x_col[${p} * UPDATE_NR];
%endfor
%for q in range(UC):
            const cjac_real w_${q} = w_row[${q} * UPDATE_NC];
%endfor
%for p in range(UR):
%for q in range(UC):
            acc_${p}_${q} = fma(x_${p}, w_${q}, acc_${p}_${q});
%endfor
%endfor
        }
%for p in range(UR):
        if (i + ${p} * UPDATE_NR < rows) {
            const int row = row0 + i + ${p} * UPDATE_NR;
%for q in range(UC):
            if (b_${q} < K)
                X[col_${q} + row] = acc_${p}_${q};
%endfor
        }
%endfor
        barrier(CLK_LOCAL_MEM_FENCE);  /* before the next tile overwrites this one */
    }
}
