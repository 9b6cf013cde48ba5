"""PCP'20's reduced system must be conservative (``cp_reduce``).

Each test is a hand-checkable case or a property a non-conservative reduction breaks:

* an end rounded to the *bottom* of its bucket lets the model plan a start while a
  running job still holds the resource (``test_planned_starts_are_pinned...`` and
  ``test_reduced_plans_are_feasible...``: the whole plan, every job's start and nodes,
  is checked against the *real* running jobs, step by step);
* a node the modelled units need, dropped, delays a start that was possible now
  (``test_every_needed_idle_node_is_kept``);
* reduced and exact plans on instances with many distinct running ends: the reduced
  optimum is never better than the exact one and equals it when the ends fit the levels.
"""

from __future__ import annotations

import numpy as np
import pytest

from market_hpc.algorithms.cp.instance import CpInstance, CpJob, CpLimits, CpOutcome, CpRunning
from market_hpc.algorithms.cp.pcp20 import solve_pcp20
from market_hpc.algorithms.cp.reduce import LEVELS, end_levels, reduce_instance

LONG = CpLimits(deterministic_time=10.0)


def staircase() -> CpInstance:
    # one 4-core node, four 1-core running jobs ending at 2, 4, 6, 8; job 7 asks 2 cores
    # for 10 s: exactly, 2 cores are free at 4
    running = tuple(CpRunning(end, ((0, (1,)),)) for end in (2, 4, 6, 8))
    return CpInstance(np.array([[4]]), (CpJob(7, 1, (2,), 10, 10),), running)


@pytest.mark.parametrize(("levels", "start"), [(None, 4), (4, 4), (2, 4), (1, 8)])
def test_planned_starts_are_pinned_and_ends_round_up(levels: int | None, start: int) -> None:
    # 2 levels: buckets {2, 4} -> 4, {6, 8} -> 8: still 4. 1 level: everything ends at 8.
    # Rounded to the bottom of the bucket (2 resp. 2) the start would be 2: too early.
    outcome = solve_pcp20(staircase(), LONG, levels=levels)
    assert outcome.status == "OPTIMAL"
    assert outcome.starts == {7: start}
    assert_plan_fits(staircase(), outcome)


def test_end_levels_round_up_to_the_largest_member_of_each_bucket() -> None:
    ends = list(range(1, 25))
    level = end_levels(ends, 5)
    assert all(level[e] >= e for e in ends)
    assert sorted(set(level.values())) == [5, 10, 15, 20, 24]
    assert level[1] == 5 and level[6] == 10 and level[24] == 24


def test_every_needed_idle_node_is_kept() -> None:
    # 10 nodes of 4 cores: 4 busy (two profiles), 6 idle. Job 1 needs 4 whole nodes now,
    # job 2 one more node (it fits now too), job 3 (1 core) fits on any of them: the
    # reduced system must keep 4 + 1 + 1 = 6 idle nodes; one fewer delays a start.
    capacity = np.array([[4]] * 10)
    running = (CpRunning(50, ((0, (4,)), (1, (4,)))), CpRunning(70, ((2, (4,)), (3, (4,)))))
    jobs = (
        CpJob(1, 4, (4,), 5, 20_000),
        CpJob(2, 1, (4,), 5, 20_000),
        CpJob(3, 1, (1,), 5, 20_000),
    )
    instance = CpInstance(capacity, jobs, running)
    reduced = reduce_instance(instance)
    idle = [node for node in reduced.nodes.tolist() if node >= 4]
    assert sorted(idle) == [4, 5, 6, 7, 8, 9]
    outcome = solve_pcp20(instance, LONG)
    assert outcome.starts == {1: 0, 2: 0, 3: 0}
    used = sorted(node for allocation in outcome.placements.values() for node, _ in allocation)
    assert set(used) <= {4, 5, 6, 7, 8, 9} and len(set(used)) >= 5
    assert_plan_fits(instance, outcome)


def many_ends(seed: int) -> CpInstance:
    """3-4 nodes of 4 cores, 8-14 running jobs (mostly
    1 core) with distinct ends, 3-5 queued jobs."""
    rng = np.random.default_rng(seed)
    nodes = int(rng.integers(3, 5))
    capacity = np.array([[4]] * nodes)
    room = [4] * nodes
    running = []
    ends = rng.permutation(np.arange(1, 40))[: int(rng.integers(8, 15))]
    for end in ends.tolist():
        node = int(rng.integers(0, nodes))
        if room[node] == 0:
            continue
        take = 1 if rng.random() < 0.8 else min(2, room[node])
        room[node] -= take
        running.append(CpRunning(end, ((node, (take,)),)))
    jobs = tuple(
        CpJob(
            key,
            int(rng.integers(1, 3)),
            (int(rng.integers(1, 4)),),
            int(rng.integers(1, 15)),
            int(rng.integers(1, 5)),
        )
        for key in range(int(rng.integers(3, 6)))
    )
    return CpInstance(capacity, jobs, tuple(running))


