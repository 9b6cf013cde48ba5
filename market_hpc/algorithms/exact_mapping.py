"""Exact minimum makespan of a task graph on exactly c identical cores (CP-SAT).

The reference ("second implementation") for the GA of Algorithm 1 (design-time
profiling) in Singh, Indrusiak et al., "Market-inspired Dynamic Resource Allocation in
Many-core High Performance Computing Systems". Every task is an interval on one of
``n_cores`` cores (optional intervals + ``NoOverlap`` per core); each core runs at least
one task (a profile entry uses *exactly* c cores); an edge (u, v) forces
``start[v] >= end[u] + data * comm_cost`` when u and v are on different cores and
``start[v] >= end[u]`` otherwise. The makespan is minimised.

How this relates to the GA: the GA's decoder (``profiling``) builds list schedules, each
task starting as early as its core and predecessors allow, in a task order the GA evolves
alongside the mapping. Any non-preemptive schedule's per-core orders can be expressed
that way, so a perfect search would equal the optimum here; with ``taskgraph``'s fixed
rank order instead, even the best mapping is up to 28 % slower on 5-8-task DAGs. The
tests compare the GA's response time directly with this optimum, so a gap is a search
miss of the GA.

Durations and delays must be integers for CP-SAT; fractional ``data * comm_cost``
delays are scaled by the smallest power of ten (<= 10**6) making them integral.
Determinism: one worker and an explicit ``random_seed``; an ``OPTIMAL`` result is
reproducible, a ``FEASIBLE`` one (time limit hit) may depend on machine speed, so the
status is always returned and must be checked by the caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import networkx as nx
from ortools.sat.python import cp_model

from market_hpc.algorithms.taskgraph import schedule_context
from market_hpc.errors import ConfigError, MarketHpcError


class ExactSolveError(MarketHpcError):
    """CP-SAT found no schedule (infeasible, invalid model or time limit with nothing)."""


@dataclass(frozen=True, slots=True)
class ExactResult:
    """Outcome of :func:`optimal_makespan`.

    Attributes:
        makespan: Best makespan found (proven minimal when ``status == "OPTIMAL"``).
        mapping: Core of each task (sorted node order), cores numbered by first use.
        status: ``"OPTIMAL"`` or ``"FEASIBLE"`` (time limit hit before the proof).
        starts: Start time of each task in the schedule found.
    """

    makespan: float
    mapping: tuple[int, ...]
    status: str
    starts: tuple[float, ...]


def _integer_scale(values: list[float]) -> int:
    """Smallest power of ten (<= 10**6) turning every value into an integer."""
    for exponent in range(7):
        scale: int = 10**exponent
        if all(abs(v * scale - round(v * scale)) < 1e-9 for v in values):
            return scale
    raise ConfigError(f"communication delays need more than 6 decimals to be exact, got {values!r}")


def optimal_makespan(
    g: nx.DiGraph,
    n_cores: int,
    *,
    comm_cost: float = 0.0,
    time_limit: float = 10.0,
    seed: int = 0,
) -> ExactResult:
    """Minimise the makespan of ``g`` on exactly ``n_cores`` identical cores with CP-SAT.

    Args:
        g: Task graph; node attribute ``wcet`` (positive int), edge attribute ``data``
            (default 0).
        n_cores: Number of cores, each of which must run at least one task; 1..|T|.
        comm_cost: Delay per unit of edge ``data`` between tasks on different cores.
        time_limit: CP-SAT wall-clock limit in seconds.
        seed: CP-SAT ``random_seed`` (with ``num_workers = 1``).

    Returns:
        The :class:`ExactResult`; check ``status`` before treating it as optimal.

    Raises:
        ConfigError: Bad graph (see ``taskgraph.validate_task_graph``), ``n_cores``
            outside 1..|T|, negative ``comm_cost`` or non-positive ``time_limit``.
        ExactSolveError: CP-SAT proved infeasibility, rejected the model, or stopped at
            the time limit without any schedule.

    >>> g = nx.DiGraph(); g.add_nodes_from([(0, {"wcet": 5}), (1, {"wcet": 3}), (2, {"wcet": 4})])
    >>> g.add_edge(0, 1)
    >>> result = optimal_makespan(g, 2)
    >>> (result.makespan, result.status)
    (8.0, 'OPTIMAL')
    """
    shared = schedule_context(g)  # validates the graph
    n = len(shared.wcet)
    if isinstance(n_cores, bool) or not isinstance(n_cores, int) or not 1 <= n_cores <= n:
        raise ConfigError(
            f"n_cores must be an int in 1..{n} (the number of tasks), got {n_cores!r}"
        )
    if not 0 <= comm_cost < math.inf or not time_limit > 0:
        raise ConfigError(
            f"need 0 <= comm_cost < inf, time_limit > 0; got {comm_cost!r}, {time_limit!r}"
        )
    wcet = shared.wcet
    edges = [
        (pred, task, data * comm_cost)
        for task in range(n)
        for pred, data in zip(shared.preds[task], shared.pred_data[task])
    ]
    scale = _integer_scale([delay for _, _, delay in edges])
    duration = [w * scale for w in wcet]
    delay = {(u, v): round(d * scale) for u, v, d in edges}
    horizon = sum(duration) + sum(delay.values())

    model = cp_model.CpModel()
    start = [model.new_int_var(0, horizon, f"start{t}") for t in range(n)]
    end = [model.new_int_var(0, horizon, f"end{t}") for t in range(n)]
    # Symmetry breaking: core k only hosts task t if k <= t and core k-1 already hosts
    # an earlier task (cores numbered by first use).
    on: list[list[Any]] = [  # None where core k cannot host task t (k > t)
        [model.new_bool_var(f"on{t}_{k}") if k <= t else None for k in range(n_cores)]
        for t in range(n)
    ]
    for t in range(n):
        model.add_exactly_one(var for var in on[t] if var is not None)
        model.add(end[t] == start[t] + duration[t])
        for k in range(1, min(t, n_cores - 1) + 1):
            earlier = [on[s][k - 1] for s in range(k - 1, t) if on[s][k - 1] is not None]
            model.add_bool_or(earlier).only_enforce_if(on[t][k])
    for k in range(n_cores):
        model.add_at_least_one(on[t][k] for t in range(k, n))
        model.add_no_overlap(
            model.new_optional_interval_var(start[t], duration[t], end[t], on[t][k], f"iv{t}_{k}")
            for t in range(k, n)
        )
    for (u, v), d in delay.items():
        model.add(start[v] >= end[u])
        if d > 0 and n_cores > 1:
            same = model.new_bool_var(f"same{u}_{v}")
            for k in range(n_cores):
                model.add(_or_zero(on[u][k]) == _or_zero(on[v][k])).only_enforce_if(same)
            model.add(start[v] >= end[u] + d).only_enforce_if(~same)
    makespan = model.new_int_var(0, horizon, "makespan")
    model.add_max_equality(makespan, end)
    model.minimize(makespan)

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.max_time_in_seconds = time_limit
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise ExactSolveError(
            f"CP-SAT returned {solver.status_name(status)} for {n} tasks on {n_cores} cores "
            f"(time_limit={time_limit}s); no schedule available"
        )
    mapping = tuple(
        next(k for k in range(n_cores) if on[t][k] is not None and solver.boolean_value(on[t][k]))
        for t in range(n)
    )
    return ExactResult(
        makespan=solver.value(makespan) / scale,
        mapping=mapping,
        status=solver.status_name(status),
        starts=tuple(solver.value(s) / scale for s in start),
    )


def _or_zero(var: cp_model.IntVar | None) -> cp_model.LinearExprT:
    """A core-assignment literal, or the constant 0 where symmetry breaking removed it."""
    return 0 if var is None else var
