"""PCP'20's schedule relaxation (``cp_relax``): a lower bound, a proof when it packs,
the search when it does not.

Hand-checkable cases for each rule, and properties on random two-type instances (cores
and GPUs on unlike nodes, so that some relaxed schedules cannot be packed):

* ``slot_demand``: a unit takes every slot of the smaller shape it covers;
* the relaxation's optimum never exceeds PCP'20's exact optimum (it is a bound);
* an answer marked ``proved`` is PCP'20's exact optimum, also when the relaxation
  budget is too small to prove anything (then nothing may be marked ``proved``);
* the settle cap (``settle_time``) is the first running end after which every job fits,
  pooled and per slot shape, and it leaves the relaxation's optimum unchanged;
* a relaxed schedule whose start-now jobs do not fit together now is cut off and the
  relaxation solved again; one that does not pack later goes to PCP'20's own search.
"""

from __future__ import annotations

import numpy as np
import pytest

from cp.test_reduce import LONG, assert_plan_fits
from market_hpc.algorithms.cp import relax as cp_relax
from market_hpc.algorithms.cp.cuts import slot_demand
from market_hpc.algorithms.cp.instance import CpInstance, CpJob, CpLimits, CpRunning, Stopwatch
from market_hpc.algorithms.cp.pcp20 import solve_pcp20
from market_hpc.algorithms.cp.relax import fits_now, relaxation_model, settle_time, solve_relaxation


def test_slot_demand_counts_every_slot_a_unit_takes() -> None:
    assert slot_demand((20, 0), (10, 0)) == 2  # a 20-core unit fills both 10-core slots of a node
    assert slot_demand((20, 3), (10, 2)) == 1  # GPUs: one 2-GPU slot's worth
    assert slot_demand((15,), (10,)) == 1
    assert slot_demand((4, 1), (4, 1)) == 1


def big_and_small() -> CpInstance:
    # node 0: 20 cores free; nodes 1 and 2: 9 of 20 free until 50 (pooled: 38 free).
    # A: 1 x 20 cores, 100 s, weight 10; B: 1 x 10 cores, 10 s, weight 100. Only node 0
    # has 10 free cores, so A and B cannot start together: B now, A at 10 (objective
    # 100); A now and B at 50 costs 5,000. A 10-core-slot count of 1 for A (instead of
    # 2) would let both start now in the relaxation (objective 0).
    busy = (CpRunning(50, ((1, (11,)), (2, (11,)))),)
    jobs = (CpJob(1, 1, (20,), 100, 10), CpJob(2, 1, (10,), 10, 100))
    return CpInstance(np.array([[20], [20], [20]]), jobs, busy)


def test_relaxation_keeps_a_big_and_a_small_unit_off_one_node() -> None:
    relaxed = solve_relaxation(big_and_small(), None, CpLimits())
    assert (relaxed.status, relaxed.starts, relaxed.objective) == ("OPTIMAL", {1: 10, 2: 0}, 100)
    outcome = solve_pcp20(big_and_small(), CpLimits())
    assert (outcome.status, outcome.relaxation, outcome.starts, outcome.objective) == (
        "OPTIMAL",
        "proved",
        {1: 10, 2: 0},
        100,
    )
    assert outcome.placements == {2: ((0, 1),)}
    assert_plan_fits(big_and_small(), outcome)


def gpu_clash() -> CpInstance:
    # node 0: 4 cores + 1 GPU, node 1: 3 cores. X asks (2 cores, 1 GPU), Y 4 cores: both
    # only fit node 0 and not together (6 > 4 cores), but pooled (6 <= 7 cores) and per
    # slot shape they may: the relaxation starts both now (objective 0), which cannot be
    # packed. The optimum starts one of them at 5 (objective 50).
    jobs = (CpJob(1, 1, (2, 1), 5, 10), CpJob(2, 1, (4, 0), 5, 10))
    return CpInstance(np.array([[4, 1], [3, 0]]), jobs)


def test_a_start_now_set_that_does_not_fit_is_cut_and_the_relaxation_solved_again() -> None:
    relaxed = solve_relaxation(gpu_clash(), None, CpLimits())
    assert (relaxed.status, relaxed.starts, relaxed.objective) == ("OPTIMAL", {1: 0, 2: 0}, 0)
    assert fits_now(gpu_clash(), [0, 1], CpLimits()) is False
    assert (
        fits_now(gpu_clash(), [0], CpLimits()) is True
        and fits_now(gpu_clash(), [1], CpLimits()) is True
    )
    again = solve_relaxation(gpu_clash(), None, CpLimits(), forbidden=[frozenset({0, 1})])
    assert (again.status, again.objective) == ("OPTIMAL", 50)
    outcome = solve_pcp20(gpu_clash(), LONG, levels=None)
    assert (outcome.status, outcome.relaxation, outcome.objective) == ("OPTIMAL", "proved-cut", 50)
    assert sorted(outcome.starts.values()) == [0, 5]
    no_relax = solve_pcp20(gpu_clash(), LONG, levels=None, relax=False)
    assert (no_relax.relaxation, no_relax.objective) == ("", 50)


