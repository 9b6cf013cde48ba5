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

Offers with a reserve (non-paper): a strategy that also has ``asks`` (an
:class:`OfferingBidder`, e.g. :class:`OfferReserveBidder`) states, at each decision, how
many of its free cores a node offers (``Asks.cores``, at most its free cores) and the
least value per core it accepts (``Asks.reserve``). The cores-only auction
(``policies.market``) then prices the node's bid on the cores it offers, never gives it
more than those, and starts no job on it whose value per core is below its reserve: the
value the job would earn started now on the cores it would get there
(``min(offer, c*)``), divided by those cores. Strategies without ``asks`` offer every free
core at no reserve: the seed's auction, unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar, NamedTuple, Protocol

import numpy as np

from market_hpc.algorithms.market.columns import one_core_units
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.parameters import FRACTION, POSITIVE, Param
from market_hpc.validation import Range


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


class Asks(NamedTuple):
    """What the node agents offer at one decision.

    Attributes:
        cores: ``(n,)`` cores each node offers, ``0 <= cores <= free cores`` (int64).
        reserve: ``(n,)`` the least value per core each node accepts, ``>= 0``.
    """

    cores: np.ndarray
    reserve: np.ndarray


class OfferingBidder(Bidder, Protocol):
    """A :class:`Bidder` whose nodes may withhold cores and set a reserve value per core."""

    def asks(self, free: np.ndarray, capacity: np.ndarray, nodes: np.ndarray) -> Asks:
        """Return the offers of the nodes of ``free`` (module docstring: offers with a reserve).

        Args:
            free: ``(k, R)`` free resources of the nodes (read-only).
            capacity: ``(k, R)`` their capacities.
            nodes: ``(k,)`` their node indices (for per-node parameters).
        """


class FreeCoresBidder:
    """The seed's bid: a node's free cores.

    >>> FreeCoresBidder().bids(np.array([[3, 0], [9, 0]]), np.array([[9, 0], [9, 0]]), np.arange(2))
    array([3, 9])
    """

    parameters: ClassVar[Mapping[str, Param]] = {}

    name = "free-cores"
    summary = "bid the node's free cores (Singh et al., HPCS'15)"
    prices = "free cores"

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
    summary = "free cores per watt, idle nodes discounted (watts_per_core, idle_factor)"
    prices = "free cores per watt"

    parameters: ClassVar[Mapping[str, Param]] = {  # watts_per_core: one number or one per node
        "watts_per_core": Param("float-list", POSITIVE, scalar_too=True),
        "idle_factor": Param("float", FRACTION),
    }

    def __init__(
        self, watts_per_core: float | Sequence[float] = 1.0, idle_factor: float = 0.5
    ) -> None:
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
        per_watt: np.ndarray = np.where(idle, self.idle_factor, 1.0) * cores / watts
        return per_watt


class LocalityAwareBidder:
    """Free cores discounted by the node's distance to the job data (e.g. switch hops).

    Args:
        distance: Distance of each node to the data (>= 0), one per node.
        weight: How much one unit of distance discounts a bid (>= 0).

    >>> bidder = LocalityAwareBidder(distance=[2, 0, 1], weight=1.0)
    >>> free, total = np.array([[9, 0], [5, 0], [6, 0]]), np.array([[9, 0]] * 3)
    >>> bidder.bids(free, total, np.arange(3)).tolist()
    [3.0, 5.0, 3.0]
    """

    name = "locality"
    summary = "free cores discounted by distance to the data (distance: one per node)"
    prices = "free cores and distance"

    parameters: ClassVar[Mapping[str, Param]] = {
        "distance": Param("float-list", Range(0.0, math.inf)),
        "weight": Param("float", Range(0.0, math.inf)),
    }

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
        discounted: np.ndarray = free[:, 0] / (1.0 + self.weight * self.distance[nodes])
        return discounted


