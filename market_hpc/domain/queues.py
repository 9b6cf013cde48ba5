"""Frozen records of a multi-queue configuration (Kondameedi & Vadhiyar).

A :class:`QueueSpec` is one batch queue: a request-size range (cores), a wall-time range
(seconds, on the job's estimate: what is known at submission), a priority and, for
queues created by DQR splits, the name of the queue it was split from. A
:class:`QueueConfig` adds how the machine is shared: ``partitioned`` (each queue owns a
disjoint block of nodes), ``shared`` (non-partitioned: every queue schedules on the whole
machine) or ``hybrid`` (partitions plus a common pool at the end of the node range).
Queues marked ``reservation`` (the paper's *large* queue) own no partition: their jobs run
machine-wide through an advance reservation.

Partitions are counted in nodes and laid out as contiguous node index ranges in queue
order, the pool last (``market_hpc.algorithms.queues.partitions.layout``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from market_hpc.errors import ConfigError

MODES = ("partitioned", "shared", "hybrid")
INF = math.inf


@dataclass(frozen=True)
class QueueSpec:
    """One queue.

    Attributes:
        name: Unique name.
        min_cores: Smallest request (cores) it accepts.
        max_cores: Largest request it accepts.
        min_wall: Shortest estimate (seconds) it accepts (closed interval).
        max_wall: Longest estimate it accepts; ``inf`` for no limit.
        priority: Queue priority (the hybrid pool's priority factor multiplies by it).
        reservation: Jobs run machine-wide through an advance reservation instead of
            a partition (the paper's *large* queue).
        splits: Names of every queue split in this one's ancestry (DQR's splits and
            the merges of their halves inherit them): two queues sharing one are
            halves of a split, which DQR never merges back, directly or through a third.
    """

    name: str
    min_cores: int
    max_cores: int
    min_wall: float = 0.0
    max_wall: float = INF
    priority: float = 1.0
    reservation: bool = False
    splits: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.min_cores <= self.max_cores:
            raise ConfigError(
                f"queue {self.name!r}: need 1 <= min_cores <= max_cores, "
                f"got {self.min_cores}..{self.max_cores}"
            )
        if not 0 <= self.min_wall <= self.max_wall:
            raise ConfigError(
                f"queue {self.name!r}: need 0 <= min_wall <= max_wall, "
                f"got {self.min_wall}..{self.max_wall}"
            )
        if self.priority <= 0:
            raise ConfigError(f"queue {self.name!r}: priority must be > 0, got {self.priority}")

    def accepts(self, cores: int, estimate: float) -> bool:
        """Whether a request of ``cores`` cores and ``estimate`` seconds is in range."""
        return (
            self.min_cores <= cores <= self.max_cores and self.min_wall <= estimate <= self.max_wall
        )

    def describe(self) -> str:
        """``name[cores a-b, wall c-d h]`` for messages and reports."""
        wall = "inf" if self.max_wall == INF else f"{self.max_wall / 3600:g}"
        return (
            f"{self.name}[cores {self.min_cores}-{self.max_cores}, wall "
            f"{self.min_wall / 3600:g}-{wall} h]"
        )


@dataclass(frozen=True)
class QueueConfig:
    """A full queue configuration.

    Attributes:
        queues: The queues, in list (adjacency) order; partitions are laid out in it.
        mode: ``partitioned``, ``shared`` or ``hybrid``.
        partitions: Nodes per queue (0 for reservation queues; ignored in ``shared``).
        pool: Nodes of the common pool (``hybrid`` only).
        tau_pf: Priority-factor threshold for pool access (Table III: 0.5 x the
            priority of *medium*; with all priorities 1 it is 0.5, the default).
        catch_all: Name of the queue that takes jobs no queue accepts; ``None``: such
            a job is an error at load.
        label: Free text naming how the configuration was made (``static``, ``dqr``...).
    """

    queues: tuple[QueueSpec, ...]
    mode: str = "partitioned"
    partitions: tuple[int, ...] = ()
    pool: int = 0
    tau_pf: float = 0.5
    catch_all: str | None = None
    label: str = ""
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.queues:
            raise ConfigError("a queue configuration needs at least one queue")
        if self.mode not in MODES:
            raise ConfigError(f"queue mode {self.mode!r} is not one of {', '.join(MODES)}")
        names = [q.name for q in self.queues]
        if len(set(names)) != len(names):
            raise ConfigError(f"queue names must be unique, got {names}")
        if self.mode != "shared" and len(self.partitions) != len(self.queues):
            raise ConfigError(
                f"{self.mode} mode needs one partition size per queue "
                f"({len(self.queues)}), got {self.partitions}"
            )
        if any(p < 0 for p in self.partitions) or self.pool < 0:
            raise ConfigError(
                f"partition and pool sizes must be >= 0, got {self.partitions}, pool {self.pool}"
            )
        if self.mode != "hybrid" and self.pool:
            raise ConfigError(
                f"only hybrid mode has a pool, got pool={self.pool} in {self.mode} mode"
            )
        if self.catch_all is not None and self.catch_all not in names:
            raise ConfigError(
                f"catch_all {self.catch_all!r} is not a queue; queues: {', '.join(names)}"
            )
        if self.mode != "shared":
            for queue, size in zip(self.queues, self.partitions):
                if not queue.reservation and size < 1:
                    raise ConfigError(
                        f"queue {queue.name!r} owns no nodes; give it a partition "
                        "or mark it reservation = true"
                    )

    @property
    def names(self) -> tuple[str, ...]:
        """Queue names in list order."""
        return tuple(q.name for q in self.queues)

    @property
    def used_nodes(self) -> int:
        """Nodes the layout needs (partitions plus pool; 0 in shared mode)."""
        return 0 if self.mode == "shared" else sum(self.partitions) + self.pool

    def with_partitions(self, partitions: tuple[int, ...], pool: int | None = None) -> QueueConfig:
        """A copy with other partition (and pool) sizes."""
        return replace(
            self,
            partitions=tuple(int(p) for p in partitions),
            pool=self.pool if pool is None else int(pool),
        )

    def describe(self) -> str:
        """One line: mode, queues with their node counts, pool."""
        if self.mode == "shared":
            parts = ", ".join(q.describe() for q in self.queues)
        else:
            parts = ", ".join(
                f"{q.describe()}={'reservation' if q.reservation else p}"
                for q, p in zip(self.queues, self.partitions)
            )
        pool = f", pool={self.pool}" if self.mode == "hybrid" else ""
        return f"{self.label or self.mode} ({self.mode}): {parts}{pool}"
