"""Seed 002 market dispatchers: the paper's worked examples, accounting, work conservation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from market_fixtures import FIG5_LOSSES, fig5_jobs, market_job

from market_hpc.algorithms.market.holding import hold_instances, hold_search
from market_hpc.algorithms.market.maths import Candidate, Executing, c_star
from market_hpc.algorithms.valuecurve import LinearDecayCurve, StepCurve
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError
from market_hpc.policies import scheduler_entry, scheduler_names
from market_hpc.testing.workloads import overload_market_jobs

MARKET = [name for name in scheduler_names() if scheduler_entry(name).market]


def test_all_market_policies_are_registered():
    seed = ["sjq", "maxv", "maxvd", "minvr", "sjqh", "maxvh", "maxvdh", "minvrh"]
    lookahead = ["sjqlh", "maxvlh", "maxvdlh", "minvrlh"]
    assert sorted(MARKET) == sorted(seed + lookahead + ["easy-mold"])


def test_table_ii_saturation_points():
    # Table II rows: the smallest core count reaching the minimum response time.
    assert c_star((86, 43, 29, 23, 19, 17, 15, 15, 15)) == 7
    assert c_star((58, 29, 20, 17, 13, 11, 11)) == 6
    assert c_star((83, 42, 28, 22, 22, 22)) == 4
    assert c_star((74, 37, 26, 25, 25)) == 4


def fig5_state():
    jobs = {job.job_id: job for job in fig5_jobs()}
    placement = {
        1: (0, 3, 0),
        4: (0, 3, 3),
        7: (0, 3, 5),
        3: (1, 3, 1),
        2: (1, 4, 4),
        5: (1, 2, 6),
        6: (2, 9, 2),
    }
    executing = [
        Executing(j, node, cores, start, start, FIG5_LOSSES[j], FIG5_LOSSES[j])
        for j, (node, cores, start) in placement.items()
    ]
    j8 = jobs[8]
    arrival = Candidate(
        8, 7.0, j8.payload["value_curve"], j8.profile, 0.0, True, c_star(j8.profile)
    )
    return arrival, executing


def test_fig5_holding_instances_match_the_paper_table():
    arrival, executing = fig5_state()
    table = {
        (p.node, p.held): p.net_profit
        for p in hold_instances([arrival], executing, [0, 0, 0], 7.0, 0.0)
    }
    assert table[(0, (7,))] == 40
    assert table[(0, (7, 4))] == 100
    assert table[(1, (5,))] == -80
    assert table[(1, (5, 2))] == 200
    best = hold_search([arrival], executing, [0, 0, 0], 7.0, 0.0)
    assert (best.node, best.held, best.cores, best.net_profit) == (1, (5, 2), 6, 200)


def test_fig5_penalty_enters_the_holding_decision():
    arrival, executing = fig5_state()
    # pi = 0.5 charges half of each held job's maximum value: {j5, j2} nets 200 - 100 = 100,
    # {j7, j4} 100 - 150 < 0, {j7} 40 - 30 = 10, j6 alone 100 - 150 < 0.
    best = hold_search([arrival], executing, [0, 0, 0], 7.0, 0.5)
    assert (best.node, best.held, best.net_profit) == (1, (5, 2), 100)
    assert hold_search([arrival], executing, [0, 0, 0], 7.0, 1.0) is None


@pytest.mark.parametrize("policy", ["maxvh", "maxvdh", "sjqh", "minvrh"])
def test_fig5_in_the_model_holds_j5_and_j2_on_node_2(policy):
    model = HPCModel(fig5_jobs(), "hlrs-3x9", policy)
    model.run(until=7)
    placement = {r.job.job_id: r.allocation for r in model.running_by_end}
    assert placement[8] == ((1, 6),)
    assert 5 not in placement and 2 not in placement
    assert {placement[j][0][0] for j in (1, 4, 7)} == {0}
    assert model.recorder.holds == 2
    model.run()
    jobs = model.recorder.jobs_frame().set_index("job_id")
    assert jobs.loc[8, "value"] == 400 and jobs.loc[8, "end_time"] == 17
    assert jobs.loc[5, "hold_count"] == 1 and jobs.loc[2, "hold_count"] == 1
    assert (jobs["status"] == "finished").all()


def test_fig5_without_holding_j8_waits():
    model = HPCModel(fig5_jobs(), "hlrs-3x9", "maxv")
    model.run(until=7)
    assert 8 not in {r.job.job_id for r in model.running_by_end}
    assert model.recorder.holds == 0


def work_done(segments: pd.DataFrame, jobs_by_id) -> pd.Series:
    """Fraction of each job's work its segments performed (1/RT(c) per time unit)."""
    rate = [1.0 / jobs_by_id[j].profile[c - 1] for j, c in zip(segments.job_id, segments.units)]
    return ((segments.end - segments.start) * rate).groupby(segments.job_id).sum()


