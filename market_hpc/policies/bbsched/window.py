"""The scheduling invocation every BBSched method shares: base order, window, starvation
bound, the method's selection, then multi-resource EASY (Fan et al., HPDC '19, §3.1;
the paper's outline, with the steps it leaves open).

1. order the queue by the base policy: ``fcfs`` (arrival, Cori) or ``wfp``
   (``n * (wait / walltime)**3``, highest first, Theta; Cobalt's formula, not the paper's);
2. take a window of the first ``window`` jobs. *Starving* jobs enter it first and must be
   selected. The paper bounds "the number of iterations that a job can stay in the
   window" (e.g. 50) and does not define an iteration (``policies.bbsched_starvation``): by
   default (scheduling invocations, bound 50) a job that has been in the window in more than
   ``starvation`` (50) scheduling invocations is starving. As options,
   ``starvation_by = "optimised"`` counts only the invocations with a choice,
   ``"passed-over"`` those in which the job fitted the free resources and did not start
   (it needs a ``starvation_backstop``: seconds in a window after which a job is starving
   whatever its count), ``"seconds"`` bounds the time since the job first entered a window;
3. a starving job that fits is fixed into the selection (its resources are taken first)
   and the rest of the window is still optimised over what is left; the first starving
   job that does not fit heads the queue and holds EASY's reservation (shadow time and
   extra nodes and burst buffer, after the fixed jobs' starts), and the rest of the
   window is still optimised, over the jobs that cannot delay it: those ending (by their
   estimate) by the shadow time, and those running past it as far as they fit the extra
   together (``Window.long_from``; the paper is silent; the other reading skips it);
4. the method selects a subset of the window jobs that fit the free nodes and burst
   buffer one by one;
5. the queue is reordered: selected jobs, the other window jobs, the rest, and
   multi-resource EASY (``classic.Easy.schedule``) starts and backfills along it.

Counted per run (``stats``, ``policy_*`` in ``summary.json``): ``invocations``;
``fit_two_plus`` (two or more window jobs fit the free resources, so a method has a
choice; under a reservation, the window jobs other than the fixed and reserved ones);
``eligible_two_plus`` (two or more of them may also start without delaying the
reservation: the optimiser's candidates; equal to ``fit_two_plus`` without one);
``optimiser_runs`` (the method's optimiser ran on such a window) and ``reserved_runs``
(of those, under a reservation); ``changed`` (its selection differs from the base
order's: the window jobs served in order while they fit, or under a reservation the
ones EASY would backfill in window order); ``forced_starts`` (starving jobs fixed in
that the method's own selection on the unforced window would not have started:
forcings that change nothing are not counted, ``forced_jobs`` counts them all);
``forced_blocks`` (a starving job did not fit and held the reservation).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, ClassVar

import numpy as np

from market_hpc.algorithms.bbsched.selection import Window
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.parameters import Param
from market_hpc.policies.base import Allocator, Decision, PolicyBase, View
from market_hpc.policies.bbsched.starvation import (
    DEFAULT_BACKSTOP,
    DEFAULT_READING,
    STARVATION_READINGS,
    Starvation,
)
from market_hpc.policies.capabilities import BBSCHED
from market_hpc.policies.classic import Easy
from market_hpc.validation import Range

BASE_ORDERS = ("fcfs", "wfp")
DEFAULT_STARVATION = 50.0
"""The paper's example bound: 50 iterations in a window (§3.1), read as invocations."""


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

    >>> jobs = [Job(1, 0.0, 1.0, 1.0, units=4), Job(2, 0.0, 1.0, 1.0, units=8),
    ...         Job(3, 0.0, 1.0, 1.0, units=1)]
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


@dataclass(frozen=True)
class Reservation:
    """EASY's reservation for a starving job that does not fit: what may go around it.

    Attributes:
        now: The invocation's time.
        shadow: When the reserved job is expected to start.
        extra_nodes, extra_bb: What is left at the shadow time once it has what it needs.
        others_fit: No other resource's extra is negative (a job asking for nodes and
            burst buffer only fits the extra when its nodes and burst buffer do).
    """

    now: float
    shadow: float
    extra_nodes: float
    extra_bb: float
    others_fit: bool = True

    def ends_by_shadow(self, job: Job) -> bool:
        """The job would end (by its estimate) by the shadow time: it cannot delay it."""
        return self.now + job.estimate <= self.shadow

    def fits_extra(self, job: Job) -> bool:
        """The job alone fits the extra (it may then run past the shadow time)."""
        return job.cores <= self.extra_nodes and job.bb <= self.extra_bb and self.others_fit


