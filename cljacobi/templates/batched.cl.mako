## Batched solvers: a stack of small matrices in one launch; eig_indefinite
## (cjac_batched_eig) and, with problem = "hsvd", the hyperbolic SVD of square
## factors (cjac_batched_hsvd, at the end: the same sweeps with V); with
## problem = "svd" the hsvd kernel for cljacobi.svd's R^* (J = I): zero
## columns allowed (a rank-deficient A), every column carrying its peak's
## rounding.
##
## Every matrix of the stack is solved by LANES work-items of one work-group,
## entirely in local memory: the checks and the scaling of its data, the
## Bunch-Parlett J-factorization with complete pivoting and the rank decision
## (docs/design.md, "Data flow of eig_indefinite", steps 1-3), the one-sided
## hyperbolic Jacobi sweeps with one work-item per pivot pair (the pair
## transformation of the pointwise kernel, pair.cl.mako; Novakovic & Singer
## 2011, Algorithms 4.1 and 4.5), and the extraction (step 5): eigenvalues
## ascending, normalized eigenvectors, the null space of a singular matrix.
## A work-group holds MPG matrices; the matrices never exchange data, so a
## matrix's result does not depend on the stack it is in.
##
## Render parameters (cljacobi.host.batched.BatchedSpec):
##   complex_        complex Hermitian data (element cjac_real2 = (re, im))
##   rotation        1 or 2 (Zhou & Brent 1997, Sect. 2; pointwise.cl.mako)
##   sort_diagonal   Sort_Diagonal before the first and after every sweep
##   vectors         whether the eigenvectors (hsvd: U and Vh, and V kept) are written
##   matrix_in_global  each matrix in its slot of the `workspace` buffer in
##                   global memory instead of local memory (orders whose
##                   matrix does not fit local memory; the O(n) arrays stay
##                   in local memory, and every barrier also fences global
##                   memory)
##   row_split       work-items per pivot pair in the sweeps (a power of
##                   two): each takes every row_split-th row of the pair,
##                   and the pair's sums are added in a fixed order
##   math            "library" or "inline": OpenCL's built-in functions, or
##                   clang's builtins and cjac_hypot in one FMA (arith.prelude)
##   row_vector      rows per explicit vector in a pair's loops (1: none; a
##                   CPU's SIMD width, with row_split 1: arith.row_vectors)
##   lane_sums       how the LANES work-items of a matrix reduce (sums, maxima,
##                   argmax): "local" (local memory, a barrier a level) or
##                   "shuffle" (NVIDIA: shfl.sync within a warp; the same bits)
##   pair_sums       how the work-items of a pair add their sums: "local"
##                   (local memory and a barrier, every device) or
##                   "shuffle" (NVIDIA's shfl.sync in a warp, no barrier;
##                   the same tree: the same bits)
##   size_defines    N (order), NPAD (N rounded up to even), LD (leading
##                   dimension of a matrix in local memory, > N), LANES
##                   (work-items per matrix, ROW_SPLIT times a power of two
##                   >= NPAD/2), ROW_SPLIT, MPG (matrices per work-group),
##                   WG = LANES * MPG, and the batched status bits CJAC_B_*
##   diag_struct     typedef of cjac_diag (cljacobi.host.diagonal)
##   signatures      the kernel's parameter list (BatchedSpec.signatures)
##   problem         "eig", "hsvd" or "svd": which kernel is rendered
##
## Storage of one matrix in local (or global) memory: A[c * LD + row], NPAD
## columns of LD rows.  During the factorization A holds the trailing Schur complement in
## full Hermitian storage and, in columns 0..k-1, the factor's columns in the
## permuted row order (perm[position] = row of M); afterwards it holds G with
## a zero row N, and for an odd rank r the border column e_N of eq. (4.1).
<%namespace name="arith" file="arith.cl.mako"/>
<%namespace name="pair" file="pair.cl.mako"/>
${arith.prelude("double", math)}
${arith.element("double", complex_, "interleaved", with_workgroup_sum=False, math=math)}
${arith.rotation_functions()}

${size_defines}
<% A_space = "__global" if matrix_in_global else "__local" %>\
%if row_vector > 1:
${arith.row_vectors("double", complex_, row_vector, A_space, math)}
%endif
%if matrix_in_global:
#define CJAC_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
%else:
#define CJAC_FENCE CLK_LOCAL_MEM_FENCE
%endif
#if (LANES & (LANES - 1)) != 0 || 2 * LANES < NPAD * ROW_SPLIT || LD <= N
#error "bad batched sizes (cljacobi.host.batched.BatchedSpec)"
#endif

${diag_struct}

/* (1 + sqrt(17)) / 8 of Bunch & Parlett 1971. */
#define CJAC_BP_ALPHA 0.6403882032022076

