## The pointwise implicit Hari-Zimmermann kernel of the GSVD: one parallel
## step transforms every pivot pair (i, j) of the step, one work-group per
## pair, all from the same F_k, G_k (the pairs of a step are disjoint).
##
## V. Novakovic and S. Singer, "Implicit Hari-Zimmermann algorithm for the
## generalized SVD on the GPUs" (cited as [NS]; docs/design.md, "The GSVD"):
##   the pivot submatrices A_k = [f_i f_j]^* [f_i f_j], B_k = [g_i g_j]^* [g_i g_j]
##   (Sect. 2.1), the relative orthogonality test before Sect. 2.1.1, the
##   complex (Sect. 2.1.1) and real (Sect. 2.1.2) transformations Z'_k with
##   their exceptions, the not-scaled version's D_k (Sect. 2.1), the big and
##   small transformations of criteria C1 and C2 (Sect. 2.5), and the sorting
##   permutation P_k (Sect. 2.1).  cljacobi.hz_reference is the numpy
##   reference of the same formulas; the paper's slips corrected there are
##   corrected here alike (marked "slip").
##
## Render parameters (all explicit, see cljacobi.host.hz.HZSpec):
##   real_ctype        "double"
##   complex_          complex data (interleaved cjac_real2 elements)
##   prescaled         the standard version (diag(B) = I assumed, Sect. 2) or the
##                     not-scaled one (D_k in every step, Sect. 2.1)
##   criterion         "C1" or "C2": which transformations are small (Sect. 2.5)
##   indefinite        A = F^* J F, J = diag(I_p, -I) by the rows of F (argument
##                     positive_rows = p): the definite pencil (A indefinite, B
##                     positive definite) of the generalized eigenproblem; the
##                     relative orthogonality test takes |a'_ii| (pointwise only)
##   work_group_size   work-items per pair (a power of two)
##   size_defines      #define WG (work_group_size), the counter indices
##                     (HZ_COUNTERS); with a block width also BW,
##                     HZ_INNER_STEPS and HZ_BLOCK_WG (work-items of cjac_hz_block)
##   block_width       0: the pointwise kernel only; w: also cjac_hz_block, the
##                     inner sweeps of the block-oriented level (Sect. 2.3)
##   inner_pairs       the inner strategy's step table of order 2w (with a block width)
##   signatures        the kernels' parameter lists (HZSpec.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude(real_ctype)}

${size_defines}
#if WG < 1 || (WG & (WG - 1)) != 0
#error "WG must be a power of two (cljacobi.host.hz.HZSpec)"
#endif
${arith.workgroup_sum(work_group_size)}
${arith.element(real_ctype, complex_, "interleaved")}

/* The counters of one sweep, HZ_TRANSFORMED, HZ_BIG and HZ_NOT_DEFINITE, are
 * indices rendered from cljacobi.host.hz.HZ_COUNTERS (in size_defines). */

/* (cos theta, sin theta) from tan theta, |theta| <= pi/2, via hypot (no
 * overflow).  [NS] Sect. 2.1.1 prints cos theta = 1/(1 + tan^2 theta): slip,
 * the identity has the square root.  tan theta = +-inf: cos = 0 and
 * sin = sign(tan theta) (the paper's sin = 1 is a slip for -inf). */
inline void hz_cos_sin(const cjac_real tangent, cjac_real *c, cjac_real *s)
{
    if (isinf(tangent)) {
        *c = 0;
        *s = copysign((cjac_real)1, tangent);
        return;
    }
    const cjac_real secant = hypot((cjac_real)1, tangent);
    *c = 1 / secant;
    *s = tangent / secant;
}

/* t_k = sqrt(1 - x_k^2), |x_k| < 1 ([NS] Sect. 2.1.1, 2.1.2); for |x_k| >= 1/2
 * as (1 - |x|)(1 + |x|), where 1 - |x| is exact. */
inline cjac_real hz_sqrt_one_minus_square(const cjac_real x)
{
    const cjac_real a = fabs(x);
    return sqrt(a < (cjac_real)0.5 ? 1 - a * a : (1 - a) * (1 + a));
}

