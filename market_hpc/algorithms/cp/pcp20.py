"""PCP'20 (Galleguillos, Kiziltan, Soto 2020): a CP-SAT dispatching model whose size does
not grow with the node count.

All units of one resource type form one ordered list across the nodes (node 0's cores,
then node 1's, ...). A job unit is a box per requested type: width its duration along
time, height its per-unit request along that type's list, at position ``y``. Per type
one ``add_no_overlap_2d`` (the paper's ``diffn``) keeps boxes apart, with the running
jobs as fixed boxes re-packed from the start of each node's block at every decision
(as the authors' code), plus the implied ``cumulative`` on time (demand per job, the
paper's ``s`` demand read as a typo and the position-axis cumulative left to
``no_overlap_2d``'s own energy reasoning). Units of one job are ordered
(``y_k + u <= y_{k+1}``, a valid replacement of ``alldifferent``).

The paper's ``element(map_r, y)`` constraints (a unit's blocks lie on one node, the same
node for every type) use a *node-group* encoding:
consecutive identical nodes form a group; a unit has a node variable ``n``, one Boolean
per group that can hold it (none when only one can), and per type
``0 <= y - base_g - cap_g (n - first_g) <= cap_g - u``. Variables per unit: ``1 + |R_i| +
(groups > 1 ? groups : 0)``, independent of the node count (the paper counts ``|R_i|``;
the node variable and the group Booleans are the price of CP-SAT not expanding
``element`` into ``Tcap_r`` literals). Fixed boxes would grow with the running jobs,
that is with load and system size; ``solve_pcp20`` therefore models the
reduced system of ``cp_reduce`` (bounded fixed boxes and nodes, placements mapped back).

Objective: total slowdown ``sum (s - q + d) / d``, i.e. ``sum round(1e5 / d) * s``
(constants dropped). Search (``cp_instance.BRANCHINGS``): ``auto``, CP-SAT's own search (chosen by
measurement, docs/cp.md); ``priority``, per job in priority order its start at its
minimum, then its allocation variables by smallest domain at their maximum (the paper's
interleaved search); ``earliest``, the paper's "can start first" rule over the starts,
then the allocations. The greedy plan is a complete hint and the fallback.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model
from ortools.util.python import sorted_interval_list

from market_hpc.algorithms.cp import relax as cp_relax
from market_hpc.algorithms.cp.boxes import node_groups, running_boxes
from market_hpc.algorithms.cp.budget import Budget
from market_hpc.algorithms.cp.cuts import CUTS, event_bounds
from market_hpc.algorithms.cp.greedy import Plan, greedy_plan, node_offsets, plan_outcome
from market_hpc.algorithms.cp.instance import (
    BUDGET,
    FALLBACK,
    GREEDY,
    HINTS,
    UNIT_LIMITED,
    CpInstance,
    CpLimits,
    CpOutcome,
    Stopwatch,
    add_hints,
    add_strategy,
    changed_from,
    check_branching,
    model_size,
    new_model,
    solve,
)
from market_hpc.algorithms.cp.listplan import list_plan
from market_hpc.algorithms.cp.reduce import LEVELS, reduce_instance
from market_hpc.algorithms.cp.relax import Relaxed, fits_now, solve_relaxation
from market_hpc.algorithms.cp.rules import add_rules, new_start


class Pcp20Model:
    """The PCP'20 model of one instance, with handles to read a solution back."""

    def __init__(
        self,
        instance: CpInstance,
        plan: Plan | None = None,
        hint: bool = True,
        branching: str = "priority",
        cuts: Iterable[str] = (),
    ) -> None:
        self.instance = instance
        capacity = instance.capacity
        self.model = model = new_model()
        offsets = node_offsets(capacity)
        totals = capacity.sum(axis=0)
        horizon = max(1, instance.horizon)
        groups = node_groups(capacity)
        resources = range(capacity.shape[1])
        xs: list[list[cp_model.IntervalVar]] = [[] for _ in resources]
        ys: list[list[cp_model.IntervalVar]] = [[] for _ in resources]
        time_boxes: list[list[tuple[cp_model.IntervalVar, int]]] = [[] for _ in resources]
        fixed_x: dict[int, cp_model.IntervalVar] = {}
        for r, column in enumerate(running_boxes(instance, offsets)):
            for pos, height, remaining in column:
                x = fixed_x.get(remaining)
                if x is None:
                    x = fixed_x[remaining] = model.new_fixed_size_interval_var(
                        0, remaining, f"run{remaining}"
                    )
                xs[r].append(x)
                ys[r].append(model.new_fixed_size_interval_var(pos, height, ""))
                time_boxes[r].append((x, height))
        self.starts: dict[int, cp_model.IntVar] = {}
        self.intervals: dict[int, cp_model.IntervalVar] = {}
        self.nodes: dict[int, list[cp_model.IntVar]] = {}
        self._hint_vars: list[int] = []  # proto indices of the hinted variables, in hint order
        self._hint_values: list[int] = []
        allocations: list[list[int]] = []  # allocation variables per job, priority order
        cap_rows, offset_rows, total_of = capacity.tolist(), offsets.tolist(), totals.tolist()
        weighted_sum = cp_model.LinearExpr.weighted_sum  # the same proto as ``y - cap * node``
        cuts = frozenset(cuts)
        events = event_bounds(instance) if "event" in cuts else [1] * len(instance.jobs)
        for index, job in enumerate(instance.jobs):
            start = new_start(model, job, events[index], horizon)
            interval = model.new_fixed_size_interval_var(start, job.duration, f"x{job.key}")
            self.starts[job.key] = start
            self.intervals[job.key] = interval
            asked = [r for r in resources if job.unit[r] > 0]
            fitting = [
                (first, count)
                for first, count in groups
                if all(cap_rows[first][r] >= job.unit[r] for r in asked)
            ]
            # per asked type and fitting group: (cap, low, high) of ``y - cap * node``
            links: dict[int, list[tuple[int, int, int]]] = {r: [] for r in asked}
            for r in asked:
                for first, _ in fitting:
                    cap = cap_rows[first][r]
                    low = offset_rows[first][r] - cap * first
                    links[r].append((cap, low, low + cap - job.unit[r]))
            # the same node domain for every unit of the job
            node_domain = sorted_interval_list.Domain.from_intervals(
                [[first, first + count - 1] for first, count in fitting]
            )
            alloc_vars: list[cp_model.IntVar] = []
            unit_nodes = []
            previous: dict[int, cp_model.IntVar] = {}
            for j in range(job.units):
                node = model.new_int_var_from_domain(node_domain, f"n{job.key}.{j}")
                unit_nodes.append(node)
                choice: list[cp_model.IntVar | None] = [None]
                if len(fitting) > 1:
                    booleans = [model.new_bool_var("") for _ in fitting]
                    model.add_exactly_one(booleans)
                    choice = list(booleans)
                for (first, count), chosen in zip(fitting, choice):
                    if chosen is not None:
                        model.add_linear_constraint(node, first, first + count - 1).only_enforce_if(
                            chosen
                        )
                ys_unit = {}
                for r in asked:
                    amount = job.unit[r]
                    y = model.new_int_var(0, total_of[r] - amount, f"y{job.key}.{j}.{r}")
                    ys_unit[r] = y
                    for (cap, low, high), chosen in zip(links[r], choice):
                        link = model.add_linear_constraint(
                            weighted_sum([y, node], [1, -cap]), low, high
                        )
                        if chosen is not None:
                            link.only_enforce_if(chosen)
                    if r in previous:
                        model.add(previous[r] + amount <= y)
                    xs[r].append(interval)
                    ys[r].append(model.new_fixed_size_interval_var(y, amount, ""))
                    alloc_vars.append(y)
                previous = ys_unit
                alloc_vars.append(node)
                if plan is not None and hint:
                    self._hint_unit(plan, job.key, j, node, choice, fitting, ys_unit)
            for r in asked:
                time_boxes[r].append((interval, job.units * job.unit[r]))
            self.nodes[job.key] = unit_nodes
            if plan is not None and hint:
                self._hint_vars.append(start.index)
                self._hint_values.append(int(plan.starts[job.key]))
            if branching == "priority":  # interleaved: this job's start, then its allocation
                add_strategy(model, [start.index], cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
                add_strategy(
                    model,
                    [var.index for var in alloc_vars],
                    cp_model.CHOOSE_MIN_DOMAIN_SIZE,
                    cp_model.SELECT_MAX_VALUE,
                )
            else:
                allocations.append([var.index for var in alloc_vars])
        if (
            allocations
        ):  # the start that can be earliest first (ties: priority order), then allocations
            add_strategy(
                model,
                [var.index for var in self.starts.values()],
                cp_model.CHOOSE_LOWEST_MIN,
                cp_model.SELECT_MIN_VALUE,
            )
        for indices in allocations:
            add_strategy(model, indices, cp_model.CHOOSE_MIN_DOMAIN_SIZE, cp_model.SELECT_MAX_VALUE)
        self.lower_bound = add_rules(
            model,
            instance,
            [self.starts[job.key] for job in instance.jobs],
            [self.intervals[job.key] for job in instance.jobs],
            cuts,
            events,
            horizon,
            plan if hint else None,
            self._hint_vars,
            self._hint_values,
        )
        for r in resources:
            if len(xs[r]) > 1 and any(job.unit[r] > 0 for job in instance.jobs):
                model.add_no_overlap_2d(xs[r], ys[r])
                model.add_cumulative(
                    [x for x, _ in time_boxes[r]], [d for _, d in time_boxes[r]], int(totals[r])
                )
        model.minimize(sum(job.weight * self.starts[job.key] for job in instance.jobs))
        add_hints(model, self._hint_vars, self._hint_values)

    def place(
        self,
        starts: dict[int, int],
        limits: CpLimits,
        deterministic_time: float,
        budget: Budget | None = None,
    ) -> tuple[cp_model.CpSolver, str]:
        """Solve the model with every start fixed to ``starts`` (a packing problem) within
        ``budget``; the start domains are restored afterwards."""
        variables = self.model.proto.variables
        saved = {}
        for key, var in self.starts.items():
            domain = variables[var.index].domain
            saved[var.index] = list(domain)
            _assign(domain, [starts[key], starts[key]])
        try:
            return solve(self.model, limits, deterministic_time, linearization=0, budget=budget)
        finally:
            for index, values in saved.items():
                _assign(variables[index].domain, values)

    def _hint_unit(
        self,
        plan: Plan,
        key: int,
        j: int,
        node: cp_model.IntVar,
        choice: list[cp_model.IntVar | None],
        fitting: list[tuple[int, int]],
        ys_unit: dict[int, cp_model.IntVar],
    ) -> None:
        at = plan.nodes[key][j]
        indices, values = self._hint_vars, self._hint_values
        indices.append(node.index)
        values.append(int(at))
        for (first, count), chosen in zip(fitting, choice):
            if chosen is not None:
                indices.append(chosen.index)
                values.append(int(first <= at < first + count))
        position = plan.positions[key][j]
        for r, y in ys_unit.items():
            indices.append(y.index)
            values.append(int(position[r]))


def model_size_bound(instance: CpInstance) -> int:
    """A lower bound on the variables and constraints of ``Pcp20Model(instance)``, counted
    without building it: per job its start and interval; per unit its node variable, its
    positions and their boxes, its links to the groups that can hold it (and, with several,
    a Boolean, an exactly-one and an enforced node range per group), the order after the
    job's previous unit. The running boxes, the cuts and the cumulatives are left out.

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[2], [2], [4]]),
    ...                   (CpJob(1, 2, (1,), 10, 10), CpJob(2, 1, (3,), 5, 20)), ())
    >>> model_size_bound(inst)  # job 1: 2 + 2 x (1 + 1 + 1 + 2 + 5 + 1) - 1; job 2: 2 + 4
    29
    >>> sum(model_size(Pcp20Model(inst).model))
    31
    """
    capacity = instance.capacity
    caps = [capacity[first].tolist() for first, _ in node_groups(capacity)]
    size = 0
    for job in instance.jobs:
        asked = [r for r, amount in enumerate(job.unit) if amount > 0]
        groups = sum(all(cap[r] >= job.unit[r] for r in asked) for cap in caps)
        choice = 2 * groups + 1 if groups > 1 else 0  # Booleans, enforced ranges, exactly-one
        per_unit = 1 + len(asked) * (2 + groups) + choice
        size += 2 + job.units * (per_unit + len(asked)) - len(asked)
    return size


def _assign(field: Any, values: list[int]) -> None:
    """Replace a repeated proto field's values (OR-Tools' pybind container or protobuf's)."""
    if hasattr(field, "clear"):
        field.clear()
    else:
        del field[:]
    field.extend(values)


UNIT_LIMIT = 8192
"""Most job units (``rn_i`` summed over the modelled jobs) PCP'20 builds a model for. The
paper is silent: its instances (Eurora) have a few units per job. A trace job asking
for 76,000 one-core units (CEA-Curie) gives a model of 150,000 unit variables that took
12-67 s of CPU per decision; on the overload study's Curie slice at load 2.0 the 10 of 28
modelled decisions above 8,192 units took 97.5 % of PCP'20's CPU (250 of 257 s).
Above the limit the greedy plan decides (``UNIT_LIMITED``)."""


"""PCP'20 search orders: ``priority`` (per job in priority order: start, then its
allocation), ``earliest`` (the paper's "highest priority that can start first": the start
with the smallest lower bound next, ties by priority; then the allocations), ``auto``
(CP-SAT's own search from the hint, LP relaxation on)."""


def solve_pcp20(
    instance: CpInstance,
    limits: CpLimits,
    max_retries: int = 4,
    levels: int | None = LEVELS,
    search: bool = True,
    branching: str = "auto",
    paper_time: bool = False,
    cuts: Iterable[str] = CUTS,
    hint: str = "list",
    relax: bool = True,
    unit_limit: int | None = UNIT_LIMIT,
) -> CpOutcome:
    """Build and solve the PCP'20 model of ``instance`` under the authors' time control.

    The model is built on the reduced system (``cp_reduce``: running jobs' ends rounded
    up to ``levels`` values, interchangeable nodes kept only as often as the modelled
    units can use them); ``levels=None`` models every node and running job as they are.
    The first solve gets ``limits.deterministic_time``; while no solution is found it is
    retried with 50% of that more each time, up to ``max_retries`` times (as the
    authors' code); then the greedy plan is returned with status ``FALLBACK``. With
    ``paper_time`` the limits are the authors' wall-clock ones instead: 1 s, then +0.5 s
    per retry (``max_retries``: 30 in their study), not reproducible. Placements name
    the real nodes. ``search=False`` returns the greedy plan itself (status ``GREEDY``,
    no model: the ``greedy-plan`` dispatcher); ``branching`` is one of ``BRANCHINGS``.

    With ``relax`` (the default) and at most ``cp_relax.RELAX_JOBS`` modelled jobs, the
    schedule relaxation (``cp_relax``) is solved first:
    when it is solved to optimality and its schedule packs into PCP'20's positions, that
    packing is the answer, ``OPTIMAL`` (the relaxation's optimum bounds PCP'20's);
    otherwise its bound is added to PCP'20's model and the search above decides.

    The model has variables per job unit, so its size grows with the units modelled: when
    the modelled jobs have more than ``unit_limit`` units in all (default ``UNIT_LIMIT``;
    ``None``: no limit), no model is built and the greedy plan decides (status
    ``UNIT_LIMITED``, as ``search=False`` otherwise).

    Every solve of the decision (relaxation, packing, search, retries) shares the work
    budget ``limits.decision_budget`` (``cp_instance.Budget``, deterministic; none under
    ``paper_time``); when it runs out before a solution the greedy plan is returned with
    status ``BUDGET``.

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[2], [2]]),
    ...                   (CpJob(1, 1, (2,), 10, 10_000), CpJob(2, 2, (1,), 1, 100_000)),
    ...                   (CpRunning(4, ((0, (1,)),)),))
    >>> out = solve_pcp20(inst, CpLimits())
    >>> out.status, out.starts, out.placements, out.changed
    ('OPTIMAL', {1: 1, 2: 0}, {2: ((0, 1), (1, 1))}, True)
    >>> greedy = solve_pcp20(inst, CpLimits(), search=False)
    >>> greedy.status, greedy.starts, greedy.placements
    ('GREEDY', {1: 0, 2: 10}, {1: ((1, 1),)})
    >>> solve_pcp20(inst, CpLimits(), unit_limit=2).status  # 3 units modelled
    'UNIT_LIMITED'
    """
    check_branching(branching)
    if hint not in HINTS:
        raise ValueError(f"hint must be one of {', '.join(HINTS)}, got {hint!r}")
    unknown = sorted(set(cuts) - set(CUTS))
    if unknown:
        raise ValueError(f"unknown cuts {unknown}; valid: {', '.join(CUTS)}")
    watch = Stopwatch()
    real = np.arange(len(instance.capacity))
    if levels is not None:
        reduced = reduce_instance(instance, levels)
        instance, real = reduced.instance, reduced.nodes
    plan = greedy_plan(instance)
    if search and unit_limit is not None and sum(job.units for job in instance.jobs) > unit_limit:
        search, status = False, UNIT_LIMITED
    else:
        status = GREEDY
    if (
        search and hint == "list" and plan.objective(instance) > 0
    ):  # same jobs now, the rest at the ends (cp_listplan)
        plan = list_plan(instance, plan)
    if plan.objective(instance) == 0:  # every job starts now: the lower bound, optimal
        return _real_nodes(plan_outcome(instance, plan, watch), real, plan)
    placements = {key: plan.allocation(key) for key, start in plan.starts.items() if start == 0}
    if not search:
        return _real_nodes(
            CpOutcome(
                dict(plan.starts),
                placements,
                status,
                0,
                0,
                plan.objective(instance),
                0,
                watch.seconds(),
            ),
            real,
            plan,
        )
    work = Budget(None if paper_time else limits.decision_budget)
    lazy = _LazyModel(instance, plan, branching, cuts, work)
    tag = "skipped" if relax else ""
    if relax and len(instance.jobs) <= cp_relax.RELAX_JOBS:
        forbidden: list[frozenset[int]] = []
        for _ in range(cp_relax.RELAX_ROUNDS):
            relaxed = solve_relaxation(instance, plan, limits, forbidden=forbidden, budget=work)
            tag, answer = _from_relaxation(lazy, relaxed, plan, placements, limits, watch, work)
            if tag != "unpacked" or relaxed.starts is None:
                break
            now = frozenset(
                i for i, job in enumerate(instance.jobs) if relaxed.starts[job.key] == 0
            )
            if fits_now(instance, sorted(now), limits, budget=work) is not False:
                break  # the start-now jobs fit: what does not pack is later (not cut)
            forbidden.append(now)
        if answer is not None:
            tag = "proved-cut" if forbidden else tag
            return _real_nodes(
                replace(
                    answer,
                    variables=lazy.variables,
                    constraints=lazy.constraints,
                    relaxation=tag,
                    budget_spent=work.spent,
                    budget_exhausted=work.exhausted,
                    unbuilt=lazy.unbuilt,
                ),
                real,
            )
        bounded = lazy.get()
        if bounded is not None and relaxed.bound > bounded.lower_bound:
            bounded.model.add(
                cp_model.LinearExpr.weighted_sum(
                    [bounded.starts[job.key] for job in instance.jobs],
                    [job.weight for job in instance.jobs],
                )
                >= relaxed.bound
            )
    built = lazy.get()  # None: the budget cannot pay for loading it (BUDGET, no solve)
    budget = limits.deterministic_time
    attempt = 0
    while built is not None and attempt <= max_retries:
        if paper_time:
            run_limits, budget = (
                replace(limits, wall_seconds=1.0 + 0.5 * attempt),
                PAPER_DETERMINISTIC,
            )
        else:
            run_limits = limits
        solver, status = solve(
            built.model,
            run_limits,
            budget,
            fixed_search=branching != "auto",
            linearization=LINEARIZATION,
            budget=work,
        )
        if status in ("OPTIMAL", "FEASIBLE"):
            outcome = _read(built, solver, status, attempt + 1, plan, placements, watch)
            return _real_nodes(
                replace(
                    outcome,
                    variables=lazy.variables,
                    constraints=lazy.constraints,
                    relaxation=tag,
                    budget_spent=work.spent,
                    budget_exhausted=work.exhausted,
                ),
                real,
            )
        if work.exhausted or attempt == max_retries:
            break
        budget += 0.5 * limits.deterministic_time
        attempt += 1
    return _real_nodes(
        CpOutcome(
            dict(plan.starts),
            placements,
            BUDGET if work.exhausted else FALLBACK,
            lazy.variables,
            lazy.constraints,
            plan.objective(instance),
            attempt + 1,
            watch.seconds(),
            relaxation=tag,
            budget_spent=work.spent,
            budget_exhausted=work.exhausted,
            unbuilt=lazy.unbuilt,
        ),
        real,
        plan,
    )


class _LazyModel:
    """PCP'20's model of one decision, built when a solve first needs it and only when
    the decision's budget can pay for loading it (``model_size_bound``): the relaxation
    often answers without it, and a model the budget refuses is not worth building."""

    def __init__(
        self,
        instance: CpInstance,
        plan: Plan,
        branching: str,
        cuts: Iterable[str],
        work: Budget,
    ) -> None:
        self.instance, self.plan, self.branching, self.cuts = instance, plan, branching, cuts
        self.work = work
        self.built: Pcp20Model | None = None
        self.variables = self.constraints = 0
        self.unbuilt = "relaxation"  # why it was not built: "relaxation" or "budget"

    def get(self) -> Pcp20Model | None:
        """The model, built on first use; None when the budget refuses it (charged once)."""
        if self.built is None and self.unbuilt != "budget":
            if self.work.refuses(model_size_bound(self.instance)):
                self.unbuilt = "budget"
                return None
            self.built = Pcp20Model(
                self.instance, self.plan, branching=self.branching, cuts=self.cuts
            )
            self.variables, self.constraints = model_size(self.built.model)
            self.unbuilt = ""
        return self.built


PLACE_TIME = 0.05
"""Deterministic time to pack the relaxation's schedule into PCP'20's positions."""


def _from_relaxation(
    lazy: _LazyModel,
    relaxed: Relaxed,
    plan: Plan,
    placements: dict[int, tuple[tuple[int, int], ...]],
    limits: CpLimits,
    watch: Stopwatch,
    work: Budget | None = None,
) -> tuple[str, CpOutcome | None]:
    """``(what the relaxation did, the answer it gives or None)`` (``CpOutcome.relaxation``)."""
    instance = lazy.instance
    if (
        relaxed.starts is None or relaxed.status != "OPTIMAL"
    ):  # packing an unproven schedule rarely paid (docs/cp.md)
        return "bound", None
    if relaxed.objective >= plan.objective(instance):  # the hint meets the bound: it is optimal
        return "proved", CpOutcome(
            dict(plan.starts),
            placements,
            "OPTIMAL",
            objective=plan.objective(instance),
            solves=1,
            seconds=watch.seconds(),
            changed=False,
            planned={key: plan.allocation(key) for key in plan.starts},
        )
    built = lazy.get()
    if built is None:  # the budget cannot pay for loading the model (as ``place``'s refusal)
        return "unpacked", None
    solver, status = built.place(relaxed.starts, limits, PLACE_TIME, work)
    if status not in ("OPTIMAL", "FEASIBLE"):
        return "unpacked", None
    return "proved", _read(
        built, solver, "OPTIMAL", 1, plan, placements, watch
    )  # the relaxation's starts, its objective


def _read(
    built: Pcp20Model,
    solver: cp_model.CpSolver,
    status: str,
    solves: int,
    plan: Plan,
    placements: dict[int, tuple[tuple[int, int], ...]],
    watch: Stopwatch,
) -> CpOutcome:
    """The outcome of a solved PCP'20 model: every start and allocation, the start-now
    placements."""
    starts = {key: int(solver.value(var)) for key, var in built.starts.items()}
    planned = {key: _counts(solver.value(node) for node in built.nodes[key]) for key in starts}
    found = {key: planned[key] for key, start in starts.items() if start == 0}
    objective = sum(job.weight * starts[job.key] for job in built.instance.jobs)
    return CpOutcome(
        starts,
        found,
        status,
        0,
        0,
        objective,
        solves,
        watch.seconds(),
        changed_from_plan(starts, found, plan, placements),
        planned,
    )


LINEARIZATION = 2
"""CP-SAT ``linearization_level`` of the ``auto`` search (docs/cp.md, "Search": level 2's
cuts raised the OPTIMAL share at the same deterministic budget)."""

PAPER_DETERMINISTIC = 1e9
"""Deterministic limit under ``paper_time`` (none in effect: the wall clock decides)."""


def changed_from_plan(
    starts: dict[int, int],
    placements: dict[int, tuple[tuple[int, int], ...]],
    plan: Plan,
    plan_placements: dict[int, tuple[tuple[int, int], ...]],
) -> bool:
    """Whether a solution starts other jobs now than the greedy plan, or on other nodes."""
    return changed_from(CpOutcome(starts, placements), plan.starts, plan_placements)


def _counts(nodes: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """``((node, units), ...)``, nodes increasing, of a unit-to-node list."""
    counts: dict[int, int] = defaultdict(int)
    for node in nodes:
        counts[int(node)] += 1
    return tuple(sorted(counts.items()))


def _real_nodes(outcome: CpOutcome, real: np.ndarray, plan: Plan | None = None) -> CpOutcome:
    """The outcome with its placements' node indices mapped to the real nodes (and every
    job's planned allocation: the solution's, or ``plan``'s when given)."""

    def mapped(
        allocations: dict[int, tuple[tuple[int, int], ...]],
    ) -> dict[int, tuple[tuple[int, int], ...]]:
        return {
            key: tuple(sorted((int(real[node]), units) for node, units in allocation))
            for key, allocation in allocations.items()
        }

    planned = (
        {key: plan.allocation(key) for key in plan.starts} if plan is not None else outcome.planned
    )
    return replace(outcome, placements=mapped(outcome.placements), planned=mapped(planned))