/* floor(a / b) for b > 0, as Python's a // b (cljacobi.scaling). */
inline int cjac_floordiv(const int a, const int b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Smallest b with count <= 2^b (cljacobi.scaling._bits). */
inline int cjac_bits(const int count)
{
    return count <= 1 ? 0 : 32 - clz(count - 1);
}

/* frexp exponent e of x: 2^(e-1) <= |x| < 2^e. */
inline int cjac_exponent(const cjac_real x)
{
    int e;
    frexp(x, &e);
    return e;
}

/* 2^e x, exactly (no overflow or underflow is possible where it is used). */
inline cjac_elem cjac_elem_ldexp(const cjac_elem x, const int e)
{
%if complex_:
    return (cjac_real2)(ldexp(x.x, e), ldexp(x.y, e));
%else:
    return ldexp(x, e);
%endif
}

inline bool cjac_elem_finite(const cjac_elem x)
{
%if complex_:
    return isfinite(x.x) && isfinite(x.y);
%else:
    return isfinite(x);
%endif
}

<%def name="for_trailing_lower(first)">
/* The entries (i, j), N > i >= j >= ${first}, of the trailing lower triangle
 * in increasing key j N + i, dealt to the lanes in turn (a lane visits its
 * keys increasingly): only the triangle is visited, not all N^2 entries. */
for (int j = ${first}, i = ${first} + lane; ; i += LANES) {
    while (i >= N && j < N) {  /* past column j: on in column j + 1 from row j + 1 */
        ++j;
        i += j - N;
    }
    if (j >= N)
        break;
</%def>
%if (row_split > 1 and pair_sums == "shuffle") or lane_sums == "shuffle":
/* NVIDIA's shfl.sync butterfly (PTX ISA 6.0): lane l gets x of lane
 * l ^ offset of its warp; every lane of the warp takes part. */
inline int cjac_shfl_xor_int(const int x, const int offset)
{
    int y = x;
    asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(y) : "r"(offset));
    return y;
}

inline double cjac_shfl_xor(const double x, const int offset)
{
    int lo, hi;
    double y;
    asm volatile("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "d"(x));
    asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(lo) : "r"(offset));
    asm volatile("shfl.sync.bfly.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(hi) : "r"(offset));
    asm volatile("mov.b64 %0, {%1, %2};" : "=d"(y) : "r"(lo), "r"(hi));
    return y;
}

%endif
<%def name="lanes_reduce(name, ctype, combine)">
%if lane_sums == "shuffle":
<% shuffle = "cjac_shfl_xor_int" if ctype == "int" else "cjac_shfl_xor" %>\
inline ${ctype} ${name}(__local ${ctype} *scratch, const int lid, const int lane,
                        const ${ctype} x)
{
    ${ctype} value = x;
    barrier(CJAC_FENCE);  /* a barrier between the callers' stores and loads, as the local tree's */
    for (int w = LANES / 2; w >= 32; w >>= 1) {  /* across warps */
        scratch[lid] = value;
        barrier(CJAC_FENCE);
        value = ${combine.format("value", "scratch[lid ^ w]")};
        barrier(CJAC_FENCE);
    }
    for (int w = (LANES < 32 ? LANES : 32) / 2; w > 0; w >>= 1)
        value = ${combine.format("value", f"{shuffle}(value, w)")};
    return value;
}
%else:
inline ${ctype} ${name}(__local ${ctype} *scratch, const int lid, const int lane,
                        const ${ctype} x)
{
    scratch[lid] = x;
    barrier(CJAC_FENCE);
    for (int w = LANES / 2; w > 0; w >>= 1) {
        if (lane < w)
            scratch[lid] = ${combine.format("scratch[lid]", "scratch[lid + w]")};
        barrier(CJAC_FENCE);
    }
    const ${ctype} result = scratch[lid - lane];
    barrier(CJAC_FENCE);
    return result;
}
%endif
</%def>
## lane_sums = "shuffle" (NVIDIA): the tree's levels at distances of 32 and
## more through local memory, the rest by shuffles; each level combines the
## values the local tree combines in its lane 0, and the combinations are
## commutative (a + b = b + a, fmax, |; the argmax's order is total), so
## every lane ends with the local tree's bits.
/* Reductions over the LANES work-items of each matrix, in a fixed tree order
 * (bitwise reproducible); called by every work-item of the work-group. */
${lanes_reduce("cjac_lanes_max", "cjac_real", "fmax({}, {})")}
${lanes_reduce("cjac_lanes_or", "int", "{} | {}")}
${lanes_reduce("cjac_lanes_sum", "int", "{} + {}")}
${lanes_reduce("cjac_lanes_sum_real", "cjac_real", "{} + {}")}

%if row_split > 1:
/* The sums of a pivot pair's ROW_SPLIT work-items (adjacent local ids):
 * the pairwise tree ((x0 + x1) + (x2 + x3)) + ..., every work-item ending
 * with the same bits; called by every work-item of the work-group. */
%if pair_sums == "shuffle":
/* NVIDIA: the work-items of a pair are adjacent lanes of a warp, and a
 * butterfly of shfl.sync (PTX ISA 6.0) over them is that tree (each level
 * adds the same two values in either order: a + b = b + a).  No barrier. */
inline cjac_real cjac_pair_sum_real(const cjac_real x)
{
    cjac_real sum = x;
    for (int offset = 1; offset < ROW_SPLIT; offset <<= 1)
        sum += cjac_shfl_xor(sum, offset);
    return sum;
}

inline cjac_elem cjac_pair_sum_elem(const cjac_elem x)
{
%if complex_:
    return (cjac_real2)(cjac_pair_sum_real(x.x), cjac_pair_sum_real(x.y));
%else:
    return cjac_pair_sum_real(x);
%endif
}

inline void cjac_pair_sum_two(const cjac_real x, const cjac_real y,
                              cjac_real *x_total, cjac_real *y_total)
{
    cjac_real x_sum = x, y_sum = y;
    for (int offset = 1; offset < ROW_SPLIT; offset <<= 1) {
        x_sum += cjac_shfl_xor(x_sum, offset);
        y_sum += cjac_shfl_xor(y_sum, offset);
    }
    *x_total = x_sum;
    *y_total = y_sum;
}
%else:
/* Portable: through local memory, one barrier.  No barrier after the
 * reads: each sum of a step has its own scratch (pair.cl.mako numbers
 * them), and the step ends with a barrier before the next writes it. */
${arith.pair_sum("cjac_pair_sum_real", "cjac_real")}
${arith.pair_sum("cjac_pair_sum_elem", "cjac_elem")}

/* Two such sums behind one barrier: x's in sums[0..WG), y's in
 * sums[WG..2 WG). */
inline void cjac_pair_sum_two(__local cjac_real *sums, const int lid, const int part_row,
                              const cjac_real x, const cjac_real y,
                              cjac_real *x_total, cjac_real *y_total)
{
    sums[lid] = x;
    sums[WG + lid] = y;
    barrier(CLK_LOCAL_MEM_FENCE);
    cjac_real x_part[ROW_SPLIT], y_part[ROW_SPLIT];
    for (int q = 0; q < ROW_SPLIT; ++q) {
        x_part[q] = sums[lid - part_row + q];
        y_part[q] = sums[WG + lid - part_row + q];
    }
${arith.tree_sum("x_part")}
${arith.tree_sum("y_part")}
    *x_total = x_part[0];
    *y_total = y_part[0];
}
%endif
%endif

/* The largest value and its key; ties go to the smaller key. */
%if lane_sums == "shuffle":
inline void cjac_argmax_merge(cjac_real *value, int *key, const cjac_real other,
                              const int other_key)
{
    if (other > *value || (other == *value && other_key < *key)) {
        *value = other;
        *key = other_key;
    }
}

inline cjac_real cjac_lanes_argmax(__local cjac_real *scratch, __local int *keys,
                                   const int lid, const int lane, const cjac_real x,
                                   int *key)
{
    cjac_real value = x;
    barrier(CJAC_FENCE);  /* a barrier between the callers' stores and loads, as the local tree's */
    for (int w = LANES / 2; w >= 32; w >>= 1) {  /* across warps */
        scratch[lid] = value;
        keys[lid] = *key;
        barrier(CJAC_FENCE);
        cjac_argmax_merge(&value, key, scratch[lid ^ w], keys[lid ^ w]);
        barrier(CJAC_FENCE);
    }
    for (int w = (LANES < 32 ? LANES : 32) / 2; w > 0; w >>= 1) {
        const cjac_real other = cjac_shfl_xor(value, w);
        const int other_key = cjac_shfl_xor_int(*key, w);
        cjac_argmax_merge(&value, key, other, other_key);
    }
    return value;
}
%else:
inline cjac_real cjac_lanes_argmax(__local cjac_real *scratch, __local int *keys,
                                   const int lid, const int lane, const cjac_real x,
                                   int *key)
{
    scratch[lid] = x;
    keys[lid] = *key;
    barrier(CJAC_FENCE);
    for (int w = LANES / 2; w > 0; w >>= 1) {
        if (lane < w) {
            const cjac_real other = scratch[lid + w];
            const int other_key = keys[lid + w];
            if (other > scratch[lid] || (other == scratch[lid] && other_key < keys[lid])) {
                scratch[lid] = other;
                keys[lid] = other_key;
            }
        }
        barrier(CJAC_FENCE);
    }
    const cjac_real result = scratch[lid - lane];
    *key = keys[lid - lane];
    barrier(CJAC_FENCE);
    return result;
}
%endif

/* Whether any matrix of the work-group has its flag set (flags[MPG]). */
inline bool cjac_any(__local const int *flags)
{
    int any = 0;
    for (int q = 0; q < MPG; ++q)
        any |= flags[q];
    return any != 0;
}

/* Entry (row, col) of matrix `b` of the stack, element strides as given. */
#define CJAC_INPUT(row, col) \
    M[offset + (long)b * matrix_stride + (long)(row) * row_stride + (long)(col) * col_stride]

/* |m_ij| of the symmetrized input (its lower triangle), times 2^s. */
inline cjac_real cjac_scaled_modulus(__global const cjac_elem *M, const long offset,
                                     const long b, const long matrix_stride,
                                     const long row_stride, const long col_stride,
                                     const int i, const int j, const int s)
{
    const int lo = min(i, j), hi = max(i, j);
    const cjac_elem x = CJAC_INPUT(hi, lo);
    return ldexp(i == j ? fabs(cjac_real_part(x)) : cjac_elem_abs(x), s);
}

/* Sort_Diagonal of Algorithm 4.1 (cljacobi.host.diagonal.sort_diagonal): the
 * positive entries first by d decreasingly, then the negative ones
 * increasingly, stable; each lane places two entries by counting. */
inline void cjac_sort_diagonal(__local cjac_diag *D, __local cjac_diag *sorted,
                               const int r_pad, const int lane)
{
    for (int e = lane; e < r_pad; e += LANES) {
        const cjac_diag x = D[e];
        int place = 0;
        for (int f = 0; f < r_pad; ++f) {
            const cjac_diag y = D[f];
            const bool before = x.j > 0
                ? (y.j > 0 && (y.d > x.d || (y.d == x.d && f < e)))
                : (y.j > 0 || y.d < x.d || (y.d == x.d && f < e));
            place += before;
        }
        sorted[place] = x;
    }
    barrier(CJAC_FENCE);
    for (int e = lane; e < r_pad; e += LANES)
        D[e] = sorted[e];
    barrier(CJAC_FENCE);
}

/* Per matrix state, in local memory. */
typedef struct {
    int active;      /* still working (no error, not converged) */
    int flags;       /* CJAC_B_* */
    int k;           /* columns of the factor so far */
    int done;        /* the factorization has stopped */
    int testing;     /* the entrywise rank test is on */
    int pivot;       /* this step's pivot: position of a 1x1, or the first of a 2x2 */
    int pivot2;      /* the second position of a 2x2 pivot, -1 for a 1x1 */
    int s;           /* the matrix shift 2^s */
    int t;           /* the factor shift 2^t */
    int rows;        /* rows of the swept factor: N, or N + 1 with the border */
    int r_pad;       /* columns swept: the rank, bordered to even */
    int positive;    /* positive signs */
    int sweeps;
    int sweep_bits;  /* OR of the status bits of all sweeps */
    int start;       /* the entrywise test starts in this step */
    int peak_rounding; /* hsvd: the columns carry their peak's rounding */
    cjac_real tau;   /* the normwise rank tolerance, N eps max|m_ij| */
} cjac_matrix_state;

<%def name="factor_shift(column_min, column_max)">
/* cljacobi.scaling.factor_shift_from_maxima with m = N */
const int e_min = cjac_exponent(${column_min}), e_max = cjac_exponent(${column_max});
const int d_lo = -1021 + cjac_bits(N), d_hi = 1024 - 16;
const int t_lo = -cjac_floordiv(2 * e_min - 2 - d_lo, 2);
const int t_hi = cjac_floordiv(d_hi - cjac_bits(N) - 2 * e_max, 2);
if (t_lo > t_hi) {
    st->flags |= CJAC_B_FACTOR_RANGE;
    st->active = 0;
}
st->t = cjac_floordiv(t_lo + t_hi, 2);
</%def>
<%def name="packed_diagonal(column)">
/* Algorithm 4.2: the packed diagonal in sign order (position q holds
 * physical column ${column}), the border last with j = -1 as
 * cjac_precompute gives it (its positions from p on are -1). */
for (int q = lane; q < r_pad; q += LANES) {
    const int c = ${column};
    cjac_real d = 0;
    for (int i = 0; i < rows; ++i)
        d = cjac_abs2_acc(A[c * LD + i], d);
    D[q].d = d;
    D[q].rho = c;
    D[q].j = q < st->positive ? 1 : -1;
    peak[c] = d;
}
barrier(CJAC_FENCE);
%if sort_diagonal:
cjac_sort_diagonal(D, sorted_all + mat * NPAD, st->active ? r_pad : 0, lane);
%endif
</%def>
<%def name="sweeps(space, peak_rounding, accumulate_v)">
/* Sweeps of the r_pad columns of G = A (rows `rows`; and of V with
 * accumulate_v) until one without a big rotation or max_sweeps: one
 * work-item per pivot pair of a step, the step tables of the strategy. */
    {
        ${space} cjac_elem *G = A;
        const int ldg = LD, m = rows;
        const bool peak_rounding = ${peak_rounding};
        const int real_columns = r;
%if accumulate_v:
        const int ldv = LD, mv = r_pad;  /* V: r_pad columns of LD rows */
%endif
        const int2 table = table_start[r_pad / 2];  /* (first pair, steps) */
%if row_split > 1:
        /* The positions (0, 1) of the work-items without a pair, valid
         * where the rank is 0 too (they read D and the peaks, no rows). */
        for (int q = r_pad + lane; q < 2; q += LANES) {
            D[q].d = 0;
            D[q].rho = q;
            D[q].j = 1;
        }
%endif
        for (int sweep = 0; sweep < max_sweeps; ++sweep) {
            if (lane == 0)
                starts[mat] = st->active && r_pad > 0;
            barrier(CJAC_FENCE);
            if (!cjac_any(starts))
                break;
            const bool sweeping = st->active && r_pad > 0;
            const long first = table.x + (long)(sweep % sweep_tables) * table.y * (r_pad / 2);
            int pair_status = 0, pair_rotations = 0;
            for (int step_index = 0; step_index < NPAD; ++step_index) {
%if row_split == 1:
                if (sweeping && step_index < table.y && lane < r_pad / 2) {
                    const int2 ij = pairs[first + (long)step_index * (r_pad / 2) + lane];
                    const int i = ij.x, j = ij.y;
                    ${pair.pair_step(space, "cjac_elem", rotation, accumulate_v, "0", "1",
                                     "({})", "({})", "true", "pair_status",
                                     "pair_rotations", row_vector=row_vector)}
                }
%else:
                /* ROW_SPLIT work-items per pair, each on every ROW_SPLIT-th
                 * row; the pair's sums go through local memory, so every
                 * work-item runs the step: one without a pair of this step
                 * takes positions (0, 1) over no rows and writes nothing. */
                {
                    const int pair_index = lane / ROW_SPLIT, part_row = lane % ROW_SPLIT;
                    const bool live = sweeping && step_index < table.y && pair_index < r_pad / 2;
                    const int2 ij = live ? pairs[first + (long)step_index * (r_pad / 2)
                                                 + pair_index] : (int2)(0, 1);
                    const int i = ij.x, j = ij.y;
                    const int m = live ? rows : 0;
%if accumulate_v:
                    const int mv = live ? r_pad : 0;
%endif
<%
    if pair_sums == "shuffle":
        sums = ("cjac_pair_sum_real({0})", "cjac_pair_sum_elem({0})",
                "cjac_pair_sum_two({0}, {1}, &{2}, &{3})")
    else:
        sums = ("cjac_pair_sum_real(pair_sums + ({1} - 1) * WG, lid, part_row, {0})",
                "cjac_pair_sum_elem(pair_sums_elem, lid, part_row, {0})",
                "cjac_pair_sum_two(pair_sums + WG, lid, part_row, {0}, {1}, &{2}, &{3})")
%>
                    ${pair.pair_step(space, "cjac_elem", rotation, accumulate_v, "part_row",
                                     "ROW_SPLIT", sums[0], sums[1],
                                     "live && part_row == 0", "pair_status", "pair_rotations",
                                     every_item_sums=True, sum_real_two=sums[2])}
                }
%endif
                barrier(CJAC_FENCE);
            }
            const int bits = cjac_lanes_or(keys, lid, lane, pair_status);
            const int count_rotated = cjac_lanes_sum(keys, lid, lane, pair_rotations);
%if sort_diagonal:
            cjac_sort_diagonal(D, sorted_all + mat * NPAD, sweeping ? r_pad : 0, lane);
%endif
            if (lane == 0 && sweeping) {
                rotations[b * max_sweeps + sweep] = count_rotated;
                st->sweeps = sweep + 1;
                st->sweep_bits |= bits;
                if (!(bits & CJAC_BIG))
                    st->active = 0;
            }
            barrier(CJAC_FENCE);
        }
    }
</%def>
<%def name="final_flags()">
/* The matrix's flags from its sweeps, its status, the OR of all, its record. */
if (lane == 0 && exists) {
    int flags = st->flags;
    if (!flags && (st->sweep_bits & CJAC_BROKEN))
        flags |= CJAC_B_BREAKDOWN;
    if (!flags && (st->sweep_bits & CJAC_TINY_COLUMN))
        flags |= CJAC_B_TINY_COLUMN;
    if (!flags && st->active && r_pad > 0)
        flags |= CJAC_B_NOT_CONVERGED;
    st->flags = flags;
    status[b] = flags;
    if (flags)  /* the OR the host reads instead of every status */
        atomic_or(summary, flags);
    info[INFO_WIDTH * b] = flags;
    info[INFO_WIDTH * b + 1] = st->sweeps;
    info[INFO_WIDTH * b + 2] = r;
    info[INFO_WIDTH * b + 3] = st->positive;
    info[INFO_WIDTH * b + 4] = st->s;
    info[INFO_WIDTH * b + 5] = st->t;
}
</%def>
<%def name="complete_basis(u_store)">
/* The null space: each missing column, in order, is the unit vector e_k
 * whose row of the basis so far is shortest (ties: smaller k; rows in the
 * factorization's order), made orthogonal to the basis by classical
 * Gram-Schmidt twice, normalized, and put in a free column of A (a
 * deflated one, or one from r on).  The lanes share rows and columns. */
if (lane == 0)
    starts[mat] = 0;
barrier(CJAC_FENCE);
for (int slot = lane; slot < N && writes; slot += LANES)
    if (missing[slot])
        starts[mat] = 1;  /* any lane that finds one: the same value */
barrier(CJAC_FENCE);
if (cjac_any(starts)) {
    __local cjac_real *row_weight = row_norm;
    __local cjac_elem *dots = (__local cjac_elem *)(sorted_all + mat * NPAD);
    for (int i = lane; i < N; i += LANES) {
        cjac_real w = 0;
        for (int c = 0; c < N; ++c)
            if (second[c])
                w = cjac_abs2_acc(A[c * LD + i], w);
        row_weight[i] = w;
    }
    barrier(CJAC_FENCE);
    for (int slot = 0; slot < N; ++slot) {
        const bool need = writes && missing[slot];
        if (lane == 0)
            starts[mat] = need;
        barrier(CJAC_FENCE);
        if (!cjac_any(starts))
            continue;
        cjac_real lightest = -INFINITY;
        int pick = 0x7fffffff;
        for (int i = lane; i < N && need; i += LANES)
            if (-row_weight[i] > lightest) {
                lightest = -row_weight[i];
                pick = i;
            }
        cjac_lanes_argmax(scratch, keys, lid, lane, lightest, &pick);
        if (lane == 0 && need) {
            int free_column = 0;
            while (second[free_column])
                ++free_column;
            st->pivot = free_column;
        }
        barrier(CJAC_FENCE);
        const int f = st->pivot;
        for (int i = lane; i < N && need; i += LANES)
            A[f * LD + i] = i == pick ? cjac_from_real(1) : CJAC_ELEM_ZERO;
        barrier(CJAC_FENCE);
        for (int twice = 0; twice < 2; ++twice) {
            for (int c = lane; c < N && need; c += LANES) {
                cjac_elem dot = CJAC_ELEM_ZERO;
                if (second[c])
                    for (int i = 0; i < N; ++i)
                        dot = cjac_dot_acc(A[c * LD + i], A[f * LD + i], dot);
                dots[c] = dot;
            }
            barrier(CJAC_FENCE);
            for (int i = lane; i < N && need; i += LANES) {
                cjac_elem x = A[f * LD + i];
                for (int c = 0; c < N; ++c)
                    if (second[c])
                        x = cjac_axpy(-dots[c], A[c * LD + i], x);
                A[f * LD + i] = x;
            }
            barrier(CJAC_FENCE);
        }
        cjac_real part = 0;
        for (int i = lane; i < N && need; i += LANES)
            part = cjac_abs2_acc(A[f * LD + i], part);
        const cjac_real norm = sqrt(cjac_lanes_sum_real(scratch, lid, lane, part));
        for (int i = lane; i < N && need; i += LANES) {
            const cjac_elem x = A[f * LD + i] / norm;
            A[f * LD + i] = x;
            row_weight[i] = cjac_abs2_acc(x, row_weight[i]);
            ${u_store} = x;
        }
        if (lane == 0 && need)
            second[f] = 1;
        barrier(CJAC_FENCE);
    }
}
</%def>

%if problem == "eig":
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_batched_eig(${signatures["cjac_batched_eig"].parameters})
{
%if not matrix_in_global:
    __local cjac_elem A_all[MPG * NPAD * LD];
%endif
    __local cjac_diag D_all[MPG * NPAD];
    /* 16-byte aligned: the null-space completion keeps its complex dot
     * products (double2) here, and cjac_diag is 16 bytes, 8-aligned */
    __local cjac_diag sorted_all[MPG * NPAD] __attribute__((aligned(16)));
    /* The row norms of the factorization, then the peaks of the sweeps, then
     * the eigenvalues of the extraction, then the row weights of the null
     * space: one array, each use dead before the next (barriers between).
     * Likewise the signs of the pivots (up to step 3) and the eigenvector
     * columns still to complete (step 5).  Every 256 bytes count: a real
     * 64 x 64 matrix's work-group fits six times in an H200 SM's 228 KiB of
     * shared memory, not five. */
    __local cjac_real peak_all[MPG * NPAD];
    __local int perm_all[MPG * N];
    __local int sign_all[MPG * NPAD];
    __local int second_all[MPG * NPAD];   /* 1: second column of a 2x2 pivot */
    __local int column_of_all[MPG * NPAD]; /* column of the q-th in sign order */
    __local cjac_real scratch[WG];
%if row_split > 1 and pair_sums == "local":
    __local cjac_elem pair_sums_elem[WG];  /* a pair's a_ij (sum 0 of a step) */
    __local cjac_real pair_sums[3 * WG];   /* its sums 1..3 */
%endif
    __local int keys[WG];
    __local int starts[MPG];
    __local cjac_matrix_state state_all[MPG];

    const int lid = get_local_id(0);
    const int lane = lid % LANES, mat = lid / LANES;
    const long b = (long)get_group_id(0) * MPG + mat;
    const bool exists = b < count;
%if matrix_in_global:
    __global cjac_elem *A = workspace + ((size_t)get_group_id(0) * MPG + mat) * (NPAD * LD);
%else:
    __local cjac_elem *A = A_all + mat * NPAD * LD;
%endif
    __local cjac_diag *D = D_all + mat * NPAD;
    __local cjac_real *peak = peak_all + mat * NPAD;
    __local cjac_real *row_norm = peak;  /* ||g_i|| in the factorization only */
    __local int *perm = perm_all + mat * N;
    __local int *sign = sign_all + mat * NPAD;
%if vectors:
    __local int *missing = sign;  /* eigenvector columns still to complete (step 5) */
%endif
    __local int *second = second_all + mat * NPAD;
    __local int *column_of = column_of_all + mat * NPAD;
    __local cjac_matrix_state *st = state_all + mat;

    /* ---- Step 1: checks, the symmetrized matrix, the shift 2^s ----------- */
    cjac_real asymmetry = 0, largest = 0, smallest = INFINITY, everything = 0;
    int bad = 0;
    for (int e = lane; e < NPAD * LD; e += LANES)
        A[e] = CJAC_ELEM_ZERO;
    barrier(CJAC_FENCE);
    if (exists) {
        for (int e = lane; e < N * N; e += LANES) {
            const int j = e / N, i = e - j * N;
            if (i < j)
                continue;
            const cjac_elem lower = CJAC_INPUT(i, j), upper = CJAC_INPUT(j, i);
            if (!cjac_elem_finite(lower) || !cjac_elem_finite(upper)) {
                bad |= CJAC_B_NOT_FINITE;
                continue;
            }
            const cjac_elem value = i == j ? cjac_from_real(cjac_real_part(lower)) : lower;
            asymmetry = fmax(asymmetry, cjac_elem_abs(lower - cjac_conj(upper)));
            everything = fmax(everything, fmax(cjac_elem_abs(lower), cjac_elem_abs(upper)));
            const cjac_real modulus = cjac_elem_abs(value);
            largest = fmax(largest, modulus);
            if (modulus > 0)
                smallest = fmin(smallest, modulus);
            A[j * LD + i] = value;
            A[i * LD + j] = cjac_conj(value);
        }
    }
    bad = cjac_lanes_or(keys, lid, lane, bad);
    asymmetry = cjac_lanes_max(scratch, lid, lane, asymmetry);
    everything = cjac_lanes_max(scratch, lid, lane, everything);
    largest = cjac_lanes_max(scratch, lid, lane, largest);
    smallest = -cjac_lanes_max(scratch, lid, lane, -smallest);
    if (lane == 0) {
        int flags = exists ? bad : 0;
        /* max|M - M^*| <= sqrt(eps) max|M| (cljacobi.validation.symmetric_part) */
        if (exists && !flags && asymmetry > sqrt(CJAC_EPS) * everything)
            flags |= CJAC_B_NOT_HERMITIAN;
        /* cljacobi.scaling.matrix_shift_from_range */
        const int e_lo = largest > 0 ? cjac_exponent(smallest) : 0;
        const int e_hi = largest > 0 ? cjac_exponent(largest) : 0;
        const int top = 1024 - 16 - cjac_bits(N), bottom = -1021;
        int s = 0;
        if (largest > 0) {
            if (e_hi - e_lo > top - bottom - 2)
                flags |= CJAC_B_ENTRY_RANGE;
            s = 2 * cjac_floordiv(top + bottom - e_hi - e_lo, 4);
            if (e_hi + s > top)
                s -= 2;
            else if (e_lo + s < bottom)
                s += 2;
        }
        st->flags = flags;
        st->active = exists && !flags;
        st->s = s;
        st->t = 0;
        st->k = 0;
        st->done = !(largest > 0);  /* the zero matrix: rank 0 */
        st->testing = 0;
        st->sweeps = 0;
        st->sweep_bits = 0;
        st->tau = N * CJAC_EPS * ldexp(largest, s);
        if (exists) {
            report[REPORT_WIDTH * b] = asymmetry;
            report[REPORT_WIDTH * b + 1] = everything;
            report[REPORT_WIDTH * b + 2] = smallest;
            report[REPORT_WIDTH * b + 3] = largest;
        }
    }
    for (int i = lane; i < N; i += LANES) {
        perm[i] = i;
        row_norm[i] = 0;
    }
    for (int c = lane; c < NPAD; c += LANES)
        second[c] = 0;
    barrier(CJAC_FENCE);
    if (st->active) {
        for (int e = lane; e < N * N; e += LANES) {
            const int j = e / N, i = e - j * N;
            A[j * LD + i] = cjac_elem_ldexp(A[j * LD + i], st->s);
        }
    }
    barrier(CJAC_FENCE);

    /* ---- Step 2: Bunch-Parlett complete pivoting, M = G J G^* ------------
     * (Bunch & Parlett 1971; Slapnicar 1992: 1x1 pivots give l sqrt|d|, 2x2
     * pivots are diagonalized by a Jacobi rotation; cljacobi.factorization.
     * j_factorize, whose decisions these are, ties included). */
    /* The rounding-error bound of trailing entry (i, j), 4 N eps (|m_ij| +
     * ||g_i|| ||g_j||) with |m_ij| of the original entry now at (i, j)
     * (cljacobi.factorization.entry_noise_level). */
#define CJAC_NOISE_BOUND(i, j) (4 * N * CJAC_EPS * ( \
        cjac_scaled_modulus(M, offset, b, matrix_stride, row_stride, col_stride, \
                            perm[i], perm[j], st->s) + row_norm[i] * row_norm[j]))
    for (int step = 0; step < N; ++step) {
        const bool working = st->active && !st->done;
        const int k = st->k;
        cjac_real mu0 = 0, mu1 = -1;
        int where0 = 0x7fffffff, where1 = 0x7fffffff;
        for (int pass = 0; pass < 2; ++pass) {
            /* The largest |s_ij| of the trailing lower triangle (ties: smaller
             * (column, row)) and the largest |s_ii|. */
            cjac_real best0 = 0, best1 = -1;
            int key0 = 0x7fffffff, key1 = 0x7fffffff;
            if (working) {
                ${for_trailing_lower("k")}
                    const cjac_real modulus = i == j ? fabs(cjac_real_part(A[j * LD + i]))
                                                     : cjac_elem_abs(A[j * LD + i]);
                    if (modulus > best0) {  /* lanes visit keys increasingly */
                        best0 = modulus;
                        key0 = j * N + i;
                    }
                    if (i == j && modulus > best1) {
                        best1 = modulus;
                        key1 = i;
                    }
                }
            }
            mu0 = cjac_lanes_argmax(scratch, keys, lid, lane, best0, &key0);
            mu1 = cjac_lanes_argmax(scratch, keys, lid, lane, best1, &key1);
            where0 = key0;
            where1 = key1;
            if (pass == 1)
                break;
            /* Normwise negligible for the first time: the entrywise test starts,
             * drops the noise of the trailing matrix, and the search is redone. */
            if (lane == 0) {
                st->start = working && !st->testing && !(mu0 > st->tau);
                starts[mat] = st->start;
                if (st->start)
                    st->testing = 1;
            }
            barrier(CJAC_FENCE);
            if (!cjac_any(starts))
                break;
            if (st->start) {
                ${for_trailing_lower("k")}
                    if (cjac_elem_abs(A[j * LD + i]) <= CJAC_NOISE_BOUND(i, j)) {
                        A[j * LD + i] = CJAC_ELEM_ZERO;
                        A[i * LD + j] = CJAC_ELEM_ZERO;
                    }
                }
            }
            barrier(CJAC_FENCE);
        }
        if (lane == 0 && working) {
            if (!(mu0 > st->tau) && !(mu0 > 0)) {
                st->done = 1;
                st->pivot = -1;
            } else if (mu1 >= CJAC_BP_ALPHA * mu0) {
                st->pivot = where1;
                st->pivot2 = -1;
            } else {  /* (min(r, c), max(r, c)) = (column, row) of the lower triangle */
                const int column = where0 / N, row = where0 - column * N;
                st->pivot = column;
                st->pivot2 = row;
            }
        }
        barrier(CJAC_FENCE);
        const bool pivoting = working && !st->done;
        /* Symmetric interchanges k <-> pivot (and k + 1 <-> pivot2): rows over
         * every column (factor columns and trailing matrix), then columns. */
        for (int t = 0; t < 2; ++t) {
            const int a = k + t, z = t == 0 ? st->pivot : st->pivot2;
            const bool swap = pivoting && z >= 0 && z != a;
            if (swap) {
                for (int c = lane; c < N; c += LANES) {
                    const cjac_elem x = A[c * LD + a];
                    A[c * LD + a] = A[c * LD + z];
                    A[c * LD + z] = x;
                }
            }
            barrier(CJAC_FENCE);
            if (swap) {
                for (int i = k + lane; i < N; i += LANES) {
                    const cjac_elem x = A[a * LD + i];
                    A[a * LD + i] = A[z * LD + i];
                    A[z * LD + i] = x;
                }
                if (lane == 0) {
                    const int p = perm[a];
                    perm[a] = perm[z];
                    perm[z] = p;
                    const cjac_real q = row_norm[a];
                    row_norm[a] = row_norm[z];
                    row_norm[z] = q;
                }
            }
            barrier(CJAC_FENCE);
        }
        /* The new columns of G, in place of the pivot columns; the pivot block
         * is read by every lane before any lane writes it. */
        const int width = st->pivot2 >= 0 ? 2 : 1;
        const cjac_real a = cjac_real_part(A[k * LD + k]);
        const cjac_real c = width == 2 ? cjac_real_part(A[(k + 1) * LD + k + 1]) : 0;
        const cjac_elem lower = width == 2 ? A[k * LD + k + 1] : CJAC_ELEM_ZERO;  /* conj(b) */
        barrier(CJAC_FENCE);
        if (pivoting && width == 1) {
            /* 1x1 pivot d = a: column x / (sign(d) sqrt|d|), pivot entry sqrt|d|. */
            const cjac_real root = sqrt(fabs(a));
            const cjac_real divisor = a > 0 ? root : -root;
            for (int i = k + 1 + lane; i < N; i += LANES)
                A[k * LD + i] = A[k * LD + i] / divisor;
            if (lane == 0) {
                A[k * LD + k] = cjac_from_real(root);
                sign[k] = a > 0 ? 1 : -1;
            }
        } else if (pivoting) {
            /* 2x2 pivot E = [[a, b], [conj b, c]], E = Q Lambda Q^* by one Jacobi
             * rotation of [[a, |b|], [|b|, c]] (cljacobi.factorization._eigh_2x2):
             * kappa = (c - a)/(2|b|), t = sign(kappa)/(|kappa| + sqrt(1 + kappa^2)),
             * Q = [[cs, sn], [-sn e^{-i phi}, cs e^{-i phi}]], lambda = (a - t|b|,
             * c + t|b|); columns X Q diag(sign(lambda)/sqrt|lambda|), pivot rows
             * Q |Lambda|^(1/2) (cljacobi.factorization._pivot_2x2). */
            const cjac_real beta = cjac_elem_abs(lower);
            const cjac_real kappa = (c - a) / (2 * beta);
            const cjac_real t = copysign((cjac_real)1, kappa)
                                / (fabs(kappa) + sqrt(1 + kappa * kappa));
            const cjac_real cs = 1 / sqrt(1 + t * t), sn = t * cs;
            const cjac_elem phase = lower / beta;  /* e^{-i phi} = conj(b / |b|) */
            const cjac_real lambda0 = a - t * beta, lambda1 = c + t * beta;
            const cjac_real root0 = sqrt(fabs(lambda0)), root1 = sqrt(fabs(lambda1));
            const cjac_real f0 = (lambda0 > 0 ? 1 : -1) / root0;
            const cjac_real f1 = (lambda1 > 0 ? 1 : -1) / root1;
            const cjac_elem q00 = cjac_from_real(cs), q01 = cjac_from_real(sn);
            const cjac_elem q10 = cjac_scale(-sn, phase), q11 = cjac_scale(cs, phase);
            const cjac_elem f00 = cjac_scale(f0, q00), f01 = cjac_scale(f1, q01);
            const cjac_elem f10 = cjac_scale(f0, q10), f11 = cjac_scale(f1, q11);
            for (int i = k + 2 + lane; i < N; i += LANES) {
                const cjac_elem x0 = A[k * LD + i], x1 = A[(k + 1) * LD + i];
                A[k * LD + i] = cjac_axpy(x1, f10, cjac_mul(x0, f00));
                A[(k + 1) * LD + i] = cjac_axpy(x1, f11, cjac_mul(x0, f01));
            }
            if (lane == 0) {
                A[k * LD + k] = cjac_scale(root0, q00);
                A[k * LD + k + 1] = cjac_scale(root0, q10);
                A[(k + 1) * LD + k] = cjac_scale(root1, q01);
                A[(k + 1) * LD + k + 1] = cjac_scale(root1, q11);
                sign[k] = lambda0 > 0 ? 1 : -1;
                sign[k + 1] = lambda1 > 0 ? 1 : -1;
                second[k + 1] = 1;
            }
        }
        barrier(CJAC_FENCE);
        const int next = k + width;
        if (pivoting) {
            /* ||g_i|| with the new columns, i >= next (hypots, as the host). */
            for (int i = next + lane; i < N; i += LANES) {
                cjac_real norm = row_norm[i];
                for (int c = k; c < next; ++c)
                    norm = cjac_hypot(norm, cjac_elem_abs(A[c * LD + i]));
                row_norm[i] = norm;
            }
        }
        barrier(CJAC_FENCE);
        if (pivoting) {
            /* Schur update S <- S - W diag(signs) W^* of the trailing lower
             * triangle, mirrored; with the entrywise test on, the entries within
             * 4 N eps (|m_ij| + ||g_i|| ||g_j||) are dropped. */
            ${for_trailing_lower("next")}
                cjac_elem x = A[j * LD + i];
                for (int c = k; c < next; ++c) {
                    const cjac_elem term = cjac_mul(A[c * LD + i], cjac_conj(A[c * LD + j]));
                    x = sign[c] > 0 ? x - term : x + term;
                }
                if (i == j)
                    x = cjac_from_real(cjac_real_part(x));
                if (st->testing) {
                    if (cjac_elem_abs(x) <= CJAC_NOISE_BOUND(i, j))
                        x = CJAC_ELEM_ZERO;
                }
                A[j * LD + i] = x;
                A[i * LD + j] = cjac_conj(x);
            }
        }
        barrier(CJAC_FENCE);
        if (lane == 0 && pivoting) {
            st->k = next;
            st->done = next == N;
        }
        barrier(CJAC_FENCE);
    }

    /* ---- Step 3: G in sign order, the border, the factor shift 2^t -------- */
    const int r = st->k;
    if (lane == 0) {
        int q = 0;
        for (int c = 0; c < r; ++c)
            if (sign[c] > 0)
                column_of[q++] = c;
        st->positive = q;
        for (int c = 0; c < r; ++c)
            if (sign[c] < 0)
                column_of[q++] = c;
        st->r_pad = r + (r & 1);
        st->rows = N + (r & 1);
        if (r & 1)
            column_of[r] = r;  /* the border column */
    }
    barrier(CJAC_FENCE);
    /* Only G stays: zeros above each column (but the upper entry of a 2x2
     * pivot block), in row N, and in the columns from r on; e_N borders an
     * odd rank (eq. (4.1)). */
    for (int e = lane; e < NPAD * LD; e += LANES) {
        const int c = e / LD, i = e - c * LD;
        const bool keep = c < r && i < N && (i >= c || (i == c - 1 && second[c]));
        if (!keep)
            A[e] = (c == r && i == N && (r & 1)) ? cjac_from_real(1) : CJAC_ELEM_ZERO;
    }
    barrier(CJAC_FENCE);
    cjac_real column_max = INFINITY;  /* +inf: no column (min below) */
    cjac_real widest = 0;
    for (int c = lane; c < r; c += LANES) {
        cjac_real x = 0;
        for (int i = 0; i < N; ++i)
            x = fmax(x, cjac_elem_abs(A[c * LD + i]));
        column_max = fmin(column_max, x);
        widest = fmax(widest, x);
    }
    column_max = -cjac_lanes_max(scratch, lid, lane, -column_max);
    widest = cjac_lanes_max(scratch, lid, lane, widest);
    if (lane == 0 && st->active && r > 0) {
        report[REPORT_WIDTH * b + 4] = column_max;
        report[REPORT_WIDTH * b + 5] = widest;
        ${factor_shift("column_max", "widest")}
    }
    barrier(CJAC_FENCE);
    const int rows = st->rows, r_pad = st->r_pad;
    if (st->active) {
        for (int e = lane; e < r * LD; e += LANES)
            A[e] = cjac_elem_ldexp(A[e], st->t);
    }
    barrier(CJAC_FENCE);
    ${packed_diagonal("column_of[q]")}

    /* ---- Step 4: the sweeps, one work-item per pivot pair ---------------- */
    ${sweeps(A_space, "true", False)}
    ${final_flags()}
    barrier(CJAC_FENCE);

    /* ---- Step 5: eigenvalues ascending, eigenvectors --------------------- */
    /* lambda = j d 2^-(2t + s) of physical column c (the single path's column
     * q = its place in sign order), the n - r zeros after them; a stable sort
     * by counting.  A matrix with an error writes nothing. */
    const int fatal = CJAC_B_NOT_FINITE | CJAC_B_NOT_HERMITIAN | CJAC_B_ENTRY_RANGE
                      | CJAC_B_FACTOR_RANGE | CJAC_B_BREAKDOWN | CJAC_B_TINY_COLUMN;
    const bool writes = exists && !(st->flags & fatal);
    const int shift = 2 * st->t + st->s;
    /* D by physical column: where the final packed diagonal put it. */
    for (int q = lane; q < r_pad; q += LANES)
        sorted_all[mat * NPAD + D[q].rho] = D[q];
    barrier(CJAC_FENCE);
    __local cjac_diag *by_column = sorted_all + mat * NPAD;
    /* The eigenvalue of entry e, once (peak, dead after the sweeps, holds them;
     * the row weights below take it over). */
    __local cjac_real *value_of = peak;
