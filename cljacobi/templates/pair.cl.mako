## The pair transformation of the one-sided method: decide and apply one
## rotation of two columns of G (and V), the step of GPUJACH1's Algorithm 4.5
## (Novakovic & Singer 2011), shared by the pointwise kernel (one work-group per
## pair, cjac_step) and the batched kernel (one work-item per pair, every
## matrix of a stack in local memory, cjac_batched_eig).
##
## Imported with <%namespace name="pair" file="pair.cl.mako"/>; the caller has
## rendered arith's prelude, element and rotation_functions, and has in scope:
##   i, j          the pair's positions in the packed diagonal, i < j
##   D, peak       the packed diagonal (d, rho, j) and the columns' peak squared norms
##   G, ldg, m     the columns (column-major, leading dimension ldg) and their rows
##   V, ldv, mv    likewise for V, with accumulate_v
##   peak_rounding, real_columns (rotation 3: columns >= real_columns are the border)
## Parameters of the def (strings of OpenCL C):
##   space                 address space of G and V, "__global" or "__local"
##   store_ctype           what G and V hold
##   rotation, accumulate_v   the specialization (pointwise.cl.mako)
##   first_row, row_step   the rows one work-item visits: "lid", "WG" (a
##                         work-group per pair) or "0", "1" (an item per pair)
##   sum_real, sum_elem    format strings that reduce one work-item's partial
##                         sum ({0}) over the pair's items, e.g.
##                         "cjac_workgroup_sum(scratch, {})", or "({})"; {1}
##                         numbers the sums of a step 0..3 (a_ij, the
##                         difference, d_i, d_j), for a reduction that gives
##                         each its own scratch
##   leader                the condition of the one item that writes D, peak
##                         and the status: "lid == 0", or "true"
##   status, rotations     the status word and rotation counter it updates
##   epilogue              more statements for that item (the MM stepper)
##   every_item_sums       every work-item of the work-group reaches every
##                         reduction (the batched kernel with a pair's rows
##                         split over several items, whose reductions hold
##                         barriers while the pairs decide differently): the
##                         difference pass's sum leaves its condition, over
##                         zero rows where the pair does not need it
##   sum_real_two          optional: one statement that reduces two partial
##                         sums at once ({0}, {1}) into two variables
##                         declared before it ({2}, {3}); for d_i and d_j
##   row_vector            1, or CJAC_ROWS > 1 with first_row "0", row_step "1"
##                         and G, V of cjac_elem in a column (real, or complex
##                         interleaved): the dot product, the rotation and its norms
##                         and V's rotation go CJAC_ROWS rows at a time in
##                         explicit vectors (arith.row_vectors, rendered by
##                         the caller), the rest of the rows one by one; each
##                         element rounds as in the loop by rows, the sums
##                         are added lane by lane (CPUs)

<%def name="pair_step(space, store_ctype, rotation, accumulate_v, first_row, row_step, sum_real, sum_elem, leader, status, rotations, epilogue='', every_item_sums=False, sum_real_two=None, row_vector=1)">
<%
    vectorized = row_vector > 1
    if vectorized and ((first_row, row_step) != ("0", "1") or rotation == 3):
        raise ValueError("row vectors need one work-item per pair and rotation 1 or 2")
    # The first row of the loops by rows: after the vectors, if any.
    scalar_from = "vector_end" if vectorized else first_row
    scalar_from_v = "vector_end_v" if vectorized else first_row
%>\
<%def name="at(column, row)">(${space} cjac_real *)(${column} + ${row})</%def>\
const cjac_diag Di = D[i], Dj = D[j];
${space} ${store_ctype} *gi = CJAC_COLUMN(G, Di.rho, ldg);
${space} ${store_ctype} *gj = CJAC_COLUMN(G, Dj.rho, ldg);
%if vectorized:
const int vector_end = m - m % CJAC_ROWS;  /* rows in vectors: [0, vector_end) */
%endif

