## Column bookkeeping between the phases of one solve, on the device.
##
## The J-factorization leaves G in a device buffer (column c at offset c * lds,
## pivot order, complex data interleaved); the sweeps want its columns sorted
## by sign, scaled by an exact power of two, bordered as eq. (4.1) of
## Novakovic & Singer (2011) and stored in their layout.  These kernels do
## that in place of a round trip through the host:
##   cjac_column_max      max_i |g_ic| per column of the factor (for the
##                        power-of-two shift)
##   cjac_gather_columns  dst column j = 2^exponent * src column order[j],
##                        rows m.. zero; border columns j >= r are unit
##                        vectors e_(m + j - r) (eq. (4.1))
##   cjac_normalized_columns  dst column j = column order[j] of the sweeps'
##                        G over its norm (the eigenvectors u_j = g_j /
##                        ||g_j||, Sect. 2 of the 2011 paper, in the
##                        caller's order), dense and interleaved for the host,
##                        and whether every entry written is finite
## and, before the factorization, on M as the host uploaded it:
##   cjac_hermitian_stats what cljacobi.validation.symmetric_part records:
##                        the largest asymmetry, the largest and smallest
##                        nonzero modulus of the Hermitian part, finiteness
##   cjac_hermitian_load  the factorization's working matrix: 2^shift times
##                        the lower triangle of M, column-major
##
## Render parameters (all explicit, see cljacobi.host.operands.ColumnsSpec):
##   real_ctype        "double"
##   complex_          complex data (the factor and dst of
##                     cjac_normalized_columns interleaved cjac_real2)
##   layout            the sweeps' storage of complex G (arith.element)
##   store_ctype       what the sweeps' G holds: "cjac_real", or "cjac_real2"
##                     for interleaved complex data
##   work_group_size   work-items of the per-column kernels (a power of two)
##   size_defines      #define WG (work_group_size), HT (the side of the
##                     square tiles of the Hermitian kernels' work-groups) and
##                     HB (the side of the block of M one such work-group
##                     covers, a multiple of HT), as the spec decided them
##   signatures        every kernel's parameter list (ColumnsSpec.signatures;
##                     the host binds the arguments by name)
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude(real_ctype)}

${size_defines}
#if WG < 1 || (WG & (WG - 1)) != 0
#error "WG must be a power of two (cljacobi.host.operands.ColumnsSpec)"
#endif
${arith.workgroup_sum(work_group_size)}
${arith.element(real_ctype, complex_, layout)}

/* The larger of a and b; NaN if either is (fmax would drop a NaN). */
inline cjac_real cjac_max_nan(const cjac_real a, const cjac_real b)
{
    return isnan(a) || a > b ? a : b;
}

/* Whether x (both parts of a complex x) is finite. */
inline bool cjac_elem_finite(const cjac_elem x)
{
%if complex_:
    return isfinite(x.x) && isfinite(x.y);
%else:
    return isfinite(x);
%endif
}

/* 2^e x, exactly. */
inline cjac_elem cjac_ldexp(const cjac_elem x, const int e)
{
%if complex_:
    return (cjac_real2)(ldexp(x.x, e), ldexp(x.y, e));
%else:
    return ldexp(x, e);
%endif
}

/* One work-group per column c < columns: out[c] = max_i<m |src[c * lds + i]|
 * (a maximum: the result does not depend on the reduction order). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_column_max(${signatures["cjac_column_max"].parameters})
{
    __local cjac_real scratch[WG];
    const int c = get_group_id(0), lid = get_local_id(0);
    __global const cjac_elem *column = src + (size_t)c * lds;
    cjac_real largest = 0;
    for (int i = lid; i < m; i += WG)
        largest = cjac_max_nan(cjac_elem_abs(column[i]), largest);
    scratch[lid] = largest;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width /= 2) {
        if (lid < width)
            scratch[lid] = cjac_max_nan(scratch[lid + width], scratch[lid]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        out[c] = scratch[0];
}

/* Grid (rows >= ldd, r_pad): row i of column j of the bordered, sorted and
 * scaled factor.  ldexp is exact (the shift keeps every entry normal, see
 * cljacobi.scaling.factor_shift). */
__kernel void cjac_gather_columns(${signatures["cjac_gather_columns"].parameters})
{
    const int i = get_global_id(0), j = get_global_id(1);
    if (i >= ldd)
        return;
    cjac_elem value;
    if (j < r)
        value = i < m ? cjac_ldexp(src[(size_t)order[j] * lds + i], exponent) : CJAC_ELEM_ZERO;
    else
        value = cjac_from_real(i == m + (j - r) ? 1 : 0);
    __global ${store_ctype} *column = CJAC_COLUMN(dst, j, ldd);
    CJAC_STORE(column, i, ldd, value);
}