%if vectors:
    for (int c = lane; c < NPAD; c += LANES)
        second[c] = 0;  /* from here on: 1 for the columns of the orthonormal basis */
%endif
    int lost = 0;
    for (int e = lane; e < N && writes; e += LANES) {
        cjac_real value = 0;
        if (e < r) {
            const cjac_diag x = by_column[column_of[e]];
            value = ldexp(x.j * x.d, -shift);
            lost |= x.d != 0 && (value == 0 || !isfinite(value));
        }
        value_of[e] = value;
    }
    barrier(CJAC_FENCE);
    for (int e = lane; e < N && writes; e += LANES) {
        const cjac_real value = value_of[e];
        int place = 0;
        for (int f = 0; f < N; ++f)
            place += value_of[f] < value || (value_of[f] == value && f < e);
        W[b * N + place] = value;
%if vectors:
        /* u = g / ||g||, normalized in place (the basis of the completion
         * below); a zero column (deflated) and the null space are completed. */
        cjac_real norm = 0;
        const int c = e < r ? column_of[e] : 0;
        if (e < r)
            for (int i = 0; i < N; ++i)
                norm = cjac_abs2_acc(A[c * LD + i], norm);
        norm = sqrt(norm);
        const bool valid = e < r && norm > 0;
        for (int i = 0; i < N && valid; ++i) {
            const cjac_elem u = A[c * LD + i] / norm;
            A[c * LD + i] = u;
            U[(b * N + perm[i]) * N + place] = u;
        }
        if (valid)
            second[c] = 1;  /* column c is in the basis */
        missing[place] = !valid;
%endif
    }
    lost = cjac_lanes_or(keys, lid, lane, lost);
    if (lane == 0 && writes && lost) {
        status[b] = info[INFO_WIDTH * b] = st->flags | CJAC_B_VALUE_RANGE;
        atomic_or(summary, CJAC_B_VALUE_RANGE);
    }
