## Bunch-Parlett symmetric (Hermitian) indefinite factorization with complete
## pivoting on the device, producing M = G J G^* (Bunch & Parlett 1971;
## Slapnicar 1992, the J-factorization; the host version is
## cljacobi.factorization.j_factorize).
##
## Two kernels run the same pivot steps: cjac_bp_step, one launch a step, and
## cjac_bp_steps, every step in one launch of work-groups that wait for each
## other between steps (on GPUs whose work-groups the host knows to run side
## by side; the results are the same bits).  The working
## matrix (n x n, column-major, leading dimension lda) is the Hermitian Schur
## complement, of which only the lower triangle (positions i >= j) is stored
## and read; complex entries are interleaved (re, im) pairs, the element
## operations those of arith.element, so that the kernel is the same text for
## real and complex matrices.  It lives in two buffers, A0 and A1: a step
## reads the current one (state[CUR]) and writes the trailing lower triangle
## of the next into the other.  A step
##   1. applies the pivot decided by the step before: every work-group
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
## The first step (state[S] = 0) only searches.  The step state lives in
## device memory, so the host enqueues many steps without waiting.  A flag
## other than CJAC_BP_RUNNING makes every step a no-op until the host
## clears it: CJAC_BP_SMALL when the remaining entries fell below the
## normwise rank tolerance for the first time (no pivot is taken,
## CJAC_BP_PENDING is set; the host turns the entrywise rank test on and the
## next step only searches), CJAC_BP_DONE at the end: k = n, or nothing but
## rounding noise is left.  The pivots are those of interchanging the rows
## and columns in memory (the same entries, the same arithmetic).
##
## The entrywise rank test (the host version's _BlockLower.start_testing):
## with CJAC_BP_TESTING set in the state, an updated entry within its
## rounding-error bound, |s_ij| <= noise_level (|m_ij| + ||g_i|| ||g_j||), is
## set to zero, so complete pivoting never picks noise and the elimination
## stops at a largest modulus of 0.  |m_ij| is kept in `scale` by the
## original row and column (both triangles, filled by the first step) and
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
 * which buffer holds the working matrix; the ticket counter; for
 * cjac_bp_steps, the round (steps taken by any of its launches) and whether
 * a work-group gave up waiting.  (s = 0 at the start: nothing decided yet.) */
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

/* Where a step stands, read from the step state by every work-group: k0 the
 * first position not yet eliminated; the pivot (s, p, q) decided at
 * k = k0 - s and not yet applied (s = 0: none; the step only searches);
 * whether this is the first search, whether the entrywise rank test is on,
 * and which buffers hold the working matrix and the row norms (odd: A1). */
typedef struct {
    int k0, s, k, p, q, first, testing, odd;
} cjac_bp_where;

inline cjac_bp_where cjac_bp_where_of(const volatile __global int *state)
{
    cjac_bp_where at;
    const int pending = state[CJAC_BP_PENDING] != 0;
    at.k0 = state[CJAC_BP_K];
    at.s = pending ? 0 : state[CJAC_BP_S];  /* rank of this update */
    at.first = !pending && state[CJAC_BP_S] == 0;
    at.testing = state[CJAC_BP_TESTING] != 0;
    at.k = at.k0 - at.s;
    at.p = state[CJAC_BP_P];
    at.q = state[CJAC_BP_Q];
    at.odd = state[CJAC_BP_CUR] != 0;
    return at;
}

/* The buffers of a step: the working matrix (read) and the next one
 * (written), the row norms likewise, and what the factorization fills. */
typedef struct {
    const __global cjac_elem *A;
    __global cjac_elem *next;
    const __global cjac_real *norms;
    __global cjac_real *next_norms;
    __global cjac_elem *G;
    __global cjac_real *signs, *scale;
    __global int *perm;
    int lda, ldg, n, conjugated;
    cjac_real noise_level;
} cjac_bp_buffers;

## The buffers of a step from the kernel's arguments (the same in both kernels).
<%def name="buffers_of(odd)">{
        ${odd} ? A1 : A0, ${odd} ? A0 : A1, ${odd} ? row_norms1 : row_norms0,
        ${odd} ? row_norms0 : row_norms1, G, signs, scale, perm, lda, ldg, n, conjugated,
        noise_level}</%def>

