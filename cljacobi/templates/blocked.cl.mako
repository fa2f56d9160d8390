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
##   work_group_size   threads per work-group
##   block_width       w; the pivot block is K x K with K = 2w
##   transform_in_local  keep the 2w x 2w transformation W in local memory
##                     (else in its global slot, when local memory is short)
##   inner_pairs       the inner strategy's step table for order K, a tuple of
##                     steps, each a tuple of w (i, j) pairs
##   tile_rows         rows of G per Gram tile in local memory
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude(real_ctype)}
${arith.rotation_functions()}
<%
    w = block_width
    K = 2 * w
    inner_steps = len(inner_pairs)
    entries_per_item = (K * K + work_group_size - 1) // work_group_size
    tile_stride = tile_rows + 1  # padding: column stride not a multiple of the banks
%>
#define WG ${work_group_size}
#define BW ${w}
#define K ${K}
#define TILE_ROWS ${tile_rows}
#define TILE_STRIDE ${tile_stride}
#define INNER_STEPS ${inner_steps}

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

/* Partial Gram matrix of block pair k over the rows of chunk c:
 * work-group (k, c) of an (slots x chunks) grid; tiles of TILE_ROWS rows in
 * local memory, column stride padded against bank conflicts; every
 * work-item owns fixed entries and sums over the rows in order. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_block_gram(__global const cjac_real *G, const int ldg, const int m,
                     const int chunk_rows, __global const int2 *outer_pairs,
                     const int step, __global cjac_real *partial)
{
    __local cjac_real tile[K * TILE_STRIDE];
    const int k = get_group_id(0), c = get_group_id(1);
    const int slots = get_num_groups(0), chunks = get_num_groups(1);
    const int lid = get_local_id(0);
    const int2 blocks = outer_pairs[step * slots + k];
    const int first = c * chunk_rows;
    const int last = min(m, first + chunk_rows);

    cjac_real acc[${entries_per_item}];
%for s in range(entries_per_item):
    acc[${s}] = 0;
%endfor
    for (int row0 = first; row0 < last; row0 += TILE_ROWS) {
        for (int x = lid; x < K * TILE_ROWS; x += WG) {
            const int a = x / TILE_ROWS, rr = x % TILE_ROWS, row = row0 + rr;
            tile[a * TILE_STRIDE + rr] =
                row < last ? G[(size_t)cjac_block_column(blocks, a) * ldg + row] : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
%for s in range(entries_per_item):
        {
            const int e = lid + ${s} * WG;
            if (e < K * K) {
                const int a = e / K, b = e % K;
                for (int rr = 0; rr < TILE_ROWS; ++rr)
                    acc[${s}] = fma(tile[a * TILE_STRIDE + rr], tile[b * TILE_STRIDE + rr], acc[${s}]);
            }
        }
%endfor
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    __global cjac_real *out = partial + ((size_t)k * chunks + c) * (K * K);
%for s in range(entries_per_item):
    if (lid + ${s} * WG < K * K)
        out[lid + ${s} * WG] = acc[${s}];
%endfor
}

/* Inner sweeps on the Gram matrix of block pair k ("bo": inner_sweeps = 1;
 * "fb": until no big rotation, at most inner_sweeps); stores W and whether
 * anything rotated. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_block_rotate(__global const cjac_real *partial, const int chunks,
                       __global const int *signs, __global const int2 *outer_pairs,
                       const int step, const int inner_sweeps,
                       __global cjac_real *transforms, __global int *rotated,
                       __global int *status, __global int *rotations)
{
    __local cjac_real A[K * K];        /* row-major Gram matrix, then R^T A R */
%if transform_in_local:
    __local cjac_real W[K * K];        /* row-major accumulated transformation */
#define CJAC_FENCE CLK_LOCAL_MEM_FENCE
%else:
    __global cjac_real *W = transforms + (size_t)get_group_id(0) * (K * K);