%if vectors:
    barrier(CJAC_FENCE);
    ${complete_basis("U[(b * N + perm[i]) * N + slot]")}
%endif
}
%else:
/* Batched hsvd: a stack of square factors G with signatures J, the sweeps of
 * cljacobi.hyperbolic_svd on each (its square case: no QR, the columns in
 * sign order): the columns of G in the order +1 first (stable, as
 * cljacobi.shortening.shorten), the power-of-two shift of the factor
 * (cljacobi.scaling.factor_shift), the one-sided hyperbolic sweeps with V
 * accumulated (Novakovic & Singer 2011, eq. (2.1)), then S descending, J
 * permuted alike, U = G_final diag(1/S) (completed for zero S) and
 * Vh = J V^* J with the columns back in input order. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_batched_hsvd(${signatures["cjac_batched_hsvd"].parameters})
{
%if not matrix_in_global:
    __local cjac_elem A_all[MPG * NPAD * LD];
%if vectors:
    __local cjac_elem V_all[MPG * NPAD * LD];
%endif
%endif
    __local cjac_diag D_all[MPG * NPAD];
    __local cjac_diag sorted_all[MPG * NPAD] __attribute__((aligned(16)));
    /* The peaks of the sweeps, then the final column norms (S scaled), then
     * the row weights of the completion. */
    __local cjac_real peak_all[MPG * NPAD];
    __local int column_of_all[MPG * NPAD];  /* input column of physical column c */
    __local int second_all[MPG * NPAD];     /* 1: a column of U's basis (step 5) */
    __local int missing_all[MPG * NPAD];    /* U's columns still to complete */
    __local cjac_real scratch[WG];
