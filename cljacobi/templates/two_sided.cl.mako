## The blocked parallel cyclic two-sided Jacobi method on a Hermitian matrix
## (eigh's method="two-sided", variants "bo" and "fb"): the method of
## cuSOLVER's syevj, with the block pairs of a step as its parallel unit.
##
## A (N x N, N a multiple of K = 2w, zero-padded by the host) is stored whole,
## column-major (a(i, j) at a[j * ld + i]) and Hermitian.  Its indices are cut
## into N / w blocks of w; a step of the outer strategy pairs the blocks
## disjointly, and block pair k = (I, J) of the step owns the K indices
## P_k = I u J (local index x < w: I w + x; else J w + x - w).  Per step:
##   cjac_two_sided_solve   one work-group per pair k: the diagonal block
##                          A[P_k, P_k] to local memory, inner sweeps of the
##                          inner strategy on it (every step's w rotations
##                          decided from the same block, then applied as
##                          A <- R^* A R, W <- W R by inner.rotate_pairs),
##                          the block written back and W_k stored;
##   cjac_two_sided_update  one work-group per tile: A[P_k, P_l] <-
##                          W_k^* (A[P_k, P_l] W_l) and A[P_l, P_k] <- its
##                          conjugate transpose for every k < l (A stays
##                          exactly Hermitian), and with eigenvectors
##                          V[R, P_k] <- V[R, P_k] W_k for the row chunks R of
##                          K rows (V = I from cjac_two_sided_identity before
##                          the first step).
## A pair (i, j) of the diagonal block rotates when
##     |a_ij| > tol max(sqrt(|a_ii|) sqrt(|a_jj|), floor_)
## (the relative test of the pointwise cjac_cyclic_rotations in
## classical.cl.mako, the same tol and floor); the rotation is the Jacobi
## rotation that annihilates a_ij, with t = tan(theta) of eq. (2.4) of
## Novakovic & Singer 2011 (cjac_trig_tangent, arith.rotation_functions: the
## root of t^2 + 2 kappa t - 1 = 0, kappa = (a_jj - a_ii) / (2 a_ij), of
## modulus at most 1) on a_ii, a_jj and a_ij (|a_ij| for complex data, whose
## phase goes into s_j = t e^{i alpha}, s_i = -conj(s_j)).  cljacobi.classical_reference.
## blocked_cyclic_jacobi is the numpy reference of the same steps.
##
## Render parameters (cljacobi.host.two_sided.TwoSidedSpec):
##   real_ctype        "double"
##   complex_          complex Hermitian data (interleaved cjac_real2)
##   inner_pairs       the inner strategy's step table for order K, a tuple of
##                     steps, each a tuple of w (i, j) pairs covering 0..K-1
##   micro             M: every work-item of cjac_two_sided_update computes an
##                     M x M block of a tile's product in registers
##   size_defines      BW = w, K = 2w, INNER_STEPS, LDA and LDW (odd row
##                     strides of the local blocks and of W), SOLVE_WG
##                     (work-items of the solve kernel), UPDATE_NM = K / M,
##                     UPDATE_WG = UPDATE_NM^2
##   signatures        the kernels' arguments (cljacobi.host.signatures)
<%namespace name="arith" file="arith.cl.mako"/>\
<%namespace name="inner" file="inner.cl.mako"/>\
${arith.prelude(real_ctype)}
${arith.element(real_ctype, complex_, "interleaved", with_workgroup_sum=False)}
${arith.rotation_functions()}
${size_defines}
#if K != 2 * BW || LDA < K || LDA % 2 == 0 || UPDATE_NM * ${micro} != K
#error "cjac_two_sided: the sizes do not match the block"
#endif
#if UPDATE_WG != UPDATE_NM * UPDATE_NM
#error "cjac_two_sided_update: the work-group is not one item per micro-tile"
#endif

${inner.pair_table("cjac_inner_pairs", "INNER_STEPS", inner_pairs)}

/* Global index of local index x of the block pair (I, J). */
inline int cjac_pair_index(const int2 blocks, const int x)
{
    return x < BW ? blocks.x * BW + x : blocks.y * BW + (x - BW);
}

/* Inner sweeps on the diagonal block of pair k (at most inner_sweeps; fewer
 * when a sweep rotates nothing).  The local blocks are row-major with the
 * odd row stride LDA (bank conflicts, as cjac_block_rotate's); the global
 * ones are read and written a column at a time (consecutive work-items,
 * consecutive rows). */
