"""The market auctions over every resource and across nodes (``algorithms.market_offers``),
on hand-checkable platforms: a job goes where all it asks for fits, holds free every
resource of the held job, a resume waits until every resource is free again, a spanning
job is priced on the total it gets; and the general rules reduce to the seed's on
cores-only single-node queues (priced row by row against the scalar reference; the hold
search and the wait estimate: ``tests/market/test_holding_rule.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from invariants import assert_schedule_invariants, segments_of

from market_hpc.algorithms.market.auction import Auction
from market_hpc.algorithms.market.columns import MarketColumns
from market_hpc.algorithms.market.holding import SPANNING, hold_search_resources
from market_hpc.algorithms.market.maths import Candidate, Executing, c_star, profit
from market_hpc.algorithms.market.offers import bid_order, offers, pick
from market_hpc.algorithms.valuecurve import LinearDecayCurve, StepCurve
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import NodeType, Platform

GPU = (1, 1, 0, 0)
LONG = 10_000.0  # a deadline nothing reaches in these runs


def job(
    job_id: int,
    submit: float,
    profile: tuple[float, ...],
    value: float,
    *,
    unit=(1, 0, 0, 0),
    bb=0.0,
    deadline: float = LONG,
    spans: bool = False,
) -> Job:
    payload = {"value_curve": StepCurve(value, deadline)}
    if spans:
        payload["spans_nodes"] = True
    return Job(
        job_id,
        float(submit),
        profile[0],
        profile[0],
        units=len(profile),
        unit=unit,
        bb=bb,
        profile=profile,
        payload=payload,
    )


def run(jobs: list[Job], platform: Platform | str, scheduler: str) -> tuple[HPCModel, pd.DataFrame]:
    model = HPCModel(jobs, platform, scheduler, seed=1, record_timeseries=False)
    model.run()
    frame = model.recorder.jobs_frame()
    assert_schedule_invariants(jobs, frame, platform, segments=segments_of(model))
    return model, frame.set_index("job_id")


# A CPU node that bids highest (8 free cores) and a GPU node (4 cores, 2 GPUs); a 100 GB pool.
TWO = Platform("two", (NodeType("cpu", 1, 8), NodeType("gpu", 1, 4, gpus=2)), burst_buffer=100.0)


@pytest.mark.parametrize("scheduler", ["sjq", "maxv", "maxvd", "minvr", "maxvh", "maxvlh"])
def test_a_gpu_job_goes_past_the_top_bidder_that_has_no_gpu(scheduler: str) -> None:
    """Node 0 bids 8 free cores, node 1 only 4; the GPU job fits node 1 only and starts
    there at once (the cores-only job beside it takes the top bidder)."""
    jobs = [job(1, 0, (20.0, 10.0), 50.0, unit=GPU), job(2, 0, (20.0, 10.0), 50.0)]
    _, frame = run(jobs, TWO, scheduler)
    assert frame.loc[1, "nodes"] == "1:2" and frame.loc[1, "start_time"] == 0
    assert frame.loc[2, "nodes"] == "0:2" and frame.loc[2, "start_time"] == 0


def test_a_job_whose_burst_buffer_is_not_free_waits_though_its_cores_are() -> None:
    """Job 1 holds 80 of the 100 GB until t = 10; job 2 (50 GB) has free cores on both
    nodes from t = 1 but starts only at 10. The auction never asks the core for it earlier
    (a start the core would refuse mid-run)."""
    jobs = [job(1, 0, (20.0, 10.0), 50.0, bb=80.0), job(2, 1, (20.0, 10.0), 50.0, bb=50.0)]
    _, frame = run(jobs, TWO, "maxv")
    assert frame.loc[1, "end_time"] == 10
    assert frame.loc[2, "start_time"] == 10


def test_a_gpu_job_that_fits_nowhere_waits_for_the_gpus() -> None:
    """Both GPUs busy until t = 10: the second GPU job waits though 8 + 2 cores are free."""
    jobs = [job(1, 0, (20.0, 10.0), 50.0, unit=GPU), job(2, 1, (12.0,), 50.0, unit=GPU)]
    _, frame = run(jobs, TWO, "maxv")
    assert frame.loc[2, "start_time"] == 10 and frame.loc[2, "nodes"] == "1:1"


def hold_jobs() -> list[Job]:
    """L (low value) runs on node 1's two GPUs with 60 GB; H (high value, 2 GPUs, 50 GB)
    arrives at t = 5 when cores are free but no GPU; B (cores only, 70 GB) arrives at
    t = 6. H earns its 1000 only on both GPUs (done by t = 5 + 20 + 1)."""
    return [
        job(1, 0, (200.0, 100.0), 10.0, unit=GPU, bb=60.0),
        job(2, 5, (40.0, 20.0), 1000.0, unit=GPU, bb=50.0, deadline=21.0),
        job(3, 6, (60.0,), 20.0, bb=70.0),
    ]


BB_POOL = Platform(
    "two-bb", (NodeType("cpu", 1, 8), NodeType("gpu", 1, 4, gpus=2)), burst_buffer=120.0
)


@pytest.mark.parametrize("scheduler", ["maxvh", "sjqh", "maxvdh", "minvrh"])
def test_a_hold_frees_the_held_jobs_gpus_and_burst_buffer_and_the_resume_waits_for_all_of_them(
    scheduler: str,
) -> None:
    """H fits nowhere at t = 5 (no GPU free): L is held, freeing its 2 GPUs and 60 GB, and
    H starts on node 1 at once. B takes node 0 and 70 GB at t = 6 (120 - 50 free). H ends at
    25: L's GPUs are free again but only 50 GB of its 60, so L resumes only when B ends at
    66, on node 1, with the work it had done (5 of 100 on 2 GPUs)."""
    model, frame = run(hold_jobs(), BB_POOL, scheduler)
    assert model.recorder.holds == 1
    assert (
        frame.loc[2, "start_time"] == 5
        and frame.loc[2, "nodes"] == "1:2"
        and frame.loc[2, "end_time"] == 25
    )
    assert frame.loc[3, "start_time"] == 6 and frame.loc[3, "end_time"] == 66
    segments = segments_of(model)
    held = segments[segments["job_id"] == 1].sort_values("start")
    assert held["start"].tolist() == [0.0, 66.0]
    assert held["end"].tolist() == [5.0, 66.0 + 95.0]  # ceil(0.95 * 100) on 2 units
    assert frame.loc[1, "status"] == "finished" and frame.loc[1, "hold_count"] == 1


def test_without_holding_the_high_value_job_waits_for_the_gpus_and_is_dropped() -> None:
    """maxV does not hold: H waits for L's GPUs (busy until 100) and is dropped once its
    fastest completion (20 on both GPUs) misses its deadline (t = 26)."""
    model, frame = run(hold_jobs(), BB_POOL, "maxv")
    assert model.recorder.holds == 0
    assert frame.loc[2, "status"] == "dropped" and pd.isna(frame.loc[2, "start_time"])
    assert frame.loc[1, "end_time"] == 100 and frame.loc[1, "hold_count"] == 0


def test_a_hold_for_burst_buffer_alone_frees_the_pool_and_the_held_job_waits_for_it() -> None:
    """Cores are free on both nodes, but L holds 80 of the 100 GB: H (50 GB) fits nowhere.
    maxVH holds L (node 0's instance), H starts on node 0 at once; L (80 GB) resumes only
    when H gives its 50 GB back at t = 3 + 10."""
    low = job(1, 0, (200.0, 100.0), 10.0, bb=80.0)
    high = job(2, 3, (20.0, 10.0), 1000.0, bb=50.0, deadline=14.0)
    model, frame = run([low, high], "nodes=2,cores=4,bb=100", "maxvh")
    assert model.recorder.holds == 1
    assert (
        frame.loc[2, "start_time"] == 3
        and frame.loc[2, "nodes"] == "0:2"
        and frame.loc[2, "end_time"] == 13
    )
    segments = segments_of(model)
    assert segments[segments["job_id"] == 1].sort_values("start")["start"].tolist() == [0.0, 13.0]


ONE_CORE = "nodes=3,cores=1"  # KTH's SP2 in small: one-core nodes


@pytest.mark.parametrize("scheduler", ["sjq", "maxv", "maxvd", "minvr", "maxvh"])
def test_a_spanning_job_is_priced_on_the_cores_of_all_nodes_together(scheduler: str) -> None:
    """A 3-way job on three one-core nodes earns 100 only when done by t = 12: on one core
    it needs 30, on three 10. Spanning, it takes one core of each node and earns 100; the
    same job on one node is worthless at arrival and dropped."""
    spanning = job(1, 0, (30.0, 15.0, 10.0), 100.0, deadline=12.0, spans=True)
    _, frame = run([spanning], ONE_CORE, scheduler)
    assert frame.loc[1, "nodes"] == "0:1;1:1;2:1"
    assert frame.loc[1, "end_time"] == 10 and frame.loc[1, "value"] == 100.0
    _, alone = run([job(1, 0, (30.0, 15.0, 10.0), 100.0, deadline=12.0)], ONE_CORE, scheduler)
    assert alone.loc[1, "status"] == "dropped"


def test_a_spanning_job_takes_the_top_bidders_first_and_stops_at_its_best_width() -> None:
    """Three one-core fillers go to the top bidder in turn (nodes 0, 1, 2: 2 free cores
    each after them); the 4-way job then takes the top bidder's 2 cores (node 0, ties:
    lowest index) and node 1's 2, none of node 2's."""
    fillers = [job(10, 0, (500.0,), 5.0), job(11, 0, (500.0,), 5.0), job(12, 0, (500.0,), 5.0)]
    wide = job(1, 1, (40.0, 20.0, 14.0, 10.0), 100.0, spans=True)
    _, frame = run([*fillers, wide], "nodes=3,cores=3", "maxv")
    assert frame.loc[1, "nodes"] == "0:2;1:2"


def test_holding_a_spanning_job_frees_every_node_and_it_resumes_molded() -> None:
    """L spans all four one-core nodes; H (spanning, 2 cores, high value) arrives on a full
    machine: L is held (one instance over the whole machine), H takes two nodes, and L
    resumes at the next step on the two others, its profile read at 2 cores."""
    low = job(1, 0, (400.0, 200.0, 140.0, 100.0), 10.0, spans=True)
    high = job(2, 10, (40.0, 20.0), 1000.0, deadline=25.0, spans=True)
    model, frame = run([low, high], "nodes=4,cores=1", "maxvh")
    assert model.recorder.holds == 1
    assert frame.loc[2, "start_time"] == 10 and frame.loc[2, "nodes"] == "0:1;1:1"
    segments = segments_of(model)
    low_segments = segments[segments["job_id"] == 1].sort_values("start")
    assert low_segments["start"].tolist() == [0.0, 11.0]
    assert low_segments["units"].tolist() == [4, 2]
    assert low_segments["end"].iloc[1] == 11.0 + 180.0  # ceil(0.9 * 200): 10 of 100 done on 4 cores


# ------------------------------------------------------------------ the pure rules
def test_offers_give_a_single_node_job_the_first_node_that_holds_one_unit() -> None:
    columns = MarketColumns(
        [
            (job(1, 0, (4.0, 2.0), 5.0, unit=GPU), 0.0, 0),
            (job(2, 0, (4.0, 2.0), 5.0), 0.0, 0),
            (job(3, 0, (4.0, 2.0, 1.0), 5.0, unit=GPU, spans=True), 0.0, 0),
            (job(4, 0, (4.0,), 5.0, bb=30.0), 0.0, 0),
        ]
    )
    free = np.array([[8, 0, 0, 0], [2, 1, 0, 0], [3, 2, 0, 0]])
    order = bid_order(free[:, 0], free[:, 0])
    assert order.tolist() == [0, 2, 1]
    got = offers(columns, free, 20.0, order)
    assert got.cap.tolist() == [2, 8, 3, 0]  # job 3: 2 + 1 GPU units on nodes 2 and 1
    assert got.turn.tolist() == [1, 0, 0, 3]  # job 4: 30 GB of 20 free: no offer


def _scalar_pick(rule: str, queue: list[Job], now: float, cap: list[int]) -> tuple[int, int] | None:
    """The rule's pick priced job by job: positive profit on min(cap, c*) units, then the key."""
    best, scored = None, None
    for position, (one, offered) in enumerate(zip(queue, cap)):
        if offered <= 0:
            continue
        units = min(offered, c_star(one.profile))
        curve = one.payload["value_curve"]
        gain = profit(curve, now, one.submit, one.profile, units)
        if gain <= 0:
            continue
        score = {
            "sjq": position,
            "maxv": -gain,
            "maxvd": -gain / units,
            "minvr": curve.remaining_value(now - one.submit),
        }[rule]
        if scored is None or (score, one.submit, one.job_id) < scored:
            best, scored = (one.job_id, units), (score, one.submit, one.job_id)
    return best