%if row_split > 1 and pair_sums == "local":
    __local cjac_elem pair_sums_elem[WG];  /* a pair's a_ij (sum 0 of a step) */
    __local cjac_real pair_sums[3 * WG];   /* its sums 1..3 */
%endif
    __local int keys[WG];
    __local int starts[MPG];
    __local cjac_matrix_state state_all[MPG];

    const int lid = get_local_id(0);
    const int lane = lid % LANES, mat = lid / LANES;
    const long b = (long)get_group_id(0) * MPG + mat;
    const bool exists = b < count;
%if matrix_in_global:
    /* G, then V, in the matrix's slot of the workspace */
    __global cjac_elem *A = workspace + ((size_t)get_group_id(0) * MPG + mat)
                                        * (${2 if vectors else 1} * NPAD * LD);
%if vectors:
    __global cjac_elem *V = A + NPAD * LD;
%endif
%else:
    __local cjac_elem *A = A_all + mat * NPAD * LD;
%if vectors:
    __local cjac_elem *V = V_all + mat * NPAD * LD;
%endif
%endif
    __local cjac_diag *D = D_all + mat * NPAD;
    __local cjac_real *peak = peak_all + mat * NPAD;
    __local cjac_real *row_norm = peak;  /* the completion's row weights */
    __local int *column_of = column_of_all + mat * NPAD;
    __local int *second = second_all + mat * NPAD;
    __local int *missing = missing_all + mat * NPAD;
    __local cjac_matrix_state *st = state_all + mat;

    /* ---- Step 1: the columns in sign order, checks, the shift 2^t -------- */
    if (lane == 0) {
        int q = 0;
        for (int c = 0; c < N; ++c)
            if (!exists || signs[b * sign_stride + c] > 0)
                column_of[q++] = c;
        st->positive = q;
        for (int c = 0; c < N; ++c)
            if (exists && !(signs[b * sign_stride + c] > 0))
                column_of[q++] = c;
    }
    for (int e = lane; e < NPAD * LD; e += LANES)
        A[e] = CJAC_ELEM_ZERO;
    barrier(CJAC_FENCE);
    /* G[:, column_of[c]] into column c; the column maxima (a NaN is flagged,
     * fmax passes over it) and the first zero column of the input. */
    cjac_real column_min = INFINITY, widest = 0;
    int zero_column = N, bad = 0;
    for (int c = lane; c < N && exists; c += LANES) {
        const int source = column_of[c];
        cjac_real x = 0;
        for (int i = 0; i < N; ++i) {
            const cjac_elem value = CJAC_INPUT(i, source);
            if (!cjac_elem_finite(value))
                bad |= CJAC_B_NOT_FINITE;
            x = fmax(x, cjac_elem_abs(value));
            A[c * LD + i] = value;
        }
        if (x == 0)
            zero_column = min(zero_column, source);
%if problem == "svd":
        if (x > 0)  /* zero columns stay zero under any shift (rank-deficient A) */
            column_min = fmin(column_min, x);
%else:
        column_min = fmin(column_min, x);
%endif
        widest = fmax(widest, x);
    }
    bad = cjac_lanes_or(keys, lid, lane, bad);
    zero_column = -cjac_lanes_max(scratch, lid, lane, -(cjac_real)zero_column);
    column_min = -cjac_lanes_max(scratch, lid, lane, -column_min);
    widest = cjac_lanes_max(scratch, lid, lane, widest);
    if (lane == 0) {
        int flags = exists ? bad : 0;
%if problem != "svd":
        if (exists && !flags && zero_column < N)
            flags |= CJAC_B_ZERO_COLUMN;
%endif
        st->flags = flags;
        st->active = exists && !flags;
        st->s = 0;
        st->t = 0;
        st->sweeps = 0;
        st->sweep_bits = 0;
        st->r_pad = NPAD;
        st->rows = N + (N & 1);
        if (exists) {
            report[REPORT_WIDTH * b] = zero_column;
            report[REPORT_WIDTH * b + 4] = column_min;
            report[REPORT_WIDTH * b + 5] = widest;
        }
        if (st->active && widest > 0) {
            ${factor_shift("column_min", "widest")}
        }
    }
    barrier(CJAC_FENCE);
    /* The swept columns and rows from the state, as in the eig kernel: with
     * the compile-time NPAD as the bound, PoCL 3.0 (LLVM 14) dropped the
     * second trip of the packed diagonal's loop for complex data. */
    const int r = N, r_pad = st->r_pad, rows = st->rows;
    if (st->active) {
        for (int e = lane; e < r * LD; e += LANES)
            A[e] = cjac_elem_ldexp(A[e], st->t);
#if N % 2
        if (lane == 0)  /* e_N borders an odd order (eq. (4.1)) */
            A[N * LD + N] = cjac_from_real(1);
#endif
    }
    barrier(CJAC_FENCE);
    /* The row norms of the scaled G, the largest and the smallest nonzero
     * one: the columns carry their peak's rounding unless the rows are
     * graded, max ||row|| > min ||row|| / sqrt(tol), tol = sqrt(N) eps
     * (cljacobi.hyperbolic_svd._columns_carry_scale). */
    cjac_real row_max = 0, row_min = INFINITY;
    for (int i = lane; i < N && st->active; i += LANES) {
        cjac_real x = 0;
        for (int c = 0; c < N; ++c)
            x = cjac_abs2_acc(A[c * LD + i], x);
        x = sqrt(x);
        row_max = fmax(row_max, x);
        if (x > 0)
            row_min = fmin(row_min, x);
    }
    row_max = cjac_lanes_max(scratch, lid, lane, row_max);
    row_min = -cjac_lanes_max(scratch, lid, lane, -row_min);
    if (lane == 0)
