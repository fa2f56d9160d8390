## Batched QR: the row-sorted, column-pivoted Householder QR of every matrix
## of a stack, one work-group per matrix, and the results read off it after
## the batched sweeps (cljacobi.host.batched_qr).
##
## cljacobi.svd and cljacobi.hsvd of a tall factor first shorten each matrix
## B (m_B x k, m_B >= k; svd's B is A, or A^* for a wide A) to a k x k
## triangular factor, as their one-matrix paths do (cljacobi.shortening):
##
##   cjac_batched_qr          the power-of-two shift of B from its column maxima
##                            (cljacobi.scaling.factor_shift; a matrix it refuses
##                            is flagged and left zero), B's rows sorted by
##                            decreasing max-norm, stably (Cox & Higham's
##                            row-wise analysis of Householder QR), then the
##                            Householder QR with column pivoting (LAPACK
##                            xGEQP3, the reflectors of xLARFG) in the matrix's
##                            slot of a global workspace; out: svd's X = R^*
##                            (J = I), or hsvd's R with its columns +1 first
##                            (and their signature).
##   cjac_batched_qr_results  after the sweeps (X = U_x diag(S) Vh_x): S shifted
##                            back (flagged where float64 cannot hold it), and
##                            the vectors through the reflectors:
##                            U_B = H_1 ... H_k [Y; 0] (Y = Vh_x^* for svd, U_R
##                            for hsvd; with full_matrices the trailing m_B - k
##                            columns H_1 ... H_k e_c complete the basis), its
##                            rows back in B's order, and the other side's rows
##                            (or columns) put back through the column pivots.
##
## Neither kernel's arithmetic depends on the stack: a matrix's results are
## the same bits in any stack.  Sizes are kernel arguments (one program
## serves every shape), k at most KMAX.
##
## Render parameters (cljacobi.host.batched_qr.BatchedQRSpec):
##   complex_      complex data (element cjac_real2 = (re, im))
##   problem       "svd" or "hsvd" (which factor cjac_batched_qr writes)
##   vectors       whether cjac_batched_qr_results forms the vectors
##   math          "library" or "inline" (arith.prelude)
##   size_defines  WG (work-items per matrix), KMAX, the status bits CJAC_B_*
##                 and CJAC_B_FATAL
##   signatures    the kernels' parameter lists (BatchedQRSpec.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude("double", math)}
${arith.element("double", complex_, "interleaved", with_workgroup_sum=False, math=math)}

${size_defines}

${qr_helpers(complex_)}

