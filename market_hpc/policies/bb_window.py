"""The scheduling invocation every seed 003 method shares: base order, window, starvation
bound, the method's selection, then multi-resource EASY (Fan et al., HPDC '19, §3.1;
spec §1.6, §3.11).

1. order the queue by the base policy: ``fcfs`` (arrival, Cori) or ``wfp``
   (``n * (wait / walltime)**3``, highest first, Theta; spec A22);
2. take a window of the first ``window`` jobs. *Starving* jobs enter it first and must be
   selected. The paper bounds "the number of iterations that a job can stay in the
   window": by default a job that has already spent ``starvation`` (50) scheduling
   invocations in a window, without starting, is starving (``starvation_by =
   "invocations"``, spec A3; "passes the bound" read as more than 50). ``starvation_by =
   "seconds"`` bounds the time since the job first entered a window instead;
3. a starving job that fits is fixed into the selection (its resources are taken first)
   and the rest of the window is still optimised over what is left; when a starving job
   does not fit, no optimisation runs this time and it holds the EASY reservation;
4. the method selects a subset of the window jobs that fit the free nodes and burst
   buffer one by one;
5. the queue is reordered: selected jobs, the other window jobs, the rest, and
   multi-resource EASY (``classic.Easy.schedule``) starts and backfills along it.

Counted per run (``stats``, ``policy_*`` in ``summary.json``): ``invocations``;
``fit_two_plus`` (two or more window jobs fit, so a method has a choice; when a
starving job blocks, the non-starving window jobs that fit the free resources);
``optimiser_runs`` (the method's optimiser ran on such a window); ``changed`` (its
selection differs from the base order's: the window jobs served in order while they
fit); ``forced_starts`` (starving jobs fixed in that the method's own selection on the
unforced window would not have started: forcings that change nothing are not counted,
``forced_jobs`` counts them all);
``forced_blocks`` (a starving job did not fit and blocked the optimisation).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import chain, islice

import numpy as np

from market_hpc.algorithms.bbsched import Window
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.policies.base import Allocator, Decision, View
from market_hpc.policies.classic import Easy

BASE_ORDERS = ("fcfs", "wfp")
STARVATION_UNITS = ("invocations", "seconds")
DEFAULT_STARVATION = 50.0
"""The paper's example bound: 50 scheduling invocations in a window (§3.1, spec A3)."""


def wfp_order(queue: Sequence[Job], now: float) -> list[Job]:
    """Cobalt's WFP: ``n * (wait / walltime)**3`` highest first, ties by submit, id.

    >>> jobs = [Job(1, 0.0, 10.0, 100.0, units=4), Job(2, 50.0, 10.0, 10.0, units=1)]
    >>> [j.job_id for j in wfp_order(jobs, 100.0)]      # 4 * 1**3 < 1 * 5**3
    [2, 1]
    """
    def key(job: Job) -> tuple[float, float, int]:
        ratio = max(now - job.submit, 0.0) / max(job.estimate, 1.0)
        return (-job.cores * ratio**3, job.submit, job.job_id)

    return sorted(queue, key=key)


def wfp_order_fast(queue: Sequence[Job], now: float, small: int = 48) -> list[Job]:
    """``wfp_order`` with the priorities computed and sorted in numpy: the same order
    (the same float operations, ``pow`` for the cube, and a stable lexicographic sort on
    (-priority, submit, id)), with the per-job Python work reduced to reading three
    attributes. Queues of at most ``small`` jobs use ``wfp_order`` itself.

    >>> jobs = [Job(1, 0.0, 10.0, 100.0, units=4), Job(2, 50.0, 10.0, 10.0, units=1)]
    >>> [j.job_id for j in wfp_order_fast(jobs, 100.0, small=0)]
    [2, 1]
    """
    count = len(queue)
    if count <= small:
        return wfp_order(queue, now)
    submit = np.fromiter([job.submit for job in queue], dtype=np.float64, count=count)
    estimate = np.fromiter([job.estimate for job in queue], dtype=np.float64, count=count)
    cores = np.fromiter([job.cores for job in queue], dtype=np.float64, count=count)
    ids = np.fromiter([job.job_id for job in queue], dtype=np.int64, count=count)
    ratio = np.maximum(now - submit, 0.0) / np.maximum(estimate, 1.0)
    priority = -cores * np.power(ratio, 3.0)
    order = np.lexsort((ids, submit, priority))
    return [queue[i] for i in order.tolist()]


