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
##   1. applies H_j^H to the trailing columns c > j, COLS columns a
##      work-group (each entry of v_j loaded once for all of them):
##      w = v_j^H b_c, then b_c -= conj(tau_j) w v_j (rows j..), the columns
##      read twice (the second time mostly from the cache), and measures
##      each column over rows j + 2.. (`xnorms`, the x of xLARFG if the column
##      is the next pivot) and over rows j + 1.. (`norms`, the next pivot
##      search), from the updated entries.  The norms are recomputed every
##      step, not downdated as xGEQP3 does (no cancellation to guard
##      against).  The squares are scaled by the power of two of the
##      column's norm a step earlier (an upper bound), and summed again at the
##      scale of their largest entry where that entry, scaled, leaves
##      [2^-440, 2^440] (strongly graded rows; LAPACK xNRM2's purpose);
##   2. its last work-group to finish (a ticket counter, as bunch_parlett's)
##      picks the column of largest norm among c > j (the first of equal
##      ones), swaps it into position s = j + 1 (the whole column, as xGEQP3
##      does, with its norms and its place in `columns`), and forms H_s from
##      it: xLARFG's beta and tau from b_ss and the stored norm of x, then
##      v = x / (b_ss - beta) (xLARFG itself, with its rescaling, where beta
##      falls below SAFMIN); then state[J] = s.
## Before it, cjac_qr_load copies 2^exponent B from the row-major B the host
## uploaded, rows in the sorted order (W[c * ld + i] = 2^e B[row_order[i] * cols + c]),
## through local-memory tiles so that both sides are read and written
## contiguously; cjac_qr_load_columns does the same from B's columns (a
## row-major B^T, as a wide A gives it: W[c * ld + i] = 2^e S[c * lds + row_order[i]]).
## The first launch (j = -1) only measures the columns and forms H_0.
## After the sweeps, the reflectors are applied to a matrix C (column-major,
## rows x p, rows in the sorted order) by blocks of QB, from the last block
## to the first, so that C ends as Q C: the left singular vectors Q V_x
## without Q ever formed (cjac_qr_block_t forms every block's T once,
## cjac_qr_block_z, cjac_qr_block_tz and cjac_qr_block_update apply one
## block in three launches: Y^H C by slabs of rows, Z = -T Y^H C, C += Y Z;
## every sum in a fixed order).  Three copies go
## around them, each through local-memory tiles (both sides contiguous):
## cjac_qr_factor writes X = R^* (the sweeps' factor), cjac_qr_stack the
## start [[V[:, order], 0], [0, I]] of C, and cjac_qr_unload C's rows back in
## A's order, row-major, as the host returns it (cjac_qr_unload_columns
## column-major, for a host that wants Q C's columns contiguous).  The
## host enqueues all cols launches without reading anything back.  Every
## sum has a fixed order (a tree over the work-group), so the results are
## bitwise repeatable on a device.
##
## Render parameters (cljacobi.host.qr.ColumnQRSpec):
##   complex_          complex data (cjac_elem = (re, im) pairs)
##   global_fence      the ticket's fence (arith.global_fence)
##   work_group_size   work-items a work-group (a power of two), over rows
##   columns_per_group columns a work-group updates (COLS)
##   load_tile         side of cjac_qr_load's square work-group
##   apply_block       reflectors a block when Q is applied (QB)
##   apply_tile        columns of C a work-group then (QT)
##   apply_work_group  work-items of a work-group of the Q kernels (QWG)
##   apply_slab        rows a work-group of cjac_qr_block_z sums over (QSLAB)
##   apply_chunk_rows  rows of Y and C in local memory at a time there (QRC)
##   state_defines     #define lines of the state's words
##   signatures        the kernel's arguments (cljacobi.host.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
<%namespace name="batched_qr" file="batched_qr.cl.mako"/>
${arith.prelude("double")}
${arith.element("double", complex_, "interleaved", with_workgroup_sum=False)}
${arith.global_fence("CJAC_QR", global_fence)}
${batched_qr.qr_helpers(complex_)}

#define WG ${work_group_size}
#define COLS ${columns_per_group}
${state_defines}
/* A column's largest entry (max of |re|, |im|) and sum of scaled squares. */
typedef double2 cjac_qr_pair;
/* The squares are summed at the scale they have while the largest entry,
 * scaled, lies in [2^-440, 2^440]: the entries that underflow then are
 * beneath the sum's rounding, and nothing overflows. */
