"""Tentative free resources for one scheduling pass, without copying the machine.

A scheduler that starts several jobs in one decision must place each on what the earlier
ones left. :class:`PassScratch` answers plain core requests from the model's free-core
index (``view.free_index``) through allocators that offer ``allocate_indexed(job, index,
view)`` (first-fit, best-fit), taking each placement on the index inside its scratch
section, which the pass undoes when it ends. Everything else (GPU/MIC units, allocators
that need the dense array such as seed 000's BALANCED and WEIGHTED, views without an
index) gets the classic scratch copy of ``view.free``, built only when first needed and
kept in step with every placement of the pass. Allocations from both paths are plain
allocations for the model to validate.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from market_hpc.algorithms.node_runs import as_runs
from market_hpc.domain.job import Job
from market_hpc.policies.base import Allocation, Allocator, View

CORE_UNIT = (1, 0, 0, 0)


def take_dense(free: np.ndarray, job: Job, allocation: Allocation, exclusive: bool) -> None:
    """Subtract an allocation from a scratch copy of the free array."""
    if job.unit == CORE_UNIT and not exclusive:
        for node, units in allocation:
            free[node, 0] -= units
        return
    pairs = np.array(tuple(allocation), dtype=np.int64)
    if exclusive:
        free[pairs[:, 0]] = 0
    else:
        free[pairs[:, 0]] -= pairs[:, 1, None] * np.asarray(job.unit, dtype=np.int64)


class PassScratch:
    """What one pass has tentatively taken, on the index and (lazily) on a dense copy."""

    __slots__ = ("_dense", "_pending", "exclusive", "index", "view")

    def __init__(self, view: View) -> None:
        self.view = view
        self.index = getattr(view, "free_index", None)
        self.exclusive = view.exclusive
        self._dense: np.ndarray | None = None
        self._pending: list[tuple[Job, Allocation]] = []

    def allocate(self, allocator: Allocator, job: Job) -> Allocation | None:
        """Ask ``allocator`` where ``job`` goes on what is left in this pass."""
        if self.index is not None and job.unit == CORE_UNIT:
            indexed = getattr(allocator, "allocate_indexed", None)
            if indexed is not None:
                return indexed(job, self.index, self.view)  # type: ignore[no-any-return]
        return allocator.allocate(job, self.dense(), self.view)

    def dense(self) -> np.ndarray:
        """The scratch free array (a copy of ``view.free`` minus this pass's placements)."""
        if self._dense is None:
            self._dense = self.view.free.copy()
            for job, allocation in self._pending:
                take_dense(self._dense, job, allocation, self.exclusive)
            self._pending.clear()
        return self._dense

    def take(self, job: Job, allocation: Allocation) -> None:
        """Record that ``job`` tentatively holds ``allocation`` for the rest of the pass."""
        if self._dense is not None:
            take_dense(self._dense, job, allocation, self.exclusive)
        else:
            self._pending.append((job, allocation))
        if self.index is not None:
            self.index.take(as_runs(allocation), job.unit[0], self.exclusive)


@contextmanager
def pass_scratch(view: View) -> Iterator[PassScratch]:
    """A :class:`PassScratch` whose index updates are undone when the block ends."""
    scratch = PassScratch(view)
    if scratch.index is None:
        yield scratch
        return
    with scratch.index.scratch():
        yield scratch
