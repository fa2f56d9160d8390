## Bunch-Parlett symmetric (Hermitian) indefinite factorization with complete
## pivoting on the device, producing M = G J G^* (Bunch & Parlett 1971;
## Slapnicar 1992, the J-factorization; the host version is
## cljacobi.factorization.j_factorize).
##
## The working matrix A (n x n, column-major, leading dimension lda) holds the
## full Hermitian Schur complement, both triangles kept exactly conjugate (the
## diagonal exactly real).  Complex A, W and G are interleaved (re, im) pairs,
## the element operations those of arith.element, so that the kernel bodies
## are the same text for real and complex matrices.  One pivot step is two
## launches:
##   cjac_bp_pivot    one work-group: fixed-order reduction of the partial
##                    maxima and the pivot decision; the symmetric
##                    interchanges k <-> p (and k+1 <-> q for a 2x2 pivot) of
##                    the rows, the columns and the permutation; the s = 1 or
##                    2 new columns of G (and W).  Its phases are separated by
##                    work-group barriers with global-memory fences, which
##                    make the entries one work-item wrote visible to the
##                    others of the (single) work-group.
##   cjac_bp_update   2-D grid: rank-s update of the trailing matrix, fused
##                    with the search for the next pivot (one partial-maximum
##                    record per work-group on or below the diagonal)
## The host starts with one search-only cjac_bp_update (s = 0).  The step
## state lives in device memory: every kernel reads it, cjac_bp_pivot writes
## it, so the host enqueues many steps without waiting.  A flag other than
## CJAC_BP_RUNNING makes every kernel a no-op until the host clears it:
## CJAC_BP_SMALL when the remaining entries fell below the normwise rank
## tolerance for the first time (no pivot is taken, CJAC_BP_PENDING is set;
## the host turns the entrywise rank test on and enqueues one search-only
## cjac_bp_update, after which cjac_bp_pivot decides again), CJAC_BP_DONE at
## the end: k = n, or nothing but rounding noise is left.
##
## The entrywise rank test (the host version's _BlockLower.start_testing):
## with CJAC_BP_TESTING set in the state, cjac_bp_update sets every updated
## entry within its rounding-error bound,
## |s_ij| <= noise_level (|m_ij| + ||g_i|| ||g_j||), to zero, so complete
## pivoting never picks noise and the elimination stops at a largest modulus
## of 0.  |m_ij| of the entries now at (i, j) is kept in `scale` (filled by
## the first launch from A and interchanged with A by cjac_bp_pivot), the
## row norms ||g_i|| of the factor so far in `row_norms` (by position,
## updated by cjac_bp_pivot with every new column), so the test costs one
## more read per entry and no transfer.
##
## Render parameters (cljacobi.host.factorization.BunchParlettSpec):
##   real_ctype        "double"
##   complex_          whether M is complex Hermitian (else real symmetric)
##   layout            "interleaved" (the only complex storage here)
##   tile              side of the square work-group of cjac_bp_update
##   work_group_size   work-items of the one work-group of cjac_bp_pivot
##                     (a power of two)
##   alpha             the Bunch-Parlett constant (1 + sqrt(17)) / 8
##   state_defines     #define lines of the step state's words and flags
##   record_struct     the typedef of cjac_bp_max, from the host's record dtype
##   signatures        the kernels' arguments (cljacobi.host.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
%if layout != "interleaved":
<% raise ValueError(f"bunch_parlett stores complex data interleaved, not {layout!r}") %>
%endif
${arith.prelude(real_ctype)}
## (arith.element builds its work-group sum on cjac_workgroup_sum)
${arith.workgroup_sum(work_group_size)}
${arith.element(real_ctype, complex_, layout)}

#define TILE ${tile}
#define WG ${work_group_size}
/* Bunch & Parlett (1971): alpha = (1 + sqrt(17)) / 8 balances the growth of
 * 1x1 and 2x2 pivots. */
#define CJAC_BP_ALPHA ${repr(alpha)}

/* The step state: state[K] = k, the first position not yet eliminated; s, p, q
 * the pivot last chosen (p <= q; p == q for s = 1): taken at k - s, or, with
 * state[PENDING] set, chosen for position k and not taken; the flag; whether
 * the entrywise rank test is on.  (s = 0 at the start: nothing taken yet.) */
${state_defines}

/* Partial maxima of one work-group: the largest |a_ij| of the trailing matrix
 * (lower triangle i >= j) and where, the largest |a_ii| and where.  Ties go to
 * the smaller (column, row) so the search is deterministic.  For complex a_ij
 * the modulus is hypot(re, im), the quantity the host compares (numpy's abs). */
