"""Tentative free resources for one scheduling pass, without copying the machine.

A scheduler that starts several jobs in one decision must place each on what the earlier
ones left. :class:`PassScratch` answers plain core requests from the model's free-core
index (``view.free_index``) through allocators that offer ``allocate_indexed(job, index,
view)`` (first-fit, best-fit), taking each placement on the index only when a later
indexed placement of the same pass needs it (a pass that starts one job and stops costs
no update at all). Placements taken are left on the index as proposals the model claims
when it applies the starts, so a start costs one index update, not three. Everything else
(GPU/MIC units, allocators that need the dense array such as the heterogeneity family's
BALANCED and WEIGHTED, views without an index) gets the classic scratch copy of
``view.free``, built only when first needed and kept in step with every placement of the
pass. Allocations from both paths are plain
allocations for the model to validate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Self

import numpy as np

from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.node_runs import as_runs
from market_hpc.domain.job import CORE_UNIT, Job
from market_hpc.policies.base import (
    Allocation,
    Allocator,
    NodeRuns,
    View,
    fast_view,
    indexed,
)


def take_dense(free: np.ndarray, job: Job, allocation: Allocation, exclusive: bool) -> None:
    """Subtract an allocation from a scratch copy of the free array."""
    core_job = job.unit == CORE_UNIT
    if core_job and not exclusive and len(allocation) <= 8:
        for node, units in allocation:
            free[node, 0] -= units
        return
    pairs = np.array(tuple(allocation), dtype=np.int64)
    if exclusive:
        free[pairs[:, 0]] = 0
    elif core_job:
        free[pairs[:, 0], 0] -= pairs[:, 1]
    else:
        free[pairs[:, 0]] -= pairs[:, 1, None] * np.asarray(job.unit, dtype=np.int64)


_INDEXED: dict[type, bool] = {}
IndexedPlacement = Callable[[Job, FreeCoreIndex, View], NodeRuns | None]


def _indexed_path(allocator: Allocator) -> IndexedPlacement | None:
    """``allocator.allocate_indexed`` (an :class:`~market_hpc.policies.base.IndexedAllocator`)
    when it answers for the class's ``allocate``: a subclass that overrides ``allocate``
    but not ``allocate_indexed`` keeps its own placement (the inherited index path would
    bypass it)."""
    kind = type(allocator)
    usable = _INDEXED.get(kind)
    on_index = indexed(allocator)
    if usable is None:

        def owner(name: str) -> type | None:
            return next((c for c in kind.__mro__ if name in vars(c)), None)

        allocate, placed = owner("allocate"), owner("allocate_indexed")
        usable = placed is not None and allocate is not None and issubclass(placed, allocate)
        usable = _INDEXED[kind] = usable and on_index is not None
    return on_index.allocate_indexed if usable and on_index is not None else None


class PassScratch:
    """What one pass has tentatively taken, on the index and (lazily) on a dense copy.

    Use it as a context manager. Placements taken on the index are left there as
    *proposals* when the block ends (``FreeCoreIndex.propose``): the model claims each as
    it applies the matching start and settles (undoes) the rest, and any later placement
    query settles first. An exception in the block undoes them at once.
    """

    __slots__ = ("_dense", "_pending", "_proposals", "_unindexed", "exclusive", "index", "view")

    def __init__(self, view: View) -> None:
        self.view = view
        indexed_view = fast_view(view, "free_index")
        self.index = None if indexed_view is None else indexed_view.free_index
        self.exclusive = view.exclusive
        self._dense: np.ndarray | None = None
        self._pending: list[tuple[Job, Allocation]] = []
        self._unindexed: list[tuple[Job, Allocation | NodeRuns]] = []  # NodeRuns too: see allocate
        self._proposals: list[tuple[int, NodeRuns | None, list[tuple[int, int, int]]]] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        if not self._proposals:
            return
        assert self.index is not None
        if exc_type is None:  # the model claims them as it applies the starts
            self.index.propose(self._proposals)
        else:
            for _, _, updates in self._proposals:
                self.index.undo(updates)
        self._proposals = []

    def allocate(self, allocator: Allocator, job: Job) -> Allocation | None:
        """Ask ``allocator`` where ``job`` goes on what is left in this pass."""
        index = self.index
        if index is not None and job.unit == CORE_UNIT:
            usable = _INDEXED.get(type(allocator))  # known classes: no protocol check
            if usable is None:
                placement = _indexed_path(allocator)
            else:
                # (no typing.cast here: a Python call per placement)
                placement = allocator.allocate_indexed if usable else None  # type: ignore[attr-defined]
            if placement is not None:
                if self._unindexed:
                    self._take_on_index(index)
                return placement(job, index, self.view)  # type: ignore[return-value]  # NodeRuns reads as an Allocation
        return allocator.allocate(job, self.dense(), self.view)

    def _take_on_index(self, index: FreeCoreIndex) -> None:
        for job, allocation in self._unindexed:
            runs = as_runs(allocation)
            outer = index.begin_journal()
            index.take(runs, job.unit[0], self.exclusive)
            updates = index.end_journal(outer)
            # The model applies a plain core start exactly as this take: it may claim it.
            claimable = runs is allocation and job.unit == CORE_UNIT and not self.exclusive
            self._proposals.append((job.job_id, runs if claimable else None, updates))
        self._unindexed.clear()

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
        if self.index is not None:  # taken on the index when an indexed placement needs it
            self._unindexed.append((job, allocation))
