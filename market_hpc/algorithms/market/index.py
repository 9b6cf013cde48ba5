"""Indexes over the queued market jobs, so an auction need not price the whole queue.

A market decision (Singh et al., HPCS'15, Algorithm 2) drops the jobs whose fastest completion earns
nothing, asks to be woken when the next job's value runs out, picks the first job in
queue order with a positive profit (SJQ), and tries holding for the jobs that arrived at
this instant. None of these needs every queued job priced:

- **Drop candidates.** A row's ``wake`` (``floor(arrival + zero - fastest)``, static while
  it is queued) bounds when it can become worthless. With every time, zero time and
  remaining time below ``LIMIT`` in magnitude, float rounding moves the elapsed time of the
  drop test by far less than ``MARGIN - 1`` time units, so a row with ``wake >= now +
  MARGIN`` still completes more than one time unit before its zero time and earns a positive
  value (linear and step curves; see ``MarketColumns.bounded``). Only rows with ``wake <
  now + MARGIN`` are priced for the drop test: a heap keyed by wake hands them over as time
  passes (:meth:`QueueIndex.near`); the rest of the heap gives the next wake.
- **Queue order.** Job ids in push order (:meth:`QueueIndex.in_order`): SJQ walks them and
  stops at the first job with a positive profit.
- **Recent arrivals.** The jobs pushed never held at the latest submit time
  (:attr:`QueueIndex.recent`), the jobs holding is tried for.

Entries of jobs that left are skipped lazily (each push has its own serial number, so a
held job pushed again is a new entry) and swept out once they outnumber the live ones.
Pure data; no Mesa.

>>> index = QueueIndex()
>>> for serial, (job_id, wake) in enumerate([(1, 50.0), (2, 10.0), (3, 30.0)]):
...     index.push(serial, job_id, wake, submit=0.0, fresh=True)
>>> sorted(index.near(20.0)), index.next_wake()   # wake 10 < 20 + MARGIN; 30 and 50 are not
([2], 30.0)
>>> index.take(3); index.next_wake()
50.0
>>> [job_id for job_id in index.in_order()], index.recent_ids(0.0)
([1, 2], [1, 2])
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator

MARGIN = 2.0  # a row with wake >= now + MARGIN cannot be worthless now (module docstring)
LIMIT = 1e12  # magnitude of times below which float rounding stays far under MARGIN - 1


class QueueIndex:
    """Wake heap, push order and recent arrivals of the queued jobs (by job id)."""

    def __init__(self) -> None:
        self.serial: dict[int, int] = {}  # live job id -> serial of its push
        self._heap: list[tuple[float, int, int]] = []  # (wake, serial, job id), rows not yet near
        self._near: set[int] = set()  # job ids handed over by ``near``
        self._order: list[tuple[int, int]] = []  # (serial, job id) in push order
        self._head = 0  # entries before it have left
        self._newest = -math.inf  # latest submit time of a job pushed never held
        self._recent: list[
            tuple[int, int]
        ] = []  # (serial, job id) pushed never held at ``_newest``

    def push(self, serial: int, job_id: int, wake: float, *, submit: float, fresh: bool) -> None:
        """Index a job entering the queue (``fresh``: never held)."""
        self.serial[job_id] = serial
        heapq.heappush(self._heap, (wake, serial, job_id))
        self._order.append((serial, job_id))
        if fresh and submit >= self._newest:
            if submit > self._newest:
                self._newest, self._recent = submit, []
            self._recent.append((serial, job_id))

    def take(self, job_id: int) -> None:
        """Forget a job leaving the queue (its entries are skipped from now on)."""
        del self.serial[job_id]
        self._near.discard(job_id)
        live = len(self.serial)
        if len(self._heap) > 2 * live + 64:
            self._heap = [entry for entry in self._heap if self._live(entry[1], entry[2])]
            heapq.heapify(self._heap)
        if len(self._order) - self._head > 2 * live + 64:
            self._order = [entry for entry in self._order[self._head :] if self._live(*entry)]
            self._head = 0

    def _live(self, serial: int, job_id: int) -> bool:
        return self.serial.get(job_id) == serial

    def near(self, now: float) -> set[int]:
        """Job ids of every queued job with ``wake < now + MARGIN`` (and perhaps some
        handed over earlier: times only grow in a simulation, and a superset is safe)."""
        heap, limit = self._heap, now + MARGIN
        while heap and heap[0][0] < limit:
            _, serial, job_id = heapq.heappop(heap)
            if self._live(serial, job_id):
                self._near.add(job_id)
        return self._near

    def next_wake(self) -> float:
        """Smallest wake among queued jobs not yet handed over by ``near`` (inf if none)."""
        heap = self._heap
        while heap and not self._live(heap[0][1], heap[0][2]):
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def in_order(self) -> Iterator[int]:
        """Job ids of the queued jobs in push (queue) order."""
        order = self._order
        while self._head < len(order) and not self._live(*order[self._head]):
            self._head += 1
        for position in range(self._head, len(order)):
            serial, job_id = order[position]
            if self.serial.get(job_id) == serial:
                yield job_id

    def recent_ids(self, now: float) -> list[int]:
        """Queued jobs pushed never held with submit time ``now``, in queue order, when
        ``now`` is the latest such submit time (else none)."""
        if self._newest != now:
            return []
        return [job_id for serial, job_id in self._recent if self.serial.get(job_id) == serial]
