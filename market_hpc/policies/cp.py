"""CP-SAT dispatchers: PCP'20, PCP'19, HCP'19 (Galleguillos et al.) and CPH (Netti et al., ISC'18).

Each turns the view into a ``CpInstance`` (``market_hpc.algorithms.cp.instance``), solves
it, and starts the jobs the plan starts now; the others stay queued with their submit
time. Decisions taken where the papers are silent (also in ``docs/cp.md``):

* **Model units.** Resource types with capacity on the platform; memory in whole GB
  (per-unit requests rounded up, node capacities down: never overcommitted). Durations are
  whole seconds: ``max(1, ceil(estimate))``; a running job has
  ``max(1, ceil(expected end - t))`` left (a job past its estimate gets 1 s).
* **Modelled jobs.** PCP'20, PCP'19, HCP'19: the jobs that alone fit the free
  resources now, the ``queue_limit`` (100) with the highest priority
  ``(t - q + d) / d`` (ties: shorter ``d``, smaller area, earlier submit, lower id).
  The limit halves after a decision whose solver found nothing and is reset after a
  solved one (sec. 3.11). CPH models the ``queue_limit`` most urgent jobs in PRB order,
  fitting now or not, and minimises ``sum floor(maxEWT / EWT_q) * wait`` (CPH's queue weights).
* **One modelled job** that fits now: starting it now is optimal, no solver call
  (status ``TRIVIAL``).
* **Checks.** Every start is re-checked on a scratch copy of the free resources
  (node-exclusive mode, which the models do not know, and memory rounding); a plan
  allocation that fails is replaced by the allocator's, and a job neither places waits.
  If nothing runs and the plan starts nothing, the first job in priority order the
  allocator places starts (no decision can then idle an empty machine forever).
* **Not implemented**: HCP'19/PCP'19's "dispatching skip" and CPH's hand-over of
  its plan to WEIGHTED's lookahead (AccaSim's extension); moldable jobs are dispatched
  as rigid ones.

Per decision the policy records status, model size and time; ``summary_stats()``
feeds ``summary.json``.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from market_hpc.algorithms.cp.budget import DECISION_BUDGET
from market_hpc.algorithms.cp.cuts import CUTS
from market_hpc.algorithms.cp.instance import (
    BRANCHINGS,
    BUDGET,
    HINTS,
    TRIVIAL,
    UNIT_LIMITED,
    CpInstance,
    CpJob,
    CpLimits,
    CpOutcome,
    CpRunning,
    slowdown_weight,
)
from market_hpc.algorithms.hetero.orderings import prb_order
from market_hpc.domain.job import Job
from market_hpc.domain.platform import MIB_PER_GB
from market_hpc.domain.resources import MEM
from market_hpc.errors import ConfigError
from market_hpc.parameters import Param
from market_hpc.policies.allocators import job_fits
from market_hpc.policies.base import (
    NOTHING,
    Action,
    Allocation,
    Allocator,
    Decision,
    PolicyBase,
    Start,
    View,
)
from market_hpc.policies.capabilities import CP, HETEROGENEITY
from market_hpc.policies.hetero.allocators import announce
from market_hpc.policies.hetero.schedulers import DEFAULT_EXPECTED_WAIT, Prb, take_nodes
from market_hpc.policies.params import SOLVE_SECONDS
from market_hpc.policies.registry import register_scheduler
from market_hpc.validation import Range

QUEUE_LIMIT = 100
STATUS_KEYS = ("OPTIMAL", "FEASIBLE", "FALLBACK", "TRIVIAL")
"""Statuses ``cp_status_counts`` always lists (others, GREEDY, UNIT_LIMITED, LIVENESS and, for
the dispatchers with a decision budget, BUDGET, when they occur)."""
RELAXATION_TAGS = ("proved", "proved-cut", "unpacked", "bound", "skipped")
"""What PCP'20's schedule relaxation did per model (``CpOutcome.relaxation``)."""
UNBUILT = ("relaxation", "budget")
"""Why a modelled decision built no PCP'20 model (``CpOutcome.unbuilt``)."""
TIME_CONTROLS = ("deterministic", "paper")
"""PCP'20 time control: deterministic-time limits (reproducible), or the authors' wall
clock (1 s, +0.5 s per retry while no solution, 30 retries)."""
DETERMINISTIC_TIME = 0.002
"""Default initial deterministic-time limit per solve. The study keeps it (docs/cp.md, "Search,
hint and redundant rules": with PCP'20's list hint and redundant rules, 25x more raised the
OPTIMAL share from 0.57-0.58 to 0.63-0.69 on the study's instances at 3-4x the CPU per
decision, and the dispatch-time goal at 100 queued jobs leaves no room for it)."""


