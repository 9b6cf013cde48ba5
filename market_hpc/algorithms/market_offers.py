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
- **Holding** is tried for a recent arrival that fits nowhere (no node holds one unit of
  it, or its burst buffer is not free): for the paper's rule, "no core is free anywhere".
  A held job frees all it holds, on every node, and its burst buffer. For a single-node
  arrival the instances are Algorithm 3's (per node, latest-start prefixes of the jobs
  with units there); for a spanning arrival the whole machine is one node: the prefixes
  run over every running job, latest start first. A held job resumes only when the
  auction offers it every resource again.

Pure functions over numpy arrays and the ``algorithms.market`` records; no Mesa.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from market_hpc.algorithms.allocation import Allocation, place_in_order, units_fit
from market_hpc.algorithms.market import Candidate, Executing, HoldPlan, profit, remaining_time
from market_hpc.algorithms.market_auction import Auction
from market_hpc.algorithms.market_columns import MarketColumns

SPANNING = -1
"""``HoldPlan.node`` of an instance that holds for a spanning arrival (the whole machine)."""

Freed = tuple[float, int, int, int, Allocation, tuple[int, ...], float]
"""A running job's expected end as ``(time, first node, units, job_id, allocation, unit, bb)``:
``algorithms.market.Release`` (its first four fields, and their order) with what it frees."""


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
    >>> columns = MarketColumns([(Job(1, 0.0, 4.0, 4.0, units=2, unit=(1, 1, 0, 0), profile=(4.0, 2.0),
    ...                               payload=curve), 0.0, 0),
    ...                          (Job(2, 0.0, 4.0, 4.0, units=3, profile=(4.0, 2.0, 1.0),
    ...                               payload={**curve, "spans_nodes": True}), 0.0, 0)])
    >>> free = np.array([[4, 0, 0, 0], [2, 1, 0, 0]])   # node 0 bids highest, holds no GPU
    >>> got = offers(columns, free, 0.0, np.array([0, 1]))
    >>> got.cap.tolist(), got.turn.tolist()   # job 1: 1 unit on node 1; job 2: 6 cores, capped at 3 later
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


def fits_nowhere(unit: tuple[int, ...], bb: float, free: np.ndarray, free_bb: float) -> bool:
    """Whether no node holds one unit of ``unit`` or the pool lacks ``bb``.

    >>> fits_nowhere((1, 1, 0, 0), 0.0, np.array([[4, 0, 0, 0]]), 0.0)
    True
    """
    return bb > free_bb or not units_fit(free, unit).any()


def taken(allocation: Allocation, unit: tuple[int, ...]) -> list[tuple[int, np.ndarray]]:
    """``(node, resources held there)`` of a job running on ``allocation``."""
    vector = np.asarray(unit, dtype=np.int64)
    return [(node, units * vector) for node, units in allocation]


def placement(executing: Executing) -> Allocation:
    """Where a running job is (``Executing.allocation``, or its one node)."""
    return executing.allocation or ((executing.node, executing.cores),)


