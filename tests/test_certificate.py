"""The certified finishing sweep: the certificate kernel against numpy on
factors whose pairs are exactly orthogonal or planted far from the tolerance,
and the solvers through it against full pointwise finishing sweeps."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import cljacobi
from cljacobi.host import certificate as certificate_module
from cljacobi.host.blocked import BlockedHSVD, certified_handover
from cljacobi.host.operands import upload
from cljacobi.host.pointwise import FINISHING_ENV, disjoint_rounds
from cljacobi.host.pointwise_plan import PointwiseSpec
from cljacobi.host.programs import build_program
from cljacobi.matrices import paper_spectrum, with_spectrum

EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny


def _disjoint_columns(rng, m, n, complex_):
    """m x n with columns on disjoint rows (three each): every dot product of
    two columns is an exact zero."""
    G = np.zeros((m, n), dtype=np.complex128 if complex_ else np.float64)
    rows = rng.permutation(m)[:3 * n].reshape(n, 3)
    for j in range(n):
        values = rng.standard_normal(3)
        if complex_:
            values = values + 1j * rng.standard_normal(3)
        G[rows[j], j] = values
    return G


def _certificate(queue, G, signs, w, layout="interleaved", products=None):
    complex_ = np.iscomplexobj(G)
    ops = upload(queue, G, signs, accumulate_v=False, column_multiple=2 * w,
                 dtype=np.complex128 if complex_ else np.float64,
                 split=complex_ and layout == "split")
    driver = BlockedHSVD(queue, accumulate_v=False, block_width=w, variant="bo",
                         matrix_products=products)
    driver.run_operands(ops, max_sweeps=0)  # no sweep: the certificate of G itself
    return driver.certificate, ops


@pytest.mark.parametrize("complex_, layout, products, w", [
    *[(c, layout, "fma", w) for c, layout in ((False, "interleaved"), (True, "interleaved"),
                                              (True, "split")) for w in (4, 8, 16)],
    # the tensor-core kernels take w a multiple of 8
    *[(c, layout, "mma.emulated", w) for c, layout in ((False, "interleaved"), (True, "split"))
      for w in (8, 16)]])
def test_candidates_against_numpy(queue, rng, complex_, layout, products, w):
    """Planted pairs within blocks, across blocks, on both sides of the
    tolerance, on columns graded over 2^-300; a column below the normal range
    that meets another; a zero column; the Gram matrices of the portable and
    (emulated) tensor-core kernels.  Every other dot product is an exact
    zero, so the candidates are known exactly."""
    n = 6 * w + 3  # bordered to 8 w columns
    m = 3 * n + 5
    G = _disjoint_columns(rng, m, n, complex_)
    G *= 2.0 ** -np.linspace(0, 300, n)
    bordered_rows = m + (8 * w - n)
    tol = np.sqrt(bordered_rows) * EPS
    # cosines in units of tol
    planted = {(0, 1): 8, (1, w + 2): 1e11, (w - 1, 3 * w): 4, (2, 4 * w + 1): 0.25,
               (2 * w + 3, 2 * w + 5): 0.25, (5, n - 1): 1e6}
    for (i, j), cosine in planted.items():
        # g_j + c |g_j| g_i / |g_i|: cosine c / sqrt(1 + c^2) with g_i
        G[:, j] += cosine * tol * np.linalg.norm(G[:, j]) / np.linalg.norm(G[:, i]) * G[:, i]
    expected = {pair for pair, cosine in planted.items() if cosine > 1}
    # a column below the normal range that meets column 4 (with which no
    # pair was planted), and a zero column
    tiny, zero = w + 4, 5 * w + 2
    G[:, tiny] = 0
    G[:, tiny] = 1e-10 * G[:, 4] / np.linalg.norm(G[:, 4]) * np.sqrt(TINY)
    G[:, zero] = 0
    expected.add((4, tiny))
    for (i, j) in list(expected):
        assert zero not in (i, j)
    signs = np.where(np.arange(n) < n // 3, 1, -1).astype(np.int8)
    certificate, _ = _certificate(queue, G, signs, w, layout, products)
    pairs = certificate.candidates()
    assert sorted(map(tuple, pairs.tolist())) == sorted(expected)
    assert np.all(pairs[:, 0] < pairs[:, 1])
    # sorted rows, each pair once
    assert np.array_equal(pairs, pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))])


def test_candidates_cover_every_pair(queue, rng):
    """A factor where every pair fails: the certificate names each of the
    r (r - 1) / 2 pairs once (the border's unit columns none)."""
    w, n = 4, 30
    G = rng.standard_normal((40, n))
    certificate, ops = _certificate(queue, G, np.ones(n, np.int8), w)
    pairs = certificate.candidates()
    assert ops.columns == 32
    expected = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    assert np.array_equal(pairs, expected)


def test_disjoint_rounds():
    rng = np.random.default_rng(1)
    pairs = np.array(sorted({tuple(sorted(rng.choice(20, 2, replace=False)))
                             for _ in range(60)}))
    rounds = disjoint_rounds(pairs)
    together = np.concatenate(rounds)
    assert sorted(map(tuple, together.tolist())) == sorted(map(tuple, pairs.tolist()))
    for members in rounds:
        assert len(np.unique(members)) == 2 * len(members)
    # a pair's round follows the last round of the pairs before it that share
    # an index: every index meets its pairs in the order given
    round_of = {tuple(pair): q for q, members in enumerate(rounds)
                for pair in members.tolist()}
    for k, (i, j) in enumerate(pairs.tolist()):
        before = [round_of[tuple(p)] for p in pairs[:k].tolist() if {i, j} & set(p)]
        assert round_of[(i, j)] == (max(before) + 1 if before else 0)
    assert [r.tolist() for r in disjoint_rounds(np.array([[0, 1], [0, 2], [3, 4], [1, 2]]))] \
        == [[[0, 1], [3, 4]], [[0, 2]], [[1, 2]]]
    assert disjoint_rounds(np.empty((0, 2), np.int64)) == []


def _eig(M, finishing, monkeypatch, **options):
    monkeypatch.setenv(FINISHING_ENV, finishing)
    (w, V), info = cljacobi.eig_indefinite(M, variant="bo", block_width=8, return_info=True,
                                           **options)
    return w, V, info


@pytest.mark.parametrize("family", ["random", "graded", "rank"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eig_certified_against_full_sweeps(rng, monkeypatch, family, dtype):
    """The certified finishing gives the eigenvalues of the full pointwise
    finishing to rounding, with the same accuracy bar (residual,
    orthogonality), and is bitwise repeatable."""
    n = 96
    spectrum = np.concatenate([np.geomspace(1, 1e-6, n // 2), -np.geomspace(1, 1e-6, n // 2)])
    if family == "rank":
        spectrum[::3] = 0
    M = with_spectrum(spectrum, rng=rng, dtype=dtype)
    if family == "graded":
        d = 2.0 ** -np.linspace(0, 30, n)
        M = d[:, None] * M * d[None, :]
    w_full, _, info_full = _eig(M, "sweeps", monkeypatch)
    w, V, info = _eig(M, "certified", monkeypatch)
    assert info_full.certified_sweeps == 0
    assert info.certified_sweeps >= 1
    assert info.converged
    # the blocked sweeps may hand over to certified ones early (below)
    assert info.blocked_sweeps <= info_full.blocked_sweeps
    assert len(w) == len(w_full)
    assert np.all(np.abs(w - w_full) <= 1e-12 * np.abs(w_full))
    scale = np.linalg.norm(M)
    assert np.linalg.norm(M @ V - V * w) <= 1e-12 * scale
    assert np.linalg.norm(V.conj().T @ V - np.eye(len(w))) <= 1e-11
    w2, V2, _ = _eig(M, "certified", monkeypatch)
    assert np.array_equal(w, w2) and np.array_equal(V, V2)


def test_certified_handover_rule():
    assert certified_handover([5000, 128], 64)
    assert not certified_handover([1100, 129], 64)  # more than 2 r, next about 15 > r / 8
    assert certified_handover([5000, 129], 64)  # next about 3.3 <= r / 8
    assert certified_handover([32768, 512], 64)  # 8 r, next exactly r / 8
    assert not certified_handover([32767, 512], 64)
    assert not certified_handover([10 ** 7, 513], 64)  # more than 8 r
    assert not certified_handover([1000, 126], 64)  # fell less than 8 times
    assert not certified_handover([100], 64)  # the first sweep


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_blocked_sweeps_hand_over_to_certified_ones(monkeypatch, dtype):
    """The blocked sweeps end at the first sweep the rule takes and the
    certified sweeps finish: the eigenvalues of the full pointwise finishing
    (which has no handover) to rounding, the same residual and
    orthogonality bar, bitwise repeatable.  The matrices' last blocked
    sweeps rotate 7762, 347 then 1 pairs (real) and 15414, 444 then 1
    (complex): the handover comes a sweep early, with big rotations still
    being made."""
    n = 256
    rng = np.random.default_rng(4)
    M = with_spectrum(paper_spectrum(n, rng=rng), rng=rng, dtype=dtype)
    options = {"variant": "offdiag", "block_width": 16, "return_info": True}
    monkeypatch.setenv(FINISHING_ENV, "sweeps")
    (w_full, _), info_full = cljacobi.eig_indefinite(M, **options)
    blocked_counts = info_full.rotations_per_sweep[:info_full.blocked_sweeps]
    monkeypatch.setenv(FINISHING_ENV, "certified")
    (w, V), info = cljacobi.eig_indefinite(M, **options)
    assert info.blocked_sweeps == info_full.blocked_sweeps - 1
    assert info.rotations_per_sweep[:info.blocked_sweeps] == blocked_counts[:-1]
    assert certified_handover(blocked_counts[:-1], n)
    assert not any(certified_handover(blocked_counts[:k], n) for k in range(1, len(blocked_counts) - 1))
    assert info.certified_sweeps >= 1 and info.converged
    assert np.all(np.abs(w - w_full) <= 1e-12 * np.abs(w_full))
    scale = np.linalg.norm(M)
    assert np.linalg.norm(M @ V - V * w) <= 1e-12 * scale
    assert np.linalg.norm(V.conj().T @ V - np.eye(n)) <= 1e-11
    (w2, V2), _ = cljacobi.eig_indefinite(M, **options)
    assert np.array_equal(w, w2) and np.array_equal(V, V2)


def test_certified_sweep_rotates_what_the_gram_matrices_leave(rng, monkeypatch):
    """Two nearly parallel columns of one sign: the blocked sweeps cannot
    resolve them in the Gram matrices and leave them; the certificate names
    them and cjac_step rotates them on the columns.  The singular values
    agree with the full pointwise finishing's, and the small one is right."""
    m, n = 80, 48
    G = rng.standard_normal((m, n))
    G[:, 7] = G[:, 30] + 1e-9 * rng.standard_normal(m)
    J = np.ones(n)
    J[n // 2:] = -1
    J[7] = J[30] = 1
    results = {}
    for finishing in ("sweeps", "certified"):
        monkeypatch.setenv(FINISHING_ENV, finishing)
        result, info = cljacobi.hsvd(G, J, variant="bo", block_width=8, return_info=True)
        results[finishing] = result.S, info
    sigma, info = results["certified"]
    assert info.certified_sweeps >= 1
    assert info.rotations_per_sweep[-info.certified_sweeps] > 0
    sigma_full = results["sweeps"][0]
    assert np.all(np.abs(sigma - sigma_full) <= 1e-10 * sigma_full)
    assert np.min(sigma) < 1e-8


def _naming(pairs_of):
    """A FinishingCertificate.candidates that names ``pairs_of(columns)``
    (``c x 2``, i < j, in increasing order) whatever the Gram matrices say."""
    def candidates(certificate, launched=None):
        if launched is not None:
            launched()
        return pairs_of(2 * certificate.slots * certificate.block_width)
    return candidates


def _every_pair(columns):
    """Every pair of columns: more than the columns, so the sweep is a full one."""
    return np.array([(i, j) for i in range(columns) for j in range(i + 1, columns)])


def test_too_many_candidates_run_a_full_sweep(rng, monkeypatch):
    """More candidates than columns: the sweep is a full pointwise sweep, as
    with CLJACOBI_FINISHING=sweeps, bitwise."""
    M = with_spectrum(np.linspace(-1, 1, 64), rng=rng)
    w_full, V_full, info_full = _eig(M, "sweeps", monkeypatch)

    monkeypatch.setattr(certificate_module.FinishingCertificate, "candidates",
                        _naming(_every_pair))
    w, V, info = _eig(M, "certified", monkeypatch)
    assert info.certified_sweeps == 0
    assert np.array_equal(w, w_full) and np.array_equal(V, V_full)
    assert info.sweeps == info_full.sweeps


def _chained_pairs(columns):
    """The pairs (i, i + 1): fewer than the columns, but every one in a round
    of its own, as many rounds as a full sweep has steps."""
    return np.array([(i, i + 1) for i in range(columns - 1)])


def test_candidates_in_a_full_sweeps_rounds_run_a_full_sweep(rng, monkeypatch):
    """Candidates whose rounds are as many as a full sweep's steps: the
    sweep is a full pointwise sweep, as with CLJACOBI_FINISHING=sweeps,
    bitwise."""
    M = with_spectrum(np.linspace(-1, 1, 64), rng=rng)
    w_full, V_full, info_full = _eig(M, "sweeps", monkeypatch)
    monkeypatch.setattr(certificate_module.FinishingCertificate, "candidates",
                        _naming(_chained_pairs))
    w, V, info = _eig(M, "certified", monkeypatch)
    named = _chained_pairs(64)
    assert len(named) < 64 and len(disjoint_rounds(named)) == 63
    assert info.certified_sweeps == 0
    assert np.array_equal(w, w_full) and np.array_equal(V, V_full)
    assert info.sweeps == info_full.sweeps


def _scattered_pairs(columns):
    """2 r pairs of columns (each column i with i XOR r/2, r/4, r/8 and r/16):
    more pairs than columns, in a few rounds."""
    pairs = {(i, i ^ bit) for i in range(columns) for bit in (columns >> 1, columns >> 2,
                                                               columns >> 3, columns >> 4)}
    return np.array(sorted((i, j) for i, j in pairs if i < j))


def test_more_candidates_than_columns_in_rounds(rng, monkeypatch):
    """2 r candidates in few rounds: the sweep rotates them (a
    certified sweep, not a full one), and the eigenvalues and eigenvectors
    are those of the full pointwise finishing to rounding."""
    n = 64
    M = with_spectrum(np.linspace(-1, 1, n), rng=rng)
    w_full, _, _ = _eig(M, "sweeps", monkeypatch)
    monkeypatch.setattr(certificate_module.FinishingCertificate, "candidates",
                        _naming(_scattered_pairs))
    w, V, info = _eig(M, "certified", monkeypatch)
    named = _scattered_pairs(n)
    assert n < len(named) <= 8 * n and len(disjoint_rounds(named)) < n - 1
    assert info.certified_sweeps >= 1 and info.converged
    assert np.all(np.abs(w - w_full) <= 1e-13 * np.abs(w_full).max())
    assert np.linalg.norm(M @ V - V * w) <= 1e-12 * np.linalg.norm(M)
    assert np.linalg.norm(V.T @ V - np.eye(n)) <= 1e-12


def test_finishing_choices(rng, monkeypatch):
    M = with_spectrum(np.linspace(-1, 1, 48), rng=rng)
    _, _, info = _eig(M, "certified", monkeypatch, strategy="mm")
    assert info.certified_sweeps == 0  # the modified modulus stepper has no table
    _, _, info = _eig(M, "certified", monkeypatch, rotation=3)
    assert info.certified_sweeps == 0  # Nash's rotation moves the columns' data
    monkeypatch.setenv(FINISHING_ENV, "sometimes")
    with pytest.raises(ValueError, match="CLJACOBI_FINISHING must be one of"):
        cljacobi.eig_indefinite(M, variant="bo", block_width=8)
    monkeypatch.delenv(FINISHING_ENV)
    (_, _), info = cljacobi.eig_indefinite(M, variant="bo", block_width=8, return_info=True)
    assert info.certified_sweeps >= 1  # the default
    (_, _), info = cljacobi.eig_indefinite(M, variant="pointwise", return_info=True)
    assert info.certified_sweeps == 0


@pytest.mark.parametrize("rotation", [1, 2])
def test_certified_sweep_rotates_pairs_that_share_columns(queue, rng, rotation):
    """Candidates (0, 1), (0, 2), (1, 2), (2, 5) at cosines far above the
    tolerance, of columns whose norms grow with the index (so no rotation is
    big, and with the packed diagonal unsorted algorithms 2 and 3 move the
    longer column of every pair to its first position): one certified
    sweep rotates each of them on its columns, whatever rotation algorithm 2
    exchanges in the packed diagonal between the rounds, and leaves every
    pair orthogonal to the tolerance."""
    from cljacobi.host.operands import download
    from cljacobi.host.pointwise import PointwiseHSVD

    n, w = 16, 4
    G = _disjoint_columns(rng, 3 * n, n, False)
    G *= (1 + np.arange(n)) / np.linalg.norm(G, axis=0)
    for i, j in ((0, 1), (0, 2), (1, 2), (2, 5)):
        G[:, j] += 1e-10 * G[:, i]
    signs = np.ones(n, np.int8)
    certificate, ops = _certificate(queue, G, signs, w)
    assert sorted(map(tuple, certificate.candidates().tolist())) == [
        (0, 1), (0, 2), (1, 2), (2, 5)]
    driver = PointwiseHSVD(queue, accumulate_v=False, strategy="me", rotation=rotation,
                           sort_diagonal=False)
    state = driver.run_operands(ops, max_sweeps=1, fetch=False, certificate=certificate)
    assert state.stats.certified == 1 and state.stats.converged
    assert state.stats.rotations == 4
    G_new, _ = download(queue, state.operands)
    C = G_new.T @ G_new
    norms = np.sqrt(np.diag(C))
    cosines = np.abs(C) / np.outer(norms, norms) - np.eye(len(C))
    assert cosines.max() <= np.sqrt(ops.rows) * EPS


@pytest.mark.parametrize("count", [1, 37, 128])
def test_round_positions_against_numpy(queue, rng, count):
    """cjac_round_positions: the positions that hold a round's physical
    columns in a permuted packed diagonal, i < j, for the round at `first`
    of the uploaded members, as the host would look them up."""
    spec = PointwiseSpec("float64", 64, False, strategy="table", rotation=2)
    program = build_program(queue.context, queue.device, spec)
    r = 256
    diagonal = np.zeros(r, dtype=spec.diag_dtype)
    diagonal["rho"] = rng.permutation(r)
    columns = rng.permutation(r)[:2 * count].reshape(count, 2)
    members = np.concatenate([rng.integers(0, r, (5, 2)), columns]).astype(np.int32)
    mf = cl.mem_flags
    d_buf = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=diagonal)
    m_buf = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=members)
    position = cl.Buffer(queue.context, mf.READ_WRITE, 4 * r)
    table = np.full((r // 2, 2), -1, dtype=np.int32)
    t_buf = cl.Buffer(queue.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=table)
    kernel = spec.signatures["cjac_round_positions"].kernel(
        program, D=d_buf, r=r, members=m_buf, first=5, count=count, position=position,
        table=t_buf)
    cl.enqueue_nd_range_kernel(queue, kernel, (64,), (64,))
    cl.enqueue_copy(queue, table, t_buf)
    where = np.empty(r, dtype=np.int64)
    where[diagonal["rho"]] = np.arange(r)
    np.testing.assert_array_equal(table[:count], np.sort(where[columns], axis=1))
    assert (table[count:] == -1).all()


@pytest.mark.parametrize("dtype, seed, stale", [
    (np.float64, 5, "none"),  # no candidate: every column as the blocked sweeps left it
    (np.float64, 4, "candidates"),  # candidates that cjac_step finds orthogonal
    (np.complex128, 5, "candidates"),  # 4 pairs rotated
    (np.float64, 5, "full sweep"),
    (np.float64, 7, "singular"),  # rank 200: U by columns, the null space after it
])
def test_eigenvectors_beside_the_finishing_sweeps(monkeypatch, dtype, seed, stale):
    """The eigenvectors normalized as the blocked sweeps left G and brought
    down beside the certified sweeps, then the columns those sweeps may have
    changed, or whose position in the order moved, read again: bitwise the
    eigenvectors read after the sweeps, whether the certified sweep names no
    candidate, rotates some, or gives way to a full sweep (then every column
    is read again)."""
    from cljacobi import eig as eig_module

    n = 256
    rng = np.random.default_rng(seed)
    spectrum = paper_spectrum(n, rng=rng)
    if stale == "singular":
        spectrum[rng.permutation(n)[:n - 200]] = 0
    M = with_spectrum(spectrum, rng=rng, dtype=dtype)
    if stale == "full sweep":
        monkeypatch.setattr(certificate_module.FinishingCertificate, "candidates",
                            _naming(_every_pair))
    reads = []
    normalized_columns = eig_module.normalized_columns

    def recording(queue, operands, columns, **kwargs):
        reads.append(len(columns))
        return normalized_columns(queue, operands, columns, **kwargs)

    monkeypatch.setattr(eig_module, "normalized_columns", recording)
    options = {"variant": "offdiag", "block_width": 16, "factorization": "device",
               "return_info": True}
    results = {}
    for beside in (False, True):
        monkeypatch.setattr(eig_module, "EIGENVECTORS_BESIDE_FINISHING", beside)
        reads.clear()
        results[beside] = cljacobi.eig_indefinite(M, **options)
        if beside:
            read_again = list(reads)
    (w, V), info = results[True]
    (w_after, V_after), _ = results[False]
    assert np.array_equal(w, w_after) and np.array_equal(V, V_after)
    assert V.flags.f_contiguous
    if stale == "full sweep":
        assert info.certified_sweeps == 0 and read_again == [n]
    elif stale == "singular":
        assert info.rank == 200 and info.certified_sweeps == 1
        assert all(count < 200 // 4 for count in read_again)
    else:
        assert info.certified_sweeps == 1
        assert (read_again == []) == (stale == "none")
        assert all(0 < count < n // 4 for count in read_again)
    scale = np.linalg.norm(M)
    assert np.linalg.norm(M @ V - V * w) <= 1e-12 * scale
