## Batched GSVD: the shortening of every pair of a stack before the batched
## implicit Hari-Zimmermann sweeps (batched_hz.cl.mako), and the GSVD read
## off their results, one work-group per pair (cljacobi.host.batched_gsvd).
##
## They do on the device what cljacobi.gsvd's one-pair path does on the host
## for A (m x n) and B (p x n, p >= n):
##
##   cjac_gsvd_shorten   [NS] Sect. 2: A and B scaled by the powers of two
##                       that bring their largest entries into [1/2, 1)
##                       (gsvd._unit_shift; inf or NaN flagged),
##                       A P_1 = Q_F R_F, for m < n R_F W = [0 T] (the RQ of
##                       R_F, W unitary), and (B P_1 W) P_2 = Q_G R_G by
##                       Householder QR with column pivoting (LAPACK xGEQP3,
##                       batched_qr.cl.mako's householder_qr), B's full column
##                       rank tested on R_G's diagonal, F = [R_F W; 0] P_2,
##                       G = R_G,
##                       and with prescaling (Z_0)_jj = 1/||g_j||; F, G, Z
##                       go to the sweeps' stacks (column c of pair b at
##                       b n^2 + c n).
##   cjac_gsvd_results   [NS] Sect. 2.4, after the sweeps: the column norms,
##                       sigma_j (the n - m smallest zero for m < n), C, S
##                       and Theta, C sorted descending (stably),
##                       Z := P_1 W P_2 Z Theta, U = Q_F F Sigma_F^-1
##                       (columns at rounding level completed to an
##                       orthonormal basis, as cljacobi._solve.complete),
##                       V = Q_G G Sigma_G^-1, and X = Z^-H by LU with
##                       partial pivoting (LAPACK xGETRF/xGETRS's solve).
##
## Neither kernel's arithmetic depends on the stack: a pair's results are
## the same bits in any stack.  Sizes are kernel arguments (one program
## serves every shape), n at most KMAX.
##
## Render parameters (cljacobi.host.batched_gsvd.BatchedGSVDSpec):
##   complex_      complex data (element cjac_real2 = (re, im))
##   prescaled     the shortening's (Z_0)_jj = 1/||g_j|| ([NS] Sect. 2)
##   compute_uv    whether cjac_gsvd_results forms U and V
##   compute_x     whether it forms X
##   math          "library" or "inline" (arith.prelude)
##   size_defines  WG (work-items per pair), KMAX, the status bits CJAC_G_*
##                 and the HZ record bit CJAC_HZ_NOT_DEFINITE
##   signatures    the kernels' parameter lists (BatchedGSVDSpec.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
<%namespace name="qr" file="batched_qr.cl.mako"/>
${arith.prelude("double", math)}
${arith.element("double", complex_, "interleaved", with_workgroup_sum=False, math=math)}

${size_defines}

${qr.qr_helpers(complex_)}

%if complex_:
/* |re| + |im|: LAPACK's CABS1, izamax's measure for the LU's pivots */
inline cjac_real cjac_cabs1(const cjac_elem x) { return fabs(x.x) + fabs(x.y); }
%else:
inline cjac_real cjac_cabs1(const cjac_elem x) { return fabs(x); }
%endif

/* The norm of the nonnegative values x[r0 * step ..] (a Frobenius norm from
 * column norms), scaled as cjac_column_norm */
${qr.scaled_norm("cjac_norm_of_norms", "__local const cjac_real *", "{}",
                 "fma(down * {0}, down * {0}, sum)")}

/* The largest |x_ij| of a rows x n matrix (NaN propagates, as numpy's max),
 * by the work-group into *largest. */