${record_struct}

inline bool cjac_bp_better(const cjac_real v, const int col, const int row,
                           const cjac_real best, const int best_col, const int best_row)
{
    return v > best || (v == best && (col < best_col || (col == best_col && row < best_row)));
}

/* Schur update A[i][j] -= sum_t sign_t W_t[i] conj(W_t[j]) for
 * k0 <= j <= i < n, i.e. A -= W J_s W^* (Bunch & Parlett 1971, the host's
 * eliminate), computed on the lower triangle and mirrored as its conjugate
 * onto the upper one, which the interchanges read; the diagonal is kept
 * exactly real.  Then the partial maxima of the updated entries.
 *
 * State: k0 = state[K] is the first position not yet eliminated, the pivot
 * just taken is (k0 - s, s) with s = state[S] and signs[k0-s..k0-1]; s = 0
 * (the first launch) only searches (and makes A Hermitian from its lower
 * triangle, the imaginary parts of the diagonal dropped, and fills `scale`
 * with |a_ij|); with state[PENDING] set no pivot was taken and the launch
 * only searches.  With state[TESTING] set the entries within their
 * rounding-error bound are set to zero.
 *
 * Work-group (gx, by) covers the columns k0 + by*TILE.. and the `strip` row
 * tiles bx = gx*strip .. gx*strip + strip - 1 (rows k0 + bx*TILE..), tiles
 * above the diagonal (bx < by) skipped; a work-group with no tile on or below
 * the diagonal exits at once and writes no record.  The record of (gx, by) is
 * partial[by * row_groups + gx].  The grid covers at least the n - k0
 * trailing rows and columns. */
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void cjac_bp_update(${signatures["cjac_bp_update"].parameters})
{
    if (state[CJAC_BP_FLAG] != CJAC_BP_RUNNING)
        return;  /* uniform over the launch */
    const int gx = get_group_id(0), by = get_group_id(1);
    if ((gx + 1) * strip <= by)
        return;  /* uniform over the work-group: all its tiles lie above the diagonal */
    const int k0 = state[CJAC_BP_K];
    const bool pending = state[CJAC_BP_PENDING] != 0;
    const int s = pending ? 0 : state[CJAC_BP_S];  /* rank of this update */
    const bool first = !pending && state[CJAC_BP_S] == 0;  /* the first launch */
    const bool testing = state[CJAC_BP_TESTING] != 0;
    const int k = k0 - s;
    __local cjac_real best_off[TILE * TILE], best_diag[TILE * TILE];
    __local int best_row[TILE * TILE], best_col[TILE * TILE], best_d[TILE * TILE];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int lid = ly * TILE + lx;
    const int col = k0 + by * TILE + ly;

    /* The tile's new entries, conjugated, for the transposed (coalesced)
     * store into the upper triangle; the odd stride spreads a warp's
     * column-wise stores over the banks. */
    __local cjac_elem mirror[TILE * (TILE + 1)];
    cjac_real off = -1, diag = -1;
    int off_row = n, off_col = n, diag_index = n;
    for (int u = 0; u < strip; ++u) {
        const int bx = gx * strip + u;
        const int row = k0 + bx * TILE + lx;
        if (bx >= by && row < n && col < n && row >= col) {
            cjac_elem a = A[(size_t)col * lda + row];
            if (s >= 1)
                a = cjac_axpy(cjac_scale(-signs[k], W[row]), cjac_conj(W[col]), a);
            if (s == 2)
                a = cjac_axpy(cjac_scale(-signs[k + 1], W[ldw + row]), cjac_conj(W[ldw + col]), a);
            if (row == col)
                a = cjac_from_real(cjac_real_part(a));
            cjac_real v = cjac_elem_abs(a);
            if (first) {
                scale[(size_t)col * lda + row] = v;
                scale[(size_t)row * lda + col] = v;
            }
            if (testing && v <= noise_level * fma(row_norms[row], row_norms[col],
                                                  scale[(size_t)col * lda + row])) {
                a = cjac_from_real(0);  /* rounding noise */
                v = 0;
            }
            A[(size_t)col * lda + row] = a;
            mirror[lx * (TILE + 1) + ly] = cjac_conj(a);
            if (cjac_bp_better(v, col, row, off, off_col, off_row)) {
                off = v;
                off_row = row;
                off_col = col;
            }
            if (row == col && cjac_bp_better(v, row, row, diag, diag_index, diag_index)) {
                diag = v;
                diag_index = row;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* Keep A Hermitian for the swaps: entry (row', col') of the lower
         * triangle, computed by work-item (ly, lx), goes to A[row' * lda +
         * col'], consecutive work-items writing consecutive addresses. */
        {
            const int lower_row = k0 + bx * TILE + ly, lower_col = k0 + by * TILE + lx;
            if (bx >= by && lower_row < n && lower_col < n && lower_row >= lower_col)
                A[(size_t)lower_row * lda + lower_col] = mirror[ly * (TILE + 1) + lx];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    best_off[lid] = off;
    best_row[lid] = off_row;
    best_col[lid] = off_col;
    best_diag[lid] = diag;
    best_d[lid] = diag_index;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = TILE * TILE / 2; width > 0; width /= 2) {
        if (lid < width) {
            const int o = lid + width;
            if (cjac_bp_better(best_off[o], best_col[o], best_row[o],
                               best_off[lid], best_col[lid], best_row[lid])) {
                best_off[lid] = best_off[o];
                best_row[lid] = best_row[o];
                best_col[lid] = best_col[o];
            }
            if (cjac_bp_better(best_diag[o], best_d[o], best_d[o],
                               best_diag[lid], best_d[lid], best_d[lid])) {
                best_diag[lid] = best_diag[o];
                best_d[lid] = best_d[o];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        cjac_bp_max out;
        out.off_value = best_off[0];
        out.off_row = best_row[0];
        out.off_col = best_col[0];
        out.diag_value = best_diag[0];
        out.diag_index = best_d[0];
        out.pad = 0;
        partial[by * row_groups + gx] = out;
    }
}

/* One pivot step at k = state[K], the first position not yet eliminated, in
 * one work-group of WG work-items.
 *
 * 1. Fixed-order reduction of the partial maxima of the last cjac_bp_update
 *    (those of the work-groups on or below the diagonal that cover the n - k
 *    trailing rows) and the Bunch-Parlett choice (Bunch & Parlett 1971):
 *    mu0 = max |a_ij|, mu1 = max |a_ii|; a 1x1 pivot at the largest diagonal
 *    entry if mu1 >= alpha mu0, else a 2x2 pivot at the off-diagonal
 *    position (q, p) of mu0, p < q.  The maximum is unique under the order of
 *    cjac_bp_better, so the choice does not depend on how the records are
 *    grouped.  The rank test: !(mu0 > rank_tol) (normwise) stops for the
 *    host to turn the entrywise test on (CJAC_BP_SMALL) the first time, and
 *    with CJAC_BP_TESTING on, where the update launches drop noise, at
 *    mu0 = 0 (nothing but noise left).
 * 2. The symmetric interchanges k <-> p and, for a 2x2 pivot, k+1 <-> q:
 *    rows i and p of A exchanged in columns k..n-1 (the second interchange
 *    also moves the entries of column k), then columns i and p in rows
 *    k..n-1, and the permutation.  With both triangles stored, P A P^T is a
 *    plain exchange of rows and then of columns, also for complex A: the
 *    crossing entry a_ip moves to (p, i) and a_pi = conj(a_ip) to (i, p), so A
 *    stays Hermitian.
 * 3. The s new columns of G from the pivot columns X = A[k:, k:k+s]
 *    (Slapnicar 1992; same formulas as the host version, _pivot_1x1 and
 *    _pivot_2x2):
 *      1x1, d = a_kk (real):  w = X / (sign(d) sqrt|d|), pivot entry sqrt|d|;
 *      2x2, E = X[0:2] = [[a, b], [conj(b), c]] = Q diag(lam) Q^* by a Jacobi
 *           rotation (_eigh_2x2): the real formulas on [[a, |b|], [|b|, c]],
 *           kappa = (c - a) / (2|b|), t = sign(kappa) / (|kappa| + sqrt(1 + kappa^2)),
 *           cs = 1 / sqrt(1 + t^2), sn = t cs, lam = (a - t|b|, c + t|b|), and
 *           the phase e^{-i phi} = conj(b / |b|) (sign(b) for real b) in the
 *           second row of Q = [[cs, sn], [-sn e^{-i phi}, cs e^{-i phi}]];
 *           W = X Q diag(sign(lam) / sqrt|lam|), pivot rows Q |lam|^{1/2}.
 *    W (positions k..n-1) goes to the work array for the update, and to G at
 *    the original row index perm[i]; sign(lam) to signs[k..k+s-1].
 * The phases read entries of A and perm that other work-items wrote in the
 * phase before; the barriers between them carry global-memory fences, which
 * order those accesses within the work-group.  Every barrier is reached by
 * all work-items: the branches around the phases are uniform (on values the
 * work-group shares through local memory).
 *
 * 4. The row norms ||g_i|| of the factor (by position) with the new columns:
 *    row_norms[i] = hypot(row_norms[i], |w_i|) for i > k + s - 1, after the
 *    interchanges moved them along with the rows.
 * The state is rewritten: (s, p, q) the pivot; the flag CJAC_BP_DONE at
 * k = n or when the rank test stops, CJAC_BP_SMALL when !(mu0 > rank_tol)
 * before the entrywise test is on (nothing more is done, CJAC_BP_PENDING
 * set), else CJAC_BP_RUNNING and K = k + s. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_bp_pivot(${signatures["cjac_bp_pivot"].parameters})
{
    if (state[CJAC_BP_FLAG] != CJAC_BP_RUNNING)
        return;  /* uniform over the work-group */
    __local cjac_real best_off[WG], best_diag[WG];
    __local int best_row[WG], best_col[WG], best_d[WG];
    __local int step[4];  /* s, p, q, flag, for all work-items */
    const int lid = get_local_id(0);
    const int k = state[CJAC_BP_K];
    const int testing = state[CJAC_BP_TESTING];

    /* 1. Decision.  Record (gx, by) of the last update: column tiles
     * by < tiles, row groups gx < groups of `strip` tiles; the loop reads them
     * by columns, contiguously. */
    const int tiles = k >= n ? 0 : (n - k + TILE - 1) / TILE;
    const int groups = (tiles + strip - 1) / strip;
    cjac_real off = -1, diag = -1;
    int off_row = 0, off_col = 0, diag_index = 0;
    for (int x = lid; x < tiles * groups; x += WG) {
        const int by = x / groups, gx = x - by * groups;
        if ((gx + 1) * strip <= by)
            continue;  /* above the diagonal: no record */
        const cjac_bp_max m = partial[by * row_groups + gx];
        if (cjac_bp_better(m.off_value, m.off_col, m.off_row, off, off_col, off_row)) {
            off = m.off_value;
            off_row = m.off_row;
            off_col = m.off_col;
        }
        if (cjac_bp_better(m.diag_value, m.diag_index, m.diag_index,
                           diag, diag_index, diag_index)) {
            diag = m.diag_value;
            diag_index = m.diag_index;
        }
    }
    best_off[lid] = off;
    best_row[lid] = off_row;
    best_col[lid] = off_col;
    best_diag[lid] = diag;
    best_d[lid] = diag_index;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width /= 2) {
        if (lid < width) {
            const int o = lid + width;
            if (cjac_bp_better(best_off[o], best_col[o], best_row[o],
                               best_off[lid], best_col[lid], best_row[lid])) {
                best_off[lid] = best_off[o];
                best_row[lid] = best_row[o];
                best_col[lid] = best_col[o];
            }
            if (cjac_bp_better(best_diag[o], best_d[o], best_d[o],
                               best_diag[lid], best_d[lid], best_d[lid])) {
                best_diag[lid] = best_diag[o];
                best_d[lid] = best_d[o];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        int s, p, q, flag = CJAC_BP_RUNNING;
        const cjac_real mu0 = best_off[0], mu1 = best_diag[0];
        if (mu1 >= CJAC_BP_ALPHA * mu0) {
            s = 1;
            p = q = best_d[0];
        } else {
            s = 2;
            p = min(best_row[0], best_col[0]);
            q = max(best_row[0], best_col[0]);
        }
        /* !(mu0 > tol) also stops on an empty trailing matrix (mu0 = -1). */
        if (k >= n)
            flag = CJAC_BP_DONE;
        else if (!(mu0 > rank_tol))
            flag = !testing ? CJAC_BP_SMALL : mu0 > 0 ? CJAC_BP_RUNNING : CJAC_BP_DONE;
        step[0] = s;
        step[1] = p;
        step[2] = q;
        step[3] = flag;
        /* The other work-items read the state only above. */
        state[CJAC_BP_S] = s;
        state[CJAC_BP_P] = p;
        state[CJAC_BP_Q] = q;
        state[CJAC_BP_FLAG] = flag;
        state[CJAC_BP_PENDING] = flag == CJAC_BP_SMALL;
        if (flag == CJAC_BP_RUNNING)
            state[CJAC_BP_K] = k + s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int s = step[0];
    const bool run = step[3] == CJAC_BP_RUNNING;

    /* 2. Interchanges (uniform branches; the barriers outside them). */
%for which in (0, 1):
    {
        const int i = k + ${which}, j = step[${which + 1}];
        const bool swap = run && ${which} < s && i != j;
        if (swap)
            for (int col = k + lid; col < n; col += WG) {
                const cjac_elem x = A[(size_t)col * lda + i];
                A[(size_t)col * lda + i] = A[(size_t)col * lda + j];
                A[(size_t)col * lda + j] = x;
                const cjac_real y = scale[(size_t)col * lda + i];
                scale[(size_t)col * lda + i] = scale[(size_t)col * lda + j];
                scale[(size_t)col * lda + j] = y;
            }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (swap) {
            for (int row = k + lid; row < n; row += WG) {
                const cjac_elem x = A[(size_t)i * lda + row];
                A[(size_t)i * lda + row] = A[(size_t)j * lda + row];
                A[(size_t)j * lda + row] = x;
                const cjac_real y = scale[(size_t)i * lda + row];
                scale[(size_t)i * lda + row] = scale[(size_t)j * lda + row];
                scale[(size_t)j * lda + row] = y;
            }
            if (lid == 0) {
                const int t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
                const cjac_real r = row_norms[i];
                row_norms[i] = row_norms[j];
                row_norms[j] = r;
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }
%endfor

    /* 3. The new columns of G (no barrier below). */
    if (!run)
        return;
    if (s == 1) {
        const cjac_real d = cjac_real_part(A[(size_t)k * lda + k]);
        const cjac_real sign = d > 0 ? 1 : -1;
        const cjac_real root = sqrt(fabs(d));
        for (int i = k + lid; i < n; i += WG) {
            const cjac_elem w = i == k ? cjac_from_real(root)
                                       : A[(size_t)k * lda + i] / (sign * root);
            W[i] = w;
            G[(size_t)k * ldg + perm[i]] = w;
            if (i > k)
                row_norms[i] = hypot(row_norms[i], cjac_elem_abs(w));
        }
        if (lid == 0)
            signs[k] = sign;
        return;
    }
    const cjac_real a = cjac_real_part(A[(size_t)k * lda + k]);
    const cjac_real c = cjac_real_part(A[(size_t)(k + 1) * lda + k + 1]);
    const cjac_elem b = cjac_conj(A[(size_t)k * lda + k + 1]);  /* e_01 = conj(e_10) */
    const cjac_real beta = cjac_elem_abs(b);
    const cjac_real kappa = (c - a) / (2 * beta);
    const cjac_real t = copysign(1 / (fabs(kappa) + sqrt(fma(kappa, kappa, 1))), kappa);
    const cjac_real cs = 1 / sqrt(fma(t, t, 1));
    const cjac_real sn = t * cs;
    const cjac_elem phase = cjac_conj(b / beta);  /* beta = mu0 > 0 for a 2x2 pivot */
    /* Q = [[cs, sn], [-sn phase, cs phase]], lam = (a - t beta, c + t beta) */
    const cjac_real q00 = cs, q01 = sn;
    const cjac_elem q10 = cjac_scale(-sn, phase), q11 = cjac_scale(cs, phase);
    const cjac_real lam0 = a - t * beta, lam1 = c + t * beta;
    const cjac_real sign0 = lam0 > 0 ? 1 : -1, sign1 = lam1 > 0 ? 1 : -1;
    const cjac_real root0 = sqrt(fabs(lam0)), root1 = sqrt(fabs(lam1));
    for (int i = k + lid; i < n; i += WG) {
        cjac_elem w0, w1;
        if (i == k) {
            w0 = cjac_from_real(q00 * root0);
            w1 = cjac_from_real(q01 * root1);
        } else if (i == k + 1) {
            w0 = cjac_scale(root0, q10);
            w1 = cjac_scale(root1, q11);
        } else {
            const cjac_elem x0 = A[(size_t)k * lda + i], x1 = A[(size_t)(k + 1) * lda + i];
            w0 = cjac_scale(sign0 / root0, cjac_axpy(x0, cjac_from_real(q00), cjac_mul(x1, q10)));
            w1 = cjac_scale(sign1 / root1, cjac_axpy(x0, cjac_from_real(q01), cjac_mul(x1, q11)));
        }
        W[i] = w0;
        W[ldw + i] = w1;
        G[(size_t)k * ldg + perm[i]] = w0;
        G[(size_t)(k + 1) * ldg + perm[i]] = w1;
        if (i > k + 1)
            row_norms[i] = hypot(hypot(row_norms[i], cjac_elem_abs(w0)), cjac_elem_abs(w1));
    }
    if (lid == 0) {
        signs[k] = sign0;
        signs[k + 1] = sign1;
    }
}
