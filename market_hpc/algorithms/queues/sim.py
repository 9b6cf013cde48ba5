"""A fast EASY-backfilling simulation of one partition, counted in cores (Kondameedi & Vadhiyar).

The paper sizes queues by simulating the history under many partition sets with its
*parsim* simulator (pyss, EASY inside each partition). In a partitioned system the
queues only share the large queue's reservations, which the sizing objective leaves
out, so one queue's waits depend on its own partition size alone: the
sampling simulates each (queue, size) once, on a core counter, and combines the
queues' waits. The semantics are the model's EASY (``market_hpc.policies.classic``):
completions, then arrivals in job-id order, then one pass per instant; the head's
reservation uses estimates, a job past its estimate is expected to end now. A test
checks the waits equal ``HPCModel`` running the ``queues-partitioned`` dispatcher.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

INF = float("inf")


@dataclass(frozen=True)
class QueueJobs:
    """The jobs of one queue as columns, sorted by (submit, job id).

    Attributes:
        submit: Submit times (s).
        run: Real run times (drive the clock).
        estimate: Estimates (what EASY sees).
        cores: Requested cores.
    """

    submit: np.ndarray
    run: np.ndarray
    estimate: np.ndarray
    cores: np.ndarray

    def __len__(self) -> int:
        return len(self.submit)

    @property
    def work(self) -> float:
        """Core-seconds of all jobs."""
        return float((self.cores * self.run).sum())


def easy_waits(jobs: QueueJobs, capacity: int) -> np.ndarray:
    """Waiting time of each job under EASY on ``capacity`` cores (``inf``: never starts).

    >>> jobs = QueueJobs(np.array([0.0, 0.0, 1.0]), np.array([10.0, 5.0, 3.0]),
    ...                  np.array([10.0, 5.0, 3.0]), np.array([2, 2, 1]))
    >>> easy_waits(jobs, 3).tolist()     # job 1 waits for job 0; job 2 backfills at t=1
    [0.0, 10.0, 0.0]
    """
    n = len(jobs)
    submit, run, estimate = jobs.submit.tolist(), jobs.run.tolist(), jobs.estimate.tolist()
    cores = jobs.cores.tolist()
    waits = [INF] * n
    free = capacity
    ends: list[tuple[float, int]] = []  # (real end, job) heap
    running: dict[int, float] = {}  # job -> estimated end
    waiting: list[int] = []
    next_job = 0
    while next_job < n or ends:
        now = min(ends[0][0] if ends else INF, submit[next_job] if next_job < n else INF)
        if now == INF:
            break
        while ends and ends[0][0] == now:
            _, job = heapq.heappop(ends)
            free += cores[job]
            del running[job]
        while next_job < n and submit[next_job] == now:
            if cores[next_job] <= capacity:
                waiting.append(next_job)
            next_job += 1
        if not waiting or free == 0:
            continue
        started = []
        head = -1
        for position, job in enumerate(waiting):
            if cores[job] > free:
                head = position
                break
            started.append(job)
            free -= cores[job]
        for job in started:
            waits[job] = now - submit[job]
            running[job] = now + estimate[job]
            heapq.heappush(ends, (now + run[job], job))
        if head < 0:
            waiting = []
            continue
        rest = waiting[head + 1 :]
        waiting = waiting[head:]
        if free == 0 or not rest:
            continue
        need = cores[waiting[0]]
        available = free
        shadow = INF
        for end, job in sorted((max(now, e), j) for j, e in running.items()):
            if end > shadow:
                break
            available += cores[job]
            if shadow == INF and available >= need:
                shadow = end
        extra = available - need
        kept = [waiting[0]]
        for position, job in enumerate(rest):
            size = cores[job]
            if size > free:
                kept.append(job)
                continue
            if now + estimate[job] <= shadow:
                pass
            elif size <= extra:
                extra -= size
            else:
                kept.append(job)
                continue
            free -= size
            waits[job] = now - submit[job]
            running[job] = now + estimate[job]
            heapq.heappush(ends, (now + run[job], job))
            if free == 0:
                kept.extend(rest[position + 1 :])
                break
        waiting = kept
    return np.array(waits)


def utilisation(jobs: QueueJobs, capacity: int, waits: np.ndarray, span: float) -> float:
    """Busy share of ``capacity`` cores over ``span`` seconds (or the makespan if longer).

    >>> jobs = QueueJobs(np.array([0.0]), np.array([10.0]), np.array([10.0]), np.array([2]))
    >>> utilisation(jobs, 4, np.array([0.0]), 10.0)
    0.5
    """
    if len(jobs) == 0 or capacity <= 0:
        return 0.0
    finite = np.isfinite(waits)
    if not finite.any():
        return 0.0
    first = float(jobs.submit.min())
    last = float((jobs.submit + waits + jobs.run)[finite].max())
    return float((jobs.cores * jobs.run)[finite].sum() / (capacity * max(span, last - first)))
