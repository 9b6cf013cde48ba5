"""The market auction over every resource and across nodes (``policies.market``'s general path).

Singh et al.'s auction (HPCS'15, Algorithm 2) prices the free cores of one node for
moldable jobs that run on one node. Here a job's width counts *units* of its unit vector
(cores, GPUs, MICs, memory; a trace job's unit is one core), it may ask for burst buffer
from the shared pool, and a job marked ``spans_nodes`` (the market rule's trace jobs)
may run on several nodes. The rules (docs/market.md, "Resources and jobs that span nodes"):

- **What a node holds.** A node holds ``min over the unit's resources of free // amount``
  units of a job (``allocation.units_fit``); a job fits only if its burst buffer is free
  in the pool too.
- **Offers.** Nodes bid as in the paper (the bidder prices their free rows); the nodes
  with a free core and a positive bid are taken in bid order (highest first, ties: lowest
  index). A single-node job is offered the *first* node in that order that holds one unit
  of it; a spanning job is offered every bidding node together, with the top bidder: the
  units they hold summed. Either is capped at ``c*`` units, and the job's speed-up
  profile is read at the total.
- **A round.** The nodes are visited in bid order; at each, the policy's rule picks among
  the open jobs offered there (``Auction.select_offer``) and the first pick starts; when
  none is picked, the next node. Every job whose unit is one core and which needs no
  burst buffer is offered the top bidder, so on such a queue this is the paper's round
  (the top bidder, else nothing).
- **Placement of a spanning job.** Greedy over the bidding nodes in bid order, each taking
  as many units as it holds, until the width the rule chose is placed (the fewest nodes
  under the free-cores bid).
- **Holding** (``algorithms.market_holding``) is tried for a recent arrival that fits
  nowhere (no node holds one unit of it, or its burst buffer is not free): for the
  paper's rule, "no core is free anywhere".
  A held job frees all it holds, on every node, and its burst buffer. For a single-node
  arrival the instances are Algorithm 3's (per node, latest-start prefixes of the jobs
  with units there); for a spanning arrival the whole machine is one node: the prefixes
  run over every running job, latest start first. A held job resumes only when the
  auction offers it every resource again.

Pure functions over numpy arrays and the ``algorithms.market`` records; no Mesa. The hold
search and the look-ahead's wait estimate over every resource are ``algorithms.market_holding``'s
(``resource_instances``, ``first_release_resources``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from market_hpc.algorithms.allocation import Allocation, place_in_order, units_fit
from market_hpc.algorithms.market.auction import Auction
from market_hpc.algorithms.market.columns import MarketColumns


def bid_order(bids: np.ndarray, free_cores: np.ndarray) -> np.ndarray:
    """The bidding nodes, highest bid first (ties: lowest index): nodes with a free core
    and a positive bid (``bidding.clear_auction``'s winner comes first).

    >>> bid_order(np.array([3, 9, 9, 5]), np.array([3, 9, 9, 0])).tolist()
    [1, 2, 0]
    """
    nodes = np.flatnonzero((free_cores > 0) & (bids > 0))
    if len(nodes) > 1:
        nodes = nodes[np.argsort(-bids[nodes], kind="stable")]
    return nodes


@dataclass(frozen=True)
class Offers:
    """What one round offers each queued row.

    Attributes:
        cap: Units the row is offered (0: none fits it).
        turn: Position, in the bid order, of the node it is offered (a spanning row: 0,
            the top bidder's, with every bidding node); ``len(order)`` when none.
    """

    cap: np.ndarray
    turn: np.ndarray


def offers(columns: MarketColumns, free: np.ndarray, free_bb: float, order: np.ndarray) -> Offers:
    """Each row's offer in a round whose bidding nodes are ``order`` (module docstring).

    >>> from market_hpc.algorithms.valuecurve import StepCurve
    >>> from market_hpc.domain.job import Job
    >>> curve = {"value_curve": StepCurve(10.0, 100.0)}
    >>> columns = MarketColumns([(Job(1, 0.0, 4.0, 4.0, units=2, unit=(1, 1, 0, 0),
    ...                               profile=(4.0, 2.0), payload=curve), 0.0, 0),
    ...                          (Job(2, 0.0, 4.0, 4.0, units=3, profile=(4.0, 2.0, 1.0),
    ...                               payload={**curve, "spans_nodes": True}), 0.0, 0)])
    >>> free = np.array([[4, 0, 0, 0], [2, 1, 0, 0]])   # node 0 bids highest, holds no GPU
    >>> got = offers(columns, free, 0.0, np.array([0, 1]))
    >>> # job 1: 1 unit on node 1; job 2: 6 cores, capped at 3 later
    >>> got.cap.tolist(), got.turn.tolist()
    ([1, 6], [1, 0])
    """
    count = len(order)
    units = columns.units
    bidding = free[order]
    fits = np.stack([units_fit(bidding, unit) for unit in units]).astype(np.int64, copy=False)
    has = fits > 0
    first = np.where(has.any(axis=1), has.argmax(axis=1), count)
    single = np.where(first < count, fits[np.arange(len(units)), np.minimum(first, count - 1)], 0)
    total = fits.sum(axis=1)
    group = columns.group
    spans = columns.spans.astype(bool)
    cap = np.where(spans, total[group], single[group])
    turn = np.where(spans, np.where(total[group] > 0, 0, count), first[group])
    short = columns.bb > free_bb
    if short.any():
        cap[short] = 0
        turn[short] = count
    return Offers(cap, turn)


def pick(
    auction: Auction, free: np.ndarray, free_bb: float, order: np.ndarray
) -> tuple[int, Allocation] | None:
    """One round: ``(row, allocation)`` of the job that starts, or ``None`` (module docstring).

    Args:
        auction: The instant's auction (its rule, its open rows).
        free: ``(n_nodes, R)`` free resources now.
        free_bb: Free burst buffer of the pool.
        order: The bidding nodes in bid order (``bid_order``); not empty.
    """
    columns = auction.columns
    offered = offers(columns, free, free_bb, order)
    count = len(order)
    for turn in np.unique(offered.turn).tolist():
        if turn >= count:
            break
        choice = auction.select_offer(offered.cap, offered.turn == turn)
        if choice is None:
            continue
        row, width = choice
        if columns.spans[row]:
            fits = units_fit(free, columns.units[int(columns.group[row])])
            placed = place_in_order(fits, order, width)
            assert placed is not None  # the offer summed what these nodes hold
            return row, placed
        return row, ((int(order[turn]), width),)
    return None
