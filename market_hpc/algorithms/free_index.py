"""Free-core index: first-fit and best-fit placement touching only the nodes they return.

The free cores of ``n`` nodes are kept as *runs*: maximal ranges of consecutive nodes
with the same free count (every node is in exactly one run), stored as two parallel
lists (first node of each run, its count). First-fit walks them in node order, skipping
empty runs; adjacent runs never share a count, so between two runs with free cores there
is at most one full run and a query visits O(runs it returns) runs, whatever the node
count. The by-value order is kept only where it is read: lazy per-count heaps of first
nodes answer the single-unit first-fit (the node with the most free cores, as
:func:`market_hpc.algorithms.allocation.first_fit` does), and an exact sorted list of
``(free, first node)`` for best-fit is built on the first ``best_fit`` call and kept from
then on.

Updates come in batches: every range update of one call (a whole allocation taken or
given back, a scratch rollback) is applied in one walk and one splice of the lists
(:mod:`market_hpc.algorithms.run_splice`); taking the placement the last first-fit walk
returned, the index unchanged since, empties one stretch (a splice of at most five
runs). A placement pass tries allocations on the live index inside
:meth:`FreeCoreIndex.scratch` and the index is rolled back when the pass ends (cost: the
updates it made, never a copy). Placements are those of the array functions in
``allocation.py`` bit for bit (same nodes, same units), for plain core units; other
resources are not indexed.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator, Sequence
from heapq import heappop, heappush

from market_hpc.algorithms.index_journal import IndexJournal
from market_hpc.algorithms.node_runs import NodeRuns, Run
from market_hpc.algorithms.run_splice import Piece, empty_stretch, splice, within


class FreeCoreIndex(IndexJournal):
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
    >>> index.move(NodeRuns(((3, 1, 1), (4, 1, 2))), -1); index.runs()   # one splice
    [(0, 4, 0), (4, 1, 2)]
    """

    __slots__ = (
        "_heaps",
        "_held",
        "_sorted",
        "_starts",
        "_vals",
        "_walk",
        "fresh",
        "n_nodes",
        "total",
    )

    def __init__(self, free_cores: Sequence[int]) -> None:
        self.n_nodes = len(free_cores)
        if self.n_nodes == 0:
            raise ValueError("a free-core index needs at least one node")
        starts: list[int] = []
        vals: list[int] = []
        for node, free in enumerate(free_cores):
            free = int(free)
            if not vals or free != vals[-1]:
                starts.append(node)
                vals.append(free)
        self._starts = starts
        self._vals = vals
        # By-value order of the runs with free cores, for the queries that read it: lazy
        # min-heaps of first nodes per count (entries checked when read; rebuilt when
        # stale ones pile up) answer the single-unit first-fit; an exact sorted list of
        # ``(free, first)`` is kept only once ``best_fit`` has been asked (then it answers both).
        self._heaps: dict[int, list[int]] = {}
        self._held = 0  # entries in the heaps, current or not
        self._sorted: list[tuple[int, int]] | None = None
        self._rebuild_heaps()
        self.total = int(sum(int(f) for f in free_cores))
        super().__init__()
        # The last placement ``first_fit``/``best_fit`` returned, until the index changes.
        self.fresh: NodeRuns | None = None
        # The last multi-unit first-fit: (placement, first run used, last run used, whole
        # nodes used of the last run, units on the node after them).
        self._walk: tuple[NodeRuns, int, int, int, int] | None = None

    # ------------------------------------------------------------------ reading
    def runs(self) -> list[Run]:
        """All runs ``(first, count, free)`` in node order (for tests and displays)."""
        self.settle()
        starts = self._starts
        ends = [*starts[1:], self.n_nodes]
        return [(s, e - s, v) for s, e, v in zip(starts, ends, self._vals)]

    @property
    def _value(self) -> dict[int, int]:
        """First node -> free cores of every run."""
        return dict(zip(self._starts, self._vals))

    @property
    def _by_value(self) -> list[tuple[int, int]]:
        """``(free, first)`` of every run in by-value order, as the queries hold it: the
        exact list (or the entries of the lazy heaps that are current), plus the runs
        without free cores (which neither holds)."""
        rest = [(v, s) for s, v in zip(self._starts, self._vals) if v <= 0]
        if self._sorted is not None:
            return sorted(rest + self._sorted)
        current = set(zip(self._vals, self._starts))
        held = {(v, s) for v, heap in self._heaps.items() for s in heap if (v, s) in current}
        return sorted(rest + list(held))

    def free_of(self, node: int) -> int:
        """Free cores of one node."""
        return self._vals[bisect_right(self._starts, node) - 1]

    def min_free(self, first: int, end: int) -> int:
        """Fewest free cores over nodes ``first..end-1``."""
        starts = self._starts
        return min(self._vals[bisect_right(starts, first) - 1 : bisect_left(starts, end)])

    def _end(self, start: int) -> int:
        starts = self._starts
        i = bisect_right(starts, start)
        return starts[i] if i < len(starts) else self.n_nodes

    # ---------------------------------------------------------------- placement
    def first_fit(self, units: int) -> NodeRuns | None:
        """Lowest-index nodes first; one unit goes to the node with the most free cores
        (lowest index among ties), as ``allocation.first_fit``. ``None`` if it cannot fit."""
        if self._proposed:
            self.settle()
        if units > self.total:
            return None
        placed: NodeRuns | None
        if units == 1:
            first = self._most_free()
            placed = None if first is None else NodeRuns(((first, 1, 1),))
        else:
            placed = self._first_fit_walk(units)
        self.fresh = placed
        return placed

    def _first_fit_walk(self, units: int) -> NodeRuns | None:
        starts = self._starts
        last = len(starts) - 1
        need = units
        out: list[Run] = []
        used = -1
        exact = True  # no run in the stretch is below zero (``_take_walked`` may apply)
        for k, free in enumerate(self._vals):
            if free <= 0:
                if free:
                    exact = False
                continue
            start = starts[k]
            count = (starts[k + 1] if k < last else self.n_nodes) - start
            if used < 0:
                used = k
            if count * free < need:
                out.append((start, count, free))
                need -= count * free
                continue
            full, rest = divmod(need, free)
            if full:
                out.append((start, full, free))
            if rest:
                out.append((start + full, 1, rest))
            placed = NodeRuns(out)
            if exact:
                self._walk = (placed, used, k, full, rest)
            return placed
        return None

    def _take_walked(self, walk: tuple[NodeRuns, int, int, int, int]) -> None:
        """Take the placement the last first-fit walk returned, the index unchanged since:
        every run it used but the last is emptied, and the runs between them were empty
        already, so the stretch becomes one empty run (one splice of at most five runs)."""
        placed, used, k, full, rest = walk
        starts, vals = self._starts, self._vals
        lo, hi, new_starts, new_vals = empty_stretch(
            starts, vals, self.n_nodes, used, k, full, rest
        )
        heaps = self._heaps
        for start, v in zip(new_starts, new_vals):
            if v > 0:  # pushes the unchanged run before too: entries are checked when read
                heap = heaps.get(v)
                if heap is None:
                    heaps[v] = [start]
                else:
                    heappush(heap, start)
                self._held += 1
        starts[lo:hi] = new_starts
        vals[lo:hi] = new_vals
        if self._held > 2 * len(starts) + 64:
            self._rebuild_heaps()
        self.total -= placed.total_units
        self.fresh = self._walk = None
        if self._journal is not None:
            self._journal += [(first, first + count, -units) for first, count, units in placed.runs]

    def _most_free(self) -> int | None:
        """Lowest node among those with the most free cores (``None``: none free)."""
        ordered = self._sorted
        if ordered is not None:
            if not ordered:
                return None
            return ordered[bisect_left(ordered, (ordered[-1][0], -1))][1]
        starts, vals, heaps = self._starts, self._vals, self._heaps
        while heaps:
            v = max(heaps)
            heap = heaps[v]
            while heap:
                s = heap[0]
                k = bisect_left(starts, s)
                if k < len(starts) and starts[k] == s and vals[k] == v:
                    return s
                heappop(heap)
                self._held -= 1
            del heaps[v]
        return None

    def best_fit(self, units: int) -> NodeRuns | None:
        """Nodes with the fewest free cores first (ties by index), as ``allocation.best_fit``."""
        if self._proposed:
            self.settle()
        if units > self.total:
            return None
        ordered = self._sorted
        if ordered is None:  # from now on the index keeps the exact by-value order
            ordered = self._sorted = sorted(
                (v, s) for s, v in zip(self._starts, self._vals) if v > 0
            )
            self._heaps = {}
            self._held = 0
        placed = self._place(((s, self._end(s), v) for v, s in ordered), units, sort=True)
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
        if delta != 0 and first < end:
            self._apply([(first, end, delta)])

    def move(self, runs: NodeRuns, sign: int) -> None:
        """Take (``sign=-1``) or give back (``+1``) the units of an allocation, one core
        per unit: all its runs in one splice (the same as one ``add`` per run)."""
        walk = self._walk
        if (
            sign < 0
            and walk is not None
            and runs is self.fresh
            and walk[0] is runs
            and self._sorted is None
        ):
            self._take_walked(walk)
        elif runs.runs:
            self._splice(runs.runs, sign)

    def _apply(self, pieces: list[Piece]) -> None:
        """Apply sorted, disjoint ``(first, end, delta)`` pieces in one splice."""
        self._splice([(first, end - first, delta) for first, end, delta in pieces], 1)

    def _splice(self, runs: Sequence[Run], scale: int) -> None:
        """Add ``scale * units`` to the nodes of each of the sorted, disjoint ``runs``."""
        self.fresh = None
        starts, vals = self._starts, self._vals
        kept: Sequence[tuple[int, int, int, int]] = ()
        if len(runs) == 1:  # one range: inside one run (the usual case) or across several
            first, count, units = runs[0]
            k = bisect_right(starts, first) - 1
            delta = units * scale
            if delta and (k + 1 == len(starts) or first + count <= starts[k + 1]):
                i, j, new_starts, new_vals = within(
                    starts, vals, self.n_nodes, k, first, first + count, delta
                )
                added = delta * count
            else:
                i, j, new_starts, new_vals, kept, added = splice(
                    starts, vals, self.n_nodes, runs, scale
                )
        else:
            i, j, new_starts, new_vals, kept, added = splice(
                starts, vals, self.n_nodes, runs, scale
            )
        ordered = self._sorted
        if ordered is not None:
            self._reorder(ordered, i, j, new_starts, new_vals, kept)
        starts[i:j] = new_starts
        vals[i:j] = new_vals
        if ordered is None:  # push the runs written (current or not: entries are checked when read)
            heaps = self._heaps
            held = self._held
            for new_a, new_b, _, _ in kept:  # copied stretches hold no new entry
                new_starts[new_a:new_b] = new_vals[new_a:new_b] = [0] * (new_b - new_a)
            for s, v in zip(new_starts, new_vals):
                if v > 0:
                    heap = heaps.get(v)
                    if heap is None:
                        heaps[v] = [s]
                    else:
                        heappush(heap, s)
                    held += 1
            self._held = held
            if held > 2 * len(starts) + 64:
                self._rebuild_heaps()
        self.total += added
        if self._journal is not None:
            self._journal += [(first, first + count, units * scale) for first, count, units in runs]

    def _reorder(
        self,
        ordered: list[tuple[int, int]],
        i: int,
        j: int,
        new_starts: list[int],
        new_vals: list[int],
        kept: Sequence[tuple[int, int, int, int]],
    ) -> None:
        """Keep the exact by-value list in step with a splice of ``starts[i:j]``."""
        starts, vals = self._starts, self._vals
        old: set[tuple[int, int]] = set()
        new: set[tuple[int, int]] = set()
        previous_old = i
        previous_new = 0
        for new_a, new_b, old_a, old_b in [*kept, (len(new_starts), 0, j, 0)]:
            old.update(zip(vals[previous_old:old_a], starts[previous_old:old_a]))
            new.update(zip(new_vals[previous_new:new_a], new_starts[previous_new:new_a]))
            previous_old, previous_new = old_b, new_b
        for entry in old - new:
            if entry[0] > 0:
                del ordered[bisect_left(ordered, entry)]
        for entry in new - old:
            if entry[0] > 0:
                insort(ordered, entry)

    def _rebuild_heaps(self) -> None:
        heaps: dict[int, list[int]] = {}
        for s, v in zip(self._starts, self._vals):
            if v > 0:
                heap = heaps.get(v)
                if heap is None:
                    heaps[v] = [s]
                else:
                    heap.append(s)  # starts ascend: each list is a heap already
        self._heaps = heaps
        self._held = sum(map(len, heaps.values()))

    def is_fresh(self, runs: object) -> bool:
        """Whether ``runs`` is the last placement ``first_fit``/``best_fit`` returned and
        the index has not changed since: it then fits the free cores as they are now."""
        return runs is self.fresh and runs is not None

    def clear(self, first: int, end: int) -> None:
        """Set the free cores of nodes ``first..end-1`` to zero (one splice)."""
        pieces = self._clear_pieces(first, end)
        if pieces:
            self._apply(pieces)

    def _clear_pieces(self, first: int, end: int) -> list[Piece]:
        starts, vals = self._starts, self._vals
        i = bisect_right(starts, first) - 1
        j = bisect_left(starts, end)
        bounds = [first, *starts[i + 1 : j], end]
        return [(a, b, -v) for a, b, v in zip(bounds, bounds[1:], vals[i:j]) if v]

    def give(self, first: int, free_cores: Sequence[int]) -> None:
        """Add ``free_cores[i]`` free cores to node ``first + i`` (one splice)."""
        pieces: list[Piece] = []
        start = first
        pending = None
        for node, amount in enumerate(free_cores, first):
            if amount != pending:
                if pending:
                    pieces.append((start, node, pending))
                start, pending = node, amount
        if pending:
            pieces.append((start, first + len(free_cores), pending))
        if pieces:
            self._apply(pieces)

    def take(
        self, allocation: NodeRuns, cores_per_unit: int = 1, whole_nodes: bool = False
    ) -> None:
        """Remove an allocation's cores (``whole_nodes``: every core of its nodes), in one
        splice."""
        if cores_per_unit == 1 and not whole_nodes:
            self.move(allocation, -1)
            return
        if whole_nodes:
            pieces = [
                piece
                for first, count, _ in allocation.runs
                for piece in self._clear_pieces(first, first + count)
            ]
        else:
            pieces = [
                (first, first + count, -units * cores_per_unit)
                for first, count, units in allocation.runs
            ]
        if pieces:
            self._apply(pieces)
