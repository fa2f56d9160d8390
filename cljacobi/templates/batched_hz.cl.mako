## Batched implicit Hari-Zimmermann sweeps: the GSVD of a stack of small
## pairs in one launch (cljacobi.host.batched_hz).
##
## Each work-group holds one pair (F, G, Z), n x n each after the shortening
## of [NS] Sect. 2 (cljacobi.gsvd), in its slot of three global stacks, and
## runs the pointwise method of hz.cl.mako on it: one work-item per pivot
## pair of a step (the strategy's table, a virtual column for an odd n),
## A_k and B_k summed over the rows by that work-item alone, the same
## decision (hz.cl.mako's pair_math: hz_decide, [NS] Sect. 2.1, 2.5) and
## the update of F, G and Z; sweeps until one has no big transformation,
## or one finds a pivot submatrix of B^H B that is not positive definite
## (flagged: the host raises for that pair), or max_sweeps.  The pairs never
## exchange data, so a pair's result does not depend on the stack it is in.
##
## Render parameters (cljacobi.host.batched_hz.BatchedHZSpec):
##   complex_, prescaled, criterion, enhanced_dots   as hz.cl.mako's
##   size_defines   LANES (work-items of a pair, a power of two), the counter
##                  indices HZ_* and the record bits CJAC_HZ_*
##   signatures     the kernel's parameter list (BatchedHZSpec.signatures)
<%namespace name="arith" file="arith.cl.mako"/>
<%namespace name="hz" file="hz.cl.mako"/>
${arith.prelude("double")}
${arith.element("double", complex_, "interleaved", with_workgroup_sum=False)}

${size_defines}

${hz.pair_math(complex_, prescaled, criterion, enhanced_dots)}

__kernel __attribute__((reqd_work_group_size(LANES, 1, 1)))
void cjac_batched_hz(${signatures["cjac_batched_hz"].parameters})
{
    const int b = get_group_id(0), lane = get_local_id(0);
    __local int counts[3], stop;
    /* Column c of the pair's F at F + b n^2 + c n (G and Z alike). */
    const size_t slot = (size_t)b * n * n;
    __global cjac_elem *f = F + slot, *g = G + slot, *z = Z + slot;
    int sweeps = 0, converged = n < 2, flags = 0;
    for (int sweep = 0; sweep < max_sweeps && !converged && !flags; ++sweep) {
        for (int c = lane; c < 3; c += LANES)  /* LANES may be 1 or 2 */
            counts[c] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* Both tables of a strategy go up once: the ring alternates its
         * forward and backward sweeps, MM its slot assignment. */
        __global const int2 *table = pairs + (size_t)(sweep % 2) * steps * per_step;
        for (int step = 0; step < steps; ++step) {
            if (lane < per_step) {
                const int2 ij = table[step * per_step + lane];
                const int i = ij.x, j = ij.y;
                if (j < n) {  /* j = n: the virtual column of an odd n */
                    __global cjac_elem *f_i = f + (size_t)i * n, *f_j = f + (size_t)j * n;
                    __global cjac_elem *g_i = g + (size_t)i * n, *g_j = g + (size_t)j * n;
                    /* The pivot submatrices A_k and B_k ([NS] Sect. 2.1). */
${hz.pivot_sums("0", "1", "n", "n", prescaled)}
%if prescaled:
                    const cjac_real b_ii = 1, b_jj = 1;  /* diag(B) = I assumed ([NS] Sect. 2) */
%else:
                    const cjac_real b_ii = hz_sum_value(t_ii), b_jj = hz_sum_value(t_jj);
%endif
                    const hz_decision d = hz_decide(hz_sum_value(s_ii), hz_dot_value(s_ij),
                                                    hz_sum_value(s_jj), b_ii,
                                                    hz_dot_value(t_ij), b_jj, order);
                    if (d.not_definite)
                        atomic_inc(&counts[HZ_NOT_DEFINITE]);
                    if (d.transformed)
                        atomic_inc(&counts[HZ_TRANSFORMED]);
                    if (d.big)
                        atomic_inc(&counts[HZ_BIG]);
                    if (d.apply) {
                        hz_update(f_i, f_j, 0, n, 1, d.z);  /* every row, this work-item */
                        hz_update(g_i, g_j, 0, n, 1, d.z);
                        hz_update(z + (size_t)i * n, z + (size_t)j * n, 0, n, 1, d.z);
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        }
        if (lane == 0) {
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
    if (lane == 0) {
        if (!converged && !flags)
            flags = CJAC_HZ_NOT_CONVERGED;
        info[3 * b] = sweeps;
        info[3 * b + 1] = flags;
    }
}
