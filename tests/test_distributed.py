"""comm=: the solvers on an MPI communicator (cljacobi.distributed).

The cases run under ``mpiexec`` with 2 and 3 ranks on this process's device
(tests/distributed_cases.py); their results are checked here against the
single-device solver and high-precision references: eigenvalues to rounding,
residuals, orthogonality, J-unitarity, relative accuracy on graded input,
bitwise repeatability, block columns given on every rank (uneven counts)
giving the same bits as the whole matrix on rank 0, and errors on one rank
reaching all of them (or aborting the job) instead of hanging.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cljacobi
from cljacobi.host.distributed import StripeLayout, cross_pairs, exchange_plan
from distributed_cases import CASES, inputs
from hiprec import eigvalsh_hiprec, singular_values_hiprec

CASES_SCRIPT = Path(__file__).with_name("distributed_cases.py")
EPS = np.finfo(np.float64).eps
#: Seconds an mpiexec job may take before the test calls it hung.
JOB_TIMEOUT = 240


def mpiexec() -> str:
    """The mpiexec of the environment running the tests (the ``mpich`` wheel's,
    beside python), else the one on PATH (``CLJACOBI_MPIEXEC`` overrides)."""
    found = os.environ.get("CLJACOBI_MPIEXEC") or (
        str(Path(sys.executable).with_name("mpiexec"))
        if Path(sys.executable).with_name("mpiexec").exists() else shutil.which("mpiexec"))
    assert found, f"no mpiexec beside {sys.executable} or on PATH: install the test extra"
    return found


def run_job(ranks: int, *args: str, timeout: int = JOB_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(
        # python -m mpi4py: an exception no rank catches aborts the job (no hang)
        [mpiexec(), "-n", str(ranks), sys.executable, "-m", "mpi4py", str(CASES_SCRIPT), *args],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ),
        cwd=Path(__file__).parent)


@pytest.fixture(scope="module", params=[2, 3], ids=["2 ranks", "3 ranks"])
def job(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(f"mpi{request.param}") / "results.npz"
    done = run_job(request.param, str(path), "cases")
    assert done.returncode == 0, done.stdout + done.stderr
    with np.load(path) as data:
        return request.param, {key: data[key] for key in data.files}


def results(job, case: str) -> list[np.ndarray]:
    _, data = job
    values = []
    while f"{case}/{len(values)}" in data:
        values.append(data[f"{case}/{len(values)}"])
    return values


def single(case: str):
    function, source, kwargs = CASES[case]
    return getattr(cljacobi, function)(*inputs(source), **kwargs)


# -- the strategy over the stripes -------------------------------------------------


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5, 8])
def test_exchange_plan_meets_every_pair_once_and_sends_where_held_next(ranks):
    plan = exchange_plan(ranks)
    assert len(plan) == max(2 * ranks - 1, 1)
    met = set()
    for k, step in enumerate(plan):
        held = [stripe for entry in step for stripe in entry.stripes]
        assert sorted(held) == list(range(2 * ranks))
        following = plan[(k + 1) % len(plan)]
        for rank, entry in enumerate(step):
            p, q = entry.stripes
            assert p < q
            met.add((p, q))
            for slot, (target, target_slot) in enumerate(entry.destinations):
                assert following[target].stripes[target_slot] == entry.stripes[slot]
                assert step[target].sources[target_slot] == rank
    assert len(met) == ranks * (2 * ranks - 1)  # every pair of stripes once a sweep


@pytest.mark.parametrize("blocks", [1, 2, 3, 5])
def test_cross_pairs_meet_every_pair_across_the_stripes_once(blocks):
    table = cross_pairs(blocks)
    assert table.shape == (blocks, blocks, 2)
    for step in table:
        assert sorted(step.ravel()) == list(range(2 * blocks))  # each block once a step
    across = {(int(i), int(j)) for step in table for i, j in step}
    assert across == {(i, blocks + j) for i in range(blocks) for j in range(blocks)}


@pytest.mark.parametrize("signs", [[1, 1, -1, -1], [1, -1, 1, -1, 1, 1], [-1, -1, 1], [1, 1, 1]])
def test_sign_order_runs_rebuild_the_permutation(signs):
    from cljacobi.host.distributed import _runs

    order = np.argsort(-np.array(signs), kind="stable")
    rebuilt = np.empty_like(order)
    for target, source, count in _runs(order):
        rebuilt[target:target + count] = np.arange(source, source + count)
    assert np.array_equal(rebuilt, order)
    assert len(_runs(order)) == 1 + np.count_nonzero(np.diff(order) != 1)


def test_stripe_layout_borders_to_equal_stripes():
    layout = StripeLayout.for_columns(50, 3, 8)
    assert (layout.width, layout.stripes, layout.columns) == (16, 6, 96)
    assert StripeLayout.for_columns(7, 2, 1).columns == 8
    assert StripeLayout.for_columns(1, 4, 16).width == 16


# -- results under mpiexec -----------------------------------------------------------


def test_ranks_and_sweeps_reported(job):
    ranks, data = job
    for case in CASES:
        sweeps, blocked, reported = data[f"{case}/sweeps"]
        assert reported == ranks and sweeps >= 1
        if CASES[case][2].get("variant") in ("bo", "offdiag"):
            assert 1 <= blocked < sweeps  # blocked sweeps, then pointwise ones


def test_eig_random_matches_one_device(job):
    w, U = results(job, "eig_bo")
    M = inputs("random50")[0]
    w1 = single("eig_bo").eigenvalues
    norm = np.linalg.norm(M, 2)
    assert np.abs(w - w1).max() <= 50 * 8 * EPS * norm
    assert np.linalg.norm(M @ U - U * w) <= 50 * 4 * EPS * norm
    assert np.abs(U.T @ U - np.eye(50)).max() <= 50 * 4 * EPS


def test_repeated_call_is_bitwise_identical(job):
    for first, again in zip(results(job, "eig_bo"), results(job, "eig_bo_again")):
        assert np.array_equal(first, again)


@pytest.mark.parametrize("case, source", [("eig_graded", "graded40"),
                                          ("eig_graded_offdiag", "graded40"),
                                          ("eig_graded_complex", "graded32c")])
def test_graded_eigenvalues_to_relative_accuracy(job, case, source):
    w, U = results(job, case)
    M = inputs(source)[0]
    reference = eigvalsh_hiprec(M)
    assert np.max(np.abs(w - reference) / np.abs(reference)) <= 1e-12
    # LAPACK loses the small ones on the same matrix (the test can tell)
    lapack = np.linalg.eigvalsh(M)
    assert np.max(np.abs(lapack - reference) / np.abs(reference)) > 1e-6
    assert np.abs(U.conj().T @ U - np.eye(len(w))).max() <= 1e-13


def test_singular_matrix_rank_and_null_space(job):
    w, U = results(job, "eig_singular")
    M = inputs("singular36")[0]
    one = single("eig_singular")
    assert np.count_nonzero(w == 0) == np.count_nonzero(one.eigenvalues == 0) == 16
    assert np.abs(w - one.eigenvalues).max() <= 36 * 8 * EPS * np.linalg.norm(M, 2)
    assert np.linalg.norm(M @ U - U * w) <= 36 * 8 * EPS * np.linalg.norm(M, 2)
    assert np.abs(U.T @ U - np.eye(36)).max() <= 36 * 4 * EPS


def test_eigenvalues_only(job):
    (w,) = results(job, "eigvals")
    assert w.shape == (50,)
    assert np.abs(w - single("eigvals")).max() <= 50 * 8 * EPS * np.abs(w).max()


def test_hsvd_complex_j_unitary(job):
    U, S, Vh, J = results(job, "hsvd")
    G, J_in = inputs("tall45x30c")
    one = single("hsvd")
    assert np.array_equal(J, one.J)
    assert np.max(np.abs(S - one.S) / one.S) <= 1e-12
    assert np.linalg.norm(U * S @ Vh - G) <= 1e-13 * np.linalg.norm(G)
    assert np.abs(U.conj().T @ U - np.eye(30)).max() <= 1e-13
    J_unitary = Vh @ np.diag(J_in) @ Vh.conj().T - np.diag(J)
    assert np.abs(J_unitary).max() <= 1e-11 * np.abs(Vh).max() ** 2


@pytest.mark.parametrize("case", ["svd", "svd_device_qr"])
def test_svd_wide_relative_accuracy(job, case):
    """The QR on the host and on the device (factorization="device")."""
    U, S, Vh = results(job, case)
    A = inputs("wide20x44")[0]
    reference = singular_values_hiprec(A)
    assert np.max(np.abs(S - reference) / reference) <= 1e-12
    assert np.linalg.norm(U * S @ Vh - A) <= 1e-13 * np.linalg.norm(A)
    assert np.abs(U.T @ U - np.eye(20)).max() <= 1e-13
    assert np.abs(Vh @ Vh.T - np.eye(20)).max() <= 1e-13


@pytest.mark.parametrize("case, source", [("gsvd", "pair33x30"), ("gsvd_complex", "pair24c")])
def test_gsvd_matches_one_device(job, case, source):
    U, V, C, S, X = results(job, case)
    A, B = inputs(source)
    one = single(case)
    assert np.max(np.abs(C - one.C)) <= 1e-13 and np.max(np.abs(S - one.S)) <= 1e-13
    assert np.abs(C**2 + S**2 - 1).max() <= 1e-14
    assert np.linalg.norm(U * C @ X.conj().T - A) <= 1e-13 * np.linalg.norm(A)
    assert np.linalg.norm(V * S @ X.conj().T - B) <= 1e-13 * np.linalg.norm(B)
    assert np.abs(V.conj().T @ V - np.eye(V.shape[1])).max() <= 1e-13


@pytest.mark.parametrize("columns, whole", [("columns_eig", "eig_bo"),
                                            ("columns_hsvd", "hsvd"),
                                            ("columns_gsvd", "gsvd")])
def test_block_columns_on_every_rank_give_the_same_bits(job, columns, whole):
    for part, value in zip(results(job, columns), results(job, whole)):
        assert np.array_equal(part, value)


# -- errors -------------------------------------------------------------------------


def failure(tmp_path, ranks: int, kind: str, timeout: int = JOB_TIMEOUT
            ) -> tuple[subprocess.CompletedProcess, dict[int, str]]:
    """Run a failure scenario; what each rank raised (or "returned")."""
    path = tmp_path / "outcome"
    done = run_job(ranks, str(path), "failure", kind, timeout=timeout)
    outcomes = {}
    for rank in range(ranks):
        written = Path(f"{path}.{rank}")
        if written.exists():
            outcomes[rank] = written.read_text()
    return done, outcomes


def test_rank_without_device_fails_on_every_rank(tmp_path):
    done, outcome = failure(tmp_path, 2, "bad_device")
    assert outcome[1].startswith("DeviceNotFoundError"), done.stdout + done.stderr
    assert outcome[0].startswith("DistributedError: rank 1 failed: DeviceNotFoundError")


def test_error_on_rank_0_reaches_the_others(tmp_path):
    done, outcome = failure(tmp_path, 2, "root_error")
    assert outcome[0].startswith("ValueError"), done.stdout + done.stderr
    assert outcome[1].startswith("DistributedError: rank 0 failed: ValueError")


def test_input_on_some_ranks_only_is_an_error_everywhere(tmp_path):
    done, outcome = failure(tmp_path, 3, "mismatch")
    assert len(outcome) == 3, done.stdout + done.stderr
    for text in outcome.values():
        assert text.startswith("ValueError: comm=: give the input whole on rank 0")
        assert "ranks [1] gave None" in text


def test_block_columns_on_the_device_are_refused_on_every_rank(tmp_path):
    done, outcome = failure(tmp_path, 2, "device_columns")
    assert len(outcome) == 2, done.stdout + done.stderr
    assert outcome[1].startswith("TypeError: comm= with block columns on every rank takes numpy")
    assert outcome[0].startswith("DistributedError: rank 1 failed: TypeError: comm= with block")


def test_rank_failing_inside_the_sweeps_aborts_the_job(tmp_path):
    done, outcome = failure(tmp_path, 2, "abort", timeout=300)
    assert done.returncode != 0
    assert ("rank 1 of 2 failed during the distributed sweeps (RuntimeError: injected "
            "failure in the second local sweep); aborting the communicator") in done.stderr
    assert 0 not in outcome  # rank 0, waiting for rank 1's stripes, was ended with it


def test_comm_must_be_a_communicator():
    with pytest.raises(TypeError, match="comm must be an mpi4py intracommunicator"):
        cljacobi.eig_indefinite(np.eye(3), comm="world")


def test_generalized_problem_refuses_comm():
    from mpi4py import MPI

    with pytest.raises(ValueError, match=r"eig_indefinite\(M, B\) runs on one device"):
        cljacobi.eig_indefinite(np.eye(3), np.eye(3), comm=MPI.COMM_SELF)


def test_one_rank_is_the_single_device_solver():
    from mpi4py import MPI

    M = inputs("random50")[0]
    on_comm = cljacobi.eig_indefinite(M, comm=MPI.COMM_SELF, variant="bo", block_width=8)
    alone = cljacobi.eig_indefinite(M, variant="bo", block_width=8)
    assert all(np.array_equal(a, b) for a, b in zip(on_comm, alone))


def test_blocked_sweep_takes_the_cross_pairs_and_refuses_a_table_missing_a_block(queue):
    from cljacobi.host.blocked import BlockedHSVD
    from cljacobi.host.operands import download, upload

    G = np.random.default_rng(0).standard_normal((40, 32))
    run = BlockedHSVD(queue, accumulate_v=False, block_width=8, variant="bo")
    operands = upload(queue, G, np.ones(32), accumulate_v=False, column_multiple=16,
                      dtype=np.float64)
    with pytest.raises(ValueError, match="outer_pairs must pair each of the 4 blocks"):
        run.run_operands(operands, max_sweeps=1,
                         outer_pairs=np.array([[[0, 1], [0, 3]]], np.int32))
    # Blocks 0, 1 | 2, 3.  A table of the pairs within the halves rotates
    # each half by an orthogonal transformation, which keeps the Frobenius
    # norm of the across block of G^T G; the pairs across the halves shrink it.
    def across(operands):
        G_now = download(queue, operands)[0]
        return np.linalg.norm((G_now.T @ G_now)[:16, 16:])

    start = across(operands)
    run.run_operands(operands, max_sweeps=1, outer_pairs=np.array([[[0, 1], [2, 3]]], np.int32))
    assert np.isclose(across(operands), start, rtol=1e-12)
    run.run_operands(operands, max_sweeps=1, outer_pairs=cross_pairs(2))
    assert across(operands) < 0.8 * start


def test_readme_example_runs_as_written(tmp_path):
    """README, "Several devices (MPI)": its example, under mpiexec with 2 ranks,
    gives the eigendecomposition whole on rank 0 and by block columns alike."""
    import re

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme[readme.index("## Several devices (MPI)"):]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    checks = '''
U = np.concatenate(comm.allgather(U_mine), axis=1)
assert U_mine.shape == (n, hi - lo)
assert np.abs(M @ U - U * w).max() < 1e-11 * np.abs(w).max()
if comm.rank == 0:
    assert np.array_equal(result.eigenvalues, w) and np.array_equal(result.eigenvectors, U)
else:
    assert result is None
# one write per rank: the ranks share the pipe, and pieces would interleave
sys.stdout.write(f"rank {comm.rank} ok\\n")
sys.stdout.flush()
'''
    script = tmp_path / "example.py"
    script.write_text(example + "import sys\n" + checks)
    done = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-m", "mpi4py", str(script)],
                          capture_output=True, text=True, timeout=JOB_TIMEOUT,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rank 0 ok" in done.stdout and "rank 1 ok" in done.stdout
