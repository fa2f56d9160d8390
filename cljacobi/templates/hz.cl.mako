## The pointwise implicit Hari-Zimmermann kernel of the GSVD: one parallel
## step transforms every pivot pair (i, j) of the step, one work-group per
## pair, all from the same F_k, G_k (the pairs of a step are disjoint).
##
## V. Novakovic and S. Singer, "Implicit Hari-Zimmermann algorithm for the
## generalized SVD on the GPUs" (cited as [NS]; docs/design.md, "The GSVD"):
##   the pivot submatrices A_k = [f_i f_j]^* [f_i f_j], B_k = [g_i g_j]^* [g_i g_j]
##   (Sect. 2.1), the relative orthogonality test before Sect. 2.1.1, the
##   complex (Sect. 2.1.1) and real (Sect. 2.1.2) transformations Z'_k with
##   their exceptions, the not-scaled version's D_k (Sect. 2.1), the big and
##   small transformations of criteria C1 and C2 (Sect. 2.5), and the sorting
##   permutation P_k (Sect. 2.1).  cljacobi.hz_reference is the numpy
##   reference of the same formulas; the paper's slips corrected there are
##   corrected here alike (marked "slip").
##
## Render parameters (all explicit, see cljacobi.host.hz.HZSpec):
##   real_ctype        "double"
##   complex_          complex data (interleaved cjac_real2 elements)
##   prescaled         the standard version (diag(B) = I assumed, Sect. 2) or the
##                     not-scaled one (D_k in every step, Sect. 2.1)
##   criterion         "C1" or "C2": which transformations are small (Sect. 2.5)
##   indefinite        A = F^* J F, J = diag(I_p, -I) by the rows of F (argument
##                     positive_rows = p): the definite pencil (A indefinite, B
##                     positive definite) of the generalized eigenproblem; the
##                     relative orthogonality test takes |a'_ii| (pointwise only)
##   work_group_size   work-items per pair (a power of two)
##   size_defines      #define WG (work_group_size), the counter indices
##                     (HZ_COUNTERS); with a block width also BW,
##                     HZ_INNER_STEPS and HZ_BLOCK_WG (work-items of cjac_hz_block)
##   block_width       0: the pointwise kernel only; w: also cjac_hz_block, the
##                     inner sweeps of the block-oriented level (Sect. 2.3)
##   inner_pairs       the inner strategy's step table of order 2w (with a block width)
##   signatures        the kernels' parameter lists (HZSpec.signatures)
##
## The def pair_math (at the end: the 2x2 transformations, hz_decide and the
## dot products) is also rendered by batched_hz.cl.mako.
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude(real_ctype)}

${size_defines}
#if WG < 1 || (WG & (WG - 1)) != 0
#error "WG must be a power of two (cljacobi.host.hz.HZSpec)"
#endif
${arith.workgroup_sum(work_group_size)}
${arith.element(real_ctype, complex_, "interleaved")}

/* The counters of one sweep, HZ_TRANSFORMED, HZ_BIG and HZ_NOT_DEFINITE, are
 * indices rendered from cljacobi.host.hz.HZ_COUNTERS (in size_defines). */

${pair_math(complex_, prescaled, criterion, enhanced_dots)}\
<% separate_errors = enhanced_dots and not complex_ %>
/* Work-group totals (the c and, where kept apart, the d in a fixed order). */
inline cjac_real hz_sum_workgroup(__local cjac_real *scratch, const hz_sum s)
{
    const cjac_real c = cjac_workgroup_sum(scratch, s.c);
%if separate_errors:
    return c + cjac_workgroup_sum(scratch, s.d);
%else:
    return c;
%endif
}

inline cjac_elem hz_dot_workgroup(__local cjac_real *scratch, const hz_dot s)
{
    const cjac_elem c = cjac_elem_workgroup_sum(scratch, s.c);
%if separate_errors:
    return c + cjac_workgroup_sum(scratch, s.d);
%else:
    return c;
%endif
}

/* One work-group per pivot pair k of the step: pairs[2 (first + k)], pairs[2 (first + k) + 1],
 * i < j. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_hz_step(${signatures["cjac_hz_step"].parameters})
{
    __local cjac_real scratch[WG];
    __local hz_transform shared_z;
    __local int apply;
    const int lid = get_local_id(0);
    const int k = first + get_group_id(0);
    /* A pair with j >= n (the virtual column of an odd n) reads nothing and
     * applies nothing; it still passes every barrier (PoCL 3.1 miscompiles a
     * return taken before them, even a uniform one). */
    const int i = pairs[2 * k], j_pair = pairs[2 * k + 1];
    const int active = j_pair < n;
    const int j = active ? j_pair : i;
    const int rows_f = active ? mf : 0, rows_g = active ? mg : 0;
    __global cjac_elem *f_i = f + (size_t)i * ldf, *f_j = f + (size_t)j * ldf;
    __global cjac_elem *g_i = g + (size_t)i * ldg, *g_j = g + (size_t)j * ldg;

    /* The pivot submatrices A_k and B_k ([NS] Sect. 2.1), in a fixed order. */
