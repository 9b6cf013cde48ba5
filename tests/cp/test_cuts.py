"""PCP'20's redundant rules (``cp_cuts``) and its list-scheduling hint (``cp_listplan``).

Every rule is one hand-checkable case plus a property that a wrong rule breaks:

* a rule that cuts off an optimal schedule raises the optimum: on 12 instances with
  many distinct running ends the OPTIMAL objective with every rule equals the one
  without (an event bound one second too late, a slot too few, ``<`` for ``<=`` between
  identical jobs each change it on some instance);
* a lower bound above some schedule's objective is wrong: ``objective_bound`` never
  exceeds the proven optimum, and is positive on some instances (so the check bites);
* the hint must be a schedule the model accepts: every hinted value fixed, the model
  stays feasible, and the plan fits the real running jobs at every time step.
"""

from __future__ import annotations

import numpy as np
import pytest

from cp.test_reduce import LONG, assert_plan_fits, many_ends
from market_hpc.algorithms.cp.cuts import (
    CUTS,
    event_bounds,
    fluid_start_bound,
    free_profile,
    identical_pairs,
    objective_bound,
    slot_cumulatives,
    slot_limits,
)
from market_hpc.algorithms.cp.greedy import greedy_plan, shelf_plan
from market_hpc.algorithms.cp.instance import CpInstance, CpJob, CpLimits, CpOutcome, CpRunning
from market_hpc.algorithms.cp.listplan import list_plan
from market_hpc.algorithms.cp.pcp20 import Pcp20Model, solve_pcp20


def test_event_bound_is_the_earliest_other_end() -> None:
    # one 4-core node, a running job ends at 5; durations 10, 3, 7: job 2's own 3 s do
    # not count for it (it cannot start at its own end), so its bound is the running 5
    inst = CpInstance(
        np.array([[4]]),
        (CpJob(1, 1, (2,), 10, 1), CpJob(2, 1, (2,), 3, 1), CpJob(3, 1, (4,), 7, 1)),
        (CpRunning(5, ((0, (1,)),)),),
    )
    assert event_bounds(inst) == [3, 5, 3]
    model = Pcp20Model(inst, cuts=("event",))
    domains = [list(model.model.proto.variables[model.starts[k].index].domain) for k in (1, 2, 3)]
    horizon = inst.horizon
    assert domains == [[0, 0, 3, horizon - 10], [0, 0, 5, horizon - 3], [0, 0, 3, horizon - 7]]


def test_slot_limits_count_whole_units_per_node() -> None:
    # two 20-core nodes, 5 cores of node 0 busy: one 20-core slot (node 1), three 10-core
    # slots (1 on node 0, 2 on node 1); job 1 (2 x 20) dominates both shapes and takes
    # two 10-core slots per unit: 4 of them
    inst = CpInstance(
        np.array([[20], [20]]),
        (CpJob(1, 2, (20,), 5, 1), CpJob(2, 1, (10,), 5, 1), CpJob(3, 1, (10,), 5, 1)),
        (CpRunning(9, ((0, (5,)),)),),
    )
    assert slot_limits(inst) == [([0], [2], 1), ([0, 1, 2], [4, 1, 1], 3)]


def test_identical_pairs_link_consecutive_twins_only() -> None:
    jobs = (
        CpJob(1, 1, (2,), 5, 7),
        CpJob(2, 1, (2,), 6, 7),
        CpJob(3, 1, (2,), 5, 7),
        CpJob(4, 1, (2,), 5, 7),
    )
    assert identical_pairs(CpInstance(np.array([[4]]), jobs)) == [(0, 2), (2, 3)]


def test_identical_twins_may_start_together() -> None:
    # one idle 3-core node; twins A, B (1 core, 5 s, weight 3) and C (2 cores, 4 s): the
    # optimum starts both twins now and C at 5 (objective 5); C now with A and B at 4
    # costs 12. Ordering twins strictly (s_A < s_B) would force the 12.
    inst = CpInstance(
        np.array([[3]]), (CpJob(1, 1, (1,), 5, 3), CpJob(2, 1, (1,), 5, 3), CpJob(3, 1, (2,), 4, 1))
    )
    assert identical_pairs(inst) == [(0, 1)]
    outcome = solve_pcp20(inst, LONG, levels=None, relax=False)
    assert outcome.status == "OPTIMAL"
    assert (outcome.starts, outcome.objective) == ({1: 0, 2: 0, 3: 5}, 5)


