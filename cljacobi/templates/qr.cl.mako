## Householder QR with column pivoting of one large matrix on the device
## (cljacobi.host.qr): B[:, columns] = Q R, the factorization LAPACK xGEQP3
## computes (the reflectors of xLARFG, H_j = I - tau_j v_j v_j^H,
## Q = H_0 H_1 ... H_{k-1}), for svd's preconditioning (Drmač & Veselić 2008).
##
## One kernel, cjac_qr_step, and one launch per reflector.  B (rows x cols,
## rows >= cols, column-major with leading dimension ld, its rows already
## sorted by the host) is overwritten as xGEQP3 overwrites it: R on and above
## the diagonal, v_j below it (v_j's leading 1 implicit), tau in `tau`.  A
## launch for step j (state[J] = j)
##   1. applies H_j^H to the trailing columns c > j, one work-group a column:
##      w = v_j^H b_c, b_c -= conj(tau_j) w v_j (rows j..), the column read
##      twice (its second reading mostly from the cache), and measures the
##      column's norm over rows j + 1.. (the next step's pivot norm) from the
##      updated entries.  The norms are recomputed every step, not downdated
##      as xGEQP3 does (no cancellation to guard against); the sum of squares
##      is scaled by the power of two of the column's norm a step earlier (an
##      upper bound), and summed again at the scale of its largest entry when
##      that entry's square would lose digits to underflow (graded rows);
##   2. its last work-group to finish (a ticket counter, as bunch_parlett's)
##      picks the column of largest norm among c > j (the first of equal
##      ones), swaps it into position j + 1 (the whole column, as xGEQP3 does,
##      and its norm and its place in `columns`), and forms H_{j+1} from it
##      (xLARFG: beta, tau and the scaled v), then sets state[J] = j + 1.
## The first launch (j = -1) only measures the norms over all rows and forms
## H_0.  The host enqueues all cols launches without reading anything back.
## Every sum has a fixed order (a tree over the work-group), so the results
## are bitwise repeatable on a device.
##
## Render parameters (cljacobi.host.qr.ColumnQRSpec):
##   complex_        complex data (cjac_elem = (re, im) pairs)
##   global_fence    the ticket's fence (arith.global_fence)
##   work_group_size work-items per column (a power of two)
##   state_defines   #define lines of the state's words
##   signatures      the kernel's arguments (cljacobi.host.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
<%namespace name="batched_qr" file="batched_qr.cl.mako"/>
${arith.prelude("double")}
${arith.element("double", complex_, "interleaved", with_workgroup_sum=False)}
${arith.global_fence("CJAC_QR", global_fence)}
${batched_qr.qr_helpers(complex_)}

#define WG ${work_group_size}
/* A (peak, sum of squares) pair. */
typedef double2 cjac_qr_pair;
${state_defines}
/* Squares of scaled entries are summed as they are while the largest entry,
 * scaled, lies in [2^-LOW, 2^HIGH]: the entries that underflow below it are
 * then beneath the sum's rounding. */
#define CJAC_QR_SCALED_LOW 0x1p-440
#define CJAC_QR_SCALED_HIGH 0x1p440

/* The work-group's sum of one element per work-item, in a fixed tree order;
 * every work-item gets it. */
inline cjac_elem cjac_qr_sum(__local cjac_elem *scratch, const cjac_elem x)
{
    const int lid = get_local_id(0);
    scratch[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width >>= 1) {
        if (lid < width)
            scratch[lid] = scratch[lid] + scratch[lid + width];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const cjac_elem sum = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);  /* scratch may be reused at once */
    return sum;
}

/* The work-group's largest value and sum of one (peak, sum) pair per
 * work-item (the sum in a fixed tree order); every work-item gets them. */
