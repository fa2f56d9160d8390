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
##                        caller's order), dense and interleaved for the host
##
## Render parameters (all explicit, see cljacobi.host.operands.ColumnsSpec):
##   real_ctype        "double"
##   complex_          complex data (the factor and dst of
##                     cjac_normalized_columns interleaved cjac_real2)
##   layout            the sweeps' storage of complex G (arith.element)
##   store_ctype       what the sweeps' G holds: "cjac_real", or "cjac_real2"
##                     for interleaved complex data
##   work_group_size   work-items of the per-column kernels (a power of two)
##   size_defines      #define WG (work_group_size), as the spec decided it
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
 * g = column order[j] of the sweeps' G; ||g||^2 summed in a fixed order. */
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
    for (int i = lid; i < m; i += WG)
        dst[(size_t)j * ldd + i] = CJAC_LOAD(column, i, lds) / norm;
}
