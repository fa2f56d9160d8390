## The classical (largest-pivot) two-sided Jacobi method on one Hermitian
## matrix, all steps in one launch of one work-group (the paper's single
## kernel with the iteration inside: Wang et al., "Implementing the Jacobi
## Algorithm for Solving Eigenvalues of Symmetric Matrices with CUDA",
## Algorithms 1, 3-5; cljacobi.classical_reference is the numpy reference of
## the same steps, with the paper's two slips corrected alike).
##
## A is stored whole, column-major (a(i, j) at a[j n + i]), Hermitian, so the
## part of row k right of the diagonal is the conjugate of column k below it:
## contiguous.  Per step: the pivot (p, q) from the per-row cache of the
## largest modulus right of the diagonal (row_value, row_arg; ties to the
## smaller index), the relative off-diagonal test against max |a_ii|, the
## rotation (lines 1-4), the columns p and q of every other row and their
## conjugates in rows p and q (lines 8-11), the pivot entries (lines 5-7),
## V's columns p and q, then the cache (rows p and q, and the rows whose
## largest entry was in column p or q, rescanned; the others compare their
## two changed entries).
##
## The same file holds the parallel cyclic two-sided method (eigh's
## "two-sided"): per step of a strategy table, cjac_cyclic_rotations decides
## the rotation of every pair of the step from the same A (one work-item a
## pair), cjac_cyclic_columns applies them to the columns of A and V (A J),
## cjac_cyclic_rows to the rows (J^* A J): the pairs of a step are disjoint,
## so their rotations commute.  cljacobi.classical_reference.cyclic_jacobi is
## its numpy reference.
##
## Render parameters (cljacobi.host.classical.ClassicalSpec):
##   real_ctype        "double"
##   complex_          complex Hermitian data (interleaved cjac_real2)
##   size_defines      #define WG (work-items of the one work-group), TODO (rows
##                     the work-group rescans together in a step, at most)
##   signatures        the kernel's parameters
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude(real_ctype)}
${size_defines}
${arith.element(real_ctype, complex_, "interleaved", with_workgroup_sum=False)}

/* The largest modulus right of the diagonal in row k (column k below it),
 * the first of equal ones. */
inline void cjac_classical_scan(__global const cjac_elem *a, const int n, const int k,
                                __global cjac_real *row_value, __global int *row_arg)
{
    cjac_real best = -1;
    int arg = -1;
    __global const cjac_elem *column = a + (size_t)k * n;
    for (int j = k + 1; j < n; ++j) {
        const cjac_real v = cjac_elem_abs(column[j]);
        if (v > best) {
            best = v;
            arg = j;
        }
    }
    row_value[k] = best;
    row_arg[k] = arg;
}

/* (cos theta, sin theta) of Algorithm 1, lines 1-4, for |a_pq| = r.  Line 2
 * prints sqrt(x^2 - y^2): slip, sin 2 theta = sign(y) x / sqrt(x^2 + y^2). */
inline void cjac_classical_rotation(const cjac_real a_pp, const cjac_real a_qq, const cjac_real r,
                                    cjac_real *c, cjac_real *s)
{
    const cjac_real x = -r, y = (a_qq - a_pp) / 2;                     /* line 1 */
    const cjac_real omega = (y >= 0 ? 1 : -1) * x / hypot(x, y);        /* line 2, eq. (4) */
    const cjac_real sine = omega / sqrt(2 * (1 + sqrt(1 - omega * omega)));  /* line 3 */
    *s = sine;
    *c = sqrt(1 - sine * sine);                                         /* line 4 */
}

/* The pivot of a step, by a work-group of WG items: the largest cached row
 * value (the first row of equal ones) and max |a_ii| for the test, reduced in
 * a fixed order; then, by work-item 0, the test and the rotation (lines 1-4):
 * rot = (c, s, e^{i alpha}) and pivot = (p, q, stop).  stop: 1 when the
 * largest |a_pq| is at most tol max |a_ii| (the relative off-diagonal test),
 * 2 when limit_reached (the steps have reached max_rotations). */
