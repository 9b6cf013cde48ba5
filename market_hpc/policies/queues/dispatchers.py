"""Multi-queue dispatchers (Kondameedi & Vadhiyar): EASY inside each partition, a hybrid common pool
and advance reservations for the large queue.

One dispatcher serves the three modes of a :class:`~market_hpc.domain.queues.QueueConfig`:

* ``partitioned``: each queue's jobs run EASY (its own head reservation, backfilling)
  on the allocator's view of its partition's nodes only.
* ``shared`` (non-partitioned): all queues' jobs run one EASY on the whole machine.
* ``hybrid``: partitions as above; then a waiting job whose priority factor
  (slowdown x queue priority, §III) exceeds ``tau_pf`` and that does not fit its
  partition's free cores runs entirely on the common pool (no pool + partition mix), highest factor
  first, without pool reservations.

Jobs of ``reservation`` queues (the paper's *large* queue), and jobs larger than their
partition can ever hold, are served machine-wide in arrival order: the first that does
not fit gets an advance reservation computed from all running jobs' estimates (EASY-like,
machine-wide), and partition and pool jobs may then only start if they end before it or use
the cores it leaves spare.

The configuration is given to the constructor (``config=``) or switched by the model at
a reconfiguration (``configure``); without one, ``default_config`` of the platform is
used, so the registered names run on any platform (conformance suite).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import cast

import numpy as np

from market_hpc.algorithms.allocation import units_fit
from market_hpc.algorithms.easy import (
    NO_RESERVATION,
    Reservation,
    easy_pass,
    may_backfill,
    needs,
    reservation,
    totals,
)
from market_hpc.algorithms.queue_columns import BackfillLimits, QueueColumns
from market_hpc.algorithms.queues.partitions import default_config, layout, route
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.domain.queues import QueueConfig
from market_hpc.policies.base import (
    NOTHING,
    Action,
    Allocation,
    Allocator,
    Decision,
    PolicyBase,
    RoutedQueue,
    RunningJob,
    Start,
    View,
    fast_view,
)
from market_hpc.policies.capabilities import QUEUES_PARTITIONED, QUEUES_SHARED
from market_hpc.policies.queues.views import (
    Amounts,
    GroupJobs,
    RunningReleases,
    SubView,
    sub_platform,
)
from market_hpc.policies.registry import register_scheduler
from market_hpc.policies.scratch import take_dense

INF = float("inf")


class QueueDispatcher(PolicyBase):
    """The hybrid-queue dispatcher; see the module docstring.

    Args:
        allocator: Places jobs inside a partition, the pool or the whole machine.
        mode: Mode of the default configuration when ``config`` is None.
        config: The queue configuration in force.
    """

    # The per-job caches are pruned to the jobs in the system once they hold more than
    # twice those plus this many entries.
    prune_from = 1024
    # Partitioned/hybrid passes read the routed queue agent's per-queue lists and columns
    # (``_fast_groups``); False walks every waiting job instead (same schedules: a test and
    # ``benchmarks/queues_routing.py`` compare both).
    per_queue = True
    # A partition's backfilling walk uses its queue's columns past this many waiting jobs.
    columns_from = 64

    def __init__(
        self, allocator: Allocator, mode: str = "partitioned", config: QueueConfig | None = None
    ) -> None:
        self.allocator = allocator
        self.mode = mode
        self.name = f"queues-{mode}+{allocator.name}"
        self.config = config
        self.free_bb = 0.0  # burst buffer left in the current pass
        self._key: tuple[int, QueueConfig | None] | None = None

    def configure(self, config: QueueConfig) -> None:
        """Put another configuration in force (running jobs keep their nodes)."""
        self.config = config
        self._key = None

    def queue_config(self, platform: Platform) -> QueueConfig:
        """The configuration in force, or its mode's default on ``platform``."""
        return self.config or default_config(self.mode, platform.n_nodes, platform.total_cores)

    # ------------------------------------------------------------------ set-up
    def _prepare(self, view: View) -> None:
        platform = view.platform
        if self._key == (id(platform), self.config):
            return
        config = self.config or default_config(self.mode, platform.n_nodes, platform.total_cores)
        self.active = config
        ranges, pool = layout(config, platform.n_nodes)
        shared = config.mode == "shared"
        # groups: one node range per partition (one for the whole machine when shared), pool last
        self.groups: list[tuple[int, int]] = (
            [(0, platform.n_nodes)]
            if shared
            else [r for q, r in zip(config.queues, ranges) if not q.reservation]
        )
        self.group_of_queue = [0 if shared or q.reservation else -1 for q in config.queues]
        if not shared:
            owner = iter(range(len(self.groups)))
            self.group_of_queue = [-1 if q.reservation else next(owner) for q in config.queues]
        self.pool_group = len(self.groups) if config.mode == "hybrid" and pool[1] > pool[0] else -1
        if self.pool_group >= 0:
            self.groups.append(pool)
        self.node_group = np.full(platform.n_nodes, -1, dtype=np.int64)
        for index, (lo, hi) in enumerate(self.groups):
            self.node_group[lo:hi] = index
        self.platforms = [
            sub_platform(platform, lo, hi) if hi > lo else None for lo, hi in self.groups
        ]
        # Per waiting job: (its group, its queue's index); per running job: its releases.
        # Both are pruned to the jobs in the system once they outgrow them (``_prune``).
        self.home: dict[int, tuple[int, int]] = {}
        self.releases_of: dict[int, list[tuple[int, Amounts]]] = {}
        # Waiting machine-wide jobs in arrival order (the per-queue path, ``_fast_groups``).
        self.machine: dict[int, Job] = {}
        self._key = (id(platform), self.config)

    def _home(self, job: Job) -> int:
        """Group a job runs in (-1: machine-wide, advance reservation)."""
        known = self.home.get(job.job_id)
        if known is not None:
            return known[0]
        index = route(self.active, job.cores, job.estimate)
        group = self.group_of_queue[index] if index >= 0 else -1
        if group >= 0:
            platform = self.platforms[group]
            capacity = (
                platform.capacity if platform is not None else np.zeros((0, 4), dtype=np.int64)
            )
            if (
                int(units_fit(capacity, job.unit).sum()) < job.units
            ):  # (moldable: at its requested size)
                group = -1
        self.home[job.job_id] = (group, index)
        return group

    def _prune(self, view: View) -> None:
        """Forget the jobs that left the queue / stopped running, once the caches hold
        more than twice the jobs in the system (a long replay keeps them bounded)."""
        if len(self.home) > 2 * len(view.queue) + self.prune_from:
            home = self.home
            self.home = {job.job_id: home[job.job_id] for job in view.queue if job.job_id in home}
        if len(self.releases_of) > 2 * len(view.running) + self.prune_from:
            releases = self.releases_of
            self.releases_of = {r.seq: releases[r.seq] for r in view.running if r.seq in releases}

    def _parts(self, running: RunningJob) -> list[tuple[int, Amounts]]:
        """A running job's amounts per group (cached while it runs)."""
        parts = self.releases_of.get(running.seq)
        if parts is None:
            parts = self._split(running)
            self.releases_of[running.seq] = parts
        return parts

    def _split(self, running: RunningJob) -> list[tuple[int, Amounts]]:
        allocation = running.allocation
        first, last = self.node_group[allocation[0][0]], self.node_group[allocation[-1][0]]
        if first == last:
            return [] if first < 0 else [(int(first), totals(running.job.unit, running.units))]
        units: dict[int, int] = {}
        for node, count in allocation:
            group = int(self.node_group[node])
            if group >= 0:
                units[group] = units.get(group, 0) + count
        return [(g, totals(running.job.unit, u)) for g, u in units.items()]

    # ------------------------------------------------------------------ decide
    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Machine-wide (large) jobs, then EASY per partition, then the pool."""
        smallest = fast_view(view, "queue_min_cores")
        if smallest is not None and view.free_total[0] < smallest.queue_min_cores:
            return NOTHING  # every start takes a job's cores: nothing fits, skip the pass
        self._prepare(view)
        self._prune(view)
        routing = fast_view(view, "routed_queue") if self.per_queue else None
        routed = None if routing is None else routing.routed_queue
        if routed is not None and (
            self.active.mode == "shared" or routed.config is not self.active
        ):
            routed = None  # the per-queue lists serve only the configuration in force
        queues: list[Iterable[Job]]
        if routed is not None:
            machine_jobs, queues, columns = self._fast_groups(routed)
        else:
            machine_jobs, queues, columns = self._groups(view)
        free = view.free.copy()
        self.free_bb = view.free_bb  # what this pass's starts leave (``_take``)
        actions: list[Action] = []
        # Read lazily: a pass walks the running jobs (in expected-end order) only as far as
        # its shadow times need, and not at all when no partition has a core left after its
        # in-order starts and every machine-wide job fits.
        running_releases = RunningReleases(view.running, view.time, self._parts, len(self.groups))

        started: list[tuple[float, Amounts]] = []
        machine_wide = NO_RESERVATION
        now = view.time
        for job in machine_jobs:
            whole = SubView(view, view.platform, free, machine_jobs, self.free_bb)
            allocation = self.allocator.allocate(job, free, cast(View, whole))
            if allocation is None:
                free_total = tuple(free.sum(axis=0).tolist())
                machine_wide = reservation(
                    free_total, partial(running_releases.releases, -1), needs(job), sorted(started)
                )
                break
            self._take(free, job, allocation, view.exclusive)
            actions.append(Start(job.job_id, allocation))
            started.append((now + job.estimate, needs(job)))
        pool = self.pool_group
        for group, jobs in enumerate(queues):
            if group == pool:
                continue
            machine_wide = self._easy(
                view,
                group,
                jobs,
                free,
                partial(running_releases.releases, group),
                machine_wide,
                actions,
                columns[group],
            )
        # Partition jobs left waiting: the pool's candidates.
        waiting_for_pool: list[Job] = []
        if pool >= 0 and routed is not None:
            waiting_for_pool = self._pool_waiting(routed, free, actions)
        elif pool >= 0:
            taken = {action.job_id for action in actions if isinstance(action, Start)}
            waiting_for_pool = [
                job
                for group, jobs in enumerate(queues)
                if group != pool
                for job in jobs
                if job.job_id not in taken
            ]
        if pool >= 0 and waiting_for_pool:
            self._pool(view, waiting_for_pool, free, machine_wide, actions)
        return Decision(tuple(actions)) if actions else NOTHING

    def _groups(
        self, view: View
    ) -> tuple[list[Job], list[Iterable[Job]], list[QueueColumns | None]]:
        """Machine-wide jobs and each group's jobs, by one walk over every waiting job."""
        queues: list[list[Job]] = [[] for _ in self.groups]
        machine_jobs: list[Job] = []
        home = self.home
        for job in view.queue:
            known = home.get(job.job_id)
            group = known[0] if known is not None else self._home(job)
            (machine_jobs if group < 0 else queues[group]).append(job)
        return machine_jobs, list(queues), [None] * len(self.groups)

    def _fast_groups(
        self, routed: RoutedQueue
    ) -> tuple[list[Job], list[Iterable[Job]], list[QueueColumns | None]]:
        """The same groups from the routed queue agent's per-queue lists, without a walk
        over every waiting job: jobs that arrived since the last pass are the newest
        (a tail of the arrival order), so only they are routed; each partition's jobs are
        its queue agent's, in arrival order (oversized ones skipped: machine-wide), and
        its columns let the backfilling walk visit only the jobs that may start."""
        home = self.home
        fresh = []
        for job in reversed(routed.jobs.values()):
            if job.job_id in home:
                break
            fresh.append(job)
        for job in reversed(fresh):
            if self._home(job) < 0:
                self.machine[job.job_id] = job
        waiting = routed.queue_of
        machine_jobs = [job for job in self.machine.values() if job.job_id in waiting]
        if len(machine_jobs) < len(self.machine):
            self.machine = {job.job_id: job for job in machine_jobs}
        queues: list[Iterable[Job]] = [() for _ in self.groups]
        columns: list[QueueColumns | None] = [None] * len(self.groups)
        for queue, group in zip(self.active.queues, self.group_of_queue):
            if group >= 0:
                agent = routed.queues[queue.name]
                queues[group] = GroupJobs(agent.jobs, home, group)
                if len(agent.jobs) > self.columns_from:  # short queues: the plain walk is cheaper
                    columns[group] = agent.columns
        return machine_jobs, queues, columns

    def _pool_waiting(
        self, routed: RoutedQueue, free: np.ndarray, actions: list[Action]
    ) -> list[Job]:
        """Partition jobs still waiting after the partitions' passes (the pool's
        candidates), listed only when the pool has a free core."""
        lo, hi = self.groups[self.pool_group]
        if not free[lo:hi, 0].any():
            return []
        started = {action.job_id for action in actions if isinstance(action, Start)}
        home = self.home
        out = []
        for queue, group in zip(self.active.queues, self.group_of_queue):
            if group >= 0:
                out += [
                    job
                    for job in routed.queues[queue.name].jobs.values()
                    if home[job.job_id][0] == group and job.job_id not in started
                ]
        return out

    def _allocate(
        self, view: View, group: int, job: Job, free: np.ndarray, jobs: Iterable[Job]
    ) -> Allocation | None:
        lo, hi = self.groups[group]
        platform = self.platforms[group]
        if platform is None:
            return None
        block = free[lo:hi]
        part = SubView(view, platform, block, jobs, self.free_bb)
        allocation = self.allocator.allocate(job, block, cast(View, part))
        if allocation is None:
            return None
        return tuple((node + lo, units) for node, units in allocation)

    def _easy(
        self,
        view: View,
        group: int,
        jobs: Iterable[Job],
        free: np.ndarray,
        running: Callable[[], Iterator[tuple[float, Amounts]]],
        machine_wide: Reservation,
        actions: list[Action],
        columns: QueueColumns | None = None,
    ) -> Reservation:
        """EASY on one partition (:func:`~market_hpc.algorithms.easy.easy_pass`), honouring
        the machine-wide reservation; returns the reservation's remaining spare amounts.
        With the partition queue's ``columns`` the backfilling walk visits only the jobs
        that may start (the others would be skipped: ``QueueColumns.backfill_scan``)."""
        lo, hi = self.groups[group]
        home = self.home
        scan: Callable[[Job, float, BackfillLimits], Iterator[Job]] | None = None
        if columns is not None:
            now = view.time

            def scan(head: Job, shadow: float, limits: BackfillLimits) -> Iterator[Job]:
                return (
                    job
                    for job in columns.backfill_scan(head.job_id, now, shadow, limits)
                    if home[job.job_id][0] == group
                )

        def place(job: Job) -> Allocation | None:
            return self._allocate(view, group, job, free, jobs)

        def start(job: Job, allocation: Allocation) -> None:
            self._take(free, job, allocation, view.exclusive)
            actions.append(Start(job.job_id, allocation))

        def left() -> Amounts:
            return tuple(free[lo:hi].sum(axis=0).tolist())

        return easy_pass(
            jobs,
            view.time,
            left(),
            place,
            start,
            running,
            recount=left,
            scan=scan,
            outer=machine_wide,
        )

    def _pool(
        self,
        view: View,
        jobs: list[Job],
        free: np.ndarray,
        machine_wide: Reservation,
        actions: list[Action],
    ) -> None:
        """Start jobs whose priority factor exceeds tau_pf entirely on the pool."""
        now = view.time
        config = self.active
        candidates = []
        # Free cores per partition, summed once: this pass's pool starts take pool nodes only.
        group_free = [int(free[lo:hi, 0].sum()) for lo, hi in self.groups]
        home = self.home
        for job in jobs:
            group, index = home[job.job_id]  # routed by ``decide`` (``_home``)
            if group_free[group] >= job.cores:
                continue  # it fits its own partition: EASY holds it back for a reason
            queue = config.queues[index]
            slowdown = (now - job.submit) / max(min(job.estimate, queue.max_wall), 1.0)
            factor = slowdown * queue.priority
            if factor > config.tau_pf:
                candidates.append((-factor, job.submit, job.job_id, job))
        shadow_big, extra_big = machine_wide
        pool_lo, pool_hi = self.groups[self.pool_group]
        pool_free = int(free[pool_lo:pool_hi, 0].sum())
        for _, _, _, job in sorted(candidates, key=lambda c: c[:3]):
            if job.cores > pool_free:
                continue  # more cores than the pool has free: no allocator places it
            need = totals(job.unit, job.units)
            allowed, uses_big = (
                may_backfill(now, job.estimate, need, shadow_big, extra_big)
                if shadow_big < INF
                else (True, False)
            )
            if not allowed:
                continue
            allocation = self._allocate(view, self.pool_group, job, free, jobs)
            if allocation is None:
                continue
            self._take(free, job, allocation, view.exclusive)
            pool_free = int(free[pool_lo:pool_hi, 0].sum())
            actions.append(Start(job.job_id, allocation))
            if uses_big:
                extra_big = tuple(e - n for e, n in zip(extra_big, need))

    def _take(self, free: np.ndarray, job: Job, allocation: Allocation, exclusive: bool) -> None:
        self.free_bb -= job.bb
        take_dense(free, job, allocation, exclusive)


def _factory(mode: str) -> Callable[..., QueueDispatcher]:
    def make(allocator: Allocator, config: QueueConfig | None = None) -> QueueDispatcher:
        return QueueDispatcher(allocator, mode, config)

    return make


register_scheduler(
    "queues-partitioned",
    "hybrid queues: EASY in each queue's partition, large queue by reservation",
    handles=QUEUES_PARTITIONED,
    parameters={},  # theirs come from [queues]
)(_factory("partitioned"))
register_scheduler(
    "queues-shared",
    "hybrid queues: non-partitioned queues, one EASY over the whole machine",
    handles=QUEUES_SHARED,
    parameters={},
)(_factory("shared"))
register_scheduler(
    "queues-hybrid",
    "hybrid queues: partitions plus a common pool by priority factor",
    handles=QUEUES_PARTITIONED,
    parameters={},
)(_factory("hybrid"))