def test_slot_cumulative_blocks_take_away_what_running_jobs_hold() -> None:
    # three 20-core nodes; node 0 full until 4, 5 cores of node 1 until 9: 20-core slots
    # 1, then 2, then 3; two 2-unit jobs need them: capacity 3 minus nested blocks 1 + 1
    inst = CpInstance(
        np.array([[20], [20], [20]]),
        (CpJob(1, 2, (20,), 5, 1), CpJob(2, 2, (20,), 5, 1)),
        (CpRunning(4, ((0, (20,)),)), CpRunning(9, ((1, (5,)),))),
    )
    times, free = free_profile(inst)
    assert times == [0, 4, 9]
    assert free[:, :, 0].tolist() == [[0, 15, 20], [20, 15, 20], [20, 20, 20]]
    assert slot_cumulatives(inst) == [([0, 1], [2, 2], [(4, 1), (9, 1)], 3)]


@pytest.mark.parametrize(
    ("jobs", "profile", "bound"),
    [
        ([(1, 4, 2), (1, 4, 2)], [(0, 2)], 4.0),  # one after the other: 0 + 4
        ([(3, 2, 1), (1, 2, 1)], [(0, 0), (5, 1)], 22.0),  # heavier first at 5, then 7: 3 * 5 + 7
        ([(1, 2, 2), (1, 2, 2)], [(0, 3)], 0.75),  # the 2nd gets 1 core for 2 s, then 2: M = 1.75
    ],
)
def test_fluid_bound_by_hand(
    jobs: list[tuple[int, int, int]], profile: list[tuple[int, int]], bound: float
) -> None:
    assert fluid_start_bound(jobs, profile) == pytest.approx(bound)


def test_objective_bound_by_hand() -> None:
    # two 2-core nodes, node 0 busy until 3; two 2-core jobs of 4 s, weight 10: one slot
    # now, so one job waits; the fluid bound lets it start at 3 at the earliest: 30
    inst = CpInstance(
        np.array([[2], [2]]),
        (CpJob(1, 1, (2,), 4, 10), CpJob(2, 1, (2,), 4, 10)),
        (CpRunning(3, ((0, (2,)),)),),
    )
    assert objective_bound(inst) == 30
    outcome = solve_pcp20(inst, LONG, levels=None, relax=False)
    assert outcome.status == "OPTIMAL" and outcome.objective == 30


@pytest.mark.parametrize("seed", range(12))
def test_rules_keep_the_optimum_and_the_bound_stays_below_it(seed: int) -> None:
    instance = many_ends(seed)
    # the model's own rules, without the schedule relaxation (which would answer first)
    plain = solve_pcp20(instance, LONG, levels=None, cuts=(), hint="shelf", relax=False)
    ruled = solve_pcp20(instance, LONG, levels=None, cuts=CUTS, relax=False)
    relaxed = solve_pcp20(instance, LONG, levels=None)
    assert plain.status == ruled.status == relaxed.status == "OPTIMAL"
    assert ruled.objective == plain.objective == relaxed.objective
    assert objective_bound(instance) <= plain.objective
    assert_plan_fits(instance, ruled)


def test_the_bound_bites_on_some_instances() -> None:
    # the property above could not fail with a bound of 0 everywhere
    assert sum(objective_bound(many_ends(seed)) > 0 for seed in range(12)) >= 6


