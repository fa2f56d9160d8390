"""Experiment: the Gram matrix of a 64-column block pair by FP64 tensor cores
(inline PTX ``mma.sync.aligned.m16n8k4.row.col.f64``) against plain FMAs, in
kernels of the same shape, on an NVIDIA device of compute capability 9.0.

What the blocked one-sided kernels' Gram step computes (``cjac_block_gram``,
``templates/blocked.cl.mako``): for X, ``rows x 64`` column-major, the
partial Gram matrices ``X_c^T X_c`` of row chunks c, one work-group each.
Both kernels here take tiles of TILE rows of X through local memory
(coalesced column loads, odd stride) and sum over the chunk; they differ
only in the products:

* ``fma``: 256 work-items, each a 4 x 4 register micro-tile of the 64 x 64
  result (cut cyclically), one fma per entry and row;
* ``dmma``: 8 warps, each 4 of the 32 16 x 8 blocks of the result, one
  ``mma.sync`` m16n8k4 per block and 4 rows (fragments as the PTX ISA gives
  them for .f64: A 16 x 4 row-major, a0 = A[g][t], a1 = A[g + 8][t]; B 4 x 8
  column-major, b0 = B[t][g]; C 16 x 8, c0, c1 = C[g][2t, 2t + 1], c2, c3 =
  C[g + 8][2t, 2t + 1]; g = lane / 4, t = lane % 4);
* ``dmma_global``: the same products with the fragments read straight from
  global memory (no tile, no barrier; a 32-byte sector per 4 lanes; the row
  loop unrolled 8 times so that loads of later rows are in flight).

Prints, for each, the maximal difference from numpy's X_c^T X_c in units of
``eps max|X_c^T X_c|`` and the TFLOP/s of the kernel alone (profiling
events, median of 5).  Not part of the library: it tells whether a
tensor-core specialization of the Gram kernel pays, before one is written.

    CLJACOBI_DEVICE=nvidia python bench/experiment_dmma_gram.py --rows 262144
"""

from __future__ import annotations

import argparse

import numpy as np
import pyopencl as cl

from cljacobi.host.device import default_queue

K = 64
TILE = 32
STRIDE = K + 1

SOURCE = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define K 64
#define TILE 32
#define STRIDE 65

/* Tile rows r0 .. r0 + TILE - 1 of the chunk into local memory, row-major. */
inline void load_tile(__global const double *X, const int ld, const int r0, const int last,
                      __local double *tile)
{
    for (int x = get_local_id(0); x < K * TILE; x += 256) {
        const int a = x / TILE, rr = x % TILE;
        tile[rr * STRIDE + a] = r0 + rr < last ? X[(size_t)a * ld + r0 + rr] : 0.0;
    }
}

/* C (16 x 8, this lane's 4 entries c) += A (16 x 4: a0, a1) B (4 x 8: b0). */
inline void mma_16x8x4(double *c, const double a0, const double a1, const double b0)
{
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
                 "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
                 : "d"(a0), "d"(a1), "d"(b0));
}

/* The warp's four 16 x 8 blocks (rows m0.., columns 8 (4 (warp % 2) + nb)..)
 * of work-group g's result, from this lane's fragments. */