/* a_ij = g_rho(i)^* g_rho(j); a_ii = d_i, a_jj = d_j are kept up to date. */
%if vectorized:
cjac_rows part_rows = CJAC_ROWS_ZERO;
for (int row = 0; row < vector_end; row += CJAC_ROWS)
    part_rows = cjac_rows_dot_acc(CJAC_ROWS_LOAD(${at("gi", "row")}),
                                  CJAC_ROWS_LOAD(${at("gj", "row")}), part_rows);
cjac_elem part = cjac_rows_sum_elem(part_rows);
%else:
cjac_elem part = CJAC_ELEM_ZERO;
%endif
for (int row = ${scalar_from}; row < m; row += ${row_step})
    part = cjac_dot_acc(CJAC_LOAD(gi, row, ldg), CJAC_LOAD(gj, row, ldg), part);
const cjac_elem a_ij = ${sum_elem.format('part', 0)};
const cjac_real a_ii = Di.d, a_jj = Dj.d;

/* Relative orthogonality, eq. (2.3): rotate only if
 * |a_ij| > tol sqrt(a_ii) sqrt(a_jj), tol = sqrt(m) eps, the rounding level
 * of the computed cosine (arith: cjac_orthogonality_tolerance).  A column
 * whose squared norm is zero or below the normal range is orthogonal to
 * everything: a zero column has nothing to rotate, and for one that
 * underflows neither the test nor a rotation can be evaluated to relative
 * accuracy (a_ij != 0 with it is flagged CJAC_TINY_COLUMN; the host
 * refuses the result).  Every decision below is uniform over the
 * work-group, so the reductions inside conditional code are reached by all
 * of its work-items or by none. */
const bool hyperbolic = Di.j != Dj.j;
/* Complex a_ij: the real formulas take |a_ij|, the phase goes into
 * s = t e^{i alpha} (arith.element); for real data s = t. */
const cjac_real a_arg = cjac_tangent_arg(a_ij);
const bool normal = a_ii >= CJAC_TINY && a_jj >= CJAC_TINY;
const cjac_real tol = cjac_orthogonality_tolerance(m);
/* The squared relative size of the rounding a column carries (above). */
const cjac_real rounding = peak_rounding ? tol * tol : 0;
const bool nonorthogonal = normal && fabs(a_arg) > tol * sqrt(a_ii) * sqrt(a_jj);
const cjac_real abs_kappa = fabs((a_ii + a_jj) / (2 * a_arg));
/* |t| -> 1 (eq. (2.5)): x = |kappa| - 1 = (a_ii + a_jj - 2 |a_ij|) /
 * (2 |a_ij|) cancels, and for nearly parallel columns it is lost
 * entirely (a_jj = 1 + 1e-16 rounds to 1 and gives |kappa| = 1).  It
 * equals ||g_i - u g_j||^2 / (2 |a_ij|), u = conj(a_ij) / |a_ij|:
 * one more pass over the pair computes it to working precision.  A
 * difference within the rounding the columns carry (tol^2 times their
 * peaks, as for the remainders below) is none: the pair is dependent
 * and no hyperbolic rotation exists (the host refuses the result). */
const bool close_pair = nonorthogonal && hyperbolic && abs_kappa < 2;
<%def name="difference_pass()">
    const cjac_elem u = cjac_conj(cjac_with_phase(copysign((cjac_real)1, a_arg), a_ij, a_arg));
    for (int row = ${first_row}; row < m; row += ${row_step}) {
        const cjac_elem x = CJAC_LOAD(gi, row, ldg), y = CJAC_LOAD(gj, row, ldg);
        part_x = cjac_abs2_acc(cjac_axpy(-u, y, x), part_x);
    }