/* The 2x2 transformation, columns (z11, z21) and (z12, z22): [y_i y_j] := [y_i y_j] Z. */
typedef struct { cjac_elem z11, z21, z12, z22; } hz_transform;

/* The exception of a proportional pivot pair ([NS] Sect. 2.1.1):
 * (1/sqrt 2) [[1/sqrt(1+x), -e^{i zeta}/sqrt(1-x)], [e^{-i zeta}/sqrt(1+x), 1/sqrt(1-x)]],
 * x = |b'_ij|, e^{i zeta} = b'_ij / |b'_ij|; for real data the phase is
 * sign(b'_ij) (the paper's real formula of Sect. 2.1.2 uses |x| alone: slip). */
inline hz_transform hz_proportional(const cjac_real x, const cjac_elem phase)
{
    const cjac_real plus = 1 / sqrt(2 * (1 + x));
    const cjac_real minus = 1 / sqrt(2 * (1 - x));
    hz_transform z;
    z.z11 = cjac_from_real(plus);
    z.z12 = cjac_scale(-minus, phase);
    z.z21 = cjac_scale(plus, cjac_conj(phase));
    z.z22 = cjac_from_real(minus);
    return z;
}

/* Z'_k of [NS] Sect. 2.1.1 (complex) or 2.1.2 (real) for the rescaled pivot
 * elements (diag(B'_k) = I, off-diagonal b = b'_ij, |b| < 1); *exceptional
 * tells the exception, *cos_phi and *cos_psi (and t) what C1 and C2 test. */
