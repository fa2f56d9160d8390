## Pointwise one-sided hyperbolic Jacobi: GPUJACH1 of Novakovic & Singer 2011, Sect. 4.
##
## Render parameters (all explicit, see cljacobi.host.programs.KernelSpec):
##   real_ctype        "double" | "float"
##   work_group_size   threads per work-group; one work-group per pivot pair
##   accumulate_v      whether the step also updates V (V^{-T} of eq. (2.1))
##   strategy          "mm": pairs from the closed-form modified modulus stepper
##                     (Algorithms 4.3/4.4) kept in device memory; "table": pairs
##                     read from an uploaded step table (cljacobi.strategies:
##                     "me", "ring", "round-robin"), pairs[step * r/2 + k]
##   rotation          1, 2 or 3: the rotation algorithms of Zhou & Brent 1997,
##                     Sect. 2 (1 plain; 2 exchange the packed-diagonal entries,
##                     then rotate; 3 Nash's rotation through the complementary
##                     angle), see cjac_step
##
## Data layout: G is column-major with leading dimension ldg (rows padded and
## bordered as in eq. (4.1)); column c of G starts at G + c*ldg.  V likewise
## with ldv.  D is the packed diagonal (d, rho, j); work-groups address
## columns through rho and never swap them.  The stepper holds
## (ip, jp, i_blk, j_blk) per work-group (Algorithms 4.3 and 4.4).
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude(real_ctype)}
${arith.workgroup_sum(work_group_size)}
${arith.rotation_functions()}

#define WG ${work_group_size}

/* Algorithm 4.3 (Initialize_Stepper), 0-based: slot k starts on the
 * antidiagonal (k, r-1-k). */
inline int4 cjac_stepper_init(const int k, const int r)
{
    return (int4)(k, r - 1 - k, k, r - 1 - k);
}

/* Algorithm 4.4 (Update_Stepper), 0-based: the paper's test (ip+jp) > r-1 on
 * 1-based indices reads ip+jp >= r-1 here. */
inline int4 cjac_stepper_update(int4 s, const int r)
{
    if (s.x + s.y >= r - 1) {
        s.x += 1;
        if (s.x == s.y) {
            s.x -= r / 2;
            s.y = s.x;
        }
        s.z = s.x;
    } else {
        s.y += 1;
        s.w = s.y;
    }
    return s;
}

/* Algorithm 4.2 (Precompute_Data): work-group k sets up the packed diagonal
 * entries 2k and 2k+1 (squared norms, identity permutation, signs
 * diag(I_p, -I_{r-p})) and initializes its stepper slot. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_precompute(__global const cjac_real *G, const int ldg, const int m,
                     __global cjac_diag *D, __global int4 *stepper,
                     const int r, const int p)
{
    __local cjac_real scratch[WG];
    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    for (int c = 2 * k; c <= 2 * k + 1; ++c) {
        __global const cjac_real *g = G + (size_t)c * ldg;
        cjac_real part = 0;
        for (int row = lid; row < m; row += WG)
            part = fma(g[row], g[row], part);
        const cjac_real d = cjac_workgroup_sum(scratch, part);
        if (lid == 0) {
            D[c].d = d;
            D[c].rho = c;
            D[c].j = c < p ? 1 : -1;
        }
    }
    if (lid == 0)
        stepper[k] = cjac_stepper_init(k, r);
}

/* Algorithm 4.5 (Jacobi_Step): work-group k orthogonalizes the columns
 * rho(i), rho(j) of its pivot pair (i, j), i < j, then advances its stepper. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_step(__global cjac_real *G, const int ldg, const int m,
%if accumulate_v:
               __global cjac_real *V, const int ldv, const int mv,
%endif
%if strategy == "mm":
               __global cjac_diag *D, __global int4 *stepper,
%else:
               __global cjac_diag *D, __global const int2 *pairs, const int step,
%endif
%if rotation == 3:
               __global int *status, __global int *rotations, const int r,
               const int real_columns)
%else:
               __global int *status, __global int *rotations, const int r)
%endif
{
    __local cjac_real scratch[WG];
    const int k = get_group_id(0);
    const int lid = get_local_id(0);
%if strategy == "mm":
    const int4 s = stepper[k];
    const int i = s.z, j = s.w;
%else:
    /* Row `step` of the uploaded table (cljacobi.strategies.step_table),
     * positions i < j in the packed diagonal. */
    const int2 pair = pairs[(size_t)step * (r / 2) + k];
    const int i = pair.x, j = pair.y;
%endif
    const cjac_diag Di = D[i], Dj = D[j];
    __global cjac_real *gi = G + (size_t)Di.rho * ldg;
    __global cjac_real *gj = G + (size_t)Dj.rho * ldg;

    /* a_ij = g_rho(i)^T g_rho(j); a_ii = d_i, a_jj = d_j are kept up to date. */
    cjac_real part = 0;
    for (int row = lid; row < m; row += WG)
        part = fma(gi[row], gj[row], part);
    const cjac_real a_ij = cjac_workgroup_sum(scratch, part);
    const cjac_real a_ii = Di.d, a_jj = Dj.d;

    /* Relative orthogonality, eq. (2.3): rotate only if
     * |a_ij| > eps sqrt(a_ii) sqrt(a_jj) (a zero column never rotates).
     * Every decision below is uniform over the work-group; the barriers of
     * the reductions stay outside the conditional code. */
    const bool hyperbolic = Di.j != Dj.j;
    const bool nonorthogonal = fabs(a_ij) > CJAC_EPS * sqrt(a_ii) * sqrt(a_jj);
    cjac_real t = 0;
    if (nonorthogonal)
        t = hyperbolic ? cjac_hyp_tangent(a_ii, a_jj, a_ij)
                       : cjac_trig_tangent(a_ii, a_jj, a_ij);
    const bool rotate = t != 0;
    /* c = cos phi = 1/sqrt(1 + t^2) or ch = cosh phi = 1/sqrt(1 - t^2);
     * eqs. (2.4)/(2.5): g_i' = c (g_i - t g_j) or c (g_i + t g_j), and
     * g_j' = c (g_j + t g_i), each parenthesis one FMA. */
    const cjac_real c = hyperbolic ? 1 / sqrt((1 - t) * (1 + t)) : 1 / sqrt(fma(t, t, 1));
    const cjac_real t_i = hyperbolic ? t : -t;
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
     * complementary rotation (both norms drop by t a_ij, eq. (2.6)); as the
     * positions are sign-partitioned its positive member is at i already.
     * The decision uses the predicted new norms of eq. (2.6) with hyp = -1:
     * a_ii - t a_ij and a_jj + t a_ij (the current ones if not rotating). */
    const cjac_real new_ii = fma(-t, a_ij, a_ii);
    const cjac_real new_jj = fma(t, a_ij, a_jj);
