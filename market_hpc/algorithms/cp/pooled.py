"""CP-SAT scheduling on pooled capacity: HCP'19's first stage (Galleguillos et al.) and
CPH's (Borghesi et al.; Netti et al., ISC'18), and the time control shared with PCP'19.

Each resource type is one pool (``Tcap_r``, the sum over nodes); one ``cumulative``
per type holds the running jobs (fixed, remaining duration) and the modelled queued
jobs (demand ``rn_i * u_{i,r}``). The model says *when*; an allocator says *where*
afterwards, and a job the allocator cannot place waits for the next decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from ortools.sat.python import cp_model

from market_hpc.algorithms.cp.budget import Budget
from market_hpc.algorithms.cp.greedy import Plan, greedy_plan, plan_outcome, pooled_instance
from market_hpc.algorithms.cp.instance import (
    BUDGET,
    FALLBACK,
    CpInstance,
    CpLimits,
    CpOutcome,
    Stopwatch,
    add_hints,
    add_strategy,
    changed_from,
    model_size,
    new_model,
    solve,
)

Extract = Callable[[cp_model.CpSolver], CpOutcome]


def doubling_control(
    model: cp_model.CpModel,
    limits: CpLimits,
    extract: Extract,
    fallback: CpOutcome,
    max_doublings: int = 4,
    stable_runs: int = 2,
) -> CpOutcome:
    """The PCP'19/HCP'19 time control (from the authors' code) on deterministic time.

    Solve with ``T``; accept an optimal answer, or a feasible one when the last
    ``stable_runs`` solves gave the same objective; otherwise solve again from scratch
    with ``2 T``, at most ``max_doublings`` times (1, 2, 4, 8, 16 x the initial limit).
    The best answer seen is returned; ``fallback`` when no solve found any. With
    ``stable_runs = 1`` every feasible answer is accepted (CPH: the limit doubles only
    until a solution is found). All solves share the decision's work budget
    (``limits.decision_budget``, ``Budget``): when it runs out the best answer seen is
    returned, or ``fallback`` with status ``BUDGET`` when there is none.
    """
    budget = limits.deterministic_time
    work = Budget(limits.decision_budget)
    best: CpOutcome | None = None
    objectives: list[int] = []
    for attempt in range(max_doublings + 1):
        solver, status = solve(model, limits, budget, budget=work)
        if status in ("OPTIMAL", "FEASIBLE"):
            outcome = extract(solver)
            outcome = CpOutcome(
                outcome.starts,
                outcome.placements,
                status,
                fallback.variables,
                fallback.constraints,
                outcome.objective,
                attempt + 1,
            )
            if best is None or outcome.objective <= best.objective:
                best = outcome
            objectives.append(outcome.objective)
            if status == "OPTIMAL" or (
                len(objectives) >= stable_runs and len(set(objectives[-stable_runs:])) == 1
            ):
                return _spent(_against(best, fallback), work)
        if work.exhausted:
            break
        budget *= 2
    if best is not None:
        return _spent(_against(best, fallback), work)
    return _spent(
        CpOutcome(
            fallback.starts,
            fallback.placements,
            BUDGET if work.exhausted else FALLBACK,
            fallback.variables,
            fallback.constraints,
            fallback.objective,
            attempt + 1,
        ),
        work,
    )


def _spent(outcome: CpOutcome, work: Budget) -> CpOutcome:
    """``outcome`` with the work its decision spent."""
    return replace(outcome, budget_spent=work.spent, budget_exhausted=work.exhausted)


def _against(outcome: CpOutcome, plan: CpOutcome) -> CpOutcome:
    """``outcome`` with ``changed`` set against the greedy plan (``plan``, the fallback)."""
    return replace(outcome, changed=changed_from(outcome, plan.starts, plan.placements))


def running_by_remaining(instance: CpInstance) -> list[tuple[int, np.ndarray]]:
    """``(remaining, pooled usage per type)`` of the running jobs, one entry per distinct
    remaining time, increasing: the fixed blocks of a pooled cumulative.

    >>> from market_hpc.algorithms.cp.instance import CpRunning
    >>> inst = CpInstance(np.array([[4, 1], [4, 1]]), (), (CpRunning(9, ((0, (1, 0)), (1, (2, 1)))),
    ...                   CpRunning(3, ((1, (1, 0)),)), CpRunning(9, ((0, (1, 0)),))))
    >>> [(remaining, usage.tolist()) for remaining, usage in running_by_remaining(inst)]
    [(3, [1, 0]), (9, [4, 1])]
    """
    held: dict[int, np.ndarray] = {}
    for run in instance.running:
        usage = held.setdefault(run.remaining, np.zeros(instance.capacity.shape[1], dtype=np.int64))
        for _, amounts in run.usage:
            usage += np.asarray(amounts, dtype=np.int64)
    return sorted(held.items(), key=lambda item: item[0])


def build_pooled(
    instance: CpInstance, plan: Plan | None
) -> tuple[cp_model.CpModel, dict[int, cp_model.IntVar]]:
    """The pooled scheduling model: start variables per job and one cumulative per type."""
    model = new_model()
    totals = instance.capacity.sum(axis=0)
    horizon = max(1, instance.horizon)
    resources = range(instance.capacity.shape[1])
    intervals: list[cp_model.IntervalVar] = []
    demands: list[list[int]] = [[] for _ in resources]
    for remaining, usage in running_by_remaining(instance):
        intervals.append(model.new_fixed_size_interval_var(0, remaining, f"run{remaining}"))
        for r in resources:
            demands[r].append(int(usage[r]))
    starts: dict[int, cp_model.IntVar] = {}
    hinted: list[int] = []
    for job in instance.jobs:
        start = model.new_int_var(0, horizon - job.duration, f"s{job.key}")
        starts[job.key] = start
        intervals.append(model.new_fixed_size_interval_var(start, job.duration, f"x{job.key}"))
        for r in resources:
            demands[r].append(job.units * job.unit[r])
        add_strategy(model, [start.index], cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
        hinted.append(start.index)
    if plan is not None:
        add_hints(model, hinted, [int(plan.starts[job.key]) for job in instance.jobs])
    for r in resources:
        if any(demands[r]):
            model.add_cumulative(intervals, demands[r], int(totals[r]))
    model.minimize(sum(job.weight * starts[job.key] for job in instance.jobs))
    return model, starts


def solve_pooled(
    instance: CpInstance, limits: CpLimits, stable_runs: int = 2, max_doublings: int = 4
) -> CpOutcome:
    """Schedule ``instance`` on pooled capacity (``placements`` stay empty).

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[2], [2]]),
    ...                   (CpJob(1, 1, (4,), 10, 1), CpJob(2, 3, (1,), 2, 1)),
    ...                   (CpRunning(4, ((0, (1,)),)),))
    >>> out = solve_pooled(inst, CpLimits())
    >>> out.status, out.starts
    ('OPTIMAL', {1: 4, 2: 0})
    """
    watch = Stopwatch()
    plan = greedy_plan(pooled_instance(instance))
    if plan.objective(instance) == 0:  # every job starts now: the lower bound, optimal
        return plan_outcome(instance, plan, watch, placed=False)
    model, starts = build_pooled(instance, plan)
    variables, constraints = model_size(model)
    fallback = CpOutcome(
        dict(plan.starts), {}, FALLBACK, variables, constraints, plan.objective(instance)
    )

    def extract(solver: cp_model.CpSolver) -> CpOutcome:
        values = {key: int(solver.value(var)) for key, var in starts.items()}
        return CpOutcome(values, {}, "", objective=int(solver.objective_value))

    outcome = doubling_control(model, limits, extract, fallback, max_doublings, stable_runs)
    return watch.stamp(outcome)
