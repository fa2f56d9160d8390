## Bunch-Parlett symmetric (Hermitian) indefinite factorization with complete
## pivoting on the device, producing M = G J G^* (Bunch & Parlett 1971;
## Slapnicar 1992, the J-factorization; the host version is
## cljacobi.factorization.j_factorize).
##
## One kernel, cjac_bp_step, and one launch per pivot step.  The working
## matrix (n x n, column-major, leading dimension lda) is the Hermitian Schur
## complement, of which only the lower triangle (positions i >= j) is stored
## and read; complex entries are interleaved (re, im) pairs, the element
## operations those of arith.element, so that the kernel is the same text for
## real and complex matrices.  It lives in two buffers, A0 and A1: a launch
## reads the current one (state[CUR]) and writes the trailing lower triangle
## of the next into the other.  A launch
##   1. applies the pivot decided by the launch before: every work-group
##      computes the rows of the pivot's new columns of G that it needs from
##      the pivot columns, reading the working matrix through the pivot's
##      symmetric interchanges (entry (i, j) of P A P^T is entry
##      (src(i), src(j)) of A, or the conjugate of its mirror image above the
##      diagonal: no row or column is moved in memory); the rank-s update of
##      the trailing matrix and the search for the next pivot follow, one
##      partial-maximum record per work-group on or below the diagonal;
##   2. its last work-group to finish (a ticket counter in the state, the
##      work-groups' stores published by a global fence before they take
##      their ticket) reduces the records in a fixed order and decides the
##      next pivot, interchanging the permutation and the row norms.
## The kernel is rendered for every kind of launch (`launch` = "any"), or
## for one: "first" (the first launch, which conjugates a conjugated upload
## and fills `scale`), "plain" (the launches before the entrywise rank test)
## or "testing" (with it), the host choosing the kernel per launch; the
## same arithmetic either way, with the branches of the other kinds
## compiled out.
## The first launch (state[S] = 0) only searches.  The step state lives in
## device memory, so the host enqueues many steps without waiting.  A flag
## other than CJAC_BP_RUNNING makes every launch a no-op until the host
## clears it: CJAC_BP_SMALL when the remaining entries fell below the
## normwise rank tolerance for the first time (no pivot is taken,
## CJAC_BP_PENDING is set; the host turns the entrywise rank test on and the
## next launch only searches), CJAC_BP_DONE at the end: k = n, or nothing but
## rounding noise is left.  The pivots are those of interchanging the rows
## and columns in memory (the same entries, the same arithmetic).
##
## The entrywise rank test (the host version's _BlockLower.start_testing):
## with CJAC_BP_TESTING set in the state, an updated entry within its
## rounding-error bound, |s_ij| <= noise_level (|m_ij| + ||g_i|| ||g_j||), is
## set to zero, so complete pivoting never picks noise and the elimination
## stops at a largest modulus of 0.  |m_ij| is kept in `scale` by the
## original row and column (both triangles, filled by the first launch) and
## read through the permutation; the row norms ||g_i|| of the factor so far
## by position in row_norms0 and row_norms1 (read from the one that goes with
## the current buffer, grown by the new columns into the other).
##
## Render parameters (cljacobi.host.factorization.BunchParlettSpec):
##   real_ctype        "double"
##   complex_          whether M is complex Hermitian (else real symmetric)
##   layout            "interleaved" (the only complex storage here)
##   tile              side of the square work-group
##   strip             row tiles per work-group (one record each)
##   ahead             row tiles whose entries a work-item loads at once
##   global_fence      "opencl": mem_fence(CLK_GLOBAL_MEM_FENCE); "ptx":
##                     NVIDIA's membar.gl through inline PTX (a fence for the
##                     whole device, what the ticket needs)
##   alpha             the Bunch-Parlett constant (1 + sqrt(17)) / 8
##   state_defines     #define lines of the step state's words and flags
##   record_struct     the typedef of cjac_bp_max, from the host's record dtype
##   signatures        the kernel's arguments (cljacobi.host.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
%if layout != "interleaved":
<% raise ValueError(f"bunch_parlett stores complex data interleaved, not {layout!r}") %>
%endif
${arith.prelude(real_ctype)}
${arith.element(real_ctype, complex_, layout, with_workgroup_sum=False)}

