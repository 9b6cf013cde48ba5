"""Slurm's backfill planning on a node-space map (``sched/backfill``, ``backfill.c``).

The map holds what each node has free now, when running jobs (and jobs started in this
pass) release their resources, and the reservations made for pending jobs. A job's
earliest start is the first candidate time (now, then each release, then each
reservation's end) at which enough nodes hold its units from the release times of running
jobs (the select plugin's will-run test), using no node reserved for a pending job in an
overlapping slot: reservations are whole nodes, as ``_add_reservation`` clears nodes from
``node_space[].avail_bitmap`` and the test ANDs that bitmap in for every overlapping slot
(``_attempt_backfill``). Slots are rounded to ``bf_resolution`` as ``_set_slot_time``
rounds them (start down, end up).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

Placement = tuple[tuple[int, int], ...]


def slot(start: float, limit: float, resolution: float) -> tuple[float, float]:
    """A reservation's slot: start rounded down, ``start + limit + resolution - 1``
    rounded down (``_set_slot_time``).

    >>> slot(65.0, 100.0, 60.0)
    (60.0, 180.0)
    >>> slot(0.0, 30.0, 1.0)
    (0.0, 30.0)
    """
    begin = (start // resolution) * resolution
    end = ((start + limit + resolution - 1) // resolution) * resolution
    return float(begin), float(end)


@dataclass
class NodeSpace:
    """The backfill map of one pass.

    Attributes:
        capacity: ``(nodes, resources)`` capacity.
        free: What is free now per node (updated as the pass starts jobs).
        releases: ``(end, node, amounts)`` of running jobs given one node at a time
            (:meth:`add_release` adds a whole job's, :meth:`start` this pass's starts).
        reservations: ``(slot_start, slot_end, nodes)`` of pending jobs.
        exclusive: Whole nodes per job.
    """

    capacity: np.ndarray
    free: np.ndarray
    releases: list[tuple[float, int, np.ndarray]] = field(default_factory=list)
    reservations: list[tuple[float, float, frozenset[int]]] = field(default_factory=list)
    exclusive: bool = False
    _blocks: list[tuple[float, np.ndarray, np.ndarray]] = field(default_factory=list, repr=False)
    _built: tuple[int, int] = (-1, -1)
    _slots: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)), repr=False)
    _held: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool), repr=False)
    _ends: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    _amounts: np.ndarray = field(
        default_factory=lambda: np.zeros((0, 0), dtype=np.int64), repr=False
    )

    def add_release(self, end: float, allocation: Placement, unit: tuple[int, ...]) -> None:
        """A running job on ``allocation`` (``(node, units)`` pairs) releases its units of
        ``unit`` (whole nodes when exclusive) at ``end``.

        >>> space = NodeSpace(np.array([[4], [4]]), np.array([[0], [1]]))
        >>> space.add_release(10.0, ((0, 4), (1, 3)), (1,))
        >>> space.place_at(10.0, (1,), 8, 5.0, np.ones(2, dtype=bool), now=0.0)
        ((0, 4), (1, 4))
        """
        nodes = np.fromiter((node for node, _ in allocation), dtype=np.int64, count=len(allocation))
        if self.exclusive:
            amounts = self.capacity[nodes].astype(np.int64)
        else:
            counts = np.fromiter(
                (units for _, units in allocation), dtype=np.int64, count=len(allocation)
            )
            amounts = (
                counts[:, None] * np.asarray(unit[: self.free.shape[1]], dtype=np.int64)[None, :]
            )
        self._blocks.append((float(end), nodes, amounts))

    def _release_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every release sorted by end (stable): ends, nodes and amounts, rebuilt when
        releases were added."""
        if self._built != (len(self.releases), len(self._blocks)):
            width = self.free.shape[1]
            ends = [np.array([end for end, _, _ in self.releases], dtype=np.float64)]
            nodes = [np.array([node for _, node, _ in self.releases], dtype=np.int64)]
            amounts = [
                np.array([a for _, _, a in self.releases], dtype=np.int64).reshape(
                    len(self.releases), width
                )
            ]
            for end, block_nodes, block_amounts in self._blocks:
                ends.append(np.full(len(block_nodes), end))
                nodes.append(block_nodes)
                amounts.append(block_amounts)
            all_ends = np.concatenate(ends)
            order = np.argsort(all_ends, kind="stable")
            self._ends, self._nodes = all_ends[order], np.concatenate(nodes)[order]
            self._amounts = np.concatenate(amounts)[order]
            self._built = (len(self.releases), len(self._blocks))
        return self._ends, self._nodes, self._amounts

    def _free_at(self, time: float, now: float) -> tuple[np.ndarray, np.ndarray]:
        """Free amounts at ``time`` and whether each node is empty then. Nothing is released
        at ``now`` itself: a job past its time limit still holds its nodes now, and frees them
        at the next candidate time."""
        ends, nodes, amounts = self._release_arrays()
        free = self.free.astype(np.int64, copy=True)
        upto = int(np.searchsorted(ends, time, side="right")) if time > now else 0
        np.add.at(free, nodes[:upto], amounts[:upto])
        busy = np.bincount(nodes[upto:], minlength=len(free))
        return free, busy == 0

    def reserved_mask(self, begin: float, end: float) -> np.ndarray:
        """Which nodes a reservation holds in a slot overlapping ``[begin, end)``."""
        if len(self._slots) != len(self.reservations):
            self._slots = np.array([(start, stop) for start, stop, _ in self.reservations])
            self._held = np.zeros((len(self.reservations), len(self.free)), dtype=bool)
            for row, (_, _, nodes) in enumerate(self.reservations):
                self._held[row, list(nodes)] = True
        overlapping = (self._slots[:, 0] < end) & (self._slots[:, 1] > begin)
        return np.asarray(self._held[overlapping].any(axis=0))

    def reserved(self, begin: float, end: float) -> set[int]:
        """The nodes of ``reserved_mask``."""
        if not self.reservations:
            return set()
        return {int(node) for node in np.flatnonzero(self.reserved_mask(begin, end))}

    def place_at(
        self,
        time: float,
        unit: tuple[int, ...],
        units: int,
        limit: float,
        eligible: np.ndarray,
        now: float = -np.inf,
    ) -> Placement | None:
        """Nodes (first fit, in node order) holding ``units`` of ``unit`` from ``time``
        for ``limit`` seconds, or ``None``.

        >>> releases = [(10.0, 0, np.array([3]))]
        >>> space = NodeSpace(np.array([[4], [4]]), np.array([[1], [4]]), releases)
        >>> every = np.ones(2, dtype=bool)
        >>> space.place_at(0.0, (1,), 6, 5.0, every), space.place_at(10.0, (1,), 6, 5.0, every)
        (None, ((0, 4), (1, 2)))
        >>> space.reservations.append((0.0, 20.0, frozenset({1})))
        >>> space.place_at(10.0, (1,), 6, 5.0, every) is None
        True
        """
        free, empty = self._free_at(time, now)
        return self._fit(free, empty, time, unit, units, limit, eligible)

    def _fit(
        self,
        free: np.ndarray,
        empty: np.ndarray,
        time: float,
        unit: tuple[int, ...],
        units: int,
        limit: float,
        eligible: np.ndarray,
    ) -> Placement | None:
        source = self.capacity if self.exclusive else free
        if unit[0] == 1 and not any(unit[1:]):
            fits = source[:, 0]  # plain cores: the common case, without the division
        else:
            need = np.asarray(unit[: free.shape[1]])
            asked = need > 0
            fits = np.min(source[:, asked] // need[asked], axis=1)
        usable = eligible & empty if self.exclusive else eligible
        fits = np.where(usable, fits, 0)
        if int(fits.sum()) < units:
            return None  # short even before the reservations: skip their scan
        if self.reservations:
            reserved = self.reserved_mask(time, time + limit)
            if reserved.any():
                fits = np.where(reserved, 0, fits)
                if int(fits.sum()) < units:
                    return None
        placement = []
        remaining = units
        for node in np.flatnonzero(fits):
            take = min(int(fits[node]), remaining)
            placement.append((int(node), take))
            remaining -= take
            if remaining == 0:
                break
        return tuple(placement)

    def earliest(
        self,
        now: float,
        unit: tuple[int, ...],
        units: int,
        limit: float,
        eligible: np.ndarray,
        horizon: float,
    ) -> tuple[float, Placement] | None:
        """The earliest candidate time up to ``horizon`` at which the job fits, with where.

        >>> space = NodeSpace(np.array([[4]]), np.array([[0]]), [(30.0, 0, np.array([4]))])
        >>> space.earliest(0.0, (1,), 2, 10.0, np.ones(1, dtype=bool), 100.0)
        (30.0, ((0, 2),))
        >>> space.earliest(0.0, (1,), 2, 10.0, np.ones(1, dtype=bool), 20.0) is None
        True
        """
        ends, nodes, amounts = self._release_arrays()
        candidates = np.where(ends > now, ends, now + 1.0)[ends <= horizon]
        stops = np.array([stop for _, stop, _ in self.reservations if now < stop <= horizon])
        times = np.unique(np.concatenate(([now], candidates, stops)))
        free = self.free.astype(np.int64, copy=True)
        busy = np.bincount(nodes, minlength=len(free))
        taken = 0
        for time in times.tolist():
            if time > now:  # nothing is released at now itself (see _free_at)
                upto = int(np.searchsorted(ends, time, side="right"))
                if upto > taken:
                    np.add.at(free, nodes[taken:upto], amounts[taken:upto])
                    np.subtract.at(busy, nodes[taken:upto], 1)
                    taken = upto
            placement = self._fit(free, busy == 0, time, unit, units, limit, eligible)
            if placement is not None:
                return time, placement
        return None

    def start(self, placement: Placement, unit: tuple[int, ...], end: float) -> None:
        """Take ``placement`` now until ``end`` (whole nodes when exclusive)."""
        nodes = np.fromiter((node for node, _ in placement), dtype=np.int64, count=len(placement))
        if self.exclusive:
            taken = self.free[nodes].astype(np.int64)
        else:
            counts = np.fromiter(
                (units for _, units in placement), dtype=np.int64, count=len(placement)
            )
            taken = (
                counts[:, None] * np.asarray(unit[: self.free.shape[1]], dtype=np.int64)[None, :]
            )
        np.subtract.at(self.free, nodes, taken)
        self._blocks.append((float(end), nodes, taken))

    def reserve(self, begin: float, end: float, placement: Placement) -> None:
        """Reserve the placement's nodes over ``[begin, end)``."""
        self.reservations.append((begin, end, frozenset(node for node, _ in placement)))