</%def>
cjac_real t = 0;
%if every_item_sums:
cjac_real part_x = 0;
if (close_pair) {
${difference_pass()}
}
const cjac_real difference = ${sum_real.format('part_x', 1)};
if (close_pair) {
%else:
if (close_pair) {
    cjac_real part_x = 0;
${difference_pass()}
    const cjac_real difference = ${sum_real.format('part_x', 1)};
%endif
    if (difference > rounding * fmax(peak[Di.rho], peak[Dj.rho]))
        t = cjac_hyp_tangent_apart(difference / (2 * fabs(a_arg)), -a_arg);
} else if (nonorthogonal) {
    t = cjac_tangent(a_ii, a_jj, a_arg, hyperbolic);
}
const bool rotate = t != 0;
const cjac_elem s_j = cjac_with_phase(t, a_ij, a_arg);
/* c = cos phi = 1/sqrt(1 + t^2) or ch = cosh phi = 1/sqrt(1 - t^2), held as
 * cm1 = c - 1 (arith: cjac_rotation_cosine_m1); eqs. (2.4)/(2.5):
 * g_i' = c (g_i - t g_j) or c (g_i + t g_j), and g_j' = c (g_j + t g_i),
 * each parenthesis one FMA and the product with c another (real data);
 * complex: t -> s = t e^{i alpha} in g_j', conj(s) in g_i'. */
const cjac_real cm1 = cjac_rotation_cosine_m1(t, hyperbolic);
const cjac_elem s_i = hyperbolic ? cjac_conj(s_j) : -cjac_conj(s_j);
%if rotation == 1:
/* Rotation algorithm 1 (Zhou & Brent 1997, Sect. 2): |phi| <= pi/4, so the
 * larger of the two norms grows and stays where it is. */
const bool exchange = false;
%else:
/* Sorting rotations (Zhou & Brent 1997, Sect. 2, algorithms 2 and 3): the
 * first position i of the pair receives the larger eigenvalue estimate
 * lambda = j d, the order Sort_Diagonal keeps (positive part descending in
 * d, negative part ascending).  Only a trigonometric pair (one sign group)
 * has the choice: in the positive group i takes the larger, in the
 * negative group the smaller new squared norm.  A hyperbolic pair has no
 * complementary rotation (both norms drop by t |a_ij|, eq. (2.6)); as the
 * positions are sign-partitioned its positive member is at i already.
 * The decision uses the predicted new norms of eq. (2.6) with hyp = -1:
 * a_ii - t |a_ij| and a_jj + t |a_ij| (the current ones if not rotating;
 * a_arg is the signed a_ij for real data).  Norms that agree to
 * T_eps = sqrt(eps)/2 (eq. (4.2)) are a tie and keep their places: in a
 * cluster of equal eigenvalues the estimates differ by rounding only, and
 * exchanges decided by it would move the columns at random, so that a
 * sweep no longer meets every pair of columns once. */
const cjac_real new_ii = fma(-t, a_arg, a_ii);
const cjac_real new_jj = fma(t, a_arg, a_jj);
const cjac_real tie = sqrt(CJAC_EPS) / 2 * fmax(new_ii, new_jj);
%if rotation == 3:
/* The border columns (physical index >= real_columns, eq. (4.1)) must stay
 * where the host strips them: Nash's turn would move their data. */
const bool exchange = !hyperbolic && Di.rho < real_columns && Dj.rho < real_columns
                      && (Di.j > 0 ? new_jj - new_ii > tie : new_ii - new_jj > tie);
%else:
const bool exchange = !hyperbolic && (Di.j > 0 ? new_jj - new_ii > tie
                                               : new_ii - new_jj > tie);
%endif
%endif
%if rotation == 3:
/* Algorithm 3 (Nash 1975): rotate through phi + pi/2 instead, i.e.
 * (g_i', g_j') = (c (g_j + s g_i), -c (g_i + s_i g_j)); rho is kept and the
 * data move.  A pair that needs no rotation is turned by pi/2 (c = 1). */
const bool update = rotate || exchange;
%else:
/* Algorithm 2 (Hestenes 1958) exchanges the packed-diagonal entries of i
 * and j (d and rho, below) -- no data move -- and the plain rotation of
 * the exchanged pair equals this one with the roles of g_i, g_j swapped. */
const bool update = rotate;
%endif
cjac_real part_i = 0, part_j = 0;
if (update) {
%if vectorized:
    cjac_rows part_i_rows = CJAC_ROWS_ZERO, part_j_rows = CJAC_ROWS_ZERO;
    for (int row = 0; row < vector_end; row += CJAC_ROWS) {
        const cjac_rows x = CJAC_ROWS_LOAD(${at("gi", "row")});
        const cjac_rows y = CJAC_ROWS_LOAD(${at("gj", "row")});
        const cjac_rows xn = cjac_rows_scale_1p(cm1, cjac_rows_axpy(s_i, y, x));
        const cjac_rows yn = cjac_rows_scale_1p(cm1, cjac_rows_axpy(s_j, x, y));
        CJAC_ROWS_STORE(${at("gi", "row")}, xn);
        CJAC_ROWS_STORE(${at("gj", "row")}, yn);
        part_i_rows = cjac_rows_abs2_acc(xn, part_i_rows);
        part_j_rows = cjac_rows_abs2_acc(yn, part_j_rows);
    }
    part_i = cjac_rows_sum_real(part_i_rows);
    part_j = cjac_rows_sum_real(part_j_rows);
%endif
    for (int row = ${scalar_from}; row < m; row += ${row_step}) {
        const cjac_elem x = CJAC_LOAD(gi, row, ldg), y = CJAC_LOAD(gj, row, ldg);
%if rotation == 3:
        cjac_elem xn = cjac_scale_1p(cm1, cjac_axpy(s_i, y, x));
        cjac_elem yn = cjac_scale_1p(cm1, cjac_axpy(s_j, x, y));
        if (exchange) {
            const cjac_elem old_xn = xn;
            xn = yn;
            yn = -old_xn;
        }
%else:
        const cjac_elem xn = cjac_scale_1p(cm1, cjac_axpy(s_i, y, x));
        const cjac_elem yn = cjac_scale_1p(cm1, cjac_axpy(s_j, x, y));
%endif
        CJAC_STORE(gi, row, ldg, xn);
        CJAC_STORE(gj, row, ldg, yn);
        part_i = cjac_abs2_acc(xn, part_i);
        part_j = cjac_abs2_acc(yn, part_j);
    }
}
/* The new diagonal is recomputed from the new columns (Algorithm 4.5). */
%if sum_real_two:
cjac_real d_i, d_j;
${sum_real_two.format('part_i', 'part_j', 'd_i', 'd_j')};
%else:
const cjac_real d_i = ${sum_real.format('part_i', 2)};
const cjac_real d_j = ${sum_real.format('part_j', 3)};
%endif
/* Numerically dependent columns of one sign: the trigonometric rotations
 * leave in the shorter one only what their own rounding puts there (the
 * error of t, ~tol relative, times the longer column, so for two parallel
 * columns a multiple of the longer one again, or, for several columns in
 * a smaller subspace, a vector of that subspace), and the next sweeps
 * rotate that remainder on and on, shrinking it by tol or by the cosine of
 * its partners each time, until it underflows.  A column whose squared
 * norm fell to tol^2 times its peak is below the rounding that its own
 * history left in it, i.e. below what the data determine: it becomes
 * exactly zero (a perturbation of at most tol times the column at its
 * peak), orthogonal to everything from then on; it is zeroed after the
 * update of V, which is left alone (it holds the rotations applied).
 * Only with peak_rounding (above), and not after a hyperbolic rotation:
 * the near-dependency of a pair of opposite signs is decided by the test
 * of its difference above.
 * (Rotation 3 turns the data by pi/2: the peaks follow the data.) */
%if rotation == 3:
const cjac_real peak_i = fmax(exchange ? peak[Dj.rho] : peak[Di.rho], d_i);
const cjac_real peak_j = fmax(exchange ? peak[Di.rho] : peak[Dj.rho], d_j);
%else:
const cjac_real peak_i = fmax(peak[Di.rho], d_i), peak_j = fmax(peak[Dj.rho], d_j);
%endif
const bool deflate_i = update && !hyperbolic && d_i <= rounding * peak_i && d_i <= d_j;
const bool deflate_j = update && !hyperbolic && d_j <= rounding * peak_j && !deflate_i;
%if accumulate_v:
if (update) {
    ${space} ${store_ctype} *vi = CJAC_COLUMN(V, Di.rho, ldv);
    ${space} ${store_ctype} *vj = CJAC_COLUMN(V, Dj.rho, ldv);
%if vectorized:
    const int vector_end_v = mv - mv % CJAC_ROWS;
    for (int row = 0; row < vector_end_v; row += CJAC_ROWS) {
        const cjac_rows x = CJAC_ROWS_LOAD(${at("vi", "row")});
        const cjac_rows y = CJAC_ROWS_LOAD(${at("vj", "row")});
        CJAC_ROWS_STORE(${at("vi", "row")}, cjac_rows_scale_1p(cm1, cjac_rows_axpy(s_i, y, x)));
        CJAC_ROWS_STORE(${at("vj", "row")}, cjac_rows_scale_1p(cm1, cjac_rows_axpy(s_j, x, y)));
    }
%endif
    for (int row = ${scalar_from_v}; row < mv; row += ${row_step}) {
        const cjac_elem x = CJAC_LOAD(vi, row, ldv), y = CJAC_LOAD(vj, row, ldv);
        const cjac_elem xn = cjac_scale_1p(cm1, cjac_axpy(s_i, y, x));
        const cjac_elem yn = cjac_scale_1p(cm1, cjac_axpy(s_j, x, y));
%if rotation == 3:
        CJAC_STORE(vi, row, ldv, exchange ? yn : xn);
        CJAC_STORE(vj, row, ldv, exchange ? -xn : yn);
%else:
        CJAC_STORE(vi, row, ldv, xn);
        CJAC_STORE(vj, row, ldv, yn);
%endif
    }
}
%endif
if (deflate_i || deflate_j) {  /* here, not before V: PoCL runs this kernel 15% slower */
    ${space} ${store_ctype} *gz = deflate_i ? gi : gj;
    for (int row = ${first_row}; row < m; row += ${row_step})
        CJAC_STORE(gz, row, ldg, CJAC_ELEM_ZERO);
}
if (${leader}) {
    if (update) {
        D[i].d = deflate_i ? 0 : d_i;
        D[j].d = deflate_j ? 0 : d_j;
        peak[Di.rho] = peak_i;
        peak[Dj.rho] = peak_j;
    }
%if rotation == 2:
    if (exchange) {
        cjac_diag new_i = D[j], new_j = D[i];
        D[i] = new_i;
        D[j] = new_j;
    }
%endif
    if (rotate) {
        /* eq. (4.2), with |t| measured against the shorter column: the
         * rotation moves it by |t| sqrt(a_long / a_short) of its norm
         * (a plain |t| test stops early when the norms differ widely). */
        const cjac_real relative_move =
            fabs(t) * (sqrt(fmax(a_ii, a_jj)) / sqrt(fmin(a_ii, a_jj)));
        ${status} |= relative_move > sqrt(CJAC_EPS) / 2 ? (CJAC_ROTATED | CJAC_BIG)
                                                         : CJAC_ROTATED;
        ${rotations} += 1;
    } else if (nonorthogonal) {
        ${status} |= CJAC_BROKEN;
    } else if (!normal && a_arg != 0) {
        ${status} |= CJAC_TINY_COLUMN;
    }
    ${epilogue}
}
</%def>