${pivot_sums("lid", "WG", "rows_f", "rows_g", prescaled, indefinite)}
    cjac_real a_ii = hz_sum_workgroup(scratch, s_ii);
    cjac_real a_jj = hz_sum_workgroup(scratch, s_jj);
    cjac_elem a_ij = hz_dot_workgroup(scratch, s_ij);
%if indefinite:
    a_ii -= hz_sum_workgroup(scratch, s_ii_neg);
    a_jj -= hz_sum_workgroup(scratch, s_jj_neg);
    a_ij -= hz_dot_workgroup(scratch, s_ij_neg);
%endif
    const cjac_elem b_ij = hz_dot_workgroup(scratch, t_ij);
%if prescaled:
    const cjac_real b_ii = 1, b_jj = 1;  /* diag(B) = I assumed ([NS] Sect. 2) */
%else:
    const cjac_real b_ii = hz_sum_workgroup(scratch, t_ii);
    const cjac_real b_jj = hz_sum_workgroup(scratch, t_jj);
%endif

    if (lid == 0 && active) {
        const hz_decision d = hz_decide(a_ii, a_ij, a_jj, b_ii, b_ij, b_jj, order);
        if (d.not_definite)
            atomic_inc(&counters[HZ_NOT_DEFINITE]);
        if (d.transformed)
            atomic_inc(&counters[HZ_TRANSFORMED]);
        if (d.big)
            atomic_inc(&counters[HZ_BIG]);
        shared_z = d.z;
        apply = d.apply;
    } else if (lid == 0) {
        apply = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!apply)
        return;
    const hz_transform z = shared_z;
    hz_update(f_i, f_j, lid, mf, WG, z);  /* the work-group's items striding */
    hz_update(g_i, g_j, lid, mg, WG, z);
    hz_update(zz + (size_t)i * ldz, zz + (size_t)j * ldz, lid, mz, WG, z);
}
%if block_width:

/* ------------------------------------------------------------------------
 * The block level ([NS] Sect. 2.3, 2.4): one work-group per pair of block
 * columns (P, Q) of width BW.  The Gram matrices A^ = [F_P F_Q]^* [F_P F_Q]
 * and B^ = [G_P G_Q]^* [G_P G_Q] come from the blocked family's
 * cjac_block_gram (partial sums per row chunk, added here in a fixed order);
 * their Cholesky factors A^ = F^^* F^, B^ = G^^* G^ (2w x 2w, upper
 * triangular) take the place of the block columns, the pointwise method
 * runs on them with the inner strategy (one sweep for BO, until a sweep
 * transforms nothing, at most inner_sweeps, for FB), accumulating Z^, and
 * Z~ = Z^ Theta~ (Sect. 2.4) goes to the slot cjac_block_update reads,
 * which applies it to F, G and Z.
 *
 * Local storage is column by column: column c of a 2w x 2w matrix M is
 * M[c * HZ_LD .. c * HZ_LD + 2w - 1].
 * ------------------------------------------------------------------------ */
#define HZ_K (2 * BW)
#define HZ_LD (HZ_K + 1)  /* odd stride against bank conflicts */

/* The inner strategy (pairs of local columns 0..HZ_K-1), one row per step. */
__constant int2 hz_inner_pairs[HZ_INNER_STEPS * BW] = {
%for step in inner_pairs:
    ${", ".join(f"(int2)({i}, {j})" for i, j in step)},
%endfor
};

/* ||x||^2 and x^* y over a local column, in row order. */
inline cjac_real hz_local_norm2(__local const cjac_elem *x)
{
    hz_sum s = {0, 0};
    for (int r = 0; r < HZ_K; ++r)
        s = hz_norm2_acc(x[r], s);
    return hz_sum_value(s);
}

inline cjac_elem hz_local_dot(__local const cjac_elem *x, __local const cjac_elem *y)
{
    hz_dot s = {CJAC_ELEM_ZERO, 0};
    for (int r = 0; r < HZ_K; ++r)
        s = hz_dot_acc(x[r], y[r], s);
    return hz_dot_value(s);
}

/* In place, M (Hermitian, upper triangle M(r, c), r <= c, at M[c * HZ_LD + r])
 * := R with R^* R = M, R upper triangular (the lower triangle zeroed): the
 * unpivoted Cholesky factorization of [NS] Sect. 2.3, right-looking, one
 * row of R per step.  A pivot at or below HZ_K eps times its original
 * diagonal (M positive semidefinite in floating point: dependent columns in
 * the block, the C or S = 0 of the GSVD) gets a zero row: R^* R = M up to
 * that rounding level.  All the work-group's items call it. */