%if rotation == 3:
    /* The border columns (physical index >= real_columns, eq. (4.1)) must stay
     * where the host strips them: Nash's turn would move their data. */
    const bool exchange = !hyperbolic && Di.rho < real_columns && Dj.rho < real_columns
                          && (Di.j > 0 ? new_ii < new_jj : new_ii > new_jj);
%else:
    const bool exchange = !hyperbolic && (Di.j > 0 ? new_ii < new_jj : new_ii > new_jj);
%endif
%endif
%if rotation == 3:
    /* Algorithm 3 (Nash 1975): rotate through phi + pi/2 instead, i.e.
     * (g_i', g_j') = (c (g_j + t g_i), -c (g_i - t g_j)); rho is kept and the
     * data move.  A pair that needs no rotation is turned by pi/2 (c = 1). */
    const bool moved = rotate || exchange;
%else:
    /* Algorithm 2 (Hestenes 1958) exchanges the packed-diagonal entries of i
     * and j (d and rho, below) -- no data move -- and the plain rotation of
     * the exchanged pair equals this one with the roles of g_i, g_j swapped. */
    const bool moved = rotate;
%endif
    cjac_real part_i = 0, part_j = 0;
    if (moved) {
        for (int row = lid; row < m; row += WG) {
            const cjac_real x = gi[row], y = gj[row];
%if rotation == 3:
            cjac_real xn = c * fma(t_i, y, x);
            cjac_real yn = c * fma(t, x, y);
            if (exchange) {
                const cjac_real old_xn = xn;
                xn = yn;
                yn = -old_xn;
            }
%else:
            const cjac_real xn = c * fma(t_i, y, x);
            const cjac_real yn = c * fma(t, x, y);
%endif
            gi[row] = xn;
            gj[row] = yn;
            part_i = fma(xn, xn, part_i);
            part_j = fma(yn, yn, part_j);
        }
    }
    /* The new diagonal is recomputed from the new columns (Algorithm 4.5). */
    const cjac_real d_i = cjac_workgroup_sum(scratch, part_i);
    const cjac_real d_j = cjac_workgroup_sum(scratch, part_j);
%if accumulate_v:
    if (moved) {
        __global cjac_real *vi = V + (size_t)Di.rho * ldv;
        __global cjac_real *vj = V + (size_t)Dj.rho * ldv;
        for (int row = lid; row < mv; row += WG) {
            const cjac_real x = vi[row], y = vj[row];
%if rotation == 3:
            const cjac_real xn = c * fma(t_i, y, x);
            const cjac_real yn = c * fma(t, x, y);
            vi[row] = exchange ? yn : xn;
            vj[row] = exchange ? -xn : yn;
%else:
            vi[row] = c * fma(t_i, y, x);
            vj[row] = c * fma(t, x, y);
%endif
        }
    }
%endif
    if (lid == 0) {
        if (moved) {
            D[i].d = d_i;
            D[j].d = d_j;
        }
%if rotation == 2:
        if (exchange) {
            cjac_diag new_i = D[j], new_j = D[i];
            D[i] = new_i;
            D[j] = new_j;
        }
%endif
        if (rotate) {
            /* eq. (4.2) */
            status[k] |= fabs(t) > sqrt(CJAC_EPS) / 2 ? (CJAC_ROTATED | CJAC_BIG) : CJAC_ROTATED;
            rotations[k] += 1;
        } else if (nonorthogonal) {
            status[k] |= CJAC_BROKEN;
        }
%if strategy == "mm":
        stepper[k] = cjac_stepper_update(s, r);
%endif
    }
}

/* Check_Convergence and Reset_Convergence: bitwise-OR of the per-work-group
 * status words and the sum of the rotation counters in a fixed order, by one
 * work-group; both arrays are zeroed for the next sweep. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_sweep_status(__global int *status, __global int *rotations, const int slots,
                       __global int *summary)
{
    __local int or_scratch[WG];
    __local int sum_scratch[WG];
    const int lid = get_local_id(0);
    int bits = 0, count = 0;
    for (int k = lid; k < slots; k += WG) {
        bits |= status[k];
        count += rotations[k];
        status[k] = 0;
        rotations[k] = 0;
    }
    or_scratch[lid] = bits;
    sum_scratch[lid] = count;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width /= 2) {
        if (lid < width) {
            or_scratch[lid] |= or_scratch[lid + width];
            sum_scratch[lid] += sum_scratch[lid + width];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        summary[0] = or_scratch[0];
        summary[1] = sum_scratch[0];
    }
}
