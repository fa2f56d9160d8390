## The inner step of the blocked Jacobi kernels: the rotations of the w
## disjoint pairs of one step of the inner strategy applied to a K x K
## Hermitian matrix A in local memory (A <- R^* A R) and to its accumulated
## transformation W (W <- W R), shared by cjac_block_rotate (blocked.cl.mako:
## A is the Gram matrix of a block pair, the one-sided method) and
## cjac_two_sided_solve (two_sided.cl.mako: A is the diagonal block of the
## matrix itself, the two-sided method).
##
## Imported with <%namespace name="inner" file="inner.cl.mako"/>; pair_table
## renders the inner strategy's table at program scope and local_pair_table
## copies it into local memory at the start of a kernel.  For rotate_pairs the
## caller has
## rendered arith's prelude and element, and has in scope:
##   A, LDA        the matrix (row-major, row stride LDA) in local memory
##   W, LDW        the transformation (row-major, row stride LDW)
##   BW            w, the pairs of a step; lid, the work-item
##   rot_flag[q], rot_pair[q]  whether pair q rotates, and its (i, j)
##   rot_cm1[q], rot_s[q], rot_si[q]   c - 1, s_j and s_i of its rotation
##                 R = c [[1, s_j], [s_i, 1]] (rows i, j; columns i, j)
## and has decided every pair's rotation from the same A (a barrier before).
## Parameters of the def:
##   complex_        complex Hermitian data (the pivot diagonal made real)
##   transform_space  the address space of W, "__local" or "__global"
##   work_group      the work-items that share the update, e.g. "ROTATE_WG"
##
## The pairs of a step cover the indices 0..K-1, so A and W split into w x w
## blocks of 2 x 2 entries, block (q1, q2) holding rows (i1, j1) of pair q1
## and columns (i2, j2) of pair q2.  A work-item per block applies R_q2 to its
## columns (A R, W R) and then R_q1 to its rows (R^* (A R)) in registers: the
## same operations on the same values as updating all columns, then all rows,
## with no barrier between.  The pivot entries (q1 == q2, (i, j)) are set to
## their exact values: 0 off the diagonal, real on it.
<%def name="rotate_pairs(complex_, transform_space, work_group, transform_when='1')">\
/* Block (q1, q2): A <- R^* A R, W <- W R (eqs. (2.4)/(2.5); W only where
 * `transform_when`, which is uniform over the work-group). */
            for (int x = lid; x < BW * BW; x += ${work_group}) {
                const int q1 = x / BW, q2 = x % BW;
                const int rows = rot_flag[q1], cols = rot_flag[q2];
                const int2 p1 = rot_pair[q1], p2 = rot_pair[q2];
                if (rows | cols) {
                    __local cjac_elem *a_i = A + p1.x * LDA, *a_j = A + p1.y * LDA;
                    cjac_elem a_ii = a_i[p2.x], a_ij = a_i[p2.y];
                    cjac_elem a_ji = a_j[p2.x], a_jj = a_j[p2.y];
                    if (cols) {  /* columns i2, j2 of rows i1, j1: A R */
                        const cjac_real cm1 = rot_cm1[q2];
                        const cjac_elem s = rot_s[q2], si = rot_si[q2];
                        const cjac_elem b_ii = cjac_scale_1p(cm1, cjac_axpy(si, a_ij, a_ii));
                        const cjac_elem b_ij = cjac_scale_1p(cm1, cjac_axpy(s, a_ii, a_ij));
                        const cjac_elem b_ji = cjac_scale_1p(cm1, cjac_axpy(si, a_jj, a_ji));
                        const cjac_elem b_jj = cjac_scale_1p(cm1, cjac_axpy(s, a_ji, a_jj));
                        a_ii = b_ii; a_ij = b_ij; a_ji = b_ji; a_jj = b_jj;
                    }
                    if (rows) {  /* rows i1, j1 of A R: R^* (A R) */
                        const cjac_real cm1 = rot_cm1[q1];
                        const cjac_elem s = cjac_conj(rot_s[q1]), si = cjac_conj(rot_si[q1]);
                        const cjac_elem b_ii = cjac_scale_1p(cm1, cjac_axpy(si, a_ji, a_ii));
                        const cjac_elem b_ji = cjac_scale_1p(cm1, cjac_axpy(s, a_ii, a_ji));
                        const cjac_elem b_ij = cjac_scale_1p(cm1, cjac_axpy(si, a_jj, a_ij));
                        const cjac_elem b_jj = cjac_scale_1p(cm1, cjac_axpy(s, a_ij, a_jj));
                        a_ii = b_ii; a_ij = b_ij; a_ji = b_ji; a_jj = b_jj;
                    }
                    if (q1 == q2) {  /* the pivot entries: annihilated by construction */
                        a_ij = a_ji = CJAC_ELEM_ZERO;
%if complex_:
                        /* the new squared norms, eq. (2.6): real */
                        a_ii = cjac_from_real(cjac_real_part(a_ii));
                        a_jj = cjac_from_real(cjac_real_part(a_jj));
%endif
                    }
                    a_i[p2.x] = a_ii;
                    a_i[p2.y] = a_ij;
                    a_j[p2.x] = a_ji;
                    a_j[p2.y] = a_jj;
                }
                if (cols && (${transform_when})) {  /* rows i1, j1 of W R */
                    const cjac_real cm1 = rot_cm1[q2];
                    const cjac_elem s = rot_s[q2], si = rot_si[q2];
%for row in ("x", "y"):
                    {
                        ${transform_space} cjac_elem *w_row = W + p1.${row} * LDW;
                        const cjac_elem wi = w_row[p2.x], wj = w_row[p2.y];
                        w_row[p2.x] = cjac_scale_1p(cm1, cjac_axpy(si, wj, wi));
                        w_row[p2.y] = cjac_scale_1p(cm1, cjac_axpy(s, wi, wj));
                    }
%endfor
                }
            }</%def>

## The inner strategy (pairs of local indices 0..K-1), one row of BW pairs per
## step, as a program-scope table `name` of uchar2 (K <= 256).
<%def name="pair_table(name, steps_macro, inner_pairs)">\
<% assert all(max(pair) < 256 for step in inner_pairs for pair in step), "uchar2 pairs need K <= 256" %>\
/* The inner strategy (pairs of local indices 0..K-1), one row per step. */
__constant uchar2 ${name}[${steps_macro} * BW] = {
%for step in inner_pairs:
    ${", ".join(f"(uchar2)({i}, {j})" for i, j in step)},
%endfor
};</%def>

## The table in local memory, `local_name`, filled by the work-group (a
## barrier must follow before it is read).  The work-items of one step read
## BW different pairs: from __constant memory NVIDIA serves a warp's
## different addresses one at a time (bench/README.md, "The inner pair table
## in local memory": 20 of 168 us a rotate launch at w = 32 on an H200).
<%def name="local_pair_table(name, local_name, steps_macro, work_group)">\
    __local uchar2 ${local_name}[${steps_macro} * BW];
    for (int e = lid; e < ${steps_macro} * BW; e += ${work_group})
        ${local_name}[e] = ${name}[e];</%def>
