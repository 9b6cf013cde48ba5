"""PCP'19 (Galleguillos et al. 2019), the baseline whose model grows with the node count.

The scheduling part is PCP'20's (Galleguillos et al.). Allocation is per node, as in
the authors' code at the PCP'20 paper's commit: for every job and every node that can hold one of
its units an integer ``a_{i,n} in [0, min(rn_i, p_{i,n})]`` with ``sum_n a_{i,n} = rn_i``,
and per node and resource type a ``cumulative`` of the running jobs there and the
queued jobs with demand ``a_{i,n} u_{i,r}``. Variables: ``|Q| + sum_i |{n : p_{i,n} > 0}|``,
which is ``|Q| (1 + |N|)`` for jobs every node can host.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from market_hpc.algorithms.cp.greedy import greedy_plan, plan_outcome
from market_hpc.algorithms.cp.instance import (
    FALLBACK,
    CpInstance,
    CpLimits,
    CpOutcome,
    Stopwatch,
    add_hints,
    add_strategy,
    model_size,
    new_model,
)
from market_hpc.algorithms.cp.pooled import doubling_control


def solve_pcp19(instance: CpInstance, limits: CpLimits, max_doublings: int = 4) -> CpOutcome:
    """Build and solve the PCP'19 model under the doubling time control.

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[2], [2]]),
    ...                   (CpJob(1, 1, (2,), 10, 10_000), CpJob(2, 2, (1,), 1, 100_000)),
    ...                   (CpRunning(4, ((0, (1,)),)),))
    >>> out = solve_pcp19(inst, CpLimits())
    >>> out.status, out.starts, out.placements, out.variables
    ('OPTIMAL', {1: 1, 2: 0}, {2: ((1, 2),)}, 6)
    """
    watch = Stopwatch()
    capacity = instance.capacity
    plan = greedy_plan(instance)
    if plan.objective(instance) == 0:  # every job starts now: the lower bound, optimal
        return plan_outcome(instance, plan, watch)
    model = new_model()
    horizon = max(1, instance.horizon)
    per_node: dict[tuple[int, int], list[tuple[cp_model.IntervalVar, Any]]] = defaultdict(list)
    fixed: dict[int, cp_model.IntervalVar] = {}
    running_on: dict[int, list[tuple[int, tuple[int, ...]]]] = defaultdict(list)
    for run in instance.running:
        for node, amounts in run.usage:
            running_on[node].append((run.remaining, amounts))
    starts: dict[int, cp_model.IntVar] = {}
    counts: dict[int, dict[int, cp_model.IntVar]] = {}
    hint_vars: list[int] = []  # hints in the order the per-variable add_hint calls would write them
    hint_values: list[int] = []
    for job in instance.jobs:
        start = model.new_int_var(0, horizon - job.duration, f"s{job.key}")
        interval = model.new_fixed_size_interval_var(start, job.duration, f"x{job.key}")
        starts[job.key] = start
        unit = np.asarray(job.unit, dtype=np.int64)
        asked = np.flatnonzero(unit > 0)
        per_unit = (capacity[:, asked] // unit[asked]).min(axis=1)
        hinted = dict(plan.allocation(job.key))
        node_vars: dict[int, cp_model.IntVar] = {}
        for node in np.flatnonzero(per_unit > 0).tolist():
            count = model.new_int_var(0, int(min(job.units, per_unit[node])), f"a{job.key}.{node}")
            node_vars[node] = count
            hint_vars.append(count.index)
            hint_values.append(int(hinted.get(node, 0)))
            for r in asked.tolist():
                per_node[node, r].append((interval, count * int(unit[r])))
        model.add(sum(node_vars.values()) == job.units)
        counts[job.key] = node_vars
        hint_vars.append(start.index)
        hint_values.append(int(plan.starts[job.key]))
        add_strategy(model, [start.index], cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
        add_strategy(
            model,
            [var.index for var in node_vars.values()],
            cp_model.CHOOSE_FIRST,
            cp_model.SELECT_MAX_VALUE,
        )
    for (node, r), boxes in per_node.items():
        intervals = [box for box, _ in boxes]
        demands = [demand for _, demand in boxes]
        for remaining, amounts in running_on.get(node, ()):
            if amounts[r] > 0:
                if remaining not in fixed:
                    fixed[remaining] = model.new_fixed_size_interval_var(0, remaining, "")
                intervals.append(fixed[remaining])
                demands.append(int(amounts[r]))
        model.add_cumulative(intervals, demands, int(capacity[node, r]))
    model.minimize(sum(job.weight * starts[job.key] for job in instance.jobs))
    add_hints(model, hint_vars, hint_values)
    variables, constraints = model_size(model)
    placements = {key: plan.allocation(key) for key, start in plan.starts.items() if start == 0}
    fallback = CpOutcome(
        dict(plan.starts), placements, FALLBACK, variables, constraints, plan.objective(instance)
    )

    def extract(solver: cp_model.CpSolver) -> CpOutcome:
        values = {key: int(solver.value(var)) for key, var in starts.items()}
        placed = {}
        for key, value in values.items():
            if value == 0:
                placed[key] = tuple(
                    (node, int(solver.value(var)))
                    for node, var in sorted(counts[key].items())
                    if solver.value(var) > 0
                )
        return CpOutcome(values, placed, "", objective=int(solver.objective_value))

    return watch.stamp(doubling_control(model, limits, extract, fallback, max_doublings))


__all__ = ["solve_pcp19"]