%if problem == "svd":
        st->peak_rounding = 1;  /* as cljacobi.svd sweeps R^* */
%else:
        st->peak_rounding = row_max <= row_min / sqrt(sqrt((cjac_real)N) * CJAC_EPS);
%endif
%if vectors:
    for (int e = lane; e < NPAD * LD; e += LANES) {
        const int c = e / LD, i = e - c * LD;
        V[e] = i == c ? cjac_from_real(1) : CJAC_ELEM_ZERO;
    }
%endif
    barrier(CJAC_FENCE);
    ${packed_diagonal("q")}

    /* ---- Step 2: the sweeps, one work-item per pivot pair ---------------- */
    ${sweeps(A_space, "st->peak_rounding", vectors)}
    ${final_flags()}
    barrier(CJAC_FENCE);

    /* ---- Step 3: S descending, J, U, Vh ----------------------------------- */
    /* sigma_c = ||g_c|| of physical column c, S its value 2^-t sigma_c in
     * place place(c) of a stable descending sort (by counting). */
    const int fatal = CJAC_B_NOT_FINITE | CJAC_B_ZERO_COLUMN | CJAC_B_FACTOR_RANGE
                      | CJAC_B_BREAKDOWN | CJAC_B_TINY_COLUMN;
    const bool writes = exists && !(st->flags & fatal);
    __local cjac_real *sigma = peak;
    for (int c = lane; c < N && writes; c += LANES) {
        cjac_real norm = 0;
        for (int i = 0; i < rows; ++i)
            norm = cjac_abs2_acc(A[c * LD + i], norm);
        sigma[c] = sqrt(norm);
    }