<%def name="matrix_peak(X, row_stride, col_stride, rows, out)">
    {
        cjac_real peak = 0;
        for (int e = lid; e < ${rows} * n; e += WG) {
            const cjac_real a = cjac_elem_abs(${X}[(e / n) * ${row_stride}
                                                   + (e % n) * ${col_stride}]);
            peak = (a > peak || isnan(a)) ? a : peak;
        }
        peaks[lid] = peak;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            for (int i = 1; i < WG; ++i)
                peak = (peaks[i] > peak || isnan(peaks[i])) ? peaks[i] : peak;
            ${out} = peak;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
</%def>

/* -e with 2^(e-1) <= x < 2^e (cljacobi.gsvd._unit_shift; 0 for x = 0) */
inline int cjac_unit_shift(const cjac_real x) { return x == 0 ? 0 : -(ilogb(x) + 1); }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_gsvd_shorten(${signatures["cjac_gsvd_shorten"].parameters})
{
    const int b = get_group_id(0), lid = get_local_id(0);
    if (b >= count)
        return;
    __local cjac_real norms[KMAX], f_norms[KMAX], peaks[WG];
    __local int pivots[KMAX];
    __local int pivot, reflect;
    __local cjac_real peak_a, peak_b;
    __local cjac_elem reflector_scale;
    __global const cjac_elem *A_b = A + a_offset + b * a_matrix_stride;
    __global const cjac_elem *B_b = B + b_offset + b * b_matrix_stride;
    __global cjac_elem *WA = work_a + (size_t)b * m * n, *WB = work_b + (size_t)b * p * n;
    __global cjac_elem *taus_a = tau_a + (size_t)b * n, *taus_b = tau_b + (size_t)b * n;

    /* 1. The shifts: 2^t_A A and 2^t_B B have their largest entries in [1/2, 1). */
${matrix_peak("A_b", "a_row_stride", "a_col_stride", "m", "peak_a")}
${matrix_peak("B_b", "b_row_stride", "b_col_stride", "p", "peak_b")}
    const int bad = (isfinite(peak_a) ? 0 : CJAC_G_NOT_FINITE_A)
                  | (isfinite(peak_b) ? 0 : CJAC_G_NOT_FINITE_B);
    const int keep = !bad;
    const int t_a = keep ? cjac_unit_shift(peak_a) : 0, t_b = keep ? cjac_unit_shift(peak_b) : 0;

    /* 2. A P_1 = Q_F R_F: W_A = 2^t_A A row-major, factored in place (a pair
     *    with inf or NaN goes on as zeros, without a branch around barriers). */
    for (int e = lid; e < m * n; e += WG)
        WA[e] = keep ? cjac_ldexp(A_b[(e / n) * a_row_stride + (e % n) * a_col_stride], t_a)
                     : CJAC_ELEM_ZERO;
    for (int c = lid; c < n; c += WG)
        pivots[c] = c;
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
${qr.householder_qr("WA", "n", "m", "n", "taus_a", complex_=complex_, pivoting=True, steps="min(m, n)")}

    /* 2b. m < n: R_F W = [0 T] with W unitary (scipy.linalg.rq's reduction,
     *     LAPACK xGERQ2's order: from the last row up), so that A of rank
     *     <= m gives F n - m exactly zero columns.  Row i's entries 0 .. c
     *     (c = n - m + i) are r; xLARFG on conj(r) (alpha its entry c) gives
     *     H^H conj(r)^T = beta e_c, so r H = beta e_c^T for H = I - tau v v^H,
     *     and the rows above take R := R H (s H = s - tau (s v) v^H).  v's
     *     entries 0 .. c - 1 stay in row i (v_c = 1), tau in rq_tau[i];
     *     W = H_(m-1) ... H_0. */
    __global cjac_elem *taus_w = rq_tau + (size_t)b * n;
    /* R_F (A's reflectors stay in W_A for Q_F) into W_R, row-major m x n */
    __global cjac_elem *WR = work_r + (size_t)b * n * n;
    __global const cjac_elem *R = m < n ? WR : WA;  /* R_F W */
    for (int e = lid; e < m * n && m < n; e += WG)
        WR[e] = e % n >= e / n ? WA[e] : CJAC_ELEM_ZERO;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int i = m - 1; i >= 0 && m < n; --i) {
        const int c = n - m + i;
        __global cjac_elem *row = WR + (size_t)i * n;
        if (lid == 0) {
            for (int col = 0; col < c; ++col)
                row[col] = cjac_conj(row[col]);
            cjac_real beta;
            cjac_elem scale;
            const cjac_elem tau = cjac_larfg(cjac_conj(row[c]), row, 1, c, &beta, &scale);
            taus_w[i] = tau;
            reflector_scale = scale;
            row[c] = cjac_from_real(beta);
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        const cjac_elem scale = reflector_scale, tau = taus_w[i];
        for (int col = lid; col < c; col += WG)
            row[col] = cjac_mul(scale, row[col]);
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (int s = lid; s < i; s += WG) {  /* rows above: R(s, :) H */
            __global cjac_elem *above = WR + (size_t)s * n;
            cjac_elem w = above[c];
            for (int col = 0; col < c; ++col)
                w = cjac_axpy(above[col], row[col], w);  /* s v */
            const cjac_elem f = cjac_mul(tau, w);
            above[c] = above[c] - f;
            for (int col = 0; col < c; ++col)
                above[col] = above[col] - cjac_mul(f, cjac_conj(row[col]));
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }

    /* 3. (B P_1 W) P_2 = Q_G R_G: W_B = 2^t_B B P_1 (W: its rows s := s H_(m-1)
     *    ... H_0), factored in place. */
    for (int e = lid; e < p * n; e += WG)
        WB[e] = keep ? cjac_ldexp(B_b[(e / n) * b_row_stride + pivots[e % n] * b_col_stride],
                                  t_b)
                     : CJAC_ELEM_ZERO;
    for (int c = lid; c < n; c += WG)
        pivots_a[(size_t)b * n + c] = pivots[c];
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    for (int s = lid; s < p && m < n; s += WG) {
        __global cjac_elem *row_b = WB + (size_t)s * n;
        for (int i = m - 1; i >= 0; --i) {
            const int c = n - m + i;
            __global const cjac_elem *v = WR + (size_t)i * n;
            cjac_elem w = row_b[c];
            for (int col = 0; col < c; ++col)
                w = cjac_axpy(row_b[col], v[col], w);
            const cjac_elem f = cjac_mul(taus_w[i], w);
            row_b[c] = row_b[c] - f;
            for (int col = 0; col < c; ++col)
                row_b[col] = row_b[col] - cjac_mul(f, cjac_conj(v[col]));
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int c = lid; c < n; c += WG)
        pivots[c] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
${qr.householder_qr("WB", "n", "p", "n", "taus_b", complex_=complex_, pivoting=True)}
    /* F = [R_F W; 0] P_2 (R_F W = R_F for m >= n): entry (i, col) of R_F W is
     * nonzero for i < min(m, n) and col >= i + max(n - m, 0) */
    const int lead = max(n - m, 0);
    for (int c = lid; c < n; c += WG) {
        pivots_b[(size_t)b * n + c] = pivots[c];
        /* ||g_c|| and ||f_c|| of G = R_G and F (f_c: R_F W's column pivots[c]) */
        norms[c] = cjac_column_norm(WB + c, n, 0, c + 1);
        f_norms[c] = cjac_column_norm(R + pivots[c], n, 0, min(m, pivots[c] - lead + 1));
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 4. B of full column rank: |r_nn| > n eps |r_11| on R_G's diagonal; the
     *    Frobenius norms of F and G for the extraction's rounding levels. */
    const cjac_real r_11 = cjac_elem_abs(WB[0]);
    const cjac_real r_nn = cjac_elem_abs(WB[(size_t)(n - 1) * n + n - 1]);
    const int refused = bad | (!(r_nn > n * CJAC_EPS * r_11) ? CJAC_G_B_RANK : 0);
    if (lid == 0) {
        exponents[2 * b] = t_a;
        exponents[2 * b + 1] = t_b;
        report[4 * b] = cjac_norm_of_norms(f_norms, 1, 0, n);
        report[4 * b + 1] = cjac_norm_of_norms(norms, 1, 0, n);
        report[4 * b + 2] = r_11;
        report[4 * b + 3] = r_nn;
        status[b] = refused;
        if (refused)
            atomic_or(summary, refused);
    }

    /* 5. The sweeps' F_0, G_0, Z_0 (column c at c n): with prescaling
     *    F_0 = F D, G_0 = G D, Z_0 = D, D = diag(1/||g_j||) ([NS] Sect. 2; the
     *    paper prints 1/sqrt(||g_j||), a slip).  A refused pair sweeps
     *    F = 0, G = Z = I, which converge at once. */
    const size_t slot = (size_t)b * n * n;
    for (int e = lid; e < n * n; e += WG) {
        const int c = e / n, i = e % n, source = pivots[c];
        cjac_elem f = i < m && source >= i + lead ? R[i * n + source] : CJAC_ELEM_ZERO;
        cjac_elem g = i <= c ? WB[i * n + c] : CJAC_ELEM_ZERO;
        cjac_elem z = cjac_from_real(i == c ? 1 : 0);
%if prescaled:
        f = f / norms[c];
        g = g / norms[c];
        z = z / norms[c];
%endif
        F[slot + e] = f;
        G[slot + e] = g;
        Z[slot + e] = z;
    }
    if (refused) {  /* the same entries as above, by the same work-items (a select in
                     * the loop above was miscompiled by PoCL 3's work-item loops) */
        for (int e = lid; e < n * n; e += WG) {
            const cjac_elem one = cjac_from_real(e / n == e % n ? 1 : 0);
            F[slot + e] = CJAC_ELEM_ZERO;
            G[slot + e] = one;
            Z[slot + e] = one;
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_gsvd_results(${signatures["cjac_gsvd_results"].parameters})
{
    __local cjac_real norm_f[KMAX], norm_g[KMAX], theta[KMAX], C[KMAX], S[KMAX];
    __local int order[KMAX], noise_f[KMAX], noise_g[KMAX], structural[KMAX], pivots[KMAX];
    __local int positions[KMAX];
    __local int range[WG];
    __local int reflect, noisy, noisy_g, kept, singular;
    __local cjac_elem reflector_scale;
    const int b = get_group_id(0), lid = get_local_id(0);
    if (b >= count)
        return;
    if (lid == 0)
        status[b] = 0;
    if (shorten_status[b] || hz_info[3 * b + 1] & CJAC_HZ_NOT_DEFINITE)
        return;  /* no result: the host raises for it */
    const size_t slot = (size_t)b * n * n;
    __global const cjac_elem *f = F + slot, *g = G + slot, *z = Z + slot;
    const int t_a = exponents[2 * b], t_b = exponents[2 * b + 1];
    const cjac_real frobenius_f = report[4 * b], frobenius_g = report[4 * b + 1];

    /* 1. [NS] Sect. 2.4: ||f_j||, ||g_j|| of 2^t_A A z_j and 2^t_B B z_j, so
     *    sigma_j = 2^(t_B - t_A) ||f_j|| / ||g_j||, C = 1/sqrt(1 + sigma^-2),
     *    S = 1/sqrt(1 + sigma^2), Theta_jj = C_j / ||A z_j|| or S_j / ||B z_j||
     *    from the larger of C_j and S_j.  A column no larger than the
     *    rounding of f_j = F_0 z_j (n eps ||F|| ||z_j||, LAPACK xGGSVD3's TOLA)
     *    has no direction of its own; in G that is B of less than full rank. */
    for (int j = lid; j < n; j += WG) {
        const cjac_real nf = cjac_column_norm(f + (size_t)j * n, 1, 0, n);
        const cjac_real ng = cjac_column_norm(g + (size_t)j * n, 1, 0, n);
        const cjac_real nz = cjac_column_norm(z + (size_t)j * n, 1, 0, n);
        norm_f[j] = nf;
        norm_g[j] = ng;
        C[j] = ldexp(nf / ng, t_b - t_a);  /* sigma_j for now */
        noise_f[j] = nf <= n * CJAC_EPS * frobenius_f * nz;
        noise_g[j] = ng <= n * CJAC_EPS * frobenius_g * nz;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* A with m < n rows has rank <= m: its n - m smallest sigma_j (stably) are
     * zero by structure, whatever rounding left there (structural[j]). */
    for (int j = lid; j < n; j += WG) {
        const cjac_real sigma_j = C[j];
        int below = 0;
        for (int l = 0; l < n; ++l)
            below += (C[l] < sigma_j || (C[l] == sigma_j && l < j)) ? 1 : 0;
        structural[j] = below < n - m;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = lid; j < n; j += WG) {
        const cjac_real sigma = structural[j] ? 0 : C[j];
        const cjac_real c = 1 / hypot((cjac_real)1, 1 / sigma), s = 1 / hypot((cjac_real)1, sigma);
        C[j] = c;
        S[j] = s;
        theta[j] = c >= s ? ldexp(c / norm_f[j], t_a) : ldexp(s / norm_g[j], t_b);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* 2. P_0: C descending, stably (a column's position: those before it). */
    for (int j = lid; j < n; j += WG) {
        int position = 0;
        for (int l = 0; l < n; ++l)
            position += (C[l] > C[j] || (C[l] == C[j] && l < j)) ? 1 : 0;
        order[position] = j;
    }
    if (lid == 0) {
        int f_count = 0, g_count = 0;
        for (int j = 0; j < n; ++j) {
            f_count += noise_f[j] && !structural[j];
            g_count += noise_g[j];
        }
        noisy = f_count;
        noisy_g = g_count;  /* B Z has columns at rounding level: B is not of full rank */
        noise_count[b] = g_count;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int out_of_range = 0;
    for (int q = lid; q < n; q += WG) {
        C_out[(size_t)b * n + q] = C[order[q]];
        S_out[(size_t)b * n + q] = S[order[q]];
        out_of_range |= !isfinite(C[order[q]]) || !isfinite(S[order[q]]);
    }
    /* 3. Z := P_1 W P_2 Z P_0 Theta (W = I for m >= n): row r of the sweeps' Z
     *    to row p_2[r], through W = H_(m-1) ... H_0 of the shortening's RQ
     *    (H_0 first; H y = y - tau v (v^H y)), and row i to row p_1[i]. */
    __global const int *p_1 = pivots_a + (size_t)b * n, *p_2 = pivots_b + (size_t)b * n;
    __global cjac_elem *Z_b = Z_out + slot;
    if (m >= n) {
        for (int e = lid; e < n * n; e += WG) {
            const int r = e / n, q = e % n, j = order[q];
            const cjac_elem x = cjac_scale(theta[j], z[(size_t)j * n + r]);
            Z_b[p_1[p_2[r]] * n + q] = x;
            out_of_range |= !isfinite(cjac_elem_peak(x));
        }
    } else {
        __global cjac_elem *Y = scratch + slot;  /* column q at Y[i * n + q] */
        __global const cjac_elem *WR = work_r + slot, *taus_w = rq_tau + (size_t)b * n;
        for (int q = lid; q < n; q += WG) {
            const int j = order[q];
            for (int r = 0; r < n; ++r)
                Y[p_2[r] * n + q] = cjac_scale(theta[j], z[(size_t)j * n + r]);
            for (int i = 0; i < m; ++i) {
                const int c = n - m + i;
                __global const cjac_elem *v = WR + (size_t)i * n;
                cjac_elem w = Y[c * n + q];
                for (int col = 0; col < c; ++col)
                    w = cjac_dot_acc(v[col], Y[col * n + q], w);  /* v^H y */
                const cjac_elem f = cjac_mul(taus_w[i], w);
                Y[c * n + q] = Y[c * n + q] - f;
                for (int col = 0; col < c; ++col)
                    Y[col * n + q] = Y[col * n + q] - cjac_mul(f, v[col]);
            }
            for (int r = 0; r < n; ++r) {
                const cjac_elem x = Y[r * n + q];
                Z_b[p_1[r] * n + q] = x;
                out_of_range |= !isfinite(cjac_elem_peak(x));
            }
        }
    }
%if compute_uv:

    /* 4. U's short columns F[:, j] / ||f_j|| in P_0's order (rows min(m, n)
     *    .. m zero; a structural zero's column zero), V's G[:, j] / ||g_j||;
     *    row-major in the outputs. */
    const int short_rows = min(m, n);
    __global cjac_elem *U_b = U_out + (size_t)b * m * n, *V_b = V_out + (size_t)b * p * n;
    for (int e = lid; e < m * n; e += WG) {
        const int i = e / n, q = e % n, j = order[q];
        U_b[e] = i < short_rows && !noise_f[j] && !structural[j]
                     ? f[(size_t)j * n + i] / norm_f[j] : CJAC_ELEM_ZERO;
    }
    for (int e = lid; e < p * n; e += WG) {
        const int i = e / n, q = e % n, j = order[q];
        V_b[e] = i < n ? g[(size_t)j * n + i] / norm_g[j] : CJAC_ELEM_ZERO;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    /* The columns at rounding level: columns r, r + 1, .. of the Householder
     * Q of the r others (cljacobi._solve.complete, in position order), in the
     * short space.  Without them r_qr = 0: no loop below runs (no branch
     * around barriers: PoCL 3 miscompiled the work-item loops after one). */
    __global cjac_elem *K = scratch + slot, *taus_k = scratch_tau + (size_t)b * n;
    if (lid == 0) {
        int r = 0, missing = 0;
        for (int q = 0; q < n; ++q) {
            if (structural[order[q]])
                continue;  /* stays zero */
            if (noise_f[order[q]])
                positions[n - 1 - missing++] = q;  /* the missing, from the end */
            else
                positions[r++] = q;  /* the kept columns' positions */
        }
        kept = r;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int r = kept, r_qr = noisy ? r : 0, completed = noisy;
    for (int e = lid; e < short_rows * r_qr; e += WG)
        K[(e / r) * n + e % r] = U_b[(e / r) * n + positions[e % r]];
    barrier(CLK_GLOBAL_MEM_FENCE);
${qr.householder_qr("K", "n", "short_rows", "r_qr", "taus_k", complex_=complex_, pivoting=False)}
    /* the t-th missing column (in position order) is Q e_(r + t) */
    for (int t = lid; t < completed; t += WG) {
        const int q = positions[n - 1 - t];
#define CJAC_Y(i) U_b[(i) * n + q]
#define CJAC_Y_SET(i, y) (CJAC_Y(i) = (y))
        for (int i = 0; i < short_rows; ++i)
            CJAC_Y(i) = cjac_from_real(i == r + t ? 1 : 0);
${qr.reflect_column("K", "n", "short_rows", "r", "taus_k", "CJAC_Y", "CJAC_Y_SET")}
#undef CJAC_Y_SET
#undef CJAC_Y
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    /* 5. U := Q_F U, V := Q_G V through the shortening's reflectors. */
    __global const cjac_elem *WA = work_a + (size_t)b * m * n, *WB = work_b + (size_t)b * p * n;
    __global const cjac_elem *taus_a = tau_a + (size_t)b * n, *taus_b = tau_b + (size_t)b * n;
    for (int q = lid; q < n; q += WG) {
#define CJAC_Y(i) U_b[(i) * n + q]
#define CJAC_Y_SET(i, y) (CJAC_Y(i) = (y))
${qr.reflect_column("WA", "n", "m", "short_rows", "taus_a", "CJAC_Y", "CJAC_Y_SET")}
#undef CJAC_Y
#define CJAC_Y(i) V_b[(i) * n + q]
${qr.reflect_column("WB", "n", "p", "n", "taus_b", "CJAC_Y", "CJAC_Y_SET")}
#undef CJAC_Y_SET
#undef CJAC_Y
    }
%endif
%if compute_x:

    /* 6. X = Z^-H: Z^H = P L U by Gaussian elimination with partial pivoting
     *    (LAPACK xGETRF: the first row of largest |re| + |im|), then
     *    X = U^-1 L^-1 P^T I by columns (xGETRS). */
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global cjac_elem *LU = scratch + slot;
    for (int e = lid; e < n * n; e += WG)
        LU[e] = cjac_conj(Z_b[(e % n) * n + e / n]);
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0)
        singular = 0;
    for (int j = 0; j < n; ++j) {
        if (lid == 0) {
            int best = j;
            for (int i = j + 1; i < n; ++i)
                best = cjac_cabs1(LU[i * n + j]) > cjac_cabs1(LU[best * n + j]) ? i : best;
            pivots[j] = best;
            singular |= cjac_cabs1(LU[best * n + j]) == 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int best = pivots[j];
        if (best != j)
            for (int c = lid; c < n; c += WG) {
                const cjac_elem swap = LU[j * n + c];
                LU[j * n + c] = LU[best * n + c];
                LU[best * n + c] = swap;
            }
        barrier(CLK_GLOBAL_MEM_FENCE);
        const cjac_elem diagonal = LU[j * n + j];
        if (cjac_cabs1(diagonal) != 0) {
            const cjac_elem inverse = cjac_reciprocal(diagonal);
            for (int i = j + 1 + lid; i < n; i += WG)
                LU[i * n + j] = cjac_mul(inverse, LU[i * n + j]);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        const int trailing = n - j - 1;
        for (int e = lid; e < trailing * trailing; e += WG) {
            const int i = j + 1 + e / trailing, c = j + 1 + e % trailing;
            LU[i * n + c] = cjac_axpy(-LU[i * n + j], LU[j * n + c], LU[i * n + c]);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    __global cjac_elem *X_b = X_out + slot;
    for (int c = lid; c < n; c += WG) {  /* column c of X: x = U^-1 L^-1 P^T e_c */
#define CJAC_X(i) X_b[(i) * n + c]
        for (int i = 0; i < n; ++i)
            CJAC_X(i) = cjac_from_real(i == c ? 1 : 0);
        for (int j = 0; j < n; ++j) {
            const int best = pivots[j];
            if (best != j) {
                const cjac_elem swap = CJAC_X(j);
                CJAC_X(j) = CJAC_X(best);
                CJAC_X(best) = swap;
            }
        }
        for (int i = 1; i < n; ++i) {
            cjac_elem x = CJAC_X(i);
            for (int l = 0; l < i; ++l)
                x = cjac_axpy(-LU[i * n + l], CJAC_X(l), x);
            CJAC_X(i) = x;
        }
        for (int i = n - 1; i >= 0; --i) {
            cjac_elem x = CJAC_X(i);
            for (int l = i + 1; l < n; ++l)
                x = cjac_axpy(-LU[i * n + l], CJAC_X(l), x);
            x = cjac_mul(cjac_reciprocal(LU[i * n + i]), x);
            CJAC_X(i) = x;
            out_of_range |= !isfinite(cjac_elem_peak(x));
        }
#undef CJAC_X
    }
%endif
    range[lid] = out_of_range;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        /* (a pair with noisy_g went on to here: no branch around barriers) */
        int flags = noisy_g ? CJAC_G_B_RANK_Z : 0;
        for (int i = 0; i < WG; ++i)
            flags |= range[i] ? CJAC_G_RESULT_RANGE : 0;
%if compute_x:
        flags |= singular ? CJAC_G_SINGULAR_Z : 0;
%endif
        if (flags) {
            status[b] = flags;
            atomic_or(summary, flags);
        }
    }
}