#define TILE ${tile}
#define WG (TILE * TILE)
#define STRIP ${strip}
#define CJAC_BP_AHEAD ${ahead}
/* Bunch & Parlett (1971): alpha = (1 + sqrt(17)) / 8 balances the growth of
 * 1x1 and 2x2 pivots. */
#define CJAC_BP_ALPHA ${repr(alpha)}
${arith.global_fence("CJAC_BP", global_fence)}

/* The step state: state[K] = k, the first position not yet eliminated; s, p, q
 * the pivot last chosen (p <= q; p == q for s = 1): decided for k - s and not
 * yet applied to the working matrix, or, with state[PENDING] set, chosen for
 * position k and not taken; the flag; whether the entrywise rank test is on;
 * which buffer holds the working matrix; the ticket counter.  (s = 0 at the
 * start: nothing decided yet.) */
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

/* Maxima before any entry: every modulus beats -1. */
inline cjac_bp_max cjac_bp_none(const int index)
{
    cjac_bp_max none;
    none.off_value = none.diag_value = -1;
    none.off_row = none.off_col = none.diag_index = index;
    none.pad = 0;
    return none;
}

/* Entry (row, col) of modulus v offered to the maxima *best. */
inline void cjac_bp_offer(cjac_bp_max *best, const cjac_real v, const int row, const int col)
{
    if (cjac_bp_better(v, col, row, best->off_value, best->off_col, best->off_row)) {
        best->off_value = v;
        best->off_row = row;
        best->off_col = col;
    }
    if (row == col && cjac_bp_better(v, row, row, best->diag_value, best->diag_index,
                                     best->diag_index)) {
        best->diag_value = v;
        best->diag_index = row;
    }
}

/* The maxima of a group of entries, m, merged into *best. */
inline void cjac_bp_merge(cjac_bp_max *best, const cjac_bp_max m)
{
    if (cjac_bp_better(m.off_value, m.off_col, m.off_row,
                       best->off_value, best->off_col, best->off_row)) {
        best->off_value = m.off_value;
        best->off_row = m.off_row;
        best->off_col = m.off_col;
    }
    if (cjac_bp_better(m.diag_value, m.diag_index, m.diag_index,
                       best->diag_value, best->diag_index, best->diag_index)) {
        best->diag_value = m.diag_value;
        best->diag_index = m.diag_index;
    }
}

/* The position whose entries move to position i under the symmetric
 * interchanges of a pivot at k: k <-> p, then (s = 2) k+1 <-> q, as rows and
 * columns exchanged in that order would move them; none for s = 0. */
inline int cjac_bp_source(const int i, const int s, const int k, const int p, const int q)
{
    if (s == 0)
        return i;
    int j = i;
    if (s == 2)
        j = j == k + 1 ? q : j == q ? k + 1 : j;
    return j == k ? p : j == p ? k : j;
}

/* Entry (i, j) of the Hermitian matrix whose lower triangle is stored in A:
 * the stored entry, or the conjugate of its mirror image (the diagonal is
 * real). */
inline cjac_elem cjac_bp_entry(const __global cjac_elem *A, const int lda, const int i, const int j)
{
    return i >= j ? A[(size_t)j * lda + i] : cjac_conj(A[(size_t)i * lda + j]);
}


/* The work-group's maxima kept in local memory field by field (a struct
 * per work-item would put a warp's accesses of one field 8 banks apart). */
typedef struct {
    __local cjac_real *off_value, *diag_value;
    __local int *off_row, *off_col, *diag_index;
} cjac_bp_scratch;

inline void cjac_bp_store(const cjac_bp_scratch at, const int i, const cjac_bp_max m)
{
    at.off_value[i] = m.off_value;
    at.off_row[i] = m.off_row;
    at.off_col[i] = m.off_col;
    at.diag_value[i] = m.diag_value;
    at.diag_index[i] = m.diag_index;
}

