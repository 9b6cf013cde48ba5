"""The market's holding rule (``algorithms.market_holding``): one search over two instance
builders, the cores-only fast path agreeing with the general one on cores-only inputs; the
eligibility rules; the look-ahead's wait estimate and its resume overhead."""

from __future__ import annotations

import numpy as np
import pytest

from market_hpc.algorithms.market.holding import (
    HoldingRule,
    core_instances,
    first_release,
    first_release_resources,
    hold_search,
    hold_search_resources,
    latest_first,
    may_be_held,
    may_trigger,
    plan_hold_cores,
    plan_hold_resources,
    resource_instances,
    resume_overhead,
    search,
    value_after_wait,
)
from market_hpc.algorithms.market.maths import Candidate, Executing, HoldPlan
from market_hpc.algorithms.valuecurve import LinearDecayCurve, StepCurve
from market_hpc.errors import ConfigError


def _random_case(
    rng: np.random.Generator,
) -> tuple[list[Candidate], list[Executing], list[int], float]:
    nodes = int(rng.integers(1, 4))
    free = rng.integers(0, 3, nodes).tolist()
    running = [
        Executing(
            job_id,
            int(rng.integers(0, nodes)),
            int(rng.integers(1, 4)),
            float(rng.integers(0, 5)),
            job_id,
            float(rng.integers(0, 300)),
            float(rng.integers(100, 400)),
        )
        for job_id in range(1, int(rng.integers(1, 9)) + 1)
    ]
    arrivals = []
    for job_id in (101, 102, 103)[: int(rng.integers(1, 4))]:
        work = float(rng.integers(4, 40))
        width = int(rng.integers(1, 6))
        curve = LinearDecayCurve(float(rng.integers(100, 900)), float(rng.integers(1, 20)), 60.0)
        profile = tuple(work / c for c in range(1, width + 1))
        arrivals.append(Candidate(job_id, 0.0, curve, profile, 0.0, True, width))
    penalty = float(rng.choice([0.0, 0.2, 0.5]))
    return arrivals, running, free, penalty


def test_the_cores_only_fast_path_gives_the_general_searchs_plans_on_cores_only_inputs() -> None:
    rng = np.random.default_rng(2015)
    found = 0
    for trial in range(2000):
        arrivals, running, free, penalty = _random_case(rng)
        rows = np.zeros((len(free), 4), dtype=np.int64)
        rows[:, 0] = free
        baselines = (
            {a.job_id: float(rng.integers(0, 200)) for a in arrivals} if trial % 3 == 0 else None
        )
        fast = search(
            arrivals, core_instances(latest_first(running), free), 2.0, penalty, baselines
        )
        general = search(arrivals, resource_instances(running, rows, 0.0), 2.0, penalty, baselines)
        assert fast == general, trial
        assert hold_search(arrivals, running, free, 2.0, penalty, baselines) == fast, trial
        assert hold_search_resources(arrivals, running, rows, 0.0, 2.0, penalty, baselines) == fast
        found += fast is not None
        releases = [(float(e.start + 5), e.node, e.cores, e.job_id) for e in running]
        freed = [(*r, ((r[1], r[2]),), (1, 0, 0, 0), 0.0) for r in releases]
        for ahead in range(3):
            got = first_release(releases, free, ahead)
            assert first_release_resources(freed, rows, 0.0, arrivals[0], ahead) == got, trial
    assert found == 1796  # and 204 cases without a plan: both outcomes are compared