def model_units(platform_capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns with capacity, their divisor (GB for memory) and node capacities in model units.

    >>> cols, scale, cap = model_units(np.array([[16, 2, 0, 16384]]))
    >>> cols.tolist(), scale.tolist(), cap.tolist()
    ([0, 1, 3], [1, 1, 1024], [[16, 2, 16]])
    """
    cols = np.flatnonzero(platform_capacity.sum(axis=0) > 0)
    scale = np.array([MIB_PER_GB if c == MEM else 1 for c in cols], dtype=np.int64)
    return cols, scale, platform_capacity[:, cols] // scale


Usage = tuple[tuple[int, tuple[int, ...]], ...]  # a running job's (node, amounts) entries


class _RunUsage(NamedTuple):
    """A running job's usage in model units before clipping, kept while it runs on
    ``allocation`` (``CpScheduler._running_usage``)."""

    allocation: Any
    exclusive: bool
    usage: Usage
    nodes: np.ndarray  # the usage's nodes ...
    amounts: np.ndarray  # ... and amounts, as rows


def _ceil_units(
    amounts: Sequence[int], columns: Sequence[tuple[int, int]], times: int = 1
) -> tuple[int, ...]:
    """``times * amounts`` in model units, rounded up: ``(column, divisor)`` per modelled
    resource type (``model_units``'s columns and scales).

    >>> _ceil_units((2, 1, 0, 1500), [(0, 1), (1, 1), (3, 1024)], times=3)
    (6, 3, 5)
    """
    return tuple(-(-int(amounts[c] * times) // k) for c, k in columns)


class CpScheduler(PolicyBase):
    """Shared machinery of the four CP dispatchers (see the module docstring).

    Args:
        allocator: Places jobs the model does not place, and re-places failed ones.
        deterministic_time: Initial CP-SAT deterministic-time limit per solve.
        workers: CP-SAT ``num_workers``.
        solver_seed: CP-SAT ``random_seed``.
        wall_seconds: Opt-in wall-clock limit per solve (breaks reproducibility).
        queue_limit: Most jobs per model (the authors' ``q_length``).
        decision_budget: Work units all solves of one decision may spend
            (``cp_instance.Budget``: deterministic, about seconds of CP-SAT CPU on the
            development machine); beyond it the greedy plan decides (status ``BUDGET``).
            0: none (no budget and no per-solve conflict limit, the behaviour before
            budgets). Default ``default_budget``: ``DECISION_BUDGET`` (1.0) for PCP'20 and
            HCP'19, none for PCP'19 and CPH.
    """

    label = ""
    handles = CP
    allocators: ClassVar[tuple[str, ...] | None] = ("best-fit", "first-fit")
    default_allocator = "best-fit"
    default_budget: float | None = None
    parameters: ClassVar[Mapping[str, Param]] = {
        "deterministic_time": Param("float", SOLVE_SECONDS),
        # one CP-SAT thread per worker: past the cores of the largest node they only
        # time-slice (and each holds a copy of the model), and the papers use 1
        "workers": Param("int", Range(1, 64, integer=True)),
        "solver_seed": Param("int", Range(0, 2**31 - 1, integer=True)),
        "wall_seconds": Param("float", SOLVE_SECONDS, optional=True),
        # the authors' q_length is 100; the model and its building grow linearly in it
        "queue_limit": Param("int", Range(1, 10_000, integer=True)),
        # 0: none (cp_budget.Budget); at most 10 minutes
        "decision_budget": Param("float", Range(0.0, 600.0)),
    }

    def __init__(
        self,
        allocator: Allocator,
        deterministic_time: float = DETERMINISTIC_TIME,
        workers: int = 1,
        solver_seed: int = 0,
        wall_seconds: float | None = None,
        queue_limit: int = QUEUE_LIMIT,
        decision_budget: float | None = None,
    ) -> None:
        self.check_declared(queue_limit=queue_limit)  # (the ranges of ``parameters``)
        if decision_budget is None:
            decision_budget = self.default_budget
        else:
            self.check_declared(decision_budget=decision_budget)
        try:
            self.limits = CpLimits(
                float(deterministic_time),
                int(workers),
                int(solver_seed),
                None if wall_seconds is None else float(wall_seconds),
                float(decision_budget) if decision_budget else None,
            )
        except ValueError as exc:
            raise ConfigError(f"scheduler {self.label!r}: {exc}") from None
        self.allocator = allocator
        self.name = f"{self.label}+{allocator.name}"
        self.queue_limit = queue_limit
        self.q_length = queue_limit
        self.statuses: Counter[str] = Counter()
        self.variables: list[int] = []
        self.constraints: list[int] = []
        self.solve_seconds: list[float] = []
        self.searched = 0  # decisions whose solver answer was used (``outcome.changed`` known)
        self.changed = (
            0  # ... of which started other jobs now, or on other nodes, than the greedy plan
        )
        # status of the decisions that went to a model (built, or not needed, or refused)
        self.model_statuses: Counter[str] = Counter()
        self.unbuilt: Counter[str] = Counter()  # ... of which built none, by CpOutcome.unbuilt
        self.relaxations: Counter[str] = (
            Counter()
        )  # what PCP'20's schedule relaxation did (cp_relax)
        self.budget_spent: list[
            float
        ] = []  # work units per decision that built a model (cp_instance.Budget)
        self.budget_exhausted = 0  # ... of which the budget refused or cut short a solve
        self.last: CpOutcome | None = None
        # per platform: (platform, (column, divisor) of each modelled type, capacity in model units)
        self._units: tuple[Any, list[tuple[int, int]], np.ndarray] | None = None
        self._ceil_cache: dict[
            tuple[int, ...], tuple[int, ...]
        ] = {}  # per platform: unit -> model units
        self._whole: tuple[Any, list[tuple[int, ...]]] | None = (
            None  # per platform: node -> model units
        )
        self._usage_cache: dict[int, _RunUsage] = {}  # per running job id
        self._fit_totals: dict[tuple[int, ...], int] | None = None  # during a decision
        # OR-Tools is loaded when the scheduler is made, not inside the first decision's
        # timing (importing it costs ~0.5 s; registering the policies stays free of it)
        import market_hpc.algorithms.cp.pcp20  # noqa: F401  (imports ortools.sat)

    # ------------------------------------------------------------ instance
    def durations(self, jobs: Sequence[Job]) -> list[int]:
        """``max(1, ceil(estimate))`` per job."""
        return [max(1, math.ceil(job.estimate)) for job in jobs]

    def priority_order(self, jobs: Sequence[Job], now: float) -> list[Job]:
        """PCP'19/20 priority: current slowdown descending, ties as in the module docstring."""

        def key(job: Job) -> tuple[float, int, int, float, int]:
            d = max(1, math.ceil(job.estimate))
            return (
                -(now - job.submit + d) / d,
                d,
                d * job.units * sum(job.unit[:3]),
                job.submit,
                job.job_id,
            )

        return sorted(jobs, key=key)

    def fits_now(self, jobs: Sequence[Job], view: View, first: bool = False) -> list[Job]:
        """The jobs that alone fit the free resources now (only the first one with ``first``)."""
        # inside a decision the free resources do not change: units fitting per unit shape
        # are counted once per decision (``decide`` sets ``_fit_totals``)
        totals: dict[tuple[int, ...], int] = (
            self._fit_totals if self._fit_totals is not None else {}
        )
        fitting = []
        for job in jobs:
            if job.bb > view.free_bb:
                continue
            total = totals.get(job.unit)
            if total is None:
                total = totals[job.unit] = int(job_fits(job, view.free, view).sum())
            if total >= job.units:
                fitting.append(job)
                if first:
                    break
        return fitting

    def instance(self, jobs: Sequence[Job], weights: Sequence[int], view: View) -> CpInstance:
        """The CP instance of ``jobs`` (in priority order) and the running jobs."""
        if self._units is None or self._units[0] is not view.platform:
            cols, scale, model_capacity = model_units(view.platform.capacity)
            self._units = (view.platform, list(zip(cols.tolist(), scale.tolist())), model_capacity)
            self._ceil_cache = {}
            self._usage_cache = {}
        _, columns, capacity = self._units
        ceil_cache = self._ceil_cache
        durations = self.durations(jobs)
        cp_jobs = []
        for job, d, w in zip(jobs, durations, weights):
            unit = ceil_cache.get(job.unit)
            if unit is None:
                unit = ceil_cache[job.unit] = _ceil_units(job.unit, columns)
            cp_jobs.append(CpJob(job.job_id, job.units, unit, d, w))
        usages, rows = self._running_usage(view, columns, capacity)
        running = tuple(
            CpRunning(max(1, math.ceil(view.expected_end(run) - view.time)), usage)
            for run, usage in zip(view.running, usages)
        )
        if rows is None:
            return CpInstance(capacity, tuple(cp_jobs), running)
        return CpInstance.with_usage_rows(capacity, tuple(cp_jobs), running, rows)

    def _running_usage(
        self, view: View, columns: list[tuple[int, int]], capacity: np.ndarray
    ) -> tuple[list[Usage], tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """Per running job, ``(node, amounts)`` per node of its allocation in model units,
        each clipped to what the jobs before it left on the node (``min(amount, room)``,
        room >= 0; rounding memory up to whole GB can over-fill a node); and, when nothing
        was clipped, the instance's ``usage_rows`` of them.

        A job's unclipped usage is kept while it runs with the same allocation; with no
        node over-full the clipping changes nothing and is skipped.
        """
        exclusive = view.exclusive
        whole = self._whole_nodes(view) if exclusive else []
        kept, fresh = self._usage_cache, {}
        entries: list[_RunUsage] = []
        for run in view.running:
            entry = kept.get(run.job.job_id)
            if (
                entry is None
                or entry.allocation is not run.allocation
                or entry.exclusive != exclusive
            ):
                unit = run.job.unit
                usage = tuple(
                    (node, whole[node] if exclusive else _ceil_units(unit, columns, units))
                    for node, units in run.allocation
                )
                entry = _RunUsage(
                    run.allocation,
                    exclusive,
                    usage,
                    np.array([node for node, _ in usage], dtype=np.int64),
                    np.array([a for _, a in usage], dtype=np.int64).reshape(
                        len(usage), len(columns)
                    ),
                )
            fresh[run.job.job_id] = entry
            entries.append(entry)
        self._usage_cache = fresh
        if entries:
            nodes = np.concatenate([e.nodes for e in entries])
            amounts = np.concatenate([e.amounts for e in entries])
            total = np.zeros_like(capacity)
            np.add.at(total, nodes, amounts)
            if (total <= capacity).all():
                jobs = np.repeat(np.arange(len(entries)), [len(e.nodes) for e in entries])
                return [e.usage for e in entries], (jobs, nodes, amounts)
        room = capacity.tolist()
        usages: list[Usage] = []
        for entry in entries:
            clipped = []
            for node, asked in entry.usage:
                left = room[node]
                taken = tuple(min(a, r) for a, r in zip(asked, left))
                room[node] = [r - t for r, t in zip(left, taken)]
                clipped.append((node, taken))
            usages.append(tuple(clipped))
        return usages, None

    def _whole_nodes(self, view: View) -> list[tuple[int, ...]]:
        """Each node's whole capacity in model units (what a node-exclusive job takes)."""
        if self._whole is None or self._whole[0] is not view.platform:
            columns = self._units[1]  # type: ignore[index]  # set by ``instance`` for this platform
            self._whole = (
                view.platform,
                [_ceil_units(row, columns) for row in view.platform.capacity.tolist()],
            )
        return self._whole[1]

    # ------------------------------------------------------------ decision
    def modelled(self, queue: list[Job], view: View) -> tuple[list[Job], list[int]]:
        """The jobs to model, in priority order, and their objective weights."""
        jobs = self.fits_now(self.priority_order(queue, view.time), view)[: self.q_length]
        return jobs, [slowdown_weight(d) for d in self.durations(jobs)]

    def solve(self, instance: CpInstance) -> CpOutcome:
        """Solve one instance (each dispatcher its own model)."""
        raise NotImplementedError

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Model, solve, and start the jobs planned to start now."""
        began = time.perf_counter()
        self._fit_totals = {}
        try:
            return self._decide(view, began)
        finally:
            self._fit_totals = None

    def _decide(self, view: View, began: float) -> Decision:
        queue = list(view.queue)
        if not queue or not self.fits_now(queue, view, first=True):
            return NOTHING  # nothing can start: no model (the authors' code does the same)
        jobs, weights = self.modelled(queue, view)
        if len(jobs) == 1 and self.fits_now(jobs, view):
            outcome = CpOutcome({jobs[0].job_id: 0}, {}, TRIVIAL)
        else:
            outcome = self.solve(self.instance(jobs, weights, view))
            self.adapt_queue_length(outcome, len(jobs))
        self.last = outcome
        actions = self.starts(jobs, outcome, view)
        if not actions and not view.running:
            actions = self.first_fitting(self.priority_order(queue, view.time), view)
        self.statuses[outcome.status] += 1
        if outcome.variables:  # a model was built
            self.variables.append(outcome.variables)
            self.constraints.append(outcome.constraints)
        if outcome.variables or outcome.unbuilt:
            self.model_statuses[outcome.status] += 1
        if outcome.relaxation:
            self.relaxations[outcome.relaxation] += 1
        if outcome.unbuilt:
            self.unbuilt[outcome.unbuilt] += 1
        if outcome.budget_spent:
            self.budget_spent.append(outcome.budget_spent)
            self.budget_exhausted += outcome.budget_exhausted
        if outcome.changed is not None:
            self.searched += 1
            self.changed += outcome.changed
        self.solve_seconds.append(time.perf_counter() - began)
        return Decision(tuple(actions)) if actions else NOTHING

    def adapt_queue_length(self, outcome: CpOutcome, modelled: int) -> None:
        """Halve ``q_length`` after a decision without a solution (``FALLBACK``, ``BUDGET``),
        reset it after one; keep it
        after a model too large to build (``UNIT_LIMITED``: halving would leave a large job
        at the head of the queue alone in the model, and no job behind it could start)."""
        if outcome.status in ("OPTIMAL", "FEASIBLE"):
            self.q_length = self.queue_limit
        elif outcome.status != UNIT_LIMITED:
            self.q_length = max(1, min(self.q_length, modelled) // 2)

    def starts(self, jobs: Sequence[Job], outcome: CpOutcome, view: View) -> list[Action]:
        """Start actions of the jobs planned at 0, each checked on a scratch free array."""
        now_jobs = [job for job in jobs if outcome.starts.get(job.job_id) == 0]
        if not now_jobs:
            return []
        announce(self.allocator, now_jobs, view)
        free = view.free.copy()
        free_bb = view.free_bb
        actions: list[Action] = []
        for job in now_jobs:
            if job.bb > free_bb:
                continue
            allocation = outcome.placements.get(job.job_id)
            if allocation is None or not _fits(job, allocation, free, view):
                allocation = self.allocator.allocate(job, free, view)
            if allocation is None:
                continue
            actions.append(Start(job.job_id, allocation))
            take_nodes(free, job, allocation, view)
            free_bb -= job.bb
        return actions

    def first_fitting(self, ordered: Sequence[Job], view: View) -> list[Action]:
        """Start the first job the allocator places (an idle machine must not stay idle)."""
        announce(self.allocator, ordered, view)
        for job in ordered:
            allocation = (
                self.allocator.allocate(job, view.free.copy(), view)
                if job.bb <= view.free_bb
                else None
            )
            if allocation is not None:
                self.statuses["LIVENESS"] += 1
                return [Start(job.job_id, allocation)]
        return []

    def summary_stats(self) -> dict[str, Any]:
        """Per-run CP statistics for ``summary.json``."""
        solved = sum(self.statuses.values())
        variables = np.asarray(self.variables or [0])
        constraints = np.asarray(self.constraints or [0])
        models = sum(self.model_statuses.values())
        counts = dict.fromkeys(
            STATUS_KEYS + ((BUDGET,) if self.limits.decision_budget else ()), 0
        ) | dict(self.statuses)
        spent = np.asarray(self.budget_spent or [0.0])
        return {
            "cp_decisions": solved,
            "cp_status_counts": dict(sorted(counts.items())),
            "cp_models": models,
            "cp_model_status_counts": dict(sorted(self.model_statuses.items())),
            "cp_model_optimal_share": self.model_statuses["OPTIMAL"] / models if models else 0.0,
            "cp_changed_share": self.changed / self.searched if self.searched else 0.0,
            "cp_optimal_share": (self.statuses["OPTIMAL"] + self.statuses[TRIVIAL]) / solved
            if solved
            else 0.0,
            # the greedy plan for want of a solution: retries spent (FALLBACK) or budget spent
            # (BUDGET)
            "cp_fallback_share": (self.statuses["FALLBACK"] + self.statuses[BUDGET]) / solved
            if solved
            else 0.0,
            "cp_mean_variables": float(variables.mean()),
            "cp_max_variables": int(variables.max()),
            "cp_mean_constraints": float(constraints.mean()),
            "cp_max_constraints": int(constraints.max()),
            "cp_relaxation_counts": {tag: self.relaxations[tag] for tag in RELAXATION_TAGS},
            # decisions that needed no PCP'20 model (the relaxation answered) or could not
            # pay for one (refused by its size bound before it was built)
            "cp_models_unbuilt": {why: self.unbuilt[why] for why in UNBUILT},
            "cp_decision_budget": self.limits.decision_budget or 0.0,
            "cp_budget_exhausted": self.budget_exhausted,
            "cp_budget_spent_mean": float(spent.mean()),
            "cp_budget_spent_max": float(spent.max()),
        }


def _fits(job: Job, allocation: Allocation, free: np.ndarray, view: View) -> bool:
    fits = job_fits(job, free, view)
    return sum(units for _, units in allocation) == job.units and all(
        fits[node] >= units for node, units in allocation
    )


@register_scheduler
class Pcp20(CpScheduler):
    """PCP'20 (``market_hpc.algorithms.cp.pcp20``); the allocator (best-fit or first-fit)
    only repairs allocations the checks reject and serves the idle-machine rule.

    Args:
        max_retries: Solves with 50% more deterministic time while none found a solution.
        levels: Running jobs' remaining times are rounded up to at most this many values
            in the model (``cp_reduce``); 0 models them exactly, every node included.
        branching: ``auto`` (CP-SAT's own search from the greedy hint; the default,
            chosen by measurement, docs/cp.md), ``priority`` (the fixed interleaved order)
            or ``earliest`` (the paper's "highest priority that can start first").
        time_control: ``deterministic`` (reproducible) or ``paper`` (1 s of wall clock,
            +0.5 s per retry while no solution, ``max_retries`` 30 by default).
        hint: ``list`` (the default: the greedy plan's start-now jobs, the rest by list
            scheduling) or ``shelf`` (the greedy shelf plan); ``cp_instance.HINTS``.
        cuts: The redundant rules of ``cp_cuts`` to add (default all: ``event``,
            ``slots``, ``identical``, ``bound``, ``cumulative``); ``[]`` for none.
        relax: Solve the schedule relaxation first (``cp_relax``: its schedule, packed,
            is the answer, optimal when the relaxation was proven; its bound goes to the
            search otherwise). Default on, chosen by measurement (docs/cp.md).
        unit_limit: Most job units in one model (``cp_pcp20.UNIT_LIMIT``, 8,192); a larger
            model is not built and the greedy plan decides (status ``UNIT_LIMITED``; the
            queue length is kept). 0: no limit.
    """

    label = "pcp20"
    summary = (
        "PCP'20 (Galleguillos et al.): CP-SAT schedule and allocation, model size independent "
        "of the node count"
    )
    search = True
    default_budget = DECISION_BUDGET
    parameters: ClassVar[Mapping[str, Param]] = {
        **CpScheduler.parameters,
        # the authors' paper control uses 30; the work of a decision grows with its square
        "max_retries": Param("int", Range(0, 100, integer=True), optional=True),
        "levels": Param("int", Range(0, 64, integer=True)),
        "branching": Param("str", choices=BRANCHINGS),
        "time_control": Param("str", choices=("deterministic", "paper")),
        "hint": Param("str", choices=HINTS),
        "cuts": Param("str-list", choices=CUTS),
        "relax": Param("bool"),
        "unit_limit": Param("int", Range(0, 1_000_000_000, integer=True), optional=True),
    }

    def __init__(
        self,
        allocator: Allocator,
        max_retries: int | None = None,
        levels: int = 8,
        branching: str = "auto",
        time_control: str = "deterministic",
        hint: str = "list",
        cuts: Sequence[str] | None = None,
        relax: bool = True,
        unit_limit: int | None = None,
        **limits: Any,
    ) -> None:
        super().__init__(allocator, **limits)
        from market_hpc.algorithms.cp.pcp20 import UNIT_LIMIT

        unit_limit = UNIT_LIMIT if unit_limit is None else unit_limit
        if not isinstance(unit_limit, int) or isinstance(unit_limit, bool) or unit_limit < 0:
            raise ConfigError(
                f"scheduler {self.label!r}: unit_limit must be an integer >= 0 "
                f"(0: no limit), got {unit_limit!r}"
            )
        self.unit_limit = unit_limit or None
        if not isinstance(relax, bool):
            raise ConfigError(
                f"scheduler {self.label!r}: relax must be true or false, got {relax!r}"
            )
        self.relax = relax

        if hint not in HINTS:
            raise ConfigError(
                f"scheduler {self.label!r}: hint must be one of {', '.join(HINTS)}, got {hint!r}"
            )
        self.cuts = tuple(CUTS if cuts is None else cuts)
        unknown = [name for name in self.cuts if name not in CUTS]
        if unknown:
            raise ConfigError(
                f"scheduler {self.label!r}: unknown cuts {unknown}; valid: {', '.join(CUTS)}"
            )
        self.hint = hint
        if levels < 0:
            raise ConfigError(
                f"scheduler {self.label!r}: levels must be >= 0 (0: exact), got {levels}"
            )
        self.check_declared(branching=branching)
        if time_control not in TIME_CONTROLS:
            raise ConfigError(
                f"scheduler {self.label!r}: time_control must be one of "
                f"{', '.join(TIME_CONTROLS)}, got {time_control!r}"
            )
        self.paper_time = time_control == "paper"
        self.max_retries = (
            (30 if self.paper_time else 4) if max_retries is None else int(max_retries)
        )
        self.levels = int(levels)
        self.branching = branching

    def solve(self, instance: CpInstance) -> CpOutcome:
        """Solve the PCP'20 model (or, without search, return its greedy plan)."""
        from market_hpc.algorithms.cp.pcp20 import solve_pcp20  # OR-Tools on first use

        return solve_pcp20(
            instance,
            self.limits,
            self.max_retries,
            self.levels or None,
            self.search,
            self.branching,
            self.paper_time,
            self.cuts,
            self.hint,
            self.relax,
            self.unit_limit,
        )


@register_scheduler
class GreedyPlan(Pcp20):
    """PCP'20 without the search: the greedy plan that PCP'20's hint starts from, on the
    same reduced system, decides (status ``GREEDY``): the same jobs start now on the same
    nodes as in PCP'20's hint (``list`` or ``shelf``, which differ only in the later
    starts). Every PCP'20 result is read against it."""

    label = "greedy-plan"
    summary = "PCP'20 ablation: its greedy plan alone (same reduction and placement, no solver)"
    search = False

    def adapt_queue_length(self, outcome: CpOutcome, modelled: int) -> None:
        """Keeps its queue length: a plan is always found."""


@register_scheduler
class Pcp19(CpScheduler):
    """PCP'19 (``market_hpc.algorithms.cp.pcp19``) with the doubling time control."""

    label = "pcp19"
    summary = (
        "PCP'19 (PCP'20's baseline): CP-SAT with per-node allocation variables (grows with the "
        "node count)"
    )

    def solve(self, instance: CpInstance) -> CpOutcome:
        """Solve the per-node model."""
        from market_hpc.algorithms.cp.pcp19 import solve_pcp19  # OR-Tools on first use

        return solve_pcp19(instance, self.limits)


@register_scheduler
class Hcp19(CpScheduler):
    """HCP'19: pooled schedule (``market_hpc.algorithms.cp.pooled``), best-fit placement
    (the paper's; first-fit is accepted as a variant)."""

    label = "hcp19"
    summary = "HCP'19 (PCP'20's baseline): CP-SAT on pooled capacity, then best-fit allocation"
    default_budget = DECISION_BUDGET

    def solve(self, instance: CpInstance) -> CpOutcome:
        """Solve the pooled model under the doubling time control."""
        from market_hpc.algorithms.cp.pooled import solve_pooled  # OR-Tools on first use

        return solve_pooled(instance, self.limits)


@register_scheduler
class Cph(CpScheduler):
    """CPH (Borghesi et al., in Netti et al. 2018): pooled schedule, jobs starting now go
    to the allocator in PRB order, skipping those it cannot place.

    Args:
        expected_wait: Expected waiting time (s) per queue id (PRB's EWT).
        default_wait: EWT of queues without data (AccaSim: 1800 s).
    """

    label = "cph"
    handles = HETEROGENEITY
    allocators = None  # any: it places with the allocator
    default_allocator = "first-fit"
    summary = (
        "CPH (Netti et al.): CP-SAT on pooled capacity (PRB priorities, weighted waits), then "
        "any allocator"
    )
    parameters: ClassVar[Mapping[str, Param]] = {**CpScheduler.parameters, **Prb.parameters}

    def __init__(
        self,
        allocator: Allocator,
        expected_wait: Mapping[int, float] | None = None,
        default_wait: float = DEFAULT_EXPECTED_WAIT,
        **limits: Any,
    ) -> None:
        super().__init__(allocator, **limits)
        waits = {int(k): float(v) for k, v in (expected_wait or {}).items()}
        if default_wait <= 0 or any(w <= 0 for w in waits.values()):
            raise ConfigError(
                f"scheduler 'cph': expected waits must be > 0, got {waits} / {default_wait}"
            )
        self.expected_wait = waits
        self.default_wait = float(default_wait)

    def prb(self, queue: Sequence[Job], now: float) -> tuple[list[Job], list[int]]:
        """All queued jobs in PRB order and their weights ``floor(maxEWT / EWT_q)``."""
        waits = [self.expected_wait.get(job.queue, self.default_wait) for job in queue]
        longest = max(waits, default=self.default_wait)
        # CPH's demand term: whole seconds times the cores, GPUs and MICs asked for.
        demand = [max(1, math.ceil(j.estimate)) * j.units * sum(j.unit[:3]) for j in queue]
        order = prb_order(
            now,
            np.fromiter((job.submit for job in queue), dtype=np.float64, count=len(queue)),
            np.array(waits, dtype=np.float64),
            np.array(demand, dtype=np.float64),
        ).tolist()
        return [queue[i] for i in order], [max(1, int(longest // waits[i])) for i in order]

    def modelled(self, queue: list[Job], view: View) -> tuple[list[Job], list[int]]:
        """The ``queue_limit`` most urgent jobs in PRB order, fitting now or not."""
        jobs, weights = self.prb(queue, view.time)
        return jobs[: self.q_length], weights[: self.q_length]

    def priority_order(self, jobs: Sequence[Job], now: float) -> list[Job]:
        """PRB order (used for the idle-machine rule)."""
        return self.prb(jobs, now)[0]

    def adapt_queue_length(self, outcome: CpOutcome, modelled: int) -> None:
        """CPH keeps its queue length (the time limit doubles instead)."""

    def solve(self, instance: CpInstance) -> CpOutcome:
        """Solve the pooled model, doubling the limit only until a solution is found."""
        from market_hpc.algorithms.cp.pooled import solve_pooled  # OR-Tools on first use

        return solve_pooled(instance, self.limits, stable_runs=1)


__all__ = ["CpScheduler", "Cph", "GreedyPlan", "Hcp19", "Pcp19", "Pcp20", "model_units"]