def overload_jobs(seed: int, n: int = 40):
    """The market overload workload of the conformance checks (``market_hpc.testing``)."""
    return overload_market_jobs(seed, n)


@pytest.mark.parametrize("policy", MARKET)
@pytest.mark.parametrize("penalty", [0.0, 0.3])
def test_profit_accounting_and_work_conservation(policy, penalty):
    jobs = overload_jobs(seed=7)
    by_id = {j.job_id: j for j in jobs}
    model = HPCModel(jobs, "hlrs-3x9", policy, hold_penalty=penalty)
    model.run()
    frame = model.recorder.jobs_frame()
    finished = frame[frame.status == "finished"]
    dropped = frame[frame.status == "dropped"]
    assert len(finished) + len(dropped) == len(jobs)
    # total = values at completion - penalties; dropped jobs earn nothing and pay nothing extra
    penalties = sum(
        penalty * by_id[j].payload["value_curve"].max_value * k
        for j, k in zip(frame.job_id, frame.hold_count)
    )
    assert model.recorder.penalties == pytest.approx(penalties)
    assert model.recorder.profit == pytest.approx(finished.value.sum() - penalties)
    assert (dropped.value == 0).all()
    expected = [
        by_id[j].payload["value_curve"].value_at(end - by_id[j].submit)
        for j, end in zip(finished.job_id, finished.end_time)
    ]
    assert finished.value.tolist() == pytest.approx(expected)
    # work conserved: finished jobs did exactly one job's work (up to the integer time grid)
    done = work_done(model.recorder.segments_frame(), by_id)
    for job_id in finished.job_id:
        profile = by_id[job_id].profile
        assert (
            1.0 - 1e-9
            <= done[job_id]
            < 1.0 + (1 + frame.set_index("job_id").hold_count[job_id]) / min(profile)
        )


def test_holding_happens_under_overload_and_jobs_resume_from_the_hold_point():
    jobs = overload_jobs(seed=3, n=60)
    model = HPCModel(jobs, "hlrs-3x9", "maxvh")
    model.run()
    segments = model.recorder.segments_frame()
    held = segments[segments.progress_after < 1.0]
    assert model.recorder.holds == len(held) > 0
    for row in held.itertuples():
        later = segments[(segments.job_id == row.job_id) & (segments.start >= row.end)]
        if len(later):
            assert later.iloc[0].progress_before == pytest.approx(row.progress_after)


def test_queued_job_is_dropped_when_its_value_runs_out():
    blocker = market_job(1, 0, (100.0,) * 1, StepCurve(10.0, 1_000.0))
    blockers = [market_job(i, 0, (100.0,), StepCurve(10.0, 1_000.0)) for i in range(2, 4)]
    late = market_job(9, 1, (5.0,), StepCurve(50.0, 20.0))
    model = HPCModel([blocker, *blockers, late], "nodes=1,cores=3", "maxv")
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")
    assert frame.loc[9, "status"] == "dropped"
    # started at t=16 it would end at 21, elapsed 20: still worth 50. From t=17 on its fastest
    # finish earns nothing, and the policy's wake-up drops it exactly then.
    assert frame.loc[9, "end_time"] == 17
    assert frame.loc[9, "value"] == 0


def test_market_policy_refuses_jobs_without_value_curves():
    from market_hpc.domain.job import Job

    with pytest.raises(
        ConfigError,
        match=r"scheduler 'maxv' cannot run this workload: .*it needs value curves, "
        r"missing for 1 job \(e\.g\. job 1\)",
    ):
        HPCModel([Job(1, 0, 10, 10)], "hlrs-3x9", "maxv")  # by name: refused before the run
    from market_hpc.policies import make_policy

    model = HPCModel(
        [Job(1, 0, 10, 10)], "hlrs-3x9", policy=make_policy("maxv")
    )  # the policy's own guard
    with pytest.raises(ConfigError, match="job 1 has no value curve"):
        model.run()