/* Element (i, c) of B: A's (i, c), or conj(A's (c, i)) for B = A^*. */
inline cjac_elem cjac_b_entry(__global const cjac_elem *A, const long row_stride,
                              const long col_stride, const int conjugate, const int i,
                              const int c)
{
    const cjac_elem x = A[i * row_stride + c * col_stride];
    return conjugate ? cjac_conj(x) : x;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_batched_qr(${signatures["cjac_batched_qr"].parameters})
{
    const int b = get_group_id(0), lid = get_local_id(0);
    if (b >= count)
        return;
    __local cjac_real norms[KMAX];
    __local int pivots[KMAX];
    __local int shift, refused, pivot, reflect;
    __local cjac_elem reflector_scale;
    __global const cjac_elem *A = M + offset + b * matrix_stride;
    /* B row-major: entry (i, c) at W[i * k + c], so that the work-items of
     * the column-wise loops below read adjacent addresses */
    __global cjac_elem *W = workspace + (size_t)b * rows * k;
    __global cjac_real *column_peaks = column_max + (size_t)b * k;

    /* 1. The column maxima |b_ic| (NaN propagates, as numpy's max) and the
     *    shift t of cljacobi.scaling.factor_shifts: the smallest and largest
     *    frexp exponents e of the used columns (svd: the nonzero ones) give
     *    t_lo = ceil((shift_low - 2 e_min) / 2), t_hi = floor((shift_high -
     *    2 e_max) / 2), t = floor((t_lo + t_hi) / 2); refused where a maximum
     *    is not finite, t_lo > t_hi, or (hsvd) a column is zero. */
    for (int c = lid; c < k; c += WG) {
        cjac_real peak = 0;
        for (int i = 0; i < rows; ++i) {
            const cjac_real a = cjac_elem_abs(cjac_b_entry(A, row_stride, col_stride,
                                                           conjugate, i, c));
            peak = (a > peak || isnan(a)) ? a : peak;
        }
        norms[c] = peak;
        column_peaks[c] = peak;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        int e_min = INT_MAX, e_max = INT_MIN, bad = 0;
        for (int c = 0; c < k; ++c) {
            const cjac_real peak = norms[c];
            bad |= !isfinite(peak) ? CJAC_B_NOT_FINITE : 0;
%if problem == "hsvd":
            bad |= peak == 0 ? CJAC_B_ZERO_COLUMN : 0;
%endif
            if (peak != 0 && isfinite(peak)) {
                const int e = ilogb(peak) + 1;  /* numpy.frexp's exponent */
                e_min = min(e_min, e);
                e_max = max(e_max, e);
            }
        }
        int t = 0;
        if (e_min <= e_max) {
            const int t_lo = -cjac_floor_half(2 * e_min - shift_low);
            const int t_hi = cjac_floor_half(shift_high - 2 * e_max);
            bad |= t_lo > t_hi ? CJAC_B_FACTOR_RANGE : 0;
            t = cjac_floor_half(t_lo + t_hi);
        }
        shift = bad ? 0 : t;
        refused = bad;
        exponents[b] = shift;
        status[b] = bad;
        if (bad)
            atomic_or(summary, bad);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global cjac_elem *F = factors + (size_t)b * k * k;
    /* A refused matrix goes on as a zero B, without a branch around the
     * barriers: a zero factor, which the sweeps pass over. */
    const int t = shift, keep = !refused;

    /* 2. The rows of 2^t B by decreasing max_c |b_ic|, stably (a row's rank:
     *    the rows before it in that order), into W; row_order[rank] = the row. */
    __global cjac_real *keys = row_keys + (size_t)b * rows;
    for (int i = lid; i < rows; i += WG) {
        cjac_real key = 0;
        for (int c = 0; c < k && keep; ++c)
            key = fmax(key, cjac_elem_abs(cjac_ldexp(cjac_b_entry(A, row_stride, col_stride,
                                                                  conjugate, i, c), t)));
        keys[i] = key;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int i = lid; i < rows; i += WG) {
        const cjac_real key = keys[i];
        int rank = 0;
        for (int l = 0; l < rows; ++l) {
            const cjac_real other = keys[l];
            rank += (other > key || (other == key && l < i)) ? 1 : 0;
        }
        for (int c = 0; c < k; ++c)
            W[rank * k + c] = keep ? cjac_ldexp(cjac_b_entry(A, row_stride, col_stride,
                                                                conjugate, i, c), t)
                                      : CJAC_ELEM_ZERO;
        row_order[(size_t)b * rows + rank] = i;
    }
    for (int c = lid; c < k; c += WG)
        pivots[c] = c;
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);

    /* 3. Householder QR with column pivoting, as LAPACK xGEQP3 (householder_qr) */
    __global cjac_elem *taus = tau + (size_t)b * k;
${householder_qr("W", "k", "rows", "k", "taus", complex_=complex_, pivoting=True)}

    /* 4. The factor (R: W's upper triangle, R[i][c] = W[i * k + c]). */
%if problem == "svd":
    /* X = R^*, k x k row-major: X[i][c] = conj(R[c][i]) for c <= i */
    for (int e = lid; e < k * k; e += WG) {
        const int i = e / k, c = e % k;
        F[e] = c <= i ? cjac_conj(W[c * k + i]) : CJAC_ELEM_ZERO;
    }
    for (int c = lid; c < k; c += WG)
        column_order[b * k + c] = pivots[c];
%else:
    /* R's columns with signature +1 first, each sign in pivot order (the
     * stable sort of cljacobi.shortening.shorten), and their signs */
    __local int sources[KMAX];  /* the R column each factor column is */
    if (lid == 0) {
        int position = 0;
        for (int sign = 1; sign >= -1; sign -= 2)
            for (int c = 0; c < k; ++c)
                if (signs[b * sign_stride + pivots[c]] == sign)
                    sources[position++] = c;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < k * k; e += WG) {
        const int i = e / k, c = e % k, source = sources[c];
        F[e] = i <= source ? W[i * k + source] : CJAC_ELEM_ZERO;
    }
    for (int c = lid; c < k; c += WG) {
        const int column = pivots[sources[c]];
        column_order[b * k + c] = column;
        factor_signs[b * k + c] = signs[b * sign_stride + column];
    }
%endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_batched_qr_results(${signatures["cjac_batched_qr_results"].parameters})
{
    const int b = get_group_id(0), lid = get_local_id(0);
    if (b >= count || (qr_status[b] | sweep_status[b]) & CJAC_B_FATAL)
        return;  /* no result: the host raises for it */
    /* S back at its size: exact in the normal range; lost where float64
     * cannot hold it (cljacobi.scaling.unshift) */
    const int t = exponents[b];
    for (int i = lid; i < k; i += WG) {
        const cjac_real s = S[b * k + i], back = ldexp(s, -t);
        S_out[b * k + i] = back;
        if (s != 0 && (!isfinite(back) || back == 0))
            atomic_or(summary, status[b] = CJAC_B_VALUE_RANGE);
    }
%if vectors:
    __global const cjac_elem *W = workspace + (size_t)b * rows * k;
    __global const cjac_elem *taus = tau + (size_t)b * k;
    __global const int *order = row_order + (size_t)b * rows;
    __global const int *pivots = column_order + (size_t)b * k;
    __global const cjac_elem *Y = first + (size_t)b * k * k;
    __global cjac_elem *out = U_out + b * u_matrix_stride;

    /* Column c of U_B = H_1 ... H_k y, y = (Y's column c; 0) or e_c (c >= k),
     * kept in place in the output: sorted row i is B's row order[i], at
     * out[order[i] * u_row_step + c * u_col_step] (conjugated for svd's
     * Vh = U_B^*). */
#define CJAC_Y(i) out[order[i] * u_row_step + c * u_col_step]
#define CJAC_Y_GET(i) (conjugate_u ? cjac_conj(CJAC_Y(i)) : CJAC_Y(i))
#define CJAC_Y_SET(i, y) (CJAC_Y(i) = conjugate_u ? cjac_conj(y) : (y))
    for (int c = lid; c < u_columns; c += WG) {
        for (int i = 0; i < rows; ++i) {
            cjac_elem y = CJAC_ELEM_ZERO;
            if (c < k && i < k)
                y = Y[i * first_row_step + c * first_col_step];
            else if (c == i)
                y = cjac_from_real(1);
            if (conjugate_first)
                y = cjac_conj(y);
            CJAC_Y_SET(i, y);
        }
${reflect_column("W", "k", "rows", "min(k, rows)", "taus", "CJAC_Y_GET", "CJAC_Y_SET")}
    }
#undef CJAC_Y_SET
#undef CJAC_Y_GET
#undef CJAC_Y

    /* The other side: entry (i, c) of the k x k `second` to
     * other[pivots[i] * other_pivot_step + c * other_step] (conjugated where
     * asked), i.e. the rows (or columns) put back through the column pivots. */
    __global const cjac_elem *X = second + (size_t)b * k * k;
    __global cjac_elem *other = other_out + (size_t)b * k * k;
    for (int e = lid; e < k * k; e += WG) {
        const int i = e / k, c = e % k;
        const cjac_elem x = X[i * second_row_step + c * second_col_step];
        other[pivots[i] * other_pivot_step + c * other_step] = conjugate_other ? cjac_conj(x) : x;
    }
%endif
}

## ---------------------------------------------------------------------------
## The shared pieces (also rendered by batched_gsvd.cl.mako).

## The QR's scalar helpers: powers of two, peaks, LAPACK's scaled reciprocal
## and column norm.
<%def name="qr_helpers(complex_)">
/* LAPACK's SAFMIN for xLARFG: dlamch('S') / dlamch('E') = 2^-1022 / 2^-53. */
#define CJAC_SAFMIN 0x1p-969
#define CJAC_RSAFMN 0x1p969

%if complex_:
inline cjac_elem cjac_ldexp(const cjac_elem x, const int e)
{ return (cjac_real2)(ldexp(x.x, e), ldexp(x.y, e)); }
/* max(|re|, |im|): a scale for a column, not its modulus */
inline cjac_real cjac_elem_peak(const cjac_elem x) { return fmax(fabs(x.x), fabs(x.y)); }
inline cjac_real cjac_imag_part(const cjac_elem x) { return x.y; }
/* 1 / a for a != 0, scaled against overflow (LAPACK xLADIV's purpose) */
inline cjac_elem cjac_reciprocal(const cjac_elem a)
{
    const cjac_real scale = 1 / fmax(fabs(a.x), fabs(a.y));
    const cjac_real2 d = scale * a;
    return (scale / fma(d.x, d.x, d.y * d.y)) * (cjac_real2)(d.x, -d.y);
}
%else:
inline cjac_elem cjac_ldexp(const cjac_elem x, const int e) { return ldexp(x, e); }
inline cjac_real cjac_elem_peak(const cjac_elem x) { return fabs(x); }
inline cjac_real cjac_imag_part(const cjac_elem x) { return 0; }
inline cjac_elem cjac_reciprocal(const cjac_elem a) { return 1 / a; }
%endif

/* floor(x / 2) for any int (C's division truncates) */
inline int cjac_floor_half(const int x) { return (x - (x < 0 && (x & 1))) / 2; }

/* ||col[r0 * step .. rows * step : step]||: the squares summed after scaling by the power of two
 * of the largest part (exact), so that they neither overflow nor underflow
 * where it matters (the purpose of LAPACK xNRM2's scaling). */
${scaled_norm("cjac_column_norm", "__global const cjac_elem *", "cjac_elem_peak({})",
              "cjac_abs2_acc(cjac_scale(down, {}), sum)")}

/* LAPACK xLARFG on (alpha; x), x = x[0], x[step], .. (count entries): H^H (alpha; x)
 * = (beta; 0) with H = I - tau v v^H, v = (1; x / (alpha - beta)).  Returns
 * tau (0 for H = I), beta in *beta and 1 / (alpha - beta) in *scale, which
 * the caller multiplies x by (x is rescaled here where beta is below
 * SAFMIN, and beta then scaled back, as xLARFG does). */
inline cjac_elem cjac_larfg(cjac_elem alpha, __global cjac_elem *x, const int step,
                            const int count, cjac_real *beta_out, cjac_elem *scale)
{
    cjac_real x_norm = cjac_column_norm(x, step, 0, count);
    if (x_norm == 0 && cjac_imag_part(alpha) == 0) {
        *beta_out = cjac_real_part(alpha);
        *scale = CJAC_ELEM_ZERO;
        return CJAC_ELEM_ZERO;  /* H = I */
    }
    cjac_real beta = -copysign(cjac_hypot(cjac_elem_abs(alpha), x_norm), cjac_real_part(alpha));
    int rescaled = 0;
    while (fabs(beta) < CJAC_SAFMIN && rescaled < 20) {  /* beta may be inaccurate */
        ++rescaled;
        for (int i = 0; i < count; ++i)
            x[i * step] = cjac_scale(CJAC_RSAFMN, x[i * step]);
        beta *= CJAC_RSAFMN;
        alpha = cjac_scale(CJAC_RSAFMN, alpha);
    }
    if (rescaled) {
        x_norm = cjac_column_norm(x, step, 0, count);
        beta = -copysign(cjac_hypot(cjac_elem_abs(alpha), x_norm), cjac_real_part(alpha));
    }
%if complex_:
    const cjac_elem tau = (cjac_real2)((beta - alpha.x) / beta, -alpha.y / beta);
%else:
    const cjac_elem tau = (beta - alpha) / beta;
%endif
    *scale = cjac_reciprocal(alpha - cjac_from_real(beta));
    for (int r = 0; r < rescaled; ++r)
        beta *= CJAC_SAFMIN;
    *beta_out = beta;
    return tau;
}
</%def>

## A norm function `name`(x, step, r0, rows) of the entries x[i * step],
## r0 <= i < rows, of the C type `pointer`: the largest `peak` (a format
## string of an entry), its power of two 2^e, then the sum of squares
## `add_square` of the entries scaled by down = 2^-e (exact), times 2^e.
<%def name="scaled_norm(name, pointer, peak, add_square)">
inline cjac_real ${name}(${pointer}x, const int step, const int r0, const int rows)
{
    cjac_real largest = 0;
    for (int i = r0; i < rows; ++i)
        largest = fmax(largest, ${peak.format("x[i * step]")});
    if (largest == 0)
        return 0;
    const int e = clamp(ilogb(largest), -1000, 1000);
    const cjac_real down = ldexp((cjac_real)1, -e);
    cjac_real sum = 0;
    for (int i = r0; i < rows; ++i)
        sum = ${add_square.format("x[i * step]")};
    return sqrt(sum) * ldexp((cjac_real)1, e);
}
</%def>

## The Householder QR of the rows x k matrix `W` (row-major, entry (i, c) at
## W[i * ld + c]) in place, by the work-group, in `steps` steps (k by
## default; min(rows, k) where rows < k): R in its upper triangle (trapezoid),
## the reflectors' v below it, their tau in `taus`.  With
## `pivoting`, LAPACK xGEQP3's column pivoting: at step j the column of
## largest norm over rows j.. (the first of equal ones; norms recomputed, not
## downdated) is swapped in, and the local `pivots` (initialized by the
## caller) follow the swaps.  The caller declares the locals norms[KMAX],
## pivots[KMAX], pivot, reflect and reflector_scale, and ends its writes to
## W with a global barrier.
<%def name="householder_qr(W, ld, rows, k, taus, complex_, pivoting, steps=None)">
    for (int j = 0; j < ${steps or k}; ++j) {
%if pivoting:
        for (int c = j + lid; c < ${k}; c += WG)
            norms[c] = cjac_column_norm(${W} + c, ${ld}, j, ${rows});
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            int best = j;
            for (int c = j + 1; c < ${k}; ++c)
                best = norms[c] > norms[best] ? c : best;
            pivot = best;
            const int swap = pivots[j];
            pivots[j] = pivots[best];
            pivots[best] = swap;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int column_j = pivot;  /* the column swapped in */
        for (int i = lid; i < ${rows} && column_j != j; i += WG) {
            const cjac_elem swap = ${W}[i * ${ld} + j];
            ${W}[i * ${ld} + j] = ${W}[i * ${ld} + column_j];
            ${W}[i * ${ld} + column_j] = swap;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
%endif
        __global cjac_elem *v = ${W} + j;  /* column j: v[i * ld] */
        if (lid == 0) {  /* xLARFG on (alpha; x) = v[j], v[j + 1 ..] */
            cjac_real beta;
            cjac_elem scale;
            const cjac_elem tau = cjac_larfg(v[j * ${ld}], v + (j + 1) * ${ld}, ${ld},
                                             ${rows} - j - 1, &beta, &scale);
            ${taus}[j] = tau;
            reflect = cjac_real_part(tau) != 0 || cjac_imag_part(tau) != 0;
            reflector_scale = scale;
            v[j * ${ld}] = cjac_from_real(beta);
        }
        /* Every work-item reaches every barrier (no early continue: PoCL's
         * work-item loops mishandle one that skips barriers). */
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        const int reflecting = reflect;
        const cjac_elem scale = reflector_scale;
        for (int i = j + 1 + lid; i < ${rows} && reflecting; i += WG)
            v[i * ${ld}] = cjac_mul(scale, v[i * ${ld}]);
        barrier(CLK_GLOBAL_MEM_FENCE);
        /* H_j^H c = c - conj(tau) v (v^H c), v = (1; v[j + 1 ..]) */
        const cjac_elem minus_tau_conj = -cjac_conj(${taus}[j]);
        for (int c = j + 1 + lid; c < ${k} && reflecting; c += WG) {
            __global cjac_elem *col = ${W} + c;
            cjac_elem w = col[j * ${ld}];
            for (int i = j + 1; i < ${rows}; ++i)
                w = cjac_dot_acc(v[i * ${ld}], col[i * ${ld}], w);
            const cjac_elem f = cjac_mul(minus_tau_conj, w);
            col[j * ${ld}] = col[j * ${ld}] + f;
            for (int i = j + 1; i < ${rows}; ++i)
                col[i * ${ld}] = cjac_axpy(f, v[i * ${ld}], col[i * ${ld}]);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
</%def>

## y := H_1 ... H_steps y for the reflectors householder_qr left in `W`
## (row-major, leading dimension `ld`, `rows` rows) and `taus`; y is read
## and written through the macros GET(i) and SET(i, value), by one work-item.
<%def name="reflect_column(W, ld, rows, steps, taus, GET, SET)">
        for (int j = ${steps} - 1; j >= 0; --j) {
            const cjac_elem tau_j = ${taus}[j];
            if (cjac_real_part(tau_j) == 0 && cjac_imag_part(tau_j) == 0)
                continue;
            __global const cjac_elem *v = ${W} + j;  /* v[i * ld] */
            /* H_j y = y - tau v (v^H y), v = (1; v[j + 1 ..]) */
            cjac_elem w = ${GET}(j);
            for (int i = j + 1; i < ${rows}; ++i)
                w = cjac_dot_acc(v[i * ${ld}], ${GET}(i), w);
            const cjac_elem f = -cjac_mul(tau_j, w);
            ${SET}(j, ${GET}(j) + f);
            for (int i = j + 1; i < ${rows}; ++i)
                ${SET}(i, cjac_axpy(f, v[i * ${ld}], ${GET}(i)));
        }
</%def>
