"""The ``slurm`` scheduler: Slurm's main scheduler and ``sched/backfill`` over
``priority/multifactor`` (or ``priority/basic``) priorities.

At each decision (every arrival and completion, as ``schedule()`` runs on job submission
and completion) the main scheduler walks the queue in priority order (``sort_job_queue2``:
partition ``PriorityTier``, then priority, then submit time, then job id), at most
``default_queue_depth`` jobs, starting those that fit; a job that does not fit blocks
the rest of its partition (``schedule()``'s ``fail_by_part``), unless preemption by
partition priority frees room for it. Backfill runs on a grid of ``bf_interval`` seconds
from the first decision, when jobs arrived, started or ended since its last pass
(``_more_work``): it tests at most ``bf_max_job_test`` jobs in priority order, starts those
whose earliest start is now (at most ``bf_max_job_start``), and reserves whole nodes for
the others that start within ``bf_window`` (``algorithms.slurm.backfill``). A job runs to
its time limit as Slurm sees it: the estimate (``view.expected_end``). Priorities are
computed when a job is first seen and every ``PriorityCalcPeriod`` (the decay thread), when
fair-share usage is charged and decayed. ``bf_continue`` only matters when Slurm yields
its locks mid-pass; a simulated pass never yields, so it is accepted and has no effect.

Decisions where Slurm leaves a choice: a job's partition is its queue id's partition in
slurm.conf order (unknown ids: the ``Default=YES`` partition, else the first); a job
whose time limit exceeds its partition's ``MaxTime``, or that its partition's nodes can
never hold, is dropped (Slurm rejects it at submission); ``min_nodes`` is 1; preempted
jobs are held and resumed later anywhere (``SUSPEND``; ``REQUEUE`` too, with
``policy.hold_progress_loss = 1`` to lose the work as Slurm does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from market_hpc.algorithms.slurm.backfill import NodeSpace, Placement, slot
from market_hpc.algorithms.slurm.priority import (
    FairShareUsage,
    age_factor,
    job_size_factor,
    weighted_priority,
)
from market_hpc.domain.job import Job
from market_hpc.parameters import Param
from market_hpc.policies.base import (
    Action,
    Allocator,
    Decision,
    Drop,
    Hold,
    PolicyBase,
    RunningJob,
    Start,
    View,
)
from market_hpc.policies.capabilities import KINDS, handles
from market_hpc.policies.registry import register_scheduler
from market_hpc.policies.slurm.conf import Partition
from market_hpc.policies.slurm.settings import SlurmSettings, settings
from market_hpc.validation import Range

CAPABILITIES = handles(
    ("cores", "gpus", "mics", "mem", "bb"),
    KINDS,
    family="slurm",
    reads=(
        "every node resource per unit, burst buffer (checked at start, not reserved), "
        "estimates (time limits), users, queue ids (partitions)"
    ),
    ignores="value curves, moldability (runs the requested size)",
)


_INTERVAL = Param("float", Range(0.0, 30 * 86_400.0, low_open=True))  # up to 30 days
_WEIGHT = Param("int", Range(0, 2**32 - 1, integer=True))
_COUNT = Param("int", Range(0, 1_000_000, integer=True))


@register_scheduler
class Slurm(PolicyBase):
    """Slurm's scheduling over any ``first-fit``/``best-fit`` placement.

    Args:
        allocator: Where the main scheduler's and backfill's starts go.
        slurm_conf: A slurm.conf to read (``policies.slurm.conf``).
        **params: ``SlurmSettings`` fields, overriding the slurm.conf.
    """

    label = "slurm"
    summary = "Slurm's multifactor priority and sched/backfill, configured from slurm.conf"
    allocators = ("first-fit", "best-fit")
    handles = CAPABILITIES

    params_to = SlurmSettings  # where **params go (their defaults: its fields')
    parameters: ClassVar[Mapping[str, Param]] = {
        "slurm_conf": Param("str", optional=True),
        "priority_type": Param("str", choices=("basic", "multifactor")),
        "scheduler_type": Param("str", choices=("backfill", "builtin")),
        **{
            f"weight_{name}": _WEIGHT
            for name in ("age", "fairshare", "job_size", "partition", "qos")
        },
        "max_age": _INTERVAL,
        "decay_half_life": Param("float", Range(0.0, 2.0**40)),
        "calc_period": _INTERVAL,
        "favor_small": Param("bool"),
        "fs_dampening": Param("int", Range(1, 2**32 - 1, integer=True)),
        "shares": Param("number-table"),
        "fairshare_account": Param("bool"),
        "account_share": Param("float", Range(0.0, 1.0, low_open=True)),
        "charge_at_end": Param("bool"),
        "qos_priority": Param("number-table"),
        "bf_interval": _INTERVAL,
        "bf_window": _INTERVAL,
        "bf_resolution": _INTERVAL,
        "sched_interval": _INTERVAL,
        "bf_max_job_test": _COUNT,
        "bf_max_job_start": _COUNT,
        "default_queue_depth": _COUNT,
        "bf_continue": Param("bool"),
        "preempt": Param("bool"),
        "preempt_mode": Param("str", choices=("off", "suspend", "requeue")),
    }

    def __init__(self, allocator: Allocator, slurm_conf: str | None = None, **params: Any) -> None:
        self.allocator = allocator
        self.name = f"slurm+{allocator.name}"
        self.settings: SlurmSettings = settings(slurm_conf, **params)
        config = self.settings
        self.partitions = config.partitions or (Partition("default", default=True),)
        self.default_partition = next((p for p in self.partitions if p.default), self.partitions[0])
        top = max(p.priority_job_factor for p in self.partitions)
        self.partition_norm = {
            p.name: p.priority_job_factor / top if top else 0.0 for p in self.partitions
        }
        qos_top = max(config.qos_priority.values(), default=0.0)
        self.qos_norm = (
            {name: value / qos_top for name, value in config.qos_priority.items()}
            if qos_top
            else {}
        )
        self.usage = FairShareUsage(
            config.decay_half_life,
            {int(u): float(s) for u, s in config.shares.items()},
            config.fairshare_account,
            config.fs_dampening,
            account_share=config.account_share,
        )
        self.priority: dict[int, int] = {}
        self.origin: float | None = None
        self.last_calc = 0.0
        # job id -> user, cores, start, end (None: running), recorded run time
        self.seen: dict[int, tuple[int, int, float, float | None, float]] = {}
        self.signature: object = None
        self.dirty = True
        self.masks: dict[str, np.ndarray] = {}
        self.free_bb = 0.0
        self.runnable: set[int] = set()  # waiting jobs their partition can hold (checked once)
        self.stats: dict[str, Any] = {
            "slurm_backfill_passes": 0,
            "slurm_backfill_starts": 0,
            "slurm_main_starts": 0,
            "slurm_reservations": 0,
            "slurm_preemptions": 0,
            "slurm_dropped": 0,
        }

    # ------------------------------------------------------------------ priorities
    def partition_of(self, job: Job) -> Partition:
        """The job's partition: its queue id's, else the default one."""
        return (
            self.partitions[job.queue]
            if 0 <= job.queue < len(self.partitions)
            else self.default_partition
        )

    def _compute(self, job: Job, now: float, view: View) -> int:
        config = self.settings
        weights = config.weights
        platform = view.platform
        cluster_cpus = int(np.asarray(platform.total)[0])
        return weighted_priority(
            weights,
            age_factor(now - job.submit, config.max_age) if weights.age else 0.0,
            self.usage.factor(job.user) if weights.fairshare else 0.0,
            job_size_factor(job.cores, 1, platform.n_nodes, cluster_cpus, config.favor_small)
            if weights.job_size
            else 0.0,
            self.partition_norm.get(self.partition_of(job).name, 0.0),
            self.qos_norm.get(str(job.payload.get("qos", "normal")), 0.0),
        )

    def _track(self, view: View, now: float) -> None:
        """Note running jobs and those that ended since the last decision, for the usage
        charge. A job that ended is charged to its recorded end (``start + run_time``,
        at most now), as Slurm's job-end hook charges it: the model asks for no decision
        while the queue is empty, so the end itself may have gone unobserved."""
        running = {r.job.job_id: r for r in view.running}
        for job_id, (user, cores, start, end, run_time) in list(self.seen.items()):
            if end is None and job_id not in running:
                self.seen[job_id] = (user, cores, start, min(now, start + run_time), run_time)
        for job_id, r in running.items():
            if job_id not in self.seen or self.seen[job_id][3] is not None:
                self.seen[job_id] = (
                    r.job.user,
                    r.units * r.job.unit[0],
                    r.start,
                    None,
                    r.job.run_time,
                )

    def _recalculate(self, view: View, now: float) -> None:
        """The decay thread's pass: charge and decay usage, then every waiting job's priority.

        A pass charges the jobs running at it, from the last pass (or their start)
        (``_decay_apply_new_usage``). Slurm 22.05 charges nothing more when a job ends: its
        ``DebugFlags=Priority`` log of the validation shows 47 charges for 100 jobs, none
        for a job that ended between passes (``charge_at_end = true`` charges that part
        too, as ``priority_p_job_end`` would).
        """
        delta = now - self.last_calc
        self.usage.decay(delta)
        for job_id, (user, cores, start, end, _) in list(self.seen.items()):
            if end is None or self.settings.charge_at_end:
                until = now if end is None else min(end, now)
                self.usage.add(user, cores, until - max(start, self.last_calc))
            if end is not None:
                del self.seen[job_id]
        self.last_calc = now
        self.priority = {job.job_id: self._compute(job, now, view) for job in view.queue}

    def order(self, view: View) -> list[Job]:
        """The waiting jobs in Slurm's order (``sort_job_queue2``)."""
        if self.settings.multifactor:
            priority, now = self.priority, view.time
            for job in view.queue:
                if job.job_id not in priority:
                    priority[job.job_id] = self._compute(job, now, view)
            tier = {p.name: p.priority_tier for p in self.partitions}
            return sorted(
                view.queue,
                key=lambda job: (
                    -tier[self.partition_of(job).name],
                    -priority[job.job_id],
                    job.submit,
                    job.job_id,
                ),
            )
        tiers = {p.name: p.priority_tier for p in self.partitions}
        return sorted(
            view.queue,
            key=lambda job: (-tiers[self.partition_of(job).name], job.submit, job.job_id),
        )

    # ------------------------------------------------------------------ decisions
    def _mask(self, partition: Partition, n_nodes: int) -> np.ndarray:
        mask = self.masks.get(partition.name)
        if mask is None or len(mask) != n_nodes:
            mask = np.zeros(n_nodes, dtype=bool)
            mask[
                [n for n in partition.nodes if n < n_nodes]
                if partition.nodes is not None
                else slice(None)
            ] = True
            self.masks[partition.name] = mask
        return mask

    def _place(
        self, job: Job, free: np.ndarray, usable: np.ndarray, view: View
    ) -> Placement | None:
        if job.bb > self.free_bb:
            return None  # the shared burst-buffer pool, as this pass has left it
        masked = np.where(usable[:, None], free, 0)
        masked.flags.writeable = False
        allocation = self.allocator.allocate(job, masked, view)
        return None if allocation is None else tuple((int(n), int(u)) for n, u in allocation)

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Main scheduler, then backfill when due (module docstring)."""
        now, config = view.time, self.settings
        if self.origin is None:
            self.origin = self.last_calc = now
        self._track(view, now)
        if config.multifactor and now >= self.last_calc + config.calc_period:
            self._recalculate(view, now)
        signature = (
            frozenset(r.job.job_id for r in view.running),
            len(view.queue),
            max((job.job_id for job in view.queue), default=-1),
        )
        if signature != self.signature:
            self.dirty, self.signature = True, signature
        actions: list[Action] = []
        free = np.array(view.free, dtype=np.int64)
        self.free_bb = view.free_bb
        started: list[tuple[Job, Placement]] = []
        ordered = [job for job in self.order(view) if not self._drop(job, view, actions)]
        self._main(view, ordered, free, started, actions)
        if config.backfill and self.dirty and self._on_grid(now):
            self._backfill(view, ordered, free, started, actions)
            self.dirty = bool(started)
        if not actions:
            return Decision((), self._wake(view, now))
        return Decision(tuple(actions), self._wake(view, now, started=True))

    def _drop(self, job: Job, view: View, actions: list[Action]) -> bool:
        if job.job_id in self.runnable:
            return False
        partition = self.partition_of(job)
        if job.estimate > partition.max_time:
            reason = f"time limit {job.estimate:g} s above partition {partition.name}'s MaxTime"
        else:
            mask = self._mask(partition, view.platform.n_nodes)
            capacity = np.asarray(view.platform.capacity)[mask]
            unit = np.asarray(job.unit[: capacity.shape[1]])
            asked = unit > 0
            fits = np.min(capacity[:, asked] // unit[asked], axis=1).sum() if len(capacity) else 0
            if fits >= job.units:
                self.runnable.add(job.job_id)
                return False
            reason = f"larger than partition {partition.name}'s nodes"
        actions.append(Drop(job.job_id, reason))
        self.stats["slurm_dropped"] += 1
        return True

    def _on_grid(self, now: float) -> bool:
        interval = self.settings.bf_interval
        steps = (now - (self.origin or 0.0)) / interval
        return math.isclose(steps, round(steps), abs_tol=1e-9)

    def _wake(self, view: View, now: float, started: bool = False) -> float | None:
        if not view.queue:
            return None
        config, origin = self.settings, self.origin or 0.0
        wakes = []
        if config.backfill and (self.dirty or started):
            steps = math.floor((now - origin) / config.bf_interval + 1e-9) + 1
            wakes.append(origin + steps * config.bf_interval)
        if config.multifactor and (config.weight_age or config.weight_fairshare):
            wakes.append(self.last_calc + config.calc_period)
        return min(wakes) if wakes else None

    def _main(
        self,
        view: View,
        ordered: list[Job],
        free: np.ndarray,
        started: list[tuple[Job, Placement]],
        actions: list[Action],
    ) -> None:
        blocked: set[str] = set()
        held: set[int] = set()
        n_nodes = view.platform.n_nodes
        for job in ordered[: self.settings.default_queue_depth]:
            partition = self.partition_of(job)
            if partition.name in blocked:
                continue
            mask = self._mask(partition, n_nodes)
            placement = self._place(job, free, mask, view)
            if placement is None and self.settings.preempt:
                placement = self._preempt(job, partition, free, mask, view, held, actions)
            if placement is None:
                blocked.add(partition.name)
                continue
            self._take(job, placement, free, view, started, actions)
            self.stats["slurm_main_starts"] += 1

    def _take(
        self,
        job: Job,
        placement: Placement,
        free: np.ndarray,
        view: View,
        started: list[tuple[Job, Placement]],
        actions: list[Action],
    ) -> None:
        for node, units in placement:
            free[node] -= (
                np.asarray(view.platform.capacity)[node]
                if view.exclusive
                else np.asarray(job.unit) * units
            )
        self.free_bb -= job.bb
        self.seen[job.job_id] = (
            job.user,
            sum(units for _, units in placement) * job.unit[0],
            view.time,
            None,
            job.run_time,
        )
        started.append((job, placement))
        actions.append(Start(job.job_id, placement))

    def _preempt(
        self,
        job: Job,
        partition: Partition,
        free: np.ndarray,
        mask: np.ndarray,
        view: View,
        held: set[int],
        actions: list[Action],
    ) -> Placement | None:
        """Hold lower-tier running jobs on the partition's nodes until ``job`` fits
        (``preempt/partition_prio``), most recently started first."""
        tiers = {p.name: p.priority_tier for p in self.partitions}
        victims = sorted(
            (
                r
                for r in view.running
                if r.job.job_id not in held
                and tiers[self.partition_of(r.job).name] < partition.priority_tier
                and any(mask[node] for node, _ in r.allocation)
            ),
            key=lambda r: (tiers[self.partition_of(r.job).name], -r.start, -r.seq),
        )
        trial = free.copy()
        chosen: list[RunningJob] = []
        before_bb = self.free_bb
        for victim in victims:
            chosen.append(victim)
            self.free_bb += victim.job.bb
            for node, units in victim.allocation:
                trial[node] += (
                    np.asarray(view.platform.capacity)[node]
                    if view.exclusive
                    else np.asarray(victim.job.unit) * units
                )
            placement = self._place(job, trial, mask, view)
            if placement is not None:
                for one in chosen:
                    actions.append(Hold(one.job.job_id))
                    held.add(one.job.job_id)
                self.stats["slurm_preemptions"] += len(chosen)
                free[:] = trial
                return placement
        self.free_bb = before_bb
        return None

    def _backfill(
        self,
        view: View,
        ordered: list[Job],
        free: np.ndarray,
        started: list[tuple[Job, Placement]],
        actions: list[Action],
    ) -> None:
        """One ``_attempt_backfill`` pass over the jobs the main scheduler left waiting."""
        config, now = self.settings, view.time
        self.stats["slurm_backfill_passes"] += 1
        capacity = np.asarray(view.platform.capacity, dtype=np.int64)
        space = NodeSpace(capacity, free.copy(), exclusive=view.exclusive)
        for r in view.running:
            space.add_release(view.expected_end(r), r.allocation, r.job.unit)
        for job, placement in started:
            space.add_release(now + job.estimate, placement, job.unit)
        begun = {job.job_id for job, _ in started}
        horizon = now + config.bf_window
        starts = 0
        for job in [job for job in ordered if job.job_id not in begun][: config.bf_max_job_test]:
            mask = self._mask(self.partition_of(job), view.platform.n_nodes)
            found = space.earliest(now, job.unit, job.units, job.estimate, mask, horizon)
            if found is None:
                continue  # starts beyond the window: no reservation
            begin, placement = found
            if begin <= now:
                usable = mask.copy()
                for node in space.reserved(now, now + job.estimate):
                    usable[node] = False
                chosen = self._place(job, space.free, usable, view)
                if chosen is None:
                    continue  # the burst buffer is short: no start now, no reservation
                space.start(chosen, job.unit, now + job.estimate)
                self._take(job, chosen, free, view, started, actions)
                self.stats["slurm_backfill_starts"] += 1
                starts += 1
                if config.bf_max_job_start and starts >= config.bf_max_job_start:
                    break
            else:
                space.reserve(*slot(begin, job.estimate, config.bf_resolution), placement)
                self.stats["slurm_reservations"] += 1

    def summary_stats(self) -> dict[str, Any]:
        """The run's Slurm counters and the slurm.conf keys it does not model."""
        return {
            **self.stats,
            "slurm_conf": self.settings.slurm_conf,
            "slurm_conf_unmodelled_keys": list(self.settings.unmodelled),
        }
