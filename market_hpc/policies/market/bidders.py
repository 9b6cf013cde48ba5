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

for _bidder in (FreeCoresBidder, EnergyAwareBidder, LocalityAwareBidder, OfferReserveBidder):
    register_bidder(_bidder)
