"""Queue routing, proportional partitioning (Eq. 7) and node layout (adaptive hybrid queues).

Pure functions over plain data: no Mesa, no model. Kondameedi & Vadhiyar, "Adaptive
Hybrid Queue Configuration for Supercomputer Systems" (``../shared/seeds/004``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from market_hpc.domain.queues import INF, QueueConfig, QueueSpec
from market_hpc.errors import ConfigError

HOUR = 3600.0
SERC_CORES = 35232
# Table I of the paper (cores, wall seconds); *large* runs through advance reservations.
SERC_TABLE1 = (
    ("idqueue", 8, 256, 0.0, 2 * HOUR),
    ("small", 24, 1032, 0.0, 24 * HOUR),
    ("small72", 24, 1032, 24 * HOUR, 72 * HOUR),
    ("medium", 1033, 8208, 0.0, 24 * HOUR),
    ("large", 8209, 22800, 0.0, 24 * HOUR),
)


def specificity(queue: QueueSpec) -> tuple[float, float]:
    """Sort key of the routing rule: narrower core range first, then narrower wall range.

    >>> specificity(QueueSpec("a", 1, 8, 0, 7200)) < specificity(QueueSpec("b", 1, 64))
    True
    """
    return (queue.max_cores - queue.min_cores, queue.max_wall - queue.min_wall)


def route(config: QueueConfig, cores: int, estimate: float) -> int:
    """Index of the queue a request goes to, or -1 when no queue (nor catch-all) takes it.

    Among the queues whose ranges contain the request the most specific one wins
    (overlapping ranges, e.g. idqueue inside small, after merges), ties in list order.
    A request no queue contains goes to ``config.catch_all`` when there is one.

    >>> cfg = QueueConfig((QueueSpec("id", 1, 8, 0, 7200), QueueSpec("small", 1, 64)),
    ...                   partitions=(1, 1))
    >>> route(cfg, 4, 3600), route(cfg, 4, 9000), route(cfg, 100, 60)
    (0, 1, -1)
    """
    best = -1
    best_key: tuple[float, float] | None = None
    for index, queue in enumerate(config.queues):
        if queue.accepts(cores, estimate):
            key = specificity(queue)
            if best_key is None or key < best_key:
                best, best_key = index, key
    if best < 0 and config.catch_all is not None:
        return config.names.index(config.catch_all)
    return best


def route_all(config: QueueConfig, cores: np.ndarray, estimates: np.ndarray) -> np.ndarray:
    """``route`` over arrays of requests (one queue index per job, -1 unrouted).

    >>> cfg = QueueConfig((QueueSpec("id", 1, 8, 0, 7200), QueueSpec("small", 1, 64)),
    ...                   partitions=(1, 1))
    >>> route_all(cfg, np.array([4, 4, 100]), np.array([3600.0, 9000.0, 60.0])).tolist()
    [0, 1, -1]
    """
    result = np.full(len(cores), -1, dtype=np.int64)
    order = sorted(range(len(config.queues)), key=lambda i: (specificity(config.queues[i]), i))
    for index in reversed(order):  # the most specific queue writes last
        queue = config.queues[index]
        accepts = (
            (cores >= queue.min_cores)
            & (cores <= queue.max_cores)
            & (estimates >= queue.min_wall)
            & (estimates <= queue.max_wall)
        )
        result[accepts] = index
    if config.catch_all is not None:
        result[result < 0] = config.names.index(config.catch_all)
    return result


def unroutable_message(config: QueueConfig, job_id: int, cores: int, estimate: float) -> str:
    """The load-time error for a job no queue accepts: the job and every queue's ranges."""
    ranges = "; ".join(q.describe() for q in config.queues)
    return (
        f"job {job_id} ({cores} cores, estimate {estimate / HOUR:g} h) fits no queue of "
        f"configuration {config.label or config.mode!r}: {ranges}; widen a range or set catch_all"
    )