@pytest.mark.parametrize("rule", ["sjq", "maxv", "maxvd", "minvr"])
def test_select_offer_picks_what_pricing_every_row_picks(rule: str) -> None:
    rng = np.random.default_rng(34)
    for trial in range(60):
        queue = []
        for job_id in range(1, int(rng.integers(1, 30)) + 1):
            width = int(rng.integers(1, 7))
            work = float(rng.integers(4, 60))
            profile = tuple(float(np.ceil(work / c)) for c in range(1, width + 1))
            plateau = float(rng.integers(1, 30))
            curve = LinearDecayCurve(
                float(rng.integers(1, 5) * 100), plateau, plateau + float(rng.integers(1, 40))
            )
            queue.append(
                Job(
                    job_id,
                    float(rng.integers(0, 5)),
                    work,
                    work,
                    units=width,
                    profile=profile,
                    payload={"value_curve": curve},
                )
            )
        now = 5.0
        columns = MarketColumns((one, 0.0, 0) for one in queue)
        cap = rng.integers(0, 7, len(queue))
        auction = Auction(rule, columns, now)
        got = auction.select_offer(cap.copy(), np.ones(len(queue), dtype=bool))
        want = _scalar_pick(rule, queue, now, cap.tolist())
        assert (None if got is None else (int(columns.job_id[got[0]]), got[1])) == want, trial
        bid = int(rng.integers(1, 7))  # every row offered one bid: select's pick
        same = auction.select_offer(np.full(len(queue), bid), np.ones(len(queue), dtype=bool))
        assert same == auction.select(bid), trial