inline void hz_cholesky(__local cjac_elem *M, __local cjac_real *diagonal, __local cjac_real *pivot)
{
    const int lid = get_local_id(0);
    for (int c = lid; c < HZ_K; c += HZ_BLOCK_WG)
        diagonal[c] = cjac_real_part(M[c * HZ_LD + c]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < HZ_K; ++j) {
        if (lid == 0) {
            const cjac_real d = cjac_real_part(M[j * HZ_LD + j]);
            *pivot = d > HZ_K * CJAC_EPS * diagonal[j] ? sqrt(d) : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const cjac_real r_jj = *pivot;
        for (int c = j + lid; c < HZ_K; c += HZ_BLOCK_WG)  /* row j of R */
            M[c * HZ_LD + j] = c == j ? cjac_from_real(r_jj)
                             : r_jj > 0 ? cjac_scale(1 / r_jj, M[c * HZ_LD + j]) : CJAC_ELEM_ZERO;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* The trailing matrix: M(r, c) -= conj(R(j, r)) R(j, c), j < r <= c. */
        const int rest = HZ_K - 1 - j;
        for (int e = lid; e < rest * rest; e += HZ_BLOCK_WG) {
            const int r = j + 1 + e / rest, c = j + 1 + e % rest;
            if (r <= c)
                M[c * HZ_LD + r] -= cjac_mul(cjac_conj(M[r * HZ_LD + j]), M[c * HZ_LD + j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int e = lid; e < HZ_K * HZ_K; e += HZ_BLOCK_WG) {
        const int r = e % HZ_K, c = e / HZ_K;
        if (r > c)
            M[c * HZ_LD + r] = CJAC_ELEM_ZERO;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* [y_p y_q] := [y_p y_q] Z at row r of a local matrix. */
inline void hz_local_update(__local cjac_elem *Y, const int2 pq, const int r, const hz_transform z)
{
    const cjac_elem a = Y[pq.x * HZ_LD + r], b = Y[pq.y * HZ_LD + r];
    Y[pq.x * HZ_LD + r] = cjac_axpy(z.z11, a, cjac_mul(z.z21, b));
    Y[pq.y * HZ_LD + r] = cjac_axpy(z.z12, a, cjac_mul(z.z22, b));
}

__kernel __attribute__((reqd_work_group_size(HZ_BLOCK_WG, 1, 1)))
void cjac_hz_block(${signatures["cjac_hz_block"].parameters})
{
    __local cjac_elem Fh[HZ_K * HZ_LD], Gh[HZ_K * HZ_LD], W[HZ_K * HZ_LD];
    __local cjac_real diagonal[HZ_K], scale[HZ_K], pivot;
    __local cjac_real dots[BW][6];  /* per pair: a_pp, a_qq, b_pp, b_qq, then a_pq, b_pq */
%if complex_:
    __local cjac_elem cross[BW][2];
%endif
    __local hz_transform zs[BW];
    __local int flag[BW], transformed_q[BW], big_q[BW];
    __local int sweep_transformed;
    const int k = get_group_id(0), lid = get_local_id(0);
    const size_t base = (size_t)k * chunks * (HZ_K * HZ_K);
    /* The Gram matrices: element (r, c) = y_r^* y_c of the block pair. */
    for (int e = lid; e < HZ_K * HZ_K; e += HZ_BLOCK_WG) {
        cjac_elem a = CJAC_ELEM_ZERO, b = CJAC_ELEM_ZERO;
        for (int c = 0; c < chunks; ++c) {  /* fixed order: reproducible */
            a += partial_f[base + (size_t)c * (HZ_K * HZ_K) + e];
            b += partial_g[base + (size_t)c * (HZ_K * HZ_K) + e];
        }
        const int row = e / HZ_K, col = e % HZ_K;
        Fh[col * HZ_LD + row] = a;
        Gh[col * HZ_LD + row] = b;
        W[col * HZ_LD + row] = cjac_from_real(row == col ? 1 : 0);
    }
    for (int q = lid; q < BW; q += HZ_BLOCK_WG)
        transformed_q[q] = big_q[q] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    hz_cholesky(Fh, diagonal, &pivot);
    hz_cholesky(Gh, diagonal, &pivot);
%if prescaled:
    /* The standard version needs diag(G^^* G^) = I: the columns of G^ (and
     * of F^) scaled by 1/||g^_c||, Z^ starting from that diagonal ([NS]
     * Sect. 3.4, the prescaling of its variants 0 and 4). */
    for (int c = lid; c < HZ_K; c += HZ_BLOCK_WG) {
        const cjac_real norm2 = hz_local_norm2(Gh + c * HZ_LD);
        scale[c] = norm2 > 0 && norm2 != 1 ? 1 / sqrt(norm2) : 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < HZ_K * HZ_K; e += HZ_BLOCK_WG) {
        const int c = e / HZ_K, r = e % HZ_K;
        Fh[c * HZ_LD + r] = cjac_scale(scale[c], Fh[c * HZ_LD + r]);
        Gh[c * HZ_LD + r] = cjac_scale(scale[c], Gh[c * HZ_LD + r]);
        W[c * HZ_LD + r] = cjac_scale(scale[c], W[c * HZ_LD + r]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
%endif
    for (int sweep = 0; sweep < inner_sweeps; ++sweep) {
        if (lid == 0)
            sweep_transformed = 0;
        for (int inner = 0; inner < HZ_INNER_STEPS; ++inner) {
            /* A_k and B_k of every pair of the step, from the same F^, G^:
             * six dot products per pair, one work-item each. */
            for (int x = lid; x < 6 * BW; x += HZ_BLOCK_WG) {
                const int q = x / 6, which = x % 6;
                const int2 p = hz_inner_pairs[inner * BW + q];
                __local const cjac_elem *Y = which == 2 || which == 3 || which == 5 ? Gh : Fh;
                const int first = which == 1 || which == 3 ? p.y : p.x;
                if (which < 4) {
%if prescaled:
                    dots[q][which] = which >= 2 ? 1 : hz_local_norm2(Y + first * HZ_LD);
%else:
                    dots[q][which] = hz_local_norm2(Y + first * HZ_LD);
%endif
                } else {
                    const cjac_elem v = hz_local_dot(Y + p.x * HZ_LD, Y + p.y * HZ_LD);
%if complex_:
                    cross[q][which - 4] = v;
%else:
                    dots[q][which] = v;
%endif
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int q = lid; q < BW; q += HZ_BLOCK_WG) {
%if complex_:
                const cjac_elem a_pq = cross[q][0], b_pq = cross[q][1];
%else:
                const cjac_elem a_pq = dots[q][4], b_pq = dots[q][5];
%endif
                const hz_decision d = hz_decide(dots[q][0], a_pq, dots[q][1], dots[q][2], b_pq,
                                                dots[q][3], order);
                /* A pivot pair of B^ that is not positive definite (the
                 * Cholesky factor of a nearly singular B^) is left to the
                 * pointwise level, which reads the columns themselves. */
                zs[q] = d.z;
                flag[q] = d.apply && !d.not_definite;
                transformed_q[q] += d.transformed;
                big_q[q] += d.big;
                if (d.transformed)
                    sweep_transformed = 1;  /* a benign race: every writer writes 1 */
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int x = lid; x < BW * HZ_K; x += HZ_BLOCK_WG) {
                const int q = x / HZ_K, r = x % HZ_K;
                if (flag[q]) {
                    const int2 p = hz_inner_pairs[inner * BW + q];
                    hz_local_update(Fh, p, r, zs[q]);
                    hz_local_update(Gh, p, r, zs[q]);
                    hz_local_update(W, p, r, zs[q]);
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        /* The inner level stops after a sweep without transformations (apart
         * from the sortings P_k; [NS] Sect. 2.5), or after inner_sweeps. */
        const int any = sweep_transformed;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!any)
            break;  /* uniform over the work-group */
    }
%if not prescaled:
    /* Z~ := Z^ Theta~, Theta~_cc = (||f^_c||^2 + ||g^_c||^2)^(-1/2) from the
     * transformed factors ([NS] Sect. 2.4); a column zero in both keeps 1.
     * (The standard version skips it: it would undo diag(G^* G) = I, which
     * its pointwise sweeps assume.) */
    for (int c = lid; c < HZ_K; c += HZ_BLOCK_WG) {
        const cjac_real norm2 = hz_local_norm2(Fh + c * HZ_LD) + hz_local_norm2(Gh + c * HZ_LD);
        scale[c] = norm2 > 0 ? 1 / sqrt(norm2) : 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
%endif
    __global cjac_elem *out = transforms + (size_t)k * (HZ_K * HZ_K);
    for (int e = lid; e < HZ_K * HZ_K; e += HZ_BLOCK_WG) {  /* out: row-major */
        const int row = e / HZ_K, col = e % HZ_K;
%if prescaled:
        out[e] = W[col * HZ_LD + row];
%else:
        out[e] = cjac_scale(scale[col], W[col * HZ_LD + row]);
%endif
    }
    if (lid == 0) {
        int count = 0, big = 0;
        for (int q = 0; q < BW; ++q) {
            count += transformed_q[q];
            big += big_q[q];
        }
        rotated[k] = 1;  /* W may hold a permutation or Theta alone: always applied */
        atomic_add(&counters[HZ_TRANSFORMED], count);
        atomic_add(&counters[HZ_BIG], big);
    }
}
%endif
<%def name="pivot_sums(first, step, rows_f, rows_g, prescaled, indefinite=False)">\
## A work-item's share of the sums of A_k and B_k ([NS] Sect. 2.1): rows
## first, first + step, .. of the columns f_i, f_j (rows_f) and g_i, g_j
## (rows_g) into s_ii, s_jj, s_ij and t_ii, t_jj, t_ij (hz_sum / hz_dot,
## pair_math's); with `indefinite`, F's rows from positive_rows on into
## s_ii_neg, s_jj_neg, s_ij_neg (A = F^* J F, J = diag(I, -I)).
    const hz_sum none = {0, 0};
    const hz_dot no_dot = {CJAC_ELEM_ZERO, 0};
    hz_sum s_ii = none, s_jj = none, t_ii = none, t_jj = none;
    hz_dot s_ij = no_dot, t_ij = no_dot;
%if indefinite:
    hz_sum s_ii_neg = none, s_jj_neg = none;
    hz_dot s_ij_neg = no_dot;
%endif
    for (int r = ${first}; r < ${rows_f}; r += ${step}) {
        const cjac_elem x = f_i[r], y = f_j[r];
%if indefinite:
        if (r >= positive_rows) {
            s_ii_neg = hz_norm2_acc(x, s_ii_neg);
            s_jj_neg = hz_norm2_acc(y, s_jj_neg);
            s_ij_neg = hz_dot_acc(x, y, s_ij_neg);
            continue;
        }
%endif
        s_ii = hz_norm2_acc(x, s_ii);
        s_jj = hz_norm2_acc(y, s_jj);
        s_ij = hz_dot_acc(x, y, s_ij);
    }
    for (int r = ${first}; r < ${rows_g}; r += ${step}) {
        const cjac_elem x = g_i[r], y = g_j[r];
%if not prescaled:
        t_ii = hz_norm2_acc(x, t_ii);
        t_jj = hz_norm2_acc(y, t_jj);
%endif
        t_ij = hz_dot_acc(x, y, t_ij);
    }
</%def>
<%def name="pair_math(complex_, prescaled, criterion, enhanced_dots)">\
## The 2x2 arithmetic of the implicit Hari-Zimmermann method, shared by this
## family's kernels and the batched one (batched_hz.cl.mako): the
## transformations Z_k with their exceptions, the decision of a pivot pair
## (hz_decide), the update of a pair's columns (hz_update) and the sums of
## products for A_k and B_k.  The caller has
## rendered arith's prelude and element.
/* (cos theta, sin theta) from tan theta, |theta| <= pi/2, via hypot (no
 * overflow).  [NS] Sect. 2.1.1 prints cos theta = 1/(1 + tan^2 theta): slip,
 * the identity has the square root.  tan theta = +-inf: cos = 0 and
 * sin = sign(tan theta) (the paper's sin = 1 is a slip for -inf). */
inline void hz_cos_sin(const cjac_real tangent, cjac_real *c, cjac_real *s)
{
    if (isinf(tangent)) {
        *c = 0;
        *s = copysign((cjac_real)1, tangent);
        return;
    }
    const cjac_real secant = hypot((cjac_real)1, tangent);
    *c = 1 / secant;
    *s = tangent / secant;
}

/* t_k = sqrt(1 - x_k^2), |x_k| < 1 ([NS] Sect. 2.1.1, 2.1.2); for |x_k| >= 1/2
 * as (1 - |x|)(1 + |x|), where 1 - |x| is exact. */
inline cjac_real hz_sqrt_one_minus_square(const cjac_real x)
{
    const cjac_real a = fabs(x);
    return sqrt(a < (cjac_real)0.5 ? 1 - a * a : (1 - a) * (1 + a));
}

/* The 2x2 transformation, columns (z11, z21) and (z12, z22): [y_i y_j] := [y_i y_j] Z. */
typedef struct { cjac_elem z11, z21, z12, z22; } hz_transform;

/* The exception of a proportional pivot pair ([NS] Sect. 2.1.1):
 * (1/sqrt 2) [[1/sqrt(1+x), -e^{i zeta}/sqrt(1-x)], [e^{-i zeta}/sqrt(1+x), 1/sqrt(1-x)]],
 * x = |b'_ij|, e^{i zeta} = b'_ij / |b'_ij|; for real data the phase is
 * sign(b'_ij) (the paper's real formula of Sect. 2.1.2 uses |x| alone: slip). */
inline hz_transform hz_proportional(const cjac_real x, const cjac_elem phase)
{
    const cjac_real plus = 1 / sqrt(2 * (1 + x));
    const cjac_real minus = 1 / sqrt(2 * (1 - x));
    hz_transform z;
    z.z11 = cjac_from_real(plus);
    z.z12 = cjac_scale(-minus, phase);
    z.z21 = cjac_scale(plus, cjac_conj(phase));
    z.z22 = cjac_from_real(minus);
    return z;
}

/* Z'_k of [NS] Sect. 2.1.1 (complex) or 2.1.2 (real) for the rescaled pivot
 * elements (diag(B'_k) = I, off-diagonal b = b'_ij, |b| < 1); *exceptional
 * tells the exception, *cos_phi and *cos_psi (and t) what C1 and C2 test. */
inline hz_transform hz_pair_transform(const cjac_real a_ii, const cjac_elem a_ij,
                                      const cjac_real a_jj, const cjac_elem b,
                                      bool *exceptional, cjac_real *cos_phi,
                                      cjac_real *cos_psi, cjac_real *t_out)
{
    hz_transform z;
    const cjac_real h = a_jj - a_ii;                       /* h_k := a'_jj - a'_ii */
%if complex_:
    const cjac_real x = cjac_elem_abs(b);                  /* x_k := |b'_ij| */
    const cjac_elem phase = x == 0 ? (cjac_real2)(1, 0) : b / x;  /* e^{i zeta_k} */
    const cjac_elem zk = cjac_mul(cjac_conj(phase), a_ij); /* z_k := e^{-i zeta_k} a'_ij */
    const cjac_real u = zk.x, v = zk.y;
    *exceptional = v == 0 && h == 0;
    if (*exceptional)
        return hz_proportional(x, phase);
    const cjac_real t = hz_sqrt_one_minus_square(x);       /* t_k */
    const cjac_real tau = h >= 0 ? 1 : -1;                 /* tau_k := sign(1, h_k) */
    /* tan 2theta_k := tau_k (2 u_k - (a'_ii + a'_jj) x_k) / (t_k sqrt(h_k^2 + 4 v_k^2)) */
    const cjac_real tan_2theta = tau * (2 * u - (a_ii + a_jj) * x) / (t * hypot(h, 2 * v));
    cjac_real cos_2theta, sin_2theta, cos_gamma, sin_gamma;
    hz_cos_sin(tan_2theta, &cos_2theta, &sin_2theta);
    hz_cos_sin(2 * v / h, &cos_gamma, &sin_gamma);         /* tan gamma_k := 2 v_k / h_k */
    /* cos phi_k, cos psi_k := sqrt(1 +- x_k sin 2theta_k + t_k cos gamma_k cos 2theta_k) / sqrt 2 */
    const cjac_real common = t * cos_gamma * cos_2theta;
    const cjac_real c_phi = sqrt(1 + x * sin_2theta + common) / M_SQRT2;
    const cjac_real c_psi = sqrt(1 - x * sin_2theta + common) / M_SQRT2;
    const cjac_real skew = t * sin_gamma * cos_2theta;
    /* e^{i alpha_k} sin phi_k := e^{i zeta_k} ((sin 2theta_k - x_k) + i skew) / (2 cos psi_k),
     * e^{-i beta_k} sin psi_k := e^{-i zeta_k} ((sin 2theta_k + x_k) - i skew) / (2 cos phi_k) */
    const cjac_elem s_phi = cjac_scale(1 / (2 * c_psi),
                                       cjac_mul(phase, (cjac_real2)(sin_2theta - x, skew)));
    const cjac_elem s_psi = cjac_scale(1 / (2 * c_phi),
                                       cjac_mul(cjac_conj(phase), (cjac_real2)(sin_2theta + x, -skew)));
    /* Z'_k := (1/t_k) [[cos phi_k, e^{i alpha_k} sin phi_k], [-e^{-i beta_k} sin psi_k, cos psi_k]] */
    z.z11 = cjac_from_real(c_phi / t);
    z.z12 = cjac_scale(1 / t, s_phi);
    z.z21 = cjac_scale(-1 / t, s_psi);
    z.z22 = cjac_from_real(c_psi / t);
%else:
    const cjac_real x = b;
    const cjac_real denominator = 2 * a_ij - (a_ii + a_jj) * x;
    *exceptional = h == 0 && denominator == 0;             /* cot 2theta_k = 0/0 */
    if (*exceptional)
        return hz_proportional(fabs(x), x >= 0 ? 1 : -1);
    const cjac_real t = hz_sqrt_one_minus_square(x);
    const cjac_real root_plus = sqrt(1 + x), root_minus = sqrt(1 - x);
    const cjac_real xi = x / (root_plus + root_minus);     /* xi_k */
    const cjac_real eta = x / ((1 + root_plus) * (1 + root_minus));  /* eta_k */
    /* cot 2theta_k := t_k (a'_jj - a'_ii) / (2 a'_ij - (a'_ii + a'_jj) x_k) */
    const cjac_real cot_2theta = t * h / denominator;
    /* tan theta_k := sign(1, cot 2theta_k) / (|cot 2theta_k| + sqrt(1 + cot^2 2theta_k)) */
    const cjac_real tan_theta = (cot_2theta >= 0 ? 1 : -1)
                                / (fabs(cot_2theta) + hypot((cjac_real)1, cot_2theta));
    cjac_real c, s;
    hz_cos_sin(tan_theta, &c, &s);
    const cjac_real c_phi = c + xi * (s - eta * c);
    const cjac_real c_psi = c - xi * (s + eta * c);
    const cjac_real s_phi = s - xi * (c + eta * s);
    const cjac_real s_psi = s + xi * (c - eta * s);
    /* Z'_k := (1/t_k) [[cos phi_k, sin phi_k], [-sin psi_k, cos psi_k]] */
    z.z11 = c_phi / t;
    z.z12 = s_phi / t;
    z.z21 = -s_psi / t;
    z.z22 = c_psi / t;
%endif
    *cos_phi = c_phi;
    *cos_psi = c_psi;
    *t_out = t;
    return z;
}

/* Z'_k for a pair with a zero column of F (a'_ij = 0 and a'_ii or a'_jj zero)
 * that keeps it exactly zero (not in [NS]; for one zero column its formulas
 * give the same Z'_k in exact arithmetic but mix rounding into the zero
 * column, which then never becomes relatively orthogonal to its like; for
 * two, its exceptional formula rotates by 45 degrees however small |b| is):
 * f_j = 0 (or both): [[1/t, 0], [-conj(b)/t, 1]] (cos phi = 1, cos psi = t);
 * f_i = 0 alone: [[1, -b/t], [0, 1/t]] (cos phi = t, cos psi = 1);
 * t = sqrt(1 - |b|^2).  cljacobi.hz_reference._zero_column_transformation. */
inline hz_transform hz_zero_column_transform(const bool zero_first, const cjac_elem b,
                                             cjac_real *cos_phi, cjac_real *cos_psi,
                                             cjac_real *t_out)
{
    const cjac_real t = hz_sqrt_one_minus_square(cjac_elem_abs(b));
    hz_transform z;
    if (zero_first) {
        z.z11 = cjac_from_real(1);
        z.z21 = CJAC_ELEM_ZERO;
        z.z12 = cjac_scale(-1 / t, b);
        z.z22 = cjac_from_real(1 / t);
        *cos_phi = t;
        *cos_psi = 1;
    } else {
        z.z11 = cjac_from_real(1 / t);
        z.z21 = cjac_scale(-1 / t, cjac_conj(b));
        z.z12 = CJAC_ELEM_ZERO;
        z.z22 = cjac_from_real(1);
        *cos_phi = 1;
        *cos_psi = t;
    }
    *t_out = t;
    return z;
}

/* (Z^* A Z)_11 for the column (p, q) of Z: |p|^2 a_ii + 2 Re(conj(p) a_ij q) + |q|^2 a_jj. */
inline cjac_real hz_new_diagonal(const cjac_elem p, const cjac_elem q, const cjac_real a_ii,
                                 const cjac_elem a_ij, const cjac_real a_jj)
{
    const cjac_real cross = cjac_real_part(cjac_mul(cjac_conj(p), cjac_mul(a_ij, q)));
    return cjac_abs2_acc(p, 0) * a_ii + 2 * cross + cjac_abs2_acc(q, 0) * a_jj;
}

/* What one pivot pair gets from its A_k, B_k: Z_k = D_k Z'_k P_k (the identity,
 * or only P_k, for a relatively orthogonal pair), and whether it was a
 * transformation, a big one, a pair to touch at all, or one whose B'_k is not
 * positive definite (|b'_ij| >= 1: no real t_k). */
typedef struct { hz_transform z; int transformed, big, apply, not_definite; } hz_decision;

inline hz_decision hz_decide(const cjac_real a_ii, const cjac_elem a_ij, const cjac_real a_jj,
                             const cjac_real b_ii, const cjac_elem b_ij, const cjac_real b_jj,
                             const int n)
{
    hz_decision out;
    out.transformed = out.big = out.not_definite = 0;
%if prescaled:
    /* The standard version assumes diag(B) = I ([NS] Sect. 2). */
    const cjac_real d_i = 1, d_j = 1;
    const cjac_real ra_ii = a_ii, ra_jj = a_jj;
    const cjac_elem ra_ij = a_ij, rb_ij = b_ij;
%else:
    /* D_k = diag(1/sqrt(b_ii), 1/sqrt(b_jj)), A'_k = D_k A_k D_k, B'_k = D_k B_k D_k ([NS] Sect. 2.1). */
    const cjac_real d_i = 1 / sqrt(b_ii), d_j = 1 / sqrt(b_jj);
    const cjac_real ra_ii = a_ii / b_ii, ra_jj = a_jj / b_jj;
    const cjac_elem ra_ij = cjac_scale(d_i * d_j, a_ij), rb_ij = cjac_scale(d_i * d_j, b_ij);
%endif
    /* Relative orthogonality: |b'_ij| < eps sqrt(n), |a'_ij| < sqrt(a'_ii a'_jj) eps sqrt(n)
     * (before [NS] Sect. 2.1.1); both off-diagonals exactly zero count too. */
    const cjac_real tol = CJAC_EPS * sqrt((cjac_real)n);
    const cjac_real abs_a = cjac_elem_abs(ra_ij), abs_b = cjac_elem_abs(rb_ij);
    /* (a'_ij = 0 passes with |b'_ij| alone: a zero column of F is relatively
     * orthogonal once B'_k is diagonal to rounding; cljacobi.hz_reference.relatively_orthogonal.) */
    const bool orthogonal = (abs_a == 0 && abs_b == 0)
        || (abs_b < tol && (abs_a == 0 || abs_a < sqrt(fabs(ra_ii)) * sqrt(fabs(ra_jj)) * tol));
    hz_transform z;
    z.z11 = z.z22 = cjac_from_real(1);
    z.z12 = z.z21 = CJAC_ELEM_ZERO;
    cjac_real new_ii = ra_ii, new_jj = ra_jj;
    if (!orthogonal && abs_b >= 1) {
        out.not_definite = 1;
    } else if (!orthogonal) {
        bool exceptional = false;
        cjac_real cos_phi, cos_psi, t;
        if (abs_a == 0 && (ra_ii == 0 || ra_jj == 0))  /* a zero column of F (or two) */
            z = hz_zero_column_transform(ra_ii == 0 && ra_jj != 0, rb_ij, &cos_phi, &cos_psi, &t);
        else
            z = hz_pair_transform(ra_ii, ra_ij, ra_jj, rb_ij, &exceptional, &cos_phi, &cos_psi,
                                  &t);
%if criterion == "C1":
        /* C1: small when (cos phi_k)/t_k = (cos psi_k)/t_k = 1. */
        const bool small = !exceptional && cos_phi / t == 1 && cos_psi / t == 1;
%else:
        /* C2: small when cos phi_k = cos psi_k = 1. */
        const bool small = !exceptional && cos_phi == 1 && cos_psi == 1;
%endif
        new_ii = hz_new_diagonal(z.z11, z.z21, ra_ii, ra_ij, ra_jj);
        new_jj = hz_new_diagonal(z.z12, z.z22, ra_ii, ra_ij, ra_jj);
        /* Z_k := D_k Z'_k: the rows scaled. */
        z.z11 = cjac_scale(d_i, z.z11);
        z.z12 = cjac_scale(d_i, z.z12);
        z.z21 = cjac_scale(d_j, z.z21);
        z.z22 = cjac_scale(d_j, z.z22);
        out.transformed = 1;
        out.big = !small;
    }
    /* P_k: the larger diagonal element of Z_k^* A_k Z_k (the ratio ||f||^2 / ||g||^2
     * after the step) first ([NS] Sect. 2.1; from the 2x2 algebra, not from norms
     * recomputed over the columns as Sect. 3.5.3 does: it orders, nothing more). */
    const int swap = new_ii < new_jj;
    if (swap) {
        const cjac_elem p = z.z11, q = z.z21;
        z.z11 = z.z12; z.z21 = z.z22;
        z.z12 = p; z.z22 = q;
    }
    out.z = z;
    out.apply = out.transformed || swap;
    return out;
}

/* [y_i y_j] := [y_i y_j] Z over the rows first, first + step, ... < rows. */
inline void hz_update(__global cjac_elem *y_i, __global cjac_elem *y_j, const int first,
                      const int rows, const int step, const hz_transform z)
{
    for (int r = first; r < rows; r += step) {
        const cjac_elem a = y_i[r], b = y_j[r];
        y_i[r] = cjac_axpy(z.z11, a, cjac_mul(z.z21, b));
        y_j[r] = cjac_axpy(z.z12, a, cjac_mul(z.z22, b));
    }
}

/* Sums of products for A_k and B_k: a value is c + d, d the sum of the
 * rounding errors that the enhanced dot products of [NS] Appendix A keep
 * apart (real data: c = MULrd(a, b), d = FMArn(a, b, -c) >= 0 per product,
 * so the d add up without cancellation; complex squared norms: the paper's
 * simpler procedure, one sum s = (e + min(c_r, c_i)) + max(c_r, c_i),
 * e = d_r + d_i; complex dot products are ordinary, as in the paper).
 * Ordinary dot products leave d at 0.  cljacobi.hz_reference.enhanced_dot
 * and enhanced_squared_norm are the references. */
typedef struct { cjac_real c, d; } hz_sum;
typedef struct { cjac_elem c; cjac_real d; } hz_dot;
%if enhanced_dots:

/* c = a b rounded towards -infinity and *d = a b - c >= 0, exactly (the
 * rounding error of a product is representable): MULrd from the product
 * rounded to nearest and its error, as the paper's __dmul_rd would give. */
inline cjac_real hz_mul_down(const cjac_real a, const cjac_real b, cjac_real *d)
{
#pragma OPENCL FP_CONTRACT OFF
    const cjac_real nearest = a * b;
    const cjac_real below = fma(a, b, -nearest) < 0 ? nextafter(nearest, -(cjac_real)INFINITY) : nearest;
    *d = fma(a, b, -below);
    return below;
}
%endif

inline hz_sum hz_norm2_acc(const cjac_elem x, hz_sum s)
{
%if not enhanced_dots:
    s.c = cjac_abs2_acc(x, s.c);
%elif complex_:
    cjac_real d_r, d_i;
    const cjac_real c_r = hz_mul_down(x.x, x.x, &d_r), c_i = hz_mul_down(x.y, x.y, &d_i);
    const cjac_real e = d_r + d_i;
    s.c += c_r <= c_i ? (e + c_r) + c_i : (e + c_i) + c_r;
%else:
    cjac_real d;
    s.c += hz_mul_down(x, x, &d);
    s.d += d;
%endif
    return s;
}

inline hz_dot hz_dot_acc(const cjac_elem x, const cjac_elem y, hz_dot s)
{
%if enhanced_dots and not complex_:
    cjac_real d;
    s.c += hz_mul_down(x, y, &d);
    s.d += d;
%else:
    s.c = cjac_dot_acc(x, y, s.c);
%endif
    return s;
}

<% separate_errors = enhanced_dots and not complex_ %>
inline cjac_real hz_sum_value(const hz_sum s) { return ${"s.c + s.d" if separate_errors else "s.c"}; }
inline cjac_elem hz_dot_value(const hz_dot s) { return ${"s.c + s.d" if separate_errors else "s.c"}; }
</%def>