def cpu_hours(
    cores: np.ndarray, run_times: np.ndarray, queue_of: np.ndarray, n_queues: int
) -> np.ndarray:
    """CPU hours per queue (Eq. 5): sum of cores x run time over each queue's jobs.

    >>> cpu_hours(np.array([2, 4, 1]), np.array([3600.0, 1800.0, 7200.0]), np.array([0, 0, 1]), 3)
    array([4., 2., 0.])
    """
    valid = queue_of >= 0
    return np.bincount(
        queue_of[valid], weights=cores[valid] * run_times[valid] / HOUR, minlength=n_queues
    )


def apportion(
    total: int, weights: Sequence[float], minimum: Sequence[int] | None = None
) -> tuple[int, ...]:
    """Split ``total`` integer units in proportion to ``weights`` (largest remainder),
    giving each share at least ``minimum`` and renormalising the others (every queue fits its jobs).

    This is Eq. 7, P_q = P x CPU_hr(q) / sum CPU_hr, made integral and feasible.

    >>> apportion(100, [57.0, 22.0, 21.0])                 # the paper's Jan'16 PP shares
    (57, 22, 21)
    >>> apportion(10, [1.0, 1.0, 1.0])
    (4, 3, 3)
    >>> apportion(100, [98.0, 1.0, 1.0], minimum=[0, 10, 5])
    (85, 10, 5)

    Raises:
        ConfigError: when the minimums exceed ``total``.
    """
    n = len(weights)
    floor = [int(m) for m in (minimum or [0] * n)]
    if sum(floor) > total:
        raise ConfigError(f"minimum shares {floor} exceed the {total} units to share")
    weight = np.maximum(np.asarray(weights, dtype=float), 0.0)
    if weight.sum() <= 0:
        weight = np.ones(n)
    fixed = np.zeros(n, dtype=bool)
    while True:  # water-filling: shares under their minimum are pinned there
        free_total = total - sum(f for f, pinned in zip(floor, fixed) if pinned)
        free_weight = weight[~fixed].sum()
        ideal = np.where(
            fixed,
            np.asarray(floor, dtype=float),
            free_total * weight / free_weight if free_weight > 0 else 0.0,
        )
        under = (~fixed) & (ideal < np.asarray(floor))
        if not under.any():
            break
        fixed |= under
    shares = np.floor(ideal + 1e-9).astype(int)
    remainders = ideal - shares
    for index in sorted(range(n), key=lambda i: (-remainders[i], i))[: total - int(shares.sum())]:
        shares[index] += 1
    return tuple(int(s) for s in shares)


def proportional_partitions(
    config: QueueConfig,
    n_nodes: int,
    hours: Sequence[float],
    min_nodes: Sequence[int],
) -> tuple[int, ...]:
    """Eq. 7 over the partitioned queues: nodes in proportion to CPU hours, each at
    least ``min_nodes`` (the largest request seen); reservation queues get 0."""
    owners = [i for i, q in enumerate(config.queues) if not q.reservation]
    shares = apportion(n_nodes, [hours[i] for i in owners], [min_nodes[i] for i in owners])
    sizes = [0] * len(config.queues)
    for index, share in zip(owners, shares):
        sizes[index] = share
    return tuple(sizes)


def layout(
    config: QueueConfig, n_nodes: int
) -> tuple[tuple[tuple[int, int], ...], tuple[int, int]]:
    """Node index ranges ``[lo, hi)`` per queue and of the pool.

    Partitions are contiguous in queue order, the pool after them. In ``shared`` mode
    every queue (reservation ones too) schedules on all nodes; reservation queues get
    the whole machine in every mode.

    >>> cfg = QueueConfig((QueueSpec("a", 1, 2), QueueSpec("b", 3, 4),
    ...                    QueueSpec("big", 5, 9, reservation=True)),
    ...                   mode="hybrid", partitions=(2, 3, 0), pool=1)
    >>> layout(cfg, 6)
    (((0, 2), (2, 5), (0, 6)), (5, 6))

    Raises:
        ConfigError: when partitions and pool need more nodes than the platform has.
    """
    if config.mode == "shared":
        return tuple((0, n_nodes) for _ in config.queues), (n_nodes, n_nodes)
    if config.used_nodes > n_nodes:
        raise ConfigError(
            f"configuration {config.label or config.mode!r} needs {config.used_nodes} nodes "
            f"(partitions {config.partitions}, pool {config.pool}), the platform has {n_nodes}"
        )
    ranges = []
    start = 0
    for queue, size in zip(config.queues, config.partitions):
        if queue.reservation:
            ranges.append((0, n_nodes))
        else:
            ranges.append((start, start + size))
            start += size
    return tuple(ranges), (start, start + config.pool)