inline void store_blocks(__global double *out, const int g, const int warp, const int m0,
                         const int gid, const int tig, double c[4][4])
{
    __global double *o = out + (size_t)g * K * K;
    for (int nb = 0; nb < 4; ++nb) {
        const int n0 = 8 * (4 * (warp % 2) + nb);
        o[(m0 + gid) * K + n0 + 2 * tig] = c[nb][0];
        o[(m0 + gid) * K + n0 + 2 * tig + 1] = c[nb][1];
        o[(m0 + gid + 8) * K + n0 + 2 * tig] = c[nb][2];
        o[(m0 + gid + 8) * K + n0 + 2 * tig + 1] = c[nb][3];
    }
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gram_fma(__global const double *X, const int ld, const int chunk, __global double *out)
{
    __local double tile[TILE * STRIDE];
    const int lid = get_local_id(0), g = get_group_id(0);
    const int I = lid % 16, J = lid / 16;  /* rows I + 16 p, columns J + 16 q */
    const int first = g * chunk, last = first + chunk;
    double acc[4][4] = {{0}};
    for (int r0 = first; r0 < last; r0 += TILE) {
        load_tile(X, ld, r0, last, tile);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int rr = 0; rr < TILE; ++rr) {
            double x[4], y[4];
            for (int p = 0; p < 4; ++p) {
                x[p] = tile[rr * STRIDE + I + 16 * p];
                y[p] = tile[rr * STRIDE + J + 16 * p];
            }
            for (int p = 0; p < 4; ++p)
                for (int q = 0; q < 4; ++q)
                    acc[p][q] = fma(x[p], y[q], acc[p][q]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int p = 0; p < 4; ++p)
        for (int q = 0; q < 4; ++q)
            out[(size_t)g * K * K + (I + 16 * p) * K + J + 16 * q] = acc[p][q];
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gram_dmma(__global const double *X, const int ld, const int chunk, __global double *out)
{
    __local double tile[TILE * STRIDE];
    const int lid = get_local_id(0), g = get_group_id(0);
    const int warp = lid / 32, lane = lid % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int first = g * chunk, last = first + chunk;
    /* warp w: block rows M = w / 2 (16 each), block columns N = 4 (w % 2) .. + 3 (8 each) */
    const int m0 = 16 * (warp / 2);
    double c[4][4] = {{0}};
    for (int r0 = first; r0 < last; r0 += TILE) {
        load_tile(X, ld, r0, last, tile);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k0 = 0; k0 < TILE; k0 += 4) {
            /* A = X^T (16 x 4): A[m][kk] = X[k0 + kk][m0 + m] */
            const double a0 = tile[(k0 + tig) * STRIDE + m0 + gid];
            const double a1 = tile[(k0 + tig) * STRIDE + m0 + gid + 8];
            for (int nb = 0; nb < 4; ++nb) {
                const int n0 = 8 * (4 * (warp % 2) + nb);
                /* B = X (4 x 8): B[kk][nn] = X[k0 + kk][n0 + nn] */
                mma_16x8x4(c[nb], a0, a1, tile[(k0 + tig) * STRIDE + n0 + gid]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    store_blocks(out, g, warp, m0, gid, tig, c);
}

/* The same products with the fragments read straight from global memory:
 * no tile, no barrier.  Lanes g of a fragment load read 4 consecutive rows
 * of one column (a 32-byte sector each), the warps of a work-group share
 * their reads through the L1 cache.  Rows of the chunk in steps of 4
 * (chunk a multiple of 4). */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gram_dmma_global(__global const double *X, const int ld, const int chunk,
                      __global double *out)
{
    const int lid = get_local_id(0), g = get_group_id(0);
    const int warp = lid / 32, lane = lid % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int first = g * chunk, last = first + chunk;
    const int m0 = 16 * (warp / 2);
    __global const double *col_a0 = X + (size_t)(m0 + gid) * ld + tig;
    __global const double *col_a1 = X + (size_t)(m0 + gid + 8) * ld + tig;
    __global const double *col_b[4];
    for (int nb = 0; nb < 4; ++nb)
        col_b[nb] = X + (size_t)(8 * (4 * (warp % 2) + nb) + gid) * ld + tig;
    double c[4][4] = {{0}};
#pragma unroll 8
    for (int r = first; r < last; r += 4) {
        const double a0 = col_a0[r], a1 = col_a1[r];
        const double b[4] = {col_b[0][r], col_b[1][r], col_b[2][r], col_b[3][r]};
        for (int nb = 0; nb < 4; ++nb)
            mma_16x8x4(c[nb], a0, a1, b[nb]);
    }
    store_blocks(out, g, warp, m0, gid, tig, c);
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=262144)
    parser.add_argument("--chunk", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    base = default_queue()
    queue = cl.CommandQueue(base.context, base.device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    print(f"# device: {queue.device.name.strip()}")
    program = cl.Program(queue.context, SOURCE).build()
    rng = np.random.default_rng(0)
    X = np.asfortranarray(rng.standard_normal((args.rows, K)))
    groups = args.rows // args.chunk
    flags = cl.mem_flags
    x_buf = cl.Buffer(queue.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=X)
    out = np.empty((groups, K, K))
    out_buf = cl.Buffer(queue.context, flags.WRITE_ONLY, out.nbytes)
    expected = np.stack([X[g * args.chunk:(g + 1) * args.chunk].T
                         @ X[g * args.chunk:(g + 1) * args.chunk] for g in range(groups)])
    unit = np.finfo(np.float64).eps * np.abs(expected).max()
    flops = 2.0 * args.rows * K * K
    for name in ("gram_fma", "gram_dmma", "gram_dmma_global"):
        kernel = getattr(program, name)
        kernel.set_args(x_buf, np.int32(args.rows), np.int32(args.chunk), out_buf)
        times = []
        for _ in range(args.repeat + 1):
            event = cl.enqueue_nd_range_kernel(queue, kernel, (groups * 256,), (256,))
            event.wait()
            times.append((event.profile.end - event.profile.start) * 1e-9)
        cl.enqueue_copy(queue, out, out_buf)
        queue.finish()
        seconds = float(np.median(times[1:]))
        print(f"{name:10s} error {np.abs(out - expected).max() / unit:8.2f} eps units, "
              f"{seconds * 1e6:8.1f} us, {flops / seconds * 1e-12:6.1f} TFLOP/s, "
              f"{X.nbytes / seconds * 1e-12:5.2f} TB/s of X read")


if __name__ == "__main__":
    main()