def test_fits_now_counts_units_per_node() -> None:
    # two 4-core nodes, 1 core busy on node 0: 3 + 4 free. Two 2-core units and one 3-core
    # unit fit (3 on node 0, 2 + 2 on node 1); a third 2-core unit does not (3 - 2 = 1 left)
    inst = CpInstance(
        np.array([[4], [4]]),
        (CpJob(1, 2, (2,), 5, 1), CpJob(2, 1, (3,), 5, 1), CpJob(3, 1, (2,), 5, 1)),
        (CpRunning(9, ((0, (1,)),)),),
    )
    assert fits_now(inst, [0, 1], CpLimits()) is True
    assert fits_now(inst, [0, 1, 2], CpLimits()) is False
    assert fits_now(inst, [0, 2], CpLimits()) is True


def two_types(seed: int) -> CpInstance:
    """3-4 nodes of 4 cores, node 0 and some others with
    1 GPU; 5-10 running jobs; 3-6 queued jobs."""
    rng = np.random.default_rng(seed)
    nodes = int(rng.integers(3, 5))
    capacity = np.array([[4, int(rng.random() < 0.5)] for _ in range(nodes)])
    capacity[0, 1] = 1
    room = capacity[:, 0].copy()
    running = []
    for end in rng.permutation(np.arange(1, 30))[: int(rng.integers(5, 11))].tolist():
        node = int(rng.integers(0, nodes))
        take = min(int(rng.integers(1, 3)), int(room[node]))
        if take:
            room[node] -= take
            running.append(CpRunning(end, ((node, (take, 0)),)))
    jobs = []
    for key in range(int(rng.integers(3, 7))):
        gpu = int(rng.random() < 0.3)  # a GPU job has one unit: node 0 alone may have a GPU
        jobs.append(
            CpJob(
                key,
                1 if gpu else int(rng.integers(1, 3)),
                (int(rng.integers(1, 4)), gpu),
                int(rng.integers(1, 15)),
                int(rng.integers(1, 6)),
            )
        )
    return CpInstance(capacity, tuple(jobs), tuple(running))


SEEDS = range(16)


@pytest.fixture(scope="module")
def exact() -> dict[int, int]:
    """PCP'20's proven optimum of each random instance, without the relaxation."""
    optimum = {}
    for seed in SEEDS:
        outcome = solve_pcp20(two_types(seed), LONG, levels=None, relax=False)
        assert outcome.status == "OPTIMAL"
        optimum[seed] = outcome.objective
    return optimum


def test_the_relaxation_bounds_the_optimum_and_proofs_are_exact(exact: dict[int, int]) -> None:
    tags = []
    for seed in SEEDS:
        instance = two_types(seed)
        relaxed = solve_relaxation(instance, None, CpLimits())
        assert relaxed.bound <= exact[seed]
        if relaxed.status == "OPTIMAL":
            assert relaxed.objective <= exact[seed]
        outcome = solve_pcp20(instance, LONG, levels=None)
        tags.append(outcome.relaxation)
        assert outcome.status == "OPTIMAL" and outcome.objective == exact[seed], seed
        assert_plan_fits(instance, outcome)
    # the property is not empty: most relaxations prove, and some do not pack
    assert tags.count("proved") >= 6 and tags.count("unpacked") >= 4, tags


