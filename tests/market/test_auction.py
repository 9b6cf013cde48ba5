"""The market auction's shortcuts (drop index, SJQ's walk, minVR's least-first pricing)
decide exactly what pricing every queued job with the scalar code decides."""

from __future__ import annotations

import math

import numpy as np
import pytest

from market_hpc.algorithms.market import auction as market_policy
from market_hpc.algorithms.market import columns as market_columns
from market_hpc.algorithms.market import index as market_index
from market_hpc.algorithms.market.auction import Auction
from market_hpc.algorithms.market.columns import MarketColumns
from market_hpc.algorithms.market.index import QueueIndex
from market_hpc.algorithms.market.maths import c_star, profit, remaining_time
from market_hpc.algorithms.valuecurve import ExponentialCurve, LinearDecayCurve, StepCurve
from market_hpc.domain.job import Job

RULES = ("sjq", "maxv", "maxvd", "minvr")


def _job(job_id: int, submit: float, profile: tuple[float, ...], curve) -> Job:  # type: ignore[no-untyped-def]
    return Job(
        job_id,
        submit,
        1.0,
        1.0,
        units=len(profile),
        profile=profile,
        payload={"value_curve": curve},
    )


def _random_job(rng: np.random.Generator, job_id: int, submit: float, exponential: bool) -> Job:
    tasks = int(rng.integers(1, 9))
    work = float(rng.integers(5, 80))
    profile = tuple(float(max(np.ceil(work / c), work / 4)) for c in range(1, tasks + 1))
    if tasks > 2 and rng.random() < 0.3:  # a profile that rises before it falls to its minimum
        bump = int(rng.integers(1, tasks - 1))
        profile = (*profile[:bump], profile[bump - 1] + 3.0, *profile[bump + 1 :])
    plateau = float(rng.integers(1, 40))
    kind = rng.random()
    if exponential and kind < 0.2:
        curve = ExponentialCurve(
            float(rng.integers(50, 900)), plateau, tau=float(rng.integers(2, 30))
        )
    elif kind < 0.35:
        curve = StepCurve(float(rng.integers(50, 900)), plateau)
    else:
        curve = LinearDecayCurve(
            float(rng.integers(50, 900)), plateau, plateau + float(rng.integers(1, 90))
        )
    return _job(job_id, submit, profile, curve)