inline hz_transform hz_pair_transform(const cjac_real a_ii, const cjac_elem a_ij,
                                      const cjac_real a_jj, const cjac_elem b,
                                      bool *exceptional, cjac_real *cos_phi,
                                      cjac_real *cos_psi, cjac_real *t_out)
{
    hz_transform z;
    const cjac_real h = a_jj - a_ii;                       /* h_k := a'_jj - a'_ii */
%if complex_:
    const cjac_real x = cjac_elem_abs(b);                  /* x_k := |b'_ij| */
    const cjac_elem phase = x == 0 ? (cjac_real2)(1, 0) : b / x;  /* e^{i zeta_k} */
    const cjac_elem zk = cjac_mul(cjac_conj(phase), a_ij); /* z_k := e^{-i zeta_k} a'_ij */
    const cjac_real u = zk.x, v = zk.y;
    *exceptional = v == 0 && h == 0;
    if (*exceptional)
        return hz_proportional(x, phase);
    const cjac_real t = hz_sqrt_one_minus_square(x);       /* t_k */
    const cjac_real tau = h >= 0 ? 1 : -1;                 /* tau_k := sign(1, h_k) */
    /* tan 2theta_k := tau_k (2 u_k - (a'_ii + a'_jj) x_k) / (t_k sqrt(h_k^2 + 4 v_k^2)) */
    const cjac_real tan_2theta = tau * (2 * u - (a_ii + a_jj) * x) / (t * hypot(h, 2 * v));
    cjac_real cos_2theta, sin_2theta, cos_gamma, sin_gamma;
    hz_cos_sin(tan_2theta, &cos_2theta, &sin_2theta);
    hz_cos_sin(2 * v / h, &cos_gamma, &sin_gamma);         /* tan gamma_k := 2 v_k / h_k */
    /* cos phi_k, cos psi_k := sqrt(1 +- x_k sin 2theta_k + t_k cos gamma_k cos 2theta_k) / sqrt 2 */
    const cjac_real common = t * cos_gamma * cos_2theta;
    const cjac_real c_phi = sqrt(1 + x * sin_2theta + common) / M_SQRT2;
    const cjac_real c_psi = sqrt(1 - x * sin_2theta + common) / M_SQRT2;
    const cjac_real skew = t * sin_gamma * cos_2theta;
    /* e^{i alpha_k} sin phi_k := e^{i zeta_k} ((sin 2theta_k - x_k) + i skew) / (2 cos psi_k),
     * e^{-i beta_k} sin psi_k := e^{-i zeta_k} ((sin 2theta_k + x_k) - i skew) / (2 cos phi_k) */
    const cjac_elem s_phi = cjac_scale(1 / (2 * c_psi),
                                       cjac_mul(phase, (cjac_real2)(sin_2theta - x, skew)));
    const cjac_elem s_psi = cjac_scale(1 / (2 * c_phi),
                                       cjac_mul(cjac_conj(phase), (cjac_real2)(sin_2theta + x, -skew)));
    /* Z'_k := (1/t_k) [[cos phi_k, e^{i alpha_k} sin phi_k], [-e^{-i beta_k} sin psi_k, cos psi_k]] */
    z.z11 = cjac_from_real(c_phi / t);
    z.z12 = cjac_scale(1 / t, s_phi);
    z.z21 = cjac_scale(-1 / t, s_psi);
    z.z22 = cjac_from_real(c_psi / t);
%else:
    const cjac_real x = b;
    const cjac_real denominator = 2 * a_ij - (a_ii + a_jj) * x;
    *exceptional = h == 0 && denominator == 0;             /* cot 2theta_k = 0/0 */
    if (*exceptional)
        return hz_proportional(fabs(x), x >= 0 ? 1 : -1);
    const cjac_real t = hz_sqrt_one_minus_square(x);
    const cjac_real root_plus = sqrt(1 + x), root_minus = sqrt(1 - x);
    const cjac_real xi = x / (root_plus + root_minus);     /* xi_k */
    const cjac_real eta = x / ((1 + root_plus) * (1 + root_minus));  /* eta_k */
    /* cot 2theta_k := t_k (a'_jj - a'_ii) / (2 a'_ij - (a'_ii + a'_jj) x_k) */
    const cjac_real cot_2theta = t * h / denominator;
    /* tan theta_k := sign(1, cot 2theta_k) / (|cot 2theta_k| + sqrt(1 + cot^2 2theta_k)) */
    const cjac_real tan_theta = (cot_2theta >= 0 ? 1 : -1)
                                / (fabs(cot_2theta) + hypot((cjac_real)1, cot_2theta));
    cjac_real c, s;
    hz_cos_sin(tan_theta, &c, &s);
    const cjac_real c_phi = c + xi * (s - eta * c);
    const cjac_real c_psi = c - xi * (s + eta * c);
    const cjac_real s_phi = s - xi * (c + eta * s);
    const cjac_real s_psi = s + xi * (c - eta * s);
    /* Z'_k := (1/t_k) [[cos phi_k, sin phi_k], [-sin psi_k, cos psi_k]] */
    z.z11 = c_phi / t;
    z.z12 = s_phi / t;
    z.z21 = -s_psi / t;
    z.z22 = c_psi / t;
%endif
    *cos_phi = c_phi;
    *cos_psi = c_psi;
    *t_out = t;
    return z;
}

/* (Z^* A Z)_11 for the column (p, q) of Z: |p|^2 a_ii + 2 Re(conj(p) a_ij q) + |q|^2 a_jj. */
inline cjac_real hz_new_diagonal(const cjac_elem p, const cjac_elem q, const cjac_real a_ii,
                                 const cjac_elem a_ij, const cjac_real a_jj)
{
    const cjac_real cross = cjac_real_part(cjac_mul(cjac_conj(p), cjac_mul(a_ij, q)));
    return cjac_abs2_acc(p, 0) * a_ii + 2 * cross + cjac_abs2_acc(q, 0) * a_jj;
}

/* What one pivot pair gets from its A_k, B_k: Z_k = D_k Z'_k P_k (the identity,
 * or only P_k, for a relatively orthogonal pair), and whether it was a
 * transformation, a big one, a pair to touch at all, or one whose B'_k is not
 * positive definite (|b'_ij| >= 1: no real t_k). */
typedef struct { hz_transform z; int transformed, big, apply, not_definite; } hz_decision;