def _fit(row: np.ndarray, need: list[tuple[int, int]]) -> int:
    return min(int(row[resource]) // amount for resource, amount in need)


def hold_search_resources(
    arrivals: Sequence[Candidate],
    executing: Sequence[Executing],
    free: np.ndarray,
    free_bb: float,
    now: float,
    penalty: float,
    baselines: Mapping[int, float] | None = None,
) -> HoldPlan | None:
    """Algorithm 3 over every resource (``algorithms.market.hold_search``'s rule).

    A held job frees ``units * unit`` on each of its nodes and its burst buffer. For a
    single-node arrival each node's running jobs (every job with units there) are held as
    latest-start prefixes and the arrival is priced on the units that node then holds
    (``c*`` at most); for a spanning arrival the prefixes run over every running job and it
    is priced on the units all nodes hold together (``HoldPlan.node`` is ``SPANNING``). An
    instance whose arrival still does not fit (a missing resource, the burst buffer) earns
    nothing and is not a plan. Net profit, ties and pruning are ``hold_search``'s; with
    one-core units, no burst buffer and single-node jobs it returns what ``hold_search``
    returns.

    >>> from market_hpc.algorithms.valuecurve import StepCurve
    >>> gpu_job = Candidate(9, 0.0, StepCurve(300.0, 12.0), (20.0, 10.0), 0.0, True, 2, unit=(1, 1, 0, 0))
    >>> cpu = Executing(1, 0, 2, 0.0, 1, 10.0, 10.0)                       # cores only: no help
    >>> gpu = Executing(2, 1, 2, 0.0, 2, 50.0, 50.0, unit=(1, 1, 0, 0))   # holds node 1's GPUs
    >>> free = np.array([[0, 0, 0, 0], [0, 0, 0, 0]])
    >>> plan = hold_search_resources([gpu_job], [cpu, gpu], free, 0.0, now=0.0, penalty=0.0)
    >>> plan.node, plan.held, plan.cores, plan.net_profit
    (1, (2,), 2, 250.0)
    """
    per_node: dict[int, list[Executing]] = {}
    for job in executing:
        for node, _ in placement(job):
            per_node.setdefault(node, []).append(job)
    for jobs in per_node.values():
        jobs.sort(key=lambda e: (e.start, e.seq), reverse=True)
    everyone = sorted(executing, key=lambda e: (e.start, e.seq), reverse=True)
    best: HoldPlan | None = None
    best_net = 0.0
    for arrival in arrivals:
        c_best = min(arrival.best_cores, len(arrival.profile))
        baseline = baselines.get(arrival.job_id, 0.0) if baselines else 0.0
        gains: dict[int, float] = {}

        def gain_on(
            units: int,
            arrival: Candidate = arrival,
            gains: dict[int, float] = gains,
            baseline: float = baseline,
        ) -> float:
            if units not in gains:
                gains[units] = (
                    profit(
                        arrival.curve,
                        now,
                        arrival.arrival,
                        arrival.profile,
                        units,
                        arrival.progress,
                    )
                    - baseline
                )
            return gains[units]

        top = gain_on(c_best)
        if top <= best_net:
            continue
        need = [(resource, amount) for resource, amount in enumerate(arrival.unit) if amount > 0]
        if arrival.spans:
            instances = [(SPANNING, everyone)]
            start_total = int(units_fit(free, arrival.unit).sum())
        else:
            instances = [(node, per_node[node]) for node in sorted(per_node)]
            start_total = 0
        for node, victims in instances:
            rows: dict[int, np.ndarray] = {}
            pool = free_bb
            total = start_total
            loss = 0.0
            held: list[int] = []
            for victim in victims:
                for where, amount in taken(placement(victim), victim.unit):
                    row = rows.get(where)
                    if row is None:
                        row = rows[where] = free[where].astype(np.int64, copy=True)
                    if node == SPANNING:
                        total -= _fit(row, need)
                    row += amount
                    if node == SPANNING:
                        total += _fit(row, need)
                pool += victim.bb
                loss += victim.expected_value + penalty * victim.max_value
                held.append(victim.job_id)
                if top - loss <= best_net:
                    break  # longer prefixes only add loss
                if pool < arrival.bb:
                    continue
                holds = total if node == SPANNING else _fit(rows.get(node, free[node]), need)
                units = min(holds, c_best)
                if units <= 0:
                    continue
                net = gain_on(units) - loss
                if net > best_net:
                    best_net = net
                    best = HoldPlan(
                        arrival.job_id, node, tuple(held), units, net, gains[units] + baseline
                    )
                if units >= c_best:
                    break  # longer prefixes earn the same and lose more
    return best


def first_release_resources(
    releases: Sequence[Freed], free: np.ndarray, free_bb: float, job: Candidate, ahead: int
) -> tuple[float, int] | None:
    """``algorithms.market.first_release`` over every resource: when, and on how many
    units, ``job`` gets an offer without holding.

    Releases are taken in time order, each freeing what its job holds (and its burst
    buffer); the ``ahead`` jobs ranked before ``job`` take the first releases, each all
    the free resources of the released job's nodes (pessimistic, as the seed's rule). Then
    the first release after which ``job`` fits: a single-node job on the released nodes
    (the most units one of them holds), a spanning job on all nodes together.

    >>> job = Candidate(9, 0.0, None, (20.0, 10.0), 0.0, True, 2, unit=(1, 1, 0, 0))
    >>> cpu = (5.0, 0, 2, 1, ((0, 2),), (1, 0, 0, 0), 0.0)
    >>> gpu = (8.0, 1, 1, 2, ((1, 1),), (1, 1, 0, 0), 0.0)
    >>> first_release_resources([cpu, gpu], np.zeros((2, 4), dtype=np.int64), 0.0, job, ahead=0)
    (8.0, 1)
    """
    free = free.astype(np.int64, copy=True)
    pool = free_bb
    for end, _, _, _, allocation, unit, bb in sorted(releases, key=lambda r: r[:4]):
        nodes = [node for node, _ in allocation]
        for node, amount in taken(allocation, unit):
            free[node] += amount
        pool += bb
        if ahead > 0:
            ahead -= 1
            free[nodes] = 0
            continue
        if pool < job.bb:
            continue
        fits = units_fit(free, job.unit)
        holds = int(fits.sum()) if job.spans else int(fits[nodes].max())
        if holds > 0:
            return end, holds
    return None


def value_after_wait_resources(
    job: Candidate,
    releases: Sequence[Freed],
    free: np.ndarray,
    free_bb: float,
    now: float,
    ahead: int,
) -> float:
    """``algorithms.market.value_after_wait`` with ``first_release_resources``."""
    got = first_release_resources(releases, free, free_bb, job, ahead)
    if got is None:
        return 0.0
    start, units = got
    use = min(units, job.best_cores, len(job.profile))
    finish = max(start, now) + remaining_time(job.profile, use, job.progress)
    return float(job.curve.value_at(finish - job.arrival))