__kernel __attribute__((reqd_work_group_size(SOLVE_WG, 1, 1)))
void cjac_two_sided_solve(${signatures["cjac_two_sided_solve"].parameters})
{
    __local cjac_elem A[K * LDA];      /* the diagonal block, then R^* A R */
    __local cjac_elem W[K * LDW];      /* the accumulated transformation */
    __local cjac_real rot_cm1[BW];     /* c - 1 (arith: cjac_rotation_cosine_m1) */
    __local cjac_elem rot_s[BW], rot_si[BW];  /* s_j and s_i of the pair */
    __local int2 rot_pair[BW];
    __local int rot_flag[BW], rot_count[BW], sweep_count[BW];
    __local int block_rotated;

    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    const int2 blocks = outer_pairs[first + k];
${inner.local_pair_table("cjac_inner_pairs", "inner_pairs_local", "INNER_STEPS", "SOLVE_WG")}
    for (int e = lid; e < K * K; e += SOLVE_WG) {
        const int col = e / K, row = e % K;
        A[row * LDA + col] = a[(size_t)cjac_pair_index(blocks, col) * ld
                               + cjac_pair_index(blocks, row)];
        W[row * LDW + col] = cjac_from_real(row == col ? 1 : 0);
    }
    /* Every pair index q belongs to work-item q % SOLVE_WG throughout. */
    for (int q = lid; q < BW; q += SOLVE_WG)
        rot_count[q] = sweep_count[q] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int sweep = 0; sweep < inner_sweeps; ++sweep) {
        for (int step = 0; step < INNER_STEPS; ++step) {
            for (int q = lid; q < BW; q += SOLVE_WG) {
                const int2 p = convert_int2(inner_pairs_local[step * BW + q]);
                const cjac_elem a_ij = A[p.x * LDA + p.y];
                const cjac_real a_ii = cjac_real_part(A[p.x * LDA + p.x]);
                const cjac_real a_jj = cjac_real_part(A[p.y * LDA + p.y]);
                const cjac_real arg = cjac_tangent_arg(a_ij);
                cjac_real t = 0;
                if (cjac_elem_abs(a_ij) > tol * fmax(sqrt(fabs(a_ii)) * sqrt(fabs(a_jj)), floor_))
                    t = cjac_trig_tangent(a_ii, a_jj, arg);
                const cjac_elem s_j = cjac_with_phase(t, a_ij, arg);
                rot_pair[q] = p;
                rot_flag[q] = t != 0;
                rot_s[q] = s_j;
                rot_si[q] = -cjac_conj(s_j);
                rot_cm1[q] = cjac_rotation_cosine_m1(t, false);
                sweep_count[q] += t != 0;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            ${inner.rotate_pairs(complex_, "__local", "SOLVE_WG")}
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        /* sweep_count was last written before the barrier ahead of the final
         * update; it is cleared for the next sweep before the barrier below. */
        if (lid == 0) {
            int count = 0;
            for (int q = 0; q < BW; ++q) {
                count += sweep_count[q];
                rot_count[q] += sweep_count[q];
                sweep_count[q] = 0;
            }
            block_rotated = count;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!block_rotated)
            break;  /* uniform over the work-group */
    }
    /* The block back, Hermitian exactly: its upper triangle and that
     * triangle's conjugate (the rows-after-columns order of the update makes
     * (x, y) and (y, x) differ by rounding). */
    for (int e = lid; e < K * K; e += SOLVE_WG) {
        const int col = e / K, row = e % K;
        a[(size_t)cjac_pair_index(blocks, col) * ld + cjac_pair_index(blocks, row)]
            = row <= col ? A[row * LDA + col] : cjac_conj(A[col * LDA + row]);
    }
    __global cjac_elem *out = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * K; e += SOLVE_WG)
        out[e] = W[(e / K) * LDW + e % K];
    if (lid == 0) {
        int count = 0;
        for (int q = 0; q < BW; ++q)
            count += rot_count[q];
        rotated[k] = count > 0;
        rotations[k] += count;
    }
}

<%def name="micro_product(left, right, conj_left, steps)">\
/* This work-item's micro-tile of ${left + ("^* " if conj_left else " ") + right}
         * (rows i + r UPDATE_NM, columns j + s UPDATE_NM), every entry the fma
         * chain over c = 0, 1, ..., ${steps} - 1 from 0. */
%for r in range(micro):
%for s in range(micro):
        cjac_elem acc_${r}_${s} = CJAC_ELEM_ZERO;
%endfor
%endfor
        for (int c = 0; c < ${steps}; ++c) {
%for r in range(micro):
%if conj_left:
            const cjac_elem x_${r} = cjac_conj(${left}[c * LDA + i + ${r} * UPDATE_NM]);
%else:
            const cjac_elem x_${r} = ${left}[(i + ${r} * UPDATE_NM) * LDA + c];
%endif
%endfor
%for s in range(micro):
            const cjac_elem y_${s} = ${right}[c * LDA + j + ${s} * UPDATE_NM];
%endfor
%for r in range(micro):
%for s in range(micro):
            acc_${r}_${s} = cjac_axpy(x_${r}, y_${s}, acc_${r}_${s});
%endfor
%endfor
        }\
</%def>

