"""PCP'20's redundant rules (``cp_cuts``) written into a CP-SAT model.

Kept apart from ``cp_pcp20`` (the model itself) so that each stays small; the order in
which the rules are added is part of the pinned models (``tests/cp/test_decisions.py``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from market_hpc.algorithms.cp.cuts import (
    identical_pairs,
    objective_bound,
    slot_cumulatives,
    slot_limits,
)
from market_hpc.algorithms.cp.greedy import Plan
from market_hpc.algorithms.cp.instance import CpInstance, CpJob

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def new_start(model: cp_model.CpModel, job: CpJob, event: int, horizon: int) -> cp_model.IntVar:
    """The start variable of ``job`` in ``[0, horizon - duration]``; with an event bound
    ``event`` (``cp_cuts.event_bounds``, the rule ``event``; 1 when unused) its domain is
    ``{0} U [event, horizon - duration]``: left-shifted optima start now or at an end."""
    from ortools.util.python import sorted_interval_list

    top = horizon - job.duration
    if 1 < event <= top:
        domain = sorted_interval_list.Domain.from_intervals([[0, 0], [event, top]])
        return model.new_int_var_from_domain(domain, f"s{job.key}")
    return model.new_int_var(0, top, f"s{job.key}")


def add_rules(
    model: cp_model.CpModel,
    instance: CpInstance,
    starts: list[cp_model.IntVar],
    intervals: list[cp_model.IntervalVar],
    cuts: Collection[str],
    events: list[int],
    horizon: int,
    plan: Plan | None,
    hint_vars: list[int],
    hint_values: list[int],
) -> int:
    """Add the rules named in ``cuts`` (none change the optimum; ``cp_cuts``) for the
    modelled jobs (``starts``, ``intervals`` in ``instance.jobs`` order, ``events`` their
    event bounds); hint the start-now Booleans from ``plan``. Returns the objective's
    lower bound added (0: none)."""
    from ortools.sat.python import cp_model

    jobs = instance.jobs
    lower_bound = objective_bound(instance) if "bound" in cuts else 0
    if lower_bound > 0:
        model.add(
            cp_model.LinearExpr.weighted_sum(starts, [job.weight for job in jobs]) >= lower_bound
        )
    if "cumulative" in cuts:
        for members, demands, blocks, capacity in slot_cumulatives(instance):
            boxes = [intervals[i] for i in members]
            boxes += [model.new_fixed_size_interval_var(0, end, "") for end, _ in blocks]
            model.add_cumulative(boxes, demands + [lack for _, lack in blocks], capacity)
    if "identical" in cuts:
        for i, j in identical_pairs(instance):
            model.add(starts[i] <= starts[j])
    limits = slot_limits(instance) if "slots" in cuts else []
    if not limits:
        return lower_bound
    now = [model.new_bool_var(f"now{job.key}") for job in jobs]
    for job, start, flag, event in zip(jobs, starts, now, events):
        top = horizon - job.duration
        model.add(start + event * flag >= event)  # not now: at the earliest end or later
        model.add(start + top * flag <= top)  # now: 0
        if plan is not None:
            hint_vars.append(flag.index)
            hint_values.append(int(plan.starts[job.key] == 0))
    for members, demands, slots in limits:
        model.add(sum(demand * now[i] for i, demand in zip(members, demands)) <= slots)
    return lower_bound