def test_an_unproven_relaxation_is_never_a_proof(
    exact: dict[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # with almost no budget the relaxation stops before its proof: nothing may be marked
    # proved unless its objective is the exact optimum
    monkeypatch.setattr(cp_relax, "RELAX_TIME", 1e-7)
    tags = []
    for seed in SEEDS:
        outcome = solve_pcp20(two_types(seed), CpLimits(), levels=None)
        tags.append(outcome.relaxation)
        if outcome.relaxation == "proved":
            assert outcome.status == "OPTIMAL" and outcome.objective == exact[seed], seed
    assert tags.count("bound") >= 4, tags


def test_the_relaxation_holds_the_running_jobs_in_the_pooled_cumulative() -> None:
    # one 6-core node, 2 cores busy until 10. A (3 cores) and B (2 cores), 5 s each: no
    # slot cumulative binds (one 3-core slot, two 2-core slots now), but 5 > 4 free cores:
    # one starts at 5 (objective 5). Without the running job in the pooled cumulative
    # both would start now.
    inst = CpInstance(
        np.array([[6]]),
        (CpJob(1, 1, (3,), 5, 1), CpJob(2, 1, (2,), 5, 1)),
        (CpRunning(10, ((0, (2,)),)),),
    )
    relaxed = solve_relaxation(inst, None, CpLimits())
    assert (relaxed.status, relaxed.objective) == ("OPTIMAL", 5)
    assert solve_pcp20(inst, LONG, levels=None).relaxation == "proved"


def test_identical_twins_may_start_together_in_the_relaxation() -> None:
    # test_cp_cuts' twins: A and B (1 core, 5 s, weight 3) now, C (2 cores) at 5: 5
    inst = CpInstance(
        np.array([[3]]), (CpJob(1, 1, (1,), 5, 3), CpJob(2, 1, (1,), 5, 3), CpJob(3, 1, (2,), 4, 1))
    )
    relaxed = solve_relaxation(inst, None, CpLimits())
    assert (relaxed.status, relaxed.starts, relaxed.objective) == ("OPTIMAL", {1: 0, 2: 0, 3: 5}, 5)


def test_a_relaxation_not_proven_optimal_is_not_packed() -> None:
    # big_and_small's optimal schedule, but reported FEASIBLE (the relaxation ran out of
    # budget): it proves nothing, so PCP'20's own search decides with its bound
    from market_hpc.algorithms.cp.budget import Budget
    from market_hpc.algorithms.cp.greedy import greedy_plan
    from market_hpc.algorithms.cp.pcp20 import _from_relaxation, _LazyModel
    from market_hpc.algorithms.cp.relax import Relaxed

    inst = big_and_small()
    plan = greedy_plan(inst)
    assert (
        plan.objective(inst) > 100
    )  # the greedy plan starts A now: the relaxation's schedule is better
    built = _LazyModel(inst, plan, "auto", (), Budget(None))  # built when packing needs it
    placements = {key: plan.allocation(key) for key, start in plan.starts.items() if start == 0}
    feasible = Relaxed("FEASIBLE", {1: 10, 2: 0}, 100, 50)
    assert _from_relaxation(built, feasible, plan, placements, CpLimits(), Stopwatch()) == (
        "bound",
        None,
    )
    tag, answer = _from_relaxation(
        built,
        Relaxed("OPTIMAL", {1: 10, 2: 0}, 100, 100),
        plan,
        placements,
        CpLimits(),
        Stopwatch(),
    )
    assert tag == "proved" and answer is not None
    assert (answer.status, answer.starts, answer.objective) == ("OPTIMAL", {1: 10, 2: 0}, 100)


def test_the_settle_cap_is_the_first_end_after_which_every_job_fits() -> None:
    # two 4-core nodes, one core busy on node 0 until 3 and on node 1 until 7. J: 3 units
    # of 2 cores. Pooled, 6 of 8 cores are free now: J fits. In 2-core slots there are
    # 2 now (one per node), 3 from 3 and 4 from 7: J fits from 3, the cap.
    running = (CpRunning(3, ((0, (1,)),)), CpRunning(7, ((1, (1,)),)))
    inst = CpInstance(np.array([[4], [4]]), (CpJob(1, 3, (2,), 5, 1),), running)
    assert settle_time(inst) == 3
    # with a second 2-core job: 4 slots (8 cores), from 7 on
    inst = CpInstance(
        np.array([[4], [4]]), (CpJob(1, 3, (2,), 5, 1), CpJob(2, 1, (2,), 5, 1)), running
    )
    assert settle_time(inst) == 7
    # the pooled count decides: one 6-core node, 2 cores busy until 4; A (3 cores) and B
    # (2 cores) have their slots now (one 3-core, two 2-core), but 5 > 4 free cores
    pooled = CpInstance(
        np.array([[6]]),
        (CpJob(1, 1, (3,), 5, 1), CpJob(2, 1, (2,), 5, 1)),
        (CpRunning(4, ((0, (2,)),)),),
    )
    assert settle_time(pooled) == 4
    # all fit now: no cap (the start-now cuts may not be moved across time 0)
    assert (
        settle_time(CpInstance(np.array([[4], [4]]), (CpJob(1, 1, (2,), 5, 1),), running)) is None
    )


def test_the_relaxation_starts_every_job_by_the_settle_cap() -> None:
    from ortools.sat.python import cp_model

    running = (CpRunning(3, ((0, (1,)),)), CpRunning(7, ((1, (1,)),)))
    inst = CpInstance(
        np.array([[4], [4]]), (CpJob(1, 3, (2,), 5, 1), CpJob(2, 1, (2,), 5, 1)), running
    )
    for job, at, expected in (
        (0, 7, cp_model.OPTIMAL),
        (0, 8, cp_model.INFEASIBLE),
        (1, 8, cp_model.INFEASIBLE),
    ):
        model, starts = relaxation_model(inst, None)
        model.add(starts[job] >= at)
        assert cp_model.CpSolver().solve(model) == expected, (job, at)


def test_the_settle_cap_keeps_the_relaxation_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    capped = []
    for seed in SEEDS:
        instance = two_types(seed)
        with_cap = solve_relaxation(instance, None, LONG)
        with monkeypatch.context() as patch:
            patch.setattr(cp_relax, "settle_time", lambda _: None)
            without = solve_relaxation(instance, None, LONG)
        assert with_cap.status == without.status == "OPTIMAL", seed
        assert with_cap.objective == without.objective, seed
        capped.append(settle_time(instance) is not None)
    assert sum(capped) >= 8, capped  # the cap is there on most instances