def scaled_table1(total_cores: int, open_wall: bool = True) -> tuple[QueueSpec, ...]:
    """The SERC Table I queues rescaled from 35,232 cores to ``total_cores`` (SERC log not public).

    Core limits scale proportionally and are made contiguous from 1 core, so every
    request routes somewhere: idqueue [1, s(256)] <= 2 h, small [1, s(1032)] <= 24 h,
    small72 [1, s(1032)] > 24 h, medium [s(1032)+1, s(8208)], large [s(8208)+1, total]
    (advance reservations). With ``open_wall`` the longest wall limits (small72,
    medium, large) are lifted, because the archive traces request far longer wall
    times than SERC allows; otherwise they keep Table I's 72 h / 24 h / 24 h.

    >>> [q.describe() for q in scaled_table1(35232)][:2]
    ['idqueue[cores 1-256, wall 0-2 h]', 'small[cores 1-1032, wall 0-24 h]']
    """

    def scale(cores: int) -> int:
        return max(1, round(cores * total_cores / SERC_CORES))

    small_max = scale(1032)
    medium_max = max(small_max + 1, scale(8208))
    id_max = min(scale(256), small_max)
    long_wall = INF if open_wall else 72 * HOUR
    day_wall = INF if open_wall else 24 * HOUR
    return (
        QueueSpec("idqueue", 1, id_max, 0.0, 2 * HOUR),
        QueueSpec("small", 1, small_max, 0.0, 24 * HOUR),
        QueueSpec("small72", 1, small_max, 24 * HOUR + 1, long_wall),
        QueueSpec("medium", small_max + 1, medium_max, 0.0, day_wall),
        QueueSpec(
            "large",
            medium_max + 1,
            max(medium_max + 1, total_cores),
            0.0,
            day_wall,
            reservation=True,
        ),
    )


def default_config(mode: str, n_nodes: int, total_cores: int) -> QueueConfig:
    """A small three-queue configuration for any platform (the registered dispatchers'
    default when none is given): *narrow* (<= 1/8 of the cores), *wide* (<= 1/2) and
    *large* (advance reservations); partitions halve the nodes, a hybrid pool takes a
    quarter of them.

    >>> default_config("hybrid", 8, 32).describe()  # doctest: +NORMALIZE_WHITESPACE
    'hybrid (hybrid): narrow[cores 1-4, wall 0-inf h]=3, wide[cores 5-16, wall 0-inf h]=3,
     large[cores 17-32, wall 0-inf h]=reservation, pool=2'
    """
    narrow = max(1, total_cores // 8)
    wide = max(narrow + 1, total_cores // 2)
    queues = (
        QueueSpec("narrow", 1, narrow),
        QueueSpec("wide", narrow + 1, wide),
        QueueSpec("large", wide + 1, max(wide + 1, total_cores), reservation=True),
    )
    if mode == "shared" or n_nodes < 3:
        return QueueConfig(queues, mode="shared", label="shared")
    pool = max(1, n_nodes // 4) if mode == "hybrid" else 0
    first = math.ceil((n_nodes - pool) / 2)
    return QueueConfig(
        queues, mode=mode, partitions=(first, n_nodes - pool - first, 0), pool=pool, label=mode
    )