inline hz_decision hz_decide(const cjac_real a_ii, const cjac_elem a_ij, const cjac_real a_jj,
                             const cjac_real b_ii, const cjac_elem b_ij, const cjac_real b_jj,
                             const int n)
{
    hz_decision out;
    out.transformed = out.big = out.not_definite = 0;
%if prescaled:
    /* The standard version assumes diag(B) = I ([NS] Sect. 2). */
    const cjac_real d_i = 1, d_j = 1;
    const cjac_real ra_ii = a_ii, ra_jj = a_jj;
    const cjac_elem ra_ij = a_ij, rb_ij = b_ij;
%else:
    /* D_k = diag(1/sqrt(b_ii), 1/sqrt(b_jj)), A'_k = D_k A_k D_k, B'_k = D_k B_k D_k ([NS] Sect. 2.1). */
    const cjac_real d_i = 1 / sqrt(b_ii), d_j = 1 / sqrt(b_jj);
    const cjac_real ra_ii = a_ii / b_ii, ra_jj = a_jj / b_jj;
    const cjac_elem ra_ij = cjac_scale(d_i * d_j, a_ij), rb_ij = cjac_scale(d_i * d_j, b_ij);
%endif
    /* Relative orthogonality: |b'_ij| < eps sqrt(n), |a'_ij| < sqrt(a'_ii a'_jj) eps sqrt(n)
     * (before [NS] Sect. 2.1.1); both off-diagonals exactly zero count too. */
    const cjac_real tol = CJAC_EPS * sqrt((cjac_real)n);
    const cjac_real abs_a = cjac_elem_abs(ra_ij), abs_b = cjac_elem_abs(rb_ij);
    const bool orthogonal = (abs_a == 0 && abs_b == 0)
        || (abs_b < tol && abs_a < sqrt(fabs(ra_ii)) * sqrt(fabs(ra_jj)) * tol);
    hz_transform z;
    z.z11 = z.z22 = cjac_from_real(1);
    z.z12 = z.z21 = CJAC_ELEM_ZERO;
    cjac_real new_ii = ra_ii, new_jj = ra_jj;
    if (!orthogonal && abs_b >= 1) {
        out.not_definite = 1;
    } else if (!orthogonal) {
        bool exceptional;
        cjac_real cos_phi, cos_psi, t;
        z = hz_pair_transform(ra_ii, ra_ij, ra_jj, rb_ij, &exceptional, &cos_phi, &cos_psi, &t);
%if criterion == "C1":
        /* C1: small when (cos phi_k)/t_k = (cos psi_k)/t_k = 1. */
        const bool small = !exceptional && cos_phi / t == 1 && cos_psi / t == 1;
%else:
        /* C2: small when cos phi_k = cos psi_k = 1. */
        const bool small = !exceptional && cos_phi == 1 && cos_psi == 1;
%endif
        new_ii = hz_new_diagonal(z.z11, z.z21, ra_ii, ra_ij, ra_jj);
        new_jj = hz_new_diagonal(z.z12, z.z22, ra_ii, ra_ij, ra_jj);
        /* Z_k := D_k Z'_k: the rows scaled. */
        z.z11 = cjac_scale(d_i, z.z11);
        z.z12 = cjac_scale(d_i, z.z12);
        z.z21 = cjac_scale(d_j, z.z21);
        z.z22 = cjac_scale(d_j, z.z22);
        out.transformed = 1;
        out.big = !small;
    }
    /* P_k: the larger diagonal element of Z_k^* A_k Z_k (the ratio ||f||^2 / ||g||^2
     * after the step) first ([NS] Sect. 2.1; from the 2x2 algebra, not from norms
     * recomputed over the columns as Sect. 3.5.3 does: it orders, nothing more). */
    const int swap = new_ii < new_jj;
    if (swap) {
        const cjac_elem p = z.z11, q = z.z21;
        z.z11 = z.z12; z.z21 = z.z22;
        z.z12 = p; z.z22 = q;
    }
    out.z = z;
    out.apply = out.transformed || swap;
    return out;
}

/* [y_i y_j] := [y_i y_j] Z over `rows` rows, the work-group's items striding. */
inline void hz_update(__global cjac_elem *y_i, __global cjac_elem *y_j, const int rows,
                      const hz_transform z)
{
    for (int r = get_local_id(0); r < rows; r += WG) {
        const cjac_elem a = y_i[r], b = y_j[r];
        y_i[r] = cjac_axpy(z.z11, a, cjac_mul(z.z21, b));
        y_j[r] = cjac_axpy(z.z12, a, cjac_mul(z.z22, b));
    }
}

