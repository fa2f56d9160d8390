## Shared arithmetic for the cljacobi kernel families.
##
## Imported by the other templates with
##     <%namespace name="arith" file="arith.cl.mako"/>
## Every def takes its specialization explicitly; nothing here reads globals.
##
## Render parameters used by the defs:
##   real_ctype        "double" (or "float" on devices without fp64)
##   work_group_size   threads per work-group (a power of two)

<%def name="prelude(real_ctype)">
%if real_ctype == "double":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define CJAC_EPS DBL_EPSILON
%else:
#define CJAC_EPS FLT_EPSILON
%endif
typedef ${real_ctype} cjac_real;

/* Packed diagonal entry (d, rho, j) of Novakovic & Singer 2011, Fig. 3:
 * the squared column norm, the physical column index, the sign from J. */
typedef struct __attribute__((aligned(16))) {
    cjac_real d;
    int rho;
    int j;
} cjac_diag;

/* Convergence status bits per work-group and step, eq. (4.2). */
#define CJAC_ROTATED 1   /* a rotation was applied (|t| <= sqrt(eps)/2)       */
#define CJAC_BIG     2   /* a rotation with |t| > sqrt(eps)/2 was applied      */
#define CJAC_BROKEN  4   /* hyperbolic pair numerically dependent: not rotated */
</%def>

<%def name="workgroup_sum(work_group_size)">
/* Sum of one value per work-item in a fixed tree order (bitwise reproducible).
 * Every work-item gets the result. `scratch` holds work_group_size values. */
inline cjac_real cjac_workgroup_sum(__local cjac_real *scratch, const cjac_real x)
{
    const int lid = get_local_id(0);
    scratch[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
%for width in [2 ** e for e in range(work_group_size.bit_length() - 2, -1, -1)]:
    if (lid < ${width}) scratch[lid] += scratch[lid + ${width}];
    barrier(CLK_LOCAL_MEM_FENCE);
%endfor
    const cjac_real sum = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);  /* scratch may be reused at once */
    return sum;
}
</%def>

<%def name="rotation_functions()">
/* Tangent of a trigonometric rotation annihilating a_ij of the 2x2 pivot block
 * [a_ii a_ij; a_ij a_jj] (same signs in J).  cot 2phi = (a_jj - a_ii) / (2 a_ij),
 * t = tan phi = sign(kappa) / (|kappa| + sqrt(1 + kappa^2)); for
 * |kappa| >= sqrt(2/eps), t = 1/(2 kappa) to the working precision
 * (Novakovic & Singer 2011, Sect. 2, eq. (2.4) and the theta/t relation),
 * evaluated as a_ij / (a_jj - a_ii): kappa overflows when the squared norms
 * are more than ~2^1024 apart, and t = 0 would leave the pair unrotated. */
inline cjac_real cjac_trig_tangent(const cjac_real a_ii, const cjac_real a_jj,
                                   const cjac_real a_ij)
{
    const cjac_real kappa = (a_jj - a_ii) / (2 * a_ij);
    const cjac_real abs_kappa = fabs(kappa);
    if (abs_kappa >= sqrt(2 / CJAC_EPS))
        return a_ij / (a_jj - a_ii);  /* = 1/(2 kappa), finite where kappa overflows */
    return copysign(1 / (abs_kappa + sqrt(fma(kappa, kappa, 1))), kappa);
}

/* Tangent of a hyperbolic rotation (opposite signs in J):
 * coth 2phi = -(a_ii + a_jj) / (2 a_ij), t = tanh phi
 * = sign(kappa) / (|kappa| + sqrt((|kappa| - 1)(|kappa| + 1))), eq. (2.5).
 * Returns 0 when |kappa| <= 1: the columns are numerically dependent and no
 * hyperbolic rotation exists (the caller flags CJAC_BROKEN). */
inline cjac_real cjac_hyp_tangent(const cjac_real a_ii, const cjac_real a_jj,
                                  const cjac_real a_ij)
{
    const cjac_real kappa = -(a_ii + a_jj) / (2 * a_ij);
    const cjac_real abs_kappa = fabs(kappa);
    if (!(abs_kappa > 1))
        return 0;
    if (abs_kappa >= sqrt(2 / CJAC_EPS))
        return -a_ij / (a_ii + a_jj);  /* = 1/(2 kappa), finite where kappa overflows */
    return copysign(1 / (abs_kappa + sqrt((abs_kappa - 1) * (abs_kappa + 1))), kappa);
}
</%def>
