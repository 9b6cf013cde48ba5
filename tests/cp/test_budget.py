"""PCP'20's and HCP'19's deterministic decision budget (``cp_instance.Budget``).

Hand-checkable instances: with a budget too small to load the model the greedy plan
decides (status ``BUDGET``); with a large one CP-SAT's optimum is used. Runs are
reproducible (work is counted from CP-SAT's deterministic counters, never a clock).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from invariants import random_workload

from market_hpc.algorithms.cp import pcp20
from market_hpc.algorithms.cp.budget import SIZE_SECONDS, Budget
from market_hpc.algorithms.cp.cuts import CUTS
from market_hpc.algorithms.cp.greedy import greedy_plan
from market_hpc.algorithms.cp.instance import (
    BUDGET,
    CpInstance,
    CpJob,
    CpLimits,
    CpRunning,
    model_size,
)
from market_hpc.algorithms.cp.pcp20 import Pcp20Model, model_size_bound, solve_pcp20
from market_hpc.algorithms.cp.pooled import solve_pooled
from market_hpc.core.model import HPCModel
from market_hpc.errors import ConfigError
from market_hpc.experiment.config import config_from_dict
from market_hpc.policies import make_policy

# Two nodes of 2 cores, node 0 holds a running job for 4 s more. Job 1 (one 2-core unit,
# 10 s, weight 10,000) fits now only on node 1; job 2 (two 1-core units, 1 s, weight
# 100,000). The greedy plan (PCP'20's list hint) starts job 1 now on node 1 and job 2 at 4,
# when the running job ends (objective 400,000); the optimum starts job 2 now on both
# nodes and job 1 at 1 (10,000).
TWO_JOBS = CpInstance(
    np.array([[2], [2]]),
    (CpJob(1, 1, (2,), 10, 10_000), CpJob(2, 2, (1,), 1, 100_000)),
    (CpRunning(4, ((0, (1,)),)),),
)

# HCP'19's pooled view: 4 cores, 1 busy for 4 s. Job 1 asks for 3 cores for 10 s (weight
# 1), job 2 for all 4 for 1 s (weight 100). The greedy plan (shelves in priority order)
# starts job 1 now and job 2 at 10 (objective 1,000); the optimum waits: job 2 at 4, when
# the running job ends, and job 1 at 5 (405).
POOLED = CpInstance(
    np.array([[2], [2]]),
    (CpJob(1, 3, (1,), 10, 1), CpJob(2, 4, (1,), 1, 100)),
    (CpRunning(4, ((0, (1,)),)),),
)


@pytest.mark.parametrize("relax", [True, False], ids=["relaxation", "search"])
def test_pcp20_takes_the_greedy_plan_when_the_budget_cannot_pay_for_a_solve(relax: bool) -> None:
    # 1e-6 work units do not pay for loading any model (1.3e-4 per variable and constraint)
    tiny = solve_pcp20(TWO_JOBS, CpLimits(decision_budget=1e-6), relax=relax)
    assert tiny.status == BUDGET and tiny.budget_exhausted
    assert tiny.starts == {1: 0, 2: 4} and tiny.placements == {1: ((1, 1),)}  # the greedy plan
    # the model's size bound alone exceeds the budget: it was not built, no solve ran
    assert tiny.variables == 0 and tiny.unbuilt == "budget"
    assert tiny.budget_spent >= model_size_bound(TWO_JOBS) * SIZE_SECONDS  # its loading charged


def test_pcp20_builds_no_model_when_the_relaxation_answers() -> None:
    # the relaxation's optimum is packed into PCP'20's positions: still no PCP'20 model, so
    # the answer needed none (with relax=False the search builds it)
    relaxed = solve_pcp20(TWO_JOBS, CpLimits(decision_budget=10.0))
    assert relaxed.relaxation == "proved" and relaxed.status == "OPTIMAL"
    searched = solve_pcp20(TWO_JOBS, CpLimits(decision_budget=10.0), relax=False)
    assert searched.variables > 0 and searched.unbuilt == ""
    assert relaxed.starts == searched.starts


def mixed_instance(seed: int) -> CpInstance:
    """Two node types over three resources, a few multi-unit jobs, some running jobs."""
    rng = np.random.default_rng(seed)
    thin, fat = (4, 0, 8), (8, 2, 32)
    capacity = np.array(
        [thin] * int(rng.integers(1, 4)) + [fat] * int(rng.integers(1, 3)), dtype=np.int64
    )
    jobs = []
    for key in range(int(rng.integers(2, 9))):
        unit = (int(rng.integers(1, 5)), int(rng.integers(0, 3)), int(rng.integers(0, 9)))
        hosts = int((capacity >= unit).all(axis=1).sum())  # one unit per host fits
        units = int(rng.integers(1, hosts + 1))
        jobs.append(CpJob(key, units, unit, int(rng.integers(1, 50)), int(rng.integers(1, 999))))
    running = tuple(
        CpRunning(int(rng.integers(1, 40)), ((node, (int(rng.integers(1, 5)), 0, 1)),))
        for node in range(len(capacity))
        if rng.random() < 0.5
    )
    return CpInstance(capacity, tuple(jobs), running)


@pytest.mark.parametrize("seed", range(40))
def test_the_model_size_bound_never_exceeds_the_built_model(seed: int) -> None:
    # the bound lets PCP'20 skip building a model its budget would refuse: it must be a
    # lower bound, or a model the budget could pay for would be refused
    instance = mixed_instance(seed)
    bound = model_size_bound(instance)
    built = sum(model_size(Pcp20Model(instance, greedy_plan(instance), cuts=CUTS).model))
    assert 0 < bound <= built


@pytest.mark.parametrize("seed", range(12))
def test_refusing_by_the_size_bound_decides_as_building_and_refusing_would(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same decisions whether the budget refuses a model before building it (its size
    # bound) or after (its exact size, as before the bound): budgets around the model's
    # loading cost, so that both happen
    instance = mixed_instance(seed)
    size = model_size_bound(instance)
    for units in (0.5 * size * SIZE_SECONDS, 1.5 * size * SIZE_SECONDS, 0.05, 1.0):
        limits = CpLimits(decision_budget=units)
        early = solve_pcp20(instance, limits)
        with monkeypatch.context() as patch:
            patch.setattr(pcp20, "model_size_bound", lambda instance: 0)
            late = solve_pcp20(instance, limits)
        assert (early.status, early.starts, early.placements) == (
            late.status,
            late.starts,
            late.placements,
        ), units
        assert early.budget_exhausted == late.budget_exhausted


@pytest.mark.parametrize("relax", [True, False], ids=["relaxation", "search"])
def test_pcp20_uses_the_cp_solution_within_a_large_budget(relax: bool) -> None:
    large = solve_pcp20(TWO_JOBS, CpLimits(decision_budget=10.0), relax=relax)
    assert large.status == "OPTIMAL" and not large.budget_exhausted
    assert large.starts == {1: 1, 2: 0} and large.placements == {2: ((0, 1), (1, 1))}
    assert 0 < large.budget_spent < 10.0


def test_hcp19_takes_the_greedy_plan_when_the_budget_cannot_pay_and_the_optimum_otherwise() -> None:
    tiny = solve_pooled(POOLED, CpLimits(decision_budget=1e-6))
    assert tiny.status == BUDGET and tiny.starts == {1: 0, 2: 10} and tiny.objective == 1000
    large = solve_pooled(POOLED, CpLimits(decision_budget=10.0))
    assert large.status == "OPTIMAL" and large.starts == {1: 5, 2: 4} and large.objective == 405


def test_no_budget_is_the_behaviour_before_budgets() -> None:
    # no conflict limit is set, so CP-SAT's parameters are the old ones (tests/cp/test_decisions.py
    # pins the decisions and models with decision_budget = 0)
    assert Budget(None).limits(0.05, size=10**9) == (0.05, None)
    assert solve_pcp20(TWO_JOBS, CpLimits()).budget_spent == 0.0


def test_the_budget_caps_each_solve_at_its_own_limit_and_at_what_is_left() -> None:
    budget = Budget(0.5)
    assert budget.limits(0.002, size=0) == (0.002, 100)  # 0.01 units: 100 conflicts
    budget.charge(0.001, 3000)  # the conflicts cost more than the deterministic time
    assert budget.spent == pytest.approx(0.3)
    assert (
        budget.limits(0.05, size=0) == (0.04, 2000) and budget.exhausted
    )  # 0.2 left of 0.25 asked


PLATFORM = "nodes=5,cores=8,gpus=2,mem=32"
UNITS: list[tuple[int, ...]] = [
    (1, 0, 0, 2048),
    (2, 1, 0, 4096),
    (4, 0, 0, 1024),
    (1, 0, 0, 16384),
    (8, 2, 0, 30000),
]


def _run(scheduler: str, params: dict[str, Any]) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    jobs = random_workload(7, PLATFORM, UNITS, count=40)
    policy: Any = make_policy(scheduler, scheduler_params=params)
    model = HPCModel(jobs, platform=PLATFORM, seed=3, record_timeseries=False, policy=policy)
    model.run()
    rows = [
        (r.job_id, repr(r.start_time), r.nodes) for r in model.recorder.jobs_frame().itertuples()
    ]  # nan as text
    return rows, policy.summary_stats()


@pytest.mark.parametrize("scheduler", ["pcp20", "hcp19"])
def test_a_run_counts_its_budget_fallbacks_in_the_summary(scheduler: str) -> None:
    _, stats = _run(scheduler, {"decision_budget": 1e-6})
    counts = stats["cp_status_counts"]
    assert counts[BUDGET] > 0 and counts["OPTIMAL"] + counts["FEASIBLE"] <= counts[BUDGET]
    assert stats["cp_budget_exhausted"] >= counts[BUDGET] and stats["cp_decision_budget"] == 1e-6
    _, default = _run(scheduler, {})
    assert default["cp_decision_budget"] == 1.0 and BUDGET in default["cp_status_counts"]


@pytest.mark.parametrize("scheduler", ["pcp20", "hcp19"])
def test_budgeted_runs_are_identical(scheduler: str) -> None:
    first, second = (
        _run(scheduler, {"decision_budget": 0.02}),
        _run(scheduler, {"decision_budget": 0.02}),
    )
    assert first == second
    assert first[1]["cp_budget_exhausted"] > 0  # the budget did bind, and bound the same way


def test_the_budget_parameter_is_declared_and_checked() -> None:
    base = {
        "name": "b",
        "platform": "eurora",
        "workload": {"generator": "eurora", "jobs": 5},
        "policy": {"scheduler": "pcp20", "params": {"decision_budget": 0.5}},
    }
    config_from_dict(base)
    for bad in (-1.0, "fast", True):
        with pytest.raises(ConfigError, match="decision_budget"):
            config_from_dict(
                {**base, "policy": {"scheduler": "hcp19", "params": {"decision_budget": bad}}}
            )
    with pytest.raises(ConfigError, match="decision_budget"):
        make_policy("pcp20", scheduler_params={"decision_budget": -2})
