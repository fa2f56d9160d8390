"""The Jacobi options every public solver takes, checked in one place.

``strategy``, ``rotation`` and ``sort_diagonal`` select the parallel pivot
strategy (:mod:`cljacobi.strategies`), the rotation algorithm of Zhou & Brent
(1997), Sect. 2, and the per-sweep sort of the packed diagonal of Novaković &
Singer (2011), Sect. 4.  Every public function (``eig_indefinite``, ``hsvd``,
``svd``, ...) passes its arguments through :func:`resolve_options` before it
looks at the arrays (scipy's order), so the messages and the defaults are the
same everywhere.

Defaults (``strategy="auto"``, ``rotation=None``) come from
:data:`DEFAULTS`, per kernel variant; the measurements behind them are in
``bench/results/strategies-*.md`` (``bench/bench_strategies.py``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .strategies import STRATEGIES
from .validation import check_flag

__all__ = [
    "DEFAULTS",
    "ROTATIONS",
    "STRATEGY_CHOICES",
    "JacobiOptions",
    "resolve_options",
]

#: Accepted values of ``strategy=``: the strategies of
#: :data:`cljacobi.strategies.STRATEGIES` and ``"auto"``.
STRATEGY_CHOICES: tuple[str, ...] = (*STRATEGIES, "auto")

#: Accepted values of ``rotation=`` (``None`` picks the default): the rotation
#: algorithms 1, 2, 3 of Zhou & Brent (1997), Sect. 2.
ROTATIONS: tuple[int, ...] = (1, 2, 3)

#: Default ``(strategy, rotation)`` per kernel variant.
#:
#: ``"pointwise"``: Mantharam-Eberlein with rotation algorithm 2 (and the
#: packed diagonal sorted after every sweep), chosen from
#: ``bench/results/strategies-pocl-cpu-2026-11-22.md`` (PoCL CPU device, 3
#: seeds per cell; sweep counts depend on the arithmetic, not on the device,
#: and the GPU run of ``bench/bench_strategies.py`` at larger n is to confirm
#: them).  Mean sweeps, sorted diagonal (a sweep is r steps for ``mm``, r - 1
#: for the others, so ``mm`` also costs n/(n-1) more per sweep):
#:
#: ==================  =====  =====  =====  ======  ======  =====  =====
#: case                 mm/1   mm/2   me/1   me/2    ring/2  rr/1   rr/2
#: ==================  =====  =====  =====  ======  ======  =====  =====
#: J = I, n = 64         8.0    8.7    7.3    7.3     8.3    10.0   10.0
#: J = I, n = 128        9.0    9.0    8.0    8.0     9.7    10.7   11.7
#: J = I, n = 256       10.0   10.0    8.7    8.3    10.0    11.7   13.3
#: p = n/2, n = 128     10.0   10.3    8.0    8.0     9.0    11.0   12.0
#: p = n/2, n = 256     11.7   11.0    9.0    9.0    10.0    13.0   14.0
#: p = 0, n = 256       10.0   10.0    8.3    8.0     9.0    11.0   12.0
#: ==================  =====  =====  =====  ======  ======  =====  =====
#:
#: ``me/2`` is the best, or within 0.3 sweeps of the best (``me/1``), in every
#: column of the results file.
#: Rotation 2 costs nothing over 1 (an exchange of two packed-diagonal
#: entries) and keeps the sweeps low when the sort is off (``me/1`` unsorted:
#: 8.7, 9.3, 10.3 sweeps for J = I, n = 64, 128, 256; ``me/2``: 8.0, 8.0,
#: 8.0).  Rotation 3 gives bitwise the same norms as 2 (for even r) and moves
#: data for every exchange, so 2 is preferred.
DEFAULTS: dict[str, tuple[str, int]] = {
    "pointwise": ("me", 2),
}


@dataclass(frozen=True)
class JacobiOptions:
    """Resolved Jacobi options (no ``"auto"``, no ``None``).

    Attributes
    ----------
    strategy : str
        One of :data:`cljacobi.strategies.STRATEGIES`.
    rotation : int
        1, 2 or 3.
    sort_diagonal : bool
        Sort the packed diagonal before the first and after every sweep.
    """

    strategy: str
    rotation: int
    sort_diagonal: bool


def _allowed(values: tuple[object, ...]) -> str:
    return ", ".join(repr(v) for v in values)


def resolve_options(
    strategy: object = "auto",
    rotation: object = None,
    sort_diagonal: object = True,
    *,
    variant: str = "pointwise",
) -> JacobiOptions:
    """Check and resolve ``strategy``, ``rotation`` and ``sort_diagonal``.

    Parameters
    ----------
    strategy : {"mm", "me", "ring", "round-robin", "auto"}
        Parallel pivot strategy (docs/design.md, Appendix A): modified modulus
        (Novaković & Singer 2011, Sect. 2 and 4), Mantharam-Eberlein,
        Zhou-Brent ring ordering (their Sect. 4), Brent-Luk round-robin.
        ``"auto"``: the default of `variant` in :data:`DEFAULTS`.
    rotation : {1, 2, 3} or None
        Rotation algorithm of Zhou & Brent (1997), Sect. 2: 1 plain (the
        larger norm grows where it is), 2 exchange the pair so that its first
        position receives the larger eigenvalue estimate ``j d``, then rotate,
        3 Nash's rotation with the same effect and no exchange.  For
        hyperbolic pairs all three are the same rotation.  ``None``: the
        default of `variant`.
    sort_diagonal : bool
        Sort the packed diagonal ``(d, rho, j)`` before the first and after
        every sweep (positive part descending in ``d``, negative part
        ascending; Novaković & Singer 2011, Sect. 4).  False keeps the
        positions that the rotations leave.
    variant : str
        Kernel variant whose defaults apply (``"pointwise"``).

    Returns
    -------
    JacobiOptions

    Raises
    ------
    ValueError
        Unknown `strategy` or `rotation` (the message lists the allowed
        values) or unknown `variant`.
    TypeError
        `sort_diagonal` not a bool, numpy bool, 0 or 1
        (:func:`cljacobi.validation.check_flag`).
    """
    if variant not in DEFAULTS:
        raise ValueError(f"unknown variant {variant!r}; allowed: {_allowed(tuple(DEFAULTS))}")
    default_strategy, default_rotation = DEFAULTS[variant]
    if not isinstance(strategy, str) or strategy not in STRATEGY_CHOICES:
        raise ValueError(
            f"unknown strategy {strategy!r}; allowed: {_allowed(STRATEGY_CHOICES)}"
        )
    if rotation is None:
        rotation = default_rotation
    elif (
        isinstance(rotation, (bool, np.bool_))
        or not isinstance(rotation, numbers.Integral)
        or int(rotation) not in ROTATIONS
    ):
        raise ValueError(
            f"unknown rotation {rotation!r}; allowed: {_allowed(ROTATIONS)} "
            "(Zhou & Brent's rotation algorithms) or None for the default"
        )
    return JacobiOptions(
        strategy=default_strategy if strategy == "auto" else strategy,
        rotation=int(rotation),
        sort_diagonal=check_flag(sort_diagonal, "sort_diagonal"),
    )
