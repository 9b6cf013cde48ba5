"""The market's holding rule in one place (Singh et al., HPCS'15, Algorithm 3; spec A8-A14).

Everything a holding variant (``*h``, ``*lh``) decides about holding, as pure functions:

- **When** a hold is tried: the cores-only auction tries one when no core is free
  anywhere (``platform_full``); the auction over every resource, for a recent arrival
  that fits nowhere (``fits_nowhere``).
- **Who may trigger** one: a job never held (``may_trigger``, read when the queue
  columns index a job) that arrived at this instant (``QueueIndex.recent_ids``) and is
  still open (``Auction.arrivals``).
- **Who may be held**: a running job not held at this instant, and, under the look-ahead,
  held fewer than ``max_holds`` times (``may_be_held``).
- **The search**: per instance (a node, or the whole machine for a spanning arrival), the
  running jobs latest start first are held as growing prefixes; net profit = the
  arrival's profit on what the prefix frees - the held jobs' expected values - penalty x
  their maximum values (minus, for the look-ahead, what the arrival earns by waiting).
  One loop (``search``) over instances that say what each prefix frees: ``core_instances``
  (the cores-only fast path) or ``resource_instances`` (every resource, burst buffer,
  spanning), which give the same plans on cores-only inputs.
- **The look-ahead's wait estimate** (``value_after_wait``), and its weight.
- **The rule's parameters**: ``HoldingRule`` (penalty, max_holds, wait_weight,
  resume_seconds). The cost the model charges (``core.decisions``) reads the same
  penalty and ``resume_overhead``.

Pure functions over the ``algorithms.market`` records and numpy arrays; no Mesa.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from market_hpc.algorithms.allocation import Allocation, units_fit
from market_hpc.algorithms.market.maths import (
    Candidate,
    Executing,
    HoldPlan,
    profit,
    remaining_time,
)
from market_hpc.errors import ConfigError

# The look-ahead counts 70% of an arrival's estimated value after waiting: the estimate
# ignores jobs that arrive while it waits, so it overstates waiting. Chosen on the penalty
# sweep's five seeds (0.3..1.0 tried); docs/market.md reports it on held-out seeds too.
WAIT_WEIGHT = 0.7

SPANNING = -1
"""``HoldPlan.node`` of an instance that holds for a spanning arrival (the whole machine)."""

Release = tuple[float, int, int, int]
"""A running job's expected end as ``(time, node, cores, job_id)``."""

Freed = tuple[float, int, int, int, Allocation, tuple[int, ...], float]
"""A running job's expected end as ``(time, first node, units, job_id, allocation, unit, bb)``:
``Release`` (its first four fields, and their order) with what it frees."""

Instances = Callable[[Candidate, int], Iterable[tuple[int, Iterable[tuple[Executing, int]]]]]
"""``(arrival, c*) -> (node, prefixes)`` per instance; ``prefixes`` yields, for each job held
in turn, the job and the units the arrival is then offered (``<= c*``; 0: it does not fit)."""


@dataclass(frozen=True, slots=True)
class HoldingRule:
    """The parameters of a market policy's holding rule.

    Attributes:
        penalty: Holding penalty pi as a fraction of a held job's maximum value (A14).
        lookahead: Hold only when holding beats waiting (non-paper, ``*lh``).
        max_holds: Jobs held this many times are never held again (look-ahead only;
            the paper's variants may hold a job repeatedly). 2 rather than 1: a strict
            single hold cost SJQ-LH and minVR-LH 4-12% of their profit in the demo study.
        wait_weight: Weight of the arrival's estimated value after waiting (``WAIT_WEIGHT``).
        resume_seconds: Time a resumed segment spends resuming (``resume_overhead``); the
            look-ahead charges it to an arrival's wait when that arrival was held before.

    >>> HoldingRule(penalty=1.5)
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: holding penalty must be in [0, 1], got 1.5
    """

    penalty: float = 0.0
    lookahead: bool = False
    max_holds: int = 2
    wait_weight: float = WAIT_WEIGHT
    resume_seconds: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.penalty <= 1.0:
            raise ConfigError(f"holding penalty must be in [0, 1], got {self.penalty}")
        if self.max_holds < 0:
            raise ConfigError(f"max_holds must be >= 0, got {self.max_holds}")
        if not 0.0 <= self.wait_weight <= 1.0:
            raise ConfigError(f"wait_weight must be in [0, 1], got {self.wait_weight}")
        if not self.resume_seconds >= 0.0:
            raise ConfigError(f"resume_seconds must be >= 0, got {self.resume_seconds}")

    @property
    def limits_holds(self) -> bool:
        """Whether ``may_be_held`` reads hold counts (only the look-ahead limits them)."""
        return self.lookahead


