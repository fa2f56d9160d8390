## Blocked one-sided hyperbolic Jacobi: one work-group per pair of block columns.
##
## Novakovic & Singer, implicit Hari-Zimmermann GSVD on GPUs, Sect. 2.3-2.5 and
## 3.5 (block-oriented "bo" and full-block "fb" variants), applied to the
## hyperbolic SVD.  A parallel step transforms disjoint block pairs (P, Q) of
## width w in three launches, so that every block pair keeps several
## work-groups busy (row chunks):
##   cjac_block_gram    partial Gram matrices [G_P G_Q]^* [G_P G_Q] (2w x 2w,
##                      symmetric or Hermitian) of one row chunk each;
##   cjac_block_rotate  one work-group per pair: sums the partials in a fixed
##                      order, runs the inner Jacobi sweeps on the Gram matrix
##                      in local memory (two-sided form of the one-sided method:
##                      every rotation R updates A <- R^* A R and W <- W R) and
##                      stores W;
##   cjac_block_update  [G_P G_Q] <- [G_P G_Q] W for one row chunk (V likewise).
##
## Real and complex Hermitian data share the kernel text through arith.element
## (cjac_elem, CJAC_LOAD/CJAC_STORE, cjac_dot_acc, cjac_axpy, cjac_conj, ...):
## for real data every one of these is the real operation it replaces (fma,
## the plain load, the identity), so the real kernels do the same floating
## point operations as before the complex generalization, bit for bit.
##
## Complex data in local memory: whole elements (double2), not separate
## re/im planes.  Real data keep their 8-byte layouts unchanged; a 16-byte
## access of a warp is served in quarter-warp phases of 8 lanes (NVIDIA), and
## 8 consecutive or odd-stride double2 addresses cover the 32 banks once, so
## the bank arguments below (consecutive addresses; odd strides) hold for
## both element sizes.  Planes would double the local loads and stores and
## need other index arithmetic for complex data only.
##
## Render parameters (all explicit, see cljacobi.host.blocked.BlockedSpec; the
## host's BlockedPlan decides every size, this template only checks them):
##   real_ctype        "double"
##   complex_          complex Hermitian data (element type cjac_real2)
##   layout            complex storage of G and V in global memory,
##                     "interleaved" | "split" (arith.element); the partial
##                     Gram matrices and the transformations W are internal
##                     buffers of cjac_elem (double2 for complex) either way
##   store_ctype       what the G and V buffers hold: "cjac_real", or
##                     "cjac_real2" for interleaved complex data
##   transform_in_local  keep the 2w x 2w transformation W in local memory
##                     (else in its global slot, when local memory is short)
##   transform_in_registers  "offdiag" with W in its global slot: keep W in
##                     registers during the steps across the blocks, W_LANES
##                     work-items a row, W_COLS (w_cols) columns of P each in
##                     W_ROWS (w_rows) rows W_ROW_STEP apart, and W_EXCHANGE
##                     elements of local memory to pass W's entries on where
##                     the shuffle is "local"
##   shuffle           how those lanes pass W's entries on: "ptx"
##                     (shfl.sync) or "local" (local memory, any device)
##   inner_pairs       the inner strategy's step table for order K, a tuple of
##                     steps, each a tuple of w (i, j) pairs covering 0..K-1
##   gram_micro_tile   RB: every work-item of cjac_block_gram accumulates an
##                     RB x RB block of the Gram matrix in registers
##   gram_nb           NB = ceil(K / RB), the micro-tiles per side
##   update_micro_rows RR, update_micro_cols RC: every work-item of
##                     cjac_block_update computes an RR x RC block of the
##                     tile's product in registers
##   size_defines      the #define lines of the sizes (BlockedSpec.constants):
##                     BW = w, K = 2w; TILE_ROWS rows of G per Gram tile in
##                     local memory; INNER_STEPS; GRAM_RB, GRAM_NB,
##                     GRAM_KP = NB RB (K padded), GRAM_TILES = NB (NB + 1) / 2
##                     (micro-tiles on and above the diagonal), GRAM_SLICES
##                     (S: cjac_block_gram splits the rows of each tile among S
##                     groups of work-items), GRAM_WG = GRAM_TILES * S,
##                     GRAM_TILE_STRIDE and GRAM_RESULT_STRIDE (odd),
##                     GRAM_LOCAL (its local array); ROTATE_WG (work-items of
##                     cjac_block_rotate, any count; w^2 maps one 2 x 2 block
##                     of A and W to every item), LDA and LDW (row strides of
##                     A and W); UPDATE_TR (TR: rows of X per tile of
##                     cjac_block_update, a multiple of RR), UPDATE_RR,
##                     UPDATE_RC, UPDATE_NR = TR / RR, UPDATE_NC = ceil(K / RC),
##                     UPDATE_KP = NC RC, UPDATE_WG = NR NC
##   matrix_products   how cjac_block_gram and cjac_block_update multiply:
##                     "fma" (the portable kernels: register micro-tiles of
##                     fma), or, for real data with K a multiple of 16, warps
##                     of 32 work-items that multiply 16 x 8 x 4 fragments:
##                     "mma.m16n8k4" (FP64 tensor cores of compute capability
##                     9.0 through inline PTX), "mma.m8n8k4" (two m8n8k4
##                     products, compute capability 8.0), or "mma.emulated"
##                     (the same product through local memory: the fragment
##                     layouts and data flow of the tensor-core kernels,
##                     testable on any device); see cjac_mma below
##   gram_stages       0, or the stages in local memory through which each
##                     warp of the real mma Gram kernel copies its rows
##                     (CJAC_COPY16: cp.async, or plain copies in
##                     "mma.emulated"), or, in the teamed kernel, which its
##                     warps share (CJAC_COPY8, CJAC_TEAMS_SYNC); sizes
##                     GRAM_STAGES, GRAM_STAGE_ROWS, GRAM_STAGE_LD,
##                     GRAM_STAGE_REALS, GRAM_MMA_LOCAL
##   gram_teams        the mma Gram kernel's tiles by warp
##                     (cljacobi.host.blocked.gram_mma_teams): one team of all
##                     of them, or four where RK = 128 (real w = 64, complex
##                     w = 32), warp v keeping team v over every row of the
##                     chunk; sizes GRAM_TILE_COLUMNS, GRAM_TEAM_SUMS
##   update_column_parts
##                     the warps of the mma update kernel that share a block
##                     of rows, each computing its part of the product's
##                     columns (1, or 2: block P's and block Q's); sizes
##                     UPDATE_COLUMN_PARTS, UPDATE_ROW_WARPS, UPDATE_PART_TILES
##   update_stages     0, or the stages in local memory through which the
##                     warps of each block of rows of the mma update kernel
##                     copy their rows, update_stage_columns columns of Z a
##                     stage (CJAC_COPY8, CJAC_STAGE_SYNC); sizes
##                     UPDATE_STAGES, UPDATE_STAGE_ROWS, UPDATE_STAGE_COLUMNS,
##                     UPDATE_STAGE_LD, UPDATE_STAGE_REALS
##   three_products    whether the staged mma update kernel takes three real
##                     products a complex product (Gauss: Re X Re W, Im X Im W
##                     and (Re X + Im X)(Re W + Im W)) instead of four (Z
##                     times the real RK x RK matrix M); sizes UPDATE_NK,
##                     UPDATE_M_ROWS
##   signatures        the kernels' arguments (cljacobi.host.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
<%namespace name="inner" file="inner.cl.mako"/>\
${arith.prelude(real_ctype)}
${arith.element(real_ctype, complex_, layout, with_workgroup_sum=False)}
${arith.rotation_functions()}
<%
    RB = gram_micro_tile
    NB = gram_nb
    UR = update_micro_rows
    UC = update_micro_cols
    mma = matrix_products != "fma"
    teamed = len(gram_teams) > 1  # the mma Gram kernel's tiles split among its warps
    RK = 2 * K if complex_ else K  # real columns of Z, what the mma kernels multiply

    def mma_column(column_P, column_Q, real_column, ld, lane_offset=None):
        """The column of X that holds column real_column of Z (plus a lane's
        offset), from the pair's first columns column_P and column_Q; the
        8 (or 4) columns of a fragment lie in one block (w % 8 == 0)."""
        a = real_column % K
        base, a = (column_P, a) if a < w else (column_Q, a - w)
        offset = str(a) + (f" + {lane_offset}" if lane_offset else "")
        return f"CJAC_COLUMN({base}, {offset}, {ld})"

    def mma_part(column, row, ld, real_column, const=False):
        """Element `row` of Z's column real_column in the column of X that
        mma_column gave: X itself (real), or its real (real_column < K) or
        imaginary part in the storage layout."""
        part = real_column // K
        if not complex_:
            return f"{column}[{row}]"
        if layout == "interleaved":
            qualifier = "const " if const else ""
            return f"((__global {qualifier}cjac_real *){column})[2 * ({row}) + {part}]"
        return f"{column}[({row}) + {part} * ({ld})]"

    def gram_sum(a, b):
        """C[a][b] (a <= b) of the mma Gram kernel's sums in local memory: a
        matrix of stride MMA_SUMS_STRIDE, or, teamed, the tiles one after
        the other (tile (i, j) of gram_tiles is number i (RK/8 - 1 - i) + j,
        its 16 x 8 entries row-major)."""
        if not teamed:
            return f"sums[({a}) * MMA_SUMS_STRIDE + ({b})]"
        return f"sums[CJAC_TEAM_ENTRY({a}, {b})]"

    def gram_value(j, row):
        """Z[row][8 j + g] for the mma Gram kernel, 0 past the chunk."""
        return f"{row} < last ? {mma_part(f'column_{j}', row, 'ldg', 8 * j, const=True)} : 0"

    three = three_products  # the update's complex products by Gauss's three
    NK = K if three else RK  # columns of each real matrix the update multiplies by
    part_tiles = NK // 8 // update_column_parts  # an update warp's column tiles

    def stage_z(s, a):
        """The column of Z whose rows go to column a of slice s of the update
        kernel's stages: Z's columns s update_stage_columns.. in order (four
        products), or the real parts of the half-slice of X's columns
        s update_stage_columns / 2.. and then their imaginary parts (three:
        a product takes both parts of the same columns)."""
        if not three:
            return s * update_stage_columns + a
        half = update_stage_columns // 2
        return (a // half) * K + s * half + a % half

    def update_column(real_column, lane_offset):
        """The column of X that holds column real_column of Z (in the
        update warp's own column tiles, numbered from 0) plus a lane's
        offset: from the pair's columns with one part, from the warp's block
        (P or Q, column_part) with two."""
        if update_column_parts == 1:
            return mma_column("column_P", "column_Q", real_column, "ldx", lane_offset)
        return f"CJAC_COLUMN(column_part, {real_column} + {lane_offset}, ldx)"

    def update_value(kk, row, column=None):
        """Z[row][4 kk + t], the update kernel's A fragment value, 0 past the
        chunk; `column` names the column of X that holds it (default: the
        mma_column expression)."""
        column = column or mma_column("column_P", "column_Q", 4 * kk, "ldx", "t")
        return f"{row} < last ? {mma_part(column, row, 'ldx', 4 * kk)} : 0"
%>
${size_defines}
/* The sizes are the host's (BlockedPlan); what the kernels rely on: */
%if mma:
#if BW % 8 != 0 || RK != ${RK} || (RK > 64 && RK != 128) || GRAM_WG != 32 * GRAM_WARPS || UPDATE_WG != 32 * UPDATE_WARPS
#error "the mma kernels: w is no multiple of 8, Z too wide, or the work-groups are not whole warps"
#endif
#if MMA_SUMS_STRIDE < RK || UPDATE_LDW % 16 != 4 || UPDATE_LDW < UPDATE_NK
#error "the mma kernels: the strides do not hold the columns (or conflict in banks)"
#endif
#if UPDATE_NK != ${NK} || UPDATE_M_ROWS != ${3 * K if three else RK}
#error "the mma update kernel: M is not the products' matrices"
#endif
#if UPDATE_WARPS != UPDATE_ROW_WARPS * UPDATE_COLUMN_PARTS || UPDATE_NK != 8 * UPDATE_PART_TILES * UPDATE_COLUMN_PARTS
#error "the mma update kernel: the warps of a block of rows do not share the columns"
#endif
%if teamed:
#if GRAM_WARPS != ${len(gram_teams)} || GRAM_TEAM_SUMS != 128 * ${len(gram_tiles)} || GRAM_TILE_COLUMNS != RK / 8
#error "the teamed mma Gram kernel: a warp per team, a stored tile per tile"
#endif
%endif
%else:
#if K != 2 * BW || GRAM_RB != ${RB} || GRAM_NB != ${NB} || GRAM_KP != GRAM_NB * GRAM_RB
#error "cjac_block_gram: the micro-tiles do not match the block"
#endif
#if GRAM_KP < K || GRAM_KP - GRAM_RB >= K || GRAM_TILES != GRAM_NB * (GRAM_NB + 1) / 2
#error "cjac_block_gram: K is not padded to the micro-tiles"
#endif
#if GRAM_WG != GRAM_TILES * GRAM_SLICES
#error "cjac_block_gram: the work-group is not one item per micro-tile and slice"
#endif
#if GRAM_TILE_STRIDE < GRAM_KP || GRAM_RESULT_STRIDE < K
#error "cjac_block_gram: the strides do not hold the (padded) columns"
#endif
#if GRAM_TILE_STRIDE % 2 == 0 || GRAM_RESULT_STRIDE % 2 == 0
#error "cjac_block_gram: even strides (bank conflicts)"
#endif
#if GRAM_LOCAL < TILE_ROWS * GRAM_TILE_STRIDE || GRAM_LOCAL < K * GRAM_RESULT_STRIDE
#error "cjac_block_gram: the local array is too small for the tile or the sums"
#endif
#if UPDATE_RR != ${UR} || UPDATE_RC != ${UC} || UPDATE_TR != UPDATE_NR * UPDATE_RR
#error "cjac_block_update: the tile rows are not a multiple of the micro-tile's"
#endif
#if UPDATE_KP != UPDATE_NC * UPDATE_RC || UPDATE_KP < K || UPDATE_KP - UPDATE_RC >= K
#error "cjac_block_update: K is not padded to the micro-tiles"
#endif
#if UPDATE_WG != UPDATE_NR * UPDATE_NC
#error "cjac_block_update: the work-group is not one item per micro-tile"
#endif
%endif
%if transform_in_local:
#if LDA < K || LDA % 2 == 0 || LDW < K || LDW % 2 == 0
%else:
#if LDA < K || LDA % 2 == 0 || LDW != K  /* W's global slot: the layout the update reads */
%endif
#error "cjac_block_rotate: the row strides of A and W do not match"
#endif
/* Pairs dependent to within this many orthogonality tolerances are left to
 * the pointwise sweeps (cjac_block_rotate). */
#define GRAM_RESOLUTION 16

${inner.pair_table("cjac_inner_pairs", "INNER_STEPS", inner_pairs)}

/* Entry e of block pair k's Gram matrix: the partial sums of its row chunks
 * (cjac_block_gram) added in a fixed order, reproducible, for every kernel
 * that reads them. */
inline cjac_elem cjac_gram_entry(__global const cjac_elem *partial, const int k,
                                 const int chunks, const int e)
{
    __global const cjac_elem *p = partial + (size_t)k * chunks * (K * K) + e;
    cjac_elem sum = CJAC_ELEM_ZERO;
    for (int c = 0; c < chunks; ++c)
        sum += p[(size_t)c * (K * K)];
    return sum;
}

/* Entry e of the K (K + 1) / 2 on and above the diagonal of a K x K matrix
 * (K even), the only ones the Gram kernels store: rows i and K - 1 - i hold
 * K + 1 of them together, entry j of the two being (i, i + j) for j < K - i,
 * else (K - 1 - i, j - 1), so that consecutive e share the work alike. */
#define CJAC_UPPER_ENTRIES (K / 2 * (K + 1))
/* Entries on and above the diagonal a rotate work-item sums at most. */
#define CJAC_START_ENTRIES ((CJAC_UPPER_ENTRIES + ROTATE_WG - 1) / ROTATE_WG)
%if teamed:
/* Entry (a, b), a <= b, of the teamed mma Gram kernel's stored tiles: tile
 * (a / 16, b / 8), number i (RK/8 - 1 - i) + j, its 16 x 8 entries row-major. */
#define CJAC_TEAM_ENTRY(a, b) \
    ((((a) / 16) * (GRAM_TILE_COLUMNS - 1 - (a) / 16) + (b) / 8) * 128 + (a) % 16 * 8 + (b) % 8)
%endif
inline int2 cjac_upper_entry(const int e)
{
    const int i = e / (K + 1), j = e % (K + 1);
    return j < K - i ? (int2)(i, i + j) : (int2)(K - 1 - i, j - 1);
}

## The start of both rotate kernels (a barrier must follow): the signs of
## the block pair's columns, W = I (row stride LDW; where `identity_when`,
## a uniform condition), and the Gram matrix A
## (row stride LDA) from the stored sums of its entries on and above the
## diagonal, each written with its conjugate below, so that A is exactly
## Hermitian; a work-item's entry on the diagonal sets peak0.
<%def name="block_pair_start(identity_when='1')">\
    for (int a = lid; a < K; a += ROTATE_WG)
        sgn[a] = signs[cjac_block_column(blocks, a)];
    if (${identity_when}) {
        for (int e = lid; e < K * K; e += ROTATE_WG)
            W[e / K * LDW + e % K] = cjac_from_real(e / K == e % K ? 1 : 0);
    }
    {   /* A work-item's entries e = lid + ROTATE_WG t, each the sum of its
         * chunks' partial sums in chunk order, summed chunk by chunk over all
         * of its entries: the loads of a chunk (of several, unrolled) are in
         * flight together instead of one entry's at a time. */
        __global const cjac_elem *sums_of_pair = partial + (size_t)k * chunks * (K * K);
        int at[CJAC_START_ENTRIES];
        cjac_elem sum[CJAC_START_ENTRIES];
#pragma unroll
        for (int t = 0; t < CJAC_START_ENTRIES; ++t) {
            const int2 rc = cjac_upper_entry(min(lid + ROTATE_WG * t, CJAC_UPPER_ENTRIES - 1));
            at[t] = rc.x * K + rc.y;
            sum[t] = CJAC_ELEM_ZERO;
        }
#pragma unroll 4
        for (int c = 0; c < chunks; ++c) {
#pragma unroll
            for (int t = 0; t < CJAC_START_ENTRIES; ++t)
                sum[t] += sums_of_pair[(size_t)c * (K * K) + at[t]];
        }
#pragma unroll
        for (int t = 0; t < CJAC_START_ENTRIES; ++t) {
            if (lid + ROTATE_WG * t >= CJAC_UPPER_ENTRIES)
                break;  /* the last entry, summed again for the loads' sake */
            const int row = at[t] / K, col = at[t] % K;
            A[row * LDA + col] = sum[t];
            if (row != col)
                A[col * LDA + row] = cjac_conj(sum[t]);
            else
                peak0[row] = fmax(peak[cjac_block_column(blocks, row)], cjac_real_part(sum[t]));
        }
    }</%def>

/* Global column of local column a of the block pair (P, Q). */
inline int cjac_block_column(const int2 blocks, const int a)
{
    return a < BW ? blocks.x * BW + a : blocks.y * BW + (a - BW);
}
%if mma:

/* The one product the mma kernels are written in: C += A B for a warp of 32
 * work-items (lanes l = 4 g + t, 0 <= g < 8, 0 <= t < 4) holding the
 * fragments of the PTX ISA's mma.m16n8k4 with .f64 operands ("Matrix
 * fragments for mma.m16n8k4", PTX ISA 7.8+):
 *   A (16 x 4, row-major)  a0 = A[g][t],      a1 = A[g + 8][t]
 *   B (4 x 8, column-major) b0 = B[t][g]
 *   C (16 x 8)             c0, c1 = C[g][2t], C[g][2t + 1]
 *                          c2, c3 = C[g + 8][2t], C[g + 8][2t + 1]
 * Every lane of the warp takes part (the work-group is whole warps, and the
 * kernels reach every product in uniform control flow). */
%if matrix_products == "mma.m16n8k4":
/* One FP64 tensor-core instruction (compute capability 9.0). */
#define CJAC_MMA(c0, c1, c2, c3, a0, a1, b0) \
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 " \
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};" \
                 : "+d"(c0), "+d"(c1), "+d"(c2), "+d"(c3) : "d"(a0), "d"(a1), "d"(b0))