@pytest.mark.parametrize("relax", [True, False], ids=["relaxation", "model"])
@pytest.mark.parametrize("seed", range(12))
def test_reduced_plans_are_feasible_and_never_beat_the_exact_optimum(
    seed: int, relax: bool
) -> None:
    # with and without the schedule relaxation (cp_relax): its packed schedules, too,
    # must fit the real running jobs
    instance = many_ends(seed)
    distinct = len({job.remaining for job in instance.running})
    assert distinct >= 5
    exact = solve_pcp20(instance, LONG, levels=None, relax=relax)
    assert exact.status == "OPTIMAL"
    assert_plan_fits(instance, exact)
    for levels in (1, 2, 3):
        reduced = solve_pcp20(instance, LONG, levels=levels, relax=relax)
        assert reduced.status == "OPTIMAL"
        assert_plan_fits(instance, reduced)  # every planned start and node, against the real ends
        assert reduced.objective >= exact.objective
    same = solve_pcp20(
        instance, LONG, levels=distinct, relax=relax
    )  # every end is its own level: exact
    assert same.objective == exact.objective


def assert_plan_fits(instance: CpInstance, outcome: CpOutcome) -> None:
    """Every job's planned start and nodes fit the real running jobs at every time step."""
    horizon = instance.horizon + max(outcome.starts.values(), default=0) + 1
    load = np.zeros((len(instance.capacity), horizon), dtype=np.int64)
    for run in instance.running:
        for node, amounts in run.usage:
            load[node, : run.remaining] += amounts[0]
    jobs = {job.key: job for job in instance.jobs}
    for key, start in outcome.starts.items():
        job = jobs[key]
        allocation = outcome.planned[key]
        assert sum(units for _, units in allocation) == job.units, (key, allocation)
        for node, units in allocation:
            load[node, start : start + job.duration] += units * job.unit[0]
    over = np.argwhere(load > instance.capacity[:, :1])
    assert len(over) == 0, f"over capacity at (node, time) {over[:3].tolist()}: {outcome}"


# ------------------------------------------------------------ search options
def test_search_orders_are_what_they_say() -> None:
    from ortools.sat.python import cp_model

    from market_hpc.algorithms.cp.greedy import greedy_plan
    from market_hpc.algorithms.cp.pcp20 import Pcp20Model

    instance = many_ends(3)
    plan = greedy_plan(instance)
    starts = [Pcp20Model(instance, plan).starts[job.key].index for job in instance.jobs]
    models = [
        Pcp20Model(instance, plan, branching=b).model for b in ("priority", "earliest")
    ]  # kept alive
    priority, earliest = (
        [m.proto.search_strategy[i] for i in range(len(m.proto.search_strategy))] for m in models
    )
    # priority: job by job (start, then its allocation), interleaved, in priority order
    assert [s.exprs[0].vars[0] for s in priority[::2]] == starts
    assert all(s.variable_selection_strategy == cp_model.CHOOSE_FIRST for s in priority[::2])
    # earliest ("can start first"): all starts, smallest lower bound first, then allocations
    assert [e.vars[0] for e in earliest[0].exprs] == starts
    assert earliest[0].variable_selection_strategy == cp_model.CHOOSE_LOWEST_MIN
    assert all(
        s.variable_selection_strategy == cp_model.CHOOSE_MIN_DOMAIN_SIZE for s in earliest[1:]
    )


@pytest.mark.parametrize("branching", ["priority", "earliest", "auto"])
def test_every_search_order_and_the_paper_time_control_find_the_optimum(branching: str) -> None:
    instance = staircase()
    assert solve_pcp20(instance, LONG, branching=branching).starts == {7: 4}
    paper = solve_pcp20(instance, CpLimits(), max_retries=30, branching=branching, paper_time=True)
    assert (paper.status, paper.starts) == ("OPTIMAL", {7: 4})


@pytest.mark.parametrize("seed", range(6))
def test_the_reduced_instance_carries_the_usage_rows_of_its_running_jobs(seed: int) -> None:
    for levels in (1, 3, LEVELS):
        reduced = reduce_instance(many_ends(seed), levels).instance
        assert all(len(run.usage) == 1 and run.remaining > 0 for run in reduced.running)
        computed = CpInstance(reduced.capacity, reduced.jobs, reduced.running).usage_rows
        assert all(
            (given == rows).all() and given.shape == rows.shape
            for given, rows in zip(reduced.usage_rows, computed)
        )
