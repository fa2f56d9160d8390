## Batched implicit Hari-Zimmermann sweeps: the GSVD of a stack of small
## pairs in one launch (cljacobi.host.batched_hz).
##
## Each work-group holds one pair (F, G, Z), n x n each after the shortening
## of [NS] Sect. 2 (cljacobi.gsvd), in its slot of three global stacks, and
## runs the pointwise method of hz.cl.mako on it: one work-item (or
## row_split of them) per pivot pair of a step (the strategy's table, a
## virtual column for an odd n), A_k and B_k summed over the rows, the same
## decision (hz.cl.mako's pair_math: hz_decide, [NS] Sect. 2.1, 2.5) and
## the update of F, G and Z; sweeps until one has no big transformation,
## or one finds a pivot submatrix of B^H B that is not positive definite
## (flagged: the host raises for that pair), or max_sweeps.  The pairs never
## exchange data, so a pair's result does not depend on the stack it is in.
##
## Render parameters (cljacobi.host.batched_hz.BatchedHZSpec):
##   complex_, prescaled, criterion, enhanced_dots   as hz.cl.mako's
##   row_split      work-items per pivot pair (a power of two; ROW_SPLIT):
##                  each sums and updates every ROW_SPLIT-th row, the partial
##                  sums added in a fixed tree through local memory
##   size_defines   LANES (pivot pairs of a step, a power of two), ROW_SPLIT,
##                  the counter indices HZ_* and the record bits CJAC_HZ_*
##   signatures     the kernel's parameter list (BatchedHZSpec.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
<%namespace name="hz" file="hz.cl.mako"/>
${arith.prelude("double")}
${arith.element("double", complex_, "interleaved", with_workgroup_sum=False)}

${size_defines}

${hz.pair_math(complex_, prescaled, criterion, enhanced_dots)}

<% separate_errors = enhanced_dots and not complex_ %>
%if row_split > 1:
${arith.pair_sum("cjac_pair_sum_real", "cjac_real")}

/* cjac_pair_sum_real, and a barrier before `scratch` takes the next sum (one
 * scratch serves them all: a work-group of up to 1024 work-items).  Every
 * work-item of the work-group calls it. */
