## Shared arithmetic for the cljacobi kernel families.
##
## Imported by the other templates with
##     <%namespace name="arith" file="arith.cl.mako"/>
## Every def takes its specialization explicitly; the only module-level name
## is STATUS_DEFINES, the status bits the host declares (not a specialization).
##
## Render parameters used by the defs:
##   real_ctype        "double" (or "float" on devices without fp64)
##   work_group_size   threads per work-group (a power of two)
<%!
    from cljacobi.host.status import STATUS_DEFINES
%>

<%def name="prelude(real_ctype, math='library')">
%if real_ctype == "double":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define CJAC_EPS DBL_EPSILON
#define CJAC_TINY DBL_MIN
%else:
#define CJAC_EPS FLT_EPSILON
#define CJAC_TINY FLT_MIN
%endif
typedef ${real_ctype} cjac_real;
%if math == "inline":
#ifdef __clang__
/* math = "inline" (CPUs): the scalar fma, sqrt, fabs, fmax, fmin and copysign
 * as clang's builtins, i.e. LLVM's intrinsics, one instruction each.  The
 * same operations, correctly rounded as OpenCL defines them; but PoCL 3.0
 * on a Rocket Lake target links its built-in library's functions (macros
 * for _cl_fma and the like, hence the #undef) without inlining them, and a
 * call per FMA costs more than the FMA. */
#undef fma
#define fma(a, b, c) __builtin_fma((a), (b), (c))
#undef sqrt
#define sqrt(x) __builtin_sqrt(x)
#undef fabs
#define fabs(x) __builtin_fabs(x)
#undef fmax
#define fmax(a, b) __builtin_fmax((a), (b))
#undef fmin
#define fmin(a, b) __builtin_fmin((a), (b))
#undef copysign
#define copysign(a, b) __builtin_copysign((a), (b))
#endif
%elif math != "library":
<% raise ValueError(f"unknown math {math!r}") %>
%endif

/* Convergence status bits per work-group and step, eq. (4.2)
 * (cljacobi.host.status.Status). */
${STATUS_DEFINES}
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

## The device-wide fence of a ticket counter (the last work-group of a launch
## to take its ticket reads what all the others stored): ${prefix}_GLOBAL_FENCE()
## and ${prefix}_PUBLISH(); `kind` "opencl" or "ptx"
## (cljacobi.host.factorization.global_fence_for).
<%def name="global_fence(prefix, kind)">
/* ${prefix}_GLOBAL_FENCE orders a work-item's global stores before its later
 * ones and its global loads after its earlier ones, for the whole device.
 * ${prefix}_PUBLISH is what every work-item does before the work-group's
 * barrier so that work-item 0's fence after it publishes the work-group's
 * stores: with PTX, nothing (bar.sync orders the work-group's stores before
 * work-item 0's membar.gl, and fences are cumulative in PTX's memory
 * model); with OpenCL 1.2 fences, which order one work-item's accesses
 * only, a fence of its own.  (NVIDIA's compiler turns
 * mem_fence(CLK_GLOBAL_MEM_FENCE) into membar.cta, a fence for the
 * work-group only: hence the PTX form there.) */
%if kind == "ptx":
#define ${prefix}_GLOBAL_FENCE() asm volatile("membar.gl;" ::: "memory")
#define ${prefix}_PUBLISH()
%elif kind == "opencl":
#define ${prefix}_GLOBAL_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#define ${prefix}_PUBLISH() mem_fence(CLK_GLOBAL_MEM_FENCE)
%else:
<% raise ValueError(f"unknown global_fence {kind!r}") %>
%endif
</%def>

## The sums of a pivot pair's ROW_SPLIT work-items (adjacent local ids, the
## caller's `part_row` 0 .. ROW_SPLIT - 1, ROW_SPLIT a macro): the pairwise
## tree ((x0 + x1) + (x2 + x3)) + ..., which every one of them computes from
## the same entries, so all end with the same bits.
<%def name="tree_sum(part)">
## The pairwise tree over the ROW_SPLIT entries of the array `part`, into part[0].
    for (int width = 1; width < ROW_SPLIT; width <<= 1)
        for (int q = 0; q < ROW_SPLIT; q += 2 * width)
            ${part}[q] += ${part}[q + width];
