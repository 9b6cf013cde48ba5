"""Market-inspired allocation maths (Singh, Dziurzanski & Indrusiak, HPCS 2015).

Pure functions over plain data: profits of moldable jobs on a number of cores, the
policies' scores, and the holding search of Algorithm 3. Decisions where the paper is
silent follow ``shared/spec/002-market-hold-resume.md`` and are named by its item (A1..A32).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


class Curve(Protocol):
    """What the market needs of a value curve (see ``algorithms.valuecurve``)."""

    max_value: float

    @property
    def zero_time(self) -> float: ...
    def value_at(self, elapsed: float) -> float: ...
    def remaining_value(self, elapsed: float) -> float: ...


def c_star(profile: Sequence[float]) -> int:
    """Smallest core count reaching the minimum response time (saturation).

    >>> c_star((86, 43, 29, 23, 19, 17, 15, 15, 15))   # Table II, j1
    7
    >>> c_star((74, 37, 26, 25, 25))                    # Table II, j4
    4
    """
    best = min(profile)
    return next(c for c, rt in enumerate(profile, start=1) if rt == best)


def remaining_time(profile: Sequence[float], cores: int, progress: float) -> float:
    """Time to finish on ``cores`` cores with ``progress`` of the work done (work carries over).

    A job on c cores progresses at 1/RT(c) per time unit; a resumed job needs
    ``ceil((1 - progress) * RT(c))`` so segments stay on the integer time grid.

    >>> remaining_time((10, 6, 4), 2, 0.0)
    6
    >>> remaining_time((10, 6, 4), 3, 0.5)
    2.0
    >>> remaining_time((10, 6, 4), 2, 0.25)
    5.0
    """
    full = profile[cores - 1]
    if progress == 0.0:
        return full
    return float(math.ceil((1.0 - progress) * full - 1e-9))


def profit(
    curve: Curve,
    now: float,
    arrival: float,
    profile: Sequence[float],
    cores: int,
    progress: float = 0.0,
) -> float:
    """Value earned if the job starts now on ``cores`` cores (the value at the
    projected completion, relative to arrival).

    >>> from market_hpc.algorithms.valuecurve import StepCurve
    >>> profit(StepCurve(500.0, 15.0), now=0, arrival=0, profile=(30, 15), cores=2)
    500.0
    >>> profit(StepCurve(500.0, 15.0), now=0, arrival=0, profile=(30, 15), cores=1)
    0.0
    """
    return float(curve.value_at(now + remaining_time(profile, cores, progress) - arrival))


@dataclass(frozen=True, slots=True)
class Candidate:
    """A queued job as the market sees it at one instant.

    Attributes:
        job_id: Job id.
        arrival: Arrival time (value curves are relative to it).
        curve: Value curve.
        profile: Response time on 1..len(profile) cores.
        progress: Work fraction done before (held jobs).
        recent: Arrived at this instant and never held (may trigger holding, A12/A13).
        best_cores: c*, the cores that give the maximum profit / parallelism (A4).
        unit: Resources of one unit (cores, GPUs, MICs, memory); a width counts units.
        bb: Burst-buffer request (GB), from the shared pool.
        spans: Whether it may span nodes (``algorithms.market_offers``).
    """

    job_id: int
    arrival: float
    curve: Curve
    profile: tuple[float, ...]
    progress: float
    recent: bool
    best_cores: int
    unit: tuple[int, ...] = (1, 0, 0, 0)
    bb: float = 0.0
    spans: bool = False


@dataclass(frozen=True, slots=True)
class Executing:
    """A running job that might be held.

    Attributes:
        job_id: Job id.
        node: Node it runs on.
        cores: Cores it holds.
        start: Start of its current segment (A28).
        seq: Start order (tie-break among equal start times: later seq is later).
        expected_value: Value it was expected to earn at its planned finish (A9's Loss).
        max_value: Its curve's maximum (the penalty base, A14).
        allocation: Where it runs, ``((node, units), ...)``; empty: ``cores`` units on
            ``node`` (the cores-only auction's form).
        unit: Resources of one of its units (a hold frees ``units * unit`` on each node).
        bb: Its burst-buffer request (a hold frees it too).
    """

    job_id: int
    node: int
    cores: int
    start: float
    seq: int
    expected_value: float
    max_value: float
    allocation: tuple[tuple[int, int], ...] = ()
    unit: tuple[int, ...] = (1, 0, 0, 0)
    bb: float = 0.0


@dataclass(frozen=True, slots=True)
class HoldPlan:
    """The best holding instance found by Algorithm 3."""

    job_id: int
    node: int
    held: tuple[int, ...]
    cores: int
    net_profit: float
    profit: float


def hold_search(
    arrivals: Sequence[Candidate],
    executing: Sequence[Executing],
    free_cores: Sequence[int],
    now: float,
    penalty: float,
    baselines: Mapping[int, float] | None = None,
    by_node: Mapping[int, Sequence[Executing]] | None = None,
) -> HoldPlan | None:
    """Algorithm 3: find the most profitable (arrival, node, latest-start prefix) to hold.

    For each recently arrived job and each node, the node's running jobs are taken latest
    start first and held as growing prefixes; net profit = profit of the arrival on the
    freed cores - the held jobs' expected values - penalty x their maximum values
    (Eq. 1 plus Sec. V-D). The best strictly positive instance wins; ties keep the first
    found (earlier arrival, lower node, shorter prefix; A8).

    ``baselines`` (non-paper, the look-ahead policies) maps an arrival to what it is
    expected to earn without holding; it is subtracted from its profit, so holding must
    beat waiting rather than nothing. The seed's rule is ``baselines=None``.
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
    best: HoldPlan | None = None
    best_net = 0.0
    for arrival in arrivals:
        c_best = min(arrival.best_cores, len(arrival.profile))
        gains: dict[int, float] = {}
        baseline = baselines.get(arrival.job_id, 0.0) if baselines else 0.0

        def gain_on(
            cores: int,
            arrival: Candidate = arrival,
            gains: dict[int, float] = gains,
            baseline: float = baseline,
        ) -> float:
            if cores not in gains:
                gains[cores] = (
                    profit(
                        arrival.curve,
                        now,
                        arrival.arrival,
                        arrival.profile,
                        cores,
                        arrival.progress,
                    )
                    - baseline
                )
            return gains[cores]

        top = gain_on(c_best)  # no prefix earns more than the arrival on c* cores
        if top <= best_net:
            continue
        for node in sorted(by_node):
            freed = free_cores[node]
            loss = 0.0
            held: list[int] = []
            for victim in by_node[node]:
                freed += victim.cores
                loss += victim.expected_value + penalty * victim.max_value
                held.append(victim.job_id)
                if top - loss <= best_net:
                    break  # longer prefixes only add loss
                cores = min(freed, c_best)
                net = gain_on(cores) - loss
                if net > best_net:
                    best_net = net
                    best = HoldPlan(
                        arrival.job_id, node, tuple(held), cores, net, gains[cores] + baseline
                    )
                if freed >= c_best:
                    break  # longer prefixes earn the same and lose more
    return best


def latest_first(executing: Sequence[Executing]) -> dict[int, list[Executing]]:
    """The running jobs per node, latest start first (Algorithm 3's hold order, A8)."""
    by_node: dict[int, list[Executing]] = {}
    for job in executing:
        by_node.setdefault(job.node, []).append(job)
    for jobs in by_node.values():
        jobs.sort(key=lambda e: (e.start, e.seq), reverse=True)
    return by_node


def hold_instances(
    arrivals: Sequence[Candidate],
    executing: Sequence[Executing],
    free_cores: Sequence[int],
    now: float,
    penalty: float,
) -> Iterator[HoldPlan]:
    """Every holding instance Algorithm 3 evaluates, in its order (arrival, node, prefix).

    The rows of the paper's Fig. 5 table are these instances. ``hold_search`` returns the
    first instance with the largest positive net profit among them, pruning prefixes that
    cannot win.
    """
    by_node = latest_first(executing)
    for arrival in arrivals:
        c_best = arrival.best_cores
        for node in sorted(by_node):
            freed = free_cores[node]
            loss = 0.0
            held: list[int] = []
            for victim in by_node[node]:
                freed += victim.cores
                loss += victim.expected_value + penalty * victim.max_value
                held.append(victim.job_id)
                cores = min(freed, c_best, len(arrival.profile))
                gain = profit(
                    arrival.curve, now, arrival.arrival, arrival.profile, cores, arrival.progress
                )
                yield HoldPlan(arrival.job_id, node, tuple(held), cores, gain - loss, gain)


Release = tuple[float, int, int, int]
"""A running job's expected end as ``(time, node, cores, job_id)``."""


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


def value_after_wait(
    job: Candidate,
    releases: Sequence[Release],
    free_cores: Sequence[int],
    now: float,
    ahead: int,
    overhead: float = 0.0,
) -> float:
    """Value ``job`` earns when it starts at its ``first_release`` (0 if never).

    ``overhead`` delays its completion (a resume's cost).

    >>> from market_hpc.algorithms.valuecurve import LinearDecayCurve
    >>> job = Candidate(9, 0.0, LinearDecayCurve(100.0, 10.0, 30.0), (20.0, 10.0), 0.0, True, 2)
    >>> value_after_wait(job, [(5.0, 0, 1, 1), (8.0, 0, 1, 2)], [0], now=0.0, ahead=0)  # 1 core: done at 25
    25.0
    >>> value_after_wait(job, [(5.0, 0, 1, 1), (8.0, 0, 1, 2)], [0], now=0.0, ahead=1)  # t=8, done at 28
    10.0
    """
    got = first_release(releases, free_cores, ahead)
    if got is None or got[1] <= 0:
        return 0.0
    start, cores = got
    use = min(cores, job.best_cores, len(job.profile))
    finish = max(start, now) + overhead + remaining_time(job.profile, use, job.progress)
    return float(job.curve.value_at(finish - job.arrival))