def test_a_spanning_arrivals_hold_instance_runs_over_the_whole_machine() -> None:
    """Two one-core nodes each run a job; the spanning arrival needs both: only the
    machine-wide prefix (both jobs, latest start first) frees enough."""
    arrival = Candidate(9, 0.0, StepCurve(500.0, 12.0), (20.0, 10.0), 0.0, True, 2, spans=True)
    running = [Executing(1, 0, 1, 0.0, 1, 50.0, 50.0), Executing(2, 1, 1, 1.0, 2, 40.0, 40.0)]
    free = np.zeros((2, 4), dtype=np.int64)
    plan = hold_search_resources([arrival], running, free, 0.0, now=2.0, penalty=0.0)
    assert plan is not None
    assert (plan.node, plan.held, plan.cores, plan.net_profit) == (SPANNING, (2, 1), 2, 410.0)
    single = Candidate(9, 0.0, StepCurve(500.0, 12.0), (20.0, 10.0), 0.0, True, 2)
    assert (
        hold_search_resources([single], running, free, 0.0, now=2.0, penalty=0.0) is None
    )  # 1 core each: 0


def test_pick_places_a_spanning_job_greedily_in_bid_order() -> None:
    columns = MarketColumns(
        [(job(1, 0, (60.0, 30.0, 20.0, 15.0, 12.0), 100.0, spans=True), 0.0, 0)]
    )
    free = np.array([[1, 0, 0, 0], [3, 0, 0, 0], [2, 0, 0, 0]])
    order = bid_order(free[:, 0], free[:, 0])
    chosen = pick(Auction("maxv", columns, 0.0), free, 0.0, order)
    assert chosen == (0, ((1, 3), (2, 2)))


