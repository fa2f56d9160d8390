"""The host side of the batched svd and of the batched hsvd of tall factors.

Both start on the host, as their one-matrix paths do, with a row-sorted,
column-pivoted QR of every matrix (:func:`cljacobi.shortening.pivoted_qr`,
LAPACK ``xGEQP3``): :func:`shorten_stack` turns a stack into the square
factors the batched kernel sweeps in one launch (svd: ``X = R^*`` of ``B = A``
or ``A^*``, ``J = I``; hsvd: ``R`` of ``G[:, p] = Q R`` with ``J[p]`` sorted,
:func:`cljacobi.shortening.shorten`), and :func:`svd_results` and
:func:`tall_hsvd_results` read the decompositions off the kernel's results
with the QR factors, as :mod:`cljacobi.svd` and
:mod:`cljacobi.hyperbolic_svd` do for one matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .scaling import factor_shifts, unshift_rows
from .shortening import pivoted_qr_stack

__all__ = ["ShortenedStack", "StackNames", "shorten_stack", "svd_results", "tall_hsvd_results"]


class StackNames(Sequence):
    """The names of a stack's matrices in messages (``A[1, 2]``, or a phrase
    around it: ``a singular value of A[1, 2]``), each formed only when a
    message asks for it: naming every matrix of a stack of 20,000 small
    ones took longer than their QR.

    Parameters
    ----------
    argument : str
        The argument's name (``"A"``).
    leading : tuple of int
        The stack's leading shape; matrix ``b`` is at its flat index ``b``.
    template : str, optional
        The phrase, ``{}`` standing for the name.
    """

    def __init__(self, argument: str, leading: tuple[int, ...], template: str = "{}") -> None:
        self.argument, self.leading, self.template = argument, leading, template

    def __len__(self) -> int:
        return int(np.prod(self.leading, dtype=np.int64))

    def __getitem__(self, b):
        if isinstance(b, slice):
            return [self[i] for i in range(*b.indices(len(self)))]
        from ._solve import name_of  # noqa: PLC0415 - the pipeline imports this module

        if not -len(self) <= b < len(self):
            raise IndexError(f"matrix {b} of a stack of {len(self)}")
        index = np.unravel_index(b % len(self), self.leading) if self.leading else ()
        return self.template.format(name_of(self.argument, tuple(int(i) for i in index)))

    def phrased(self, template: str) -> StackNames:
        """The same names inside `template` (``{}`` standing for each)."""
        return StackNames(self.argument, self.leading, template.format(self.template))


def _phrased(names: Sequence[str], template: str) -> Sequence[str]:
    """`names` inside `template`, lazily for :class:`StackNames`."""
    if isinstance(names, StackNames):
        return names.phrased(template)
    return [template.format(name) for name in names]


@dataclass
class ShortenedStack:
    """A stack of square factors for the kernel, and what undoes the QR."""

    #: ``(count, k, k)``: svd's ``X = R^*``, or hsvd's ``R`` (columns +1 first).
    factors: np.ndarray
    #: ``(count, k)`` int32: the signature of each factor's columns.
    signs: np.ndarray
    #: ``(count, mb, k)``: the Q factors (None without vectors).
    Q: np.ndarray | None
    #: ``(count, k)``: the column permutation of each QR.
    columns: np.ndarray
    #: ``(count,)``: the power-of-two shift of each matrix (its S carry it).
    exponents: np.ndarray
    #: svd of a wide A: the QR is of ``A^*``.
    transposed: bool


def shorten_stack(problem: str, stack: np.ndarray, names: Sequence[str], *,
                  signs: np.ndarray | None = None, compute_q: bool) -> ShortenedStack:
    """The row-sorted, column-pivoted QR of every matrix of `stack`
    ``(count, m, n)`` (`names` name them in messages), after the power-of-two
    shift of its columns (:func:`cljacobi.scaling.factor_shift`: ValueError
    for a zero column of an hsvd factor, LinAlgError for a range float64
    cannot hold).

    ``problem="svd"``: ``B = A`` (``A^*`` when ``m < n``), ``B[:, p] = Q R``,
    the factor ``X = R^*``, ``J = I``.  ``problem="hsvd"`` (``m > n``, with
    the ``(count, n)`` `signs`): :func:`cljacobi.shortening.shorten`, the
    factor R with its columns +1 first and ``J[p]`` alike.
    """
    from ._solve import ldexp  # noqa: PLC0415 - the pipeline imports this module

    count, m, n = stack.shape
    svd = problem == "svd"
    transposed = svd and m < n
    if transposed:  # B = A^*
        stack = np.swapaxes(stack, -1, -2).conj()
        names = _phrased(names, "{}^*")
    mb, k = stack.shape[-2:]
    # the shifts of all matrices from their column maxima at once
    exponents = factor_shifts(np.abs(stack).max(axis=-2), mb, names, zero_columns=svd)
    # every matrix's shift at once (ldexp is exact, elementwise: the same bits)
    scaled = ldexp(stack, exponents[:, None, None].astype(int))
    if svd:  # one pass over the stack but the LAPACK calls (pivoted_qr_stack)
        qr = pivoted_qr_stack(scaled, compute_q=compute_q)
        factors = np.swapaxes(qr.R, -1, -2).conj()
        return ShortenedStack(np.ascontiguousarray(factors), np.ones((count, k), np.int32),
                              qr.Q, qr.columns, exponents, transposed)
    # hsvd of tall factors: shorten's QR, then R's columns +1 first (stably)
    qr = pivoted_qr_stack(scaled, compute_q=compute_q)
    by_sign = np.argsort(-np.take_along_axis(signs, qr.columns, axis=1), axis=1, kind="stable")
    columns = np.take_along_axis(qr.columns, by_sign, axis=1)
    factors = np.take_along_axis(qr.R, by_sign[:, None, :], axis=2)
    factor_signs = np.take_along_axis(signs, columns, axis=1).astype(np.int32)
    return ShortenedStack(factors, factor_signs, qr.Q, columns, exponents, transposed)


def _rows_back(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``out[b][columns[b]] = rows[b]``: the rows put back in input order."""
    inverse = np.argsort(columns, axis=-1)
    return np.take_along_axis(rows, inverse[:, :, None], axis=1)