/* The rows of W (its two columns) and the row norms a task needs, in local
 * memory: those of its rows and those of its columns. */
typedef struct {
    __local cjac_elem *rows0, *rows1, *cols0, *cols1;
    __local cjac_real *row_norms, *col_norms;
} cjac_bp_w;

/* One task of a step: the work-group's share of applying the pivot and of
 * the update and search.
 *
 * The pivot.  Every task computes the rows of W it needs (its rows and its
 * columns) from the pivot columns of the interchanged matrix; the tasks of
 * the first column tile (by = 0) store their rows of W into G at the
 * original row index perm[i] and the grown row norms, and task (0, 0) the
 * pivot rows k..k0-1 and the signs sign(d) or sign(lam) in signs[k..k0-1].
 *
 * Update.  A'[i][j] = (P A P^T)[i][j] - sum_t sign_t W_t[i] conj(W_t[j]) for
 * k0 <= j <= i < n, i.e. A' = P A P^T - W J_s W^* (Bunch & Parlett 1971, the
 * host's eliminate), the diagonal kept exactly real, written into the next
 * buffer; every new entry's modulus is offered to the work-item's maxima
 * *best.  s = 0 (the first step) only searches (the entries conjugated
 * where `conjugated` is set, the imaginary parts of the diagonal dropped;
 * `scale` filled with |a_ij|).  With `testing` the entries within their
 * rounding-error bound are set to zero.  Task (gx, by) covers the columns
 * k0 + by*TILE.. and the `strip` row tiles bx = gx*strip .. gx*strip +
 * strip - 1 (rows k0 + bx*TILE..); a task whose tiles all lie above the
 * diagonal (bx < by) only applies the pivot rows, if it is task (0, 0).
 * Every work-item of the work-group calls it (it holds barriers), with the
 * same task; an entry's arithmetic does not depend on the task. */