%if vectors:
    for (int c = lane; c < NPAD; c += LANES)
        second[c] = 0;
%endif
    barrier(CJAC_FENCE);
    int lost = 0, nonzero = 0;
    for (int c = lane; c < N && writes; c += LANES) {
        const cjac_real norm = sigma[c];
        int place = 0;
        for (int f = 0; f < N; ++f)
            place += sigma[f] > norm || (sigma[f] == norm && f < c);
        const cjac_real value = ldexp(norm, -st->t);
        lost |= norm != 0 && (value == 0 || !isfinite(value));
        nonzero += norm > 0;
        S[b * N + place] = value;
        const int sign_c = c < st->positive ? 1 : -1;
        J_out[b * N + place] = (char)sign_c;
%if vectors:
        const bool valid = norm > 0;
        for (int i = 0; i < N && valid; ++i) {
            const cjac_elem u = A[c * LD + i] / norm;
            A[c * LD + i] = u;
            U[(b * N + i) * N + place] = u;
        }
        if (valid)
            second[c] = 1;  /* column c is in the basis */
        missing[place] = !valid;
        /* Vh = J V^* J (V^* J V = J), row place(c), columns in input order */
        for (int k = 0; k < N; ++k) {
            const cjac_elem v = cjac_conj(V[c * LD + k]);
            Vh[(b * N + place) * N + column_of[k]] = (k < st->positive) == (sign_c > 0)
                                                    ? v : -v;
        }
%endif
    }
    lost = cjac_lanes_or(keys, lid, lane, lost);
    nonzero = cjac_lanes_sum(keys, lid, lane, nonzero);
    if (lane == 0 && writes) {
        info[INFO_WIDTH * b + 2] = nonzero;
        if (lost) {
            status[b] = info[INFO_WIDTH * b] = st->flags | CJAC_B_VALUE_RANGE;
            atomic_or(summary, CJAC_B_VALUE_RANGE);
        }
    }
%if vectors:
    barrier(CJAC_FENCE);
    ${complete_basis("U[(b * N + i) * N + slot]")}
%endif
}
%endif