def greedy_backfill(
    jobs: Sequence[Job], free_nodes: float, free_bb: float, reservation: Reservation
) -> list[Job]:
    """The jobs EASY backfills around ``reservation`` in the given order (the base order's
    choice under a reservation): each fits what is free, and ends by the shadow time or
    fits what is left of the extra.

    >>> res = Reservation(0.0, 10.0, 4, 0)
    >>> jobs = [Job(1, 0.0, 20.0, 20.0, units=6), Job(2, 0.0, 20.0, 20.0, units=3),
    ...         Job(3, 0.0, 5.0, 5.0, units=4)]
    >>> [j.job_id for j in greedy_backfill(jobs, 8, 0, res)]  # 1 would delay the head; 3 ends by 10
    [2, 3]
    """
    taken = []
    extra_nodes, extra_bb = reservation.extra_nodes, reservation.extra_bb
    for job in jobs:
        if job.cores > free_nodes or job.bb > free_bb:
            continue
        if not reservation.ends_by_shadow(job):
            if job.cores > extra_nodes or job.bb > extra_bb or not reservation.others_fit:
                continue
            extra_nodes -= job.cores
            extra_bb -= job.bb
        taken.append(job)
        free_nodes -= job.cores
        free_bb -= job.bb
    return taken


class WindowScheduler(PolicyBase):
    """Base order, window, starvation bound and a selector, under multi-resource EASY.

    Args:
        allocator: Where jobs go.
        window: Window size w (>= 1).
        order: Base order, ``fcfs`` or ``wfp``.
        starvation: The bound: iterations spent in a window (default 50), or seconds.
        starvation_by: What counts as an iteration (``policies.bbsched_starvation``):
            ``invocations`` (default), ``optimised``, ``passed-over``, or ``seconds``.
        starvation_backstop: Seconds since first entering a window after which a job
            is starving whatever its count (default 0: none; ``passed-over`` needs one).
    """

    label = "bb-baseline"
    handles = BBSCHED
    # BBSched schedules node counts; the heterogeneity allocators (Netti et al.) add nothing
    # here (and every allocator pair multiplies the conformance suite)
    allocators = ("first-fit", "best-fit")
    max_window = 64
    # the policy.window settings arrive under these names too (``size`` as ``window``)
    parameters: ClassVar[Mapping[str, Param]] = {
        "window": Param("int", Range(1, 1_000_000, integer=True)),
        "order": Param("str", choices=BASE_ORDERS),
        "starvation": Param("float", Range(0.0, 2.0**50, low_open=True)),
        "starvation_by": Param("str", choices=STARVATION_READINGS),
        "starvation_backstop": Param("float", Range(0.0, 2.0**50)),
    }

    def __init__(
        self,
        allocator: Allocator,
        window: int = 20,
        order: str = "fcfs",
        starvation: float = DEFAULT_STARVATION,
        starvation_by: str = DEFAULT_READING,
        starvation_backstop: float = DEFAULT_BACKSTOP,
    ) -> None:
        if order not in BASE_ORDERS:
            raise UnknownNameError(f"{self.label} order", order, BASE_ORDERS)
        if not 1 <= window <= self.max_window:
            raise ConfigError(f"{self.label}: window must be in 1..{self.max_window}, got {window}")
        self.starvation_rule = Starvation(
            starvation, starvation_by, starvation_backstop, self.label
        )
        self.allocator = allocator
        self.easy = Easy(allocator)
        self.window = window
        self.order = order
        self.starvation = starvation
        self.name = f"{self.label}+{allocator.name}"
        self.recording = True  # False while ``_count_forced`` runs the unforced comparison
        self._invocation: tuple[list[Job], float, float] | None = (
            None  # window, free nodes and BB at its start
        )
        self._had_choice = False  # two or more window jobs were eligible in this invocation
        self.stats: dict[str, Any] = {
            "invocations": 0,
            "fit_two_plus": 0,
            "optimiser_runs": 0,
            "changed": 0,
            "optimisations": 0,
            "eligible_two_plus": 0,
            "reserved_runs": 0,
            "forced_jobs": 0,
            "forced_starts": 0,
            "forced_blocks": 0,
            "backstop_jobs": 0,
            "solver_seconds": 0.0,
        }

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
            if (
                arranged is not None
            ):  # the window is the queue's front: the rest stays in queue order
                decision = self.easy.schedule(
                    view, chain(arranged, islice(view.queue, len(front), None))
                )
            else:
                decision = self.easy.schedule(view, self._reorder(list(view.queue), view, rng))
        else:
            queue = wfp_order_fast(view.queue, view.time)
            if not queue:
                return Decision()
            self.stats["invocations"] += 1
            decision = self.easy.schedule(view, self._reorder(queue, view, rng))
        started = {action.job_id for action in decision.actions}
        rule = self.starvation_rule
        if self._invocation is not None:
            window, free_nodes, free_bb = self._invocation
            rule.counted(window, started, free_nodes, free_bb, had_choice=self._had_choice)
            self._invocation = None
        rule.forget(started)  # started jobs leave the queue and the window
        self.stats["backstop_jobs"] = rule.by_backstop
        return decision

    def _starving(self, job: Job, now: float) -> bool:
        return self.starvation_rule.starving(job, now)

    def _arrange_front(
        self, front: list[Job], view: View, rng: np.random.Generator
    ) -> list[Job] | None:
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
        if not {job.job_id for job in front}.issuperset(self.starvation_rule.first):
            return None
        now = view.time
        starving = [j for j in front if self._starving(j, now)]
        window = starving + [j for j in front if not self._starving(j, now)] if starving else front
        return self._arrange(window, starving, front, view, rng, [])

    def _reorder(self, queue: list[Job], view: View, rng: np.random.Generator) -> list[Job]:
        now = view.time
        self.starvation_rule.keep(queue)
        starving = [j for j in queue if self._starving(j, now)][: self.window]
        if starving:
            forced_ids = {j.job_id for j in starving}
            others = [j for j in queue if j.job_id not in forced_ids]
            window, rest = (
                starving + others[: self.window - len(starving)],
                others[self.window - len(starving) :],
            )
        else:
            window, rest = queue[: self.window], queue[self.window :]
        return self._arrange(window, starving, queue[: self.window], view, rng, rest)

    def _arrange(
        self,
        window: list[Job],
        starving: list[Job],
        base_window: list[Job],
        view: View,
        rng: np.random.Generator,
        rest: list[Job],
    ) -> list[Job]:
        """The window (``starving`` jobs first) rearranged by the method, then ``rest``;
        ``base_window`` is the window the base order alone would take."""
        free_nodes, free_bb = view.free_total[0], view.free_bb
        self.starvation_rule.note_forced(starving)
        self.starvation_rule.entered(window, view.time)
        self._invocation, self._had_choice = (window, free_nodes, free_bb), False
        fixed: list[Job] = []
        for job in starving:  # fix forced jobs in while they fit
            if job.cores > free_nodes or job.bb > free_bb:
                return self._reserve(window, fixed, job, base_window, view, rng, rest)
            fixed.append(job)
            free_nodes -= job.cores
            free_bb -= job.bb
        self.stats["forced_jobs"] += len(fixed)
        pool = window[len(fixed) :]
        selected = self._selection(pool, free_nodes, free_bb, view, rng, record=True)
        if fixed:
            self._count_forced(fixed, base_window, view, rng)
        if selected is None:
            return window + rest
        chosen = {job.job_id for job in selected}
        return fixed + selected + [j for j in pool if j.job_id not in chosen] + rest

    def _reserve(
        self,
        window: list[Job],
        fixed: list[Job],
        head: Job,
        base_window: list[Job],
        view: View,
        rng: np.random.Generator,
        rest: list[Job],
    ) -> list[Job]:
        """A starving ``head`` does not fit after the ``fixed`` starving jobs: it heads the
        queue and holds EASY's reservation, and the rest of the window is still optimised,
        over the jobs that cannot delay that reservation (they end by its shadow time, or
        together they use only its extra nodes and burst buffer)."""
        self.stats["forced_blocks"] += 1
        self.stats["forced_jobs"] += len(fixed)
        if fixed:
            self._count_forced(fixed, base_window, view, rng)
        pool = [j for j in window[len(fixed) :] if j is not head]
        free_nodes = view.free_total[0] - sum(j.cores for j in fixed)
        free_bb = view.free_bb - sum(j.bb for j in fixed)
        shadow, extra = self.easy.reservation_after(view, fixed, head)
        reservation = Reservation(
            view.time,
            shadow,
            extra[0],
            extra[-1] if view.platform.burst_buffer > 0 else 0.0,
            all(e >= 0 for e in extra[1:-1]),
        )
        selected = self._selection(
            pool, free_nodes, free_bb, view, rng, record=True, reservation=reservation
        )
        if selected is None:
            return window + rest
        chosen = {job.job_id for job in selected}
        return fixed + [head] + selected + [j for j in pool if j.job_id not in chosen] + rest

    def _selection(
        self,
        pool: list[Job],
        free_nodes: float,
        free_bb: float,
        view: View,
        rng: np.random.Generator,
        record: bool,
        reservation: Reservation | None = None,
    ) -> list[Job] | None:
        """The method's selection from ``pool`` (``None``: the base order).

        Without a ``reservation`` the candidates are the pool jobs that fit the free
        resources one by one, in pool order. Under one they are those that may also be
        backfilled around it, the jobs ending by the shadow time first (ties then prefer
        them) and those running past it last, which may together use only the extra.
        ``record`` counts it in the run's stats (the comparison run of ``_count_forced``
        is not counted)."""
        fits = [j for j in pool if j.cores <= free_nodes and j.bb <= free_bb]
        if record and len(fits) >= 2:
            self.stats["fit_two_plus"] += 1
        long_from = None
        if reservation is not None:
            short = [j for j in fits if reservation.ends_by_shadow(j)]
            fits = short + [
                j for j in fits if not reservation.ends_by_shadow(j) and reservation.fits_extra(j)
            ]
            long_from = len(short)
        if record and len(fits) >= 2:
            self.stats["eligible_two_plus"] += 1
            self._had_choice = True
        if not fits or type(self).select is WindowScheduler.select:
            return None
        if len(fits) == 1:  # every method takes a lone fitting job: it adds to both objectives
            mask = 1
        else:
            extra = (
                (reservation.extra_nodes, reservation.extra_bb)
                if reservation is not None
                else (0.0, 0.0)
            )
            candidates = Window.of(
                [j.cores for j in fits],
                [j.bb for j in fits],
                free_nodes,
                free_bb,
                long_from,
                *extra,
            )
            began = time.perf_counter()
            self.recording = record
            found = self.select(candidates, view, rng)
            self.recording = True
            if record:
                self.stats["solver_seconds"] += time.perf_counter() - began
                self.stats["optimiser_runs"] += 1
                self.stats["reserved_runs"] += reservation is not None
            if found is None:
                return None
            mask = found
        selected = [fits[bit] for bit in range(len(fits)) if mask >> bit & 1]
        if record:
            self.stats["optimisations"] += 1
            base = (
                greedy_prefix(pool, free_nodes, free_bb)
                if reservation is None
                else greedy_backfill(pool, free_nodes, free_bb, reservation)
            )
            if {j.job_id for j in selected} != {j.job_id for j in base}:
                self.stats["changed"] += 1
        return selected

    def _count_forced(
        self, starving: list[Job], base_window: list[Job], view: View, rng: np.random.Generator
    ) -> None:
        """Count the fixed-in starving jobs the method would not have started unforced."""
        free_nodes, free_bb = view.free_total[0], view.free_bb
        unforced = self._selection(base_window, free_nodes, free_bb, view, rng, record=False)
        if unforced is None:
            unforced = greedy_prefix(base_window, free_nodes, free_bb)
        started = {job.job_id for job in unforced}
        self.stats["forced_starts"] += sum(job.job_id not in started for job in starving)
