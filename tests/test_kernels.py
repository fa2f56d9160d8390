"""Each kernel of the pointwise family against its numpy reference.

The kernels are launched one at a time on small problems: Precompute_Data
(norms, identity permutation, signs, stepper), one Jacobi_Step (rotations of
every pivot pair against cljacobi.reference.pair_rotation), the stepper
over two quasi-sweeps against cljacobi.strategies, and the status reduction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pytest

from cljacobi.host import programs
from cljacobi.host.diagonal import DIAG_DTYPE, DIAG_DTYPE_SINGLE, sort_diagonal
from cljacobi.host.pointwise_plan import PointwiseSpec
from cljacobi.host.programs import build_program, render, work_group_limit
from cljacobi.host.signatures import c_struct
from cljacobi.host.status import Status
from cljacobi.reference import PairKind, pair_rotation
from cljacobi.strategies import step_table

EPS = np.finfo(np.float64).eps
LD = 64  # leading dimension used by these tests (rows padded with zeros)


def test_render_is_specialized():
    plain = render(PointwiseSpec("float64", 32, False))
    with_v = render(PointwiseSpec("float64", 128, True))
    assert "reqd_work_group_size(WG, 1, 1)" in plain and "#define WG 32" in plain
    assert "#define WG 128" in with_v
    assert "__global cjac_real *V" in with_v and "__global cjac_real *V" not in plain
    assert "typedef double cjac_real" in plain
    assert "typedef float cjac_real" in render(PointwiseSpec("float32", 32, False))


@dataclass(frozen=True)
class _NoSuchFamily:
    family: str = "no-such-family"

    def render_args(self):
        return {}


def test_render_errors_name_the_spec():
    with pytest.raises(RuntimeError, match="no-such-family"):
        render(_NoSuchFamily())
    with pytest.raises(ValueError, match="power of two"):
        PointwiseSpec("float64", 48, False)
    with pytest.raises(ValueError, match="dtype"):
        PointwiseSpec("int32", 32, False)


@pytest.mark.parametrize("spec", [
    PointwiseSpec("float64", 16, False),
    PointwiseSpec("complex128", 32, True, "split", strategy="table", rotation=3),
    PointwiseSpec("complex128", 16, True, "interleaved", rotation=2),
    PointwiseSpec("float32", 16, True, strategy="table"),
])
def test_template_declares_the_spec_signatures(queue, spec):
    """The kernels take exactly the arguments the host binds by name; the status
    bits and the packed-diagonal struct come from the Python side."""
    source = render(spec)
    for sig in spec.signatures.values():
        assert f"void {sig.name}({sig.parameters})" in source
    for flag in Status:
        assert f"#define CJAC_{flag.name} {int(flag)}\n" in source
    diag = DIAG_DTYPE_SINGLE if spec.dtype == "float32" else DIAG_DTYPE
    assert spec.diag_dtype == diag
    assert c_struct("cjac_diag", diag, aligned=16) in source
    assert f"#define CJAC_DIAG_BYTES {diag.itemsize}\n" in source
    program = build_program(queue.context, queue.device, spec)
    for sig in spec.signatures.values():
        assert cl.Kernel(program, sig.name).num_args == len(sig.args)


def test_program_cache(queue):
    spec = PointwiseSpec("float64", 16, False)
    first = build_program(queue.context, queue.device, spec)
    assert build_program(queue.context, queue.device, spec) is first


def test_work_group_limit_is_asked_once(queue, monkeypatch):
    """The limit is the smallest CL_KERNEL_WORK_GROUP_SIZE of the program's
    kernels, read from kernel objects once per program (creating them costs
    more than the plan's other work)."""
    spec = PointwiseSpec("float64", 32, False)
    program = build_program(queue.context, queue.device, spec)
    expected = min(k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, queue.device)
                   for k in program.all_kernels())
    monkeypatch.setattr(programs, "_limits", {})
    asked = []
    monkeypatch.setattr(programs, "build_program", lambda *a: asked.append(a) or program)
    assert work_group_limit(queue.context, queue.device, spec) == expected
    assert work_group_limit(queue.context, queue.device, spec) == expected
    assert len(asked) == 1


class _Pointwise:
    """The pointwise kernels on one small bordered problem, launched by hand."""

    def __init__(self, queue, G, p, work_group_size=16, accumulate_v=True):
        self.queue, self.wg = queue, work_group_size
        self.m, self.r = G.shape
        assert self.r % 2 == 0 and self.m <= LD
        self.slots = self.r // 2
        self.spec = PointwiseSpec("float64", work_group_size, accumulate_v)
        self.program = build_program(queue.context, queue.device, self.spec)
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
        self.launch("cjac_precompute", (self.slots * self.wg,), G=self.g, ldg=LD, m=self.m,
                    D=self.d, peak=self.peak, keep_peaks=0, stepper=self.stepper, r=self.r, p=p)

    def launch(self, name, global_size, **values):
        """Kernel `name` with every argument bound by name (the spec's signature)."""
        kernel = self.spec.signatures[name].kernel(self.program, **values)
        cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, (self.wg,))

    def step(self):
        self.launch("cjac_step", (self.slots * self.wg,), G=self.g, ldg=LD, m=self.m, V=self.v,
                    ldv=LD, mv=self.r, D=self.d, peak=self.peak, peak_rounding=1,
                    stepper=self.stepper, status=self.status, rotations=self.rotations,
                    r=self.r)

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
    run.launch("cjac_sweep_status", (16,), status=run.status, rotations=run.rotations,
               slots=32, summary=summary)
    out = run.read(summary, np.int32, 2)
    assert out[0] == np.bitwise_or.reduce(status) and out[1] == rotations.sum()
    assert not run.read(run.status, np.int32, 32).any()
    assert not run.read(run.rotations, np.int32, 32).any()