/* One work-group per column j: dst[j * ldd + i] = g_i / ||g|| for i < m,
 * g = column order[j] of the sweeps' G; ||g||^2 summed in a fixed order.
 * nonfinite[0] (0 before the launch) is set to 1 where an entry written is
 * not finite, so that the host need not read the result again to know. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_normalized_columns(${signatures["cjac_normalized_columns"].parameters})
{
    __local cjac_real scratch[WG];
    const int j = get_group_id(0), lid = get_local_id(0);
    __global const ${store_ctype} *column = CJAC_COLUMN(src, order[j], lds);
    cjac_real part = 0;
    for (int i = lid; i < m; i += WG)
        part = cjac_abs2_acc(CJAC_LOAD(column, i, lds), part);
    const cjac_real norm = sqrt(cjac_workgroup_sum(scratch, part));
    bool finite = true;
    for (int i = lid; i < m; i += WG) {
        const cjac_elem u = CJAC_LOAD(column, i, lds) / norm;
        finite = finite && cjac_elem_finite(u);
        dst[(size_t)j * ldd + i] = u;
    }
    if (!finite)
        nonfinite[0] = 1;  /* every such work-item stores the same value */
}

/* M as uploaded (n x n, rows of `src` at stride ldr): M itself by rows
 * (rows_are_rows = 1), or M^T by rows, i.e. M by columns (0).  Entry (i, j)
 * of M; the tiles below read `src` along its rows whichever it holds. */
#define CJAC_SRC(r, c) src[(size_t)(r) * ldr + (c)]

/* Stored tile (r0, c0) of `src` (the rows it holds, read along them) into
 * `tile`: tile[ly][lx] = src(r0 + ly, c0 + lx), or with `transposed`
 * tile[lx][ly]; zero outside the n x n matrix. */
#define CJAC_HT_STRIDE (HT + 1)
inline void cjac_stored_tile(__global const cjac_elem *src, const int ldr, const int n,
                             const int r0, const int c0, const bool transposed,
                             __local cjac_elem *tile)
{
    const int lx = get_local_id(0), ly = get_local_id(1);
    const cjac_elem x = r0 + ly < n && c0 + lx < n ? CJAC_SRC(r0 + ly, c0 + lx)
                                                   : CJAC_ELEM_ZERO;
    tile[transposed ? lx * CJAC_HT_STRIDE + ly : ly * CJAC_HT_STRIDE + lx] = x;
}

/* low[ly][lx] = m_(i0+ly, j0+lx): M's tile (i0, j0), from stored tile
 * (i0, j0) when the stored rows are M's rows, else stored tile (j0, i0)
 * transposed. */
inline void cjac_lower_tile(__global const cjac_elem *src, const int ldr, const int n,
                            const int rows_are_rows, const int i0, const int j0,
                            __local cjac_elem *low)
{
    if (rows_are_rows)
        cjac_stored_tile(src, ldr, n, i0, j0, false, low);
    else
        cjac_stored_tile(src, ldr, n, j0, i0, true, low);
}

/* high[ly][lx] = m_(j0+lx, i0+ly), the mirrored entries of low: M's tile
 * (j0, i0) transposed, from stored tile (j0, i0) transposed when the stored
 * rows are M's rows, else stored tile (i0, j0) as it is. */
inline void cjac_mirror_tile(__global const cjac_elem *src, const int ldr, const int n,
                             const int rows_are_rows, const int i0, const int j0,
                             __local cjac_elem *high)
{
    if (rows_are_rows)
        cjac_stored_tile(src, ldr, n, j0, i0, true, high);
    else
        cjac_stored_tile(src, ldr, n, i0, j0, false, high);
}

/* Grid (blocks * HT, blocks * HT), work-groups HT x HT: work-group (bj, bi)
 * with bi >= bj covers block (bi, bj) of HB x HB entries, the others return
 * at once (uniformly).  Over the entries (i, j) of the block with i >= j,
 * i, j < n (s_ij = m_ij, s_ii = Re m_ii: the Hermitian part from the lower
 * triangle, as cljacobi.validation.symmetric_part builds it):
 *   stats[4 g + 0]  max |m_ij - conj(m_ji)| (both triangles of a diagonal
 *                   block: 2 |Im m_ii| on the diagonal), NaN dropped
 *   stats[4 g + 1]  max |s_ij|
 *   stats[4 g + 2]  min |s_ij| over s_ij != 0 (INFINITY if none)
 *   stats[4 g + 3]  2 if some s_ij is not finite, else 1 if some entry of M
 *                   in the block or its mirror is not (either triangle,
 *                   either part), else 0
 * with g = bi * blocks + bj.  Maxima and minima are exact, so the host's
 * reduction over the blocks gives symmetric_part's values in any order. */
