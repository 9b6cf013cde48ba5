"""Node offers with a reserve: a node offers some of its free cores and turns down jobs
worth less per core than its reserve (``OfferReserveBidder``, ``algorithms.bidding``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from market_fixtures import fig5_jobs, market_job, rigid_profile

from market_hpc.algorithms.market.bidding import Asks, FreeCoresBidder, OfferReserveBidder
from market_hpc.algorithms.valuecurve import StepCurve
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import load_platform
from market_hpc.errors import ConfigError
from market_hpc.experiment.config import load_scenario
from market_hpc.experiment.run import build_workload
from market_hpc.policies.registry import bidder_names, make_bidder

ONE_NODE = "nodes=1,cores=4"
TWO_NODES = "nodes=2,cores=4"


def wide_job(job_id: int, value: float) -> Job:
    """A job whose best width is 4 cores (1000 s on 1, 500 on 2, 250 on 4), worth ``value``
    whenever it ends (the deadline is far)."""
    return market_job(job_id, 0, rigid_profile(4), StepCurve(value, 100_000.0))


def started(model: HPCModel) -> dict[int, tuple[tuple[int, int], ...]]:
    """Each running job's allocation."""
    return {r.job.job_id: tuple(r.allocation) for r in model.running_by_end}


def test_a_node_offering_2_of_4_free_cores_gives_at_most_2():
    jobs = [wide_job(1, 200.0), wide_job(2, 100.0)]
    seed_rule = HPCModel(jobs, ONE_NODE, "maxv")
    seed_rule.run(until=0)
    assert started(seed_rule) == {1: ((0, 4),)}
    half = HPCModel(jobs, ONE_NODE, "maxv", bidder=OfferReserveBidder(fraction=0.5))
    half.run(until=0)
    # job 1 takes the 2 cores offered; the 2 withheld stay free and job 2 waits
    assert started(half) == {1: ((0, 2),)}
    assert half.free[0, 0] == 2 and [j.job_id for j in half.queue_agent.jobs.values()] == [2]


def test_a_reserve_above_a_jobs_value_per_core_keeps_it_off_that_node():
    job = [wide_job(1, 100.0)]  # 100 on 4 cores: 25 per core
    seed_rule = HPCModel(job, TWO_NODES, "maxv")
    seed_rule.run(until=0)
    assert started(seed_rule) == {1: ((0, 4),)}  # tie of bids: the lowest node
    model = HPCModel(job, TWO_NODES, "maxv", bidder=OfferReserveBidder(reserve=[30.0, 0.0]))
    model.run(until=0)
    assert started(model) == {1: ((1, 4),)}  # node 0 turned it down, node 1 was asked next
    both = HPCModel(job, TWO_NODES, "maxv", bidder=OfferReserveBidder(reserve=30.0))
    both.run(until=0)
    assert started(both) == {} and len(both.queue_agent.jobs) == 1


def test_the_reserve_is_the_value_per_core_on_the_cores_the_node_gives():
    # 100 on the 2 cores a half offer gives is 50 per core, above a reserve of 30; on the
    # full offer's 4 cores it is 25, below: node 0 (offering 4) turns it down, node 1
    # (offering 2) takes it
    job = [wide_job(1, 100.0)]
    bidder = OfferReserveBidder(fraction=[1.0, 0.5], reserve=30.0)
    model = HPCModel(job, TWO_NODES, "maxv", bidder=bidder)
    model.run(until=0)
    assert started(model) == {1: ((1, 2),)}
    exact = HPCModel(
        job, TWO_NODES, "maxv", bidder=OfferReserveBidder(fraction=[1.0, 0.0], reserve=25.0)
    )
    exact.run(until=0)
    assert started(exact) == {1: ((0, 4),)}  # a reserve equal to the value per core accepts


@pytest.mark.parametrize("rule", ["sjq", "maxv", "maxvd", "minvr", "maxvh", "sjqlh"])
def test_a_full_offer_at_reserve_0_is_the_free_cores_auction(rule):
    config = load_scenario("scenarios/market_taskgraphs.toml")
    jobs, _ = build_workload(config, load_platform(config.platform))
    frames = []
    for bidder in (
        None,
        make_bidder("offer-reserve"),
        OfferReserveBidder(fraction=[1.0] * 3, reserve=[0.0] * 3),
    ):
        model = HPCModel(
            jobs, config.platform, rule, seed=1, bidder=bidder, record_timeseries=False
        )
        model.run()
        frames.append(model.jobs_frame())
    assert frames[0]["value"].sum() > 0
    for frame in frames[1:]:
        assert frame.equals(frames[0])