def may_trigger(holds: int) -> bool:
    """Whether a job queued with ``holds`` holds may trigger holding when it arrives (A12):
    only a job never held. The other half of the rule, "arrived at this instant", is the
    queue index's (``QueueIndex.recent_ids``).

    >>> may_trigger(0), may_trigger(1)
    (True, False)
    """
    return holds == 0


def may_be_held(rule: HoldingRule, holds: int) -> bool:
    """Whether a running job held ``holds`` times may be held again (A10, look-ahead).
    Jobs started or held at this instant are never candidates (the caller's ``held``).

    >>> may_be_held(HoldingRule(lookahead=True), 2), may_be_held(HoldingRule(), 2)
    (False, True)
    """
    return not rule.lookahead or holds < rule.max_holds


def platform_full(free_cores: np.ndarray) -> bool:
    """Whether the cores-only auction may hold: no core free anywhere (Algorithm 2; nodes
    with free cores that abstained leave holding off).

    >>> platform_full(np.array([0, 0])), platform_full(np.array([0, 1]))
    (True, False)
    """
    return not free_cores.any()


def fits_nowhere(unit: tuple[int, ...], bb: float, free: np.ndarray, free_bb: float) -> bool:
    """Whether no node holds one unit of ``unit`` or the pool lacks ``bb`` (the general
    auction's trigger, per arrival).

    >>> fits_nowhere((1, 1, 0, 0), 0.0, np.array([[4, 0, 0, 0]]), 0.0)
    True
    """
    return bb > free_bb or not units_fit(free, unit).any()


def resume_overhead(holds: int, resume_seconds: float) -> float:
    """Time a job's next segment spends resuming: ``resume_seconds`` once it was held.

    >>> resume_overhead(0, 300.0), resume_overhead(2, 300.0)
    (0.0, 300.0)
    """
    return resume_seconds if holds else 0.0


def latest_first(executing: Sequence[Executing]) -> dict[int, list[Executing]]:
    """The running jobs per node, latest start first (Algorithm 3's hold order, A8)."""
    by_node: dict[int, list[Executing]] = {}
    for job in executing:
        by_node.setdefault(job.node, []).append(job)
    for jobs in by_node.values():
        jobs.sort(key=lambda e: (e.start, e.seq), reverse=True)
    return by_node


def search(
    arrivals: Sequence[Candidate],
    instances: Instances,
    now: float,
    penalty: float,
    baselines: Mapping[int, float] | None = None,
) -> HoldPlan | None:
    """Algorithm 3 over ``instances``: the best strictly positive (arrival, instance,
    prefix); ties keep the first found (earlier arrival, lower node, shorter prefix; A8).

    ``baselines`` (the look-ahead) maps an arrival to what it earns without holding; it is
    subtracted from its profit. A prefix stops growing once its loss alone rules it out or
    it frees ``c*`` units (longer prefixes earn the same and lose more).
    """
    best: HoldPlan | None = None
    best_net = 0.0
    for arrival in arrivals:
        c_best = min(arrival.best_cores, len(arrival.profile))
        gains: dict[int, float] = {}
        baseline = baselines.get(arrival.job_id, 0.0) if baselines else 0.0

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

        top = gain_on(c_best)  # no prefix earns more than the arrival on c* units
        if top <= best_net:
            continue
        for node, prefixes in instances(arrival, c_best):
            loss = 0.0
            held: list[int] = []
            for victim, units in prefixes:
                loss += victim.expected_value + penalty * victim.max_value
                held.append(victim.job_id)
                if top - loss <= best_net:
                    break  # longer prefixes only add loss
                if units <= 0:
                    continue
                net = gain_on(units) - loss
                if net > best_net:
                    best_net = net
                    best = HoldPlan(
                        arrival.job_id, node, tuple(held), units, net, gains[units] + baseline
                    )
                if units >= c_best:
                    break
    return best


def core_instances(
    by_node: Mapping[int, Sequence[Executing]], free_cores: Sequence[int]
) -> Instances:
    """The cores-only instances (the fast path): per node with running jobs, in node order,
    its jobs latest start first (``by_node``, from ``latest_first``), each freeing its cores."""

    def prefixes(
        victims: Sequence[Executing], freed: int, c_best: int
    ) -> Iterator[tuple[Executing, int]]:
        for victim in victims:
            freed += victim.cores
            yield victim, min(freed, c_best)

    def instances(
        arrival: Candidate, c_best: int
    ) -> Iterator[tuple[int, Iterator[tuple[Executing, int]]]]:
        for node in sorted(by_node):
            yield node, prefixes(by_node[node], free_cores[node], c_best)

    return instances


