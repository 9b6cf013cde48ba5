"""The built-in bidding strategies of the market auction (``algorithms.bidding``) in the
registry."""

from __future__ import annotations

from market_hpc.algorithms.market.bidding import (
    EnergyAwareBidder,
    FreeCoresBidder,
    LocalityAwareBidder,
    OfferReserveBidder,
)
from market_hpc.policies.registry import register_bidder

register_bidder("free-cores", "bid the node's free cores (Singh et al., HPCS'15)")(FreeCoresBidder)
register_bidder(
    "energy", "free cores per watt, idle nodes discounted (watts_per_core, idle_factor)"
)(EnergyAwareBidder)
register_bidder(
    "locality", "free cores discounted by distance to the data (distance: one per node)"
)(LocalityAwareBidder)
register_bidder(
    "offer-reserve",
    "offer a share of the free cores at a reserve value per core (fraction, reserve; "
    "one value or one per node)",
)(OfferReserveBidder)