def _reference(
    rule: str, queue: dict[int, tuple[Job, float, int]], now: float, bid: int, taken: set[int]
):
    """Drops, wake and selection priced job by job with the scalar code."""
    dropped, wakes, best, scored = [], [], None, None
    for position, (job_id, (job, progress, _)) in enumerate(queue.items()):
        curve, profile = job.payload["value_curve"], job.profile
        cstar = c_star(profile)  # type: ignore[arg-type]
        fastest = remaining_time(profile, cstar, progress)  # type: ignore[arg-type]
        if profit(curve, now, job.submit, profile, cstar, progress) <= 0:  # type: ignore[arg-type]
            dropped.append(job_id)
            continue
        wakes.append(math.floor(job.submit + curve.zero_time - fastest))
        if job_id in taken:
            continue
        cores = min(bid, cstar)
        gain = profit(curve, now, job.submit, profile, cores, progress)  # type: ignore[arg-type]
        if gain <= 0:
            continue
        score = {
            "sjq": position,
            "maxv": -gain,
            "maxvd": -gain / cores,
            "minvr": curve.remaining_value(now - job.submit),
        }[rule]
        if scored is None or (score, job.submit, job_id) < scored:
            best, scored = (job_id, cores), (score, job.submit, job_id)
    return dropped, (int(min(wakes)) + 1 if wakes else math.inf), best


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("exponential", [False, True])
@pytest.mark.parametrize("long", [1024, 16])
def test_auction_over_a_living_queue_decides_like_the_scalar_code(
    rule, exponential, long, monkeypatch
):
    """Queues of up to ~70 jobs living through time (pushes, held jobs pushed again,
    drops, starts): every instant's drops, wake and pick equal the scalar reference
    (with ``long = 16``, most maxV and maxVD picks go through the bounds).
    Long queues exercise SJQ's batches and minVR's retries; exponential curves switch the
    drop index off (every row priced); ``long = 16`` makes maxV and maxVD price only the
    rows whose profit bound reaches the top-bound row's key (the bounds kept through
    pushes and takes, dropped when the queue gets short)."""
    monkeypatch.setattr(market_columns, "LONG", long)
    monkeypatch.setattr(market_policy, "LONG", long)
    monkeypatch.setattr(market_policy, "PRUNED", 1 if long < 1024 else market_policy.PRUNED)
    rng = np.random.default_rng(5 + exponential)
    columns = MarketColumns()
    queue: dict[int, tuple[Job, float, int]] = {}
    next_id, picks = 1, 0
    for step in range(240):
        now = float(step // 3)
        for _ in range(int(rng.integers(0, 4))):
            held = queue and rng.random() < 0.1
            if held:  # a job leaves and comes back (a held job re-queued keeps its id)
                job_id = int(rng.choice(list(queue)))
                job, _, holds = queue.pop(job_id)
                columns.take(job_id)
                entry = (job, 0.4, holds + 1)
            else:
                entry = (_random_job(rng, next_id, now, exponential), 0.0, 0)
                next_id += 1
            queue[entry[0].job_id] = entry
            columns.push(*entry)
        open_ids = list(queue)
        taken = set(
            rng.choice(
                open_ids, size=min(len(open_ids), int(rng.integers(0, 3))), replace=False
            ).tolist()
        )
        bid = int(rng.integers(1, 10))
        dropped, wake, expected = _reference(rule, queue, now, bid, taken)
        auction = Auction(rule, columns, now)
        assert (auction.dropped, auction.wake) == (dropped, wake), step
        for job_id in taken - set(dropped):
            auction.take(auction.index(job_id))
        got = auction.select(bid)
        assert (None if got is None else (int(auction.job_id[got[0]]), got[1])) == expected, step
        picks += got is not None
        for job_id in dropped + ([expected[0]] if expected and rng.random() < 0.5 else []):
            del queue[job_id]
            columns.take(job_id)
    assert picks > 100


def test_rank_of_counts_the_open_jobs_ranked_before():
    # Linear curves, now = 0, no plateau lost: full = vmax,
    # remaining = vmax * plateau + vmax * span / 2.
    curves = {
        1: LinearDecayCurve(100.0, 50.0, 60.0),
        2: LinearDecayCurve(300.0, 50.0, 60.0),
        3: LinearDecayCurve(200.0, 50.0, 60.0),
        4: LinearDecayCurve(300.0, 50.0, 60.0),
    }
    profiles = {1: (10.0,), 2: (20.0, 10.0), 3: (10.0,), 4: (10.0,)}
    columns = MarketColumns((_job(i, 0.0, profiles[i], curves[i]), 0.0, 0) for i in curves)
    ranks = {}
    for rule in RULES:
        auction = Auction(rule, columns, 0.0)
        auction.take(auction.index(1))  # started at this instant: never counted
        ranks[rule] = [auction.rank_of(auction.index(i)) for i in (2, 3, 4)]
    assert ranks["sjq"] == [0, 1, 2]  # queue order, job 1 left out
    assert ranks["maxv"] == [0, 2, 1]  # values 300, 200, 300: ties by arrival, then id
    assert ranks["maxvd"] == [2, 1, 0]  # densities 150, 200, 300
    assert ranks["minvr"] == [1, 0, 2]  # remaining 16,500, 11,000, 16,500: job 2 before job 4 (id)


def test_a_job_is_dropped_at_the_instant_its_fastest_completion_earns_nothing():
    """Zero time 15 after arrival 0, fastest 5: at t = 10 the job would finish at its
    zero time, so it is dropped then; its wake, floor(0 + 15 - 5) = 10, is exactly ``now``
    (a drop index that priced only rows with ``wake < now`` would keep it)."""
    columns = MarketColumns(
        [
            (_job(1, 0.0, (5.0,), LinearDecayCurve(100.0, 4.0, 15.0)), 0.0, 0),
            (_job(2, 0.0, (5.0,), LinearDecayCurve(100.0, 40.0, 50.0)), 0.0, 0),
        ]
    )
    assert Auction("maxv", columns, 9.0).dropped == []
    auction = Auction("maxv", columns, 10.0)
    assert auction.dropped == [1] and auction.wake == 46  # job 2: floor(0 + 50 - 5) + 1
    assert columns.drop_candidates(10.0)[0] == [0]  # only job 1's row is near its wake
    assert columns.drop_candidates(10.0)[1] == 45.0  # the other rows' smallest wake


def test_sjq_walks_the_queue_order_past_jobs_that_cannot_earn_on_the_offer():
    """Job 1 (first) is worth nothing on one core (done at 30 > zero time 20), job 2 can't
    earn on one core either; job 3 can. On one core SJQ takes job 3; on two, job 1."""
    slow = LinearDecayCurve(100.0, 10.0, 20.0)
    columns = MarketColumns(
        [
            (_job(1, 0.0, (30.0, 10.0), slow), 0.0, 0),
            (_job(2, 0.0, (25.0, 12.0), slow), 0.0, 0),
            (_job(3, 0.0, (8.0,), slow), 0.0, 0),
        ]
    )
    assert Auction("sjq", columns, 0.0).select(1) == (2, 1)
    assert Auction("sjq", columns, 0.0).select(2) == (0, 2)
    auction = Auction("sjq", columns, 0.0)
    auction.take(0)
    assert auction.select(2) == (1, 2)  # job 1 started at this instant: job 2 next


def test_minvr_tries_the_next_least_remaining_value_when_the_least_cannot_earn(monkeypatch):
    """Remaining values now: job 1 1,500 (least) but worth nothing on one core; job 2
    2,500; job 3 5,000. minVR on one core takes job 2, by its retry; with no retry left it
    takes the same job by pricing every row."""
    columns = MarketColumns(
        [
            (_job(1, 0.0, (30.0, 10.0), LinearDecayCurve(100.0, 10.0, 20.0)), 0.0, 0),
            (_job(2, 0.0, (8.0,), LinearDecayCurve(100.0, 20.0, 30.0)), 0.0, 0),
            (_job(3, 0.0, (8.0,), LinearDecayCurve(100.0, 45.0, 55.0)), 0.0, 0),
        ]
    )
    assert Auction("minvr", columns, 0.0).remaining().tolist() == [1500.0, 2500.0, 5000.0]
    assert Auction("minvr", columns, 0.0).select(1) == (1, 1)
    assert Auction("minvr", columns, 0.0).select(2) == (0, 2)
    monkeypatch.setattr(market_policy, "TRIES", 1)
    assert Auction("minvr", columns, 0.0).select(1) == (1, 1)


def test_queue_index_skips_jobs_that_left_and_a_held_job_pushed_again():
    index = QueueIndex()
    index.push(0, 7, 30.0, submit=5.0, fresh=True)
    index.push(1, 8, 12.0, submit=5.0, fresh=True)
    index.take(7)
    index.push(2, 7, 40.0, submit=5.0, fresh=False)  # held, back in the queue with a later wake
    assert list(index.in_order()) == [8, 7] and index.recent_ids(5.0) == [8]
    assert index.near(20.0) == {8} and index.next_wake() == 40.0  # the stale wake 30 is skipped
    assert index.near(40.0 - market_index.MARGIN) == {8}
    assert index.near(40.0 - market_index.MARGIN + 0.5) == {7, 8}
    assert index.recent_ids(4.0) == []  # not the latest arrival instant


@pytest.mark.parametrize("rule", RULES)
def test_no_pick_when_no_open_job_earns_on_the_offer(rule):
    """Jobs 1 and 2 earn nothing on one core (done at 30 and 25, zero time 20); job 3,
    which would, was started at this instant."""
    slow = LinearDecayCurve(100.0, 10.0, 20.0)
    columns = MarketColumns(
        [
            (_job(1, 0.0, (30.0, 10.0), slow), 0.0, 0),
            (_job(2, 0.0, (25.0, 12.0), slow), 0.0, 0),
            (_job(3, 0.0, (8.0,), slow), 0.0, 0),
        ]
    )
    auction = Auction(rule, columns, 0.0)
    auction.take(2)
    assert auction.select(1) is None
    assert auction.select(2) is not None


@pytest.mark.parametrize("rule", ["maxv", "maxvd", "minvr"])
def test_equal_keys_go_to_the_earliest_arrival_then_the_lowest_id(rule):
    """Three jobs with the same curve and profile (same key under every rule): job 9
    (pushed first, arrived at 1), job 4 (arrived at 1), job 6 (arrived at 2). Job 4
    wins; without job 4, job 9; job 6 only alone."""
    curve = LinearDecayCurve(100.0, 50.0, 60.0)
    columns = MarketColumns(
        (_job(job_id, submit, (8.0,), curve), 0.0, 0)
        for job_id, submit in ((9, 1.0), (4, 1.0), (6, 2.0))
    )
    auction = Auction(rule, columns, 2.0)
    picks = []
    for _ in range(3):
        row, _cores = auction.select(1)  # type: ignore[misc]
        picks.append(auction.take(row))
    assert picks == [4, 9, 6]


def test_profit_bounds_by_bid_bucket_through_push_and_take():
    """Curve: 100 until 5, 0 at 15 (value 50 at 10, 70 at 8, 30 at 12, 10 at 14). A bid
    of 3 uses the 4-core bucket: a profile that rises on the way to its 4th core gets no
    bound (inf), since fewer cores may then finish sooner."""
    curve = LinearDecayCurve(100.0, 5.0, 15.0)
    columns = MarketColumns(
        [
            (_job(1, 0.0, (10.0, 14.0, 12.0, 4.0), curve), 0.0, 0),
            (_job(2, 0.0, (10.0, 8.0, 6.0, 4.0), curve), 0.0, 0),
        ]
    )
    assert [columns.bounds(bid).tolist() for bid in (1, 2, 3)] == [
        [50.0, 50.0],
        [math.inf, 70.0],
        [math.inf, 100.0],
    ]
    columns.push(
        _job(3, 0.0, (14.0, 12.0, 16.0, 2.0), curve), 0.0, 0
    )  # bounds kept: priced on push
    assert [columns.bounds(bid)[2] for bid in (1, 2, 4)] == [10.0, 30.0, math.inf]
    columns.take(1)  # job 3 moves into row 0, its bounds with it
    assert [columns.bounds(bid).tolist() for bid in (1, 2, 4)] == [
        [10.0, 50.0],
        [30.0, 70.0],
        [math.inf, 100.0],
    ]