@pytest.mark.parametrize("scheduler", ["sjq", "maxvh", "maxvdh", "minvrh"])
def test_one_core_nodes_decide_as_one_pool_of_their_cores(scheduler: str) -> None:
    """Bids of one-core nodes summed are the pool's free cores, the greedy placement fills
    them, and holding for a spanning arrival runs over every running job as on one node:
    trace jobs on KTH's 100 one-core nodes get the schedule (starts, ends, values, holds)
    they get on ``nodes=1,cores=100`` (the pooling the market needed before)."""
    from pathlib import Path

    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate

    trace = Path(__file__).resolve().parents[2] / "traces" / "lf-kth-like-2000.swf"
    frames = []
    for platform in ("nodes=1,cores=100", "kth-sp2"):
        result = simulate(
            config_from_dict(
                {
                    "name": "pool",
                    "platform": platform,
                    "seed": 1,
                    "timeseries": False,
                    "workload": {
                        "trace": str(trace),
                        "first_n": 300,
                        "load_factor": 1.5,
                        "market": True,
                    },
                    "policy": {"scheduler": scheduler},
                }
            )
        )
        frames.append(
            result.jobs[["job_id", "start_time", "end_time", "value", "status", "hold_count"]]
        )
    pooled, nodes = frames
    assert pooled.equals(nodes)
    if scheduler.endswith("h"):
        assert pooled["hold_count"].sum() > 0


@pytest.mark.parametrize("scheduler", ["sjq", "maxvh", "minvrh", "maxvlh", "easy-mold"])
def test_whole_node_allocation_is_respected(scheduler: str) -> None:
    """``exclusive``: a job takes its nodes whole, so the auction (and easy-mold) never
    starts a second job on a node it just used, and a hold frees the held job's nodes
    whole. (The core refused the second start mid-run before.)"""
    from market_hpc.workload.market_rule import apply_market_rule

    jobs = apply_market_rule(
        [
            Job(i, float(i // 2), float(5 + 7 * (i % 4)), float(5 + 7 * (i % 4)), units=1 + i % 3)
            for i in range(1, 40)
        ]
    )
    model = HPCModel(
        jobs, "nodes=4,cores=4", scheduler, seed=1, record_timeseries=False, exclusive=True
    )
    model.run()
    assert_schedule_invariants(
        jobs,
        model.recorder.jobs_frame(),
        "nodes=4,cores=4",
        exclusive=True,
        segments=segments_of(model),
    )