def test_both_paths_give_the_hand_checked_plan() -> None:
    """Node 0 runs jobs 1 (started 0) and 2 (started 1), a core each; node 1 runs job 3 on
    two cores. The arrival earns 300 on 2 cores, 0 on 1 (done at 22 > 12). Holding job 2
    alone frees one core: nothing; jobs 2 and 1: 300 - 50 - 40 = 210; job 3 alone:
    300 - 100 = 200. The first is best."""
    arrival = Candidate(8, 0.0, StepCurve(300.0, 12.0), (20.0, 10.0), 0.0, True, 2)
    running = [
        Executing(1, 0, 1, 0.0, 1, 50.0, 50.0),
        Executing(2, 0, 1, 1.0, 2, 40.0, 40.0),
        Executing(3, 1, 2, 0.0, 3, 100.0, 100.0),
    ]
    want = HoldPlan(8, 0, (2, 1), 2, 210.0, 300.0)
    assert hold_search([arrival], running, [0, 0], 2.0, 0.0) == want
    assert (
        hold_search_resources([arrival], running, np.zeros((2, 4), np.int64), 0.0, 2.0, 0.0) == want
    )
    # A penalty of 0.5 x V_max: node 0 costs 90 + 45 = 135 (net 165), node 1 costs 150 (net 150).
    assert hold_search([arrival], running, [0, 0], 2.0, 0.5).net_profit == 165.0  # type: ignore[union-attr]
    # Job 2 held at this instant already: node 0 frees only job 1's core, node 1 wins.
    held = plan_hold_cores(
        [arrival], latest_first(running), [], [0, 0], 2.0, HoldingRule(), lambda j: 0, {2}
    )
    assert held == HoldPlan(8, 1, (3,), 2, 200.0, 300.0)
    rows = np.zeros((2, 4), np.int64)
    assert (
        plan_hold_resources([arrival], running, [], rows, 0.0, 2.0, HoldingRule(), lambda j: 0, {2})
        == held
    )


def test_who_may_trigger_and_who_may_be_held() -> None:
    assert [may_trigger(h) for h in (0, 1, 2)] == [True, False, False]
    lookahead = HoldingRule(lookahead=True, max_holds=2)
    assert [may_be_held(lookahead, h) for h in (0, 1, 2, 3)] == [True, True, False, False]
    assert [may_be_held(HoldingRule(), h) for h in (0, 5)] == [True, True]  # the seed: no limit
    assert [resume_overhead(h, 30.0) for h in (0, 1)] == [0.0, 30.0]
    with pytest.raises(ConfigError, match=r"^max_holds must be >= 0, got -1$"):
        HoldingRule(max_holds=-1)
    with pytest.raises(ConfigError, match=r"^wait_weight must be in \[0, 1\], got 2$"):
        HoldingRule(wait_weight=2)


def _flip_case(
    holds: int,
) -> tuple[Candidate, dict[int, list[Executing]], list[tuple[float, int, int, int]]]:
    """One node of 2 cores, both busy: job 1 (expected value 40) holds them until t = 5.
    The arrival (value 100 until 10 after its arrival, 0 at 30; 10 on 2 cores) was held
    ``holds`` times before."""
    curve = LinearDecayCurve(100.0, 10.0, 30.0)
    arrival = Candidate(9, 0.0, curve, (20.0, 10.0), 0.0, True, 2, holds=holds)
    by_node = latest_first([Executing(1, 0, 2, 0.0, 1, 40.0, 40.0)])
    return arrival, by_node, [(5.0, 0, 2, 1)]


def test_the_look_ahead_counts_the_resume_of_a_held_arrival_and_its_decision_flips() -> None:
    """Holding job 1 now: the arrival is done at 10 and earns 100, less job 1's 40.
    Waiting (weight 1): it starts at 5 on 2 cores and is done at 15: 75, so holding nets
    100 - 75 - 40 = -15 and the look-ahead waits. Counting a 10 s resume, waiting ends at 25:
    25, and holding nets 100 - 25 - 40 = 35: it holds."""
    rule = HoldingRule(lookahead=True, wait_weight=1.0)
    costly = HoldingRule(lookahead=True, wait_weight=1.0, resume_seconds=10.0)
    held_before, by_node, releases = _flip_case(holds=1)
    got = first_release(releases, [0], 0)
    assert got == (5.0, 2)
    assert value_after_wait(held_before, got, 0.0) == 75.0
    assert value_after_wait(held_before, got, 0.0, overhead=10.0) == 25.0
    assert plan_hold_cores([held_before], by_node, releases, [0], 0.0, rule, lambda j: 0) is None
    plan = plan_hold_cores([held_before], by_node, releases, [0], 0.0, costly, lambda j: 0)
    assert plan == HoldPlan(9, 0, (1,), 2, 35.0, 100.0)
    # A never-held arrival pays no resume when it starts (the model's rule): no flip.
    fresh, by_node, releases = _flip_case(holds=0)
    assert plan_hold_cores([fresh], by_node, releases, [0], 0.0, costly, lambda j: 0) is None
