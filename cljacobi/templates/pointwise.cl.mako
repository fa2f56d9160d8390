## Pointwise one-sided hyperbolic Jacobi: GPUJACH1 of Novakovic & Singer 2011, Sect. 4.
##
## Render parameters (all explicit, see cljacobi.host.pointwise_plan.PointwiseSpec):
##   real_ctype        "double" | "float"
##   work_group_size   threads per work-group; one work-group per pivot pair
##   accumulate_v      whether the step also updates V (V^{-T} of eq. (2.1))
##   complex_          complex Hermitian data (element type cjac_real2)
##   layout            complex storage, "interleaved" | "split" (arith.element)
##   store_ctype       what the G and V buffers hold: "cjac_real", or
##                     "cjac_real2" for interleaved complex data
##   strategy          "mm": pairs from the closed-form modified modulus stepper
##                     (Algorithms 4.3/4.4) kept in device memory; "table": pairs
##                     read from an uploaded step table (cljacobi.strategies:
##                     "me", "ring", "round-robin"), pairs[step * r/2 + k]
##   rotation          1, 2 or 3: the rotation algorithms of Zhou & Brent 1997,
##                     Sect. 2 (1 plain; 2 exchange the packed-diagonal entries,
##                     then rotate; 3 Nash's rotation through the complementary
##                     angle), see cjac_step
##   size_defines      #define WG (work_group_size) and CJAC_DIAG_BYTES (the
##                     host's packed-diagonal entry), as the plan decided them
##   diag_struct       typedef of cjac_diag, rendered from the host's dtype
##                     (cljacobi.host.diagonal)
##   signatures        every kernel's parameter list (PointwiseSpec.signatures;
##                     the host binds the arguments by name)
##
## Data layout: G is column-major with leading dimension ldg (rows padded and
## bordered as in eq. (4.1)); column c of G starts at G + c*ldg.  V likewise
## with ldv.  D is the packed diagonal (d, rho, j); work-groups address
## columns through rho and never swap them.  Elements are read and written
## only through arith.element's CJAC_LOAD/CJAC_STORE, so the bodies below are
## the same for real and complex data.  The stepper holds
## (ip, jp, i_blk, j_blk) per work-group (Algorithms 4.3 and 4.4).
<%namespace name="arith" file="arith.cl.mako"/>
<%namespace name="pair" file="pair.cl.mako"/>
${arith.prelude(real_ctype)}
${arith.workgroup_sum(work_group_size)}
${arith.element(real_ctype, complex_, layout)}
${arith.rotation_functions()}

${size_defines}
#if WG < 1 || (WG & (WG - 1)) != 0
#error "WG must be a power of two (cljacobi.host.pointwise_plan.PointwiseSpec)"
#endif

/* Packed diagonal entry (d, rho, j) of Novakovic & Singer 2011, Fig. 3:
 * the squared column norm, the physical column index, the sign from J. */
${diag_struct}
/* The host reads CJAC_DIAG_BYTES per entry: refuse to compile otherwise. */
typedef char cjac_diag_bytes_check[sizeof(cjac_diag) == CJAC_DIAG_BYTES ? 1 : -1];

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
 * diag(I_p, -I_{r-p})) and the peaks of columns 2k and 2k+1 (see cjac_step;
 * with keep_peaks those of a blocked phase before, raised to the norms), and
 * initializes its stepper slot. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_precompute(${signatures["cjac_precompute"].parameters})
{
    __local cjac_real scratch[WG];
    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    for (int c = 2 * k; c <= 2 * k + 1; ++c) {
        __global const ${store_ctype} *g = CJAC_COLUMN(G, c, ldg);
        cjac_real part = 0;
        for (int row = lid; row < m; row += WG)
            part = cjac_abs2_acc(CJAC_LOAD(g, row, ldg), part);
        const cjac_real d = cjac_workgroup_sum(scratch, part);
        if (lid == 0) {
            D[c].d = d;
            D[c].rho = c;
            D[c].j = c < p ? 1 : -1;
            peak[c] = keep_peaks ? fmax(peak[c], d) : d;
        }
    }
    if (lid == 0)
        stepper[k] = cjac_stepper_init(k, r);
}

/* Algorithm 4.5 (Jacobi_Step): work-group k orthogonalizes the columns
 * rho(i), rho(j) of its pivot pair (i, j), i < j, then advances its stepper.
 * peak[c] is the largest squared norm physical column c has had in this run:
 * with peak_rounding its data carry rounding errors of that size times eps,
 * true of a factor whose columns carry its scale (a J-factor from complete
 * pivoting, R^* after a row-sorted pivoted QR); a factor whose rows may be
 * graded (hsvd's G) keeps each entry to the accuracy of its row instead, far
 * below its column's peak, and without peak_rounding only an exact
 * dependency is one. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_step(${signatures["cjac_step"].parameters})
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
    ${pair.pair_step("__global", store_ctype, rotation, accumulate_v, "lid", "WG",
                     "cjac_workgroup_sum(scratch, {})", "cjac_elem_workgroup_sum(scratch, {})",
                     "lid == 0", "status[k]", "rotations[k]",
                     "stepper[k] = cjac_stepper_update(s, r);" if strategy == "mm" else "")}
}

%if strategy != "mm":
/* A round of a certified sweep (host.pointwise, PointwiseHSVD._certified_sweep):
 * the positions in the packed diagonal D that hold the physical columns of
 * the round's pairs now, members[first..first + count), as cjac_step reads
 * them (row 0 of `table`, i < j).  One work-group: D's permutation rho
 * inverted into `position`, then the pairs looked up; the rounds before
 * have moved the columns (rotation algorithm 2), so this runs between them
 * on the device instead of a read of D on the host. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_round_positions(${signatures["cjac_round_positions"].parameters})
{
    const int lid = get_local_id(0);
    for (int c = lid; c < r; c += WG)
        position[D[c].rho] = c;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int k = lid; k < count; k += WG) {
        const int2 columns = members[first + k];
        const int i = position[columns.x], j = position[columns.y];
        table[k] = (int2)(min(i, j), max(i, j));
    }
}

%endif
/* Check_Convergence and Reset_Convergence: bitwise-OR of the per-work-group
 * status words and the sum of the rotation counters in a fixed order, by one
 * work-group; both arrays are zeroed for the next sweep. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_sweep_status(${signatures["cjac_sweep_status"].parameters})
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