def placement(executing: Executing) -> Allocation:
    """Where a running job is (``Executing.allocation``, or its one node)."""
    return executing.allocation or ((executing.node, executing.cores),)


def taken(allocation: Allocation, unit: tuple[int, ...]) -> list[tuple[int, np.ndarray]]:
    """``(node, resources held there)`` of a job running on ``allocation``."""
    vector = np.asarray(unit, dtype=np.int64)
    return [(node, units * vector) for node, units in allocation]


def _fit(row: np.ndarray, need: list[tuple[int, int]]) -> int:
    return min(int(row[resource]) // amount for resource, amount in need)


def resource_instances(
    executing: Sequence[Executing], free: np.ndarray, free_bb: float
) -> Instances:
    """The instances over every resource: a held job frees ``units * unit`` on each of its
    nodes and its burst buffer. A single-node arrival: per node, every job with units
    there, priced on the units that node then holds; a spanning arrival: one instance
    (``SPANNING``) over every running job, priced on what all nodes hold together. An
    instance whose arrival still lacks a resource or the burst buffer offers 0 units."""
    per_node: dict[int, list[Executing]] = {}
    for job in executing:
        for node, _ in placement(job):
            per_node.setdefault(node, []).append(job)
    for jobs in per_node.values():
        jobs.sort(key=lambda e: (e.start, e.seq), reverse=True)
    everyone = sorted(executing, key=lambda e: (e.start, e.seq), reverse=True)

    def prefixes(
        arrival: Candidate, node: int, victims: Sequence[Executing], c_best: int
    ) -> Iterator[tuple[Executing, int]]:
        need = [(resource, amount) for resource, amount in enumerate(arrival.unit) if amount > 0]
        spanning = node == SPANNING
        total = int(units_fit(free, arrival.unit).sum()) if spanning else 0
        rows: dict[int, np.ndarray] = {}
        pool = free_bb
        for victim in victims:
            for where, amount in taken(placement(victim), victim.unit):
                row = rows.get(where)
                if row is None:
                    row = rows[where] = free[where].astype(np.int64, copy=True)
                if spanning:
                    total -= _fit(row, need)
                row += amount
                if spanning:
                    total += _fit(row, need)
            pool += victim.bb
            if pool < arrival.bb:
                yield victim, 0
                continue
            holds = total if spanning else _fit(rows.get(node, free[node]), need)
            yield victim, min(holds, c_best)

    def instances(
        arrival: Candidate, c_best: int
    ) -> Iterator[tuple[int, Iterator[tuple[Executing, int]]]]:
        if arrival.spans:
            yield SPANNING, prefixes(arrival, SPANNING, everyone, c_best)
            return
        for node in sorted(per_node):
            yield node, prefixes(arrival, node, per_node[node], c_best)

    return instances


def hold_search(
    arrivals: Sequence[Candidate],
    executing: Sequence[Executing],
    free_cores: Sequence[int],
    now: float,
    penalty: float,
    baselines: Mapping[int, float] | None = None,
    by_node: Mapping[int, Sequence[Executing]] | None = None,
) -> HoldPlan | None:
    """Algorithm 3 on cores of one node (``search`` over ``core_instances``).

    ``by_node`` is ``latest_first(executing)`` when the caller keeps it (then
    ``executing`` is not read).

    >>> from market_hpc.algorithms.valuecurve import StepCurve
    >>> newcomer = Candidate(8, 0.0, StepCurve(300.0, 12.0), (20.0, 10.0), 0.0, True, 2)
    >>> running = [Executing(1, 0, 1, 0.0, 1, 50.0, 50.0), Executing(2, 0, 1, 1.0, 2, 40.0, 40.0)]
    >>> plan = hold_search([newcomer], running, [0], now=2.0, penalty=0.0)
    >>> plan.held, plan.cores, plan.net_profit   # holding one job frees too few cores
    ((2, 1), 2, 210.0)
    >>> hold_search([newcomer], running, [0], now=2.0, penalty=0.0, baselines={8: 250.0}) is None
    True
    """
    if by_node is None:
        by_node = latest_first(executing)
    return search(arrivals, core_instances(by_node, free_cores), now, penalty, baselines)


def hold_search_resources(
    arrivals: Sequence[Candidate],
    executing: Sequence[Executing],
    free: np.ndarray,
    free_bb: float,
    now: float,
    penalty: float,
    baselines: Mapping[int, float] | None = None,
) -> HoldPlan | None:
    """Algorithm 3 over every resource (``search`` over ``resource_instances``).

    >>> from market_hpc.algorithms.valuecurve import StepCurve
    >>> gpu_job = Candidate(9, 0.0, StepCurve(300.0, 12.0), (20.0, 10.0), 0.0, True, 2,
    ...                     unit=(1, 1, 0, 0))
    >>> cpu = Executing(1, 0, 2, 0.0, 1, 10.0, 10.0)                       # cores only: no help
    >>> gpu = Executing(2, 1, 2, 0.0, 2, 50.0, 50.0, unit=(1, 1, 0, 0))   # holds node 1's GPUs
    >>> free = np.array([[0, 0, 0, 0], [0, 0, 0, 0]])
    >>> plan = hold_search_resources([gpu_job], [cpu, gpu], free, 0.0, now=0.0, penalty=0.0)
    >>> plan.node, plan.held, plan.cores, plan.net_profit
    (1, (2,), 2, 250.0)
    """
    return search(arrivals, resource_instances(executing, free, free_bb), now, penalty, baselines)


def hold_instances(
    arrivals: Sequence[Candidate],
    executing: Sequence[Executing],
    free_cores: Sequence[int],
    now: float,
    penalty: float,
) -> Iterator[HoldPlan]:
    """Every holding instance Algorithm 3 evaluates, in its order (arrival, node, prefix),
    unpruned. The rows of the paper's Fig. 5 table are these instances; ``hold_search``
    returns the first one with the largest positive net profit."""
    instances = core_instances(latest_first(executing), free_cores)
    for arrival in arrivals:
        c_best = min(arrival.best_cores, len(arrival.profile))
        for node, prefixes in instances(arrival, c_best):
            loss = 0.0
            held: list[int] = []
            for victim, cores in prefixes:
                loss += victim.expected_value + penalty * victim.max_value
                held.append(victim.job_id)
                gain = profit(
                    arrival.curve, now, arrival.arrival, arrival.profile, cores, arrival.progress
                )
                yield HoldPlan(arrival.job_id, node, tuple(held), cores, gain - loss, gain)


def first_release(
    releases: Sequence[Release], free_cores: Sequence[int], ahead: int
) -> tuple[float, int] | None:
    """When and with how many free cores a queued job gets a node without holding.

    Algorithm 2 starts a job at the first release it wins, on the cores its node has
    free then (it never waits for more cores). The ``ahead`` queued jobs ranked before
    it take the earlier releases, each all of its node's free cores (a pessimistic
    guess). Releases at one instant count one by one. ``None`` if it never gets one.

    >>> first_release([(8.0, 0, 2, 7), (5.0, 0, 1, 6)], [0], ahead=0)
    (5.0, 1)
    >>> first_release([(8.0, 0, 2, 7), (5.0, 0, 1, 6)], [0], ahead=1)
    (8.0, 2)
    >>> first_release([(5.0, 0, 1, 6)], [0], ahead=1) is None
    True
    """
    free = list(free_cores)
    for end, node, cores, _ in sorted(releases):
        free[node] += cores
        if ahead > 0:
            ahead -= 1
            free[node] = 0
            continue
        return end, free[node]
    return None


def first_release_resources(
    releases: Sequence[Freed], free: np.ndarray, free_bb: float, job: Candidate, ahead: int
) -> tuple[float, int] | None:
    """``first_release`` over every resource: when, and on how many units, ``job`` gets
    an offer without holding.

    Releases are taken in time order, each freeing what its job holds (and its burst
    buffer); the ``ahead`` jobs ranked before ``job`` take the first releases, each all
    the free resources of the released job's nodes. Then the first release after which
    ``job`` fits: a single-node job on the released nodes (the most units one of them
    holds), a spanning job on all nodes together.

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


def value_after_wait(
    job: Candidate, got: tuple[float, int] | None, now: float, overhead: float = 0.0
) -> float:
    """Value ``job`` earns when it starts at ``got`` (a ``first_release`` or
    ``first_release_resources`` answer, ``(time, units)``; 0 if ``None`` or no units);
    ``overhead`` delays its completion (its resume, ``resume_overhead``).

    >>> from market_hpc.algorithms.valuecurve import LinearDecayCurve
    >>> job = Candidate(9, 0.0, LinearDecayCurve(100.0, 10.0, 30.0), (20.0, 10.0), 0.0, True, 2)
    >>> releases = [(5.0, 0, 1, 1), (8.0, 0, 1, 2)]
    >>> value_after_wait(job, first_release(releases, [0], ahead=0), now=0.0)  # 1 core: done at 25
    25.0
    >>> value_after_wait(job, first_release(releases, [0], ahead=1), now=0.0)  # t=8, done at 28
    10.0
    >>> value_after_wait(job, first_release(releases, [0], ahead=1), now=0.0, overhead=1.0)
    5.0
    """
    if got is None or got[1] <= 0:
        return 0.0
    start, units = got
    use = min(units, job.best_cores, len(job.profile))
    finish = max(start, now) + overhead + remaining_time(job.profile, use, job.progress)
    return float(job.curve.value_at(finish - job.arrival))


def wait_baselines(
    arrivals: Sequence[Candidate],
    first_start: Callable[[Candidate, int], tuple[float, int] | None],
    ahead_of: Callable[[int], int],
    now: float,
    rule: HoldingRule,
) -> dict[int, float]:
    """The look-ahead's baselines: each arrival's weighted value after waiting, starting at
    ``first_start(arrival, ahead)`` behind the ``ahead_of(job_id)`` jobs ranked before it,
    its resume (if it was held) counted."""
    return {
        a.job_id: rule.wait_weight
        * value_after_wait(
            a,
            first_start(a, ahead_of(a.job_id)),
            now,
            resume_overhead(a.holds, rule.resume_seconds),
        )
        for a in arrivals
    }


def plan_hold_cores(
    arrivals: Sequence[Candidate],
    by_node: Mapping[int, Sequence[Executing]],
    releases: Sequence[Release],
    free_cores: Sequence[int],
    now: float,
    rule: HoldingRule,
    ahead_of: Callable[[int], int],
    held: set[int] | frozenset[int] = frozenset(),
    reserve: Sequence[float] | np.ndarray | None = None,
) -> HoldPlan | None:
    """The cores-only auction's hold: ``hold_search`` for ``arrivals`` over the running
    jobs that may be held (``by_node``, less those ``held`` at this instant), with the
    look-ahead's baselines when the rule has them (``releases``: every running job's
    expected end, never before ``now``). With node offers (``reserve``: value per core
    per node), a plan that would start its arrival below its node's reserve is none.

    >>> from market_hpc.algorithms.valuecurve import StepCurve
    >>> newcomer = Candidate(8, 2.0, StepCurve(300.0, 12.0), (20.0, 10.0), 0.0, True, 2)
    >>> by_node = latest_first([Executing(1, 0, 2, 0.0, 1, 50.0, 50.0)])
    >>> plan_hold_cores([newcomer], by_node, [], [0], 2.0, HoldingRule(), lambda job: 0).held
    (1,)
    >>> plan_hold_cores([newcomer], by_node, [], [0], 2.0, HoldingRule(), lambda job: 0, {1})
    >>> plan_hold_cores([newcomer], by_node, [], [0], 2.0, HoldingRule(), lambda job: 0,
    ...                 reserve=[200.0]) is None   # 300 on 2 cores: 150 a core
    True
    """
    if held:
        by_node = {
            node: [e for e in jobs if e.job_id not in held] for node, jobs in by_node.items()
        }
    baselines = None
    if rule.lookahead:
        baselines = wait_baselines(
            arrivals,
            lambda a, ahead: first_release(releases, free_cores, ahead),
            ahead_of,
            now,
            rule,
        )
    plan = hold_search(arrivals, (), free_cores, now, rule.penalty, baselines, by_node=by_node)
    if plan is not None and reserve is not None and plan.profit / plan.cores < reserve[plan.node]:
        return None  # the node would start a job below its reserve
    return plan


def plan_hold_resources(
    arrivals: Sequence[Candidate],
    executing: Sequence[Executing],
    releases: Sequence[Freed],
    free: np.ndarray,
    free_bb: float,
    now: float,
    rule: HoldingRule,
    ahead_of: Callable[[int], int],
    held: set[int] | frozenset[int] = frozenset(),
) -> HoldPlan | None:
    """``plan_hold_cores`` over every resource: for the ``arrivals`` that fit nowhere."""
    arrivals = [a for a in arrivals if fits_nowhere(a.unit, a.bb, free, free_bb)]
    if not arrivals:
        return None
    if held:
        executing = [e for e in executing if e.job_id not in held]
    baselines = None
    if rule.lookahead:
        baselines = wait_baselines(
            arrivals,
            lambda a, ahead: first_release_resources(releases, free, free_bb, a, ahead),
            ahead_of,
            now,
            rule,
        )
    return hold_search_resources(arrivals, executing, free, free_bb, now, rule.penalty, baselines)
