"""The finishing certificate of the blocked variants: the pairs of columns that
may still fail the pointwise relative orthogonality test, found from fresh Gram
matrices.

The blocked sweeps end when one makes no big block transformation; pointwise
sweeps then finish, so that every pair of columns is judged on the columns
themselves (the Gram matrices square the condition numbers, and a nearly
dependent pair cancels in them).  A pointwise sweep reads every column r - 1
times, for the dot products of its pairs, and there it rotates a few dozen
pairs (49 of 8.4 million at real n = 4096 on the paper's matrices,
``bench/results/eig-H200-2026-11-26-final.json``).

The certificate computes those dot products once: the blocked Gram kernel
(``cjac_block_gram``, with the tensor cores where the blocked run used them)
over one outer sweep's table, where every pair of blocks meets once, then
``cjac_block_certify`` (``templates/blocked.cl.mako``) tests every pair with
eq. (2.3) of Novaković & Singer (2011), ``tol = sqrt(m) eps``.  A fresh Gram
entry is the dot product ``cjac_step`` computes, summed in another order, so a
pair the test passes is orthogonal to within the rounding of its dot product,
as ``cjac_step`` would find it up to that order's rounding; the others are
the candidates, which :class:`cljacobi.host.pointwise.PointwiseHSVD` hands to
``cjac_step`` itself (docs/design.md, "The certified finishing sweep").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyopencl as cl

from .launch import enqueue_kernel, set_scalar_arg

__all__ = ["FinishingCertificate", "certificate_mask_bytes"]


def _mask_words(block_width: int) -> int:
    """32-bit words of a block pair's bit mask: one bit per entry of its
    K x K Gram matrix (K = 2 w; CERTIFY_WORDS of the kernel)."""
    K = 2 * block_width
    return -(-K * K // 32)


def certificate_mask_bytes(steps: int, slots: int, block_width: int) -> int:
    """Bytes of the candidates' bit masks, a mask per step and block pair."""
    return 4 * steps * slots * _mask_words(block_width)


class FinishingCertificate:
    """The candidate pairs of the device factor, by the blocked kernels.

    Parameters
    ----------
    queue : pyopencl.CommandQueue
        The blocked run's queue.
    gram, certify : pyopencl.Kernel
        ``cjac_block_gram`` bound to the factor, to the outer table and to the
        partial Gram buffer, and ``cjac_block_certify`` bound to that buffer,
        to `masks` and to `found`; both take the step at `gram_step` and
        `certify_step`.
    ranges : dict
        (global, local) sizes of the ``"gram"`` and ``"rotate"`` launches
        (:meth:`cljacobi.host.blocked.BlockedPlan.launches`; the certify
        kernel runs in the rotate kernel's work-groups).
    table : numpy.ndarray
        The outer table of one sweep, ``steps x slots x 2`` block indices:
        every block once a step, every pair of blocks once a sweep.
    block_width : int
    masks, found : pyopencl.Buffer
        ``certificate_mask_bytes(steps, slots, block_width)`` bytes, and an
        int per step and slot.
    buffers : tuple of pyopencl.Buffer
        The other buffers the kernels are bound to (the outer table, the
        partial Gram matrices), kept alive with them: a kernel holds no
        reference to its arguments.
    """

    def __init__(self, queue: cl.CommandQueue, *, gram: cl.Kernel, gram_step: int,
                 certify: cl.Kernel, certify_step: int,
                 ranges: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
                 table: np.ndarray, block_width: int, masks: cl.Buffer,
                 found: cl.Buffer, buffers: tuple[cl.Buffer, ...]) -> None:
        self.queue = queue
        self._launches = [(gram, gram_step, *ranges["gram"]),
                          (certify, certify_step, *ranges["rotate"])]
        self.table = np.asarray(table, dtype=np.int64)
        self.block_width = block_width
        self._masks, self._found = masks, found
        self._buffers = buffers

    @property
    def steps(self) -> int:
        return self.table.shape[0]

    @property
    def slots(self) -> int:
        return self.table.shape[1]

    def candidates(self, launched: Callable[[], None] | None = None) -> np.ndarray:
        """The pairs that may fail the test, ``c x 2`` physical columns
        ``i < j`` in increasing order (rows sorted): every pair of columns
        is tested once.  `launched` is called once the certificate's kernels
        are enqueued, before the host waits for them."""
        for step in range(self.steps):
            for kernel, position, global_size, local_size in self._launches:
                set_scalar_arg(kernel, position, np.int32(step))
                enqueue_kernel(self.queue, kernel, global_size, local_size)
        if launched is not None:
            launched()
        found = np.empty((self.steps, self.slots), dtype=np.int32)
        cl.enqueue_copy(self.queue, found, self._found)
        if not found.any():
            return np.empty((0, 2), dtype=np.int64)
        K = 2 * self.block_width
        masks = np.empty((self.steps, self.slots, _mask_words(self.block_width)),
                         dtype=np.uint32)
        cl.enqueue_copy(self.queue, masks, self._masks)
        steps, slots = np.nonzero(found)
        # bit e % 32 of word e // 32 is entry e = a * K + b of the block pair
        bits = np.unpackbits(masks[steps, slots].view(np.uint8), axis=1, bitorder="little")
        which, entries = np.nonzero(bits[:, :K * K])
        a, b = np.divmod(entries, K)
        blocks = self.table[steps[which], slots[which]]
        w = self.block_width
        first = np.where(a < w, blocks[:, 0] * w + a, blocks[:, 1] * w + a - w)
        second = np.where(b < w, blocks[:, 0] * w + b, blocks[:, 1] * w + b - w)
        pairs = np.stack([np.minimum(first, second), np.maximum(first, second)], axis=1)
        return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