@pytest.mark.parametrize("seed", range(12))
def test_list_plan_is_a_schedule_the_model_accepts(seed: int) -> None:
    from ortools.sat.python import cp_model

    instance = many_ends(seed)
    base = greedy_plan(instance)
    plan = list_plan(instance, base)
    # the same jobs start now, on the same nodes, as in the shelf plan (greedy-plan's decision)
    assert {k for k, s in plan.starts.items() if s == 0} == {
        k for k, s in base.starts.items() if s == 0
    }
    assert all(plan.nodes[k] == base.nodes[k] for k, s in base.starts.items() if s == 0)
    assert plan.objective(instance) <= shelf_plan(instance).objective(instance)
    built = Pcp20Model(instance, plan, branching="auto", cuts=CUTS)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = 5.0
    solver.parameters.num_workers = 1
    solver.parameters.fix_variables_to_their_hinted_value = True  # every variable is hinted
    assert solver.solve(built.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    assert solver.objective_value == plan.objective(instance)
    planned = {key: plan.allocation(key) for key in plan.starts}
    assert_plan_fits(instance, CpOutcome(dict(plan.starts), planned=planned))


def test_list_plan_starts_at_the_first_end_that_frees_room() -> None:
    # two 2-core nodes; node 0 busy until 3, one core of node 1 until 50. Job 2 starts
    # now on node 1's free core (position 3); job 1 at 3 on node 0, job 3 at 8 after it
    # (the shelf plan waits for the 50-second job for both)
    inst = CpInstance(
        np.array([[2], [2]]),
        (CpJob(1, 1, (2,), 5, 1), CpJob(2, 1, (1,), 4, 1), CpJob(3, 1, (2,), 6, 1)),
        (CpRunning(3, ((0, (2,)),)), CpRunning(50, ((1, (1,)),))),
    )
    assert shelf_plan(inst).starts == {1: 50, 2: 0, 3: 50}
    plan = list_plan(inst)
    assert plan.starts == {1: 3, 2: 0, 3: 8}
    assert plan.nodes == {1: [0], 2: [1], 3: [0]}
    assert plan.positions == {1: [(0,)], 2: [(3,)], 3: [(0,)]}


def test_free_blocks_skip_ended_units_and_the_running_stack() -> None:
    from market_hpc.algorithms.cp.listplan import free_blocks

    # a 10-position node, running stack [0, 2); planned units at [4, 6) until 9 and
    # [6, 8) until 3: at 5 the second has ended
    assert free_blocks(2, 10, [(4, 6, 9), (6, 8, 3)], 5) == [(2, 4), (6, 10)]
    assert free_blocks(2, 10, [(4, 6, 9), (6, 8, 3)], 2) == [(2, 4), (8, 10)]


def test_list_plan_reuses_the_positions_of_an_ended_job() -> None:
    # one idle 2-core node, two 2-core jobs: the second starts at the first's end, 5, on
    # the same positions
    inst = CpInstance(
        np.array([[2], [1]]),
        (CpJob(1, 1, (2,), 5, 1), CpJob(2, 1, (2,), 4, 1)),
        (CpRunning(99, ((1, (1,)),)),),
    )
    plan = list_plan(inst)
    assert plan.starts == {1: 0, 2: 5}
    assert plan.positions == {1: [(0,)], 2: [(0,)]}


def test_default_pcp20_is_deterministic() -> None:
    instance = many_ends(3)
    limits = CpLimits(deterministic_time=0.002)
    first, second = solve_pcp20(instance, limits), solve_pcp20(instance, limits)
    assert (first.starts, first.placements, first.status, first.objective) == (
        second.starts,
        second.placements,
        second.status,
        second.objective,
    )


def _free_profile_by_loops(instance: CpInstance) -> tuple[list[int], np.ndarray]:
    """The reference of ``free_profile``: every running job's usage taken from the
    segments it is busy in, one entry at a time."""
    times = [0] + sorted({job.remaining for job in instance.running})
    free = np.repeat(instance.capacity[None, :, :], len(times), axis=0).astype(np.int64)
    for job in instance.running:
        last = int(np.searchsorted(times, job.remaining))  # busy in segments 0 .. last - 1
        for node, amounts in job.usage:
            free[:last, node] -= np.asarray(amounts, dtype=np.int64)
    return times, np.maximum(free, 0)


@pytest.mark.parametrize("seed", range(40))
def test_free_profile_and_used_equal_their_loop_references(seed: int) -> None:
    # ties in remaining times, several entries per node, usage above capacity (clipped),
    # idle nodes and no running job at all
    rng = np.random.default_rng(seed)
    nodes, types = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    capacity = rng.integers(0, 9, size=(nodes, types))
    running = tuple(
        CpRunning(
            int(rng.integers(1, 6)),
            tuple(
                (int(node), tuple(int(a) for a in rng.integers(0, 6, size=types)))
                for node in rng.choice(nodes, size=int(rng.integers(1, nodes + 1)))
            ),
        )
        for _ in range(int(rng.integers(0, 7)))
    )
    instance = CpInstance(capacity, (), running)
    times, free = free_profile(instance)
    want_times, want_free = _free_profile_by_loops(instance)
    assert times == want_times and free.dtype == want_free.dtype
    assert np.array_equal(free, want_free)
    used = np.zeros_like(capacity)
    for job in running:
        for node, amounts in job.usage:
            used[node] += amounts
    assert np.array_equal(instance.used, np.minimum(used, capacity))
    instance.used[...] = -1  # a new array each time: the instance is unchanged
    assert np.array_equal(instance.used, np.minimum(used, capacity))
