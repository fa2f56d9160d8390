## Blocked one-sided hyperbolic Jacobi: one work-group per pair of block columns.
##
## Novakovic & Singer, implicit Hari-Zimmermann GSVD on GPUs, Sect. 2.3-2.5 and
## 3.5 (block-oriented "bo" and full-block "fb" variants), applied to the
## hyperbolic SVD: for a block pair (P, Q) of width w the work-group forms the
## Gram matrix A = [G_P G_Q]^T [G_P G_Q] (2w x 2w) in local memory, runs
## inner Jacobi sweeps on it (two-sided form of the one-sided method: every
## rotation R updates A <- R^T A R and W <- W R), then streams
## [G_P G_Q] <- [G_P G_Q] W (and V likewise) through the rows once.
##
## Render parameters (all explicit, see cljacobi.host.programs.KernelSpec):
##   real_ctype        "double" | "float"
##   work_group_size   threads per work-group
##   block_width       w; the pivot block is K x K with K = 2w
##   accumulate_v      whether V is transformed too
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

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_block_step(__global cjac_real *G, const int ldg, const int m,
%if accumulate_v:
                     __global cjac_real *V, const int ldv, const int mv,
%endif
                     __global const int *signs, __global const int2 *outer_pairs,
                     const int step, const int inner_sweeps,
                     __global int *status, __global int *rotations)
{
    __local cjac_real A[K * K];        /* row-major Gram matrix, then R^T A R */
    __local cjac_real W[K * K];        /* row-major accumulated transformation */
    __local cjac_real tile[K * TILE_STRIDE];
    __local cjac_real rot_c[BW], rot_t[BW], rot_ti[BW];
    __local int rot_flag[BW], rot_count[BW], rot_big[BW], sweep_big[BW];
    __local int sgn[K];
    __local int block_big, block_count;

    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    const int slots = get_num_groups(0);
    const int2 blocks = outer_pairs[step * slots + k];

    for (int a = lid; a < K; a += WG)
        sgn[a] = signs[cjac_block_column(blocks, a)];

    /* Gram matrix by a reduction over the rows in tiles (fixed order). */
    cjac_real acc[${entries_per_item}];
%for s in range(entries_per_item):
    acc[${s}] = 0;
%endfor
    for (int row0 = 0; row0 < m; row0 += TILE_ROWS) {
        for (int x = lid; x < K * TILE_ROWS; x += WG) {
            const int a = x / TILE_ROWS, rr = x % TILE_ROWS, row = row0 + rr;
            tile[a * TILE_STRIDE + rr] =
                row < m ? G[(size_t)cjac_block_column(blocks, a) * ldg + row] : 0;
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
%for s in range(entries_per_item):
    {
        const int e = lid + ${s} * WG;
        if (e < K * K) {
            A[e] = acc[${s}];
            W[e] = (e / K == e % K) ? 1 : 0;
        }
    }
%endfor
    if (lid < BW) {
        rot_count[lid] = 0;
        rot_big[lid] = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* Inner sweeps: "bo" runs one, "fb" until no big rotation (at most inner_sweeps). */
    for (int sweep = 0; sweep < inner_sweeps; ++sweep) {
        if (lid < BW)
            sweep_big[lid] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
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
                    if (fabs(t) > sqrt(CJAC_EPS) / 2) {
                        rot_big[lid] = 1;
                        sweep_big[lid] = 1;
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
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
            barrier(CLK_LOCAL_MEM_FENCE);
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
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid < BW && rot_flag[lid]) {
                const int2 p = cjac_inner_pairs[inner * BW + lid];
                A[p.x * K + p.y] = 0;  /* annihilated by construction */
                A[p.y * K + p.x] = 0;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0) {
            int big = 0;
            for (int q = 0; q < BW; ++q)
                big |= sweep_big[q];
            block_big = big;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!block_big)
            break;
    }
    if (lid == 0) {
        int count = 0, big = 0;
        for (int q = 0; q < BW; ++q) {
            count += rot_count[q];
            big |= rot_big[q];
        }
        block_count = count;
        status[k] |= big ? 3 : (count ? 1 : 0);
        rotations[k] += count;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (block_count == 0)
        return;

    /* [G_P G_Q] <- [G_P G_Q] W, one streaming pass over the rows. */
    for (int row = lid; row < m; row += WG) {
        cjac_real x[K];
        for (int a = 0; a < K; ++a)
            x[a] = G[(size_t)cjac_block_column(blocks, a) * ldg + row];
        for (int b = 0; b < K; ++b) {
            cjac_real y = 0;
            for (int a = 0; a < K; ++a)
                y = fma(x[a], W[a * K + b], y);
            G[(size_t)cjac_block_column(blocks, b) * ldg + row] = y;
        }
    }
%if accumulate_v:
    for (int row = lid; row < mv; row += WG) {
        cjac_real x[K];
        for (int a = 0; a < K; ++a)
            x[a] = V[(size_t)cjac_block_column(blocks, a) * ldv + row];
        for (int b = 0; b < K; ++b) {
            cjac_real y = 0;
            for (int a = 0; a < K; ++a)
                y = fma(x[a], W[a * K + b], y);
            V[(size_t)cjac_block_column(blocks, b) * ldv + row] = y;
        }
    }
%endif
}