/* One work-group per pivot pair k of the step: pairs[2 (first + k)], pairs[2 (first + k) + 1],
 * i < j. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_hz_step(${signatures["cjac_hz_step"].parameters})
{
    __local cjac_real scratch[WG];
    __local hz_transform shared_z;
    __local int apply;
    const int lid = get_local_id(0);
    const int k = first + get_group_id(0);
    /* A pair with j >= n (the virtual column of an odd n) reads nothing and
     * applies nothing; it still passes every barrier (PoCL 3.1 miscompiles a
     * return taken before them, even a uniform one). */
    const int i = pairs[2 * k], j_pair = pairs[2 * k + 1];
    const int active = j_pair < n;
    const int j = active ? j_pair : i;
    const int rows_f = active ? mf : 0, rows_g = active ? mg : 0;
    __global cjac_elem *f_i = f + (size_t)i * ldf, *f_j = f + (size_t)j * ldf;
    __global cjac_elem *g_i = g + (size_t)i * ldg, *g_j = g + (size_t)j * ldg;

    /* The pivot submatrices A_k and B_k ([NS] Sect. 2.1), in a fixed order. */
    cjac_real a_ii = 0, a_jj = 0, b_ii = 0, b_jj = 0;
    cjac_elem a_ij = CJAC_ELEM_ZERO, b_ij = CJAC_ELEM_ZERO;
%if indefinite:
    /* A = F^* J F with J = diag(I_p, -I): the rows r >= p count negatively
     * (the definite pencil of eig_indefinite(M, B), M = F^* J F). */
    cjac_real a_ii_neg = 0, a_jj_neg = 0;
    cjac_elem a_ij_neg = CJAC_ELEM_ZERO;
%endif
    for (int r = lid; r < rows_f; r += WG) {
        const cjac_elem x = f_i[r], y = f_j[r];
%if indefinite:
        if (r >= positive_rows) {
            a_ii_neg = cjac_abs2_acc(x, a_ii_neg);
            a_jj_neg = cjac_abs2_acc(y, a_jj_neg);
            a_ij_neg = cjac_dot_acc(x, y, a_ij_neg);
            continue;
        }
%endif
        a_ii = cjac_abs2_acc(x, a_ii);
        a_jj = cjac_abs2_acc(y, a_jj);
        a_ij = cjac_dot_acc(x, y, a_ij);
    }
    for (int r = lid; r < rows_g; r += WG) {
        const cjac_elem x = g_i[r], y = g_j[r];
%if not prescaled:
        b_ii = cjac_abs2_acc(x, b_ii);
        b_jj = cjac_abs2_acc(y, b_jj);
%endif
        b_ij = cjac_dot_acc(x, y, b_ij);
    }
    a_ii = cjac_workgroup_sum(scratch, a_ii);
    a_jj = cjac_workgroup_sum(scratch, a_jj);
    a_ij = cjac_elem_workgroup_sum(scratch, a_ij);
%if indefinite:
    a_ii -= cjac_workgroup_sum(scratch, a_ii_neg);
    a_jj -= cjac_workgroup_sum(scratch, a_jj_neg);
    a_ij -= cjac_elem_workgroup_sum(scratch, a_ij_neg);
%endif
    b_ij = cjac_elem_workgroup_sum(scratch, b_ij);
%if not prescaled:
    b_ii = cjac_workgroup_sum(scratch, b_ii);
    b_jj = cjac_workgroup_sum(scratch, b_jj);
%endif

    if (lid == 0 && active) {
        const hz_decision d = hz_decide(a_ii, a_ij, a_jj, b_ii, b_ij, b_jj, n);
        if (d.not_definite)
            atomic_inc(&counters[HZ_NOT_DEFINITE]);
        if (d.transformed)
            atomic_inc(&counters[HZ_TRANSFORMED]);
        if (d.big)
            atomic_inc(&counters[HZ_BIG]);
        shared_z = d.z;
        apply = d.apply;
    } else if (lid == 0) {
        apply = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!apply)
        return;
    const hz_transform z = shared_z;
    hz_update(f_i, f_j, mf, z);
    hz_update(g_i, g_j, mg, z);
    hz_update(zz + (size_t)i * ldz, zz + (size_t)j * ldz, n, z);
}
%if block_width:

