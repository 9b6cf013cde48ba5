"""Compact allocations: runs of consecutive nodes holding the same number of units.

An allocation is, by protocol, a sequence of ``(node, units)`` pairs in increasing node
order. On single-core nodes a 1,000-processor job is 1,000 pairs; as runs it is
``((first_node, 1000, 1),)``. :class:`NodeRuns` stores the runs and still behaves as the
sequence of pairs (iteration, ``len``, indexing, equality with a tuple of pairs), so
code written against plain tuples keeps working while the model and the free-capacity
index work run by run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any, overload

Run = tuple[int, int, int]
"""``(first_node, node_count, units_per_node)``."""


class NodeRuns(Sequence[tuple[int, int]]):
    """An allocation stored as runs ``(first_node, count, units)``, read as pairs.

    The runs are in increasing node order and do not overlap (the model validates that).

    >>> runs = NodeRuns(((4, 3, 1), (9, 1, 2)))
    >>> list(runs)
    [(4, 1), (5, 1), (6, 1), (9, 2)]
    >>> len(runs), runs[-1], runs.total_units
    (4, (9, 2), 5)
    >>> runs == ((4, 1), (5, 1), (6, 1), (9, 2))
    True
    >>> NodeRuns.from_pairs([(0, 2), (1, 2), (3, 2)]).runs
    ((0, 2, 2), (3, 1, 2))
    """

    __slots__ = ("_pairs", "runs", "total_units")

    def __init__(self, runs: Iterable[Run]) -> None:
        self.runs: tuple[Run, ...] = tuple(runs)
        self.total_units: int = sum(count * units for _, count, units in self.runs)
        self._pairs: tuple[tuple[int, int], ...] | None = None

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[int, int]]) -> NodeRuns:
        """Group ``(node, units)`` pairs into maximal runs (pairs must be in node order)."""
        runs: list[list[int]] = []
        for node, units in pairs:
            if runs:
                last = runs[-1]
                if last[0] + last[1] == node and last[2] == units:
                    last[1] += 1
                    continue
            runs.append([node, 1, units])
        return cls((first, count, units) for first, count, units in runs)

    def pairs(self) -> tuple[tuple[int, int], ...]:
        """The allocation as a plain tuple of ``(node, units)`` pairs (built once, cached)."""
        if self._pairs is None:
            out: list[tuple[int, int]] = []
            for first, count, units in self.runs:
                out.extend(zip(range(first, first + count), repeat(units)))
            self._pairs = tuple(out)
        return self._pairs

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for first, count, units in self.runs:
            yield from zip(range(first, first + count), repeat(units))

    def __len__(self) -> int:
        return sum(count for _, count, _ in self.runs)

    @overload
    def __getitem__(self, index: int) -> tuple[int, int]: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[tuple[int, int], ...]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, int) and len(self.runs) == 1 and 0 <= index < self.runs[0][1]:
            first, _, units = self.runs[0]
            return (first + index, units)
        return self.pairs()[index]

    def __bool__(self) -> bool:
        return bool(self.runs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeRuns):
            return self.pairs() == other.pairs()
        if isinstance(other, Sequence):
            return self.pairs() == tuple(tuple(pair) for pair in other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.pairs())

    def __repr__(self) -> str:
        return f"NodeRuns({self.runs!r})"

    def format(self) -> str:
        """``node:units`` pairs joined by ``;`` (the ``nodes`` column of ``jobs.csv``).

        >>> NodeRuns(((0, 2, 1), (5, 1, 3))).format()
        '0:1;1:1;5:3'
        """
        return ";".join(
            ";".join(f"{node}:{units}" for node in range(first, first + count))
            for first, count, units in self.runs
        )


def as_runs(allocation: Sequence[tuple[int, int]]) -> NodeRuns:
    """``allocation`` as :class:`NodeRuns` (itself when it already is)."""
    return allocation if isinstance(allocation, NodeRuns) else NodeRuns.from_pairs(allocation)
