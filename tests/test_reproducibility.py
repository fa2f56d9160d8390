"""Reproducibility (bitwise, across runs and processes) and concurrency
(threads sharing one context and queue)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyopencl as cl

import cljacobi
from cljacobi.matrices import with_spectrum

REPO = Path(cljacobi.__file__).resolve().parent.parent

# Run in a fresh interpreter: builds its own programs, draws the same matrix.
_CHILD = """
import hashlib, sys
import numpy as np
import cljacobi
from cljacobi.matrices import with_spectrum
rng = np.random.default_rng(20261122)
n = 45
lam = np.concatenate([rng.uniform(1e-3, 10, 20), -rng.uniform(1e-3, 10, n - 20)])
M = with_spectrum(lam, rng=rng)
w, U = cljacobi.eig_indefinite(M)
G = rng.standard_normal((30, 22))
J = np.where(np.arange(22) % 3 == 0, -1, 1)
parts = [w, U, *cljacobi.hsvd(G, J)]
digest = hashlib.sha256(b"".join(np.ascontiguousarray(p).tobytes() for p in parts))
sys.stdout.write(digest.hexdigest())
"""


def _digest_here() -> str:
    namespace: dict = {}
    captured = []

    class _Out:
        def write(self, text):
            captured.append(text)

    real_stdout = sys.stdout
    sys.stdout = _Out()
    try:
        exec(compile(_CHILD, "<child>", "exec"), namespace)
    finally:
        sys.stdout = real_stdout
    return "".join(captured)


def test_bitwise_identical_over_five_runs(rng):
    n = 50
    lam = np.concatenate([rng.uniform(0.1, 5, 21), -rng.uniform(0.1, 5, n - 21)])
    M = with_spectrum(lam, rng=rng)
    G = rng.standard_normal((40, 26))
    J = np.where(np.arange(26) % 2 == 0, 1, -1)
    first_eig = cljacobi.eig_indefinite(M)
    first_hsvd = cljacobi.hsvd(G, J)
    for _ in range(4):
        again = cljacobi.eig_indefinite(M)
        assert np.array_equal(again.eigenvalues, first_eig.eigenvalues)
        assert np.array_equal(again.eigenvectors, first_eig.eigenvectors)
        for a, b in zip(cljacobi.hsvd(G, J), first_hsvd):
            assert np.array_equal(a, b)


def test_bitwise_identical_across_processes():
    here = _digest_here()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["PYTHONHASHSEED"] = "12345"  # a different salt than ours, on purpose
    children = []
    for _ in range(2):
        child = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                               text=True, timeout=300)
        assert child.returncode == 0, f"the child process failed:\n{child.stderr}"
        children.append(child.stdout)
    assert len(here) == 64
    assert children == [here, here]


def _problems(count):
    rng = np.random.default_rng(7)
    problems = []
    for k in range(count):
        n = 10 + 7 * k
        p = (k * 5) % n
        lam = np.concatenate([rng.uniform(0.1, 5, p), -rng.uniform(0.1, 5, n - p)])
        problems.append(with_spectrum(lam, rng=rng))
    return problems


def test_threads_sharing_the_default_queue():
    problems = _problems(8)
    sequential = [cljacobi.eig_indefinite(M) for M in problems]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(cljacobi.eig_indefinite, problems * 2))
    for k, result in enumerate(concurrent):
        expected = sequential[k % len(problems)]
        assert np.array_equal(result.eigenvalues, expected.eigenvalues)
        assert np.array_equal(result.eigenvectors, expected.eigenvectors)


def test_threads_sharing_one_context(queue):
    """A context per call gets a new queue per call; programs are shared."""
    context = queue.context
    problems = _problems(6)
    G = np.random.default_rng(3).standard_normal((25, 18))
    J = np.where(np.arange(18) < 7, 1, -1)
    sequential = [cljacobi.eig_indefinite(M, queue=context, eigvals_only=True) for M in problems]
    expected_hsvd = cljacobi.hsvd(G, J, queue=context)

    def task(k):
        if k % 3 == 2:
            return cljacobi.hsvd(G, J, queue=cl.CommandQueue(context))
        return cljacobi.eig_indefinite(problems[k % 6], queue=context, eigvals_only=True)

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(task, range(12)))
    for k, result in enumerate(results):
        if k % 3 == 2:
            for a, b in zip(result, expected_hsvd):
                assert np.array_equal(a, b)
        else:
            assert np.array_equal(result, sequential[k % 6])


def test_a_solve_after_a_solve_makes_no_kernel_objects(rng, monkeypatch):
    """The pipeline keeps a thread's kernel objects for the next matrix
    (cljacobi.host.signatures.kernels_reused): a second solve of the same
    shape makes none, and its results are the first one's, bit for bit."""
    real = cl.Kernel
    made = []
    monkeypatch.setattr(cl, "Kernel", lambda *args: made.append(args[1]) or real(*args))
    n = 48
    lam = np.concatenate([rng.uniform(0.1, 5, 20), -rng.uniform(0.1, 5, n - 20)])
    M = with_spectrum(lam, rng=rng)
    Mc = with_spectrum(lam, rng=rng, dtype=np.complex128)
    G = rng.standard_normal((40, 32))
    J = np.where(np.arange(32) < 12, 1, -1)
    solves = [
        lambda: cljacobi.eig_indefinite(M, variant="offdiag", block_width=8),
        lambda: cljacobi.eig_indefinite(Mc, variant="offdiag", block_width=8),
        lambda: cljacobi.eig_indefinite(M),
        lambda: cljacobi.hsvd(G, J, variant="offdiag", block_width=8),
    ]
    for solve in solves:
        first = solve()
        made.clear()
        second = solve()
        assert made == []
        for a, b in zip(first, second):
            assert np.array_equal(a, b)