def svd_results(short: ShortenedStack, S: np.ndarray, U_x: np.ndarray | None,
                Vh_x: np.ndarray | None, names: Sequence[str], *, full_matrices: bool
                ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """``(U, S, Vh)`` of every A from the kernel's hsvd of ``X = R^*``
    (``X = U_x diag(S) Vh_x``, so ``R = Vh_x^* diag(S) U_x^*`` and
    ``B[:, p] = (Q Vh_x^*) diag(S) U_x^*``), as :mod:`cljacobi.svd` reads it."""
    from ._solve import complete  # noqa: PLC0415 - the pipeline imports this module

    S = unshift_rows(S, short.exponents, _phrased(names, "a singular value of {}"))
    if U_x is None:
        return None, S, None
    k = S.shape[-1]
    V_B = _rows_back(U_x, short.columns)
    U_B = short.Q @ np.swapaxes(Vh_x, -1, -2).conj()
    mb = short.Q.shape[1]
    if full_matrices and mb > k:
        U_B = np.stack([complete(U, np.ones(k, bool), mb) for U in U_B])
    if short.transposed:  # A = B^* = V_B diag(S) U_B^*
        return V_B, S, np.swapaxes(U_B, -1, -2).conj()
    return U_B, S, np.swapaxes(V_B, -1, -2).conj()


def tall_hsvd_results(short: ShortenedStack, S: np.ndarray, U_R: np.ndarray | None,
                      Vh_R: np.ndarray | None, names: Sequence[str]
                      ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """``(U, S, Vh)`` of every tall G from the kernel's hsvd of its R:
    ``U = Q U_R``, and the columns of ``Vh_R`` back in G's order."""
    S = unshift_rows(S, short.exponents,
                     _phrased(names, "a hyperbolic singular value of {}"))
    if U_R is None:
        return None, S, None
    inverse = np.argsort(short.columns, axis=-1)
    return short.Q @ U_R, S, np.take_along_axis(Vh_R, inverse[:, None, :], axis=2)
