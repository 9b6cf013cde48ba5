"""Tentative free resources for one scheduling pass, without copying the machine.

A scheduler that starts several jobs in one decision must place each on what the earlier
ones left. :class:`PassScratch` answers plain core requests from the model's free-core
index (``view.free_index``) through allocators that offer ``allocate_indexed(job, index,
view)`` (first-fit, best-fit), taking each placement on the index inside its scratch
section, which the pass undoes when it ends (a placement is taken on the index only when
a later indexed placement of the same pass needs it, so a pass that starts one job and
stops costs no update at all). Everything else (GPU/MIC units, allocators
that need the dense array such as seed 000's BALANCED and WEIGHTED, views without an
index) gets the classic scratch copy of ``view.free``, built only when first needed and
kept in step with every placement of the pass. Allocations from both paths are plain
allocations for the model to validate.
"""

from __future__ import annotations

from typing import Any

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


_INDEXED: dict[type, bool] = {}


def _indexed_path(allocator: Allocator) -> Any:
    """``allocator.allocate_indexed`` when it answers for the class's ``allocate``: a
    subclass that overrides ``allocate`` but not ``allocate_indexed`` keeps its own
    placement (the inherited index path would bypass it)."""
    kind = type(allocator)
    usable = _INDEXED.get(kind)
    if usable is None:
        def owner(name: str) -> type | None:
            return next((c for c in kind.__mro__ if name in vars(c)), None)

        allocate, indexed = owner("allocate"), owner("allocate_indexed")
        usable = indexed is not None and allocate is not None and issubclass(indexed, allocate)
        usable = _INDEXED[kind] = usable and getattr(allocator, "allocate_indexed", None) is not None
    return getattr(allocator, "allocate_indexed", None) if usable else None


class PassScratch:
    """What one pass has tentatively taken, on the index and (lazily) on a dense copy.

    Use it as a context manager: leaving the block undoes every index update of the pass.
    """

    __slots__ = ("_dense", "_journal", "_pending", "_unindexed", "exclusive", "index", "view")

    def __init__(self, view: View) -> None:
        self.view = view
        self.index = getattr(view, "free_index", None)
        self.exclusive = view.exclusive
        self._dense: np.ndarray | None = None
        self._pending: list[tuple[Job, Allocation]] = []
        self._unindexed: list[tuple[Job, Allocation]] = []
        self._journal: Any = None

    def __enter__(self) -> PassScratch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._journal is not None:
            journal, self._journal = self._journal, None
            journal.__exit__(*exc_info)

    def allocate(self, allocator: Allocator, job: Job) -> Allocation | None:
        """Ask ``allocator`` where ``job`` goes on what is left in this pass."""
        index = self.index
        if index is not None and job.unit == CORE_UNIT:
            indexed = _indexed_path(allocator)
            if indexed is not None:
                if self._unindexed:
                    if self._journal is None:
                        self._journal = index.scratch()
                        self._journal.__enter__()
                    for taken, allocation in self._unindexed:
                        index.take(as_runs(allocation), taken.unit[0], self.exclusive)
                    self._unindexed.clear()
                return indexed(job, index, self.view)  # type: ignore[no-any-return]
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
        if self.index is not None:  # taken on the index when an indexed placement needs it
            self._unindexed.append((job, allocation))


def pass_scratch(view: View) -> PassScratch:
    """A :class:`PassScratch` for ``view`` (a context manager undoing its index updates)."""
    return PassScratch(view)