def _per_node(value: float | Sequence[float], name: str, low: float, high: float) -> np.ndarray:
    """``value`` (one number, or one per node) as a float array; each in ``[low, high]``."""
    array = np.atleast_1d(np.asarray(value, dtype=float))
    if (
        array.ndim != 1
        or not np.isfinite(array).all()
        or (array < low).any()
        or (array > high).any()
    ):
        raise ConfigError(
            f"{name} must be a number in [{low:g}, {high:g}] or a list of them (one per node), "
            f"got {value!r}"
        )
    return array


class OfferReserveBidder:
    """Offer a share of the free cores, at a reserve value per core (non-paper).

    A node offers ``floor(fraction * free cores)`` of its free cores (a product within
    ``1e-9`` of an integer counts as that integer) and accepts no job whose value per core
    is below ``reserve`` (module docstring); it bids the cores it offers, as the seed's
    nodes bid their free cores. ``fraction = 1, reserve = 0`` is the ``free-cores`` auction.

    Args:
        fraction: Share of its free cores a node offers, in [0, 1] (one value, or one per node).
        reserve: Least value per core a node accepts, >= 0 (one value, or one per node).

    Raises:
        ConfigError: a fraction outside [0, 1] or a reserve < 0 (or not finite).

    >>> bidder = OfferReserveBidder(fraction=[0.5, 1.0], reserve=[0.0, 20.0])
    >>> free = np.array([[4, 0], [3, 0]]); cap = np.array([[4, 0], [4, 0]])
    >>> asks = bidder.asks(free, cap, np.arange(2))
    >>> asks.cores.tolist(), asks.reserve.tolist()
    ([2, 3], [0.0, 20.0])
    >>> bidder.bids(free, cap, np.arange(2)).tolist()   # priced on the offered rows by the auction
    [4, 3]
    """

    name = "offer-reserve"
    summary = (
        "offer a share of the free cores at a reserve value per core (fraction, reserve; "
        "one value or one per node)"
    )
    prices = "a share of the free cores, at a reserve value per core"
    parameters: ClassVar[Mapping[str, Param]] = {  # each one number or one per node
        "fraction": Param("float-list", FRACTION, scalar_too=True),
        "reserve": Param("float-list", Range(0.0, math.inf), scalar_too=True),
    }

    def __init__(
        self, fraction: float | Sequence[float] = 1.0, reserve: float | Sequence[float] = 0.0
    ) -> None:
        self.fraction = _per_node(fraction, "fraction", 0.0, 1.0)
        self.reserve = _per_node(reserve, "reserve", 0.0, np.inf)

    def bids(self, free: np.ndarray, capacity: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Return the free cores column (the auction passes the offered cores as free)."""
        return free[:, 0]

    def asks(self, free: np.ndarray, capacity: np.ndarray, nodes: np.ndarray) -> Asks:
        """Return each node's offered cores and reserve."""
        fraction = self.fraction if self.fraction.size == 1 else self.fraction[nodes]
        reserve = self.reserve if self.reserve.size == 1 else self.reserve[nodes]
        cores = np.floor(fraction * free[:, 0] + 1e-9).astype(np.int64)
        return Asks(
            np.minimum(cores, free[:, 0]), np.broadcast_to(reserve, cores.shape).astype(float)
        )


def offer_rows(free: np.ndarray, withheld: np.ndarray) -> np.ndarray:
    """The cores each node offers now: its free cores less those it ``withheld`` when
    the decision began (``free cores - Asks.cores`` then), never below 0. Starts in the
    decision take from the offer; cores a hold frees add to it.

    >>> # node 0 offered 2 of 4 and gave them
    >>> offer_rows(np.array([2, 3]), np.array([2, 0])).tolist()
    [0, 3]
    """
    offers: np.ndarray = np.maximum(free - withheld, 0)
    return offers


def check_asks(asks: Asks, free_cores: np.ndarray, bidder: str) -> Asks:
    """Return ``asks`` when it keeps the contract (one offer per node, ``0 <= cores <= free``,
    finite ``reserve >= 0``).

    Raises:
        ConfigError: naming the bidder, the rule broken and the nodes that broke it.

    >>> check_asks(Asks(np.array([5]), np.zeros(1)), np.array([4]), "greedy")
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: bidder 'greedy' offers cores outside [0, free cores] on
        nodes [0]: offered [5], free [4]
    """
    cores, reserve = np.asarray(asks.cores), np.asarray(asks.reserve, dtype=float)
    if cores.shape != free_cores.shape or reserve.shape != free_cores.shape:
        raise ConfigError(
            f"bidder {bidder!r} must offer one (cores, reserve) per node: got shapes "
            f"{cores.shape} and {reserve.shape} for {free_cores.shape[0]} nodes"
        )
    bad = np.flatnonzero((cores < 0) | (cores > free_cores))
    if len(bad):
        raise ConfigError(
            f"bidder {bidder!r} offers cores outside [0, free cores] on nodes {bad.tolist()}: "
            f"offered {cores[bad].tolist()}, free {free_cores[bad].tolist()}"
        )
    bad = np.flatnonzero(~np.isfinite(reserve) | (reserve < 0))
    if len(bad):
        raise ConfigError(
            f"bidder {bidder!r} sets a reserve that is not a finite number >= 0 on nodes "
            f"{bad.tolist()}: {reserve[bad].tolist()}"
        )
    return Asks(cores.astype(np.int64, copy=False), reserve)


def asks_refusal(bidder: Bidder, jobs: Sequence[Job], n_nodes: int, exclusive: bool) -> str | None:
    """Why a bidder making offers (``asks``) cannot serve ``jobs``, or ``None``: offers apply
    to the cores-only auction only, so a job asking for more than cores (GPUs, MICs, memory,
    burst buffer), a job that may span nodes on a platform of several, or whole-node
    allocation refuses it before the run, not at the first decision.

    >>> jobs = [Job(1, 0.0, 1.0, 1.0), Job(2, 0.0, 1.0, 1.0, bb=5.0)]
    >>> asks_refusal(OfferReserveBidder(), jobs[:1], 4, False) is None
    True
    >>> asks_refusal(OfferReserveBidder(), jobs, 4, False)  # doctest: +NORMALIZE_WHITESPACE
    "bidder 'offer-reserve' makes offers, which apply to the cores-only market auction: job 2
     asks for more than cores (burst buffer 5 GB)"
    """
    if not hasattr(bidder, "asks"):
        return None
    head = f"bidder {bidder.name!r} makes offers, which apply to the cores-only market auction: "
    if exclusive:
        return head + "nodes are allocated whole (exclusive = true)"
    for job in jobs:
        if not one_core_units(job):  # the cores-only auction's own test (MarketColumns.heavy_seen)
            extra = f"burst buffer {job.bb:g} GB" if job.bb > 0 else f"unit {job.unit}"
            return head + f"job {job.job_id} asks for more than cores ({extra})"
        if n_nodes > 1 and job.payload.get("spans_nodes"):
            return (
                head
                + f"job {job.job_id} may span nodes (spans_nodes) on a platform of {n_nodes} nodes"
            )
    return None


BIDDERS = {
    "free-cores": FreeCoresBidder,
    "energy": EnergyAwareBidder,
    "locality": LocalityAwareBidder,
    "offer-reserve": OfferReserveBidder,
}


def make_bidder(name: str) -> Bidder:
    """Build a strategy with its default parameters by name.

    >>> make_bidder("free-cores").name
    'free-cores'
    """
    if name not in BIDDERS:
        raise UnknownNameError("bidder", name, BIDDERS)
    if name == "locality":
        raise ConfigError(
            "the locality bidder needs per-node distances: build LocalityAwareBidder(distance)"
        )
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
