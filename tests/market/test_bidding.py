"""Node agents bid through pluggable strategies, and the auction clears on them."""

from __future__ import annotations

import numpy as np
import pytest
from market_fixtures import market_job, rigid_profile

from market_hpc.algorithms.market.bidding import (
    EnergyAwareBidder,
    FreeCoresBidder,
    LocalityAwareBidder,
    clear_auction,
    make_bidder,
)
from market_hpc.algorithms.valuecurve import StepCurve
from market_hpc.core.model import HPCModel
from market_hpc.errors import ConfigError, UnknownNameError


def three_jobs():
    """Three 3-core jobs arriving together: with equal bids they fill nodes in index order."""
    return [market_job(i, 0, rigid_profile(3), StepCurve(100.0 + i, 10_000.0)) for i in (1, 2, 3)]


def placement(model: HPCModel) -> dict[int, int]:
    return {r.job.job_id: r.allocation[0][0] for r in model.running_by_end}


def test_default_bidders_offer_free_cores_and_ties_go_to_the_lowest_node():
    model = HPCModel(three_jobs(), "hlrs-3x9", "maxv")
    assert [agent.bid() for agent in model.node_agents] == [9, 9, 9]
    model.run(until=0)
    # maxV takes the most valuable job first; every start leaves its node the lowest bid
    assert placement(model) == {3: 0, 2: 1, 1: 2}
    assert [agent.bid() for agent in model.node_agents] == [6, 6, 6]


def test_a_custom_bidder_changes_where_jobs_go():
    # node 2 sits next to the data: it outbids nodes 0 and 1 while it has 4+ cores free
    bidder = LocalityAwareBidder(distance=[1.0, 1.0, 0.0], weight=1.0)
    model = HPCModel(three_jobs(), "hlrs-3x9", "maxv", bidder=bidder)
    model.run(until=0)
    assert placement(model) == {3: 2, 2: 2, 1: 0}
    assert [agent.bid() for agent in model.node_agents] == [3.0, 4.5, 3.0]


def test_one_node_agent_can_bid_differently_from_the_others():
    model = HPCModel(three_jobs(), "hlrs-3x9", "maxv")

    class Greedy(FreeCoresBidder):
        def bids(self, free, capacity, nodes):
            return free[:, 0] * 10

    model.node_agents[1].bidder = Greedy()
    model.run(until=0)
    assert placement(model) == {3: 1, 2: 1, 1: 1}


def test_energy_bidder_fills_busy_nodes_before_waking_idle_ones():
    jobs = three_jobs()
    bidder = EnergyAwareBidder(watts_per_core=1.0, idle_factor=0.5)
    model = HPCModel(jobs, "hlrs-3x9", "maxv", bidder=bidder)
    model.run(until=0)
    # idle nodes bid 9 x 0.5 = 4.5: node 0, once busy, bids its 6 free cores and takes the
    # second job too; with 3 left it loses to an idle node
    assert placement(model) == {3: 0, 2: 0, 1: 1}


def test_abstaining_nodes_never_win_and_full_nodes_never_win():
    assert clear_auction(np.array([0.0, -1.0]), np.array([4, 4])) is None
    assert clear_auction(np.array([9.0, 1.0]), np.array([0, 4])) == 1


def test_bidder_names_and_parameters_are_validated():
    assert make_bidder("energy").name == "energy"
    with pytest.raises(UnknownNameError, match="free-cores"):
        make_bidder("cheapest")
    with pytest.raises(ConfigError, match="idle_factor"):
        EnergyAwareBidder(idle_factor=0.0)
    with pytest.raises(ConfigError, match="distance"):
        LocalityAwareBidder(distance=[-1.0])