%elif matrix_products == "mma.m8n8k4":
/* Two m8n8k4 instructions (compute capability 8.0), the upper and the lower
 * 8 rows of A and C: the m8n8k4 fragments are a0 = A[g][t], b0 = B[t][g],
 * c0, c1 = C[g][2t], C[g][2t + 1], those of m16n8k4 for rows 0..7. */
#define CJAC_MMA(c0, c1, c2, c3, a0, a1, b0) do { \
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 " \
                 "{%0, %1}, {%2}, {%3}, {%0, %1};" : "+d"(c0), "+d"(c1) : "d"(a0), "d"(b0)); \
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 " \
                 "{%0, %1}, {%2}, {%3}, {%0, %1};" : "+d"(c2), "+d"(c3) : "d"(a1), "d"(b0)); \
} while (0)
%else:
/* The same product through local memory (any device): the lanes of the warp
 * publish their fragments in the warp's 96 doubles of scratch, and every
 * lane computes its four entries of C as fma chains over k = 0..3.  The
 * barriers are the work-group's: every work-item reaches every product. */
inline void cjac_mma_emulated(cjac_real *c0, cjac_real *c1, cjac_real *c2, cjac_real *c3,
                              const cjac_real a0, const cjac_real a1, const cjac_real b0,
                              __local cjac_real *scratch, const int lane)
{
    scratch[lane] = a0;
    scratch[32 + lane] = a1;
    scratch[64 + lane] = b0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int g = lane / 4, t = lane % 4;
    cjac_real *c[4] = {c0, c1, c2, c3};
    for (int e = 0; e < 4; ++e) {
        /* C[row][col]: A[row][kk] is lane 4 (row % 8) + kk's a0 (row < 8) or
         * a1, B[kk][col] lane 4 col + kk's b0 */
        const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
        cjac_real sum = *c[e];
        for (int kk = 0; kk < 4; ++kk)
            sum = fma(scratch[32 * (row / 8) + 4 * (row % 8) + kk], scratch[64 + 4 * col + kk],
                      sum);
        *c[e] = sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#define CJAC_MMA(c0, c1, c2, c3, a0, a1, b0) \
    cjac_mma_emulated(&(c0), &(c1), &(c2), &(c3), a0, a1, b0, mma_scratch, lane)
%endif
%if update_column_parts > 1:

/* The UPDATE_COLUMN_PARTS warps of the update kernel that share block
 * row_warp of rows wait for each other: every one has loaded the rows (its
 * products are done) before any stores its part of them. */
%if matrix_products == "mma.emulated":
#define CJAC_ROW_WARPS_SYNC(row_warp) barrier(CLK_GLOBAL_MEM_FENCE)
%else:
/* Barrier 1 + row_warp of their 32 UPDATE_COLUMN_PARTS work-items (barrier 0
 * is the work-group's); bar.sync orders the memory accesses of the threads
 * it waits for (PTX ISA, "bar, barrier"). */
#define CJAC_ROW_WARPS_SYNC(row_warp) \
    asm volatile("bar.sync %0, %1;" :: "r"(1 + (row_warp)), "r"(32 * UPDATE_COLUMN_PARTS) : "memory")
%endif
%endif
%if gram_stages or update_stages:

/* Copies from global to local memory that the warps of the Gram kernel
 * (GRAM_STAGES stages a warp) and of the update kernel (UPDATE_STAGES a
 * block of rows) have in flight while their products run.
 * CJAC_COPY16(dst, src, bytes) copies the first `bytes` (0, 8 or 16) of src
 * and fills the rest of dst with zeros, CJAC_COPY8(dst, src, bytes) the
 * first 0 or 8; CJAC_COPY_COMMIT closes the copies a lane issued since the
 * last commit into a group, and CJAC_COPY_WAIT(n) waits until at most n of
 * its groups are in flight; CJAC_WARP_SYNC then makes every lane's copies
 * visible to the warp. */
%if matrix_products == "mma.emulated":
/* Plain loads and stores, done at once (any device); the barrier is the
 * work-group's, which every work-item reaches. */
#define CJAC_COPY16(dst, src, bytes) do { \
    (dst)[0] = (bytes) >= 8 ? (src)[0] : 0; \
    (dst)[1] = (bytes) >= 16 ? (src)[1] : 0; \
} while (0)
#define CJAC_COPY8(dst, src, bytes) do { *(dst) = (bytes) ? *(src) : 0; } while (0)
#define CJAC_COPY_COMMIT()
#define CJAC_COPY_WAIT(n)
#define CJAC_WARP_SYNC() barrier(CLK_LOCAL_MEM_FENCE)
%else:
/* cp.async (compute capability 8.0, PTX ISA 7.0) through inline PTX: the
 * copy goes to local (shared) memory without a register; the local pointer
 * converted to an integer is its address in the shared window.  Copies of
 * 16 bytes bypass L1 (.cg); those of 8 bytes, which need only 8-byte
 * alignment (any leading dimension), are .ca, the one form that has them. */
#define CJAC_COPY16(dst, src, bytes) \
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" \
                 :: "r"((uint)(size_t)(dst)), "l"(src), "r"(bytes) : "memory")
#define CJAC_COPY8(dst, src, bytes) \
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" \
                 :: "r"((uint)(size_t)(dst)), "l"(src), "r"(bytes) : "memory")
#define CJAC_COPY_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define CJAC_COPY_WAIT(n) asm volatile("cp.async.wait_group %0;" :: "n"(n) : "memory")
#define CJAC_WARP_SYNC() asm volatile("bar.warp.sync -1;" ::: "memory")
%endif
%endif
%if gram_stages and len(gram_teams) > 1:

/* The warps of the teamed Gram kernel, each in its own team's code, wait
 * for each other: the work-group's barrier in "mma.emulated" (where every
 * warp runs every team), else barrier 1 of all GRAM_WG work-items through
 * inline PTX (bar.sync counts the work-items that arrive, wherever in the
 * code; it orders their memory accesses, PTX ISA "bar, barrier"). */
%if matrix_products == "mma.emulated":
#define CJAC_TEAMS_SYNC() barrier(CLK_LOCAL_MEM_FENCE)
%else:
#define CJAC_TEAMS_SYNC() asm volatile("bar.sync 1, %0;" :: "r"(GRAM_WG) : "memory")
%endif
%endif
%if update_stages:

/* The update warps of block row_warp of rows wait for each other's copies
 * of its rows (and for each other's reads of the stage the next copies
 * overwrite): the work-group's barrier in "mma.emulated", else the warp's
 * own, or the named barrier of the row's UPDATE_COLUMN_PARTS warps. */
%if matrix_products == "mma.emulated":
#define CJAC_STAGE_SYNC(row_warp) barrier(CLK_LOCAL_MEM_FENCE)
%elif update_column_parts > 1:
#define CJAC_STAGE_SYNC(row_warp) CJAC_ROW_WARPS_SYNC(row_warp)
%else:
#define CJAC_STAGE_SYNC(row_warp) CJAC_WARP_SYNC()
%endif
%endif
%endif

%if not mma:
/* Partial Gram matrix of block pair k over the rows of chunk c: work-group
 * (k, c) of an (slots x chunks) grid.  Entry (a, b) is sum_rows conj(x_a) x_b
 * (cjac_dot_acc; x_a x_b for real data), so the matrix is Hermitian.
 *
 * Tiles of TILE_ROWS rows of the K columns go through local memory row by
 * row: tile[rr * GRAM_TILE_STRIDE + a] is row rr of local column a.  The
 * stride is odd, so the transposing store of the coalesced column loads
 * (consecutive work-items, consecutive rows of one column) hits distinct
 * banks.
 *
 * Register micro-tiles: the Gram matrix is cut cyclically into NB x NB
 * micro-tiles of RB x RB entries, micro-tile (I, J) holding the entries
 * (I + i NB, J + j NB), 0 <= i, j < RB.  Only the micro-tiles with I <= J
 * are computed (the matrix is Hermitian: (J, I) holds the conjugate
 * transposes of (I, J)); a work-item reads RB + RB values of a row for
 * RB * RB FMAs (four real FMAs each for complex data).  The cyclic cut
 * makes the reads of the work-items of one row slice (micro-tiles
 * numbered row by row, J fastest) one broadcast per value for I and
 * consecutive addresses for J: free of bank conflicts (but where a warp
 * spans two slices, i.e. two rows).
 *
 * Row slices: work-item lid computes micro-tile lid % GRAM_TILES over the
 * rows rr = s, s + S, ... (s = lid / GRAM_TILES) of every tile; the slices
 * are added in the order 0, 1, ..., S-1 at the end.  Every entry has a fixed
 * summation order (bitwise reproducible).  The sums are staged in local
 * memory (reusing the tile; stride K + 1 is odd), and the entries on and
 * above the diagonal of the row-major K x K matrix are written out
 * (cjac_upper_entry; the readers take an entry below as the conjugate of
 * its mirror, so the matrix they form is exactly Hermitian): entry (a, b),
 * a < b, is conj(b, a) where (b, a) was computed, i.e. in a micro-tile with
 * I > J, and the diagonal is stored real. */
__kernel __attribute__((reqd_work_group_size(GRAM_WG, 1, 1)))
void cjac_block_gram(${signatures["cjac_block_gram"].parameters})
{
    __local cjac_elem lmem[GRAM_LOCAL];  /* the tile, then the staged sums */
    const int k = get_group_id(0), c = get_group_id(1);
    const int slots = get_num_groups(0), chunks = get_num_groups(1);
    const int lid = get_local_id(0);
    const int slice = lid / GRAM_TILES;
    /* Micro-tile lid % GRAM_TILES of the upper triangle, row by row. */
    int I = 0, J = lid % GRAM_TILES;
    while (J >= GRAM_NB - I) {
        J -= GRAM_NB - I;
        ++I;
    }
    J += I;
    const int2 blocks = outer_pairs[step * slots + k];
    const int first = c * chunk_rows;
    const int last = min(m, first + chunk_rows);

%for i in range(RB):
%for j in range(RB):
    cjac_elem acc_${i}_${j} = CJAC_ELEM_ZERO;
%endfor
%endfor
    for (int row0 = first; row0 < last; row0 += TILE_ROWS) {
        const int rows = min(TILE_ROWS, last - row0);
        for (int x = lid; x < GRAM_KP * TILE_ROWS; x += GRAM_WG) {
            const int a = x / TILE_ROWS, rr = x % TILE_ROWS;
            lmem[rr * GRAM_TILE_STRIDE + a] = a < K && rr < rows
                ? CJAC_LOAD(CJAC_COLUMN(G, cjac_block_column(blocks, a), ldg), row0 + rr, ldg)
                : CJAC_ELEM_ZERO;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int rr = slice; rr < rows; rr += GRAM_SLICES) {
            __local const cjac_elem *tile_row = lmem + rr * GRAM_TILE_STRIDE;
%for i in range(RB):
            const cjac_elem x_${i} = tile_row[I + ${i * NB}];
%endfor
%for j in range(RB):
            const cjac_elem y_${j} = tile_row[J + ${j * NB}];
%endfor
%for i in range(RB):
%for j in range(RB):
            acc_${i}_${j} = cjac_dot_acc(x_${i}, y_${j}, acc_${i}_${j});
%endfor
%endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* Add the slices in order into the staged sums (entries (a, b) of the
     * micro-tiles with I <= J, row stride GRAM_RESULT_STRIDE). */
    __local cjac_elem *sums = lmem;
    for (int s = 0; s < GRAM_SLICES; ++s) {
        if (slice == s) {
%for i in range(RB):
%for j in range(RB):
            {
                const int a = I + ${i * NB}, b = J + ${j * NB};
                if (a < K && b < K) {
                    __local cjac_elem *entry = sums + a * GRAM_RESULT_STRIDE + b;
                    *entry = s ? *entry + acc_${i}_${j} : acc_${i}_${j};
                }
            }
%endfor
%endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    __global cjac_elem *out = partial + ((size_t)k * chunks + c) * (K * K);
    for (int e = lid; e < CJAC_UPPER_ENTRIES; e += GRAM_WG) {  /* a <= b only */
        const int2 ab = cjac_upper_entry(e);
        const int a = ab.x, b = ab.y;
        const int I_a = a % GRAM_NB, J_b = b % GRAM_NB;
%if complex_:
        /* The diagonal |x_a|^2: its imaginary part is rounding noise, dropped. */
        out[a * K + b] = a == b ? cjac_from_real(cjac_real_part(sums[a * GRAM_RESULT_STRIDE + a]))
               : I_a < J_b || (I_a == J_b && a < b) ? sums[a * GRAM_RESULT_STRIDE + b]
                                                    : cjac_conj(sums[b * GRAM_RESULT_STRIDE + a]);
%else:
        out[a * K + b] = I_a < J_b || (I_a == J_b && a <= b)
            ? sums[a * GRAM_RESULT_STRIDE + b] : sums[b * GRAM_RESULT_STRIDE + a];
%endif
    }
}
%else:
/* Partial Gram matrix of block pair k over the rows of chunk c, by warps of
 * 16 x 8 x 4 products (CJAC_MMA): work-group (k, c) of an (slots x chunks)
 * grid, GRAM_WARPS warps.
 *
 * The products are real: Z is X = [G_P G_Q] for real data, and [Re X Im X]
 * (RK = 2K real columns) for complex data, whose Gram matrix
 * X^* X = (Re^T Re + Im^T Im) + i (Re^T Im - Im^T Re) is read off the real
 * one, C = Z^T Z, at the end.  With 4 rows r..r+3 of Z, the update of C is
 * the product of A = Z^T (RK x 4) and B = Z (4 x RK).  Lane (g, t) loads
 * v_j = Z[r + t][8 j + g] for the RK/8 column groups j: one load per value of
 * Z (the 4 lanes t of a column read one 32-byte sector), and these values
 * are every fragment a product needs: the A fragment of rows 16 i..16 i + 15
 * is (v_2i, v_2i+1), the B fragment of columns 8 j..8 j + 7 is v_j.  A warp
 * keeps in registers the 16 x 8 tiles (i, j) with j >= 2 i, which cover the
 * entries on and above the diagonal (entry (a, b), a <= b, lies in tile
 * (a / 16, b / 8) and b / 8 >= 2 (a / 16)); no local memory and no barrier
 * until the sums.
 *
 * Rows: each warp takes GRAM_MMA_STEPS consecutive groups of 4 rows of every
 * stretch of 4 GRAM_MMA_STEPS GRAM_WARPS rows (its loads are issued before
 * its products); rows past the chunk read as zeros, so that every work-item
 * runs the same loop.  Each entry is the sum over the warp's rows in order
 * (the accumulation of the products is fixed), and the warps' sums are
 * added in the order 0, 1, ..., GRAM_WARPS - 1 in local memory: bitwise
 * reproducible.  The entries on and above the diagonal are stored
 * (cjac_upper_entry; the readers take an entry below as the conjugate of
 * its mirror), and a complex diagonal is real, its imaginary part
 * C[a][K + a] - C[a][K + a] = 0. */
__kernel __attribute__((reqd_work_group_size(GRAM_WG, 1, 1)))
void cjac_block_gram(${signatures["cjac_block_gram"].parameters})
{
%if teamed:
    __local cjac_real sums[GRAM_TEAM_SUMS];
%elif gram_stages:
    /* the warps' stages, then the sums */
    __local cjac_real sums[GRAM_MMA_LOCAL] __attribute__((aligned(16)));
%else:
    __local cjac_real sums[RK * MMA_SUMS_STRIDE];
%endif
%if matrix_products == "mma.emulated":
    __local cjac_real mma_scratch_all[GRAM_WARPS * 96];
%endif
    const int k = get_group_id(0), c = get_group_id(1);
    const int slots = get_num_groups(0), chunks = get_num_groups(1);
    const int lid = get_local_id(0), warp = lid / 32, lane = lid % 32;
    const int g = lane / 4, t = lane % 4;
%if matrix_products == "mma.emulated":
    __local cjac_real *mma_scratch = mma_scratch_all + warp * 96;
%endif
    const int2 blocks = outer_pairs[step * slots + k];
    const int first = c * chunk_rows;
    const int last = min(m, first + chunk_rows);
%if teamed:
    /* Teamed (RK = 128: 72 tiles, too many for one warp's registers): warp v
     * keeps the tiles of team v over every row of the chunk, in order, and
     * loads only the column groups they take; its sums go to their own
     * tiles in local memory (no adds).  With the emulated product (whose
     * barriers every work-item must reach) every warp runs every team and
     * stores its own: the same products in the same order. */
%if gram_stages:
<%
    columns_per_copy = 32 * len(gram_teams) // 16  # 16 work-items a column: its 16 rows
    team_copies = RK // columns_per_copy
%>\
    /* Staged (the warps share the rows): stretch q of GRAM_STAGE_ROWS rows of
     * the chunk goes to stage q % GRAM_STAGES, column a of Z at
     * a * GRAM_STAGE_LD (4 or 12 mod 16: the reads of a half-warp,
     * Z[r + t][8 j + g], hit distinct banks), by 8-byte copies (any leading
     * dimension): work-item lid copies row lid % 16 of the columns
     * lid / 16 + ${columns_per_copy} i.  The stages lie in the stored tiles' memory (the
     * tiles are stored after the last stretch), except in "mma.emulated",
     * where every warp runs the teams one after the other. */
%if matrix_products == "mma.emulated":
    __local cjac_real team_stages[GRAM_STAGES * GRAM_STAGE_REALS];
%else:
    __local cjac_real *team_stages = sums;
%endif
    const int copy_row = lid % 16, copy_column = lid / 16;
    __global const ${store_ctype} *copy_P = CJAC_COLUMN(G, blocks.x * BW + copy_column, ldg);
    __global const ${store_ctype} *copy_Q = CJAC_COLUMN(G, blocks.y * BW + copy_column, ldg);
    const int stretches = (last - first + GRAM_STAGE_ROWS - 1) / GRAM_STAGE_ROWS;  /* uniform */
<%def name="team_stage_copies(q)">\
        {   /* stretch ${q} into its stage (nothing past the chunk: zeros) */
            const int row = first + (${q}) * GRAM_STAGE_ROWS + copy_row;
            const int bytes = row < last ? 8 : 0;
            const int from = bytes ? row : first;
            __local cjac_real *to = team_stages + (${q}) % GRAM_STAGES * GRAM_STAGE_REALS
                                  + copy_column * GRAM_STAGE_LD + copy_row;
%for i in range(team_copies):
<% z = columns_per_copy * i %>\
            CJAC_COPY8(to + ${z} * GRAM_STAGE_LD,
                       &${mma_part(mma_column("copy_P", "copy_Q", z, "ldg"), "from", "ldg", z, const=True)}, bytes);
%endfor
            CJAC_COPY_COMMIT();
        }
</%def>\
%else:
    __global const ${store_ctype} *column_P = CJAC_COLUMN(G, blocks.x * BW + g, ldg);
    __global const ${store_ctype} *column_Q = CJAC_COLUMN(G, blocks.y * BW + g, ldg);
%endif
%for v, team in enumerate(gram_teams):
<%
    team_groups = sorted({2 * i for i, j in team} | {2 * i + 1 for i, j in team}
                         | {j for i, j in team})
%>    if (${"1" if matrix_products == "mma.emulated" else f"warp == {v}"}) {  /* team ${v} */
%for i, j in team:
        cjac_real acc_${i}_${j}_0 = 0, acc_${i}_${j}_1 = 0, acc_${i}_${j}_2 = 0, acc_${i}_${j}_3 = 0;
%endfor
%if gram_stages:
%for q in range(gram_stages - 1):
${team_stage_copies(str(q))}
%endfor
        for (int q = 0; q < stretches; ++q) {  /* uniform */
            CJAC_COPY_WAIT(${gram_stages - 2});
            CJAC_TEAMS_SYNC();  /* every work-item's copies of stretch q, visible */
${team_stage_copies(f"q + {gram_stages - 1}")}
            __local const cjac_real *stage = team_stages + q % GRAM_STAGES * GRAM_STAGE_REALS
                                           + g * GRAM_STAGE_LD + t;
%for s in range(4):
%for j in team_groups:
            const cjac_real v_${s}_${j} = stage[${8 * j} * GRAM_STAGE_LD + ${4 * s}];
%endfor
%for i, j in team:
            CJAC_MMA(acc_${i}_${j}_0, acc_${i}_${j}_1, acc_${i}_${j}_2, acc_${i}_${j}_3,
                     v_${s}_${2 * i}, v_${s}_${2 * i + 1}, v_${s}_${j});
%endfor
%endfor
        }
        CJAC_COPY_WAIT(0);  /* the stretches past the chunk */
        CJAC_TEAMS_SYNC();  /* every stage read, before the tiles are stored over them */
%else:
%for j in team_groups:
        __global const ${store_ctype} *column_${j} = ${mma_column("column_P", "column_Q", 8 * j, "ldg")};
%endfor
        for (int base = first; base < last; base += 4 * GRAM_MMA_STEPS) {  /* uniform */
%for s in range(mma_steps):
            const int row_${s} = base + ${4 * s} + t;
%for j in team_groups:
            const cjac_real v_${s}_${j} = ${gram_value(j, f"row_{s}")};
%endfor
%endfor
%for s in range(mma_steps):
%for i, j in team:
            CJAC_MMA(acc_${i}_${j}_0, acc_${i}_${j}_1, acc_${i}_${j}_2, acc_${i}_${j}_3,
                     v_${s}_${2 * i}, v_${s}_${2 * i + 1}, v_${s}_${j});
%endfor
%endfor
        }
%endif
        if (warp == ${v}) {
%for i, j in team:
%for e in range(4):
            sums[${(i * (RK // 8 - 1 - i) + j) * 128 + 8 * 8 * (e // 2) + e % 2} + 8 * g + 2 * t] = acc_${i}_${j}_${e};
%endfor
%endfor
        }
    }
%endfor
    barrier(CLK_LOCAL_MEM_FENCE);
%else:
%if gram_stages:
<%
    stage_rows = 4 * mma_steps
    lanes_per_column = stage_rows // 2
    columns_per_copy = 32 // lanes_per_column
%>\
    /* Staged: stretch q of GRAM_STAGE_ROWS rows of the warp's (rows first +
     * (q GRAM_WARPS + warp) GRAM_STAGE_ROWS ..., the rows the register form
     * takes) goes to stage q % GRAM_STAGES of the warp, column a of Z at
     * a * GRAM_STAGE_LD (GRAM_STAGE_LD = 4 or 12 mod 16: the reads of a
     * half-warp, Z[r + t][8 j + g], hit distinct banks).  Lane l copies rows
     * 2 (l % ${lanes_per_column}), +1 of the columns l / ${lanes_per_column} + ${columns_per_copy} i. */
    __local cjac_real *stages = sums + warp * (GRAM_STAGES * GRAM_STAGE_REALS);
    const int copy_row = GRAM_STAGE_ROWS * warp + 2 * (lane % ${lanes_per_column});
    const int copy_column = lane / ${lanes_per_column};
    __global const cjac_real *copy_P = CJAC_COLUMN(G, blocks.x * BW + copy_column, ldg);
    __global const cjac_real *copy_Q = CJAC_COLUMN(G, blocks.y * BW + copy_column, ldg);
    const int stretches = (last - first + GRAM_STAGE_ROWS * GRAM_WARPS - 1)
                        / (GRAM_STAGE_ROWS * GRAM_WARPS);  /* uniform */
<%def name="stage_copies(q)">\
    {   /* stretch ${q} into its stage (nothing past the chunk: zeros) */
        const int row = first + (${q}) * (GRAM_STAGE_ROWS * GRAM_WARPS) + copy_row;
        const int bytes = clamp(8 * (last - row), 0, 16);
        const size_t from = bytes ? row : first;
        __local cjac_real *to = stages + ((${q}) % GRAM_STAGES) * GRAM_STAGE_REALS
                              + copy_column * GRAM_STAGE_LD + 2 * (lane % ${lanes_per_column});
%for i in range(RK // columns_per_copy):
<% a = columns_per_copy * i %>\
        CJAC_COPY16(to + ${a} * GRAM_STAGE_LD, ${mma_column("copy_P", "copy_Q", a, "ldg")} + from, bytes);
%endfor
        CJAC_COPY_COMMIT();
    }
</%def>\
%for q in range(gram_stages - 1):
${stage_copies(str(q))}
%endfor
%endif
<% groups = RK // 8 %>\
%if not gram_stages:
    /* column 8 j + g of Z, for every column group j */
    __global const ${store_ctype} *column_P = CJAC_COLUMN(G, blocks.x * BW + g, ldg);
    __global const ${store_ctype} *column_Q = CJAC_COLUMN(G, blocks.y * BW + g, ldg);
%for j in range(groups):
    __global const ${store_ctype} *column_${j} = ${mma_column("column_P", "column_Q", 8 * j, "ldg")};
%endfor
%endif
%for i, j in gram_tiles:
    cjac_real acc_${i}_${j}_0 = 0, acc_${i}_${j}_1 = 0, acc_${i}_${j}_2 = 0, acc_${i}_${j}_3 = 0;
%endfor
%if gram_stages:
    for (int q = 0; q < stretches; ++q) {  /* uniform */
        CJAC_COPY_WAIT(${gram_stages - 2});
        CJAC_WARP_SYNC();
        /* into the stage the warp read in the step before */
${stage_copies(f"q + {gram_stages - 1}")}
        __local const cjac_real *stage = stages + (q % GRAM_STAGES) * GRAM_STAGE_REALS
                                       + g * GRAM_STAGE_LD + t;
%for s in range(mma_steps):
%for j in range(groups):
        const cjac_real v_${s}_${j} = stage[${8 * j} * GRAM_STAGE_LD + ${4 * s}];
%endfor
%for i, j in gram_tiles:
        CJAC_MMA(acc_${i}_${j}_0, acc_${i}_${j}_1, acc_${i}_${j}_2, acc_${i}_${j}_3,
                 v_${s}_${2 * i}, v_${s}_${2 * i + 1}, v_${s}_${j});
%endfor
%endfor
    }
    CJAC_COPY_WAIT(0);  /* the stages past the chunk, before the sums reuse them */
    barrier(CLK_LOCAL_MEM_FENCE);
%else:
%if gram_loads_ahead:
    /* The next stretch's values load while this one's products run. */
%for s in range(mma_steps):
    int row_${s} = first + 4 * (GRAM_MMA_STEPS * warp + ${s}) + t;
%for j in range(groups):
    cjac_real next_${s}_${j} = ${gram_value(j, f"row_{s}")};
%endfor
%endfor
%endif
    for (int base = first; base < last; base += 4 * GRAM_MMA_STEPS * GRAM_WARPS) {  /* uniform */
%for s in range(mma_steps):
%if gram_loads_ahead:
%for j in range(groups):
        const cjac_real v_${s}_${j} = next_${s}_${j};
%endfor
        row_${s} += 4 * GRAM_MMA_STEPS * GRAM_WARPS;
%for j in range(groups):
        next_${s}_${j} = ${gram_value(j, f"row_{s}")};
%endfor
%else:
        const int row_${s} = base + 4 * (GRAM_MMA_STEPS * warp + ${s}) + t;
%for j in range(groups):
        const cjac_real v_${s}_${j} = ${gram_value(j, f"row_{s}")};
%endfor
%endif
%endfor
%for s in range(mma_steps):
%for i, j in gram_tiles:
        CJAC_MMA(acc_${i}_${j}_0, acc_${i}_${j}_1, acc_${i}_${j}_2, acc_${i}_${j}_3,
                 v_${s}_${2 * i}, v_${s}_${2 * i + 1}, v_${s}_${j});
%endfor
%endfor
    }
%endif
    /* The warps' sums, added in order (entries of the tiles, stride
     * MMA_SUMS_STRIDE); c0..c3 of tile (i, j) is entry
     * (16 i + g (+ 8), 8 j + 2 t (+ 1)). */
    for (int v = 0; v < GRAM_WARPS; ++v) {
        if (warp == v) {
%for i, j in gram_tiles:
%for e in range(4):
            {
                __local cjac_real *entry =
                    sums + (${16 * i + 8 * (e // 2)} + g) * MMA_SUMS_STRIDE + ${8 * j + e % 2} + 2 * t;
                *entry = v ? *entry + acc_${i}_${j}_${e} : acc_${i}_${j}_${e};
            }
%endfor
%endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
%endif
    __global cjac_elem *out = partial + ((size_t)k * chunks + c) * (K * K);
    for (int e = lid; e < CJAC_UPPER_ENTRIES; e += GRAM_WG) {  /* a <= b only */
        const int2 ab = cjac_upper_entry(e);
        const int a = ab.x, b = ab.y;
%if complex_:
        /* C[a][b] + C[K + a][K + b] + i (C[a][K + b] - C[b][K + a]) */
        const cjac_real re = ${gram_sum("a", "b")} + ${gram_sum("K + a", "K + b")};
        const cjac_real im = ${gram_sum("a", "K + b")} - ${gram_sum("b", "K + a")};
        out[a * K + b] = (cjac_elem)(re, im);
%else:
        out[a * K + b] = ${gram_sum("a", "b")};
%endif
    }
}
%endif

/* The rotation of a pair (i, j) of the Gram matrix A of a block pair, as
 * cjac_step decides it on the columns (the 2011 paper, eq. (2.3)-(2.5)):
 * t = 0 (no rotation) for a relatively orthogonal pair, and for one the
 * Gram matrix cannot resolve, which is "deferred" to the pointwise sweeps;
 * "big" for a rotation that moves the shorter column by more than
 * sqrt(eps)/2 (the GSVD paper, Sect. 2.5, counts these).  a_arg is |a_ij|
 * for complex data, a_ij for real (cjac_tangent_arg); peak_i and peak_j are
 * the largest squared norms the columns have had. */
typedef struct { cjac_real t; int deferred, big; } cjac_block_decision;

inline cjac_block_decision cjac_block_decide(
    const cjac_real a_ii, const cjac_real a_jj, const cjac_real a_arg, const bool hyperbolic,
    const cjac_real peak_i, const cjac_real peak_j, const cjac_real tol)
{
    cjac_block_decision d;
    d.t = 0;
    d.deferred = d.big = 0;
    /* The column norms, once for the skip test and the "big" measure.  A
     * diagonal entry below the normal range (or driven negative by the
     * rounding of the two-sided updates) is not rotated. */
    const bool normal = a_ii >= CJAC_TINY && a_jj >= CJAC_TINY;
    const cjac_real norm_i = sqrt(a_ii), norm_j = sqrt(a_jj);
    /* eq. (2.3) of the 2011 paper, on the Gram matrix */
    const bool nonorthogonal = normal && fabs(a_arg) > tol * norm_i * norm_j;
    if (!nonorthogonal) {  /* what follows would give t = 0: skipped */
        d.deferred = !normal && a_arg != 0;
        return d;
    }
    /* What the Gram matrix cannot resolve is left to the pointwise sweeps,
     * which work on the columns: a pair whose dependence (sin^2 of the angle
     * for a trigonometric pair, |kappa| - 1 for a hyperbolic one, both
     * cancelling in the Gram entries) is within GRAM_RESOLUTION tol of zero
     * -- for a hyperbolic pair |kappa| <= 1, no rotation exists -- or whose
     * column shrank to GRAM_RESOLUTION tol of the largest squared norm it
     * has had (what is left of it is rounding, in A and in the column: the
     * remainder of dependent columns, which rotations would shrink on and
     * on). */
    /* The hyperbolic test |kappa| - 1 <= resolution |kappa|, |kappa| =
     * (a_ii + a_jj) / (2 |a_ij|), is taken multiplied by 2 |a_ij| > 0, and
     * "big" below by the shorter norm: two divisions fewer in the decision. */
    const cjac_real resolution = GRAM_RESOLUTION * tol;
    const cjac_real cosine = fabs(a_arg) / (norm_i * norm_j);
    const bool unresolved =
        a_ii <= resolution * peak_i || a_jj <= resolution * peak_j
        || (hyperbolic ? (a_ii + a_jj) - 2 * fabs(a_arg) <= resolution * (a_ii + a_jj)
                       : (1 - cosine) * (1 + cosine) <= resolution);
    if (!unresolved)
        d.t = cjac_tangent(a_ii, a_jj, a_arg, hyperbolic);
    d.deferred = d.t == 0;  /* a nonorthogonal pair left unrotated */
    /* "big": |t| measured against the shorter column */
    d.big = d.t != 0 && fabs(d.t) * fmax(norm_i, norm_j) > (sqrt(CJAC_EPS) / 2) * fmin(norm_i, norm_j);
    return d;
}

%if transform_in_registers:
/* W in registers during the steps across the blocks ("offdiag", W's global
 * slot otherwise; BlockedSpec.transform_in_registers).  W <- W R only mixes
 * the entries of a row, and across step s pairs column a of P with column
 * BW + (a + s) mod BW of Q (host.blocked.offdiag_step_pairs): W_LANES
 * work-items share the rows w_row + W_ROW_STEP r (0 <= r < W_ROWS) of W,
 * lane w_lane holding their columns a_c = w_lane + W_LANES c of P
 * (w_left[r W_COLS + c]) and, in step s, the column BW + (a_c + s) mod BW of
 * Q that a_c meets (w_right[r W_COLS + c]).  A lane reads the rotation of
 * pair a_c once a step for all of its rows.  After a step, w_right[.. c]
 * passes to the lane of column a_c - 1 (mod BW): the lane to the left in the
 * row, slot c, or from the row's first lane to its last, slot c - 1 (mod
 * W_COLS); the first lane offers its slots turned by one, so that every lane
 * moves slot c.  Each entry sees the rotations of the global form in the
 * same order, with the same operations: the same W, bit for bit, without a
 * round trip to memory in every step. */
%if shuffle == "ptx":
/* x of lane `source` of the warp (shfl.sync.idx, PTX ISA 6.0), in two
 * 32-bit halves. */
inline cjac_real cjac_shuffle_real(const cjac_real x, const int source)
{
    const int2 halves = as_int2(x);
    int low, high;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                 : "=r"(low) : "r"(halves.x), "r"(source));
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                 : "=r"(high) : "r"(halves.y), "r"(source));
    return as_double((int2)(low, high));
}
%endif
<%def name="transform_registers_declare()">\
const int w_row = lid / W_LANES, w_lane = lid % W_LANES;
    /* the lane of column a_c - 1 (mod BW) of P takes w_right[.. c] */
    const int w_source = w_lane < W_LANES - 1 ? lid + 1 : lid + 1 - W_LANES;
    /* slot r W_COLS + c: row w_row + W_ROW_STEP r, column a_c of P */
    cjac_elem w_left[W_ROWS * W_COLS], w_right[W_ROWS * W_COLS];
</%def>
## What lane w_lane offers after a step in slot (r, c) (the first lane's
## slots of a row turned by one), taken by the lane of the column before.
<%def name="w_offer(r, c)">(w_lane == 0 ? w_right[${r * w_cols + (c + 1) % w_cols}] : w_right[${r * w_cols + c}])</%def>
<%def name="transform_registers_step()">\
const int across = inner - WITHIN_STEPS;  /* s */
                if (across == 0) {  /* W so far */
%for r in range(w_rows):
%for c in range(w_cols):
                    {
                        const int row = w_row + ${r} * W_ROW_STEP, a = w_lane + ${c} * W_LANES;
                        /* W holds the steps within the blocks of this launch
                         * (whole_group) or an inner sweep before */
                        const bool stored = whole_group || sweep > 0;
                        w_left[${r * w_cols + c}] = stored ? W[row * LDW + a]
                                                  : cjac_from_real(row == a ? 1 : 0);
                        w_right[${r * w_cols + c}] = stored ? W[row * LDW + BW + a]
                                                   : cjac_from_real(row == BW + a ? 1 : 0);
                    }
%endfor
%endfor
                } else {  /* column BW + (a_c + s) mod BW of Q, from the lane of a_c + 1 */
%if shuffle == "ptx":
                    const int lane = w_source % 32;
%for x in range(w_rows * w_cols):
                    const cjac_elem offer_${x} = ${w_offer(x // w_cols, x % w_cols)};
%endfor
%for x in range(w_rows * w_cols):
%if complex_:
                    w_right[${x}] = (cjac_elem)(cjac_shuffle_real(offer_${x}.x, lane),
                                                cjac_shuffle_real(offer_${x}.y, lane));
%else:
                    w_right[${x}] = cjac_shuffle_real(offer_${x}, lane);
%endif
%endfor
%else:
                    __local const cjac_elem *offers =
                        w_exchange + ((across - 1) % 2) * (W_ROWS * W_COLS * ROTATE_WG);
%for x in range(w_rows * w_cols):
                    w_right[${x}] = offers[${x} * ROTATE_WG + w_source];
%endfor
%endif
                }
%for c in range(w_cols):
                {   /* pair q = a_c: columns a_c and BW + (a_c + s) mod BW, in every row */
                    const int q = w_lane + ${c} * W_LANES;
                    if (rot_flag[q]) {
                        const cjac_real cm1 = rot_cm1[q];
                        const cjac_elem s = rot_s[q], si = rot_si[q];
%for r in range(w_rows):
                        {
                            const cjac_elem wi = w_left[${r * w_cols + c}], wj = w_right[${r * w_cols + c}];
                            w_left[${r * w_cols + c}] = cjac_scale_1p(cm1, cjac_axpy(si, wj, wi));
                            w_right[${r * w_cols + c}] = cjac_scale_1p(cm1, cjac_axpy(s, wi, wj));
                        }
%endfor
                    }
                }
%endfor
%if shuffle == "local":
                {   /* the offers of this step */
                    __local cjac_elem *offers = w_exchange + (across % 2) * (W_ROWS * W_COLS * ROTATE_WG);
%for x in range(w_rows * w_cols):
                    offers[${x} * ROTATE_WG + lid] = ${w_offer(x // w_cols, x % w_cols)};
%endfor
                }
%endif
                if (inner == INNER_STEPS - 1) {  /* back in W's global slot */
%for r in range(w_rows):
%for c in range(w_cols):
                    {
                        const int row = w_row + ${r} * W_ROW_STEP;
                        W[row * LDW + w_lane + ${c} * W_LANES] = w_left[${r * w_cols + c}];
                        W[row * LDW + BW + (w_lane + ${c} * W_LANES + across) % BW] = w_right[${r * w_cols + c}];
                    }
%endfor
%endfor
                }</%def>
%endif
%if inner_method in ("sweeps", "offdiag"):
/* Inner sweeps on the Gram matrix of block pair k ("bo": inner_sweeps = 1;
 * "fb": until no big rotation, at most inner_sweeps); stores W and whether
 * anything rotated.  "offdiag" (inner_sweeps = 1): the steps within the
 * blocks, then those across (host.blocked.offdiag_step_pairs); with
 * whole_group (the first outer step of a sweep) all of them, else only the
 * last BW, which annihilate the off-diagonal block G_P^* G_Q (Novakovic &
 * Singer 2011, Sect. 5, the parallel block-oriented algorithm).
 *
 * The rotation of a pair (i, j) is the one the pointwise kernel applies to
 * the columns (cjac_step in pointwise.cl.mako; Novakovic & Singer 2011,
 * eqs. (2.4)/(2.5), complex extension in arith.element): with
 * a_ij = |a_ij| e^{i alpha}, t from the real formulas on a_ii, a_jj, |a_ij|,
 * s_j = t e^{i alpha} and s_i = -conj(s_j) (trigonometric) or conj(s_j)
 * (hyperbolic),
 *     g_i' = c (g_i + s_i g_j),   g_j' = c (g_j + s_j g_i),
 * i.e. [g_i' g_j'] = [g_i g_j] R with the 2 x 2 block of R
 *     R = c [[1, s_j], [s_i, 1]]          (rows i, j; columns i, j).
 * On the Gram matrix A = X^* X (X = [G_P G_Q]) the one-sided step X <- X R
 * is A <- R^* A R: columns (A R): a_:i' = c (a_:i + s_i a_:j),
 * a_:j' = c (a_:j + s_j a_:i); rows (R^* (A R)): a_i:' = c (a_i: + conj(s_i)
 * a_j:), a_j:' = c (a_j: + conj(s_j) a_i:); and W <- W R as the columns.
 * R^* A R has (i, j) entry 0 (eq. (2.4)/(2.5) with |a_ij| after the phase is
 * moved into s), so the pivot entries are set to 0 and the pivot diagonal to
 * its real part; a_ii' and a_jj' are the new squared norms of eq. (2.6).
 * Real data: s_j = t, s_i = -t or t, conj is the identity: the real
 * two-sided rotation R^T A R of the GSVD paper, Sect. 2.3.
 *
 * Layout: A and (in local memory) W are row-major with the odd row stride
 * K + 1.  A stride of K (a multiple of the 16 banks of doubles for w >= 8)
 * puts a column into one bank: work-items reading one column in different
 * rows, as the block rows of the update that share a warp do, would
 * conflict.
 *
 * One inner step is two phases between barriers: the rotation parameters of
 * the w pairs (one work-item per pair), then the update.  The pairs of a step
 * cover the indices 0..K-1, so A and W split into w x w blocks of 2 x 2
 * entries, block (q1, q2) holding rows (i1, j1) of pair q1 and columns
 * (i2, j2) of pair q2.  A work-item per block applies R_q2 to its columns
 * (A R, W R) and then R_q1 to its rows (R^T (A R)) in registers: the same
 * operations on the same values as updating all columns, then all rows, with
 * no barrier between.  Work-items q2 = 0, 1, ... of one block row read
 * columns i2 (then j2) of the same rows; for the ME tables of K = 16..64
 * these are distinct modulo 16 but for pairs, at most 2-way bank conflicts.
 * The pairs are copied to local memory: work-items reading different
 * entries of a __constant table may be serialized. */
__kernel __attribute__((reqd_work_group_size(ROTATE_WG, 1, 1)))
void cjac_block_rotate(${signatures["cjac_block_rotate"].parameters})
{
    __local cjac_elem A[K * LDA];      /* Gram matrix, then R^* A R */
%if transform_in_local:
    __local cjac_elem W[K * LDW];      /* accumulated transformation */
#define CJAC_FENCE CLK_LOCAL_MEM_FENCE
%else:
    __global cjac_elem *W = transforms + (size_t)get_group_id(0) * (K * K);
#define CJAC_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
%endif
    __local cjac_real rot_cm1[BW];      /* c - 1 (arith: cjac_rotation_cosine_m1) */
    __local cjac_elem rot_s[BW], rot_si[BW];  /* s_j and s_i of the pair */
    __local int2 rot_pair[BW];         /* the step's pairs, read by many items */
    __local int rot_flag[BW], rot_count[BW], rot_big[BW], sweep_big[BW], rot_deferred[BW];
    __local int sgn[K];
    __local cjac_real peak0[K];        /* the largest squared norms of the columns so far */
    __local int block_big;
%if transform_in_registers and shuffle == "local":
    /* W's entries passed on through local memory (any device): step s's
     * offers in half s % 2, taken in step s + 1 (no barrier but the steps') */
    __local cjac_elem w_exchange[W_EXCHANGE];  /* BlockedSpec.rotate_exchange */
#if W_EXCHANGE != 2 * W_ROWS * W_COLS * ROTATE_WG
#error "cjac_block_rotate: the exchange of W's entries is not two steps of every lane's offers"
#endif
%endif

    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    const int slots = get_num_groups(0);
    const int2 blocks = outer_pairs[step * slots + k];

${inner.local_pair_table("cjac_inner_pairs", "inner_pairs_local", "INNER_STEPS", "ROTATE_WG")}
%if transform_in_registers:
${block_pair_start("whole_group")}
    ${transform_registers_declare()}
%else:
${block_pair_start()}
%endif
    /* Every pair index q belongs to work-item q % ROTATE_WG throughout. */
    for (int q = lid; q < BW; q += ROTATE_WG) {
        rot_count[q] = 0;
        rot_big[q] = 0;
        sweep_big[q] = 0;
        rot_deferred[q] = 0;
    }
    barrier(CJAC_FENCE);
    /* eq. (2.3) at the rounding level of the Gram entries, as cjac_step */
    const cjac_real tol = cjac_orthogonality_tolerance(m);

%if inner_method == "offdiag":
    const int first_inner = whole_group ? 0 : WITHIN_STEPS;
%else:
    const int first_inner = 0;
%endif
    for (int sweep = 0; sweep < inner_sweeps; ++sweep) {
        for (int inner = first_inner; inner < INNER_STEPS; ++inner) {
            for (int q = lid; q < BW; q += ROTATE_WG) {
                const int2 p = convert_int2(inner_pairs_local[inner * BW + q]);
                const cjac_elem a_ij = A[p.x * LDA + p.y];
                const cjac_real a_arg = cjac_tangent_arg(a_ij);
                const bool hyperbolic = sgn[p.x] != sgn[p.y];
                const cjac_block_decision d = cjac_block_decide(
                    cjac_real_part(A[p.x * LDA + p.x]), cjac_real_part(A[p.y * LDA + p.y]),
                    a_arg, hyperbolic, peak0[p.x], peak0[p.y], tol);
                const cjac_real t = d.t;
                if (d.deferred)
                    rot_deferred[q] = 1;
                /* s_j = t e^{i alpha}; s_i = conj(s_j) or -conj(s_j) (see above). */
                const cjac_elem s_j = cjac_with_phase(t, a_ij, a_arg);
                rot_pair[q] = p;
                rot_flag[q] = t != 0;
                rot_s[q] = s_j;
                rot_si[q] = hyperbolic ? cjac_conj(s_j) : -cjac_conj(s_j);
                rot_cm1[q] = t != 0 ? cjac_rotation_cosine_m1(t, hyperbolic) : 0;
                if (t != 0) {
                    rot_count[q] += 1;
                    if (d.big) {
                        rot_big[q] = 1;
                        sweep_big[q] = 1;
                    }
                }
            }
            barrier(CJAC_FENCE);
%if transform_in_registers:
            ${inner.rotate_pairs(complex_, "__global", "ROTATE_WG", "inner < WITHIN_STEPS")}
            if (inner >= WITHIN_STEPS) {  /* uniform */
                ${transform_registers_step()}
            }
%else:
            ${inner.rotate_pairs(complex_, "__local" if transform_in_local else "__global", "ROTATE_WG")}
%endif
            barrier(CJAC_FENCE);
        }
        /* sweep_big was last written before the barrier ahead of the final
         * update; it is cleared for the next sweep before the barrier below. */
        if (lid == 0) {
            int big = 0;
            for (int q = 0; q < BW; ++q) {
                big |= sweep_big[q];
                sweep_big[q] = 0;
            }
            block_big = big;
        }
        barrier(CJAC_FENCE);
        if (!block_big)
            break;  /* uniform over the work-group */
    }
    for (int a = lid; a < K; a += ROTATE_WG)  /* eq. (2.6): the new squared norms */
        peak[cjac_block_column(blocks, a)] = fmax(peak0[a], cjac_real_part(A[a * LDA + a]));
%if transform_in_local:
    __global cjac_elem *out = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * K; e += ROTATE_WG)
        out[e] = W[(e / K) * LDW + e % K];
%endif
    if (lid == 0) {
        int count = 0, big = 0, deferred = 0;
        for (int q = 0; q < BW; ++q) {
            count += rot_count[q];
            big |= rot_big[q];
            deferred |= rot_deferred[q];
        }
        rotated[k] = count > 0;
        /* CJAC_BROKEN: a nonorthogonal pair was left unrotated, as in cjac_step;
         * here it means "left to the pointwise sweeps" (host.blocked). */
        status[k] |= (big ? CJAC_ROTATED | CJAC_BIG : (count ? CJAC_ROTATED : 0))
                     | (deferred ? CJAC_BROKEN : 0);
        rotations[k] += count;
    }
}
#undef CJAC_FENCE
%else:
/* The stream SVD's block transformation (Strumpen, Hoffmann & Agarwal 2003,
 * "A Stream Algorithm for the SVD", Algorithm 1 lines 10-30 and Figure 5;
 * cljacobi.stream_reference) on block pair k, variant "stream".  A block
 * transformation of two groups of w columns:
 *   phase 1: the rotations of all w^2 pairs a < w <= b from the same, not
 *            yet updated Gram matrix A (cjac_block_decide, the rotation of
 *            the other blocked variants, so hyperbolic pairs take the
 *            hyperbolic one);
 *   phase 2: W <- W R_(a,b) in the paper's order, a then b, composed one
 *            anti-diagonal at a time: the rotations of an anti-diagonal touch
 *            distinct columns, and each comes after those it does not commute
 *            with, the ones of its column a with smaller b and of its column
 *            b with smaller a.
 * With whole_group (the first outer step of a sweep, where every block
 * appears once) the two groups first meet themselves, the upper triangles
 * of Figure 5(b): the pairs a < b within each block, by the same two phases
 * from A, and A <- W^* A W gives the cross phase fresh inner products, as
 * the next block transformation of the paper recomputes them.  A fixed
 * sequence of plane rotations is one 2w x 2w transformation W, which
 * cjac_block_update applies to G and V as for the other blocked variants.
 * Only the t of every pair is kept (T); phase 2 recomputes s and c - 1 from
 * it and A's entry. */
__kernel __attribute__((reqd_work_group_size(ROTATE_WG, 1, 1)))
void cjac_block_rotate(${signatures["cjac_block_rotate"].parameters})
{
    __local cjac_elem A[K * LDA];      /* the Gram matrix of the current phase */
    __local cjac_elem Y[K * LDA];      /* A W, for the fresh Gram matrix W^* A W */
%if transform_in_local:
    __local cjac_elem W[K * LDW];      /* the composed transformation */
#define CJAC_FENCE CLK_LOCAL_MEM_FENCE
%else:
    __global cjac_elem *W = transforms + (size_t)get_group_id(0) * (K * K);
#define CJAC_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
%endif
    __local cjac_real T[K * K];        /* t of pair (a, b) at a * K + b; 0: no rotation */
    __local int sgn[K];
    __local cjac_real peak0[K];        /* the largest squared norms of the columns so far */
    __local int item_count[ROTATE_WG], item_big[ROTATE_WG], item_deferred[ROTATE_WG];

    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    const int slots = get_num_groups(0);
    const int2 blocks = outer_pairs[step * slots + k];

${block_pair_start()}
    barrier(CJAC_FENCE);
    const cjac_real tol = cjac_orthogonality_tolerance(m);
    int count = 0, big = 0, deferred = 0;

    /* phase 0: the groups with themselves; phase 1: the groups with each other */
    for (int phase = whole_group ? 0 : 1; phase < 2; ++phase) {
        const int within = phase == 0;
        if (phase == 1 && whole_group) {  /* A <- W^* A W: Y = A W, then A = W^* Y */
            for (int e = lid; e < K * K; e += ROTATE_WG) {
                const int row = e / K, col = e % K;
                cjac_elem acc = CJAC_ELEM_ZERO;
                for (int c = 0; c < K; ++c)
                    acc = cjac_axpy(A[row * LDA + c], W[c * LDW + col], acc);
                Y[row * LDA + col] = acc;
            }
            barrier(CJAC_FENCE);
            for (int e = lid; e < K * K; e += ROTATE_WG) {
                const int row = e / K, col = e % K;
                cjac_elem acc = CJAC_ELEM_ZERO;
                for (int c = 0; c < K; ++c)
                    acc = cjac_axpy(cjac_conj(W[c * LDW + row]), Y[c * LDA + col], acc);
                A[row * LDA + col] = row == col ? cjac_from_real(cjac_real_part(acc)) : acc;
            }
            barrier(CJAC_FENCE);
        }
        /* Phase 1 (lines 14-23): the t of every pair of this phase from A. */
        for (int e = lid; e < K * K; e += ROTATE_WG) {
            const int a = e / K, b = e % K;
            cjac_real t = 0;
            if (within ? a < b && (a < BW) == (b < BW) : a < BW && b >= BW) {
                const cjac_block_decision d = cjac_block_decide(
                    cjac_real_part(A[a * LDA + a]), cjac_real_part(A[b * LDA + b]),
                    cjac_tangent_arg(A[a * LDA + b]), sgn[a] != sgn[b], peak0[a], peak0[b],
                    tol);
                t = d.t;
                count += t != 0;
                big |= d.big;
                deferred |= d.deferred;
            }
            T[e] = t;
        }
        barrier(CJAC_FENCE);
        /* Phase 2 (lines 24-30): W <- W R_(a,b), one anti-diagonal at a time.
         * Across: a + (b - w) = v, at most w rotations.  Within: in each group
         * a' + b' = v + 1 for the indices a' < b' in the group, at most w/2
         * rotations a group (the two groups' columns are disjoint). */
        const int waves = within ? 2 * BW - 3 : 2 * BW - 1;
        const int per_group = (BW + 1) / 2;  /* work rows of each group's wave */
        for (int v = 0; v < waves; ++v) {
            for (int x = lid; x < BW * K; x += ROTATE_WG) {
                const int r = x / K, row = x % K;
                int a, b;
                if (within) {
                    const int group = r / per_group, i = r % per_group;
                    const int first = max(0, v + 2 - BW), last = v / 2;
                    a = first + i;
                    b = v + 1 - a;
                    if (group > 1 || a > last)
                        continue;
                    a += group * BW;
                    b += group * BW;
                } else {
                    const int first = max(0, v - (BW - 1)), last = min(BW - 1, v);
                    a = first + r;
                    b = BW + v - a;
                    if (a > last)
                        continue;
                }
                const cjac_real t = T[a * K + b];
                if (t == 0)
                    continue;
                const bool hyperbolic = sgn[a] != sgn[b];
                const cjac_elem a_ab = A[a * LDA + b];
                /* s_j = t e^{i alpha}; s_i = conj(s_j) or -conj(s_j), as cjac_step */
                const cjac_elem s = cjac_with_phase(t, a_ab, cjac_tangent_arg(a_ab));
                const cjac_elem si = hyperbolic ? cjac_conj(s) : -cjac_conj(s);
                const cjac_real cm1 = cjac_rotation_cosine_m1(t, hyperbolic);
%if transform_in_local:
                __local cjac_elem *w_row = W + row * LDW;
%else:
                __global cjac_elem *w_row = W + row * LDW;
%endif
                const cjac_elem wa = w_row[a], wb = w_row[b];
                w_row[a] = cjac_scale_1p(cm1, cjac_axpy(si, wb, wa));
                w_row[b] = cjac_scale_1p(cm1, cjac_axpy(s, wa, wb));
            }
            barrier(CJAC_FENCE);
        }
    }
    item_count[lid] = count;
    item_big[lid] = big;
    item_deferred[lid] = deferred;
    for (int a = lid; a < K; a += ROTATE_WG)
        peak[cjac_block_column(blocks, a)] = peak0[a];
%if transform_in_local:
    __global cjac_elem *out = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * K; e += ROTATE_WG)
        out[e] = W[(e / K) * LDW + e % K];
%endif
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        int total = 0, any_big = 0, any_deferred = 0;
        for (int i = 0; i < ROTATE_WG; ++i) {  /* fixed order */
            total += item_count[i];
            any_big |= item_big[i];
            any_deferred |= item_deferred[i];
        }
        rotated[k] = total > 0;
        status[k] |= (any_big ? CJAC_ROTATED | CJAC_BIG : (total ? CJAC_ROTATED : 0))
                     | (any_deferred ? CJAC_BROKEN : 0);
        rotations[k] += total;
    }
}
#undef CJAC_FENCE
%endif

/* The finishing certificate (cljacobi.host.certificate): which pairs of block
 * pair k may fail the pointwise sweep's relative orthogonality test, eq.
 * (2.3) of the 2011 paper, read off the Gram matrix A = X^* X of X =
 * [G_P G_Q] that cjac_block_gram has just computed from the columns.  A
 * fresh Gram entry is the dot product cjac_step computes, summed in another
 * order, so a pair with
 *     |a_ij| <= tol sqrt(a_ii) sqrt(a_jj),   tol = sqrt(m) eps,
 * is orthogonal to within the rounding of its dot product, as the pointwise
 * sweep would find it up to the other order's rounding (docs/design.md,
 * "The certified finishing sweep").  Every other pair is a candidate, which
 * cjac_step decides on the columns (a nearly dependent pair, which the Gram
 * entries cannot resolve, fails the test by far).  A column with a squared
 * norm below the normal range is a candidate with any pair it is not exactly
 * orthogonal to, as cjac_step flags it.  Candidates are the pairs across the two blocks, and in step 0 of the
 * outer table (where every block appears once) also those within them:
 * entry a * K + b (a < b) of the K x K bit mask of (step, k), set by local
 * atomics (an OR: the mask does not depend on their order); found[step *
 * slots + k] counts them. */
#define CERTIFY_WORDS ((K * K + 31) / 32)
__kernel __attribute__((reqd_work_group_size(ROTATE_WG, 1, 1)))
void cjac_block_certify(${signatures["cjac_block_certify"].parameters})
{
    __local cjac_real norm2[K];         /* a_ii: the squared column norms */
    __local uint mask[CERTIFY_WORDS];
    __local int count;

    const int k = get_group_id(0);
    const int lid = get_local_id(0);
    const size_t slot = (size_t)step * get_num_groups(0) + k;
    for (int a = lid; a < K; a += ROTATE_WG)
        norm2[a] = cjac_real_part(cjac_gram_entry(partial, k, chunks, a * K + a));
    for (int e = lid; e < CERTIFY_WORDS; e += ROTATE_WG)
        mask[e] = 0;
    if (lid == 0)
        count = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const cjac_real tol = cjac_orthogonality_tolerance(m);
    for (int e = lid; e < K * K; e += ROTATE_WG) {
        const int a = e / K, b = e % K;
        const bool across = a < BW && b >= BW;
        const bool within = step == 0 && a < b && (a < BW) == (b < BW);
        if (!(across || within))
            continue;  /* no barrier in this loop */
        const cjac_elem a_ab = cjac_gram_entry(partial, k, chunks, e);
        const cjac_real a_aa = norm2[a], a_bb = norm2[b];
        const cjac_real a_arg = fabs(cjac_tangent_arg(a_ab));
        const bool normal = a_aa >= CJAC_TINY && a_bb >= CJAC_TINY;
        const bool candidate = normal
            ? a_arg > tol * sqrt(a_aa) * sqrt(a_bb)
            : a_arg != 0;
        if (candidate) {
            atomic_or(&mask[e / 32], 1u << (e % 32));
            atomic_inc(&count);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global uint *out = masks + slot * CERTIFY_WORDS;
    for (int e = lid; e < CERTIFY_WORDS; e += ROTATE_WG)
        out[e] = mask[e];
    if (lid == 0)
        found[slot] = count;
}
#undef CERTIFY_WORDS

%if not mma:
/* [X_P X_Q] <- [X_P X_Q] W_k for the rows of chunk c (X = G or V):
 * work-group (k, c) of an (slots x chunks) grid, a small GEMM per tile
 * (complex for complex data: cjac_axpy is x w + acc in four FMAs).
 *
 * W_k goes to local memory once: W[a * UPDATE_KP + b], row-major, the
 * columns padded with zeros to UPDATE_KP = UPDATE_NC * RC (RC =
 * update_micro_cols).  Tiles of UPDATE_TR rows of the K columns of X follow
 * column by column: tile[a * UPDATE_TR + rr] is row rr of local column a,
 * loaded with coalesced reads (consecutive work-items, consecutive rows of
 * one column) into consecutive addresses.
 *
 * Register micro-tiles: the UPDATE_TR x K output tile is cut cyclically, as
 * in cjac_block_gram, into UPDATE_NR x UPDATE_NC micro-tiles of RR x RC
 * entries (RR = update_micro_rows, UPDATE_NR = UPDATE_TR / RR): work-item
 * lid = i + UPDATE_NR * j computes the rows i + p UPDATE_NR (0 <= p < RR)
 * and the columns j + q UPDATE_NC (0 <= q < RC), reading RR + RC values from
 * local memory per a for RR * RC FMAs.  Every output is the fma chain over
 * a = 0, 1, ..., K-1 from 0, whatever the tile and micro-tile shape (bitwise
 * reproducible, the same numbers as one work-item per row).
 *
 * Banks: at one instant the lanes of a warp read, for one a, the values
 * tile[a * UPDATE_TR + i + p UPDATE_NR] over consecutive i (i is the fastest
 * index of lid; lanes with another j but the same i read the same address, a
 * broadcast) and W[a * UPDATE_KP + j + q UPDATE_NC] over a few consecutive j
 * (broadcast within one j).  Both are runs of consecutive addresses, distinct
 * banks whatever the strides, so neither layout needs padding (W's padding
 * only rounds K up to the micro-tile); the stores of the loads are
 * consecutive too.  With i fastest the lanes of a warp also write
 * consecutive rows of one output column to global memory.
 *
 * In place: all of a tile is in local memory (barrier) before any of its
 * rows is written, and the next tile's load waits (barrier) until every
 * work-item has finished reading this one.  Both barriers are reached by
 * all work-items: partial tiles guard the loads (zeros) and the stores. */
__kernel __attribute__((reqd_work_group_size(UPDATE_WG, 1, 1)))
void cjac_block_update(${signatures["cjac_block_update"].parameters})
{
    __local cjac_elem W[K * UPDATE_KP];
    __local cjac_elem tile[K * UPDATE_TR];
    const int k = get_group_id(0), c = get_group_id(1);
    const int slots = get_num_groups(0);
    if (!rotated[k])
        return;  /* uniform over the work-group, before any barrier */
    const int lid = get_local_id(0);
    const int i = lid % UPDATE_NR, j = lid / UPDATE_NR;
    const int2 blocks = outer_pairs[step * slots + k];
    __global const cjac_elem *w_global = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * UPDATE_KP; e += UPDATE_WG) {
        const int a = e / UPDATE_KP, b = e % UPDATE_KP;
        W[e] = b < K ? w_global[a * K + b] : CJAC_ELEM_ZERO;
    }
    /* W is complete after the first tile's barrier. */
%for q in range(UC):
    const int b_${q} = j + ${q} * UPDATE_NC;
    __global ${store_ctype} *col_${q} =
        CJAC_COLUMN(X, b_${q} < K ? cjac_block_column(blocks, b_${q}) : 0, ldx);
%endfor
    const int first = c * chunk_rows;
    const int last = min(m, first + chunk_rows);
    for (int row0 = first; row0 < last; row0 += UPDATE_TR) {  /* uniform */
        const int rows = min(UPDATE_TR, last - row0);
        for (int x = lid; x < K * UPDATE_TR; x += UPDATE_WG) {
            const int a = x / UPDATE_TR, rr = x % UPDATE_TR;
            tile[x] = rr < rows
                ? CJAC_LOAD(CJAC_COLUMN(X, cjac_block_column(blocks, a), ldx), row0 + rr, ldx)
                : CJAC_ELEM_ZERO;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
%for p in range(UR):
%for q in range(UC):
        cjac_elem acc_${p}_${q} = CJAC_ELEM_ZERO;
%endfor
%endfor
        for (int a = 0; a < K; ++a) {
            __local const cjac_elem *x_col = tile + a * UPDATE_TR + i;
            __local const cjac_elem *w_row = W + a * UPDATE_KP + j;
%for p in range(UR):
            const cjac_elem x_${p} = x_col[${p} * UPDATE_NR];
%endfor
%for q in range(UC):
            const cjac_elem w_${q} = w_row[${q} * UPDATE_NC];
%endfor
%for p in range(UR):
%for q in range(UC):
            acc_${p}_${q} = cjac_axpy(x_${p}, w_${q}, acc_${p}_${q});
%endfor
%endfor
        }
%for p in range(UR):
        if (i + ${p} * UPDATE_NR < rows) {
            const int row = row0 + i + ${p} * UPDATE_NR;
%for q in range(UC):
            if (b_${q} < K)
                CJAC_STORE(col_${q}, row, ldx, acc_${p}_${q});
%endfor
        }
%endfor
        barrier(CLK_LOCAL_MEM_FENCE);  /* before the next tile overwrites this one */
    }
}
%else:
/* [X_P X_Q] <- [X_P X_Q] W_k for the rows of chunk c (X = G or V), by warps
 * of 16 x 8 x 4 products (CJAC_MMA): work-group (k, c) of an (slots x chunks)
 * grid, UPDATE_WARPS warps.
 *
 * The products are real: Z is X for real data, and [Re X Im X] (RK = 2K
 * real columns) for complex data, where X W is Z M with the real RK x RK
 * matrix M = [[Re W, Im W], [-Im W, Re W]] (Re(X W) = Re X Re W - Im X Im W,
 * Im(X W) = Re X Im W + Im X Re W), its columns interleaved: column 2 b of
 * the product is Re (X W)_b, column 2 b + 1 Im (X W)_b, the order of an
 * interleaved column, so that a lane's c0, c1 (columns 2 t, 2 t + 1 of a
 * tile) are one element of X, stored whole (a warp writes whole 32-byte
 * sectors; the parts stored apart wrote half sectors, 0.052 -> 0.044 s a
 * sweep at complex n = 4096 on an H200, bench/README.md).  Permuting the
 * columns of M changes no entry's sum.  M (or W) goes to local memory once,
 * row-major with the row stride UPDATE_LDW (4 modulo 16: the B fragment
 * M[4 kk + t][8 j + g] of a half-warp, 4 rows of 4 consecutive doubles,
 * falls into distinct banks).  UPDATE_COLUMN_PARTS warps (row_warp's) compute
 * UPDATE_MR blocks of 16 rows of the product at a time, warp `part` of them
 * the UPDATE_PART_TILES column tiles j = part UPDATE_PART_TILES + jj (all RK
 * columns where there is one part; with two, the columns of block P and of
 * block Q of X): the 16 x 8 tiles (mr, jj) in registers, over
 * kk = 0..RK/4-1 the products of the A fragment Z[16 mr + g (+ 8)][4 kk + t]
 * (read from global memory, 8 consecutive rows of a column per 8 lanes)
 * with the B fragments of M.  Every entry is its sum over kk in order
 * (bitwise reproducible, whatever the parts).  Rows past the chunk read as
 * zeros and are not stored, so every work-item runs the same loops.
 *
 * Three products (three_products: complex data, staged): Gauss's
 * T1 = Re X Re W, T2 = Im X Im W and T3 = (Re X + Im X)(Re W + Im W) instead
 * of Z M, Re(X W) = T1 - T2 and Im(X W) = (T3 - T1) - T2 (Higham, "Accuracy
 * and Stability of Numerical Algorithms", 2nd ed., Sect. 23.2.4): three
 * quarters of the products, each K x K.  Re W, Im W and Re W + Im W lie in
 * M one after the other; a stage slice holds the real parts of
 * UPDATE_STAGE_COLUMNS / 2 columns of X, then their imaginary parts
 * (stage_z), so that a lane forms Re X + Im X from its two A fragment
 * values; warp `part` computes the UPDATE_PART_TILES tiles of 8 columns of
 * X of its block (all K columns with one part) in each of T1, T2 and T3,
 * and stores column 8 j + 2 t (+ 1) of X whole from c0 (c1) of the three.
 * Each sum runs over X's columns in order, whatever the stages and parts.
 *
 * In place: the warps of a block of rows read and write only their own
 * rows; a warp's stores wait for the products that take all of its loads,
 * and, with several parts, for the other warps of its rows
 * (CJAC_ROW_WARPS_SYNC). */
__kernel __attribute__((reqd_work_group_size(UPDATE_WG, 1, 1)))
void cjac_block_update(${signatures["cjac_block_update"].parameters})
{
    __local cjac_real M[UPDATE_M_ROWS * UPDATE_LDW];
%if update_stages:
    __local cjac_real stage_all[UPDATE_ROW_WARPS * UPDATE_STAGES * UPDATE_STAGE_REALS];
%endif
%if matrix_products == "mma.emulated":
    __local cjac_real mma_scratch_all[UPDATE_WARPS * 96];
%endif
    const int k = get_group_id(0), c = get_group_id(1);
    const int slots = get_num_groups(0);
    if (!rotated[k])
        return;  /* uniform over the work-group, before any barrier */
    const int lid = get_local_id(0), warp = lid / 32, lane = lid % 32;
    const int g = lane / 4, t = lane % 4;
    const int row_warp = warp / UPDATE_COLUMN_PARTS, part = warp % UPDATE_COLUMN_PARTS;
%if matrix_products == "mma.emulated":
    __local cjac_real *mma_scratch = mma_scratch_all + warp * 96;
%endif
    const int2 blocks = outer_pairs[step * slots + k];
    const int first = c * chunk_rows;
    const int last = min(m, first + chunk_rows);
%if update_stages:
<%
    stage_rows = 16 * update_mr
    columns_per_copy = 32 // stage_rows  # a value a lane, stage_rows lanes a column
    slices = RK // update_stage_columns
    copies = update_stage_columns // columns_per_copy
%>\
    /* Staged: slice s (UPDATE_STAGE_COLUMNS columns of Z, s UPDATE_STAGE_COLUMNS
     * on) of the rows of block b of row_warp goes to stage
     * (b ${slices} + s) % UPDATE_STAGES of the block row,
     * column a of the slice at a * UPDATE_STAGE_LD (4 or 12 mod 16: the
     * reads of a half-warp, Z[16 mr + g][4 kk + t], hit distinct banks),
     * by 8-byte copies (any leading dimension): lane l copies row
     * l % ${stage_rows} of the columns l / ${stage_rows} + ${columns_per_copy} i, the warps of
     * the block row alternating i.  The copies of the next UPDATE_STAGES - 1
     * slices are in flight while the products of this one run. */
    __local cjac_real *stages = stage_all + row_warp * (UPDATE_STAGES * UPDATE_STAGE_REALS);
    const int copy_row = lane % ${stage_rows}, copy_column = lane / ${stage_rows};
    __global ${store_ctype} *copy_P = CJAC_COLUMN(X, blocks.x * BW + copy_column, ldx);
    __global ${store_ctype} *copy_Q = CJAC_COLUMN(X, blocks.y * BW + copy_column, ldx);
    const int stage_blocks = (last - first + UPDATE_STAGE_ROWS * UPDATE_ROW_WARPS - 1)
                           / (UPDATE_STAGE_ROWS * UPDATE_ROW_WARPS);  /* uniform */
<%def name="update_stage_copies(block, s)">\
    {   /* slice ${s} of block ${block} into its stage (nothing past the chunk: zeros) */
        const int row = first + ((${block}) * UPDATE_ROW_WARPS + row_warp) * UPDATE_STAGE_ROWS
                      + copy_row;
        const int bytes = row < last ? 8 : 0;
        const int from = bytes ? row : first;
        __local cjac_real *to = stages + ((${block}) * ${slices} + ${s}) % UPDATE_STAGES * UPDATE_STAGE_REALS
                              + copy_column * UPDATE_STAGE_LD + copy_row;
%for p in range(update_column_parts):
%if update_column_parts > 1:
        if (part == ${p}) {
%endif
%for i in range(p, copies, update_column_parts):
<% z = stage_z(s, columns_per_copy * i) %>\
            CJAC_COPY8(to + ${columns_per_copy * i} * UPDATE_STAGE_LD,
                       &${mma_part(mma_column("copy_P", "copy_Q", z, "ldx"), "from", "ldx", z)}, bytes);
%endfor
%if update_column_parts > 1:
        }
%endif
%endfor
        CJAC_COPY_COMMIT();
    }
</%def>\
%for q in range(update_stages - 1):
${update_stage_copies(str(q // slices), q % slices)}
%endfor
%endif
    __global const cjac_elem *w_global = transforms + (size_t)k * (K * K);
    for (int e = lid; e < K * K; e += UPDATE_WG) {
        const int a = e / K, b = e % K;
%if three:
        /* Re W, Im W and Re W + Im W, one K x K matrix after the other */
        const cjac_elem w_ab = w_global[e];
        M[a * UPDATE_LDW + b] = w_ab.x;
        M[(K + a) * UPDATE_LDW + b] = w_ab.y;
        M[(2 * K + a) * UPDATE_LDW + b] = w_ab.x + w_ab.y;
%elif complex_:
        const cjac_elem w_ab = w_global[e];
        M[a * UPDATE_LDW + 2 * b] = w_ab.x;
        M[a * UPDATE_LDW + 2 * b + 1] = w_ab.y;
        M[(K + a) * UPDATE_LDW + 2 * b] = -w_ab.y;
        M[(K + a) * UPDATE_LDW + 2 * b + 1] = w_ab.x;
%else:
        M[a * UPDATE_LDW + b] = w_global[e];
%endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global ${store_ctype} *column_P = CJAC_COLUMN(X, blocks.x * BW, ldx);
    __global ${store_ctype} *column_Q = CJAC_COLUMN(X, blocks.y * BW, ldx);
%if update_column_parts > 1:
    __global ${store_ctype} *column_part = part == 0 ? column_P : column_Q;  /* the block this warp stores */
%endif
    /* the B fragments of the warp's column tiles: M[4 kk + t][8 j + g] */
    __local const cjac_real *m_part = M + 8 * UPDATE_PART_TILES * part + g;
<%def name="update_products(kk, a_value)">\
        {   /* the products of column group kk = ${kk} */
%for mr in range(update_mr):
            const cjac_real a0_${mr} = ${a_value(kk, mr, 0)};
            const cjac_real a1_${mr} = ${a_value(kk, mr, 8)};
%endfor
            __local const cjac_real *m_row = m_part + (${4 * kk} + t) * UPDATE_LDW;
%for j in range(part_tiles):
            {
                const cjac_real b0 = m_row[${8 * j}];
%for mr in range(update_mr):
                CJAC_MMA(acc_${mr}_${j}_0, acc_${mr}_${j}_1, acc_${mr}_${j}_2, acc_${mr}_${j}_3,
                         a0_${mr}, a1_${mr}, b0);
%endfor
            }
%endfor
        }
</%def>\
<%def name="update_products3(q, kk)">\
        {   /* three products of X's columns 4 kk.. (${q} of the slice): T1 += Re X Re W,
             * T2 += Im X Im W, T3 += (Re X + Im X)(Re W + Im W) */
%for mr in range(update_mr):
%for below in (0, 8):
            const cjac_real re${below // 8}_${mr} = stage[${4 * q} * UPDATE_STAGE_LD + ${16 * mr + below}];
            const cjac_real im${below // 8}_${mr} = stage[${update_stage_columns // 2 + 4 * q} * UPDATE_STAGE_LD + ${16 * mr + below}];
            const cjac_real sum${below // 8}_${mr} = re${below // 8}_${mr} + im${below // 8}_${mr};
%endfor
%endfor
            __local const cjac_real *m_row = m_part + (${4 * kk} + t) * UPDATE_LDW;
%for j in range(part_tiles):
            {
                const cjac_real b_re = m_row[${8 * j}], b_im = m_row[K * UPDATE_LDW + ${8 * j}];
                const cjac_real b_sum = m_row[2 * K * UPDATE_LDW + ${8 * j}];
%for mr in range(update_mr):
%for product, a, b in (("re", "re", "b_re"), ("im", "im", "b_im"), ("sum", "sum", "b_sum")):
                CJAC_MMA(${product}_${mr}_${j}_0, ${product}_${mr}_${j}_1, ${product}_${mr}_${j}_2, ${product}_${mr}_${j}_3,
                         ${a}0_${mr}, ${a}1_${mr}, ${b});
%endfor
%endfor
            }
%endfor
        }
</%def>\
<%def name="update_accumulators()">\
%for mr in range(update_mr):
%for j in range(part_tiles):
%for name in (("re", "im", "sum") if three else ("acc",)):
        cjac_real ${name}_${mr}_${j}_0 = 0, ${name}_${mr}_${j}_1 = 0, ${name}_${mr}_${j}_2 = 0, ${name}_${mr}_${j}_3 = 0;
%endfor
%endfor
%endfor
</%def>\
<%def name="update_stores()">\
        /* c0, c1 of tile (mr, jj): row 16 mr + g, columns 8 j + 2 t (+ 1) of Z;
         * c2, c3 8 rows below */
%for mr in range(update_mr):
%for half in range(2):
        if (row + ${16 * mr + 8 * half} < last) {
%for j in range(part_tiles):
%if three:
%for e in range(2):
<% c = f"{2 * half + e}" %>\
            /* column 8 j + 2 t + ${e} of the product, whole: Re = T1 - T2,
             * Im = T3 - T1 - T2 */
            CJAC_STORE(${update_column(8 * j + e, "2 * t")}, row + ${16 * mr + 8 * half}, ldx,
                       ((cjac_elem)(re_${mr}_${j}_${c} - im_${mr}_${j}_${c},
                                    (sum_${mr}_${j}_${c} - re_${mr}_${j}_${c}) - im_${mr}_${j}_${c})));
%endfor
%elif complex_:
            /* columns 8 j + 2 t, +1 of the product: column 4 j + t of X, whole */
            CJAC_STORE(${update_column(4 * j, "t")}, row + ${16 * mr + 8 * half}, ldx,
                       ((cjac_elem)(acc_${mr}_${j}_${2 * half}, acc_${mr}_${j}_${2 * half + 1})));
%else:
%for e in range(2):
            ${mma_part(update_column(8 * j + e, "2 * t"), f"row + {16 * mr + 8 * half}", "ldx", 8 * j)} = acc_${mr}_${j}_${2 * half + e};
%endfor
%endif
%endfor
        }
%endfor
%endfor
</%def>\
%if update_stages:
    for (int b = 0; b < stage_blocks; ++b) {  /* uniform */
        const int row = first + (b * UPDATE_ROW_WARPS + row_warp) * UPDATE_STAGE_ROWS + g;
${update_accumulators()}
%for s in range(slices):
<% ahead = s + update_stages - 1 %>\
        CJAC_COPY_WAIT(${update_stages - 2});  /* slice ${s}: this lane's copies */
        CJAC_STAGE_SYNC(row_warp);  /* and those of the block row's warps, visible */
${update_stage_copies(f"b + {ahead // slices}", ahead % slices)}
        {
            __local const cjac_real *stage = stages + (b * ${slices} + ${s}) % UPDATE_STAGES * UPDATE_STAGE_REALS
                                           + t * UPDATE_STAGE_LD + g;
<%
    def staged_value(kk, mr, below, s=s):
        return f"stage[{4 * (kk - s * update_stage_columns // 4)} * UPDATE_STAGE_LD + {16 * mr + below}]"
%>\
%if three:
%for q in range(update_stage_columns // 8):
${update_products3(q, s * update_stage_columns // 8 + q)}
%endfor
%else:
%for kk in range(s * update_stage_columns // 4, (s + 1) * update_stage_columns // 4):
${update_products(kk, staged_value)}
%endfor
%endif
        }
%endfor
        /* every copy of these rows is done (the barrier of the last slice) */
${update_stores()}
    }
    CJAC_COPY_WAIT(0);  /* the slices past the chunk */
%else:
%if update_loads_ahead:
    /* The next block's A fragments load while this block's products and
     * stores run (other rows: no store of this block can change them). */
    int row = first + 16 * UPDATE_MR * row_warp + g;
%for kk in range(RK // 4):
%for mr in range(update_mr):
    cjac_real next0_${mr}_${kk} = ${update_value(kk, f"row + {16 * mr}")};
    cjac_real next1_${mr}_${kk} = ${update_value(kk, f"row + {16 * mr + 8}")};
%endfor
%endfor
%endif
    for (int base = first; base < last; base += 16 * UPDATE_MR * UPDATE_ROW_WARPS) {  /* uniform */
%if update_loads_ahead:
%for kk in range(RK // 4):
%for mr in range(update_mr):
        const cjac_real a0_${mr}_${kk} = next0_${mr}_${kk}, a1_${mr}_${kk} = next1_${mr}_${kk};
%endfor
%endfor
        {
            const int next = row + 16 * UPDATE_MR * UPDATE_ROW_WARPS;
%for kk in range(RK // 4):
%for mr in range(update_mr):
            next0_${mr}_${kk} = ${update_value(kk, f"next + {16 * mr}")};
            next1_${mr}_${kk} = ${update_value(kk, f"next + {16 * mr + 8}")};
%endfor
%endfor
        }
<%
    def ahead_value(kk, mr, below):
        return f"a{below // 8}_{mr}_{kk}"
    a_value = ahead_value
%>\
%else:
        const int row = base + 16 * UPDATE_MR * row_warp + g;
<%
    def global_value(kk, mr, below):
        column = mma_column("column_P", "column_Q", 4 * kk, "ldx", "t")
        return update_value(kk, f"row + {16 * mr + below}", column)
    a_value = global_value
%>\
%endif
${update_accumulators()}
%for kk in range(RK // 4):
${update_products(kk, a_value)}
%endfor
%if update_column_parts > 1:
        CJAC_ROW_WARPS_SYNC(row_warp);
%endif
${update_stores()}
%if update_loads_ahead:
        row += 16 * UPDATE_MR * UPDATE_ROW_WARPS;
%endif
    }
%endif
}
%endif