inline cjac_qr_pair cjac_qr_peak_sum(__local cjac_qr_pair *scratch, const cjac_qr_pair x)
{
    const int lid = get_local_id(0);
    scratch[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width >>= 1) {
        if (lid < width) {
            const cjac_qr_pair a = scratch[lid], b = scratch[lid + width];
            scratch[lid] = (cjac_qr_pair)(fmax(a.x, b.x), a.y + b.y);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const cjac_qr_pair result = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return result;
}

/* ||x[first..rows)|| by the work-group, x[i] read through GET(i): the sum of
 * the squares scaled by 2^-e, e the exponent of `bound` (an upper bound of
 * the norm, or 0 for none), summed again at the scale of the largest entry
 * when that one, scaled, falls outside [2^-LOW, 2^HIGH] (LAPACK xNRM2's
 * purpose; the second sum is rare).  Every work-item gets it; every one
 * reaches every barrier. */
<%def name="group_norm(name, pointer, GET)">
inline cjac_real ${name}(${pointer} x, const int first, const int rows, const cjac_real bound,
                         __local cjac_qr_pair *scratch)
{
    const int lid = get_local_id(0);
    const int e = bound > 0 ? clamp(ilogb(bound), -1000, 1000) : 0;
    cjac_real down = ldexp((cjac_real)1, -e);
    cjac_qr_pair peak_sum = (cjac_qr_pair)(0, 0);
    for (int i = first + lid; i < rows; i += WG) {
        const cjac_elem a = ${GET.format("x", "i")};
        peak_sum.x = fmax(peak_sum.x, cjac_elem_peak(a));
        peak_sum.y = cjac_abs2_acc(cjac_scale(down, a), peak_sum.y);
    }
    peak_sum = cjac_qr_peak_sum(scratch, peak_sum);
    const cjac_real scaled_peak = peak_sum.x * down;
    const int again = peak_sum.x > 0 && (scaled_peak < CJAC_QR_SCALED_LOW
                                         || scaled_peak > CJAC_QR_SCALED_HIGH);
    const int f = again ? clamp(ilogb(peak_sum.x), -1000, 1000) : e;
    down = ldexp((cjac_real)1, -f);
    cjac_qr_pair resum = (cjac_qr_pair)(0, 0);
    for (int i = first + lid; i < rows && again; i += WG)
        resum.y = cjac_abs2_acc(cjac_scale(down, ${GET.format("x", "i")}), resum.y);
    resum = cjac_qr_peak_sum(scratch, resum);
    return sqrt(again ? resum.y : peak_sum.y) * ldexp((cjac_real)1, f);
}
</%def>
${group_norm("cjac_qr_column_norm", "__global const cjac_elem *", "{}[{}]")}
${group_norm("cjac_qr_volatile_norm", "volatile __global const cjac_elem *", "{}[{}]")}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_qr_step(${signatures["cjac_qr_step"].parameters})
{
    __local cjac_elem sums[WG];
    __local cjac_qr_pair peaks[WG];
    __local int indices[WG];
    __local int last, pivot, reflect;
    __local cjac_elem reflector_scale;
    const int lid = get_local_id(0);
    const int j = state[CJAC_QR_J];

    /* 1. Column c = j + 1 + group: H_j^H applied (j >= 0), then its norm over
     *    rows j + 1.. (a launch's grid covers at least one work-group; one
     *    past the last column does nothing).  Work-items loop over a
     *    uniform count, so every one reaches every barrier. */
    const int c = j + 1 + get_group_id(0);
    const int active = c < cols;
    __global cjac_elem *column = W + (size_t)min(c, cols - 1) * ld;
    const int reflecting = active && j >= 0;
    __global const cjac_elem *v = W + (size_t)max(j, 0) * ld;
    cjac_elem w = CJAC_ELEM_ZERO;
    for (int i = j + lid; i < rows && reflecting; i += WG)
        w = cjac_dot_acc(i == j ? cjac_from_real(1) : v[i], column[i], w);
    w = cjac_qr_sum(sums, w);
    const cjac_elem f = reflecting ? -cjac_mul(cjac_conj(tau[j]), w) : CJAC_ELEM_ZERO;
    for (int i = j + lid; i < rows && reflecting; i += WG)
        column[i] = cjac_axpy(f, i == j ? cjac_from_real(1) : v[i], column[i]);
    barrier(CLK_GLOBAL_MEM_FENCE);
    const cjac_real norm = cjac_qr_column_norm(column, active ? j + 1 : rows, rows,
                                               active && j >= 0 ? norms[c] : 0, peaks);
    if (active && lid == 0)
        norms[c] = norm;

    /* The ticket: every work-group's stores published before it is taken, so
     * the last one to take it reads them all. */
    CJAC_QR_PUBLISH();
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        CJAC_QR_GLOBAL_FENCE();
        last = atomic_inc(&state[CJAC_QR_TICKET]) == (int)get_num_groups(0) - 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!last)
        return;  /* uniform over the work-group */
    CJAC_QR_GLOBAL_FENCE();

    /* 2. The pivot of step s = j + 1: the largest norm over columns s.. (the
     *    first of equal ones), read past the cache (other work-groups stored
     *    them). */
    const int s = j + 1;
    volatile __global cjac_real *stored_norms = norms;
    volatile __global cjac_elem *B = W;
    cjac_real best = -1;
    int best_index = cols;
    for (int q = s + lid; q < cols && s < steps; q += WG) {
        const cjac_real value = stored_norms[q];
        if (value > best) {  /* ascending q: the first of equal ones stays */
            best = value;
            best_index = q;
        }
    }
    peaks[lid].x = best;
    indices[lid] = best_index;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width >>= 1) {
        if (lid < width) {
            const cjac_real other = peaks[lid + width].x;
            const int other_index = indices[lid + width];
            if (other > peaks[lid].x
                    || (other == peaks[lid].x && other_index < indices[lid])) {
                peaks[lid].x = other;
                indices[lid] = other_index;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        pivot = indices[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int p = pivot;  /* cols when s = steps: nothing left */
    const int swapping = s < steps && p != s && p < cols;  /* p = cols: every norm NaN */
    volatile __global cjac_elem *column_s = B + (size_t)min(s, cols - 1) * ld;
    volatile __global cjac_elem *column_p = B + (size_t)min(p, cols - 1) * ld;
    for (int i = lid; i < rows && swapping; i += WG) {
        const cjac_elem swap = column_s[i];
        column_s[i] = column_p[i];
        column_p[i] = swap;
    }
    if (lid == 0 && swapping) {
        const cjac_real norm_s = stored_norms[s];
        stored_norms[s] = stored_norms[p];
        stored_norms[p] = norm_s;
        const int column_index = columns[s];
        columns[s] = columns[p];
        columns[p] = column_index;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);

    /* 3. H_s from column s (xLARFG on (alpha; x) = b_ss, b_{s+1..,s}): the
     *    norm of x by the work-group, the rest by work-item 0 (xLARFG itself,
     *    with its rescaling, where beta falls below SAFMIN). */
    const cjac_real x_norm = cjac_qr_volatile_norm(column_s, s < steps ? s + 1 : rows, rows,
                                                   0, peaks);
    if (lid == 0 && s < steps) {
        const cjac_elem alpha = column_s[s];
        cjac_real beta = -copysign(cjac_hypot(cjac_elem_abs(alpha), x_norm),
                                   cjac_real_part(alpha));
        cjac_elem t = CJAC_ELEM_ZERO, scale = CJAC_ELEM_ZERO;
        if (x_norm == 0 && cjac_imag_part(alpha) == 0) {
            beta = cjac_real_part(alpha);  /* H = I */
        } else if (fabs(beta) < CJAC_SAFMIN) {
            t = cjac_larfg(alpha, W + (size_t)s * ld + s + 1, 1, rows - s - 1, &beta, &scale);
        } else {
%if complex_:
            t = (cjac_qr_pair)((beta - alpha.x) / beta, -alpha.y / beta);
%else:
            t = (beta - alpha) / beta;
%endif
            scale = cjac_reciprocal(alpha - cjac_from_real(beta));
        }
        tau[s] = t;
        column_s[s] = cjac_from_real(beta);
        reflect = cjac_real_part(t) != 0 || cjac_imag_part(t) != 0;
        reflector_scale = scale;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const int scaling = s < steps && reflect;
    const cjac_elem scale = reflector_scale;
    for (int i = s + 1 + lid; i < rows && scaling; i += WG)
        column_s[i] = cjac_mul(scale, column_s[i]);
    if (lid == 0) {
        state[CJAC_QR_J] = s;
        state[CJAC_QR_TICKET] = 0;
    }
    /* Ends the work-group's last region at a barrier (PoCL, see bunch_parlett). */
    barrier(CLK_GLOBAL_MEM_FENCE);
}