__kernel __attribute__((reqd_work_group_size(HT, HT, 1)))
void cjac_hermitian_stats(${signatures["cjac_hermitian_stats"].parameters})
{
    __local cjac_elem low[HT * CJAC_HT_STRIDE], high[HT * CJAC_HT_STRIDE];
    __local cjac_real scratch[4 * HT * HT];
    const int bj = get_group_id(0), bi = get_group_id(1), blocks = get_num_groups(0);
    if (bj > bi)
        return;  /* uniform over the work-group, before any barrier */
    const int lx = get_local_id(0), ly = get_local_id(1), lid = ly * HT + lx;
    cjac_real asymmetry = 0, largest = 0, smallest = INFINITY, nonfinite = 0;
    /* The tiles of the block within M, on or below the diagonal (loop
     * bounds the same for every work-item: no branch around a barrier). */
    const int rows = min(HB, n - bi * HB), columns = min(HB, n - bj * HB);
    for (int ti = 0; ti < rows; ti += HT) {
        const int last = bi == bj ? ti : columns - 1;
        for (int tj = 0; tj <= last; tj += HT) {
            const int i0 = bi * HB + ti, j0 = bj * HB + tj;
            barrier(CLK_LOCAL_MEM_FENCE);  /* the tiles before are read */
            cjac_lower_tile(src, ldr, n, rows_are_rows, i0, j0, low);
            cjac_mirror_tile(src, ldr, n, rows_are_rows, i0, j0, high);
            barrier(CLK_LOCAL_MEM_FENCE);
            const int i = i0 + ly, j = j0 + lx;
            if (i < n && j < n) {
                const cjac_elem m_ij = low[ly * CJAC_HT_STRIDE + lx];
                const cjac_elem m_ji = high[ly * CJAC_HT_STRIDE + lx];
                asymmetry = fmax(asymmetry, cjac_elem_abs(m_ij - cjac_conj(m_ji)));
                if (!cjac_elem_finite(m_ij) || !cjac_elem_finite(m_ji))
                    nonfinite = fmax(nonfinite, 1);
                if (i >= j) {
                    const cjac_real size = i == j ? fabs(cjac_real_part(m_ij))
                                                  : cjac_elem_abs(m_ij);
                    if (!isfinite(size))
                        nonfinite = 2;
                    else {
                        largest = fmax(largest, size);
                        if (size > 0)
                            smallest = fmin(smallest, size);
                    }
                }
            }
        }
    }
    scratch[lid] = asymmetry;
    scratch[HT * HT + lid] = largest;
    scratch[2 * HT * HT + lid] = smallest;
    scratch[3 * HT * HT + lid] = nonfinite;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = HT * HT / 2; width > 0; width /= 2) {
        if (lid < width) {
            scratch[lid] = fmax(scratch[lid], scratch[lid + width]);
            scratch[HT * HT + lid] = fmax(scratch[HT * HT + lid], scratch[HT * HT + lid + width]);
            scratch[2 * HT * HT + lid] = fmin(scratch[2 * HT * HT + lid],
                                              scratch[2 * HT * HT + lid + width]);
            scratch[3 * HT * HT + lid] = fmax(scratch[3 * HT * HT + lid],
                                              scratch[3 * HT * HT + lid + width]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid < 4)
        stats[4 * ((size_t)bi * blocks + bj) + lid] = scratch[lid * HT * HT];
}

/* Grid and work-groups as cjac_hermitian_stats (only M's lower tiles are
 * read): dst[j * ldd + i] = 2^shift
 * s_ij for i >= j (s_ii = Re m_ii), the lower triangle of the Hermitian part
 * column-major, what the factorization reads (ldexp is exact: the shift
 * keeps the entries normal, cljacobi.scaling.matrix_shift); the entries
 * above the diagonal are not written. */
__kernel __attribute__((reqd_work_group_size(HT, HT, 1)))
void cjac_hermitian_load(${signatures["cjac_hermitian_load"].parameters})
{
    __local cjac_elem low[HT * CJAC_HT_STRIDE];
    const int bj = get_group_id(0), bi = get_group_id(1);
    if (bj > bi)
        return;  /* uniform over the work-group, before any barrier */
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int rows = min(HB, n - bi * HB), columns = min(HB, n - bj * HB);
    for (int ti = 0; ti < rows; ti += HT) {
        const int last = bi == bj ? ti : columns - 1;
        for (int tj = 0; tj <= last; tj += HT) {
            const int i0 = bi * HB + ti, j0 = bj * HB + tj;
            barrier(CLK_LOCAL_MEM_FENCE);
            cjac_lower_tile(src, ldr, n, rows_are_rows, i0, j0, low);
            barrier(CLK_LOCAL_MEM_FENCE);
            /* column j0 + ly, row i0 + lx: along the columns of dst */
            const int i = i0 + lx, j = j0 + ly;
            if (i < n && j < n && i >= j) {
                const cjac_elem m_ij = low[lx * CJAC_HT_STRIDE + ly];
                dst[(size_t)j * ldd + i] =
                    cjac_ldexp(i == j ? cjac_from_real(cjac_real_part(m_ij)) : m_ij, shift);
            }
        }
    }
}