/* ------------------------------------------------------------------------
 * The block-oriented level ([NS] Sect. 2.3): one work-group per pair of block
 * columns (P, Q) of width BW.  The Gram matrices of [F_P F_Q] and [G_P G_Q]
 * come from the blocked family's cjac_block_gram (partial sums per row chunk,
 * added here in a fixed order); the inner sweeps run the same pair decision
 * on them two-sided, A <- Z_k^* A Z_k, B <- Z_k^* B Z_k, W <- W Z_k, and W
 * goes to the slot cjac_block_update reads, which applies it to F, G and Z.
 * inner_sweeps: 1 for the block-oriented variant (BO), up to 30 for the
 * full-block one (FB, Sect. 2.3).
 * ------------------------------------------------------------------------ */
#define HZ_K (2 * BW)
#define HZ_LD (HZ_K + 1)  /* odd row stride against bank conflicts */

/* The inner strategy (pairs of local columns 0..HZ_K-1), one row per step. */
__constant int2 hz_inner_pairs[HZ_INNER_STEPS * BW] = {
%for step in inner_pairs:
    ${", ".join(f"(int2)({i}, {j})" for i, j in step)},
%endfor
};

/* The 2x2 block (rows r, columns c) of M <- X^* M Y, X and Y applied where flagged. */
inline void hz_two_sided(__local cjac_elem *M, const int2 r, const int2 c,
                         const int rows, const hz_transform x, const int cols,
                         const hz_transform y)
{
    cjac_elem m11 = M[r.x * HZ_LD + c.x], m12 = M[r.x * HZ_LD + c.y];
    cjac_elem m21 = M[r.y * HZ_LD + c.x], m22 = M[r.y * HZ_LD + c.y];
    if (cols) {  /* M Y */
        const cjac_elem n11 = cjac_axpy(m11, y.z11, cjac_mul(m12, y.z21));
        const cjac_elem n12 = cjac_axpy(m11, y.z12, cjac_mul(m12, y.z22));
        const cjac_elem n21 = cjac_axpy(m21, y.z11, cjac_mul(m22, y.z21));
        const cjac_elem n22 = cjac_axpy(m21, y.z12, cjac_mul(m22, y.z22));
        m11 = n11; m12 = n12; m21 = n21; m22 = n22;
    }
    if (rows) {  /* X^* M */
        const cjac_elem n11 = cjac_axpy(cjac_conj(x.z11), m11, cjac_mul(cjac_conj(x.z21), m21));
        const cjac_elem n12 = cjac_axpy(cjac_conj(x.z11), m12, cjac_mul(cjac_conj(x.z21), m22));
        const cjac_elem n21 = cjac_axpy(cjac_conj(x.z12), m11, cjac_mul(cjac_conj(x.z22), m21));
        const cjac_elem n22 = cjac_axpy(cjac_conj(x.z12), m12, cjac_mul(cjac_conj(x.z22), m22));
        m11 = n11; m12 = n12; m21 = n21; m22 = n22;
    }
    M[r.x * HZ_LD + c.x] = m11; M[r.x * HZ_LD + c.y] = m12;
    M[r.y * HZ_LD + c.x] = m21; M[r.y * HZ_LD + c.y] = m22;
}

