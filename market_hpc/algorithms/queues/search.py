"""Simulation-driven searches (Kondameedi & Vadhiyar): partition samples, utilisation lower bounds,
DQR split/merge and hybrid pool carving.

Every search takes an ``evaluate(configs) -> [Evaluation]`` function that simulates the
history under each configuration (the experiment layer runs those simulations,
possibly in parallel). Partition sizes are in nodes; requests in cores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from market_hpc.algorithms.queues.partitions import apportion, cpu_hours, route_all
from market_hpc.domain.queues import INF, QueueConfig, QueueSpec


@dataclass(frozen=True)
class Evaluation:
    """Simulated history under one configuration (partitioned queues only).

    Attributes:
        waits: Mean wait (s) per queue; ``nan`` for reservation queues or no jobs.
        counts: Jobs per queue.
        utilisations: Busy share of each queue's partition.
        job_waits: Wait (s) of every history job, in history order (``nan``: a
            reservation queue's or unrouted job); ``None`` when not simulated per job.
    """

    waits: tuple[float, ...]
    counts: tuple[int, ...]
    utilisations: tuple[float, ...]
    job_waits: np.ndarray | None = field(default=None, compare=False)

    @property
    def overall(self) -> float:
        """Job-weighted mean wait over the partitioned queues' jobs (not a mean of queue means).

        >>> Evaluation((10.0, float("nan"), 40.0), (3, 5, 1), (0.5, 0.0, 0.5)).overall
        17.5
        """
        pairs = [(w, n) for w, n in zip(self.waits, self.counts) if n and not math.isnan(w)]
        jobs = sum(n for _, n in pairs)
        return sum(w * n for w, n in pairs) / jobs if jobs else 0.0


Evaluate = Callable[[Sequence[QueueConfig]], list[Evaluation]]


@dataclass(frozen=True)
class History:
    """The history period's jobs as columns (requests in cores, times in seconds)."""

    cores: np.ndarray
    estimate: np.ndarray
    run: np.ndarray

    def per_queue(self, config: QueueConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Queue index per job, CPU hours per queue, largest request (cores) per queue."""
        queue_of = route_all(config, self.cores, self.estimate)
        hours = cpu_hours(self.cores, self.run, queue_of, len(config.queues))
        largest = np.zeros(len(config.queues), dtype=np.int64)
        valid = queue_of >= 0
        np.maximum.at(largest, queue_of[valid], self.cores[valid])
        return queue_of, hours, largest


def nodes_for(cores: int, cores_per_node: int) -> int:
    """Nodes needed for ``cores`` cores (at least 1).

    >>> nodes_for(33, 16), nodes_for(0, 16)
    (3, 1)
    """
    return max(1, -(-int(cores) // cores_per_node))


def sample_partitions(
    rng: np.random.Generator,
    count: int,
    lower: Sequence[int],
    total: int,
    include: Sequence[Sequence[int]] = (),
) -> list[tuple[int, ...]]:
    """``count`` distinct partition sets with sum ``total`` and each size >= ``lower``
    (not in the paper): the ``include`` points first, then Dirichlet(1) draws of the slack.

    >>> sets = sample_partitions(np.random.default_rng(1), 5, [2, 3], 10)
    >>> len(sets), all(sum(s) == 10 and s[0] >= 2 and s[1] >= 3 for s in sets)
    (5, True)
    """
    slack = total - sum(lower)
    chosen: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    for point in include:
        key = tuple(int(v) for v in point)
        if key not in seen and sum(key) == total:
            seen.add(key)
            chosen.append(key)
    attempts = 0
    while len(chosen) < count and attempts < 50 * count:
        attempts += 1
        share = apportion(slack, rng.dirichlet(np.ones(len(lower))).tolist())
        key = tuple(lo + s for lo, s in zip(lower, share))
        if key not in seen:
            seen.add(key)
            chosen.append(key)
    return chosen


def knee(grid: Sequence[int], utils: Sequence[float], tau: float = 0.9) -> int:
    """The last grid size before the utilisation first drops below ``tau`` x its peak.

    A queue whose utilisation never rises above zero (no jobs, or none that ever
    runs) keeps the grid's first size, its minimum: "below 0.9 x 0" is never true, so
    without this rule an idle queue would run to the top of its grid.

    >>> knee([2, 4, 6, 8], [0.8, 0.8, 0.75, 0.5]), knee([2, 4, 6], [0.0, 0.0, 0.0])
    (6, 2)
    """
    peak = max(utils, default=0.0)
    chosen = grid[0]
    if peak <= 0.0:
        return chosen
    for size, util in zip(grid, utils):
        if util < tau * peak:
            break
        chosen = size
    return chosen


def utilisation_bounds(
    config: QueueConfig,
    evaluate: Evaluate,
    minimum: Sequence[int],
    total: int,
    points: int = 8,
    tau: float = 0.9,
) -> tuple[int, ...]:
    """lb_i of Eq. 4 (``tau_util`` = 90% of the maximum utilisation).

    Queue i alone is simulated on a grid of sizes from its largest request up to what
    the others' largest requests leave; lb_i is the last grid size before the
    utilisation first drops below ``tau`` x its maximum. When the bounds add up to
    more than ``total``, their excess over the minimums is scaled down to fit.
    """
    owners = [i for i, q in enumerate(config.queues) if not q.reservation]
    bounds = [0 if config.queues[i].reservation else minimum[i] for i in range(len(config.queues))]
    grids = {}
    configs = []
    for i in owners:
        top = total - sum(minimum[j] for j in owners if j != i)
        grid = sorted(
            {round(float(v)) for v in np.linspace(minimum[i], max(minimum[i], top), points)}
        )
        grids[i] = grid
        for size in grid:
            sizes = list(bounds)
            sizes[i] = size
            configs.append(config.with_partitions(tuple(sizes), 0))
    results = iter(evaluate(configs))
    for i in owners:
        bounds[i] = knee(grids[i], [next(results).utilisations[i] for _ in grids[i]], tau)
    excess = sum(bounds[i] - minimum[i] for i in owners)
    room = total - sum(minimum[i] for i in owners)
    if excess > room:
        scaled = apportion(room, [bounds[i] - minimum[i] for i in owners])
        for i, extra in zip(owners, scaled):
            bounds[i] = minimum[i] + extra
    return tuple(bounds)


def split_queue(
    config: QueueConfig, index: int, history: History, cores_per_node: int, method: str
) -> QueueConfig | None:
    """Split queue ``index`` by ``runtime`` (halve the wall range), ``cpu_hours`` or
    ``jobs`` (cut the core range where the sorted requests reach half the CPU hours or
    half the jobs; equal requests stay together); nodes are divided by the CPU hours
    of the two halves (§II-B). ``None`` when the split is degenerate (e.g. an empty half).
    """
    queue = config.queues[index]
    queue_of, _, _ = history.per_queue(config)
    mine = queue_of == index
    cores, est, run = history.cores[mine], history.estimate[mine], history.run[mine]
    if len(cores) < 2:
        return None
    lineage = tuple(sorted({*queue.splits, queue.name}))
    if method == "runtime":
        limit = queue.max_wall if queue.max_wall != INF else float(est.max())
        cut = math.floor((queue.min_wall + limit) / 2)
        if not queue.min_wall <= cut < min(limit, queue.max_wall):
            return None
        first = replace(queue, name=f"{queue.name}.1", max_wall=float(cut), splits=lineage)
        second = replace(queue, name=f"{queue.name}.2", min_wall=float(cut + 1), splits=lineage)
    else:
        order = np.argsort(cores, kind="stable")
        weight = (cores * run)[order] if method == "cpu_hours" else np.ones(len(cores))
        reach = np.searchsorted(np.cumsum(weight), weight.sum() / 2)
        cut = int(cores[order][min(reach, len(cores) - 1)])
        if cut >= queue.max_cores or cut >= int(cores.max()):
            return None
        first = replace(queue, name=f"{queue.name}.1", max_cores=cut, splits=lineage)
        second = replace(queue, name=f"{queue.name}.2", min_cores=cut + 1, splits=lineage)
    in_first = np.array([first.accepts(int(c), float(e)) for c, e in zip(cores, est)])
    if in_first.all() or not in_first.any():
        return None
    hours = [float((cores * run)[in_first].sum()), float((cores * run)[~in_first].sum())]
    need = [
        nodes_for(int(cores[in_first].max()), cores_per_node),
        nodes_for(int(cores[~in_first].max()), cores_per_node),
    ]
    size = config.partitions[index]
    if sum(need) > size:
        return None
    shares = apportion(size, hours, need)
    queues = config.queues[:index] + (first, second) + config.queues[index + 1 :]
    partitions = config.partitions[:index] + shares + config.partitions[index + 1 :]
    return replace(config, queues=queues, partitions=partitions)


def can_merge(a: QueueSpec, b: QueueSpec) -> bool:
    """§II-B merge feasibility: core and wall ranges adjacent or overlapping (integer
    ranges: touching counts), no reservation queue, and not two parts of one
    split ("previously split queues should not be merged"): no split queue in common
    in their ancestries, so halves are not merged back through a third queue either.

    >>> can_merge(QueueSpec("s", 1, 1032), QueueSpec("m", 1033, 8208))
    True
    >>> can_merge(QueueSpec("a.1", 1, 4, splits=("a",)), QueueSpec("a.2", 5, 8, splits=("a",)))
    False
    >>> can_merge(QueueSpec("a.1+b", 1, 9, splits=("a",)), QueueSpec("a.2", 5, 8, splits=("a",)))
    False
    """
    if a.reservation or b.reservation or set(a.splits) & set(b.splits):
        return False
    cores_touch = max(a.min_cores, b.min_cores) <= min(a.max_cores, b.max_cores) + 1
    wall_touch = max(a.min_wall, b.min_wall) <= min(a.max_wall, b.max_wall) + 1
    return cores_touch and wall_touch


def merge_queues(config: QueueConfig, i: int, j: int) -> QueueConfig:
    """Replace queues ``i < j`` by their bounding box owning both partitions (it
    inherits both ancestries' splits)."""
    a, b = config.queues[i], config.queues[j]
    merged = QueueSpec(
        f"{a.name}+{b.name}",
        min(a.min_cores, b.min_cores),
        max(a.max_cores, b.max_cores),
        min(a.min_wall, b.min_wall),
        max(a.max_wall, b.max_wall),
        max(a.priority, b.priority),
        splits=tuple(sorted({*a.splits, *b.splits})),
    )
    queues = list(config.queues)
    partitions = list(config.partitions)
    queues[i], partitions[i] = merged, partitions[i] + partitions[j]
    del queues[j], partitions[j]
    return replace(config, queues=tuple(queues), partitions=tuple(partitions))


def within_limits(
    before: Evaluation,
    after: Evaluation,
    members: Sequence[np.ndarray],
    degradation: float,
    floor: float,
) -> bool:
    """Whether no job group (the jobs of one queue before a merge) waits on average
    more than ``1 + degradation`` times what it waited before (at least ``floor``
    seconds): a merge may not buy a lower overall wait with one queue's jobs.

    >>> before = Evaluation((100.0, 10.0), (1, 1), (0, 0), np.array([100.0, 10.0]))
    >>> after = Evaluation((40.0,), (2,), (0,), np.array([10.0, 70.0]))
    >>> within_limits(before, after, [np.array([0]), np.array([1])], 0.3, 60.0)
    True
    >>> within_limits(before, after, [np.array([0]), np.array([1])], 0.3, 0.0)
    False
    """
    if before.job_waits is None or after.job_waits is None:
        return True
    for group in members:
        if len(group):
            was = float(np.mean(before.job_waits[group]))
            now = float(np.mean(after.job_waits[group]))
            if now > (1 + degradation) * max(was, floor):
                return False
    return True


@dataclass
class DqrLog:
    """What DQR did: splits tried/kept, merges tried/kept, merges refused by a
    queue's degradation limit or blocked as parts of one split."""

    splits_tried: int = 0
    splits_kept: int = 0
    merges_tried: int = 0
    merges_kept: int = 0
    merges_over_limit: int = 0
    merges_split_blocked: int = 0


def dqr(
    config: QueueConfig,
    history: History,
    evaluate: Evaluate,
    cores_per_node: int,
    max_queues: int = 8,
    degradation: float = 0.30,
    floor: float = 60.0,
    log: DqrLog | None = None,
) -> tuple[QueueConfig, float]:
    """Phase 2 (DQR): greedy splits (best of three methods, kept while the overall wait
    falls, a kept split's first half tried again), then greedy merges: the feasible
    merge with the lowest overall wait among those keeping each merged queue's jobs
    within ``degradation`` of their wait before, while the overall wait falls. Returns
    the configuration and its simulated overall wait."""
    log = log if log is not None else DqrLog()
    current = config
    best = evaluate([current])[0].overall
    index = 0
    while index < len(current.queues) and len(current.queues) < max_queues:
        if current.queues[index].reservation:
            index += 1
            continue
        candidates = [
            c
            for m in ("runtime", "cpu_hours", "jobs")
            if (c := split_queue(current, index, history, cores_per_node, m)) is not None
        ]
        scores = [e.overall for e in evaluate(candidates)] if candidates else []
        log.splits_tried += len(candidates)
        if scores and min(scores) < best:
            position = int(np.argmin(scores))
            current, best = candidates[position], scores[position]
            log.splits_kept += 1
        else:
            index += 1
    while True:
        queues = current.queues
        pairs = []
        for i in range(len(queues)):
            for j in range(i + 1, len(queues)):
                if can_merge(queues[i], queues[j]):
                    pairs.append((i, j))
                elif set(queues[i].splits) & set(queues[j].splits):
                    log.merges_split_blocked += 1
        if not pairs:
            break
        before = evaluate([current])[0]
        queue_of, _, _ = history.per_queue(current)
        candidates = [merge_queues(current, i, j) for i, j in pairs]
        results = evaluate(candidates)
        log.merges_tried += len(candidates)
        allowed = []
        for (i, j), result in zip(pairs, results):
            members = [np.flatnonzero(queue_of == i), np.flatnonzero(queue_of == j)]
            if within_limits(before, result, members, degradation, floor):
                allowed.append(result.overall)
            else:
                allowed.append(math.inf)
                log.merges_over_limit += 1
        position = int(np.argmin(allowed))
        if allowed[position] >= best:
            break
        current, best = candidates[position], allowed[position]
        log.merges_kept += 1
    return current, best


def carve_pool(
    config: QueueConfig,
    history: History,
    evaluate: Evaluate,
    cores_per_node: int,
    chunk: int = 1,
    degradation: float = 0.30,
    floor: float = 60.0,
    stats: dict[str, int] | None = None,
) -> QueueConfig:
    """The hybrid pool (§III): shrink each partition by ``chunk`` nodes at a time while
    its queue's simulated mean wait stays within ``1 + degradation`` of the original
    (at least ``floor`` seconds, so a zero wait can shrink) and never below its largest request;
    the removed chunks form the pool.

    Speed-up (not the paper's): the largest allowed reduction of every queue is found by a
    bisection run for all queues at once (queues are independent when partitioned);
    then, while the overall wait exceeds ``1 + degradation`` times the original,
    one chunk is handed back round-robin (the paper's global stop rule; it acts only
    when the queues are coupled or a queue's wait is under the ``floor``: otherwise
    every queue within its own limit keeps the job-weighted mean within it too).
    ``stats`` receives the chunks kept and the chunks the global stop handed back.
    """
    owners = [i for i, q in enumerate(config.queues) if not q.reservation]
    base = evaluate([config])[0]
    _, _, largest = history.per_queue(config)
    allowed = {
        i: (1 + degradation) * max(base.waits[i] if base.counts[i] else 0.0, floor) for i in owners
    }
    top = {
        i: max(0, (config.partitions[i] - nodes_for(int(largest[i]), cores_per_node)) // chunk)
        for i in owners
    }
    low = {i: 0 for i in owners}
    high = dict(top)

    def shrunk(cuts: dict[int, int]) -> QueueConfig:
        sizes = list(config.partitions)
        for i, k in cuts.items():
            sizes[i] -= k * chunk
        return replace(
            config, mode="hybrid", partitions=tuple(sizes), pool=sum(cuts.values()) * chunk
        )

    while any(low[i] < high[i] for i in owners):
        probe = {i: (low[i] + high[i] + 1) // 2 for i in owners}
        result = evaluate([shrunk(probe)])[0]
        for i in owners:
            if low[i] < high[i]:
                if result.waits[i] <= allowed[i] or not result.counts[i]:
                    low[i] = probe[i]
                else:
                    high[i] = probe[i] - 1
    cuts = dict(low)
    limit = (1 + degradation) * max(base.overall, floor)
    order = sorted(owners, key=lambda i: config.partitions[i])
    handed_back = 0
    while sum(cuts.values()) and evaluate([shrunk(cuts)])[0].overall > limit:
        for i in order:
            if cuts[i]:
                cuts[i] -= 1
                handed_back += 1
    if stats is not None:
        stats["pool_chunks"] = sum(cuts.values())
        stats["global_stop_chunks"] = handed_back
    return shrunk(cuts)
