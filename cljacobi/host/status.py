"""The status bits of the sweep kernels, declared once for the host and the templates.

Every work-group of a sweep kernel ORs these bits into its status word; after a
sweep ``cjac_sweep_status`` (``templates/pointwise.cl.mako``) ORs the words
and the host reads the result (Novaković & Singer 2011, eq. (4.2); the
measure of a big rotation is that of ``docs/design.md``, Appendix B).  The
pointwise and the blocked kernels set them; ``templates/arith.cl.mako``
renders :data:`STATUS_DEFINES` (``CJAC_ROTATED``, ...) into every program.
"""

from __future__ import annotations

import enum

from .signatures import c_defines

__all__ = ["STATUS_DEFINES", "Status"]


class Status(enum.IntFlag):
    """Bits of a work-group's status word (``CJAC_<name>`` in the kernels)."""

    #: A rotation was applied.
    ROTATED = 1
    #: A big rotation was applied: one that moves the shorter column by more
    #: than sqrt(eps)/2 of its norm; a sweep without one ends the run.
    BIG = 2
    #: A hyperbolic pair was numerically dependent and left unrotated.
    BROKEN = 4
    #: A column whose squared norm is below the normal range met one it is
    #: not orthogonal to (left unrotated).
    TINY_COLUMN = 8


#: ``#define CJAC_ROTATED 1`` ... for the templates.
STATUS_DEFINES = c_defines({f"CJAC_{name}": int(flag)
                            for name, flag in Status.__members__.items()})