__kernel __attribute__((reqd_work_group_size(HZ_BLOCK_WG, 1, 1)))
void cjac_hz_block(${signatures["cjac_hz_block"].parameters})
{
    __local cjac_elem A[HZ_K * HZ_LD], B[HZ_K * HZ_LD], W[HZ_K * HZ_LD];
    __local hz_transform zs[BW];
    __local int flag[BW], transformed_q[BW], big_q[BW], not_definite_q[BW];
    __local int2 pair[BW];
    __local int sweep_transformed;
    const int k = get_group_id(0), lid = get_local_id(0);
    const size_t base = (size_t)k * chunks * (HZ_K * HZ_K);
    for (int e = lid; e < HZ_K * HZ_K; e += HZ_BLOCK_WG) {
        cjac_elem a = CJAC_ELEM_ZERO, b = CJAC_ELEM_ZERO;
        for (int c = 0; c < chunks; ++c) {  /* fixed order: reproducible */
            a += partial_f[base + (size_t)c * (HZ_K * HZ_K) + e];
            b += partial_g[base + (size_t)c * (HZ_K * HZ_K) + e];
        }
        const int row = e / HZ_K, col = e % HZ_K;
        A[row * HZ_LD + col] = a;
        B[row * HZ_LD + col] = b;
        W[row * HZ_LD + col] = cjac_from_real(row == col ? 1 : 0);
    }
    for (int q = lid; q < BW; q += HZ_BLOCK_WG)
        transformed_q[q] = big_q[q] = not_definite_q[q] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int sweep = 0; sweep < inner_sweeps; ++sweep) {
        if (lid == 0)
            sweep_transformed = 0;
        for (int inner = 0; inner < HZ_INNER_STEPS; ++inner) {
            for (int q = lid; q < BW; q += HZ_BLOCK_WG) {
                const int2 p = hz_inner_pairs[inner * BW + q];
                const hz_decision d = hz_decide(
                    cjac_real_part(A[p.x * HZ_LD + p.x]), A[p.x * HZ_LD + p.y],
                    cjac_real_part(A[p.y * HZ_LD + p.y]), cjac_real_part(B[p.x * HZ_LD + p.x]),
                    B[p.x * HZ_LD + p.y], cjac_real_part(B[p.y * HZ_LD + p.y]), n);
                pair[q] = p;
                zs[q] = d.z;
                flag[q] = d.apply;
                transformed_q[q] += d.transformed;
                big_q[q] += d.big;
                not_definite_q[q] |= d.not_definite;
                if (d.transformed)
                    sweep_transformed = 1;  /* a benign race: every writer writes 1 */
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int x = lid; x < BW * BW; x += HZ_BLOCK_WG) {
                const int q1 = x / BW, q2 = x % BW;
                const int rows = flag[q1], cols = flag[q2];
                if (rows | cols) {
                    const int2 r = pair[q1], c = pair[q2];
                    hz_two_sided(A, r, c, rows, zs[q1], cols, zs[q2]);
                    hz_two_sided(B, r, c, rows, zs[q1], cols, zs[q2]);
                    if (cols) {  /* rows r.x, r.y of W Z */
                        const hz_transform y = zs[q2];
%for row in ("x", "y"):
                        {
                            __local cjac_elem *w = W + r.${row} * HZ_LD;
                            const cjac_elem wi = w[c.x], wj = w[c.y];
                            w[c.x] = cjac_axpy(wi, y.z11, cjac_mul(wj, y.z21));
                            w[c.y] = cjac_axpy(wi, y.z12, cjac_mul(wj, y.z22));
                        }
%endfor
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        /* The inner level stops after a sweep without transformations (apart
         * from the sortings P_k; [NS] Sect. 2.5), or after inner_sweeps. */
        const int any = sweep_transformed;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!any)
            break;  /* uniform over the work-group */
    }
    __global cjac_elem *out = transforms + (size_t)k * (HZ_K * HZ_K);
    for (int e = lid; e < HZ_K * HZ_K; e += HZ_BLOCK_WG)
        out[e] = W[(e / HZ_K) * HZ_LD + e % HZ_K];
    if (lid == 0) {
        int count = 0, big = 0, not_definite = 0;
        for (int q = 0; q < BW; ++q) {
            count += transformed_q[q];
            big += big_q[q];
            not_definite |= not_definite_q[q];
        }
        rotated[k] = 1;  /* W may hold a permutation alone: always applied */
        atomic_add(&counters[HZ_TRANSFORMED], count);
        atomic_add(&counters[HZ_BIG], big);
        if (not_definite)
            atomic_inc(&counters[HZ_NOT_DEFINITE]);
    }
}
%endif
