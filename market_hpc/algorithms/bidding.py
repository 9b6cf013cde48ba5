"""Node bidding strategies for the market auction (Singh et al., Algorithm 2).

Singh, Dziurzanski & Indrusiak (HPCS 2015): every time step, "each node bids its number
of free cores" and the manager allocates the highest-bid node. Here a bid is a node's
*price* in the auction and what it *offers* is always its free cores: the default
strategy bids exactly its free cores (the seed), other strategies rank nodes
differently (energy, locality) while offering the same cores.

A strategy is vectorised: it prices the free rows of many nodes in one numpy call, so
the auction costs one call per round rather than one Python call per node. Pure
functions of plain data; no Mesa.

Contract (checked by ``clear_auction``): a node with no free core never wins, whatever
it bids; a bid ``<= 0`` abstains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from market_hpc.errors import ConfigError, UnknownNameError


class Bidder(Protocol):
    """Prices nodes' free resources for the auction.

    Attributes:
        name: Registry name of the strategy.
    """

    name: str

    def bids(self, free: np.ndarray, capacity: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Return one bid per row of ``free``.

        Args:
            free: ``(k, R)`` free resources of the bidding nodes (read-only).
            capacity: ``(k, R)`` their capacities.
            nodes: ``(k,)`` their node indices (for per-node parameters).
        """


class FreeCoresBidder:
    """The seed's bid: a node's free cores.

    >>> FreeCoresBidder().bids(np.array([[3, 0], [9, 0]]), np.array([[9, 0], [9, 0]]), np.arange(2))
    array([3, 9])
    """

    name = "free-cores"

    def bids(self, free: np.ndarray, capacity: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Return the free cores column."""
        return free[:, 0]


class EnergyAwareBidder:
    """Free cores per watt, with idle nodes discounted so busy nodes fill first.

    An idle node that wins must leave its low-power state, so it bids ``idle_factor`` of
    its free cores per watt; a partly busy node bids its full free cores per watt.
    Non-paper example strategy.

    Args:
        watts_per_core: Power per core of each node (one value, or one per node).
        idle_factor: Multiplier of an entirely idle node's bid, in (0, 1].

    >>> bidder = EnergyAwareBidder(watts_per_core=[10.0, 5.0, 10.0], idle_factor=0.5)
    >>> free = np.array([[4, 0], [9, 0], [9, 0]]); cap = np.array([[9, 0]] * 3)
    >>> bidder.bids(free, cap, np.arange(3)).tolist()   # node 1 idle but twice as efficient
    [0.4, 0.9, 0.45]
    """

    name = "energy"

    def __init__(self, watts_per_core: float | Sequence[float] = 1.0, idle_factor: float = 0.5) -> None:
        watts = np.atleast_1d(np.asarray(watts_per_core, dtype=float))
        if (watts <= 0).any() or not np.isfinite(watts).all():
            raise ConfigError(f"watts_per_core must be finite and > 0, got {watts_per_core!r}")
        if not 0 < idle_factor <= 1:
            raise ConfigError(f"idle_factor must be in (0, 1], got {idle_factor!r}")
        self.watts = watts
        self.idle_factor = idle_factor

    def bids(self, free: np.ndarray, capacity: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Return free cores per watt, discounted on idle nodes."""
        cores = free[:, 0].astype(float)
        watts = self.watts if self.watts.size == 1 else self.watts[nodes]
        idle = free[:, 0] == capacity[:, 0]
        return np.where(idle, self.idle_factor, 1.0) * cores / watts


class LocalityAwareBidder:
    """Free cores discounted by the node's distance to the job data (e.g. switch hops).

    Args:
        distance: Distance of each node to the data (>= 0), one per node.
        weight: How much one unit of distance discounts a bid (>= 0).

    >>> bidder = LocalityAwareBidder(distance=[2, 0, 1], weight=1.0)
    >>> bidder.bids(np.array([[9, 0], [5, 0], [6, 0]]), np.array([[9, 0]] * 3), np.arange(3)).tolist()
    [3.0, 5.0, 3.0]
    """

    name = "locality"

    def __init__(self, distance: Sequence[float], weight: float = 1.0) -> None:
        dist = np.asarray(distance, dtype=float)
        if dist.ndim != 1 or (dist < 0).any() or not np.isfinite(dist).all():
            raise ConfigError(f"distance must be a list of finite numbers >= 0, got {distance!r}")
        if not 0 <= weight < np.inf:
            raise ConfigError(f"weight must be a finite number >= 0, got {weight!r}")
        self.distance = dist
        self.weight = weight

    def bids(self, free: np.ndarray, capacity: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Return free cores divided by ``1 + weight * distance``."""
        return free[:, 0] / (1.0 + self.weight * self.distance[nodes])


BIDDERS = {"free-cores": FreeCoresBidder, "energy": EnergyAwareBidder, "locality": LocalityAwareBidder}


def make_bidder(name: str) -> Bidder:
    """Build a strategy with its default parameters by name.

    >>> make_bidder("free-cores").name
    'free-cores'
    """
    if name not in BIDDERS:
        raise UnknownNameError("bidder", name, BIDDERS)
    if name == "locality":
        raise ConfigError("the locality bidder needs per-node distances: build LocalityAwareBidder(distance)")
    return BIDDERS[name]()  # type: ignore[no-any-return]


def clear_auction(bids: np.ndarray, free_cores: np.ndarray) -> int | None:
    """Return the winning node: the highest positive bid among nodes with a free core.

    Ties go to the lowest node index (the paper: any of them); ``None`` when every node with free
    cores abstains or no core is free.

    >>> clear_auction(np.array([3, 9, 9]), np.array([3, 9, 9]))
    1
    >>> clear_auction(np.array([5.0, 0.2]), np.array([0, 1]))   # node 0 has nothing to offer
    1
    >>> clear_auction(np.array([0, 0]), np.array([0, 0])) is None
    True
    >>> clear_auction(np.array([2.0, 2.0]), np.array([0, 3]))   # tie with a full node
    1
    """
    node = int(bids.argmax())
    if free_cores.item(node) > 0:  # the usual case: the top bidder has something to offer
        return node if bids.item(node) > 0 else None
    priced = np.where(free_cores > 0, bids, 0)
    node = int(priced.argmax())
    return node if priced[node] > 0 else None