</%def>
## One barrier, between the stores and the loads; none after the loads: the
## caller gives each sum its own `sums` or passes a barrier before reusing it.
<%def name="pair_sum(name, ctype)">
inline ${ctype} ${name}(__local ${ctype} *sums, const int lid, const int part_row,
                        const ${ctype} x)
{
    sums[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    ${ctype} part[ROW_SPLIT];
    for (int q = 0; q < ROW_SPLIT; ++q)
        part[q] = sums[lid - part_row + q];
${tree_sum("part")}
    return part[0];
}
</%def>

<%def name="rotation_functions()">
/* Tangent of the rotation annihilating a_ij of the 2x2 pivot block
 * [a_ii a_ij; a_ij a_jj] (Novakovic & Singer 2011, Sect. 2), one formula for
 * both kinds, kappa = num / (2 a_ij):
 *   trigonometric (same signs in J), eq. (2.4): cot 2phi = kappa with
 *     num = a_jj - a_ii, t = tan phi = sign(kappa) / (|kappa| + sqrt(1 + kappa^2));
 *   hyperbolic (opposite signs), eq. (2.5): coth 2phi = kappa with
 *     num = -(a_ii + a_jj), t = tanh phi
 *     = sign(kappa) / (|kappa| + sqrt((|kappa| - 1)(|kappa| + 1))).
 * For |kappa| >= sqrt(2/eps), t = 1/(2 kappa) to the working precision (the
 * theta/t relation), evaluated as a_ij / num: kappa overflows when the
 * squared norms are more than ~2^1024 apart, and t = 0 would leave the pair
 * unrotated.  A hyperbolic pair with |kappa| <= 1 gives 0: the columns are
 * numerically dependent and no hyperbolic rotation exists (the caller flags
 * CJAC_BROKEN).  Near |kappa| = 1 (|t| -> 1) |kappa| - 1 is lost to
 * cancellation here; cjac_step computes it from the columns instead
 * (cjac_hyp_tangent_apart).  The kinds differ only in which operands the
 * same operations take, so work-items with pairs of both kinds run one
 * chain of divisions and roots, not each kind's in turn. */
inline cjac_real cjac_tangent(const cjac_real a_ii, const cjac_real a_jj, const cjac_real a_ij,
                              const bool hyperbolic)
{
    const cjac_real num = hyperbolic ? -(a_ii + a_jj) : a_jj - a_ii;
    const cjac_real kappa = num / (2 * a_ij);
    const cjac_real abs_kappa = fabs(kappa);
    if (hyperbolic && !(abs_kappa > 1))
        return 0;
    if (abs_kappa >= sqrt(2 / CJAC_EPS))
        return a_ij / num;
    const cjac_real root = sqrt(hyperbolic ? (abs_kappa - 1) * (abs_kappa + 1)
                                           : fma(kappa, kappa, 1));
    return copysign(1 / (abs_kappa + root), kappa);
}

/* The trigonometric tangent alone (eq. (2.4)). */
inline cjac_real cjac_trig_tangent(const cjac_real a_ii, const cjac_real a_jj,
                                   const cjac_real a_ij)
{
    return cjac_tangent(a_ii, a_jj, a_ij, false);
}

/* The same tangent from x = |kappa| - 1 computed apart, without the
 * cancellation in a_ii + a_jj - 2 |a_ij|: x = ||g_i - u g_j||^2 / (2 |a_ij|)
 * with u the phase that makes the cross term -2 |a_ij| (docs/design.md, App. B:
 * kappa^2 - 1 = (|kappa| - 1)(|kappa| + 1) = x (2 + x)), and
 * t = sign(kappa) / (1 + x + sqrt(x (2 + x))).  As |t| -> 1, ch = cosh phi
 * = 1/sqrt((1 - t)(1 + t)) grows like (8x)^(-1/4), and it is this x, not the
 * Gram entries, that decides t.  Returns 0 when x = 0 or t rounds to +-1
 * (ch would be infinite): the columns are dependent to working precision. */
inline cjac_real cjac_hyp_tangent_apart(const cjac_real x, const cjac_real kappa_sign)
{
    const cjac_real t = 1 / (1 + x + sqrt(x * (2 + x)));
    return x > 0 && t < 1 ? copysign(t, kappa_sign) : 0;
}

/* The relative orthogonality threshold of eq. (2.3): a pair is rotated only if
 * |a_ij| > tol sqrt(a_ii) sqrt(a_jj).  The 2011 paper takes tol = eps; but a_ij
 * is a sum of m products and the columns carry the rounding of every earlier
 * rotation, so a computed cosine below about sqrt(m) eps is rounding noise
 * (the tolerance of LAPACK's xGESVJ, Drmac & Veselic 2008).  Where the two
 * norms are equal (a cluster of equal eigenvalues) such noise gives a
 * 45-degree rotation, a "big" one: with tol = eps the sweeps rotate noise
 * in clusters until by chance all of it stays below eps. */
inline cjac_real cjac_orthogonality_tolerance(const int m)
{
    return CJAC_EPS * sqrt((cjac_real)max(m, 1));
}

/* The cosine of eqs. (2.4)/(2.5), c = cos phi = 1/sqrt(1 + t^2) or ch = cosh phi
 * = 1/sqrt((1 - t)(1 + t)), returned as c - 1 to O(eps^2) and applied as
 * c z = z + (c - 1) z, one FMA (cjac_scale_1p).  Rounded to the nearest
 * double, c is 1 for every |t| < sqrt(eps/2) while cos phi = 1 - t^2/2: each
 * such rotation c [[1, t], [-t, 1]] lengthens both columns by t^2/2 (a
 * hyperbolic one shortens them), always in the same direction, so the
 * accumulated transformation drifts from (J-)orthogonality linearly in the
 * number of rotations (the blocked kernels, which accumulate thousands of them
 * in W, lost a factor 4 in accuracy this way); held as c - 1 the drift is gone
 * and what remains are unbiased roundings.  With u = 1 + h t^2 (h = 1, or -1
 * for the hyperbolic case) held exactly as u_hi + u_lo (t^2 by an FMA,
 * Fast2Sum for 1 + h t^2, as |t| <= 1), e = 1 - c^2 u and c_lo = c e / 2 (one
 * Newton step for u^(-1/2)); c - 1 is exact for c in [1/2, 2] (trigonometric
 * rotations), and c_lo is added to it.  The step also corrects the few ulps
 * of rsqrt (OpenCL allows 2): c itself need not be correctly rounded. */
inline cjac_real cjac_rotation_cosine_m1(const cjac_real t, const bool hyperbolic)
{
    const cjac_real c = rsqrt(hyperbolic ? (1 - t) * (1 + t) : fma(t, t, 1));
    const cjac_real tt = t * t, tt_lo = fma(t, t, -tt);
    const cjac_real h_tt = hyperbolic ? -tt : tt, h_tt_lo = hyperbolic ? -tt_lo : tt_lo;
    const cjac_real u_hi = 1 + h_tt;
    const cjac_real u_lo = (h_tt - (u_hi - 1)) + h_tt_lo;
    const cjac_real cc = c * c, cc_lo = fma(c, c, -cc);
    const cjac_real e = fma(-cc, u_hi, 1) - fma(cc, u_lo, cc_lo * u_hi);
    return (c - 1) + c * e / 2;
}
</%def>

<%def name="element(real_ctype, complex_, layout, with_workgroup_sum=True, math='library')">
/* The element type of G and V and the few operations the kernel bodies use,
 * so that the bodies are the same text for real and complex matrices.
 * Render parameters: real_ctype, complex_ (bool), layout ("interleaved" | "split"),
 * with_workgroup_sum (bool: define cjac_elem_workgroup_sum, which needs the
 * workgroup_sum def rendered before; the blocked kernels do without),
 * math ("library" | "inline": as prelude's; how cjac_hypot is computed).
 *
 *   cjac_hypot(x, y)           sqrt(x^2 + y^2) without overflow: OpenCL's hypot
 *                              ("library"), or ("inline") sqrt(big^2 + small^2)
 *                              in one FMA where the squares neither overflow nor
 *                              underflow, within 1.25 ulp (OpenCL allows hypot 4),
 *                              and hypot elsewhere: on CPUs hypot is a library
 *                              call that costs more than a pivot search's
 *                              comparisons or a pair's vectorized loops
 *   cjac_elem                  element in registers (cjac_real, or cjac_real2 =
 *                              (re, im) for complex)
 *   CJAC_COLUMN(base, c, ld)   start of column c in a buffer of leading dimension ld
 *   CJAC_LOAD(col, row, ld)    element `row` of a column
 *   CJAC_STORE(col, row, ld, v)
 *   cjac_dot_acc(x, y, acc)    acc + conj(x) y        (one or four FMAs)
 *   cjac_abs2_acc(x, acc)      acc + |x|^2
 *   cjac_axpy(a, x, y)         a x + y
 *   cjac_mul(a, x)             a x
 *   cjac_scale(c, x)           c x, c real
 *   cjac_scale_1p(cm1, x)      (1 + cm1) x = x + cm1 x in one FMA per part, for
 *                              the rotation cosine held as c - 1
 *                              (rotation_functions: cjac_rotation_cosine_m1)
 *   cjac_tangent_arg(a_ij)     what the real tangent formulas take: a_ij itself
 *                              (real) or |a_ij| (complex)
 *   cjac_with_phase(t, a_ij, arg)  the rotation's tangent with the phase of a_ij:
 *                              t (real) or s = t e^{i alpha} = t a_ij / |a_ij|
 *   cjac_conj(x)
 *   cjac_real_part(x), cjac_from_real(r)   Re x; r as an element
 *   cjac_elem_abs(x)           |x| (cjac_hypot for complex, as numpy's abs)
 *   cjac_elem_workgroup_sum(scratch, x)
 *
 * Complex rotations (Novakovic & Singer 2011, Sect. 2, and docs/design.md, App. B):
 * with a_ij = g_i^* g_j = |a_ij| e^{i alpha}, the real formulas run on |a_ij|
 * and the phase is put back through s = t e^{i alpha}; trigonometric:
 * g_i' = c (g_i - conj(s) g_j), g_j' = c (g_j + s g_i); hyperbolic:
 * g_i' = c (g_i + conj(s) g_j), g_j' = c (g_j + s g_i) (cljacobi.reference).
 *
 * Complex storage.  interleaved: a column is ld values (re, im) as double2,
 * one 16-byte load per element.  split: a column is its ld real parts
 * followed by its ld imaginary parts (the separate real and imaginary arrays
 * of the GSVD paper, Sect. 3.1, kept per column so one leading dimension
 * addresses both): every load is an 8-byte, unit-stride, fully coalesced
 * access, as for real data.  Which one is faster on a given GPU is measured
 * (bench/bench_eig.py --layout); the host picks it by the family spec's layout. */
%if math == "library":
inline cjac_real cjac_hypot(const cjac_real x, const cjac_real y) { return hypot(x, y); }
%elif math == "inline":
inline cjac_real cjac_hypot(const cjac_real x, const cjac_real y)
{
    const cjac_real ax = fabs(x), ay = fabs(y);
    const cjac_real big = fmax(ax, ay), small = fmin(ax, ay);
    /* false for NaN and infinities; small^2 may underflow beside big^2 >= 2^-920 */
    if (ax <= 0x1p500 && ay <= 0x1p500 && (big >= 0x1p-460 || big == 0))
        return sqrt(fma(big, big, small * small));
    return hypot(x, y);
}
%else:
<% raise ValueError(f"unknown math {math!r}") %>
%endif
%if not complex_:
typedef cjac_real cjac_elem;
#define CJAC_COLUMN(base, c, ld) ((base) + (size_t)(c) * (ld))
#define CJAC_LOAD(col, row, ld) ((col)[row])
#define CJAC_STORE(col, row, ld, v) ((col)[row] = (v))
inline cjac_elem cjac_dot_acc(const cjac_elem x, const cjac_elem y, const cjac_elem acc)
{ return fma(x, y, acc); }
inline cjac_real cjac_abs2_acc(const cjac_elem x, const cjac_real acc)
{ return fma(x, x, acc); }
inline cjac_elem cjac_axpy(const cjac_elem a, const cjac_elem x, const cjac_elem y)
{ return fma(a, x, y); }
inline cjac_elem cjac_mul(const cjac_elem a, const cjac_elem x) { return a * x; }
inline cjac_elem cjac_scale(const cjac_real c, const cjac_elem x) { return c * x; }
inline cjac_elem cjac_scale_1p(const cjac_real cm1, const cjac_elem x)
{ return fma(cm1, x, x); }
inline cjac_elem cjac_conj(const cjac_elem x) { return x; }
inline cjac_real cjac_real_part(const cjac_elem x) { return x; }
inline cjac_elem cjac_from_real(const cjac_real r) { return r; }
inline cjac_real cjac_tangent_arg(const cjac_elem a) { return a; }
inline cjac_elem cjac_with_phase(const cjac_real t, const cjac_elem a, const cjac_real arg)
{ return t; }
inline cjac_real cjac_elem_abs(const cjac_elem a) { return fabs(a); }
#define CJAC_ELEM_ZERO ((cjac_real)0)
%if with_workgroup_sum:
inline cjac_elem cjac_elem_workgroup_sum(__local cjac_real *scratch, const cjac_elem x)
{ return cjac_workgroup_sum(scratch, x); }
%endif
%else:
typedef ${real_ctype}2 cjac_real2;
typedef cjac_real2 cjac_elem;
%if layout == "interleaved":
#define CJAC_COLUMN(base, c, ld) ((base) + (size_t)(c) * (ld))
#define CJAC_LOAD(col, row, ld) ((col)[row])
#define CJAC_STORE(col, row, ld, v) ((col)[row] = (v))
%elif layout == "split":
#define CJAC_COLUMN(base, c, ld) ((base) + (size_t)(c) * 2 * (ld))
#define CJAC_LOAD(col, row, ld) ((cjac_real2)((col)[row], (col)[(row) + (ld)]))
#define CJAC_STORE(col, row, ld, v) \
    do { const cjac_real2 v_ = (v); (col)[row] = v_.x; (col)[(row) + (ld)] = v_.y; } while (0)
%else:
<% raise ValueError(f"unknown complex layout {layout!r}") %>
%endif
/* conj(x) y + acc: re = x.re y.re + x.im y.im, im = x.re y.im - x.im y.re */
inline cjac_elem cjac_dot_acc(const cjac_elem x, const cjac_elem y, const cjac_elem acc)
{
    return (cjac_real2)(fma(x.x, y.x, fma(x.y, y.y, acc.x)),
                        fma(x.x, y.y, fma(-x.y, y.x, acc.y)));
}
inline cjac_real cjac_abs2_acc(const cjac_elem x, const cjac_real acc)
{ return fma(x.x, x.x, fma(x.y, x.y, acc)); }
/* a x + y */
inline cjac_elem cjac_axpy(const cjac_elem a, const cjac_elem x, const cjac_elem y)
{
    return (cjac_real2)(fma(a.x, x.x, fma(-a.y, x.y, y.x)),
                        fma(a.x, x.y, fma(a.y, x.x, y.y)));
}
/* a x: re = a.re x.re - a.im x.im, im = a.re x.im + a.im x.re */
inline cjac_elem cjac_mul(const cjac_elem a, const cjac_elem x)
{
    return (cjac_real2)(fma(a.x, x.x, -a.y * x.y), fma(a.x, x.y, a.y * x.x));
}
inline cjac_elem cjac_scale(const cjac_real c, const cjac_elem x) { return c * x; }
inline cjac_elem cjac_scale_1p(const cjac_real cm1, const cjac_elem x)
{ return (cjac_real2)(fma(cm1, x.x, x.x), fma(cm1, x.y, x.y)); }
inline cjac_elem cjac_conj(const cjac_elem x) { return (cjac_real2)(x.x, -x.y); }
inline cjac_real cjac_real_part(const cjac_elem x) { return x.x; }
inline cjac_elem cjac_from_real(const cjac_real r) { return (cjac_real2)(r, 0); }
inline cjac_real cjac_elem_abs(const cjac_elem a) { return cjac_hypot(a.x, a.y); }
inline cjac_real cjac_tangent_arg(const cjac_elem a) { return cjac_elem_abs(a); }
/* s = t e^{i alpha} with e^{i alpha} = a_ij / |a_ij| (arg = |a_ij| > 0 when called
 * for a rotation; t = 0 otherwise and s = 0). */
inline cjac_elem cjac_with_phase(const cjac_real t, const cjac_elem a, const cjac_real arg)
{ return t == 0 ? (cjac_real2)(0, 0) : (t / arg) * a; }
#define CJAC_ELEM_ZERO ((cjac_real2)(0, 0))
%if with_workgroup_sum:
inline cjac_elem cjac_elem_workgroup_sum(__local cjac_real *scratch, const cjac_elem x)
{
    const cjac_real re = cjac_workgroup_sum(scratch, x.x);
    const cjac_real im = cjac_workgroup_sum(scratch, x.y);
    return (cjac_real2)(re, im);
}
%endif
%endif
</%def>

<%def name="row_vectors(real_ctype, complex_, elements, space, math='library')">
<%
    lanes = elements * (2 if complex_ else 1)
    if lanes not in (2, 4, 8, 16):
        raise ValueError(f"{elements} elements per row vector make no OpenCL vector")
    digits = "0123456789abcdef"
    def swizzle(indices):
        return ".s" + "".join(digits[k] for k in indices)
    swap = swizzle([k ^ 1 for k in range(lanes)])           # (re, im) -> (im, re)
    real_parts = swizzle([k & ~1 for k in range(lanes)])    # (re, re)
    imaginary_parts = swizzle([k | 1 for k in range(lanes)])  # (im, im)
    signs = ", ".join(["1", "-1"] * (lanes // 2))
%>
/* Explicit vectors over the rows of a column, for CPUs, whose compilers do
 * not vectorize the sums of a column (that would reorder them): CJAC_ROWS
 * consecutive elements of a column in one ${real_ctype}${lanes} (complex:
 * (re, im) interleaved, as cjac_elem).  Each operation rounds every element
 * exactly as its cjac_elem counterpart (element) does; a sum keeps one
 * partial sum per lane, added at the end in a fixed halving tree (lanes k
 * and k + width/2).  Pointers are to ${space} cjac_real, at the column's row
 * (any alignment of a cjac_real).  The vector FMA is the scalar one lane by
 * lane (one vector instruction once vectorized); with math = "inline" the
 * loads and stores are those of a vector type aligned as its elements
 * (prelude says why).
 *
 *   cjac_rows                  CJAC_ROWS elements
 *   CJAC_ROWS_LOAD(p), CJAC_ROWS_STORE(p, v), CJAC_ROWS_ZERO
 *   cjac_rows_dot_acc(x, y, acc)   acc + conj(x) y per element
 *   cjac_rows_abs2_acc(x, acc)     acc + x x per lane (|x|^2 once summed)
 *   cjac_rows_axpy(a, x, y)        a x + y, a an element
 *   cjac_rows_scale_1p(cm1, x)     x + cm1 x
 *   cjac_rows_sum_real(v)          the sum of every lane
 *   cjac_rows_sum_elem(v)          the sum of the elements */
typedef ${real_ctype}${lanes} cjac_rows;
#define CJAC_ROWS ${elements}
#define CJAC_ROWS_ZERO ((cjac_rows)(0))
%if math == "inline":
typedef cjac_rows cjac_rows_unaligned __attribute__((aligned(sizeof(${real_ctype}))));
#define CJAC_ROWS_LOAD(p) (*(${space} const cjac_rows_unaligned *)(p))
#define CJAC_ROWS_STORE(p, v) (*(${space} cjac_rows_unaligned *)(p) = (v))
%else:
#define CJAC_ROWS_LOAD(p) cjac_rows_load(p)
#define CJAC_ROWS_STORE(p, v) cjac_rows_store((p), (v))
inline cjac_rows cjac_rows_load(${space} const cjac_real *p)
{ return (cjac_rows)(${", ".join(f"p[{k}]" for k in range(lanes))}); }
inline void cjac_rows_store(${space} cjac_real *p, const cjac_rows v)
{ ${" ".join(f"p[{k}] = v.s{digits[k]};" for k in range(lanes))} }
%endif
/* No vector built-in is called (vloadn, vstoren, fma on vectors): PoCL 3.0
 * on a CPU its LLVM 14 does not know (AMD Zen 4) links its AVX-512 built-in
 * library into code for a target without AVX-512F, and a double8 passed
 * to or from a built-in aborts the process (fma(double8): LLVM's "Cannot
 * select: i64 = fma") or faults (vstore8).  Hence the loads and stores
 * element by element under math = "library", and the vector FMA as the
 * scalar one lane by lane under either math (prelude's fma): the bits of
 * the vector fma, both correctly rounded. */
inline cjac_rows cjac_rows_fma(const cjac_rows a, const cjac_rows b, const cjac_rows c)
{
    return (cjac_rows)(${", ".join(f"fma(a.s{digits[k]}, b.s{digits[k]}, c.s{digits[k]})" for k in range(lanes))});
}
inline cjac_rows cjac_rows_abs2_acc(const cjac_rows x, const cjac_rows acc)
{ return cjac_rows_fma(x, x, acc); }
inline cjac_rows cjac_rows_scale_1p(const cjac_real cm1, const cjac_rows x)
{ return cjac_rows_fma((cjac_rows)(cm1), x, x); }
<%def name="halve_to_two()">
## v (lanes wide) halved to v2 = (even lanes' sum, odd lanes' sum).
%if lanes == 2:
    const ${real_ctype}2 v2 = v;
%else:
    const ${real_ctype}${lanes // 2} v${lanes // 2} = v.lo + v.hi;
%for width in [2 ** e for e in range(lanes.bit_length() - 3, 0, -1)]:
    const ${real_ctype}${width} v${width} = v${2 * width}.lo + v${2 * width}.hi;
%endfor
%endif
</%def>
inline cjac_real cjac_rows_sum_real(const cjac_rows v)
{
${halve_to_two()}
    return v2.x + v2.y;
}
%if not complex_:
inline cjac_rows cjac_rows_dot_acc(const cjac_rows x, const cjac_rows y, const cjac_rows acc)
{ return cjac_rows_fma(x, y, acc); }
inline cjac_rows cjac_rows_axpy(const cjac_elem a, const cjac_rows x, const cjac_rows y)
{ return cjac_rows_fma((cjac_rows)(a), x, y); }
inline cjac_elem cjac_rows_sum_elem(const cjac_rows v) { return cjac_rows_sum_real(v); }
%else:
/* re: fma(x.re, y.re, fma(x.im, y.im, acc.re)),
 * im: fma(x.re, y.im, fma(-x.im, y.re, acc.im)), as cjac_dot_acc. */
inline cjac_rows cjac_rows_dot_acc(const cjac_rows x, const cjac_rows y, const cjac_rows acc)
{
    const cjac_rows signs = (cjac_rows)(${signs});
    return cjac_rows_fma(x${real_parts}, y, cjac_rows_fma(x${imaginary_parts} * signs, y${swap}, acc));
}
/* re: fma(a.re, x.re, fma(-a.im, x.im, y.re)),
 * im: fma(a.re, x.im, fma(a.im, x.re, y.im)), as cjac_axpy. */
inline cjac_rows cjac_rows_axpy(const cjac_elem a, const cjac_rows x, const cjac_rows y)
{
    const cjac_rows signs = (cjac_rows)(${signs});
    return cjac_rows_fma((cjac_rows)(a.x), x, cjac_rows_fma(-a.y * signs, x${swap}, y));
}
inline cjac_elem cjac_rows_sum_elem(const cjac_rows v)
{
${halve_to_two()}
    return v2;
}
%endif
</%def>