# Conformance (decisions executable, view untouched, same seed same results, held jobs
# keep their work) runs over every market policy in tests/test_conformance.py.


def test_pruned_hold_search_equals_the_exhaustive_argmax():
    rng = np.random.default_rng(42)
    for _ in range(300):
        n_nodes = int(rng.integers(1, 4))
        executing = []
        seq = 0
        for node in range(n_nodes):
            for _ in range(int(rng.integers(1, 5))):
                seq += 1
                value = float(rng.integers(0, 300))
                executing.append(
                    Executing(
                        seq,
                        node,
                        int(rng.integers(1, 4)),
                        float(rng.integers(0, 10)),
                        seq,
                        value,
                        value + float(rng.integers(0, 100)),
                    )
                )
        arrivals = []
        for k in range(int(rng.integers(1, 4))):
            tasks = int(rng.integers(1, 8))
            work = float(rng.integers(10, 60))
            profile = tuple(float(np.ceil(work / c)) for c in range(1, tasks + 1))
            curve = LinearDecayCurve(
                float(rng.integers(100, 900)),
                float(rng.integers(5, 30)),
                float(rng.integers(40, 120)),
            )
            arrivals.append(Candidate(100 + k, 10.0, curve, profile, 0.0, True, c_star(profile)))
        penalty = float(rng.choice([0.0, 0.2, 0.6]))
        free = [0] * n_nodes
        brute = None
        for plan in hold_instances(arrivals, executing, free, 10.0, penalty):
            if plan.net_profit > (brute.net_profit if brute else 0.0):
                brute = plan
        assert hold_search(arrivals, executing, free, 10.0, penalty) == brute


@pytest.mark.parametrize("rule", ["sjq", "maxv", "maxvd", "minvr"])
def test_bounded_auction_selects_what_a_full_scan_selects(rule):
    from market_hpc.algorithms.market.auction import Auction
    from market_hpc.algorithms.market.columns import MarketColumns
    from market_hpc.algorithms.market.maths import profit

    rng = np.random.default_rng(7)
    for trial in range(200):
        now = float(rng.integers(0, 40))
        candidates = {}
        for job_id in range(1, int(rng.integers(1, 12)) + 1):
            tasks = int(rng.integers(1, 9))
            work = float(rng.integers(5, 80))
            profile = tuple(float(max(np.ceil(work / c), work / 4)) for c in range(1, tasks + 1))
            plateau = float(rng.integers(1, 40))
            curve = LinearDecayCurve(
                float(rng.integers(50, 900)), plateau, plateau + float(rng.integers(1, 90))
            )
            candidates[job_id] = Candidate(
                job_id,
                float(rng.integers(0, int(now) + 1)),
                curve,
                profile,
                float(rng.choice([0.0, 0.3])),
                False,
                c_star(profile),
            )
        taken = set(
            rng.choice(list(candidates), size=int(rng.integers(0, 2)), replace=False).tolist()
        )
        bid = int(rng.integers(1, 10))
        expected, expected_key = None, None
        for index, cand in enumerate(candidates.values()):
            if cand.job_id in taken:
                continue
            cores = min(bid, cand.best_cores)
            gain = profit(cand.curve, now, cand.arrival, cand.profile, cores, cand.progress)
            if gain <= 0:
                continue
            score = {
                "sjq": index,
                "maxv": -gain,
                "maxvd": -gain / cores,
                "minvr": cand.curve.remaining_value(now - cand.arrival),
            }[rule]
            key = (score, cand.arrival, cand.job_id)
            if expected_key is None or key < expected_key:
                expected, expected_key = (cand.job_id, cores), key
        columns = MarketColumns(
            (
                Job(
                    c.job_id,
                    c.arrival,
                    1.0,
                    1.0,
                    units=len(c.profile),
                    profile=c.profile,
                    payload={"value_curve": c.curve},
                ),
                c.progress,
                0,
            )
            for c in candidates.values()
        )
        auction = Auction(rule, columns, now)
        for job_id in taken:
            if job_id not in auction.dropped:
                auction.take(auction.index(job_id))
        got = auction.select(bid)
        assert (None if got is None else (int(auction.job_id[got[0]]), got[1])) == expected, trial