inline void cjac_bp_task(const cjac_bp_where at, const cjac_bp_pivot *pv,
                         const cjac_bp_buffers b, const int gx, const int by, const int strip,
                         const cjac_bp_w w, const int lx, const int ly, cjac_bp_max *best)
{
    const int lid = ly * TILE + lx;
    const int n = b.n, k0 = at.k0, s = at.s, k = at.k, p = at.p, q = at.q;
    if (s > 0 && gx == 0 && by == 0) {  /* the pivot rows of G, and the signs */
        if (lid < s) {
            cjac_elem w0, w1;
            cjac_bp_new_row(b.A, b.lda, pv, s, k, p, q, k + lid, &w0, &w1);
            b.G[(size_t)k * b.ldg + b.perm[k + lid]] = w0;
            if (s == 2)
                b.G[(size_t)(k + 1) * b.ldg + b.perm[k + lid]] = w1;
        }
        if (lid == 0) {
            b.signs[k] = pv->sign0;
            if (s == 2)
                b.signs[k + 1] = pv->sign1;
        }
    }

    if ((gx + 1) * strip > by && k0 < n) {  /* uniform: a tile on or below the diagonal */
        const int row0 = k0 + gx * strip * TILE, col0 = k0 + by * TILE;
        barrier(CLK_LOCAL_MEM_FENCE);  /* the work-group's task before has read w */
        for (int t = lid; t < strip * TILE + TILE; t += WG) {
            const int i = t < strip * TILE ? row0 + t : col0 + t - strip * TILE;
            if (i >= n)
                continue;
            cjac_elem w0 = cjac_from_real(0), w1 = cjac_from_real(0);
            if (s > 0)
                cjac_bp_new_row(b.A, b.lda, pv, s, k, p, q, i, &w0, &w1);
            const cjac_real norm = cjac_bp_new_norm(b.norms[i], s, w0, w1);
            if (t < strip * TILE) {
                w.rows0[t] = w0;
                w.rows1[t] = w1;
                w.row_norms[t] = norm;
                if (by == 0) {  /* the new columns of G and the norms, once */
                    if (s > 0)
                        b.G[(size_t)k * b.ldg + b.perm[i]] = w0;
                    if (s == 2)
                        b.G[(size_t)(k + 1) * b.ldg + b.perm[i]] = w1;
                    b.next_norms[i] = norm;
                }
            } else {
                w.cols0[t - strip * TILE] = w0;
                w.cols1[t - strip * TILE] = w1;
                w.col_norms[t - strip * TILE] = norm;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        const int col = col0 + ly;
        const int col_source = cjac_bp_source(col, s, k, p, q);
        /* CJAC_BP_AHEAD row tiles at a time, their entries loaded before any
         * is stored (A and next are not known apart, so a store keeps the
         * loads after it from starting early): that many loads in flight
         * per work-item. */
        for (int u0 = 0; u0 < strip; u0 += CJAC_BP_AHEAD) {
            cjac_elem entries[CJAC_BP_AHEAD];
#pragma unroll
            for (int v = 0; v < CJAC_BP_AHEAD; ++v) {
                const int u = u0 + v, row = row0 + u * TILE + lx;
                if (u < strip && gx * strip + u >= by && row < n && col < n && row >= col)
                    entries[v] = cjac_bp_entry(b.A, b.lda, cjac_bp_source(row, s, k, p, q),
                                               col_source);
            }
#pragma unroll
            for (int v = 0; v < CJAC_BP_AHEAD; ++v) {
                const int u = u0 + v, r = u * TILE + lx, row = row0 + r;
                if (!(u < strip && gx * strip + u >= by && row < n && col < n && row >= col))
                    continue;
                cjac_elem a = entries[v];
                if (s >= 1)
                    a = cjac_axpy(cjac_scale(-pv->sign0, w.rows0[r]), cjac_conj(w.cols0[ly]), a);
                if (s == 2)
                    a = cjac_axpy(cjac_scale(-pv->sign1, w.rows1[r]), cjac_conj(w.cols1[ly]), a);
                if (at.first && b.conjugated)
                    a = cjac_conj(a);  /* A0 holds the conjugate of the lower triangle */
                if (row == col)
                    a = cjac_from_real(cjac_real_part(a));
                cjac_real v_abs = cjac_elem_abs(a);
                if (at.first) {
                    b.scale[(size_t)col * b.lda + row] = v_abs;
                    b.scale[(size_t)row * b.lda + col] = v_abs;
                }
                if (at.testing && v_abs <= b.noise_level * fma(
                        w.row_norms[r], w.col_norms[ly],
                        b.scale[(size_t)b.perm[col] * b.lda + b.perm[row]])) {
                    a = cjac_from_real(0);  /* rounding noise */
                    v_abs = 0;
                }
                b.next[(size_t)col * b.lda + row] = a;
                cjac_bp_offer(best, v_abs, row, col);
            }
        }
    }
}

/* Record `at` of the step's partial maxima, read past the caches (another
 * work-group stored it). */
inline cjac_bp_max cjac_bp_record(const volatile __global cjac_bp_max *records, const int at)
{
    cjac_bp_max m;
    m.off_value = records[at].off_value;
    m.off_row = records[at].off_row;
    m.off_col = records[at].off_col;
    m.diag_value = records[at].diag_value;
    m.diag_index = records[at].diag_index;
    m.pad = 0;
    return m;
}

/* Decision (the last work-group to take a step's ticket; Bunch & Parlett
 * 1971), from the maxima `mine` every work-item merged from some of the
 * step's records: mu0 = max |a_ij|, mu1 = max |a_ii| of the new trailing
 * matrix; a 1x1 pivot at the largest diagonal entry if mu1 >= alpha mu0,
 * else a 2x2 pivot at the off-diagonal position (q, p) of mu0, p < q.  The
 * maximum is unique under the order of cjac_bp_better, so the choice does
 * not depend on how the entries were grouped into records.  The rank test:
 * !(mu0 > tol) (normwise) stops for the host to turn the entrywise test on
 * (CJAC_BP_SMALL) the first time, and with CJAC_BP_TESTING on, where the
 * updates drop noise, at mu0 = 0 (nothing but noise left).  tol =
 * tolerance[0], or, where the host left it negative, rank_noise mu0 of the
 * first search (n eps max |m_ij|, the host's default), stored there.  The
 * permutation and the row norms are interchanged; the state is rewritten:
 * (s, p, q) the pivot; the flag CJAC_BP_DONE at k0 = n or when the rank
 * test stops, CJAC_BP_SMALL when !(mu0 > tol) before the entrywise test is
 * on (CJAC_BP_PENDING set), else CJAC_BP_RUNNING and K = k0 + s; the other
 * buffers current; the ticket back to 0.  A pivot that ends at n is applied
 * (its columns of G stored) by one more step, which finds k0 = n and ends.
 * Every other work-group has read the state before this one runs. */
inline void cjac_bp_decide(const cjac_bp_max mine, const cjac_bp_scratch scratch, const int lid,
                           const cjac_bp_where at, const cjac_bp_buffers b,
                           __global int *state, __global cjac_real *tolerance,
                           const cjac_real rank_noise)
{
    const cjac_bp_max maxima = cjac_bp_reduce(scratch, mine, lid);
    if (lid != 0)
        return;
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
    if (at.k0 >= b.n)
        flag = CJAC_BP_DONE;
    else if (!(mu0 > tol))
        flag = !at.testing ? CJAC_BP_SMALL : mu0 > 0 ? CJAC_BP_RUNNING : CJAC_BP_DONE;
    /* The interchanges of the permutation and of the row norms, in order
     * (the norms as this step stored them). */
    if (flag == CJAC_BP_RUNNING) {
        volatile __global cjac_real *stored_norms = b.next_norms;
        for (int t = 0; t < s2; ++t) {
            const int i = at.k0 + t, j = t == 0 ? p2 : q2;
            const int swap = b.perm[i];
            b.perm[i] = b.perm[j];
            b.perm[j] = swap;
            const cjac_real r = stored_norms[i];
            stored_norms[i] = stored_norms[j];
            stored_norms[j] = r;
        }
    }
    state[CJAC_BP_S] = s2;
    state[CJAC_BP_P] = p2;
    state[CJAC_BP_Q] = q2;
    state[CJAC_BP_FLAG] = flag;
    state[CJAC_BP_PENDING] = flag == CJAC_BP_SMALL;
    if (flag == CJAC_BP_RUNNING)
        state[CJAC_BP_K] = at.k0 + s2;
    state[CJAC_BP_CUR] = !at.odd;
    state[CJAC_BP_TICKET] = 0;
}

/* The work-group's local memory, declared in each kernel: one pool for the
 * rows of W of a task and, after a barrier, the reduction of the maxima. */
#define CJAC_BP_W_BYTES ((2 * sizeof(cjac_elem) + sizeof(cjac_real)) * (STRIP * TILE + TILE))
#define CJAC_BP_SCRATCH_BYTES ((2 * sizeof(cjac_real) + 3 * sizeof(int)) * WG)
#define CJAC_BP_POOL_BYTES \
    (CJAC_BP_W_BYTES > CJAC_BP_SCRATCH_BYTES ? CJAC_BP_W_BYTES : CJAC_BP_SCRATCH_BYTES)
<%def name="local_memory()">
    __local cjac_elem pool[(CJAC_BP_POOL_BYTES + sizeof(cjac_elem) - 1) / sizeof(cjac_elem)];
    __local cjac_real *const norm_rows = (__local cjac_real *)(pool + 2 * (STRIP * TILE + TILE));
    const cjac_bp_w w = {pool, pool + STRIP * TILE, pool + 2 * STRIP * TILE,
                         pool + 2 * STRIP * TILE + TILE, norm_rows, norm_rows + STRIP * TILE};
    __local cjac_real *const best_off = (__local cjac_real *)pool;
    __local int *const best_row = (__local int *)(best_off + 2 * WG);
    const cjac_bp_scratch scratch = {best_off, best_off + WG, best_row, best_row + WG,
                                     best_row + 2 * WG};
    __local int last;
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int lid = ly * TILE + lx;
</%def>

/* One pivot step a launch: the task (get_group_id(0), get_group_id(1)) of
 * cjac_bp_task with strips of STRIP row tiles, its record in
 * partial[by * row_groups + gx] (tasks on or below the diagonal), then the
 * decision of the last work-group to take the launch's ticket.  The grid
 * covers at least the n - k0 trailing rows and columns, and at least
 * work-group (0, 0).  The host enqueues many launches without waiting: a
 * flag other than CJAC_BP_RUNNING makes a launch a no-op. */
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void cjac_bp_step(${signatures["cjac_bp_step"].parameters})
{
    if (state[CJAC_BP_FLAG] != CJAC_BP_RUNNING)
        return;  /* uniform over the launch (the last work-group changes it) */
    const int gx = get_group_id(0), by = get_group_id(1);
${local_memory()}
    const cjac_bp_where at = cjac_bp_where_of(state);
    const cjac_bp_buffers b = ${buffers_of("at.odd")};
    cjac_bp_pivot pv;
    if (at.s > 0)
        pv = cjac_bp_pivot_of(b.A, lda, at.s, at.p, at.q);

    cjac_bp_max best = cjac_bp_none(n);
    cjac_bp_task(at, &pv, b, gx, by, STRIP, w, lx, ly, &best);
    if ((gx + 1) * STRIP > by && at.k0 < n) {  /* uniform: a record of this launch */
        barrier(CLK_LOCAL_MEM_FENCE);  /* w read: the pool becomes the scratch */
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

    /* The records of this launch (the n - k0 trailing rows), read by
     * columns, contiguously. */
    const int tiles = at.k0 >= n ? 0 : (n - at.k0 + TILE - 1) / TILE;
    const int groups = (tiles + STRIP - 1) / STRIP;
    cjac_bp_max mine = cjac_bp_none(0);
    for (int x = lid; x < tiles * groups; x += WG) {
        const int bt = x / groups, gt = x - bt * groups;
        if ((gt + 1) * STRIP > bt)  /* on or below the diagonal: a record */
            cjac_bp_merge(&mine, cjac_bp_record(partial, bt * row_groups + gt));
    }
    cjac_bp_decide(mine, scratch, lid, at, b, state, tolerance, rank_noise);
    /* Ends the work-group's last region at a barrier: without it PoCL 3.0
     * ran the block above once per work-item, every one of them taking it
     * for work-item 0 (the interchanges then undid each other). */
    barrier(CLK_GLOBAL_MEM_FENCE);
}

/* Tasks of a step of cjac_bp_steps: those with a tile on or below the
 * diagonal, row group by row group.  Row group gx has min(tiles, (gx + 1)
 * strip) of them, so the groups before gx (all but the last are full) hold
 * strip gx (gx + 1) / 2, and the step tiles more than those before its
 * last group (at least task (0, 0), which applies the pivot rows at the
 * end). */
inline int cjac_bp_tasks(const int tiles, const int strip)
{
    const int last = max((tiles + strip - 1) / strip, 1) - 1;
    return max(strip * last * (last + 1) / 2 + tiles, 1);
}

/* Row tiles per task of a step: STRIP, halved while the step would have
 * fewer than CJAC_BP_TASKS_PER_GROUP tasks a work-group. */
#define CJAC_BP_TASKS_PER_GROUP ${tasks_per_group}
inline int cjac_bp_strip(const int tiles, const int groups)
{
    int strip = STRIP;
    while (strip > 1 && cjac_bp_tasks(tiles, strip) < CJAC_BP_TASKS_PER_GROUP * groups)
        strip /= 2;
    return strip;
}

/* (gx, by) of task t of cjac_bp_tasks: gx from the root of strip gx (gx + 1)
 * / 2 <= t, corrected in integers. */
inline int2 cjac_bp_task_at(const int t, const int strip, const int row_groups)
{
    int gx = (int)((sqrt(8.0 * t / strip + 1) - 1) / 2);
    gx = min(gx, row_groups - 1);
    while (gx > 0 && strip * gx * (gx + 1) / 2 > t)
        --gx;
    while (gx < row_groups - 1 && strip * (gx + 1) * (gx + 2) / 2 <= t)
        ++gx;
    return (int2)(gx, t - strip * gx * (gx + 1) / 2);
}

/* Every pivot step in one launch: the same steps as cjac_bp_step's, by
 * get_num_groups(0) work-groups that must all be resident at once (the
 * host launches at most one a compute unit of a GPU whose work-groups
 * it knows to run side by side).  A step: every work-group takes the tasks
 * group, group + groups, ... of the step's tasks on or below the diagonal
 * (cjac_bp_tasks), with strips of cjac_bp_strip row tiles, and stores one
 * record of their maxima in partial[group]; the last to take the step's ticket decides,
 * as cjac_bp_step's does, and then advances state[CJAC_BP_ROUND]; the
 * others wait for it (a barrier for the whole launch) and read the new
 * state.  The launch ends when the flag is not CJAC_BP_RUNNING.  A
 * work-group that waits for more than CJAC_BP_SPIN_LIMIT reads of the
 * round sets state[CJAC_BP_STALLED] and ends (the host raises). */
#define CJAC_BP_SPIN_LIMIT (1 << 26)
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void cjac_bp_steps(${signatures["cjac_bp_steps"].parameters})
{
    const int group = get_group_id(0), groups = get_num_groups(0);
${local_memory()}
    __local int stalled;
    if (lid == 0)
        stalled = 0;
    const volatile __global int *shared_state = state;
    /* No work-group can advance the round before every one has taken the
     * first step's ticket, so all read the same value. */
    int round = shared_state[CJAC_BP_ROUND];
    for (;;) {
        if (shared_state[CJAC_BP_FLAG] != CJAC_BP_RUNNING)
            break;  /* uniform: every work-group reads it after the round advanced */
        const cjac_bp_where at = cjac_bp_where_of(shared_state);
        const cjac_bp_buffers b = ${buffers_of("at.odd")};
        cjac_bp_pivot pv;
        if (at.s > 0)
            pv = cjac_bp_pivot_of(b.A, lda, at.s, at.p, at.q);
        const int tiles = at.k0 >= n ? 0 : (n - at.k0 + TILE - 1) / TILE;
        const int strip = cjac_bp_strip(tiles, groups);
        const int row_groups = max((tiles + strip - 1) / strip, 1);
        cjac_bp_max best = cjac_bp_none(n);
        const int tasks = cjac_bp_tasks(tiles, strip);
        for (int task = group; task < tasks; task += groups) {
            const int2 where = cjac_bp_task_at(task, strip, row_groups);
            cjac_bp_task(at, &pv, b, where.x, where.y, strip, w, lx, ly, &best);
        }
        barrier(CLK_LOCAL_MEM_FENCE);  /* w read: the pool becomes the scratch */
        best = cjac_bp_reduce(scratch, best, lid);
        if (lid == 0)
            partial[group] = best;

        CJAC_BP_PUBLISH();
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            CJAC_BP_GLOBAL_FENCE();
            last = atomic_inc(&state[CJAC_BP_TICKET]) == groups - 1;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (last) {  /* uniform over the work-group */
            CJAC_BP_GLOBAL_FENCE();
            cjac_bp_max mine = cjac_bp_none(0);
            for (int x = lid; x < groups; x += WG)
                cjac_bp_merge(&mine, cjac_bp_record(partial, x));
            cjac_bp_decide(mine, scratch, lid, at, b, state, tolerance, rank_noise);
            if (lid == 0) {
                CJAC_BP_GLOBAL_FENCE();  /* the new state before the new round */
                atomic_xchg(&state[CJAC_BP_ROUND], round + 1);
            }
        } else if (lid == 0) {
            int spins = 0;
            while (shared_state[CJAC_BP_ROUND] == round && ++spins < CJAC_BP_SPIN_LIMIT)
                ;
            stalled = spins == CJAC_BP_SPIN_LIMIT;
            if (stalled)
                atomic_xchg(&state[CJAC_BP_STALLED], 1);
        }
        ++round;
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        CJAC_BP_GLOBAL_FENCE();  /* the other work-groups' stores before this one's loads */
        if (stalled)
            break;  /* uniform over the work-group */
    }
}