def test_holding_never_starts_a_job_below_the_holding_nodes_reserve():
    # Fig. 5: at t=7 maxVH holds j5 and j2 on node 1 for j8, which earns 400 on 6 cores
    # (66.7 per core); node 1 with a reserve of 70 turns that down, with 60 it accepts
    for reserve, holds in ((60.0, True), (70.0, False)):
        model = HPCModel(fig5_jobs(), "hlrs-3x9", "maxvh")
        model.run(until=6)  # the seven jobs fill the platform as in the paper
        assert {job_id: alloc[0][0] for job_id, alloc in started(model).items()} == {
            1: 0,
            4: 0,
            7: 0,
            3: 1,
            2: 1,
            5: 1,
            6: 2,
        }
        model.node_agents[1].bidder = OfferReserveBidder(reserve=reserve)
        model.run(until=7)
        running = started(model)
        assert (running.get(8) == ((1, 6),)) is holds
        assert ({2, 5} <= set(running)) is not holds


def test_a_node_with_its_own_strategy_offers_beside_free_cores_nodes():
    model = HPCModel([wide_job(1, 100.0)], TWO_NODES, "maxv")
    model.node_agents[0].bidder = OfferReserveBidder(reserve=30.0)
    assert isinstance(model.node_agents[1].bidder, FreeCoresBidder)
    model.run(until=0)
    assert started(model) == {1: ((1, 4),)}


def test_offers_outside_the_contract_and_other_resources_fail_naming_the_bidder():
    class Greedy(OfferReserveBidder):
        name = "greedy"

        def asks(self, free, capacity, nodes):
            return Asks(free[:, 0] + 1, np.zeros(len(free)))

    model = HPCModel([wide_job(1, 100.0)], TWO_NODES, "maxv", bidder=Greedy())
    with pytest.raises(ConfigError, match="greedy.*outside \\[0, free cores\\]"):
        model.run()


def test_offers_on_a_workload_beyond_the_cores_only_auction_are_refused_before_the_run():
    gpu_job = Job(
        1,
        0,
        10.0,
        10.0,
        units=1,
        unit=(1, 1, 0, 0),
        profile=(10.0,),
        payload={"value_curve": StepCurve(10.0, 100.0)},
    )
    with pytest.raises(
        ConfigError,
        match=r"^bidder 'offer-reserve' makes offers, which apply to the cores-only "
        r"market auction: job 1 asks for more than cores \(unit \(1, 1, 0, 0\)\)$",
    ):
        HPCModel([gpu_job], "nodes=1,cores=4,gpus=1", "maxv", bidder=OfferReserveBidder())
    two_core_units = replace(
        gpu_job, unit=(2, 0, 0, 0)
    )  # the cores-only auction serves one-core units only
    with pytest.raises(
        ConfigError, match=r"job 1 asks for more than cores \(unit \(2, 0, 0, 0\)\)$"
    ):
        HPCModel([two_core_units], "nodes=1,cores=4", "maxv", bidder=OfferReserveBidder())
    spanning = [
        replace(wide_job(1, 100.0), payload={**wide_job(1, 100.0).payload, "spans_nodes": True})
    ]
    with pytest.raises(
        ConfigError, match="job 1 may span nodes \\(spans_nodes\\) on a platform of 2 nodes"
    ):
        HPCModel(spanning, TWO_NODES, "maxv", bidder=OfferReserveBidder())
    HPCModel(
        spanning, ONE_NODE, "maxv", bidder=OfferReserveBidder()
    ).run()  # one node: the cores-only auction
    with pytest.raises(ConfigError, match="nodes are allocated whole \\(exclusive = true\\)"):
        HPCModel(
            [wide_job(1, 100.0)], TWO_NODES, "maxv", bidder=OfferReserveBidder(), exclusive=True
        )
    # a rigid policy ignores bidders: nothing to refuse
    HPCModel(
        [replace(gpu_job, profile=None)],
        "nodes=1,cores=4,gpus=1",
        "easy",
        bidder=OfferReserveBidder(),
    ).run()


def test_offer_reserve_is_registered_and_its_parameters_checked():
    assert "offer-reserve" in bidder_names()
    with pytest.raises(ConfigError, match="fraction"):
        make_bidder("offer-reserve", fraction=1.5)
    with pytest.raises(ConfigError, match="reserve"):
        OfferReserveBidder(reserve=-1.0)
