"""Free-core index: first-fit and best-fit placement touching only the nodes they return.

The free cores of ``n`` nodes are kept as *runs*: maximal ranges of consecutive nodes
with the same free count (every node is in exactly one run). Two sorted structures index
the runs: by first node (first-fit walks them in node order) and by ``(free, first
node)`` (best-fit walks them tightest first; the single-unit first-fit takes the node
with the most free cores, as :func:`market_hpc.algorithms.allocation.first_fit` does).
Adjacent runs never share a count, so between two runs with free cores there is at most
one full run: a query visits O(runs it returns) runs, whatever the node count. An update
of a node range touches the runs in that range only.

A placement pass tries allocations on the live index inside :meth:`FreeCoreIndex.scratch`
and the index is rolled back when the pass ends (cost: the updates it made, never a copy).
Placements are those of the array functions in ``allocation.py`` bit for bit (same
nodes, same units), for plain core units; other resources are not indexed.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from market_hpc.algorithms.node_runs import NodeRuns, Run


class FreeCoreIndex:
    """Free cores per node as runs of equal counts, indexed for placement.

    >>> index = FreeCoreIndex([2, 2, 0, 1, 4])
    >>> index.first_fit(5).runs
    ((0, 2, 2), (3, 1, 1))
    >>> index.first_fit(1).runs       # one unit: the node with the most free cores
    ((4, 1, 1),)
    >>> index.best_fit(3).runs        # tightest first: node 3 (1 free), then nodes 0..1
    ((0, 1, 2), (3, 1, 1))
    >>> index.add(0, 2, -2); index.runs()
    [(0, 3, 0), (3, 1, 1), (4, 1, 4)]
    >>> index.total, index.first_fit(6) is None
    (5, True)
    """

    __slots__ = ("_by_value", "_claimed", "_journal", "_proposed", "_starts", "_value", "fresh", "n_nodes",
                 "total")

    def __init__(self, free_cores: Sequence[int]) -> None:
        self.n_nodes = len(free_cores)
        if self.n_nodes == 0:
            raise ValueError("a free-core index needs at least one node")
        value: dict[int, int] = {}
        previous = None
        for node, free in enumerate(free_cores):
            free = int(free)
            if free != previous:
                value[node] = free
                previous = free
        self._value = value
        self._starts: list[int] = list(value)
        self._by_value: list[tuple[int, int]] = sorted((free, first) for first, free in value.items())
        self.total = int(sum(int(f) for f in free_cores))
        self._journal: list[tuple[int, int, int]] | None = None
        self._proposed: list[tuple[int, NodeRuns | None, list[tuple[int, int, int]]]] = []
        self._claimed = 0
        # The last placement ``first_fit``/``best_fit`` returned, until the index changes.
        self.fresh: NodeRuns | None = None

    # ------------------------------------------------------------------ reading
    def runs(self) -> list[Run]:
        """All runs ``(first, count, free)`` in node order (for tests and displays)."""
        self.settle()
        starts = self._starts
        ends = [*starts[1:], self.n_nodes]
        return [(s, e - s, self._value[s]) for s, e in zip(starts, ends)]

    def free_of(self, node: int) -> int:
        """Free cores of one node."""
        starts = self._starts
        return self._value[starts[bisect_right(starts, node) - 1]]

    def min_free(self, first: int, end: int) -> int:
        """Fewest free cores over nodes ``first..end-1``."""
        starts, value = self._starts, self._value
        i = bisect_right(starts, first) - 1
        lowest = value[starts[i]]
        for k in range(i + 1, bisect_left(starts, end)):
            lowest = min(lowest, value[starts[k]])
        return lowest

    def _end(self, start: int) -> int:
        starts = self._starts
        i = bisect_right(starts, start)
        return starts[i] if i < len(starts) else self.n_nodes

    def _in_node_order(self) -> Iterator[tuple[int, int, int]]:
        value = self._value
        previous = -1
        for start in self._starts:
            if previous >= 0:
                yield previous, start, value[previous]
            previous = start
        yield previous, self.n_nodes, value[previous]

    # ---------------------------------------------------------------- placement
    def first_fit(self, units: int) -> NodeRuns | None:
        """Lowest-index nodes first; one unit goes to the node with the most free cores
        (lowest index among ties), as ``allocation.first_fit``. ``None`` if it cannot fit."""
        if self._proposed:
            self.settle()
        if units > self.total:
            return None
        if units == 1:
            by_value = self._by_value
            most = by_value[-1][0]
            if most <= 0:
                return None
            first = by_value[bisect_left(by_value, (most, -1))][1]
            placed: NodeRuns | None = NodeRuns(((first, 1, 1),))
        else:
            placed = self._place(((s, e, v) for s, e, v in self._in_node_order() if v > 0), units, sort=False)
        self.fresh = placed
        return placed

    def best_fit(self, units: int) -> NodeRuns | None:
        """Nodes with the fewest free cores first (ties by index), as ``allocation.best_fit``."""
        if self._proposed:
            self.settle()
        if units > self.total:
            return None
        by_value = self._by_value
        runs = ((s, self._end(s), v) for v, s in by_value[bisect_left(by_value, (1, -1)):])
        placed = self._place(runs, units, sort=True)
        self.fresh = placed
        return placed

    @staticmethod
    def _place(runs: Iterator[tuple[int, int, int]], units: int, sort: bool) -> NodeRuns | None:
        need = units
        out: list[Run] = []
        for start, end, free in runs:
            count = end - start
            if count * free <= need:
                out.append((start, count, free))
                need -= count * free
            else:
                full, rest = divmod(need, free)
                if full:
                    out.append((start, full, free))
                if rest:
                    out.append((start + full, 1, rest))
                need = 0
            if need == 0:
                if sort:
                    out.sort()
                return NodeRuns(out)
        return None

    # ------------------------------------------------------------------ updates
    def add(self, first: int, end: int, delta: int) -> None:
        """Add ``delta`` free cores to each node ``first..end-1``."""
        if delta == 0 or first >= end:
            return
        self.fresh = None
        starts = self._starts
        i = bisect_right(starts, first) - 1
        if i + 1 == len(starts) or end <= starts[i + 1]:
            self._add_within(i, starts[i], first, end, delta)  # the usual case: one run changes
        else:
            self._add_across(first, end, delta)
        self.total += delta * (end - first)
        if self._journal is not None:
            self._journal.append((first, end, delta))

    def _add_within(self, i: int, start: int, first: int, end: int, delta: int) -> None:
        """``add`` on nodes ``first..end-1`` inside the ``i``-th run (which begins at ``start``)."""
        starts, value, by_value = self._starts, self._value, self._by_value
        old = value[start]
        new = old + delta
        run_end = starts[i + 1] if i + 1 < len(starts) else self.n_nodes
        if end < run_end:  # the rest of the run keeps its count
            starts.insert(i + 1, end)
            value[end] = old
            insort(by_value, (old, end))
            merge_right = False
        else:
            merge_right = end < self.n_nodes and value[end] == new
        if merge_right:  # the next run absorbs the changed nodes
            del by_value[bisect_left(by_value, (new, end))]
            del value[end]
        if first > start:  # the run's head keeps its count; the changed nodes start a run
            value[first] = new
            insort(by_value, (new, first))
            if merge_right:
                starts[i + 1] = first
            else:
                starts.insert(i + 1, first)
            return
        del by_value[bisect_left(by_value, (old, start))]
        if i > 0 and value[starts[i - 1]] == new:  # the previous run absorbs them
            del value[start]
            del starts[i:i + 2 if merge_right else i + 1]
            return
        value[start] = new
        insort(by_value, (new, start))
        if merge_right:
            del starts[i + 1]

    def _add_across(self, first: int, end: int, delta: int) -> None:
        """``add`` on nodes ``first..end-1`` spanning several runs."""
        starts, value, by_value = self._starts, self._value, self._by_value
        # Make runs start at ``first`` and ``end`` (node 0 always starts a run).
        if first in value:
            i = bisect_left(starts, first)
        else:
            i = bisect_right(starts, first)
            free = value[starts[i - 1]]
            starts.insert(i, first)
            value[first] = free
            insort(by_value, (free, first))
        n_runs = len(starts)
        if end >= self.n_nodes:
            j = n_runs
        elif end in value:
            j = bisect_left(starts, end, i)
        else:
            j = bisect_right(starts, end, i)
            free = value[starts[j - 1]]
            starts.insert(j, end)
            value[end] = free
            insort(by_value, (free, end))
            n_runs += 1
        for k in range(i, j):
            start = starts[k]
            old = value[start]
            del by_value[bisect_left(by_value, (old, start))]
            value[start] = new = old + delta
            insort(by_value, (new, start))
        # Runs inside the range still differ from each other; only the edges may merge.
        if j < n_runs and value[starts[j]] == value[starts[j - 1]]:
            self._drop_start(j)
        if i > 0 and value[starts[i]] == value[starts[i - 1]]:
            self._drop_start(i)

    def is_fresh(self, runs: object) -> bool:
        """Whether ``runs`` is the last placement ``first_fit``/``best_fit`` returned and
        the index has not changed since: it then fits the free cores as they are now."""
        return runs is self.fresh and runs is not None

    def _drop_start(self, k: int) -> None:
        start = self._starts.pop(k)
        free = self._value.pop(start)
        by_value = self._by_value
        del by_value[bisect_left(by_value, (free, start))]

    def clear(self, first: int, end: int) -> None:
        """Set the free cores of nodes ``first..end-1`` to zero (run by run)."""
        starts, value = self._starts, self._value
        i = bisect_right(starts, first) - 1
        pieces = [(max(starts[i], first), value[starts[i]])]
        pieces.extend((starts[k], value[starts[k]]) for k in range(i + 1, bisect_left(starts, end)))
        bounds = [start for start, _ in pieces[1:]] + [end]
        for (start, free), stop in zip(pieces, bounds):
            if free:
                self.add(start, stop, -free)

    def give(self, first: int, free_cores: Sequence[int]) -> None:
        """Add ``free_cores[i]`` free cores to node ``first + i`` (equal neighbours in one update)."""
        start = first
        pending = None
        for node, amount in enumerate(free_cores, first):
            if amount != pending:
                if pending:
                    self.add(start, node, pending)
                start, pending = node, amount
        if pending:
            self.add(start, first + len(free_cores), pending)

    def take(self, allocation: NodeRuns, cores_per_unit: int = 1, whole_nodes: bool = False) -> None:
        """Remove an allocation's cores (``whole_nodes``: every core of its nodes)."""
        for first, count, units in allocation.runs:
            if whole_nodes:
                self.clear(first, first + count)
            else:
                self.add(first, first + count, -units * cores_per_unit)

    @contextmanager
    def scratch(self) -> Iterator[FreeCoreIndex]:
        """Try placements on the index; every update made inside is undone on exit."""
        outer = self.begin_journal()
        try:
            yield self
        finally:
            self.undo(self.end_journal(outer))

    def begin_journal(self) -> list[tuple[int, int, int]] | None:
        """Start recording updates (returns the enclosing journal, for ``end_journal``)."""
        self.settle()
        outer = self._journal
        self._journal = []
        return outer

    def end_journal(self, outer: list[tuple[int, int, int]] | None) -> list[tuple[int, int, int]]:
        """Stop recording; return the updates made since ``begin_journal``."""
        journal, self._journal = self._journal or [], outer
        return journal

    def undo(self, updates: list[tuple[int, int, int]]) -> None:
        """Revert ``add`` updates (unrecorded: adds commute, so any order is exact)."""
        journal, self._journal = self._journal, None
        for first, end, delta in reversed(updates):
            self.add(first, end, -delta)
        self._journal = journal

    # -------------------------------------------------------------- proposals
    # A scheduling pass leaves the placements it tried on the index as *proposals* instead
    # of undoing them; the model claims each one as it applies the matching start (the
    # index then already holds it) and settles (undoes) the rest at the end of the
    # decision. Any placement query settles first, so nobody else ever sees a proposal.
    def propose(self, proposals: list[tuple[int, NodeRuns | None, list[tuple[int, int, int]]]]) -> None:
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
            for _, _, updates in proposed[self._claimed:]:
                self.undo(updates)
            self._claimed = 0
