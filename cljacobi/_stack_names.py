"""The names of a stack's matrices in the batched route's messages."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["StackNames"]


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
        from ._solve import name_of

        if not -len(self) <= b < len(self):
            raise IndexError(f"matrix {b} of a stack of {len(self)}")
        index = np.unravel_index(b % len(self), self.leading) if self.leading else ()
        return self.template.format(name_of(self.argument, tuple(int(i) for i in index)))

    def phrased(self, template: str) -> StackNames:
        """The same names inside `template` (``{}`` standing for each)."""
        return StackNames(self.argument, self.leading, template.format(self.template))