<%def name="store_micro(tile)">\
%for r in range(micro):
%for s in range(micro):
        ${tile}[(i + ${r} * UPDATE_NM) * LDA + j + ${s} * UPDATE_NM] = acc_${r}_${s};
%endfor
%endfor
</%def>

/* The tiles, one per work-group, in one launch: groups 0 .. A_TILES - 1
 * (A_TILES = slots (slots - 1) / 2) the off-diagonal blocks of A, tile
 * (k, l), k < l, numbered row by row, being A[P_k, P_l]; with eigenvectors the
 * next slots * chunks groups the blocks V[R, P_k] (pair k, chunk R of K rows).
 * A tile whose transformations are the identity (no rotation in the solve)
 * is left as it is: the products would give it back bit for bit.
 *
 * The tile X and the right transformation go to local memory (row-major, odd
 * stride LDA); the M x M register micro-tiles are cut cyclically, work-item
 * lid = i + UPDATE_NM j holding rows i + r UPDATE_NM and columns j + s
 * UPDATE_NM (consecutive work-items read consecutive addresses of the right
 * factor and the conjugated left one, and addresses LDA apart, odd, of the
 * plain left one: no bank conflicts).
 *   A tile: Y = X W_l goes back into the tile (after a barrier), W_k over
 *   W_l, then W_k^* Y, staged in the tile and written twice, as itself at
 *   (P_k, P_l) and conjugate-transposed at (P_l, P_k), a column at a time.
 *   V tile: X W_k written out of the registers (consecutive work-items,
 *   consecutive rows); its second product runs no step.
 * Both kinds pass the same barriers (one launch for the two, where three
 * launches a step cost the host more than the device at small orders). */
__kernel __attribute__((reqd_work_group_size(UPDATE_WG, 1, 1)))
void cjac_two_sided_update(${signatures["cjac_two_sided_update"].parameters})
{
    __local cjac_elem X[K * LDA];
    __local cjac_elem T[K * LDA];
    const int lid = get_local_id(0);
    const int i = lid % UPDATE_NM, j = lid / UPDATE_NM;
    const int a_tiles = slots * (slots - 1) / 2;
    const int group = get_group_id(0);
    const bool on_v = group >= a_tiles;
    int k = 0, l = group;  /* A: tile (k, l); V: pair k, chunk l */
    if (on_v) {
        k = (group - a_tiles) / chunks;
        l = (group - a_tiles) % chunks;
    } else {
        while (l >= slots - 1 - k) {
            l -= slots - 1 - k;
            ++k;
        }
        l += k + 1;
    }
    if (on_v ? !rotated[k] : !rotated[k] && !rotated[l])
        return;  /* uniform over the work-group, before any barrier */
    const int right = on_v ? k : l;
    const int2 rows = outer_pairs[first + k], cols = outer_pairs[first + right];
    __global const cjac_elem *w_right = transforms + (size_t)right * (K * K);
    for (int e = lid; e < K * K; e += UPDATE_WG) {
        const int col = e / K, row = e % K;
        const size_t column = (size_t)cjac_pair_index(cols, col) * ld;
        X[row * LDA + col] = on_v ? v[column + l * K + row]
                                  : a[column + cjac_pair_index(rows, row)];
        T[(e / K) * LDA + e % K] = w_right[e];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    {
        ${micro_product("X", "T", False, "K")}
        if (on_v) {
%for r in range(micro):
%for s in range(micro):
            v[(size_t)cjac_pair_index(cols, j + ${s} * UPDATE_NM) * ld + l * K + i
              + ${r} * UPDATE_NM] = acc_${r}_${s};
%endfor
%endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);  /* X and W_l read by every work-item */
        if (!on_v) {
            ${store_micro("X")}
        }
    }
    __global const cjac_elem *w_left = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * K && !on_v; e += UPDATE_WG)
        T[(e / K) * LDA + e % K] = w_left[e];
    barrier(CLK_LOCAL_MEM_FENCE);
    {
        ${micro_product("T", "X", True, "(on_v ? 0 : K)")}
        barrier(CLK_LOCAL_MEM_FENCE);  /* Y read by every work-item */
        if (!on_v) {
            ${store_micro("X")}
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < K * K && !on_v; e += UPDATE_WG) {
        const int col = e / K, row = e % K;
        a[(size_t)cjac_pair_index(cols, col) * ld + cjac_pair_index(rows, row)]
            = X[row * LDA + col];
        a[(size_t)cjac_pair_index(rows, col) * ld + cjac_pair_index(cols, row)]
            = cjac_conj(X[col * LDA + row]);
    }
}

/* V = I: work-item (r, c) sets entry (r, c) of the N x N V. */
__kernel void cjac_two_sided_identity(${signatures["cjac_two_sided_identity"].parameters})
{
    const int r = get_global_id(0), c = get_global_id(1);
    if (r < ld && c < ld)
        v[(size_t)c * ld + r] = cjac_from_real(r == c ? 1 : 0);
}