#define CJAC_QR_SCALED_LOW 0x1p-440
#define CJAC_QR_SCALED_HIGH 0x1p440

/* 2^-e for the power of two 2^e of x > 0 (1 for x = 0). */
inline cjac_real cjac_qr_down(const cjac_real x)
{
    return x > 0 ? ldexp((cjac_real)1, -clamp(ilogb(x), -1000, 1000)) : 1;
}

/* The work-group's COLS sums of the dot[q] of every work-item, in place at
 * dots[q * WG] (a fixed tree order); every work-item reaches every barrier. */
inline void cjac_qr_reduce_dots(__local cjac_elem *dots, const cjac_elem *dot, const int lid)
{
    for (int q = 0; q < COLS; ++q)
        dots[q * WG + lid] = dot[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width >>= 1) {
        if (lid < width)
            for (int q = 0; q < COLS; ++q)
                dots[q * WG + lid] = dots[q * WG + lid] + dots[q * WG + lid + width];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* The COLS (peak, sum) pairs of the work-group summed in place at
 * pairs[q * WG] (max and tree sum, fixed order); every work-item reaches
 * every barrier. */
inline void cjac_qr_reduce_pairs(__local cjac_qr_pair *pairs, const int lid)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width >>= 1) {
        if (lid < width)
            for (int q = 0; q < COLS; ++q) {
                const cjac_qr_pair a = pairs[q * WG + lid], b = pairs[q * WG + lid + width];
                pairs[q * WG + lid] = (cjac_qr_pair)(fmax(a.x, b.x), a.y + b.y);
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

#define LOAD_TILE ${load_tile}
__kernel __attribute__((reqd_work_group_size(LOAD_TILE, LOAD_TILE, 1)))
void cjac_qr_load(${signatures["cjac_qr_load"].parameters})
{
    __local cjac_elem tile[LOAD_TILE][LOAD_TILE + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int c0 = get_group_id(0) * LOAD_TILE, i0 = get_group_id(1) * LOAD_TILE;
    /* read along B's rows (x: columns), write along W's columns (x: rows) */
    if (i0 + ty < rows && c0 + tx < cols)
        tile[ty][tx] = A[(size_t)row_order[i0 + ty] * cols + c0 + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (c0 + ty < cols && i0 + tx < rows)
        W[(size_t)(c0 + ty) * ld + i0 + tx] = cjac_ldexp(tile[tx][ty], exponent);
}

__kernel __attribute__((reqd_work_group_size(LOAD_TILE, LOAD_TILE, 1)))
void cjac_qr_load_columns(${signatures["cjac_qr_load_columns"].parameters})
{
    const int i = get_global_id(0), c = get_global_id(1);
    if (i < rows && c < cols)
        W[(size_t)c * ld + i] = cjac_ldexp(S[(size_t)c * lds + row_order[i]], exponent);
}

/* X = R^*, column-major n x n (ldx): X[j * ldx + i] = conj(r_ji), r_ji entry j
 * of the column at position i, for i >= j; 0 above the diagonal. */
__kernel __attribute__((reqd_work_group_size(LOAD_TILE, LOAD_TILE, 1)))
void cjac_qr_factor(${signatures["cjac_qr_factor"].parameters})
{
    __local cjac_elem tile[LOAD_TILE][LOAD_TILE + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int j0 = get_group_id(0) * LOAD_TILE, i0 = get_group_id(1) * LOAD_TILE;
    if (i0 + ty < cols && j0 + tx < cols)  /* along W's column: j */
        tile[ty][tx] = W[(size_t)columns[i0 + ty] * ld + j0 + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int i = i0 + tx, j = j0 + ty;  /* along X's column: i */
    if (i < cols && j < cols)
        X[(size_t)j * ldx + i] = i >= j ? cjac_conj(tile[tx][ty]) : CJAC_ELEM_ZERO;
}

/* C = [[V[:, order], 0], [0, I]], column-major rows x p (ldc), V column-major
 * (ldv) with n rows, `count` of its columns taken. */
__kernel __attribute__((reqd_work_group_size(LOAD_TILE, LOAD_TILE, 1)))
void cjac_qr_stack(${signatures["cjac_qr_stack"].parameters})
{
    const int i = get_global_id(0), c = get_global_id(1);
    if (i >= rows || c >= p)
        return;
    cjac_elem value = CJAC_ELEM_ZERO;
    if (i < n && c < count)
        value = V[(size_t)order[c] * ldv + i];
    else if (i >= n && c >= count && i - n == c - count)
        value = cjac_from_real(1);
    C[(size_t)c * ldc + i] = value;
}

/* out (row-major, rows x p) = C with its rows back in A's order:
 * out[row_order[i] * p + c] = C[c * ldc + i]. */
__kernel __attribute__((reqd_work_group_size(LOAD_TILE, LOAD_TILE, 1)))
void cjac_qr_unload(${signatures["cjac_qr_unload"].parameters})
{
    __local cjac_elem tile[LOAD_TILE][LOAD_TILE + 1];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int i0 = get_group_id(0) * LOAD_TILE, c0 = get_group_id(1) * LOAD_TILE;
    if (c0 + ty < p && i0 + tx < rows)  /* along C's column: i */
        tile[ty][tx] = C[(size_t)(c0 + ty) * ldc + i0 + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i0 + ty < rows && c0 + tx < p)  /* along out's row: c */
        out[(size_t)row_order[i0 + ty] * p + c0 + tx] = tile[tx][ty];
}

/* out (column-major, rows x p, leading dimension rows) = C with its rows back
 * in A's order: out[c * rows + row_order[i]] = C[c * ldc + i] (a scatter
 * within each column, both sides along the column). */
__kernel __attribute__((reqd_work_group_size(LOAD_TILE, LOAD_TILE, 1)))
void cjac_qr_unload_columns(${signatures["cjac_qr_unload_columns"].parameters})
{
    const int i = get_global_id(0), c = get_global_id(1);
    if (i < rows && c < p)
        out[(size_t)c * rows + row_order[i]] = C[(size_t)c * ldc + i];
}

/* The reflectors applied to C by blocks of QB (LAPACK xLARFT and xLARFB,
 * forward and columnwise: H_j0 H_j0+1 ... H_j0+QB-1 = I - Y T Y^H with Y the
 * block's v_j as columns and T upper triangular), three launches a block:
 * cjac_qr_block_z sums Y^H C over slabs of QSLAB rows (work-groups over
 * the slabs and the column tiles), cjac_qr_block_tz adds the slabs' sums
 * in order and forms Z = -T Y^H C, and cjac_qr_block_update adds Y Z to C
 * (a row a work-item, QT columns).  Work-groups of QWG work-items. */
#define QB ${apply_block}
#define QT ${apply_tile}
#define QWG ${apply_work_group}
#define QSLAB ${apply_slab}
#define QRC ${apply_chunk_rows}  /* rows of C a chunk of cjac_qr_block_z */
#define QGROUPS (QWG / QB)     /* cjac_qr_block_z: groups of QB work-items, */
#define QMC (QT / QGROUPS)     /* each work-item QMC columns of its group's */
#if QWG % QB || QT % QGROUPS || (QB * QT) % QWG || (QB * QB) % QWG
#error "the Q kernels: QWG, QB and QT do not divide as they must"
#endif

/* Entry (i, k) of the block's Y, i >= j0 + k (the block's reflector
 * positions as W's columns): v_{j0+k} is 1 at row j0 + k, W below. */
inline cjac_elem cjac_qr_y_entry(__global const cjac_elem *W, const int ld,
                                 __local const int *block_columns, const int j0, const int k,
                                 const int i)
{
    return i == j0 + k ? cjac_from_real(1) : W[(size_t)block_columns[k] * ld + i];
}

/* Rows i0 .. i0 + chunk_rows - 1 of Y into Y_chunk[row][k]: cjac_qr_y_entry,
 * 0 above row j0 + k (and for k >= count and from row `rows` on).
 * Consecutive work-items take consecutive rows. */
inline void cjac_qr_y_chunk(__local cjac_elem (*Y_chunk)[QB + 1], const int chunk_rows,
                            __global const cjac_elem *W, const int ld,
                            __local const int *block_columns, const int j0, const int count,
                            const int i0, const int rows, const int lid)
{
    for (int e = lid; e < chunk_rows * QB; e += QWG) {
        const int r = e % chunk_rows, k = e / chunk_rows, i = i0 + r;
        Y_chunk[r][k] = k < count && i < rows && i >= j0 + k
            ? cjac_qr_y_entry(W, ld, block_columns, j0, k, i) : CJAC_ELEM_ZERO;
    }
}

/* The block's reflector positions, columns[j0 ..] (the last one repeated
 * past n), in block_columns; the caller reaches a barrier before use. */
inline void cjac_qr_block_columns(__local int *block_columns, __global const int *columns,
                                  const int j0, const int count, const int lid)
{
    if (lid < QB)
        block_columns[lid] = columns[j0 + min(lid, count - 1)];
}

/* T of every block (one work-group a block, T column-major QB x QB at
 * T[b * QB * QB]): the Gram matrix G = Y^H Y, then xLARFT's recurrence
 * T[0:k, k] = T[0:k, 0:k] (-tau_k G[0:k, k]), T[k, k] = tau_k. */
__kernel __attribute__((reqd_work_group_size(QWG, 1, 1)))
void cjac_qr_block_t(${signatures["cjac_qr_block_t"].parameters})
{
    __local int block_columns[QB];
    __local cjac_elem Y_chunk[QB][QB + 1], gram[QB][QB + 1];
    __local cjac_elem (*T_block)[QB + 1] = Y_chunk;  /* once the Gram matrix is summed */
    const int lid = get_local_id(0), b = get_group_id(0), j0 = b * QB;
    const int count = min(QB, n - j0);
    cjac_qr_block_columns(block_columns, columns, j0, count, lid);
    cjac_elem sums[QB * QB / QWG];
    for (int e = 0; e < QB * QB / QWG; ++e)
        sums[e] = CJAC_ELEM_ZERO;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i0 = j0; i0 < rows; i0 += QB) {
        cjac_qr_y_chunk(Y_chunk, QB, W, ld, block_columns, j0, count, i0, rows, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = 0; e < QB * QB / QWG; ++e) {
            const int entry = lid + e * QWG, k = entry / QB, l = entry % QB;
            for (int r = 0; r < QB; ++r)
                sums[e] = cjac_dot_acc(Y_chunk[r][k], Y_chunk[r][l], sums[e]);  /* y_k^H y_l */
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int e = 0; e < QB * QB / QWG; ++e) {
        const int entry = lid + e * QWG;
        gram[entry / QB][entry % QB] = sums[e];
        T_block[entry / QB][entry % QB] = CJAC_ELEM_ZERO;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < QB; ++k) {
        const cjac_elem tau_k = k < count ? tau[j0 + k] : CJAC_ELEM_ZERO;
        if (lid < k) {
            cjac_elem acc = CJAC_ELEM_ZERO;
            for (int l = lid; l < k; ++l)
                acc = cjac_axpy(T_block[lid][l], cjac_mul(-tau_k, gram[l][k]), acc);
            T_block[lid][k] = acc;
        } else if (lid == k) {
            T_block[k][k] = tau_k;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int e = lid; e < QB * QB; e += QWG)
        T[(size_t)b * QB * QB + e] = T_block[e % QB][e / QB];
}

/* Slab s's part of Y^H C for block b: work-group (t, s) sums over rows
 * j0 + s QSLAB .. (at most QSLAB of them) for columns t QT .., into
 * parts[(s p + c) QB + k] = sum_i conj(y_ik) c_ic.  Work-item (k, g) holds
 * Z's entries k of its group's QMC columns g QMC ..; the rows go through
 * local memory QRC at a time. */
__kernel __attribute__((reqd_work_group_size(QWG, 1, 1)))
void cjac_qr_block_z(${signatures["cjac_qr_block_z"].parameters})
{
    __local int block_columns[QB];
    __local cjac_elem Y_chunk[QRC][QB + 1], C_chunk[QRC][QT + 1];
    const int lid = get_local_id(0), j0 = b * QB, count = min(QB, n - j0);
    const int c0 = get_group_id(0) * QT, c_count = clamp(p - c0, 0, QT);
    const int s = get_group_id(1), first = j0 + s * QSLAB, last = min(rows, first + QSLAB);
    const int k = lid % QB, g = lid / QB;
    cjac_qr_block_columns(block_columns, columns, j0, count, lid);
    cjac_elem z[QMC];
    for (int q = 0; q < QMC; ++q)
        z[q] = CJAC_ELEM_ZERO;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i0 = first; i0 < last; i0 += QRC) {
        cjac_qr_y_chunk(Y_chunk, QRC, W, ld, block_columns, j0, count, i0, last, lid);
        for (int e = lid; e < QRC * QT; e += QWG) {
            const int r = e % QRC, cc = e / QRC, i = i0 + r;
            C_chunk[r][cc] = i < last && cc < c_count ? C[(size_t)(c0 + cc) * ldc + i]
                                                      : CJAC_ELEM_ZERO;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int r = 0; r < QRC; ++r) {
            const cjac_elem y = Y_chunk[r][k];
            for (int q = 0; q < QMC; ++q)
                z[q] = cjac_dot_acc(y, C_chunk[r][g * QMC + q], z[q]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int q = 0; q < QMC; ++q)
        if (g * QMC + q < c_count)
            parts[((size_t)s * p + c0 + g * QMC + q) * QB + k] = z[q];
}

/* Z = -T (Y^H C) for block b, columns t QT .. a work-group: the slabs'
 * parts summed in slab order, then the triangular product; Z stored as the
 * parts are (Z[c QB + k]). */
__kernel __attribute__((reqd_work_group_size(QWG, 1, 1)))
void cjac_qr_block_tz(${signatures["cjac_qr_block_tz"].parameters})
{
    __local cjac_elem sums[QT][QB + 1];
    const int lid = get_local_id(0), j0 = b * QB;
    const int c0 = get_group_id(0) * QT, c_count = clamp(p - c0, 0, QT);
    const int slabs = (rows - j0 + QSLAB - 1) / QSLAB;
    for (int e = lid; e < QB * QT; e += QWG) {
        const int k = e % QB, cc = e / QB;
        cjac_elem sum = CJAC_ELEM_ZERO;
        for (int s = 0; s < slabs && cc < c_count; ++s)
            sum = sum + parts[((size_t)s * p + c0 + cc) * QB + k];
        sums[cc][k] = sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global const cjac_elem *T_block = T + (size_t)b * QB * QB;  /* column-major */
    for (int e = lid; e < QB * QT; e += QWG) {
        const int k = e % QB, cc = e / QB;
        cjac_elem acc = CJAC_ELEM_ZERO;
        for (int l = k; l < QB; ++l)
            acc = cjac_axpy(T_block[l * QB + k], sums[cc][l], acc);
        if (cc < c_count)
            Z[(size_t)(c0 + cc) * QB + k] = -acc;
    }
}

/* C += Y Z for block b (Z = -T Y^H C): work-group (t, u) takes columns
 * t QT .. and rows j0 + u QWG .., a row a work-item (loads along the rows),
 * Z's QB x QT tile in local memory. */
__kernel __attribute__((reqd_work_group_size(QWG, 1, 1)))
void cjac_qr_block_update(${signatures["cjac_qr_block_update"].parameters})
{
    __local int block_columns[QB];
    __local cjac_elem Z_tile[QB][QT];
    const int lid = get_local_id(0), j0 = b * QB, count = min(QB, n - j0);
    const int c0 = get_group_id(0) * QT, c_count = clamp(p - c0, 0, QT);
    const int i = j0 + get_group_id(1) * QWG + lid;
    cjac_qr_block_columns(block_columns, columns, j0, count, lid);
    for (int e = lid; e < QB * QT; e += QWG) {
        const int k = e % QB, cc = e / QB;
        Z_tile[k][cc] = cc < c_count ? Z[(size_t)(c0 + cc) * QB + k] : CJAC_ELEM_ZERO;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i >= rows)
        return;
    cjac_elem acc[QT];
    for (int cc = 0; cc < QT; ++cc)
        acc[cc] = cc < c_count ? C[(size_t)(c0 + cc) * ldc + i] : CJAC_ELEM_ZERO;
    for (int l = 0; l < count && j0 + l <= i; ++l) {
        const cjac_elem y = cjac_qr_y_entry(W, ld, block_columns, j0, l, i);
        for (int cc = 0; cc < QT; ++cc)
            acc[cc] = cjac_axpy(Z_tile[l][cc], y, acc[cc]);
    }
    for (int cc = 0; cc < c_count; ++cc)
        C[(size_t)(c0 + cc) * ldc + i] = acc[cc];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cjac_qr_step(${signatures["cjac_qr_step"].parameters})
{
    /* The tree sums: COLS dot products, then COLS (peak, sum) pairs. */
    __local cjac_qr_pair scratch[COLS * WG];
    __local cjac_elem *dots = (__local cjac_elem *)scratch;
    __local int indices[WG];
    __local cjac_elem leads[COLS], reflector_scale;
    __local int last, last_reflector;
    const int lid = get_local_id(0);
    const int j = state[CJAC_QR_J];

    /* 1. The columns at positions c0 .. c0 + count - 1 (none in a launch's
     *    spare work-group: its grid has at least one).  Every loop over q
     *    runs COLS times (registers, not memory, hold the per-column values)
     *    and every loop with a barrier a uniform number of times. */
    const int c0 = j + 1 + get_group_id(0) * COLS;
    const int count = clamp(cols - c0, 0, COLS);
    const int reflecting = j >= 0 && count > 0;
    __global cjac_elem *column[COLS];
    for (int q = 0; q < COLS; ++q)
        column[q] = W + (size_t)columns[min(c0 + q, cols - 1)] * ld;
    /* v_j: 1 at row j, then x scaled by v_scale (the scaling is stored by the
     * launch's last work-group, after every other has read x) */
    __global const cjac_elem *x = W + (size_t)columns[max(j, 0)] * ld;
    const cjac_elem v_scale = reflecting ? scales[j] : CJAC_ELEM_ZERO;
    cjac_elem dot[COLS];
    for (int q = 0; q < COLS; ++q)
        dot[q] = CJAC_ELEM_ZERO;
    for (int i = j + lid; i < rows && reflecting; i += WG) {
        const cjac_elem v_i = i == j ? cjac_from_real(1) : cjac_mul(v_scale, x[i]);
        for (int q = 0; q < COLS; ++q)
            if (q < count)
                dot[q] = cjac_dot_acc(v_i, column[q][i], dot[q]);
    }
    cjac_qr_reduce_dots(dots, dot, lid);
    /* H_j^H b = b - conj(tau_j) (v^H b) v */
    const cjac_elem minus_tau = reflecting ? -cjac_conj(tau[j]) : CJAC_ELEM_ZERO;
    cjac_elem f[COLS];
    cjac_real down[COLS];
    cjac_qr_pair measured[COLS];
    for (int q = 0; q < COLS; ++q) {
        f[q] = cjac_mul(minus_tau, dots[q * WG]);
        down[q] = q < count && j >= 0 ? cjac_qr_down(norms[columns[c0 + q]]) : 1;
        measured[q] = (cjac_qr_pair)(0, 0);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  /* scratch is reused below */
    for (int i = (count > 0 ? max(j, 0) : rows) + lid; i < rows; i += WG) {
        const cjac_elem v_i = i == j ? cjac_from_real(1) : cjac_mul(v_scale, x[i]);
        for (int q = 0; q < COLS; ++q) {
            if (q >= count)
                continue;
            cjac_elem a = column[q][i];
            if (reflecting) {
                a = cjac_axpy(f[q], v_i, a);
                column[q][i] = a;
            }
            if (i == j + 1) {
                leads[q] = a;
            } else if (i > j + 1) {
                measured[q].x = fmax(measured[q].x, cjac_elem_peak(a));
                measured[q].y = cjac_abs2_acc(cjac_scale(down[q], a), measured[q].y);
            }
        }
    }
    for (int q = 0; q < COLS; ++q)
        scratch[q * WG + lid] = measured[q];
    cjac_qr_reduce_pairs(scratch, lid);
    /* Summed again at the scale of the largest entry where needed (rare). */
    cjac_real sums[COLS], rescale[COLS];
    int again = 0;
    for (int q = 0; q < COLS; ++q) {
        const cjac_real peak = scratch[q * WG].x, scaled = peak * down[q];
        sums[q] = scratch[q * WG].y;
        rescale[q] = 0;
        if (q < count && peak > 0 && (scaled < CJAC_QR_SCALED_LOW || scaled > CJAC_QR_SCALED_HIGH)) {
            rescale[q] = cjac_qr_down(peak);
            again = 1;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int pass = 0; pass < again; ++pass) {  /* uniform: 0 or 1 */
        for (int q = 0; q < COLS; ++q)
            measured[q] = (cjac_qr_pair)(0, 0);
        for (int i = j + 2 + lid; i < rows; i += WG)
            for (int q = 0; q < COLS; ++q)
                if (rescale[q] != 0)
                    measured[q].y = cjac_abs2_acc(cjac_scale(rescale[q], column[q][i]),
                                                  measured[q].y);
        for (int q = 0; q < COLS; ++q)
            scratch[q * WG + lid] = measured[q];
        cjac_qr_reduce_pairs(scratch, lid);
        for (int q = 0; q < COLS; ++q)
            if (rescale[q] != 0) {
                sums[q] = scratch[q * WG].y;
                down[q] = rescale[q];
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int q = 0; q < COLS; ++q)
        if (q < count && lid == q) {  /* down is a power of two: exact */
            const cjac_real below = sqrt(sums[q]) / down[q];
            const int c = columns[c0 + q];
            xnorms[c] = below;
            norms[c] = cjac_hypot(cjac_elem_abs(leads[q]), below);
        }

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

    /* 2. The reflector this launch applied, scaled in place now that every
     *    other work-group is done with it: v_j = (1; x v_scale). */
    for (int i = j + 1 + lid; i < rows && reflecting; i += WG)
        W[(size_t)columns[j] * ld + i] = cjac_mul(v_scale, x[i]);

    /* 3. The pivot of step s = j + 1: the largest norm over positions s..
     *    (the first of equal ones), its column's position swapped with s's.
     *    The norms are read past the cache: a cache line holds the norms of
     *    several work-groups' columns.  (A column's entries are its owner's
     *    alone during a launch, and ld keeps them off other columns' lines.) */
    const int s = j + 1;
    volatile __global cjac_real *stored_norms = norms, *stored_xnorms = xnorms;
    cjac_real best = -1;
    int best_position = cols;
    for (int c = s + lid; c < cols && s < steps; c += WG) {
        const cjac_real value = stored_norms[columns[c]];
        if (value > best) {  /* ascending c: the first of equal ones stays */
            best = value;
            best_position = c;
        }
    }
    __local cjac_real *values = (__local cjac_real *)scratch;
    values[lid] = best;
    indices[lid] = best_position;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = WG / 2; width > 0; width >>= 1) {
        if (lid < width) {
            const cjac_real other = values[lid + width];
            const int other_position = indices[lid + width];
            if (other > values[lid] || (other == values[lid] && other_position < indices[lid])) {
                values[lid] = other;
                indices[lid] = other_position;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* p = cols when nothing is left (s = steps) or every norm is NaN */
    const int p = indices[0];

    /* 4. H_s from the pivot column: xLARFG on (alpha; x) = (b_ss; b_{s+1.., s}),
     *    by work-item 0 from the stored norm of x; x is scaled by the next
     *    launch's last work-group (or below, for the last reflector). */
    if (lid == 0 && s < steps) {
        const int c = columns[p < cols ? p : s];
        if (p < cols) {
            columns[p] = columns[s];
            columns[s] = c;
        }
        __global cjac_elem *pivot_column = W + (size_t)c * ld;
        const cjac_elem alpha = pivot_column[s];
        const cjac_real x_norm = stored_xnorms[c];
        cjac_real beta = -copysign(cjac_hypot(cjac_elem_abs(alpha), x_norm),
                                   cjac_real_part(alpha));
        cjac_elem t = CJAC_ELEM_ZERO, scale = CJAC_ELEM_ZERO;
        if (x_norm == 0 && cjac_imag_part(alpha) == 0) {
            beta = cjac_real_part(alpha);  /* H = I */
        } else if (fabs(beta) < CJAC_SAFMIN) {
            t = cjac_larfg(alpha, pivot_column + s + 1, 1, rows - s - 1, &beta, &scale);
        } else {
%if complex_:
            t = (cjac_real2)((beta - alpha.x) / beta, -alpha.y / beta);
%else:
            t = (beta - alpha) / beta;
%endif
            scale = cjac_reciprocal(alpha - cjac_from_real(beta));
        }
        tau[s] = t;
        scales[s] = scale;
        pivot_column[s] = cjac_from_real(beta);
        last_reflector = s == steps - 1;  /* no launch applies the last one: scaled here */
        reflector_scale = scale;
        state[CJAC_QR_J] = s;
        state[CJAC_QR_TICKET] = 0;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const int scaling = s < steps && last_reflector;
    const cjac_elem last_scale = reflector_scale;
    for (int i = s + 1 + lid; i < rows && scaling; i += WG)
        W[(size_t)columns[s] * ld + i] = cjac_mul(last_scale, W[(size_t)columns[s] * ld + i]);
    /* Ends the work-group's last region at a barrier (PoCL, see bunch_parlett). */
    barrier(CLK_GLOBAL_MEM_FENCE);
}