inline void cjac_classical_pivot(__global const cjac_elem *a, const int n,
                                 __global const cjac_real *row_value,
                                 __global const int *row_arg, const cjac_real tol,
                                 const int limit_reached,
                                 __local cjac_real *best_value, __local int *best_row,
                                 __local cjac_real *diagonal_max,
                                 int *pivot, cjac_real *rot)
{
    const int lid = get_local_id(0);
    cjac_real value = -1, dmax = 0;
    int row = n;
    for (int k = lid; k < n; k += WG) {
        dmax = fmax(dmax, fabs(cjac_real_part(a[(size_t)k * n + k])));
        if (k < n - 1 && row_value[k] > value) {
            value = row_value[k];
            row = k;
        }
    }
    best_value[lid] = value;
    best_row[lid] = row;
    diagonal_max[lid] = dmax;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width /= 2) {
        if (lid < width) {
            const cjac_real v = best_value[lid + width];
            const int r = best_row[lid + width];
            if (v > best_value[lid] || (v == best_value[lid] && r < best_row[lid])) {
                best_value[lid] = v;
                best_row[lid] = r;
            }
            diagonal_max[lid] = fmax(diagonal_max[lid], diagonal_max[lid + width]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        const int p = best_row[0], q = row_arg[p];
        const cjac_elem a_pq = a[(size_t)q * n + p];
        const cjac_real r = cjac_elem_abs(a_pq);
        pivot[0] = p;
        pivot[1] = q;
        /* the relative off-diagonal test: the largest |a_pq| against max |a_ii|
         * (stop 1: converged; 2: max_rotations reached) */
        pivot[2] = limit_reached ? 2 : !(r > tol * diagonal_max[0]);
        if (!pivot[2]) {
            cjac_real c, s;
            cjac_classical_rotation(cjac_real_part(a[(size_t)p * n + p]),
                                    cjac_real_part(a[(size_t)q * n + q]), r, &c, &s);
            rot[0] = c;
            rot[1] = s;
%if complex_:
            rot[2] = a_pq.x / r;  /* e^{i alpha} */
            rot[3] = a_pq.y / r;
%else:
            rot[2] = a_pq >= 0 ? 1 : -1;
            rot[3] = 0;
%endif
        }
    }
}

/* J = [[c, -s e^{i alpha}], [s e^{-i alpha}, c]] (the real rotation of eq.
 * (3) for a real a_pq > 0; its sign or phase otherwise) on entry k != p, q of
 * columns p and q (A J, lines 10-11) and of rows p and q (J^* A, lines 8-9,
 * as their conjugates); V J on row k.  Returns the new |a_kp|, |a_kq| in
 * *abs_p, *abs_q for the cache. */
inline void cjac_classical_rotate(__global cjac_elem *a, __global cjac_elem *v, const int n,
                                  const int compute_v, const int k, const int p, const int q,
                                  const cjac_real *rot, cjac_real *abs_p, cjac_real *abs_q)
{
    const cjac_real c = rot[0], s = rot[1];
%if complex_:
    const cjac_elem phase = (cjac_real2)(rot[2], rot[3]);
%else:
    const cjac_elem phase = rot[2];
%endif
    const cjac_elem to_p = cjac_scale(s, cjac_conj(phase)), to_q = cjac_scale(-s, phase);
    __global cjac_elem *col_p = a + (size_t)p * n, *col_q = a + (size_t)q * n;
    if (k != p && k != q) {
        const cjac_elem x = col_p[k], y = col_q[k];
        const cjac_elem xn = cjac_axpy(to_p, y, cjac_scale(c, x));
        const cjac_elem yn = cjac_axpy(to_q, x, cjac_scale(c, y));
        col_p[k] = xn;
        col_q[k] = yn;
        a[(size_t)k * n + p] = cjac_conj(xn);
        a[(size_t)k * n + q] = cjac_conj(yn);
        *abs_p = cjac_elem_abs(xn);
        *abs_q = cjac_elem_abs(yn);
    }
    if (compute_v) {
        __global cjac_elem *v_p = v + (size_t)p * n, *v_q = v + (size_t)q * n;
        const cjac_elem x = v_p[k], y = v_q[k];
        v_p[k] = cjac_axpy(to_p, y, cjac_scale(c, x));
        v_q[k] = cjac_axpy(to_q, x, cjac_scale(c, y));
    }
}

/* Lines 5-7 from the old a_pp, a_qq and |a_pq|; line 6 prints a_pp sin^2 -
 * a_qq cos^2 - a_pq sin 2theta: slip, the (q, q) entry of R^T A R has
 * + a_qq cos^2. */
inline void cjac_classical_pivot_entries(__global cjac_elem *a, const int n, const int p,
                                         const int q, const cjac_real a_pp, const cjac_real a_qq,
                                         const cjac_real r, const cjac_real *rot)
{
    const cjac_real c = rot[0], s = rot[1];
    a[(size_t)p * n + p] = cjac_from_real(a_pp * c * c + a_qq * s * s + r * 2 * s * c);
    a[(size_t)q * n + q] = cjac_from_real(a_pp * s * s + a_qq * c * c - r * 2 * s * c);
    a[(size_t)q * n + p] = a[(size_t)p * n + q] = CJAC_ELEM_ZERO;
}

/* Whether row k's cache entry must be rescanned after the rotation of (p, q)
 * (rows p and q, and the rows whose largest entry was in column p or q);
 * else its two changed entries right of the diagonal are compared (p first). */
inline bool cjac_classical_recheck(const int k, const int p, const int q,
                                   __global cjac_real *row_value, __global int *row_arg,
                                   const cjac_real abs_p, const cjac_real abs_q)
{
    const int arg = row_arg[k];
    if (k == p || k == q || arg == p || arg == q)
        return true;
    if (p > k && abs_p > row_value[k]) {
        row_value[k] = abs_p;
        row_arg[k] = p;
    }
    if (q > k && abs_q > row_value[k]) {
        row_value[k] = abs_q;
        row_arg[k] = q;
    }
    return false;
}

/* Row k's cache entry rescanned by the whole work-group: the largest modulus
 * right of the diagonal, the first of equal ones (-1 and arg -1 for none). */
inline void cjac_classical_rescan(__global const cjac_elem *a, const int n, const int k,
                                  __global cjac_real *row_value, __global int *row_arg,
                                  __local cjac_real *best_value, __local int *best_row)
{
    const int lid = get_local_id(0);
    __global const cjac_elem *column = a + (size_t)k * n;
    cjac_real value = -1;
    int arg = n;
    for (int j = k + 1 + lid; j < n; j += WG) {  /* the first largest per item */
        const cjac_real v = cjac_elem_abs(column[j]);
        if (v > value) {
            value = v;
            arg = j;
        }
    }
    best_value[lid] = value;
    best_row[lid] = arg;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width /= 2) {
        if (lid < width) {
            const cjac_real v = best_value[lid + width];
            const int j = best_row[lid + width];
            if (v > best_value[lid] || (v == best_value[lid] && j < best_row[lid])) {
                best_value[lid] = v;
                best_row[lid] = j;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        row_value[k] = best_value[0];
        row_arg[k] = best_value[0] < 0 ? -1 : best_row[0];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Every step in one launch of one work-group (the paper's single kernel). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_classical(${signatures["cjac_classical"].parameters})
{
    __local cjac_real best_value[WG], diagonal_max[WG];
    __local int best_row[WG];
    __local int pivot[3];
    __local int todo[TODO], todo_count;  /* rows to rescan this step */
    __local cjac_real rot_local[4];
    const int lid = get_local_id(0);

    for (int k = lid; k < n - 1; k += WG)
        cjac_classical_scan(a, n, k, row_value, row_arg);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);

    int rotations = 0, stop = 0;
    for (; rotations < max_rotations; ++rotations) {
        int pivot_private[3];
        cjac_real rot_private[4];
        cjac_classical_pivot(a, n, row_value, row_arg, tol, 0, best_value, best_row,
                             diagonal_max, pivot_private, rot_private);
        if (lid == 0) {
            for (int x = 0; x < 3; ++x)
                pivot[x] = pivot_private[x];
            for (int x = 0; x < 4; ++x)
                rot_local[x] = rot_private[x];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        stop = pivot[2];
        if (stop)
            break;  /* uniform over the work-group */
        const int p = pivot[0], q = pivot[1];
        cjac_real rot[4];
        for (int x = 0; x < 4; ++x)
            rot[x] = rot_local[x];
        const cjac_real a_pp = cjac_real_part(a[(size_t)p * n + p]);
        const cjac_real a_qq = cjac_real_part(a[(size_t)q * n + q]);
        const cjac_real r = cjac_elem_abs(a[(size_t)q * n + p]);
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (int k = lid; k < n; k += WG) {
            cjac_real abs_p, abs_q;
            cjac_classical_rotate(a, v, n, compute_v, k, p, q, rot, &abs_p, &abs_q);
        }
        if (lid == 0)
            cjac_classical_pivot_entries(a, n, p, q, a_pp, a_qq, r, rot);
        barrier(CLK_GLOBAL_MEM_FENCE);
        /* The cache (cjac_classical_recheck): the rows to rescan go to a list
         * the whole work-group works through one row at a time (a serial scan
         * by one work-item is latency-bound on a GPU; rows beyond the list's
         * room are scanned so).  The list's order changes nothing: each row's
         * scan is its own. */
        if (lid == 0)
            todo_count = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = lid; k < n - 1; k += WG) {
            __global const cjac_elem *column = a + (size_t)k * n;
            const cjac_real abs_p = p > k ? cjac_elem_abs(column[p]) : 0;
            const cjac_real abs_q = q > k ? cjac_elem_abs(column[q]) : 0;
            if (cjac_classical_recheck(k, p, q, row_value, row_arg, abs_p, abs_q)) {
                const int slot = atomic_inc(&todo_count);
                if (slot < TODO)
                    todo[slot] = k;
                else
                    cjac_classical_scan(a, n, k, row_value, row_arg);
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        const int listed = min(todo_count, TODO);
        for (int t = 0; t < listed; ++t)
            cjac_classical_rescan(a, n, todo[t], row_value, row_arg, best_value, best_row);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    if (lid == 0) {
        result[0] = rotations;
        result[1] = stop == 1;
    }
}

/* The same steps in three launches a step, every step's work spread over
 * the whole device (n work-items, n work-groups for the rescans) instead of
 * one work-group: the host enqueues steps in batches; a step after the stop
 * does nothing.  state = (p, q, stop, rotations done); rot = (c, s,
 * e^{i alpha}, then the old a_pp, a_qq, |a_pq|).  The results are those of cjac_classical bit for bit (the
 * same functions, the same reductions). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_classical_step_pivot(${signatures["cjac_classical_step_pivot"].parameters})
{
    __local cjac_real best_value[WG], diagonal_max[WG];
    __local int best_row[WG];
    if (state[2])
        return;  /* uniform: stopped */
    int pivot[3];
    cjac_real rot_private[4];
    cjac_classical_pivot(a, n, row_value, row_arg, tol, state[3] >= max_rotations, best_value,
                         best_row, diagonal_max, pivot, rot_private);
    if (get_local_id(0) == 0) {
        state[0] = pivot[0];
        state[1] = pivot[1];
        state[2] = pivot[2];
        state[3] += pivot[2] == 0;
        if (!pivot[2]) {
            const int p = pivot[0], q = pivot[1];
            for (int x = 0; x < 4; ++x)
                rot[x] = rot_private[x];
            /* the old pivot entries for lines 5-7 */
            rot[4] = cjac_real_part(a[(size_t)p * n + p]);
            rot[5] = cjac_real_part(a[(size_t)q * n + q]);
            rot[6] = cjac_elem_abs(a[(size_t)q * n + p]);
        }
    }
}

/* The rotation, one work-item per k; rows to rescan flagged in `rescan`. */
__kernel void cjac_classical_step_rotate(${signatures["cjac_classical_step_rotate"].parameters})
{
    const int k = get_global_id(0);
    if (k >= n || state[2])
        return;
    const int p = state[0], q = state[1];
    cjac_real rotation[4] = {rot[0], rot[1], rot[2], rot[3]};
    cjac_real abs_p = 0, abs_q = 0;
    cjac_classical_rotate(a, v, n, compute_v, k, p, q, rotation, &abs_p, &abs_q);
    if (k == 0)
        cjac_classical_pivot_entries(a, n, p, q, rot[4], rot[5], rot[6], rotation);
    if (k < n - 1)
        rescan[k] = cjac_classical_recheck(k, p, q, row_value, row_arg,
                                           p > k ? abs_p : 0, q > k ? abs_q : 0);
}

/* Work-group k rescans row k if flagged (all rows at the start). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_classical_step_rescan(${signatures["cjac_classical_step_rescan"].parameters})
{
    __local cjac_real best_value[WG];
    __local int best_row[WG];
    const int k = get_group_id(0);
    if (state[2] || !rescan[k])
        return;  /* uniform over the work-group */
    cjac_classical_rescan(a, n, k, row_value, row_arg, best_value, best_row);
    if (get_local_id(0) == 0)
        rescan[k] = 0;
}

/* The rotation of pair k of the step (i < j; j >= n: the virtual column of an
 * odd n, no rotation): rotate when |a_ij| > tol max(sqrt(|a_ii a_jj|), floor)
 * (relative to the pair's diagonal, with an absolute floor for zero ones);
 * rot[4 k ..] = (c, s, e^{i alpha}) or c = 1, s = 0. */
__kernel void cjac_cyclic_rotations(${signatures["cjac_cyclic_rotations"].parameters})
{
    const int k = get_global_id(0);
    if (k >= pairs_per_step)
        return;
    const int i = pairs[2 * (first + k)], j = pairs[2 * (first + k) + 1];
    cjac_real c = 1, s = 0;
    cjac_elem phase = cjac_from_real(1);
    if (j < n) {
        const cjac_elem a_ij = a[(size_t)j * n + i];
        const cjac_real r = cjac_elem_abs(a_ij);
        const cjac_real a_ii = cjac_real_part(a[(size_t)i * n + i]);
        const cjac_real a_jj = cjac_real_part(a[(size_t)j * n + j]);
        if (r > tol * fmax(sqrt(fabs(a_ii)) * sqrt(fabs(a_jj)), floor_)) {
            cjac_classical_rotation(a_ii, a_jj, r, &c, &s);
%if complex_:
            phase = (cjac_real2)(a_ij.x / r, a_ij.y / r);
%else:
            phase = a_ij >= 0 ? 1 : -1;
%endif
            atomic_inc(counter);
        }
    }
    rot[4 * k] = c;
    rot[4 * k + 1] = s;
%if complex_:
    rot[4 * k + 2] = phase.x;
    rot[4 * k + 3] = phase.y;
%else:
    rot[4 * k + 2] = phase;
    rot[4 * k + 3] = 0;
%endif
}

/* The rotation of pair k as (c, to_i, to_j): column i' = c col_i + to_i col_j,
 * column j' = c col_j + to_j col_i (J = [[c, -s e^{ia}], [s e^{-ia}, c]]). */
inline void cjac_cyclic_load(__global const cjac_real *rot, const int k, cjac_real *c,
                             cjac_elem *to_i, cjac_elem *to_j)
{
    *c = rot[4 * k];
    const cjac_real s = rot[4 * k + 1];
%if complex_:
    const cjac_elem phase = (cjac_real2)(rot[4 * k + 2], rot[4 * k + 3]);
%else:
    const cjac_elem phase = rot[4 * k + 2];
%endif
    *to_i = cjac_scale(s, cjac_conj(phase));
    *to_j = cjac_scale(-s, phase);
}

/* A J and V J: work-item (r, k) updates row r of columns i and j of pair k. */
__kernel void cjac_cyclic_columns(${signatures["cjac_cyclic_columns"].parameters})
{
    const int r = get_global_id(0), k = get_global_id(1);
    if (r >= n || k >= pairs_per_step)
        return;
    const int i = pairs[2 * (first + k)], j = pairs[2 * (first + k) + 1];
    if (j >= n || rot[4 * k + 1] == 0)
        return;
    cjac_real c;
    cjac_elem to_i, to_j;
    cjac_cyclic_load(rot, k, &c, &to_i, &to_j);
    for (int m = 0; m < (compute_v ? 2 : 1); ++m) {
        __global cjac_elem *x = m == 0 ? a : v;
        const cjac_elem xi = x[(size_t)i * n + r], xj = x[(size_t)j * n + r];
        x[(size_t)i * n + r] = cjac_axpy(to_i, xj, cjac_scale(c, xi));
        x[(size_t)j * n + r] = cjac_axpy(to_j, xi, cjac_scale(c, xj));
    }
}

/* J^* (A J): work-item (col, k) updates rows i and j of column col for pair
 * k (row i' = c row_i + conj(to_i) row_j, row j' = c row_j + conj(to_j)
 * row_i); the pivot block is set to its exact form (a_ij = 0, real diagonal). */
__kernel void cjac_cyclic_rows(${signatures["cjac_cyclic_rows"].parameters})
{
    const int col = get_global_id(0), k = get_global_id(1);
    if (col >= n || k >= pairs_per_step)
        return;
    const int i = pairs[2 * (first + k)], j = pairs[2 * (first + k) + 1];
    if (j >= n || rot[4 * k + 1] == 0)
        return;
    cjac_real c;
    cjac_elem to_i, to_j;
    cjac_cyclic_load(rot, k, &c, &to_i, &to_j);
    __global cjac_elem *column = a + (size_t)col * n;
    const cjac_elem xi = column[i], xj = column[j];
    cjac_elem yi = cjac_axpy(cjac_conj(to_i), xj, cjac_scale(c, xi));
    cjac_elem yj = cjac_axpy(cjac_conj(to_j), xi, cjac_scale(c, xj));
    if (col == i) {
        yi = cjac_from_real(cjac_real_part(yi));
        yj = CJAC_ELEM_ZERO;
    } else if (col == j) {
        yi = CJAC_ELEM_ZERO;
        yj = cjac_from_real(cjac_real_part(yj));
    }
    column[i] = yi;
    column[j] = yj;
}