#define CJAC_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
%endif
    __local cjac_real rot_c[BW], rot_t[BW], rot_ti[BW];
    __local int rot_flag[BW], rot_count[BW], rot_big[BW], sweep_big[BW];
    __local int sgn[K];
    __local int block_big;

    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    const int slots = get_num_groups(0);
    const int2 blocks = outer_pairs[step * slots + k];

    for (int a = lid; a < K; a += WG)
        sgn[a] = signs[cjac_block_column(blocks, a)];
    for (int e = lid; e < K * K; e += WG) {
        __global const cjac_real *p = partial + (size_t)k * chunks * (K * K) + e;
        cjac_real sum = 0;
        for (int c = 0; c < chunks; ++c)  /* fixed order: reproducible */
            sum += p[(size_t)c * (K * K)];
        A[e] = sum;
        W[e] = (e / K == e % K) ? 1 : 0;
    }
    if (lid < BW) {
        rot_count[lid] = 0;
        rot_big[lid] = 0;
    }
    barrier(CJAC_FENCE);

    for (int sweep = 0; sweep < inner_sweeps; ++sweep) {
        if (lid < BW)
            sweep_big[lid] = 0;
        barrier(CJAC_FENCE);
        for (int inner = 0; inner < INNER_STEPS; ++inner) {
            if (lid < BW) {
                const int2 p = cjac_inner_pairs[inner * BW + lid];
                const cjac_real a_ii = A[p.x * K + p.x], a_jj = A[p.y * K + p.y];
                const cjac_real a_ij = A[p.x * K + p.y];
                const bool hyperbolic = sgn[p.x] != sgn[p.y];
                cjac_real t = 0;
                /* eq. (2.3) of the 2011 paper, on the Gram matrix */
                if (fabs(a_ij) > CJAC_EPS * sqrt(a_ii) * sqrt(a_jj))
                    t = hyperbolic ? cjac_hyp_tangent(a_ii, a_jj, a_ij)
                                   : cjac_trig_tangent(a_ii, a_jj, a_ij);
                rot_flag[lid] = t != 0;
                rot_t[lid] = t;
                rot_ti[lid] = hyperbolic ? t : -t;
                rot_c[lid] = hyperbolic ? 1 / sqrt((1 - t) * (1 + t)) : 1 / sqrt(fma(t, t, 1));
                if (t != 0) {
                    rot_count[lid] += 1;
                    /* "big" as in the pointwise kernel: |t| measured against
                     * the shorter column (GSVD paper Sect. 2.5 counts these). */
                    const cjac_real moved =
                        fabs(t) * (sqrt(fmax(a_ii, a_jj)) / sqrt(fmin(a_ii, a_jj)));
                    if (moved > sqrt(CJAC_EPS) / 2) {
                        rot_big[lid] = 1;
                        sweep_big[lid] = 1;
                    }
                }
            }
            barrier(CJAC_FENCE);
            /* Columns i, j of A and W: A R, W R (eqs. (2.4)/(2.5) on columns). */
            for (int x = lid; x < BW * K; x += WG) {
                const int q = x / K, row = x % K;
                if (rot_flag[q]) {
                    const int2 p = cjac_inner_pairs[inner * BW + q];
                    const cjac_real c = rot_c[q], t = rot_t[q], ti = rot_ti[q];
                    const cjac_real ai = A[row * K + p.x], aj = A[row * K + p.y];
                    A[row * K + p.x] = c * fma(ti, aj, ai);
                    A[row * K + p.y] = c * fma(t, ai, aj);
                    const cjac_real wi = W[row * K + p.x], wj = W[row * K + p.y];
                    W[row * K + p.x] = c * fma(ti, wj, wi);
                    W[row * K + p.y] = c * fma(t, wi, wj);
                }
            }
            barrier(CJAC_FENCE);
            /* Rows i, j of A R: R^T (A R). */
            for (int x = lid; x < BW * K; x += WG) {
                const int q = x / K, col = x % K;
                if (rot_flag[q]) {
                    const int2 p = cjac_inner_pairs[inner * BW + q];
                    const cjac_real c = rot_c[q], t = rot_t[q], ti = rot_ti[q];
                    const cjac_real ai = A[p.x * K + col], aj = A[p.y * K + col];
                    A[p.x * K + col] = c * fma(ti, aj, ai);
                    A[p.y * K + col] = c * fma(t, ai, aj);
                }
            }
            barrier(CJAC_FENCE);
            if (lid < BW && rot_flag[lid]) {
                const int2 p = cjac_inner_pairs[inner * BW + lid];
                A[p.x * K + p.y] = 0;  /* annihilated by construction */
                A[p.y * K + p.x] = 0;
            }
            barrier(CJAC_FENCE);
        }
        if (lid == 0) {
            int big = 0;
            for (int q = 0; q < BW; ++q)
                big |= sweep_big[q];
            block_big = big;
        }
        barrier(CJAC_FENCE);
        if (!block_big)
            break;
    }
%if transform_in_local:
    __global cjac_real *out = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * K; e += WG)
        out[e] = W[e];
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
 * work-group (k, c); W in local memory, each work-item streams rows. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_block_update(__global cjac_real *X, const int ldx, const int m,
                       const int chunk_rows, __global const int2 *outer_pairs,
                       const int step, __global const cjac_real *transforms,
                       __global const int *rotated)
{
    __local cjac_real W[K * K];
    const int k = get_group_id(0), c = get_group_id(1);
    const int slots = get_num_groups(0);
    if (!rotated[k])
        return;  /* uniform over the work-group */
    const int lid = get_local_id(0);
    const int2 blocks = outer_pairs[step * slots + k];
    for (int e = lid; e < K * K; e += WG)
        W[e] = transforms[(size_t)k * (K * K) + e];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int last = min(m, (c + 1) * chunk_rows);
    for (int row = c * chunk_rows + lid; row < last; row += WG) {
        cjac_real x[K];
        for (int a = 0; a < K; ++a)
            x[a] = X[(size_t)cjac_block_column(blocks, a) * ldx + row];
        for (int b = 0; b < K; ++b) {
            cjac_real y = 0;
            for (int a = 0; a < K; ++a)
                y = fma(x[a], W[a * K + b], y);
            X[(size_t)cjac_block_column(blocks, b) * ldx + row] = y;
        }
    }
}
