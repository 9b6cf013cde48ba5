"""The journal, scratch blocks and proposals of the free-core index (its base class).

A placement pass tries allocations on the live
:class:`~market_hpc.algorithms.free_index.FreeCoreIndex` and undoes them afterwards, or
leaves them as *proposals* that the model claims as it applies the matching starts.
Updates are ``(first, end, delta)`` pieces; adds commute, so undoing them in any order is
exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Self

from market_hpc.algorithms.node_runs import NodeRuns
from market_hpc.algorithms.run_splice import Piece


class IndexJournal:
    """Journal and proposals over ``_apply`` (a batch of pieces in one splice) and
    ``min_free``, which the index defines."""

    __slots__ = ("_claimed", "_journal", "_proposed")

    def __init__(self) -> None:
        self._journal: list[Piece] | None = None
        self._proposed: list[tuple[int, NodeRuns | None, list[Piece]]] = []
        self._claimed = 0

    def _apply(self, pieces: list[Piece]) -> None:
        raise NotImplementedError

    def min_free(self, first: int, end: int) -> int:
        """Fewest free cores over nodes ``first..end-1``."""
        raise NotImplementedError

    @contextmanager
    def scratch(self) -> Iterator[Self]:
        """Try placements on the index; every update made inside is undone on exit."""
        outer = self.begin_journal()
        try:
            yield self
        finally:
            self.undo(self.end_journal(outer))

    def begin_journal(self) -> list[Piece] | None:
        """Start recording updates (returns the enclosing journal, for ``end_journal``)."""
        self.settle()
        outer = self._journal
        self._journal = []
        return outer

    def end_journal(self, outer: list[Piece] | None) -> list[Piece]:
        """Stop recording; return the updates made since ``begin_journal``."""
        journal, self._journal = self._journal or [], outer
        return journal

    def undo(self, updates: list[Piece]) -> None:
        """Revert ``add`` updates (unrecorded: adds commute, so any order is exact)."""
        journal, self._journal = self._journal, None
        batch: list[Piece] = []
        for first, end, delta in updates:  # one splice per sorted, disjoint stretch
            if batch and first < batch[-1][1]:
                self._apply(batch)
                batch = []
            batch.append((first, end, -delta))
        if batch:
            self._apply(batch)
        self._journal = journal

    # -------------------------------------------------------------- proposals
    # A scheduling pass leaves the placements it tried on the index as *proposals* instead
    # of undoing them; the model claims each one as it applies the matching start (the
    # index then already holds it) and settles (undoes) the rest at the end of the
    # decision. Any placement query settles first, so nobody else ever sees a proposal.
    def propose(self, proposals: list[tuple[int, NodeRuns | None, list[Piece]]]) -> None:
        """Leave ``(job_id, runs, updates)`` placements on the index for ``claim``
        (``runs`` is ``None`` when the placement may not be claimed)."""
        self.settle()
        self._proposed = proposals
        self._claimed = 0

    def claim(self, job_id: int, runs: NodeRuns) -> bool:
        """Whether the next proposal is exactly ``runs`` for ``job_id`` (and still leaves
        no node short); if so it now belongs to the caller. Otherwise settle everything."""
        proposed = self._proposed
        if proposed and self._claimed < len(proposed):
            proposal_job, proposal_runs, updates = proposed[self._claimed]
            if proposal_job == job_id and proposal_runs is runs:
                self._claimed += 1
                if all(self.min_free(first, end) >= 0 for first, end, _ in updates):
                    return True
                self.undo(updates)
                self.settle()
                return False
        self.settle()
        return False

    def settle(self) -> None:
        """Undo every proposal not claimed."""
        proposed = self._proposed
        if proposed:
            self._proposed = []
            for _, _, updates in proposed[self._claimed :]:
                self.undo(updates)
            self._claimed = 0
