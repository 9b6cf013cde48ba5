"""PCP'20's schedule relaxation: prove the optimum on *when* alone, then place it.

PCP'20's model says when every modelled job starts and where its units go. Its 2-D
packing over thousands of positions hides from CP-SAT's LP that most of the difficulty
is in the schedule: measured on the study's instances, the search mostly returns its hint
with a lower bound that never moves. This module solves the **relaxation without the
positions** and uses it twice:

* **The schedule relaxation** (``relaxation_model``): the same start variables, domains
  and objective; per resource type a ``cumulative`` of the pooled capacity (running jobs
  as fixed blocks, as in PCP'20's own implied cumulatives); the slot cumulatives of
  ``cp_cuts``; the ``identical`` order and the fluid objective bound. Every schedule of
  PCP'20's model satisfies all of them (each is one of PCP'20's constraints or one of
  ``cp_cuts``' rules, none of which removes every optimum), so the relaxation's optimum
  is a **lower bound** on PCP'20's, and its proven bound is one too.
* **The settle cap** (``settle_time``), for the relaxation alone: from the first running
  end ``T > 0`` after which every modelled job fits at once (pooled per type and in
  every slot count), every job starting after ``T`` can move to ``T`` together with the
  others (capacity only grows as running jobs end, twins keep their order, nobody's
  start-now changes), which lowers the objective. So some optimum of the relaxation
  starts every job by ``T``: ``s_i <= T``. It is not valid for PCP'20's own model (jobs
  moved together may collide in positions), and the relaxation's optimum is unchanged.
* **Placement** (``Pcp20Model.place``, in ``cp_pcp20``): when the relaxation was solved
  to optimality and its schedule can be packed in PCP'20's positions, that packing is a
  solution of PCP'20's model that meets a lower bound, and is therefore **optimal for
  PCP'20's model**: a proof, not a gap limit.

When the schedule cannot be packed, or the relaxation is not solved to optimality,
PCP'20's own search runs as before with the relaxation's bound added
(``sum w s >= bound``). Unproven schedules are not packed: on the study's instances a
packing of 1,173 nodes often used the whole placement budget without an answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from market_hpc.algorithms.cp.budget import Budget, run_budgeted
from market_hpc.algorithms.cp.cuts import (
    event_bounds,
    free_profile,
    identical_pairs,
    objective_bound,
    slot_cumulatives,
    slot_members,
    slot_profile,
)
from market_hpc.algorithms.cp.greedy import Plan
from market_hpc.algorithms.cp.instance import (
    CpInstance,
    CpLimits,
    add_hints,
    new_model,
)
from market_hpc.algorithms.cp.pooled import running_by_remaining
from market_hpc.algorithms.cp.rules import new_start

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

RELAX_TIME = 0.05
"""Deterministic time of one relaxation solve (chosen by measurement, docs/cp.md)."""

RELAX_JOBS = 40
"""Most modelled jobs for which the relaxation is solved (measured, docs/cp.md:
on a sample of the study's KIT-like models it proved 4 of 25 with 31-40 jobs and
none of 32 with more, also at 40x the budget, while on the benchmark's 50- and 100-job
instances one solve cost 0.6-1.2 s of CPU)."""

RELAX_ROUNDS = 4
"""Most relaxation solves per decision: after a proven schedule that does not pack because
its start-now jobs do not fit together now, the relaxation is solved again without that
start-now set (``fits_now``)."""

RELAX_RESTARTS = True
"""Search the relaxation with CP-SAT's quick-restart portfolio (measured, docs/cp.md: the
default search mostly stays at the hint on large queues)."""

SETTLE = True
"""Cap every start at ``settle_time`` in the relaxation (measured, docs/cp.md: more
relaxations proven at the same budget; its optimum is unchanged)."""


@dataclass(frozen=True)
class Relaxed:
    """What the schedule relaxation answered.

    Attributes:
        status: ``OPTIMAL``, ``FEASIBLE`` or ``UNKNOWN`` (CP-SAT's status names).
        starts: Start of every modelled job by key (None without a solution).
        objective: ``sum weight * start`` of ``starts`` (0 without a solution).
        bound: A proven lower bound on PCP'20's optimum (the relaxation's best bound).
    """

    status: str
    starts: dict[int, int] | None
    objective: int
    bound: int


def settle_time(instance: CpInstance) -> int | None:
    """The first time ``T > 0`` (a running job's end) from which all modelled jobs fit
    together, pooled per resource type and in the slots of every unit shape
    (``cp_cuts.slot_profile``, ``slot_members``); None when there is none (the module
    docstring: some optimum of the relaxation starts every job by ``T``).

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[4], [4]]), (CpJob(1, 2, (2,), 5, 1), CpJob(2, 1, (4,), 5, 1)),
    ...                   (CpRunning(3, ((0, (4,)),)), CpRunning(7, ((1, (2,)),))))
    >>> settle_time(inst)   # 2 cores free until 3, 6 until 7, then 8: the jobs need 8
    7
    >>> settle_time(CpInstance(np.array([[4]]), inst.jobs, ()))   # they never fit together
    """
    times, free = free_profile(instance)
    fits = np.ones(len(times), dtype=bool)
    for r in range(instance.capacity.shape[1]):
        fits &= free[:, :, r].sum(axis=1) >= sum(job.units * job.unit[r] for job in instance.jobs)
    for shape in {job.unit for job in instance.jobs}:
        if any(shape):
            fits &= np.asarray(slot_profile(free, shape)) >= sum(slot_members(instance, shape)[1])
    first = len(times)  # free resources only grow: the first segment of the fitting tail
    while first > 0 and fits[first - 1]:
        first -= 1
    return times[first] if 0 < first < len(times) else None


def relaxation_model(
    instance: CpInstance, plan: Plan | None, forbidden: Sequence[frozenset[int]] = ()
) -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """The schedule relaxation of PCP'20's model of ``instance`` (module docstring): the
    model and the start variables in ``instance.jobs`` order, hinted with ``plan``.
    ``forbidden``: sets of job indices that may not all start now (``fits_now`` found
    them unpackable at time 0: a cut every schedule of PCP'20's model satisfies)."""
    from ortools.sat.python import cp_model

    model = new_model()
    horizon = max(1, instance.horizon)
    events = event_bounds(instance)
    starts: list[cp_model.IntVar] = []
    intervals: list[cp_model.IntervalVar] = []
    for job, event in zip(instance.jobs, events):
        start = new_start(model, job, event, horizon)  # now or at an end, as in PCP'20's model
        starts.append(start)
        intervals.append(model.new_fixed_size_interval_var(start, job.duration, f"x{job.key}"))
    totals = instance.capacity.sum(axis=0)
    blocks = [
        (model.new_fixed_size_interval_var(0, remaining, ""), usage)
        for remaining, usage in running_by_remaining(instance)
    ]
    for r in range(len(totals)):
        if any(job.unit[r] for job in instance.jobs):
            model.add_cumulative(
                [box for box, _ in blocks] + intervals,
                [int(usage[r]) for _, usage in blocks]
                + [job.units * job.unit[r] for job in instance.jobs],
                int(totals[r]),
            )
    for members, demands, lacks, capacity in slot_cumulatives(instance):
        model.add_cumulative(
            [intervals[i] for i in members]
            + [model.new_fixed_size_interval_var(0, end, "") for end, _ in lacks],
            demands + [lack for _, lack in lacks],
            capacity,
        )
    for i, j in identical_pairs(instance):
        model.add(starts[i] <= starts[j])
    settled = settle_time(instance) if SETTLE else None
    if settled is not None:
        for start in starts:
            model.add(start <= settled)
    now: dict[int, cp_model.IntVar] = {}
    for group in forbidden:
        for i in sorted(group):
            if i not in now:
                now[i] = flag = model.new_bool_var(f"now{instance.jobs[i].key}")
                model.add(starts[i] == 0).only_enforce_if(flag)
                model.add(starts[i] >= 1).only_enforce_if(~flag)
        model.add_bool_or([~now[i] for i in sorted(group)])
    objective = cp_model.LinearExpr.weighted_sum(starts, [job.weight for job in instance.jobs])
    bound = objective_bound(instance)
    if bound > 0:
        model.add(objective >= bound)
    model.minimize(objective)
    if plan is not None:
        add_hints(
            model,
            [start.index for start in starts],
            [int(plan.starts[job.key]) for job in instance.jobs],
        )
    return model, starts


def solve_relaxation(
    instance: CpInstance,
    plan: Plan | None,
    limits: CpLimits,
    deterministic_time: float | None = None,
    restarts: bool | None = None,
    forbidden: Sequence[frozenset[int]] = (),
    budget: Budget | None = None,
) -> Relaxed:
    """Solve the schedule relaxation (one worker, ``limits.seed``, deterministic time
    ``RELAX_TIME`` unless given; ``restarts``: CP-SAT's quick-restart portfolio instead of
    its default search, ``RELAX_RESTARTS`` unless given; within the decision's work
    ``budget``: ``UNKNOWN`` when it cannot pay).

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[2], [2]]),
    ...                   (CpJob(1, 2, (2,), 10, 10_000), CpJob(2, 1, (2,), 1, 100_000)),
    ...                   (CpRunning(4, ((0, (2,)),)),))
    >>> solve_relaxation(inst, None, CpLimits())  # job 2 now on node 1, job 1 when node 0 frees
    Relaxed(status='OPTIMAL', starts={1: 4, 2: 0}, objective=40000, bound=40000)
    """
    from ortools.sat.python import cp_model

    model, starts = relaxation_model(instance, plan, forbidden)
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = 1
    if RELAX_RESTARTS if restarts is None else restarts:
        params.search_branching = cp_model.PORTFOLIO_WITH_QUICK_RESTART_SEARCH
    params.random_seed = limits.seed
    status = run_budgeted(
        solver, model, budget, RELAX_TIME if deterministic_time is None else deterministic_time
    )
    if status is None:
        return Relaxed("UNKNOWN", None, 0, 0)
    name = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Relaxed("UNKNOWN" if status == cp_model.UNKNOWN else name, None, 0, 0)
    values = {job.key: int(solver.value(start)) for job, start in zip(instance.jobs, starts)}
    return Relaxed(
        name, values, int(solver.objective_value), int(np.ceil(solver.best_objective_bound - 1e-9))
    )


def fits_now(
    instance: CpInstance,
    indices: Sequence[int],
    limits: CpLimits,
    deterministic_time: float = 0.05,
    budget: Budget | None = None,
) -> bool | None:
    """Whether the jobs ``indices`` can all start now together: their units packed on the
    nodes' free resources at time 0 (every running job holds its share; a node's free
    resources form one block per type, so at time 0 this is exactly PCP'20's positions).
    ``None`` when the solver could not tell within ``deterministic_time`` (or the
    decision's work ``budget``).

    >>> from market_hpc.algorithms.cp.instance import CpJob
    >>> gpu_clash = CpInstance(np.array([[4, 1], [3, 0]]),
    ...                        (CpJob(1, 1, (2, 1), 5, 10), CpJob(2, 1, (4, 0), 5, 10)))
    >>> fits_now(gpu_clash, [0, 1], CpLimits()), fits_now(gpu_clash, [1], CpLimits())
    (False, True)
    """
    from ortools.sat.python import cp_model

    free = instance.capacity - instance.used
    model = new_model()
    loads: dict[int, list[tuple[cp_model.IntVar, tuple[int, ...]]]] = {}
    for i in indices:
        job = instance.jobs[i]
        need = np.asarray(job.unit, dtype=np.int64)
        asked = need > 0
        fit = (
            (free[:, asked] // need[asked]).min(axis=1)
            if asked.any()
            else np.full(len(free), job.units)
        )
        counts = []
        for node in np.flatnonzero(fit > 0).tolist():
            count = model.new_int_var(0, int(min(job.units, fit[node])), "")
            counts.append(count)
            loads.setdefault(node, []).append((count, job.unit))
        if sum(int(min(job.units, f)) for f in fit[fit > 0]) < job.units:
            return False
        model.add(sum(counts) == job.units)
    for node, parts in loads.items():
        for r in range(free.shape[1]):
            if sum(unit[r] for _, unit in parts):
                model.add(
                    cp_model.LinearExpr.weighted_sum(
                        [c for c, _ in parts], [unit[r] for _, unit in parts]
                    )
                    <= int(free[node, r])
                )
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = limits.seed
    status = run_budgeted(solver, model, budget, deterministic_time)
    if status is None:
        return None
    if status == cp_model.INFEASIBLE:
        return False
    return True if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