inline cjac_real hz_pair_sum(__local cjac_real *scratch, const int lid, const int part,
                             const cjac_real x)
{
    const cjac_real total = cjac_pair_sum_real(scratch, lid, part, x);
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

inline hz_sum hz_pair_sum_hz(__local cjac_real *scratch, const int lid, const int part,
                             hz_sum s)
{
    s.c = hz_pair_sum(scratch, lid, part, s.c);
%if separate_errors:
    s.d = hz_pair_sum(scratch, lid, part, s.d);
%endif
    return s;
}

inline hz_dot hz_pair_sum_dot(__local cjac_real *scratch, const int lid, const int part,
                              hz_dot s)
{
%if complex_:
    s.c = (cjac_real2)(hz_pair_sum(scratch, lid, part, s.c.x),
                       hz_pair_sum(scratch, lid, part, s.c.y));
%else:
    s.c = hz_pair_sum(scratch, lid, part, s.c);
%endif
%if separate_errors:
    s.d = hz_pair_sum(scratch, lid, part, s.d);
%endif
    return s;
}
%endif

__kernel __attribute__((reqd_work_group_size(LANES * ROW_SPLIT, 1, 1)))
void cjac_batched_hz(${signatures["cjac_batched_hz"].parameters})
{
    const int b = get_group_id(0), lid = get_local_id(0);
    const int lane = lid / ROW_SPLIT, part = lid % ROW_SPLIT;  /* the pair, its rows */
    __local int counts[3], stop;
%if row_split > 1:
    __local cjac_real scratch[LANES * ROW_SPLIT];
%endif
    /* Column c of the pair's F at F + b n^2 + c n (G and Z alike). */
    const size_t slot = (size_t)b * n * n;
    __global cjac_elem *f = F + slot, *g = G + slot, *z = Z + slot;
    int sweeps = 0, converged = n < 2, flags = 0;
    for (int sweep = 0; sweep < max_sweeps && !converged && !flags; ++sweep) {
        for (int c = lid; c < 3; c += LANES * ROW_SPLIT)  /* the group may be 1 or 2 */
            counts[c] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* Both tables of a strategy go up once: the ring alternates its
         * forward and backward sweeps, MM its slot assignment. */
        __global const int2 *table = pairs + (size_t)(sweep % 2) * steps * per_step;
        for (int step = 0; step < steps; ++step) {
            /* Every work-item runs the step (with row_split > 1 the pair sums
             * hold barriers): one without a pair of this step takes columns
             * (0, 0) over no rows and writes nothing. */
            {
                const int2 ij = lane < per_step ? table[step * per_step + lane] : (int2)(0, n);
                const int live = ij.y < n;  /* j = n: the virtual column of an odd n */
                const int i = ij.x, j = live ? ij.y : ij.x, rows = live ? n : 0;
                __global cjac_elem *f_i = f + (size_t)i * n, *f_j = f + (size_t)j * n;
                __global cjac_elem *g_i = g + (size_t)i * n, *g_j = g + (size_t)j * n;
                /* The pivot submatrices A_k and B_k ([NS] Sect. 2.1). */
${hz.pivot_sums("part", "ROW_SPLIT", "rows", "rows", prescaled)}
%if row_split > 1:
                s_ii = hz_pair_sum_hz(scratch, lid, part, s_ii);
                s_jj = hz_pair_sum_hz(scratch, lid, part, s_jj);
                s_ij = hz_pair_sum_dot(scratch, lid, part, s_ij);
%if not prescaled:
                t_ii = hz_pair_sum_hz(scratch, lid, part, t_ii);
                t_jj = hz_pair_sum_hz(scratch, lid, part, t_jj);
%endif
                t_ij = hz_pair_sum_dot(scratch, lid, part, t_ij);
%endif
%if prescaled:
                const cjac_real b_ii = 1, b_jj = 1;  /* diag(B) = I assumed ([NS] Sect. 2) */
%else:
                const cjac_real b_ii = hz_sum_value(t_ii), b_jj = hz_sum_value(t_jj);
%endif
                const hz_decision d = hz_decide(hz_sum_value(s_ii), hz_dot_value(s_ij),
                                                hz_sum_value(s_jj), b_ii,
                                                hz_dot_value(t_ij), b_jj, order);
                if (live && part == 0) {
                    if (d.not_definite)
                        atomic_inc(&counts[HZ_NOT_DEFINITE]);
                    if (d.transformed)
                        atomic_inc(&counts[HZ_TRANSFORMED]);
                    if (d.big)
                        atomic_inc(&counts[HZ_BIG]);
                }
                if (live && d.apply) {  /* this work-item's rows */
                    hz_update(f_i, f_j, part, n, ROW_SPLIT, d.z);
                    hz_update(g_i, g_j, part, n, ROW_SPLIT, d.z);
                    hz_update(z + (size_t)i * n, z + (size_t)j * n, part, n, ROW_SPLIT, d.z);
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        }
        if (lid == 0) {
            transformations[(size_t)b * max_sweeps + sweep] = counts[HZ_TRANSFORMED];
            stop = counts[HZ_NOT_DEFINITE] ? CJAC_HZ_NOT_DEFINITE
                                           : (counts[HZ_BIG] == 0 ? -1 : 0);
            info[3 * b + 2] = counts[HZ_NOT_DEFINITE];  /* of the last sweep run */
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        sweeps = sweep + 1;
        converged = stop < 0;
        flags = stop > 0 ? stop : 0;
        barrier(CLK_LOCAL_MEM_FENCE);  /* stop is read before the next sweep writes it */
    }
    if (lid == 0) {
        if (!converged && !flags)
            flags = CJAC_HZ_NOT_CONVERGED;
        info[3 * b] = sweeps;
        info[3 * b + 1] = flags;
    }
}