inline cjac_bp_max cjac_bp_load(const cjac_bp_scratch at, const int i)
{
    cjac_bp_max m;
    m.off_value = at.off_value[i];
    m.off_row = at.off_row[i];
    m.off_col = at.off_col[i];
    m.diag_value = at.diag_value[i];
    m.diag_index = at.diag_index[i];
    m.pad = 0;
    return m;
}

/* The maxima of the work-group: every work-item's `mine` merged in a fixed
 * pairwise order, returned to every work-item. */
inline cjac_bp_max cjac_bp_reduce(const cjac_bp_scratch scratch, const cjac_bp_max mine,
                                  const int lid)
{
    cjac_bp_store(scratch, lid, mine);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width /= 2) {
        if (lid < width) {
            cjac_bp_max m = cjac_bp_load(scratch, lid);
            cjac_bp_merge(&m, cjac_bp_load(scratch, lid + width));
            cjac_bp_store(scratch, lid, m);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return cjac_bp_load(scratch, 0);
}

/* The pivot taken at k, s = 1 or 2 columns X = A'[k:, k:k+s] of the
 * interchanged matrix A' (Slapnicar 1992; the host version's _pivot_1x1 and
 * _pivot_2x2):
 *   1x1, d = a_kk (real):  w = X / (sign(d) sqrt|d|), pivot entry sqrt|d|;
 *   2x2, E = X[0:2] = [[a, b], [conj(b), c]] = Q diag(lam) Q^* by a Jacobi
 *        rotation (_eigh_2x2): the real formulas on [[a, |b|], [|b|, c]],
 *        kappa = (c - a) / (2|b|), t = sign(kappa) / (|kappa| + sqrt(1 + kappa^2)),
 *        cs = 1 / sqrt(1 + t^2), sn = t cs, lam = (a - t|b|, c + t|b|), and
 *        the phase e^{-i phi} = conj(b / |b|) (sign(b) for real b) in the
 *        second row of Q = [[cs, sn], [-sn e^{-i phi}, cs e^{-i phi}]];
 *        W = X Q diag(sign(lam) / sqrt|lam|), pivot rows Q |lam|^{1/2}.
 * Every work-group computes these few numbers from the same three entries,
 * by the same instructions, so they agree to the bit. */
typedef struct {
    cjac_real sign0, sign1, root0, root1, q00, q01;
    cjac_elem q10, q11;
} cjac_bp_pivot;

inline cjac_bp_pivot cjac_bp_pivot_of(const __global cjac_elem *A, const int lda, const int s,
                                      const int p, const int q)
{
    cjac_bp_pivot pv;
    if (s == 1) {
        const cjac_real d = cjac_real_part(cjac_bp_entry(A, lda, p, p));
        pv.sign0 = d > 0 ? 1 : -1;
        pv.root0 = sqrt(fabs(d));
        return pv;
    }
    const cjac_real a = cjac_real_part(cjac_bp_entry(A, lda, p, p));
    const cjac_real c = cjac_real_part(cjac_bp_entry(A, lda, q, q));
    /* e_01 = conj(e_10), e_10 = entry (q, p) of the stored lower triangle (q > p) */
    const cjac_elem b = cjac_conj(cjac_bp_entry(A, lda, q, p));
    const cjac_real beta = cjac_elem_abs(b);
    const cjac_real kappa = (c - a) / (2 * beta);
    const cjac_real t = copysign(1 / (fabs(kappa) + sqrt(fma(kappa, kappa, 1))), kappa);
    const cjac_real cs = 1 / sqrt(fma(t, t, 1));
    const cjac_real sn = t * cs;
    const cjac_elem phase = cjac_conj(b / beta);  /* beta = mu0 > 0 for a 2x2 pivot */
    /* Q = [[cs, sn], [-sn phase, cs phase]], lam = (a - t beta, c + t beta) */
    pv.q00 = cs;
    pv.q01 = sn;
    pv.q10 = cjac_scale(-sn, phase);
    pv.q11 = cjac_scale(cs, phase);
    const cjac_real lam0 = a - t * beta, lam1 = c + t * beta;
    pv.sign0 = lam0 > 0 ? 1 : -1;
    pv.sign1 = lam1 > 0 ? 1 : -1;
    pv.root0 = sqrt(fabs(lam0));
    pv.root1 = sqrt(fabs(lam1));
    return pv;
}

/* Row i >= k of the new columns W of G. */
inline void cjac_bp_new_row(const __global cjac_elem *A, const int lda, const cjac_bp_pivot *pv,
                            const int s, const int k, const int p, const int q, const int i,
                            cjac_elem *w0, cjac_elem *w1)
{
    if (s == 1) {
        *w0 = i == k ? cjac_from_real(pv->root0)
                     : cjac_bp_entry(A, lda, cjac_bp_source(i, 1, k, p, p), p)
                       / (pv->sign0 * pv->root0);
        *w1 = cjac_from_real(0);
    } else if (i == k) {
        *w0 = cjac_from_real(pv->q00 * pv->root0);
        *w1 = cjac_from_real(pv->q01 * pv->root1);
    } else if (i == k + 1) {
        *w0 = cjac_scale(pv->root0, pv->q10);
        *w1 = cjac_scale(pv->root1, pv->q11);
    } else {
        const int source = cjac_bp_source(i, 2, k, p, q);
        const cjac_elem x0 = cjac_bp_entry(A, lda, source, p);
        const cjac_elem x1 = cjac_bp_entry(A, lda, source, q);
        *w0 = cjac_scale(pv->sign0 / pv->root0,
                         cjac_axpy(x0, cjac_from_real(pv->q00), cjac_mul(x1, pv->q10)));
        *w1 = cjac_scale(pv->sign1 / pv->root1,
                         cjac_axpy(x0, cjac_from_real(pv->q01), cjac_mul(x1, pv->q11)));
    }
}

/* ||g_i|| grown by the new columns' entries (none for s = 0). */
inline cjac_real cjac_bp_new_norm(const cjac_real norm, const int s, const cjac_elem w0,
                                  const cjac_elem w1)
{
    return s == 0 ? norm : s == 1 ? hypot(norm, cjac_elem_abs(w0))
                                  : hypot(hypot(norm, cjac_elem_abs(w0)), cjac_elem_abs(w1));
}

/* One pivot step: applying the pivot decided by the launch before, the
 * update and search, then (the last work-group) the next pivot decision.
 *
 * The pivot.  With k0 = state[K] the first position not yet eliminated and
 * (s, p, q) = state[S, P, Q] the pivot decided at k = k0 - s: every
 * work-group computes the rows of W it needs (its rows and its columns) from
 * the pivot columns of the interchanged matrix; the work-groups of the
 * first column tile (by = 0) store their rows of W into G at the original
 * row index perm[i] and the grown row norms, and work-group (0, 0) the pivot
 * rows k..k0-1 and the signs sign(d) or sign(lam) in signs[k..k0-1].
 *
 * Update.  A'[i][j] = (P A P^T)[i][j] - sum_t sign_t W_t[i] conj(W_t[j]) for
 * k0 <= j <= i < n, i.e. A' = P A P^T - W J_s W^* (Bunch & Parlett 1971, the
 * host's eliminate), the diagonal kept exactly real; then the partial maxima
 * of the new entries.  s = 0 (the first launch) only searches (the entries
 * conjugated where `conjugated` is set, the imaginary parts of the diagonal
 * dropped; `scale` filled with |a_ij|); with
 * state[PENDING] set no pivot was taken and the launch only searches.  With
 * state[TESTING] set the entries within their rounding-error bound are set
 * to zero.  Work-group (gx, by) covers the columns k0 + by*TILE.. and the
 * STRIP row tiles bx = gx*STRIP .. gx*STRIP + STRIP - 1 (rows
 * k0 + bx*TILE..), tiles above the diagonal (bx < by) skipped; the record of
 * a work-group with a tile on or below the diagonal goes to
 * partial[by * row_groups + gx].  The grid covers at least the n - k0
 * trailing rows and columns, and at least work-group (0, 0).
 *
 * Decision (the last work-group; Bunch & Parlett 1971): mu0 = max |a_ij|,
 * mu1 = max |a_ii| of the new trailing matrix; a 1x1 pivot at the largest
 * diagonal entry if mu1 >= alpha mu0, else a 2x2 pivot at the off-diagonal
 * position (q, p) of mu0, p < q.  The maximum is unique under the order of
 * cjac_bp_better, so the choice does not depend on how the records are
 * grouped.  The rank test: !(mu0 > tol) (normwise) stops for the host to
 * turn the entrywise test on (CJAC_BP_SMALL) the first time, and with
 * CJAC_BP_TESTING on, where the updates drop noise, at mu0 = 0 (nothing but
 * noise left).  tol = tolerance[0], or, where the host left it negative,
 * rank_noise mu0 of the first search (n eps max |m_ij|, the host's default),
 * stored there.  The permutation and the row norms are interchanged; the
 * state is rewritten: (s, p, q) the pivot; the flag CJAC_BP_DONE at k0 = n
 * or when the rank test stops, CJAC_BP_SMALL when !(mu0 > tol) before the
 * entrywise test is on (CJAC_BP_PENDING set), else CJAC_BP_RUNNING and
 * K = k0 + s; the other buffers current; the ticket back to 0.  A pivot
 * that ends at n is applied (its columns of G stored) by one more launch,
 * which finds k0 = n and ends. */
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void cjac_bp_step(${signatures["cjac_bp_step"].parameters})
{
    if (state[CJAC_BP_FLAG] != CJAC_BP_RUNNING)
        return;  /* uniform over the launch (the last work-group changes it) */
    const int gx = get_group_id(0), by = get_group_id(1);
    const int k0 = state[CJAC_BP_K];
    const bool pending = state[CJAC_BP_PENDING] != 0;
    const int s = pending ? 0 : state[CJAC_BP_S];  /* rank of this update */
%if launch == "any":
    const bool first = !pending && state[CJAC_BP_S] == 0;  /* the first launch */
    const bool testing = state[CJAC_BP_TESTING] != 0;
%else:
    /* one kind of launch, which the host runs only where the state is so */
    const bool first = ${"true" if launch == "first" else "false"};
    const bool testing = ${"true" if launch == "testing" else "false"};
%endif
    const int k = k0 - s, p = state[CJAC_BP_P], q = state[CJAC_BP_Q];
    const bool odd = state[CJAC_BP_CUR] != 0;
    const __global cjac_elem *A = odd ? A1 : A0;
    __global cjac_elem *next = odd ? A0 : A1;
    const __global cjac_real *norms = odd ? row_norms1 : row_norms0;
    __global cjac_real *next_norms = odd ? row_norms0 : row_norms1;
    __local cjac_real best_off[WG], best_diag[WG];
    __local int best_row[WG], best_col[WG], best_d[WG];
    const cjac_bp_scratch scratch = {best_off, best_diag, best_row, best_col, best_d};
    __local cjac_elem w_rows[2][STRIP * TILE], w_cols[2][TILE];
    __local cjac_real norm_rows[STRIP * TILE], norm_cols[TILE];
    __local int last;
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int lid = ly * TILE + lx;
    cjac_bp_pivot pv;
    if (s > 0)
        pv = cjac_bp_pivot_of(A, lda, s, p, q);

    if (s > 0 && gx == 0 && by == 0) {  /* the pivot rows of G, and the signs */
        if (lid < s) {
            cjac_elem w0, w1;
            cjac_bp_new_row(A, lda, &pv, s, k, p, q, k + lid, &w0, &w1);
            G[(size_t)k * ldg + perm[k + lid]] = w0;
            if (s == 2)
                G[(size_t)(k + 1) * ldg + perm[k + lid]] = w1;
        }
        if (lid == 0) {
            signs[k] = pv.sign0;
            if (s == 2)
                signs[k + 1] = pv.sign1;
        }
    }

    if ((gx + 1) * STRIP > by && k0 < n) {  /* uniform: a tile on or below the diagonal */
        const int row0 = k0 + gx * STRIP * TILE, col0 = k0 + by * TILE;
        /* The rows of W and the row norms this work-group needs. */
        for (int t = lid; t < STRIP * TILE + TILE; t += WG) {
            const int i = t < STRIP * TILE ? row0 + t : col0 + t - STRIP * TILE;
            if (i >= n)
                continue;
            cjac_elem w0 = cjac_from_real(0), w1 = cjac_from_real(0);
            if (s > 0)
                cjac_bp_new_row(A, lda, &pv, s, k, p, q, i, &w0, &w1);
            const cjac_real norm = cjac_bp_new_norm(norms[i], s, w0, w1);
            if (t < STRIP * TILE) {
                w_rows[0][t] = w0;
                w_rows[1][t] = w1;
                norm_rows[t] = norm;
                if (by == 0) {  /* the new columns of G and the norms, once */
                    if (s > 0)
                        G[(size_t)k * ldg + perm[i]] = w0;
                    if (s == 2)
                        G[(size_t)(k + 1) * ldg + perm[i]] = w1;
                    next_norms[i] = norm;
                }
            } else {
                w_cols[0][t - STRIP * TILE] = w0;
                w_cols[1][t - STRIP * TILE] = w1;
                norm_cols[t - STRIP * TILE] = norm;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        const int col = col0 + ly;
        const int col_source = cjac_bp_source(col, s, k, p, q);
        cjac_bp_max best = cjac_bp_none(n);
        /* CJAC_BP_AHEAD row tiles at a time, their entries loaded before any
         * is stored (A and next are not known apart, so a store keeps the
         * loads after it from starting early): that many loads in flight
         * per work-item. */
        for (int u0 = 0; u0 < STRIP; u0 += CJAC_BP_AHEAD) {
            cjac_elem entries[CJAC_BP_AHEAD];
#pragma unroll
            for (int v = 0; v < CJAC_BP_AHEAD; ++v) {
                const int u = u0 + v, row = row0 + u * TILE + lx;
                if (u < STRIP && gx * STRIP + u >= by && row < n && col < n && row >= col)
                    entries[v] = cjac_bp_entry(A, lda, cjac_bp_source(row, s, k, p, q),
                                               col_source);
            }
#pragma unroll
            for (int v = 0; v < CJAC_BP_AHEAD; ++v) {
                const int u = u0 + v, r = u * TILE + lx, row = row0 + r;
                if (!(u < STRIP && gx * STRIP + u >= by && row < n && col < n && row >= col))
                    continue;
                cjac_elem a = entries[v];
                if (s >= 1)
                    a = cjac_axpy(cjac_scale(-pv.sign0, w_rows[0][r]), cjac_conj(w_cols[0][ly]), a);
                if (s == 2)
                    a = cjac_axpy(cjac_scale(-pv.sign1, w_rows[1][r]), cjac_conj(w_cols[1][ly]), a);
                if (first && conjugated)
                    a = cjac_conj(a);  /* A0 holds the conjugate of the lower triangle */
                if (row == col)
                    a = cjac_from_real(cjac_real_part(a));
                cjac_real v_abs = cjac_elem_abs(a);
                if (first) {
                    scale[(size_t)col * lda + row] = v_abs;
                    scale[(size_t)row * lda + col] = v_abs;
                }
                if (testing && v_abs <= noise_level * fma(
                        norm_rows[r], norm_cols[ly],
                        scale[(size_t)perm[col] * lda + perm[row]])) {
                    a = cjac_from_real(0);  /* rounding noise */
                    v_abs = 0;
                }
                next[(size_t)col * lda + row] = a;
                cjac_bp_offer(&best, v_abs, row, col);
            }
        }
        best = cjac_bp_reduce(scratch, best, lid);
        if (lid == 0)
            partial[by * row_groups + gx] = best;
    }

    /* The ticket: every work-group's stores published before it is taken, so
     * the last one to take it reads them all. */
    CJAC_BP_PUBLISH();
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        CJAC_BP_GLOBAL_FENCE();
        last = atomic_inc(&state[CJAC_BP_TICKET])
               == (int)(get_num_groups(0) * get_num_groups(1)) - 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!last)
        return;  /* uniform over the work-group */
    CJAC_BP_GLOBAL_FENCE();

    /* Decision, from the records of this launch (the n - k0 trailing rows),
     * read by columns, contiguously. */
    const volatile __global cjac_bp_max *records = partial;
    const int tiles = k0 >= n ? 0 : (n - k0 + TILE - 1) / TILE;
    const int groups = (tiles + STRIP - 1) / STRIP;
    cjac_bp_max maxima = cjac_bp_none(0);
    for (int x = lid; x < tiles * groups; x += WG) {
        const int bt = x / groups, gt = x - bt * groups;
        if ((gt + 1) * STRIP <= bt)
            continue;  /* above the diagonal: no record */
        const int at = bt * row_groups + gt;
        cjac_bp_max m;
        m.off_value = records[at].off_value;
        m.off_row = records[at].off_row;
        m.off_col = records[at].off_col;
        m.diag_value = records[at].diag_value;
        m.diag_index = records[at].diag_index;
        cjac_bp_merge(&maxima, m);
    }
    maxima = cjac_bp_reduce(scratch, maxima, lid);
    if (lid == 0) {
        int s2, p2, q2, flag = CJAC_BP_RUNNING;
        const cjac_real mu0 = maxima.off_value, mu1 = maxima.diag_value;
        if (mu1 >= CJAC_BP_ALPHA * mu0) {
            s2 = 1;
            p2 = q2 = maxima.diag_index;
        } else {
            s2 = 2;
            p2 = min(maxima.off_row, maxima.off_col);
            q2 = max(maxima.off_row, maxima.off_col);
        }
        cjac_real tol = tolerance[0];
        if (tol < 0) {  /* the first search: the default, scaled tolerance */
            tol = rank_noise * fmax(mu0, (cjac_real)0);
            tolerance[0] = tol;
        }
        /* !(mu0 > tol) also stops on an empty trailing matrix (mu0 = -1). */
        if (k0 >= n)
            flag = CJAC_BP_DONE;
        else if (!(mu0 > tol))
            flag = !testing ? CJAC_BP_SMALL : mu0 > 0 ? CJAC_BP_RUNNING : CJAC_BP_DONE;
        /* The interchanges of the permutation and of the row norms, in order
         * (the norms as this launch stored them). */
        if (flag == CJAC_BP_RUNNING) {
            volatile __global cjac_real *stored_norms = next_norms;
            for (int t = 0; t < s2; ++t) {
                const int i = k0 + t, j = t == 0 ? p2 : q2;
                const int swap = perm[i];
                perm[i] = perm[j];
                perm[j] = swap;
                const cjac_real r = stored_norms[i];
                stored_norms[i] = stored_norms[j];
                stored_norms[j] = r;
            }
        }
        /* Every other work-group has read the state. */
        state[CJAC_BP_S] = s2;
        state[CJAC_BP_P] = p2;
        state[CJAC_BP_Q] = q2;
        state[CJAC_BP_FLAG] = flag;
        state[CJAC_BP_PENDING] = flag == CJAC_BP_SMALL;
        if (flag == CJAC_BP_RUNNING)
            state[CJAC_BP_K] = k0 + s2;
        state[CJAC_BP_CUR] = !odd;
        state[CJAC_BP_TICKET] = 0;
    }
    /* Ends the work-group's last region at a barrier: without it PoCL 3.0
     * ran the block above once per work-item, every one of them taking it
     * for work-item 0 (the interchanges then undid each other). */
    barrier(CLK_GLOBAL_MEM_FENCE);
}
