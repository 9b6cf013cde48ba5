"""Market dispatchers of Singh et al. (HPCS'15): SJQ, maxV, maxVD, minVR and their holding variants.

Each instant (Algorithm 2): queued jobs that can no longer earn anything are dropped
(even their fastest completion earns 0). Then, repeatedly, every node bids its free
cores and the highest bid wins (ties: lowest node index); the policy picks a job
for that node among those with positive profit on ``min(bid, c*)`` cores. When no core
is free anywhere the holding variants run Algorithm 3 for the jobs that arrived at this
instant and were never held, holding the best latest-start prefix on one node.

Decisions where the paper is silent:

- jobs started or held at this instant are not candidates for holding or resuming in the
  same instant (avoids hold/resume ping-pong within one instant);
- a job's score ties break by arrival, then job id;
- after each decision (its holds included: a held job is queued again with its new
  progress) the policy asks to be woken at the first integer time step at which a queued
  job is worthless (``wake_after``), so drops happen then rather than at the next
  unrelated event; docs/market.md, "Decision timing", states the whole rule.

Jobs that ask for more than cores of one node (GPUs, MICs, memory, burst buffer, or
``spans_nodes`` on a platform of several nodes) are auctioned by ``algorithms.market_offers``:
offers and holds cover every resource, a spanning job takes bids of several nodes as one
offer. A queue that never held such a job keeps the cores-only path (the seed's rule,
bit for bit, at its cost).

Node offers with a reserve (a bidder with ``asks``, ``algorithms.bidding``) apply to the
cores-only path: a node bids on and gives only the cores it offered when the decision
began (less those its starts took), starts no job below its reserve value per core (a
node whose reserve turns every job down offers nothing more at that instant, and the
next bidder is asked), and a hold never starts a job below the holding node's reserve.
Without such a bidder nothing of this runs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from market_hpc.algorithms.allocation import Allocation, place_in_order, units_fit
from market_hpc.algorithms.market.auction import RULES, Auction
from market_hpc.algorithms.market.bidding import clear_auction, offer_rows
from market_hpc.algorithms.market.columns import MarketColumns
from market_hpc.algorithms.market.holding import (
    SPANNING,
    WAIT_WEIGHT,
    Freed,
    HoldingRule,
    Release,
    latest_first,
    may_be_held,
    plan_hold_cores,
    plan_hold_resources,
    platform_full,
)
from market_hpc.algorithms.market.maths import Executing, HoldPlan
from market_hpc.algorithms.market.offers import bid_order, pick
from market_hpc.domain.job import CORE_UNIT
from market_hpc.errors import ConfigError
from market_hpc.parameters import FRACTION, Param
from market_hpc.policies.base import (
    NOTHING,
    Action,
    Allocator,
    Decision,
    Drop,
    Hold,
    PolicyBase,
    Start,
    View,
    fast_view,
)
from market_hpc.policies.capabilities import MARKET
from market_hpc.policies.registry import register_scheduler
from market_hpc.validation import Range

HOLDING_PARAMETERS = {"penalty": Param("float", FRACTION)}
LOOKAHEAD_PARAMETERS = {
    **HOLDING_PARAMETERS,
    "max_holds": Param("int", Range(0, 1000, integer=True)),
}
_ASKS_CORES_ONLY = (
    "node offers with a reserve (a bidder with asks, e.g. offer-reserve) apply to the cores-only "
    "market auction; this queue or platform needs the auction over every resource (jobs asking "
    "for GPUs, MICs, memory or burst buffer, jobs spanning nodes, or exclusive nodes)"
)


def _columns(view: View) -> MarketColumns:
    """The queue as market columns: the model's (kept in step), or priced from scratch for
    a hand-made view."""
    kept = fast_view(view, "market_columns")
    if kept is not None:
        columns = kept.market_columns
    else:
        states = ((job, view.state(job.job_id)) for job in view.queue)
        columns = MarketColumns((job, state.progress, state.hold_count) for job, state in states)
    if columns.invalid:
        job_id, lacks = next(iter(columns.invalid.items()))
        raise ConfigError(
            f"market policies need moldable jobs with value curves; job {job_id} has {lacks} "
            "(use a task-graph job set or workload.market = true for traces)"
        )
    return columns


class MarketPolicy(PolicyBase):
    """One of the eight market dispatchers.

    Args:
        allocator: Must be ``max-bid`` (the auction picks the node).
        rule: ``sjq``, ``maxv``, ``maxvd`` or ``minvr``.
        holding: Enable Algorithm 3.
        penalty: Holding penalty pi as a fraction of a held job's maximum value.
        lookahead: Hold only when holding beats waiting (``hold_search`` with baselines,
            non-paper); implies ``holding``.
        max_holds: Jobs held this many times are never held again (look-ahead only;
            the paper's variants may hold a job repeatedly: nothing forbids it). 2 rather than 1:
            a strict single hold cost SJQ-LH and minVR-LH 4-12% of their profit in the
            demo study, a second hold recovers most of it.
        wait_weight: Weight of the arrival's estimated value after waiting in the
            look-ahead's baseline (``WAIT_WEIGHT``).
    """

    def __init__(
        self,
        allocator: Allocator,
        *,
        rule: str,
        holding: bool,
        penalty: float = 0.0,
        lookahead: bool = False,
        max_holds: int = 2,
        wait_weight: float = WAIT_WEIGHT,
    ) -> None:
        if rule not in RULES:
            raise ConfigError(f"market rule must be one of {', '.join(RULES)}, got {rule!r}")
        self.holding_rule = HoldingRule(penalty, lookahead, max_holds, wait_weight)
        self.allocator = allocator
        self.rule = rule
        self.holding = holding or lookahead
        self.name = rule + ("lh" if lookahead else "h" if holding else "")
        self._held_at: float | None = None  # the instant of the latest decision, if it held jobs
        self._kept: (
            tuple[View, int | None, dict[int, list[Executing]], list[Release], float] | None
        ) = None
        self._kept_all: tuple[View, int | None, list[Executing], list[Freed], float] | None = None
        self._facts: tuple[View, tuple[bool, int, bool]] | None = None

    # The holding rule's parameters are read from ``holding_rule`` (``algorithms.market_holding``).
    @property
    def penalty(self) -> float:
        return self.holding_rule.penalty

    @penalty.setter
    def penalty(self, value: float) -> None:  # (PolicyBase.penalty is writable)
        self.holding_rule = dataclasses.replace(self.holding_rule, penalty=value)

    @property
    def lookahead(self) -> bool:
        return self.holding_rule.lookahead

    @property
    def max_holds(self) -> int:
        return self.holding_rule.max_holds

    @property
    def wait_weight(self) -> float:
        return self.holding_rule.wait_weight

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Drop worthless jobs, then auction free cores, holding when none are free (over
        every resource and across nodes when the queue asks for more: ``_decide_offers``)."""
        now = view.time
        columns = _columns(view)
        auction = Auction(self.rule, columns, now)
        actions: list[Action] = [Drop(job_id) for job_id in auction.dropped]
        facts = self._facts
        if facts is None or facts[0] is not view:  # the model keeps one view for the whole run
            facts = self._facts = (view, _view_facts(view))
        if not _cores_only(view, columns, facts[1]):
            if view.asks(view.free) is not None:
                raise ConfigError(_ASKS_CORES_ONLY)
            return self._decide_offers(view, auction, actions)
        rows = view.free.copy()
        free = rows[:, 0]  # a view: bids are priced on the rows this instant's starts update
        asks = view.asks(rows)  # None: every node offers its free cores at no reserve (the seed)
        withheld = free - asks.cores if asks is not None else free[:0]
        reserve = asks.reserve if asks is not None else withheld
        held: set[int] = set()  # jobs held at this instant
        bids = view.bids
        while auction.left:
            if asks is None:
                offer = free
                winner = clear_auction(bids(rows), free)
            else:  # nodes bid on, and give, the cores they offer
                offer = offer_rows(free, withheld)
                winner = clear_auction(bids(np.column_stack((offer, rows[:, 1:]))), offer)
            if winner is not None:
                node = winner
                if asks is None or reserve[node] <= 0:
                    choice = auction.select(int(offer[node]))  # the winner offers its free cores
                else:
                    choice = auction.select_reserved(int(offer[node]), float(reserve[node]))
                    if choice is None:  # its reserve turns every job down: it offers nothing
                        withheld[node] = free[
                            node
                        ]  # more at this instant, the next bidder is asked
                        continue
                if choice is None:
                    break
                index, cores = choice
            elif not platform_full(free):
                break  # nodes with free cores abstained
            else:
                plan = (
                    self._plan_hold(view, auction, free, held, None if asks is None else reserve)
                    if self.holding
                    else None
                )
                if plan is None:
                    break
                for victim in plan.held:
                    actions.append(Hold(victim))
                    held.add(victim)
                free[plan.node] += sum(r.units for r in view.running if r.job.job_id in plan.held)
                index, node, cores = auction.index(plan.job_id), plan.node, plan.cores
            job_id = auction.take(index)
            actions.append(Start(job_id, ((node, cores),)))
            free[node] -= cores
        self._held_at = now if held else None
        if not actions:
            return NOTHING
        return Decision(tuple(actions))

    def _decide_offers(self, view: View, auction: Auction, actions: list[Action]) -> Decision:
        """``decide`` over every resource and across nodes (``algorithms.market_offers``):
        rounds of offers in bid order; holding for recent arrivals that fit nowhere."""
        columns = auction.columns
        free = view.free.astype(np.int64, copy=True)
        pool = float(view.free_bb)
        held: set[int] = set()
        bids = view.bids
        exclusive, capacity = view.exclusive, view.platform.capacity
        while auction.left:
            order = bid_order(bids(free), free[:, 0])
            chosen = pick(auction, free, pool, order) if len(order) else None
            if chosen is not None:
                index, allocation = chosen
            else:
                plan = (
                    self._plan_hold_offers(view, auction, free, pool, held)
                    if self.holding
                    else None
                )
                if plan is None:
                    break
                for victim in plan.held:
                    actions.append(Hold(victim))
                    held.add(victim)
                for running in view.running:
                    if running.job.job_id in plan.held:
                        for node, units in running.allocation:
                            if exclusive:  # it held whole nodes
                                free[node] = capacity[node]
                            else:
                                free[node] += np.multiply(units, running.job.unit)
                        pool += running.job.bb
                index = auction.index(plan.job_id)
                allocation = self._hold_placement(view, plan, columns.jobs[index].unit, free)
            job = columns.jobs[index]
            auction.take(index)
            actions.append(Start(job.job_id, allocation))
            for node, units in allocation:
                if exclusive:  # whole nodes: nothing is left on them
                    free[node] = 0
                else:
                    free[node] -= np.multiply(units, job.unit)
            pool -= job.bb
        self._held_at = view.time if held else None
        return Decision(tuple(actions)) if actions else NOTHING

    @staticmethod
    def _hold_placement(
        view: View, plan: HoldPlan, unit: tuple[int, ...], free: np.ndarray
    ) -> Allocation:
        """Where the arrival a plan held for starts: its node, or (spanning) greedily over
        every node in bid order on the freed resources."""
        if plan.node != SPANNING:
            return ((plan.node, plan.cores),)
        order = np.argsort(-np.asarray(view.bids(free)), kind="stable")
        placed = place_in_order(units_fit(free, unit), order, plan.cores)
        assert placed is not None  # the plan priced what every node holds together
        return placed

    def _plan_hold_offers(
        self, view: View, auction: Auction, free: np.ndarray, pool: float, held: set[int]
    ) -> HoldPlan | None:
        arrivals = auction.arrivals()
        if not arrivals:
            return None
        executing, ends = self._running_all(view)  # expected ends, never before now
        return plan_hold_resources(
            arrivals,
            executing,
            ends,
            free,
            pool,
            view.time,
            self.holding_rule,
            _ahead(auction),
            held,
        )

    def _running_all(self, view: View) -> tuple[list[Executing], list[Freed]]:
        """``_running`` over every resource: the running jobs that may be held (with their
        allocations, units and burst buffer) and every running job's release."""
        version, kept = _still_kept(self._kept_all, view)
        if kept is not None:
            return kept[2], kept[3]
        executing, ends = [], []
        rule = self.holding_rule
        limits = rule.limits_holds
        soonest = math.inf  # the first estimated end: the kept lists hold until then
        for running in view.running:
            job = running.job
            allocation = tuple((int(node), int(units)) for node, units in running.allocation)
            node = allocation[0][0]
            soonest = min(soonest, running.est_end)
            end = view.expected_end(running)  # past its estimate: ends now
            ends.append((end, node, running.units, job.job_id, allocation, job.unit, job.bb))
            if limits and not may_be_held(rule, view.state(job.job_id).hold_count):
                continue
            curve = job.payload["value_curve"]
            executing.append(
                Executing(
                    job.job_id,
                    node,
                    running.units,
                    running.start,
                    running.seq,
                    float(curve.value_at(end - job.submit)),
                    float(curve.max_value),
                    allocation,
                    job.unit,
                    job.bb,
                )
            )
        self._kept_all = (view, version, executing, ends, soonest)
        return executing, ends

    def wake_after(self, view: View) -> float | None:
        """The first integer time step after ``view.time`` at which a job queued in
        ``view`` (the state after a decision, held jobs included) is worthless: even its
        fastest completion, started then, earns nothing. ``None`` with an empty queue.

        A decision that held jobs and left cores free asks for the next step: the jobs
        it held could not resume at its own instant, the paper's loop tries them then.
        """
        columns = _columns(view)
        if not len(columns):
            return None
        step = math.floor(view.time) + 1.0
        if self._held_at == view.time and view.free[:, 0].any():
            return step
        wake = columns.wake  # floor(arrival + zero - fastest) per row
        soonest = float(wake.min())
        rows = np.flatnonzero(wake == soonest)
        elapsed = (soonest + columns.fastest[rows]) - columns.arrival[rows]
        if not (columns.values_of(rows, elapsed) <= 0).any():
            soonest += 1.0  # worthless only after that floor: at the next step
        return max(soonest, step)

    def _plan_hold(
        self,
        view: View,
        auction: Auction,
        free: np.ndarray,
        held: set[int],
        reserve: np.ndarray | None,
    ) -> HoldPlan | None:
        arrivals = auction.arrivals()
        if not arrivals:
            return None
        by_node, ends = self._running(view)  # expected ends, never before now
        return plan_hold_cores(
            arrivals,
            by_node,
            ends,
            free.tolist(),
            view.time,
            self.holding_rule,
            _ahead(auction),
            held,
            reserve,
        )

    def _running(self, view: View) -> tuple[dict[int, list[Executing]], list[Release]]:
        """The running jobs that may be held, per node latest start first, and every
        running job's ``(est_end, node, cores, job_id)``.

        Neither changes while no job starts, ends or is held (``view.running_version``),
        so both are kept between decisions (hold attempts at successive arrivals on a full
        machine mostly see the same running jobs).
        """
        version, kept = _still_kept(self._kept, view)
        if kept is not None:
            return kept[2], kept[3]
        executing: list[Executing] = []
        ends: list[Release] = []
        rule = self.holding_rule
        limits = rule.limits_holds
        soonest = math.inf  # the first estimated end: the kept lists hold until then
        now = view.time
        append_end = ends.append
        for running in view.running:
            job = running.job
            node = running.allocation[0][0]
            est_end = running.est_end
            if est_end < soonest:  # (min and expected_end written out: a hot loop)  # noqa: PLR1730
                soonest = est_end
            end = est_end if est_end > now else now  # past its estimate: now  # noqa: FURB136
            append_end((end, node, running.units, job.job_id))
            if limits and not may_be_held(rule, view.state(job.job_id).hold_count):
                continue
            curve = job.payload["value_curve"]
            executing.append(
                Executing(
                    job.job_id,
                    node,
                    running.units,
                    running.start,
                    running.seq,
                    float(curve.value_at(end - job.submit)),
                    float(curve.max_value),
                )
            )
        by_node = latest_first(executing)
        self._kept = (view, version, by_node, ends, soonest)
        return by_node, ends


KeptT = TypeVar("KeptT", bound=tuple[Any, ...])


def _ahead(auction: Auction) -> Callable[[int], int]:
    """``job_id -> how many open jobs rank before it`` (the look-ahead's queue position)."""
    return lambda job_id: auction.rank_of(auction.index(job_id))


def _still_kept(kept: KeptT | None, view: View) -> tuple[int | None, KeptT | None]:
    """The view's ``running_version`` (``None`` when the view does not keep one) and
    ``kept``, a ``(view, version, ...)`` cache of its running jobs, when it still holds:
    the same view, no job started, ended or was held since, and none has outlived its
    estimate (``kept[-1]``, the first estimated end: the kept expected ends and values
    stay true until then; a job profiled at design time ends at its estimate, so the
    cache then never expires early). Else ``None``."""
    kept_view = fast_view(view, "running_version")
    version = None if kept_view is None else kept_view.running_version
    if (
        version is not None
        and kept is not None
        and kept[0] is view
        and kept[1] == version
        and view.time < kept[-1]
    ):
        return version, kept
    return version, None


def _cores_only(view: View, columns: MarketColumns, facts: tuple[bool, int, bool]) -> bool:
    """Whether the cores-only auction decides: every job the queue ever held asked for cores
    of one node only (``MarketColumns.plain``; every running job was queued first), and,
    on a hand-made view whose columns are built from its queue alone, so does every
    running job; and nodes are not allocated whole (``exclusive``: a busy node has nothing
    free, a started job leaves nothing on its nodes, a hold frees them whole). ``facts``
    is ``_view_facts(view)``."""
    kept, n_nodes, exclusive = facts
    if columns.heavy_seen or columns.spans_seen and n_nodes > 1 or exclusive:
        return False
    if kept:
        return True
    return all(
        running.job.unit == CORE_UNIT and not running.job.bb and len(running.allocation) == 1
        for running in view.running
    )


def _view_facts(view: View) -> tuple[bool, int, bool]:
    """What ``_cores_only`` reads of a view that does not change while it lives: whether it
    keeps the market columns (the model's view), the node count, whole-node allocation."""
    return (
        fast_view(view, "market_columns") is not None,
        view.platform.n_nodes,
        bool(view.exclusive),
    )


def _factory(rule: str, holding: bool, lookahead: bool = False):  # type: ignore[no-untyped-def]
    if lookahead:  # only look-ahead holding limits holds per job

        def make_lookahead(
            allocator: Allocator, penalty: float = 0.0, max_holds: int = 2
        ) -> MarketPolicy:
            return MarketPolicy(
                allocator,
                rule=rule,
                holding=holding,
                penalty=penalty,
                lookahead=True,
                max_holds=max_holds,
            )

        return make_lookahead

    def make(allocator: Allocator, penalty: float = 0.0) -> MarketPolicy:
        return MarketPolicy(
            allocator, rule=rule, holding=holding, penalty=penalty, lookahead=lookahead
        )

    return make


_SUMMARIES = {
    "sjq": "simple job queuing: queue order",
    "maxv": "maximum value queued job first",
    "maxvd": "maximum value density (value / cores) first",
    "minvr": "minimum remaining value (area under the curve) first",
}
"""Each rule's summary, by ``auction.RULES`` (the one list of the rules)."""
SUFFIXES = ("", "h", "lh")
"""The registered names are ``RULE + SUFFIX``: without holding, with it (the paper's), with
look-ahead holding."""
MARKET_SCHEDULERS = tuple(rule + suffix for suffix in SUFFIXES for rule in RULES)
"""Every market dispatcher's registered name, the rules' order within each suffix's."""
for _rule in RULES:
    _summary = _SUMMARIES[_rule]
    register_scheduler(
        _rule,
        f"market (Singh et al.): {_summary}",
        allocators=("max-bid",),
        default_allocator="max-bid",
        market=True,
        handles=MARKET,
        parameters=HOLDING_PARAMETERS,
    )(_factory(_rule, False))
    register_scheduler(
        _rule + "h",
        f"market (Singh et al.): {_summary}, with holding",
        allocators=("max-bid",),
        default_allocator="max-bid",
        market=True,
        handles=MARKET,
        parameters=HOLDING_PARAMETERS,
    )(_factory(_rule, True))
    register_scheduler(
        _rule + "lh",
        f"market: {_summary}, with look-ahead holding (non-paper: holds only "
        "when holding beats waiting, at most max_holds = 2 times per job)",
        allocators=("max-bid",),
        default_allocator="max-bid",
        market=True,
        handles=MARKET,
        parameters=LOOKAHEAD_PARAMETERS,
    )(_factory(_rule, True, lookahead=True))
