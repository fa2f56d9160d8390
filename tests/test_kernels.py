"""Each kernel of the pointwise family against its numpy reference.

The kernels are launched one at a time on small problems: Precompute_Data
(norms, identity permutation, signs, stepper), one Jacobi_Step (rotations of
every pivot pair against cljacobi.reference.pair_rotation), the stepper
over two quasi-sweeps against cljacobi.strategies, and the status reduction.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from cljacobi.host.diagonal import DIAG_DTYPE, sort_diagonal
from cljacobi.host.programs import KernelSpec, build_program, render
from cljacobi.reference import PairKind, pair_rotation
from cljacobi.strategies import step_table

EPS = np.finfo(np.float64).eps
LD = 64  # leading dimension used by these tests (rows padded with zeros)


def test_render_is_specialized():
    plain = render(KernelSpec("pointwise", "float64", 32, False))
    with_v = render(KernelSpec("pointwise", "float64", 128, True))
    assert "reqd_work_group_size(WG, 1, 1)" in plain and "#define WG 32" in plain
    assert "#define WG 128" in with_v
    assert "__global cjac_real *V" in with_v and "__global cjac_real *V" not in plain
    assert "typedef double cjac_real" in plain
    assert "typedef float cjac_real" in render(KernelSpec("pointwise", "float32", 32, False))


def test_render_errors_name_the_spec():
    with pytest.raises(RuntimeError, match="no-such-family"):
        render(KernelSpec("no-such-family", "float64", 32, False))
    with pytest.raises(ValueError, match="power of two"):
        KernelSpec("pointwise", "float64", 48, False)
    with pytest.raises(ValueError, match="dtype"):
        KernelSpec("pointwise", "int32", 32, False)


def test_program_cache(queue):
    spec = KernelSpec("pointwise", "float64", 16, False)
    first = build_program(queue.context, queue.device, spec)
    assert build_program(queue.context, queue.device, spec) is first


class _Pointwise:
    """The pointwise kernels on one small bordered problem, launched by hand."""

    def __init__(self, queue, G, p, work_group_size=16, accumulate_v=True):
        self.queue, self.wg = queue, work_group_size
        self.m, self.r = G.shape
        assert self.r % 2 == 0 and self.m <= LD
        self.slots = self.r // 2
        program = build_program(
            queue.context, queue.device,
            KernelSpec("pointwise", "float64", work_group_size, accumulate_v),
        )
        self.kernels = {name: cl.Kernel(program, name) for name in
                        ("cjac_precompute", "cjac_step", "cjac_sweep_status")}
        columns = np.zeros((self.r, LD))
        columns[:, : self.m] = G.T
        identity = np.zeros((self.r, LD))
        identity[np.arange(self.r), np.arange(self.r)] = 1
        mf = cl.mem_flags
        ctx = queue.context
        self.g = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=columns)
        self.v = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=identity)
        self.d = cl.Buffer(ctx, mf.READ_WRITE, DIAG_DTYPE.itemsize * self.r)
        self.peak = cl.Buffer(ctx, mf.READ_WRITE, 8 * self.r)
        self.stepper = cl.Buffer(ctx, mf.READ_WRITE, 16 * self.slots)
        zeros = np.zeros(self.slots, np.int32)
        self.status = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        self.rotations = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        self.kernels["cjac_precompute"](
            queue, (self.slots * self.wg,), (self.wg,), self.g, np.int32(LD), np.int32(self.m),
            self.d, self.peak, np.int32(0), self.stepper, np.int32(self.r), np.int32(p))

    def step(self):
        self.kernels["cjac_step"](
            self.queue, (self.slots * self.wg,), (self.wg,),
            self.g, np.int32(LD), np.int32(self.m), self.v, np.int32(LD), np.int32(self.r),
            self.d, self.peak, np.int32(1), self.stepper, self.status, self.rotations, np.int32(self.r))

    def read(self, buffer, dtype, count):
        out = np.empty(count, dtype=dtype)
        cl.enqueue_copy(self.queue, out, buffer)
        return out

    def columns(self, buffer):
        return self.read(buffer, np.float64, self.r * LD).reshape(self.r, LD)[:, : self.m].T

    def write_diagonal(self, diagonal):
        cl.enqueue_copy(self.queue, self.d, diagonal)


def test_precompute(queue, rng):
    G = rng.standard_normal((37, 10))
    run = _Pointwise(queue, G, p=4)
    diagonal = run.read(run.d, DIAG_DTYPE, 10)
    np.testing.assert_allclose(diagonal["d"], np.sum(G * G, axis=0), rtol=10 * EPS)
    assert diagonal["rho"].tolist() == list(range(10))
    assert diagonal["j"].tolist() == [1] * 4 + [-1] * 6
    stepper = run.read(run.stepper, np.int32, 20).reshape(5, 4)
    assert stepper[:, 2:].tolist() == [[k, 9 - k] for k in range(5)]


@pytest.mark.parametrize("r", [2, 8, 14])
def test_stepper_follows_the_mm_table(queue, r):
    """Over two quasi-sweeps the device stepper visits exactly the MM table's pairs."""
    G = np.eye(r + 3, r)  # orthonormal columns: nothing rotates, only the stepper moves
    run = _Pointwise(queue, G, p=r // 2)
    for sweep in range(2):
        table = step_table("mm", r, sweep=sweep).pairs
        for s in range(r):
            stepper = run.read(run.stepper, np.int32, 4 * (r // 2)).reshape(-1, 4)
            assert stepper[:, 2:].tolist() == table[s].tolist(), (sweep, s)
            run.step()
    assert run.read(run.rotations, np.int32, r // 2).sum() == 0


@pytest.mark.parametrize("p", [0, 3, 8])
def test_one_step_against_reference(queue, rng, p):
    """One parallel step: every pivot pair rotated as reference.pair_rotation says."""
    m, r = 29, 8
    G = rng.standard_normal((m, r)) * 2.0 ** rng.integers(-8, 8, r)
    G[:, 5] = G[:, 1] * 1e-3 + G[:, 5] * 1e-12  # nearly dependent pair, still rotatable
    G[:, 6] = 0.0
    G[0, 6] = 1.0  # column orthogonal to... most: exercises the (2.3) skip
    run = _Pointwise(queue, G, p=p)
    diagonal = sort_diagonal(run.read(run.d, DIAG_DTYPE, r))
    run.write_diagonal(diagonal)
    run.step()

    expected_G, expected_V = G.copy(), np.eye(r)
    expected_status = np.zeros(r // 2, np.int32)
    for slot, (i, j) in enumerate(step_table("mm", r).pairs[0]):
        ci, cj = diagonal["rho"][i], diagonal["rho"][j]
        hyperbolic = diagonal["j"][i] != diagonal["j"][j]
        gi, gj = G[:, ci], G[:, cj]
        kind, t, c = pair_rotation(diagonal["d"][i], diagonal["d"][j], gi @ gj, hyperbolic)
        if kind != PairKind.ROTATE:
            continue
        t_i = t if hyperbolic else -t
        expected_G[:, ci], expected_G[:, cj] = c * (gi + t_i * gj), c * (gj + t * gi)
        vi, vj = expected_V[:, ci].copy(), expected_V[:, cj].copy()
        expected_V[:, ci], expected_V[:, cj] = c * (vi + t_i * vj), c * (vj + t * vi)
        d_i, d_j = diagonal["d"][i], diagonal["d"][j]
        moved = abs(t) * np.sqrt(max(d_i, d_j)) / np.sqrt(min(d_i, d_j))
        expected_status[slot] = 3 if moved > np.sqrt(EPS) / 2 else 1

    scale = np.abs(G).max(axis=0)
    np.testing.assert_allclose(run.columns(run.g) / scale, expected_G / scale, rtol=0, atol=1e-13)
    np.testing.assert_allclose(run.columns(run.v)[:r], expected_V, rtol=0, atol=1e-13)
    assert run.read(run.status, np.int32, r // 2).tolist() == expected_status.tolist()
    new_diagonal = run.read(run.d, DIAG_DTYPE, r)
    np.testing.assert_allclose(
        new_diagonal["d"], np.sum(run.columns(run.g) ** 2, axis=0)[new_diagonal["rho"]],
        rtol=20 * EPS)


def test_sweep_status_reduction(queue, rng):
    run = _Pointwise(queue, np.eye(64), p=10, work_group_size=16)
    status = rng.choice([0, 1, 3, 4], size=32).astype(np.int32)
    rotations = rng.integers(0, 1000, size=32).astype(np.int32)
    cl.enqueue_copy(queue, run.status, status)
    cl.enqueue_copy(queue, run.rotations, rotations)
    summary = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8)
    run.kernels["cjac_sweep_status"](queue, (16,), (16,), run.status, run.rotations,
                                     np.int32(32), summary)
    out = run.read(summary, np.int32, 2)
    assert out[0] == np.bitwise_or.reduce(status) and out[1] == rotations.sum()
    assert not run.read(run.status, np.int32, 32).any()
    assert not run.read(run.rotations, np.int32, 32).any()
