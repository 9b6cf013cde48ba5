"""Seed 003 schedulers: BBSched and its seven baselines, all windowed and under EASY.

Every method runs the same invocation (Fan et al., HPDC '19, §3.1 and spec §1.6):

1. order the queue by the base policy: ``fcfs`` (arrival, Cori) or ``wfp``
   (``n * (wait / walltime)**3``, highest first, Theta; spec A22);
2. take a window of the first ``window`` jobs; *starving* jobs (in a window for longer
   than ``starvation`` seconds since they first entered one: the paper's bound on window
   iterations, as a time) enter it first and must be selected: they are clamped in
   while they fit, and when one does not fit no optimisation runs this time, so it is
   the EASY head (spec §3.11);
3. the method selects a subset of the window jobs that fit the free nodes and burst
   buffer individually;
4. the queue is reordered: selected jobs, the other window jobs, the rest, and
   multi-resource EASY (``classic.Easy.schedule``) starts and backfills along it.

"Nodes" are the processors a job requests (SWF traces count processors; on one-core-
per-node presets such as ``kth-sp2`` they are nodes) and the burst buffer is the shared
pool ``view.free_bb`` in GB.

Methods: ``bb-baseline`` (Slurm-like: no window optimisation), ``bb-weighted`` (50/50),
``bb-weighted-cpu`` (80/20), ``bb-weighted-bb`` (20/80), ``bb-constrained-cpu``,
``bb-constrained-bb``, ``bb-binpacking`` (Tetris-like alignment) and ``bbsched`` (the
paper's GA Pareto set and decision rule). The weighted and constrained optima are exact
(enumeration, so their window is at most 22 jobs).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import chain, islice
from typing import Any

import numpy as np

from market_hpc.algorithms.bbsched import (
    MAX_EXACT_JOBS,
    RULES,
    Window,
    bin_packing_select,
    choose,
    constrained_select,
    exact_pareto,
    weighted_select,
)
from market_hpc.algorithms.bbsched_ga import GaSettings, ga_pareto
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.policies.base import Allocator, Decision, View
from market_hpc.policies.classic import Easy
from market_hpc.policies.registry import register_scheduler

BASE_ORDERS = ("fcfs", "wfp")
ALLOCATORS = ("first-fit", "best-fit")
"""Seed 003 schedules node counts; seed 000's heterogeneity allocators add nothing here
(and every allocator pair multiplies the conformance suite)."""
DEFAULT_STARVATION = 86400.0
"""Seconds a job may stay in windows before it is forced (the paper's example bound is
50 invocations; a time bound does not depend on how often events happen)."""


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


Selector = Callable[[Window, View, np.random.Generator], int]


class WindowScheduler:
    """Base order, window, starvation bound and a selector, under multi-resource EASY.

    Args:
        allocator: Where jobs go.
        window: Window size w (>= 1).
        order: Base order, ``fcfs`` or ``wfp``.
        starvation: Seconds after first entering a window from which a job is forced.
    """

    label = "bb-baseline"
    max_window = 64

    def __init__(self, allocator: Allocator, window: int = 20, order: str = "fcfs",
                 starvation: float = DEFAULT_STARVATION) -> None:
        if order not in BASE_ORDERS:
            raise UnknownNameError(f"{self.label} order", order, BASE_ORDERS)
        if not 1 <= window <= self.max_window:
            raise ConfigError(f"{self.label}: window must be in 1..{self.max_window}, got {window}")
        if starvation <= 0:
            raise ConfigError(f"{self.label}: starvation must be > 0 seconds, got {starvation}")
        self.allocator = allocator
        self.easy = Easy(allocator)
        self.window = window
        self.order = order
        self.starvation = starvation
        self.name = f"{self.label}+{allocator.name}"
        self._entered: dict[int, float] = {}
        self.stats = {"invocations": 0, "optimisations": 0, "forced_starts": 0, "solver_seconds": 0.0}

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
            queue = wfp_order(view.queue, view.time)
            if not queue:
                return Decision()
            self.stats["invocations"] += 1
            decision = self.easy.schedule(view, self._reorder(queue, view, rng))
        entered = self._entered
        for action in decision.actions:  # started jobs leave the queue and the window
            entered.pop(action.job_id, None)
        return decision

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
        entered = self._entered
        if not {job.job_id for job in front}.issuperset(entered):
            return None
        now = view.time
        starving = [j for j in front if now - entered.get(j.job_id, now) > self.starvation]
        window = starving + [j for j in front if not now - entered.get(j.job_id, now) > self.starvation] \
            if starving else front
        return self._arrange(window, starving, view, rng, [])

    def _reorder(self, queue: list[Job], view: View, rng: np.random.Generator) -> list[Job]:
        now, entered = view.time, self._entered
        self._entered = entered = {j.job_id: entered[j.job_id] for j in queue if j.job_id in entered}
        starving = [j for j in queue if now - entered.get(j.job_id, now) > self.starvation][: self.window]
        if starving:
            forced_ids = {j.job_id for j in starving}
            others = [j for j in queue if j.job_id not in forced_ids]
            window, rest = starving + others[: self.window - len(starving)], others[self.window - len(starving):]
        else:
            window, rest = queue[: self.window], queue[self.window:]
        return self._arrange(window, starving, view, rng, rest)

    def _arrange(self, window: list[Job], starving: list[Job], view: View, rng: np.random.Generator,
                 rest: list[Job]) -> list[Job]:
        """The window (``starving`` jobs first) rearranged by the method, then ``rest``."""
        now, entered = view.time, self._entered
        for job in window:
            entered.setdefault(job.job_id, now)
        free_nodes, free_bb = view.free_total[0], view.free_bb
        for job in starving:  # clamp forced jobs in while they fit
            if job.cores > free_nodes or job.bb > free_bb:
                return window + rest  # it heads the queue and holds the EASY reservation
            free_nodes -= job.cores
            free_bb -= job.bb
            self.stats["forced_starts"] += 1
        pool = window[len(starving):]
        fitting = [i for i, j in enumerate(pool) if j.cores <= free_nodes and j.bb <= free_bb]
        if not fitting:
            return window + rest
        candidates = Window.of([pool[i].cores for i in fitting], [pool[i].bb for i in fitting], free_nodes, free_bb)
        if len(fitting) == 1:  # every method takes a lone fitting job: it adds to both objectives
            mask = None if type(self).select is WindowScheduler.select else 1
        else:
            began = time.perf_counter()
            mask = self.select(candidates, view, rng)
            self.stats["solver_seconds"] += time.perf_counter() - began
        if mask is None:
            return window + rest
        self.stats["optimisations"] += 1
        chosen = {fitting[bit] for bit in range(len(fitting)) if mask >> bit & 1}
        selected = [j for i, j in enumerate(pool) if i in chosen]
        unselected = [j for i, j in enumerate(pool) if i not in chosen]
        return starving + selected + unselected + rest


def _totals(view: View) -> tuple[float, float]:
    return float(view.platform.total[0]), float(view.platform.burst_buffer)


@register_scheduler(
    "bb-baseline",
    "seed 003 Baseline: base order (fcfs/wfp) under EASY over nodes and burst buffer",
    allocators=ALLOCATORS,
)
class BbBaseline(WindowScheduler):
    """The naive method (Slurm-like): serve the base order while jobs fit, then EASY."""


class _Weighted(WindowScheduler):
    weights = (0.5, 0.5)
    max_window = MAX_EXACT_JOBS

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        return weighted_select(window, *self.weights, *_totals(view))


@register_scheduler(
    "bb-weighted",
    "seed 003 Weighted: max 0.5 node + 0.5 burst-buffer utilisation of the window",
    allocators=ALLOCATORS,
)
class BbWeighted(_Weighted):
    label = "bb-weighted"


@register_scheduler(
    "bb-weighted-cpu",
    "seed 003 Weighted_CPU: max 0.8 node + 0.2 burst-buffer utilisation",
    allocators=ALLOCATORS,
)
class BbWeightedCpu(_Weighted):
    label = "bb-weighted-cpu"
    weights = (0.8, 0.2)


@register_scheduler(
    "bb-weighted-bb",
    "seed 003 Weighted_BB: max 0.2 node + 0.8 burst-buffer utilisation",
    allocators=ALLOCATORS,
)
class BbWeightedBb(_Weighted):
    label = "bb-weighted-bb"
    weights = (0.2, 0.8)


class _Constrained(WindowScheduler):
    resource = "nodes"
    max_window = MAX_EXACT_JOBS

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        return constrained_select(window, self.resource)


@register_scheduler(
    "bb-constrained-cpu",
    "seed 003 Constrained_CPU: max nodes used, burst buffer as a constraint",
    allocators=ALLOCATORS,
)
class BbConstrainedCpu(_Constrained):
    label = "bb-constrained-cpu"


@register_scheduler(
    "bb-constrained-bb",
    "seed 003 Constrained_BB: max burst buffer used, nodes as a constraint",
    allocators=ALLOCATORS,
)
class BbConstrainedBb(_Constrained):
    label = "bb-constrained-bb"
    resource = "bb"


@register_scheduler(
    "bb-binpacking",
    "seed 003 Bin_Packing: Tetris-like alignment score over the window",
    allocators=ALLOCATORS,
)
class BbBinPacking(WindowScheduler):
    """Bin_Packing; ``normalise=False`` uses raw units as the reference code (spec A12)."""

    label = "bb-binpacking"

    def __init__(self, allocator: Allocator, normalise: bool = True, **params: Any) -> None:
        super().__init__(allocator, **params)
        self.normalise = normalise

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        return bin_packing_select(window, *_totals(view), normalise=self.normalise)


@register_scheduler(
    "bbsched",
    "seed 003 BBSched: GA Pareto set of (nodes, burst buffer) + the paper's decision rule",
    allocators=ALLOCATORS,
)
class BbSched(WindowScheduler):
    """BBSched (Fan et al. 2019).

    Args:
        allocator: Where jobs go.
        generations: G (500). population: P (20). mutation: p_m (0.0005).
        rule: Decision rule, ``paper`` (2x) or ``code`` (the reference implementation's).
        exhaustive_up_to: Enumerate the Pareto set exactly instead of running the GA
            when at most this many window jobs fit (the reference code does at 10;
            0 always runs the GA).
        **params: ``window``, ``order``, ``starvation`` of ``WindowScheduler``.
    """

    label = "bbsched"
    max_window = 62

    def __init__(self, allocator: Allocator, generations: int = 500, population: int = 20,
                 mutation: float = 0.0005, rule: str = "paper", exhaustive_up_to: int = 10,
                 **params: Any) -> None:
        super().__init__(allocator, **params)
        if rule not in RULES:
            raise UnknownNameError("bbsched rule", rule, RULES)
        if not 0 <= exhaustive_up_to <= MAX_EXACT_JOBS:
            raise ConfigError(f"bbsched: exhaustive_up_to must be in 0..{MAX_EXACT_JOBS}, got {exhaustive_up_to}")
        try:
            self.settings = GaSettings(generations, population, mutation)
        except ValueError as exc:
            raise ConfigError(f"bbsched: {exc}") from None
        self.rule = rule
        self.exhaustive_up_to = exhaustive_up_to
        self.stats["ga_runs"] = 0

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        if window.size <= self.exhaustive_up_to:
            front = exact_pareto(window)
        else:
            front = ga_pareto(window, self.settings, int(rng.integers(2**63)))
            self.stats["ga_runs"] += 1
        total_nodes, total_bb = _totals(view)
        used_bb = total_bb - view.free_bb
        return choose(front, window.size, total_nodes, total_bb, self.rule,
                      total_nodes - view.free_total[0], used_bb)


BB_SCHEDULERS = ("bbsched", "bb-baseline", "bb-weighted", "bb-weighted-cpu", "bb-weighted-bb",
                 "bb-constrained-cpu", "bb-constrained-bb", "bb-binpacking")

_COMMON = {"size": "window", "order": "order", "starvation": "starvation"}
_OWN = {"bbsched": ("generations", "population", "mutation", "rule", "exhaustive_up_to"),
        "bb-binpacking": ("normalise",)}


def window_params(scheduler: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """Constructor parameters of a window scheduler from ``policy.window`` settings
    (``None`` for other schedulers, which take none of them).

    >>> window_params("bb-weighted", {"size": 10, "order": "wfp", "starvation": 60.0, "rule": "code"})
    {'window': 10, 'order': 'wfp', 'starvation': 60.0}
    >>> window_params("easy", {"size": 10}) is None
    True
    """
    if scheduler not in BB_SCHEDULERS:
        return None
    params = {name: settings[key] for key, name in _COMMON.items() if key in settings}
    params.update({key: settings[key] for key in _OWN.get(scheduler, ()) if key in settings})
    return params