def greedy_prefix(jobs: Sequence[Job], free_nodes: float, free_bb: float) -> list[Job]:
    """The jobs the base order starts first: in order while they fit (Slurm-like).

    >>> jobs = [Job(1, 0.0, 1.0, 1.0, units=4), Job(2, 0.0, 1.0, 1.0, units=8), Job(3, 0.0, 1.0, 1.0, units=1)]
    >>> [j.job_id for j in greedy_prefix(jobs, 10, 0)]
    [1]
    """
    taken = []
    for job in jobs:
        if job.cores > free_nodes or job.bb > free_bb:
            break
        taken.append(job)
        free_nodes -= job.cores
        free_bb -= job.bb
    return taken


class WindowScheduler:
    """Base order, window, starvation bound and a selector, under multi-resource EASY.

    Args:
        allocator: Where jobs go.
        window: Window size w (>= 1).
        order: Base order, ``fcfs`` or ``wfp``.
        starvation: The bound: invocations spent in a window (default 50), or seconds.
        starvation_by: ``invocations`` (the paper's) or ``seconds``.
    """

    label = "bb-baseline"
    max_window = 64

    def __init__(self, allocator: Allocator, window: int = 20, order: str = "fcfs",
                 starvation: float = DEFAULT_STARVATION, starvation_by: str = "invocations") -> None:
        if order not in BASE_ORDERS:
            raise UnknownNameError(f"{self.label} order", order, BASE_ORDERS)
        if starvation_by not in STARVATION_UNITS:
            raise UnknownNameError(f"{self.label} starvation_by", starvation_by, STARVATION_UNITS)
        if not 1 <= window <= self.max_window:
            raise ConfigError(f"{self.label}: window must be in 1..{self.max_window}, got {window}")
        if starvation <= 0:
            raise ConfigError(f"{self.label}: starvation must be > 0 {starvation_by}, got {starvation}")
        self.allocator = allocator
        self.easy = Easy(allocator)
        self.window = window
        self.order = order
        self.starvation = starvation
        self.by_invocations = starvation_by == "invocations"
        self.name = f"{self.label}+{allocator.name}"
        self.recording = True  # False while ``_count_forced`` runs the unforced comparison
        self._seen: dict[int, float] = {}  # invocations spent in a window, or time first in one
        self.stats = {"invocations": 0, "fit_two_plus": 0, "optimiser_runs": 0, "changed": 0,
                      "optimisations": 0, "forced_jobs": 0, "forced_starts": 0, "forced_blocks": 0, "solver_seconds": 0.0}

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        """Bit mask of the window jobs to start first; ``None`` keeps the base order."""
        return None

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Run one scheduling invocation (module docstring)."""
        if self.order == "fcfs":
            front = list(islice(view.queue, self.window))
            if not front:
                return Decision()
            self.stats["invocations"] += 1
            arranged = self._arrange_front(front, view, rng)
            if arranged is not None:  # the window is the queue's front: the rest stays in queue order
                decision = self.easy.schedule(view, chain(arranged, islice(view.queue, len(front), None)))
            else:
                decision = self.easy.schedule(view, self._reorder(list(view.queue), view, rng))
        else:
            queue = wfp_order_fast(view.queue, view.time)
            if not queue:
                return Decision()
            self.stats["invocations"] += 1
            decision = self.easy.schedule(view, self._reorder(queue, view, rng))
        seen = self._seen
        for action in decision.actions:  # started jobs leave the queue and the window
            seen.pop(action.job_id, None)
        return decision

    def _starving(self, job: Job, now: float) -> bool:
        seen = self._seen.get(job.job_id)
        if seen is None:
            return False
        return seen > self.starvation if self.by_invocations else now - seen > self.starvation

    def _arrange_front(self, front: list[Job], view: View, rng: np.random.Generator) -> list[Job] | None:
        """``_reorder`` of an FCFS queue whose first ``window`` jobs are ``front``, without
        the rest, when every job that ever entered a window and is still waiting is in
        ``front`` (``None`` otherwise: the caller runs ``_reorder`` on the whole queue).

        Under FCFS a job enters a window among the queue's first ``window`` jobs and only
        moves forward from there, so that holds from one invocation to the next once
        started jobs are forgotten (``decide``). Then every starving job is in ``front``,
        the window is ``front`` with its starving jobs first and the rest of the queue
        follows in queue order, as ``_reorder`` would arrange it, at a cost of O(window)
        instead of O(queue) (archive traces keep thousands of jobs waiting).
        """
        if not {job.job_id for job in front}.issuperset(self._seen):
            return None
        now = view.time
        starving = [j for j in front if self._starving(j, now)]
        window = starving + [j for j in front if not self._starving(j, now)] if starving else front
        return self._arrange(window, starving, front, view, rng, [])

    def _reorder(self, queue: list[Job], view: View, rng: np.random.Generator) -> list[Job]:
        now, seen = view.time, self._seen
        self._seen = {j.job_id: seen[j.job_id] for j in queue if j.job_id in seen}
        starving = [j for j in queue if self._starving(j, now)][: self.window]
        if starving:
            forced_ids = {j.job_id for j in starving}
            others = [j for j in queue if j.job_id not in forced_ids]
            window, rest = starving + others[: self.window - len(starving)], others[self.window - len(starving):]
        else:
            window, rest = queue[: self.window], queue[self.window:]
        return self._arrange(window, starving, queue[: self.window], view, rng, rest)

    def _arrange(self, window: list[Job], starving: list[Job], base_window: list[Job], view: View,
                 rng: np.random.Generator, rest: list[Job]) -> list[Job]:
        """The window (``starving`` jobs first) rearranged by the method, then ``rest``;
        ``base_window`` is the window the base order alone would take."""
        self._mark(window, view.time)
        free_nodes, free_bb = view.free_total[0], view.free_bb
        for job in starving:  # fix forced jobs in while they fit
            if job.cores > free_nodes or job.bb > free_bb:
                self.stats["forced_blocks"] += 1
                pool = window[len(starving):]
                fitting = sum(j.cores <= view.free_total[0] and j.bb <= view.free_bb for j in pool)
                self.stats["fit_two_plus"] += fitting >= 2
                return window + rest  # it heads the queue and holds the EASY reservation
            free_nodes -= job.cores
            free_bb -= job.bb
        self.stats["forced_jobs"] += len(starving)
        pool = window[len(starving):]
        selected = self._selection(pool, free_nodes, free_bb, view, rng, record=True)
        if starving:
            self._count_forced(starving, base_window, view, rng)
        if selected is None:
            return window + rest
        chosen = {job.job_id for job in selected}
        return starving + selected + [j for j in pool if j.job_id not in chosen] + rest

    def _mark(self, window: list[Job], now: float) -> None:
        seen = self._seen
        if self.by_invocations:
            for job in window:
                seen[job.job_id] = seen.get(job.job_id, 0.0) + 1.0
        else:
            for job in window:
                seen.setdefault(job.job_id, now)

    def _selection(self, pool: list[Job], free_nodes: float, free_bb: float, view: View,
                   rng: np.random.Generator, record: bool) -> list[Job] | None:
        """The method's selection from ``pool`` in pool order (``None``: the base order).

        ``record`` counts it in the run's stats (the comparison run of ``_count_forced``
        is not counted)."""
        fitting = [i for i, j in enumerate(pool) if j.cores <= free_nodes and j.bb <= free_bb]
        if record and len(fitting) >= 2:
            self.stats["fit_two_plus"] += 1
        if not fitting or type(self).select is WindowScheduler.select:
            return None
        if len(fitting) == 1:  # every method takes a lone fitting job: it adds to both objectives
            mask = 1
        else:
            candidates = Window.of([pool[i].cores for i in fitting], [pool[i].bb for i in fitting],
                                   free_nodes, free_bb)
            began = time.perf_counter()
            self.recording = record
            found = self.select(candidates, view, rng)
            self.recording = True
            if record:
                self.stats["solver_seconds"] += time.perf_counter() - began
                self.stats["optimiser_runs"] += 1
            if found is None:
                return None
            mask = found
        selected = [pool[fitting[bit]] for bit in range(len(fitting)) if mask >> bit & 1]
        if record:
            self.stats["optimisations"] += 1
            base = greedy_prefix(pool, free_nodes, free_bb)
            if {j.job_id for j in selected} != {j.job_id for j in base}:
                self.stats["changed"] += 1
        return selected

    def _count_forced(self, starving: list[Job], base_window: list[Job], view: View,
                      rng: np.random.Generator) -> None:
        """Count the fixed-in starving jobs the method would not have started unforced."""
        free_nodes, free_bb = view.free_total[0], view.free_bb
        unforced = self._selection(base_window, free_nodes, free_bb, view, rng, record=False)
        if unforced is None:
            unforced = greedy_prefix(base_window, free_nodes, free_bb)
        started = {job.job_id for job in unforced}
        self.stats["forced_starts"] += sum(job.job_id not in started for job in starving)
