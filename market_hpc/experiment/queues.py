"""Hybrid queues (Kondameedi & Vadhiyar): sampling simulations, monthly planner, multi-queue runs.

``plan_period`` turns one history period's jobs into the configurations of every
strategy: Eq. 7 proportional partitioning, DP-NLPM (utilisation lower bounds, 100
partition sets per 10-day epoch, cubic surrogates, SLSQP), DQR (greedy split/merge) and
the hybrid pool. The simulations it needs run through the executors of
``experiment.executors`` (in this process, local processes or Dask) as batches of
``(queue jobs, capacity)`` tasks; results are cached per (queue job set, size), since a
partitioned queue's waits depend on its own partition only.

``queue_run`` builds the model of a whole trace with the configuration of each period
put in force by a reconfiguration event at the period's start; ``run.simulate`` runs
and collects it and adds ``queue_summary``.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from market_hpc.algorithms.queues.fit import (
    NlpProblem,
    cross_r2,
    epoch_weights,
    fit_cubic,
    settle,
    share_floor,
    weighted_waits,
)
from market_hpc.algorithms.queues.partitions import (
    apportion,
    proportional_partitions,
    scaled_table1,
)
from market_hpc.algorithms.queues.search import (
    DqrLog,
    Evaluation,
    History,
    carve_pool,
    dqr,
    nodes_for,
    sample_partitions,
    utilisation_bounds,
)
from market_hpc.algorithms.queues.sim import QueueJobs, easy_waits, utilisation
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.domain.queues import QueueConfig
from market_hpc.experiment.config import QueuesConfig, RunConfig
from market_hpc.experiment.executors import make_executor
from market_hpc.experiment.queues_report import period_metrics, plan_row

DAY = 86400.0
SimTask = tuple[QueueJobs, int, float]


SimResult = tuple[float, float, np.ndarray]


def simulate_batch(tasks: Sequence[SimTask]) -> list[SimResult]:
    """Run a batch of one-queue EASY simulations: (mean wait, utilisation, waits) each."""
    results = []
    for jobs, capacity, span in tasks:
        waits = easy_waits(jobs, capacity)
        results.append(
            (
                float(waits.mean()) if len(waits) else 0.0,
                utilisation(jobs, capacity, waits, span),
                waits.astype(np.float32),
            )
        )
    return results


def map_batches(executor: Any, tasks: list[SimTask], batches: int) -> list[SimResult]:
    """Run ``tasks`` on a sweep executor in ``batches`` chunks, results in task order."""
    if not tasks:
        return []
    size = max(1, math.ceil(len(tasks) / batches))
    chunks = [tasks[i : i + size] for i in range(0, len(tasks), size)]
    if executor is None:
        parts = [simulate_batch(chunk) for chunk in chunks]
    else:
        parts = executor.map(simulate_batch, chunks)
    return [result for part in parts for result in part]


def columns(jobs: Sequence[Job]) -> QueueJobs:
    """Jobs (sorted by submit, id) as ``QueueJobs`` columns."""
    ordered = sorted(jobs, key=lambda j: (j.submit, j.job_id))
    return QueueJobs(
        np.array([j.submit for j in ordered], dtype=float),
        np.array([j.run_time for j in ordered]),
        np.array([j.estimate for j in ordered]),
        np.array([j.cores for j in ordered], dtype=np.int64),
    )


@dataclass
class Simulator:
    """``evaluate(configs)`` for the searches over one set of history jobs.

    Attributes:
        jobs: The history jobs (sorted columns).
        span: Length of the history period (s), for utilisation.
        cores_per_node: Node granularity of partition sizes.
        executor: A sweep executor (entered) or None for in-process.
        batches: Chunks per executor call.
    """

    jobs: QueueJobs
    span: float
    cores_per_node: int
    executor: Any = None
    batches: int = 2
    cache: dict[tuple[bytes, int], SimResult] = field(default_factory=dict)
    seconds: float = 0.0
    runs: int = 0

    @property
    def history(self) -> History:
        return History(self.jobs.cores, self.jobs.estimate, self.jobs.run)

    def __call__(self, configs: Sequence[QueueConfig]) -> list[Evaluation]:
        began = time.perf_counter()
        plans = []
        pending: dict[tuple[bytes, int], SimTask] = {}
        for config in configs:
            queue_of, _, _ = self.history.per_queue(config)
            rows: list[tuple[tuple[bytes, int] | None, np.ndarray]] = []
            for index, queue in enumerate(config.queues):
                members = np.flatnonzero(queue_of == index)
                if queue.reservation or not len(members):
                    rows.append((None, members))
                    continue
                key = (
                    hashlib.blake2b(members.tobytes(), digest_size=16).digest(),
                    config.partitions[index],
                )
                if key not in self.cache and key not in pending:
                    subset = QueueJobs(
                        self.jobs.submit[members],
                        self.jobs.run[members],
                        self.jobs.estimate[members],
                        self.jobs.cores[members],
                    )
                    pending[key] = (
                        subset,
                        config.partitions[index] * self.cores_per_node,
                        self.span,
                    )
                rows.append((key, members))
            plans.append(rows)
        keys = list(pending)
        for key, result in zip(
            keys, map_batches(self.executor, [pending[k] for k in keys], self.batches)
        ):
            self.cache[key] = result
        self.runs += len(keys)
        self.seconds += time.perf_counter() - began
        out = []
        for rows in plans:
            waits = tuple(self.cache[k][0] if k is not None else math.nan for k, _ in rows)
            utils = tuple(self.cache[k][1] if k is not None else 0.0 for k, _ in rows)
            job_waits = np.full(len(self.jobs), np.nan)
            for cached, members in rows:
                if cached is not None:
                    job_waits[members] = self.cache[cached][2]
            out.append(Evaluation(waits, tuple(len(m) for _, m in rows), utils, job_waits))
        return out


def base_config(total_cores: int, settings: QueuesConfig) -> QueueConfig:
    """Table I queues rescaled to the platform, before any partition sizes."""
    queues = scaled_table1(total_cores, settings.open_wall)
    return QueueConfig(
        queues, mode="shared", tau_pf=settings.tau_pf, catch_all=settings.catch_all, label="base"
    )


def proportional(base: QueueConfig, simulator: Simulator, n_nodes: int) -> QueueConfig:
    """Eq. 7 partitions of ``base``'s queues from the history's CPU hours."""
    _, hours, largest = simulator.history.per_queue(base)
    minimum = [
        0 if q.reservation else nodes_for(int(c), simulator.cores_per_node)
        for q, c in zip(base.queues, largest)
    ]
    sizes = proportional_partitions(base, n_nodes, hours.tolist(), minimum)
    return replace(base, mode="partitioned", partitions=sizes, label="proportional")


def epochs_of(
    jobs: QueueJobs, start: float, span: float, count: int
) -> list[tuple[QueueJobs, float]]:
    """The history split into ``count`` epochs of span/count
    seconds (equal spans; the paper's are 10 days)."""
    out = []
    for k in range(count):
        lo, hi = start + k * span / count, start + (k + 1) * span / count
        mask = (jobs.submit >= lo) & (jobs.submit < hi) if k < count - 1 else jobs.submit >= lo
        out.append(
            (
                QueueJobs(jobs.submit[mask], jobs.run[mask], jobs.estimate[mask], jobs.cores[mask]),
                hi - lo,
            )
        )
    return out


def dp_nlpm(
    pp: QueueConfig,
    simulator: Simulator,
    n_nodes: int,
    settings: QueuesConfig,
    start: float,
    rng: np.random.Generator,
) -> tuple[QueueConfig, dict[str, Any]]:
    """Phase 1: lower bounds, sampled partition sets per epoch, cubic fits, SLSQP.

    A queue with no history jobs keeps its floor (its minimum: ``knee``); only the
    queues with jobs are decision variables of the samples and the NLP.
    """
    owners = [i for i, q in enumerate(pp.queues) if not q.reservation]
    queue_of, hours, largest = simulator.history.per_queue(pp)
    counts = np.bincount(queue_of[queue_of >= 0], minlength=len(pp.queues))
    minimum = [
        0 if pp.queues[i].reservation else nodes_for(int(largest[i]), simulator.cores_per_node)
        for i in range(len(pp.queues))
    ]
    lower = utilisation_bounds(
        pp, simulator, minimum, n_nodes, settings.lb_points, settings.tau_util
    )
    floor = dict(
        zip(
            owners,
            share_floor(
                n_nodes,
                [lower[i] for i in owners],
                [float(hours[i]) for i in owners],
                settings.alpha,
            ),
        )
    )
    free = [i for i in owners if counts[i] > 0]
    room = n_nodes - sum(floor[i] for i in owners if i not in free)
    details: dict[str, Any] = {
        "lower": [lower[i] for i in owners],
        "floor": [floor[i] for i in owners],
        "jobs": [int(counts[i]) for i in owners],
        "r2": [],
    }

    def full(sizes: Sequence[int]) -> tuple[int, ...]:
        out = [0] * len(pp.queues)
        for i in owners:
            out[i] = floor[i]
        for i, size in zip(free, sizes):
            out[i] = int(size)
        return tuple(out)

    if len(free) < 2:
        sizes = [room] if free else []
        return replace(pp, partitions=full(sizes), label="dpnlpm"), {
            **details,
            "source": "fallback",
        }
    lows = [floor[i] for i in free]
    sets = sample_partitions(
        rng,
        settings.samples,
        lows,
        room,
        include=[apportion(room, [float(pp.partitions[i]) for i in free], lows)],
    )
    weights = epoch_weights(settings.epochs)
    surrogates, epoch_waits, epochs, cv = [], [], [], []
    x = np.array(sets, dtype=float)[:, :-1] / n_nodes
    for epoch_jobs, span in epochs_of(simulator.jobs, start, simulator.span, settings.epochs):
        epoch = Simulator(
            epoch_jobs, span, simulator.cores_per_node, simulator.executor, simulator.batches
        )
        epochs.append(epoch)
        waits = (
            np.array([e.overall for e in epoch([pp.with_partitions(full(s)) for s in sets])])
            / 3600.0
        )
        surrogates.append(fit_cubic(x, waits))
        cv.append(round(cross_r2(x, waits), 3))
        epoch_waits.append(waits)
    sample_waits = weighted_waits(epoch_waits, weights)
    order = np.argsort(sample_waits, kind="stable")
    starts = [sets[0]] + [sets[i] for i in order[:19]]
    problem = NlpProblem(
        room,
        tuple(lows),
        tuple(int(v) for v in np.max(sets, axis=0)),
        tuple(surrogates),
        weights,
        scale=n_nodes,
    )

    def simulate(sizes: tuple[int, ...]) -> float:
        config = pp.with_partitions(full(sizes))
        return sum(w * e([config])[0].overall / 3600.0 for w, e in zip(weights, epochs)) / sum(
            weights
        )

    chosen, record = settle(problem, starts, sets, sample_waits, simulate)
    for epoch in epochs:
        simulator.seconds += epoch.seconds
        simulator.runs += epoch.runs
    details.update(record)
    details.update(
        {
            "r2": [round(f.r2, 3) for f in surrogates],
            "cv_r2": cv,
            "samples": len(sets),
            "surface": Surface(
                x, tuple(epoch_waits), tuple(sets), problem, tuple(starts), simulate
            ),
        }
    )
    return replace(pp, partitions=full(chosen), label="dpnlpm"), details


@dataclass(frozen=True)
class Surface:
    """What DP-NLPM sampled, for trying other surrogates on the same simulations
    (``benchmarks/queues_surrogates.py``).

    Attributes:
        x: Sample points (free queues' sizes but the last, / machine nodes).
        epoch_waits: Simulated mean wait (h) of every sample, per epoch.
        sets: The sampled partition sets (free queues, nodes).
        problem: The NLP (floors, upper bounds, cubic surrogates, weights).
        starts: The NLP's starts.
        simulate: Recency-weighted simulated wait (h) of a partition set.
    """

    x: np.ndarray
    epoch_waits: tuple[np.ndarray, ...]
    sets: tuple[tuple[int, ...], ...]
    problem: NlpProblem
    starts: tuple[tuple[int, ...], ...]
    simulate: Callable[[tuple[int, ...]], float]


@dataclass
class PeriodPlan:
    """The configurations of one period, planned from the previous period's jobs."""

    configs: dict[str, QueueConfig]
    seconds: float
    simulation_seconds: float
    simulations: int
    details: dict[str, Any]


def plan_period(
    history: Sequence[Job],
    start: float,
    span: float,
    platform: Platform,
    settings: QueuesConfig,
    seed: int,
    strategies: Sequence[str] = ("proportional", "dpnlpm", "dqr", "hybrid"),
    executor: Any = None,
) -> PeriodPlan:
    """Configure the next period from ``history`` (jobs submitted in [start, start+span))."""
    began = time.perf_counter()
    n_nodes = platform.n_nodes
    cores_per_node = int(platform.capacity[0, 0])
    simulator = Simulator(
        columns(history), span, cores_per_node, executor, max(2, settings.workers)
    )
    base = base_config(platform.total_cores, settings)
    configs = {"nonpartitioned": replace(base, label="nonpartitioned")}
    pp = proportional(base, simulator, n_nodes)
    configs["proportional"] = pp
    details: dict[str, Any] = {}
    if any(s in strategies for s in ("dpnlpm", "dqr", "hybrid")):
        rng = np.random.default_rng(np.random.SeedSequence([seed, int(start)]))
        configs["dpnlpm"], details["dpnlpm"] = dp_nlpm(pp, simulator, n_nodes, settings, start, rng)
    if any(s in strategies for s in ("dqr", "hybrid")):
        log = DqrLog()
        found, wait = dqr(
            configs["dpnlpm"],
            simulator.history,
            simulator,
            cores_per_node,
            settings.max_queues,
            settings.degradation,
            log=log,
        )
        configs["dqr"] = replace(found, label="dqr")
        partitioned = sum(1 for q in found.queues if not q.reservation)
        details["dqr"] = {"wait_h": round(wait / 3600, 3), "queues": partitioned, **asdict(log)}
    if "hybrid" in strategies:
        chunk = nodes_for(settings.chunk_cores, cores_per_node)
        stats: dict[str, int] = {}
        carved = carve_pool(
            configs["dqr"],
            simulator.history,
            simulator,
            cores_per_node,
            chunk,
            settings.degradation,
            stats=stats,
        )
        configs["hybrid"] = replace(carved, label="hybrid")
        details["hybrid"] = {"pool_nodes": carved.pool, **stats}
    return PeriodPlan(
        configs, time.perf_counter() - began, simulator.seconds, simulator.runs, details
    )


def period_starts(jobs: Sequence[Job], period: float) -> list[float]:
    """Start of every period covering the jobs, from the first submit."""
    first = min(j.submit for j in jobs)
    last = max(j.submit for j in jobs)
    return [first + k * period for k in range(int((last - first) // period) + 1)]


_PLANS: dict[tuple[Any, ...], PeriodPlan] = {}


def _fingerprint(jobs: Sequence[Job]) -> bytes:
    """Identity of a job set for the plan memo (ids, submits, sizes, times)."""
    data = np.array(
        [(j.job_id, j.submit, j.run_time, j.estimate, j.cores) for j in jobs], dtype=float
    )
    return hashlib.blake2b(data.tobytes(), digest_size=16).digest()


def plan_schedule(
    jobs: Sequence[Job], platform: Platform, settings: QueuesConfig, seed: int, strategy: str
) -> tuple[list[tuple[float, QueueConfig]], list[PeriodPlan]]:
    """Configuration in force from each period start: period 0 runs the static (Eq. 7 of
    period 0) configuration, period k >= 1 the ``strategy``'s plan from period k-1."""
    period = settings.period_days * DAY
    starts = period_starts(jobs, period)
    by_period: list[list[Job]] = [[] for _ in starts]
    for job in jobs:
        by_period[min(int((job.submit - starts[0]) // period), len(starts) - 1)].append(job)
    wanted = (
        ("proportional",)
        if strategy in ("static", "proportional", "nonpartitioned")
        else ("proportional", "dpnlpm", "dqr", "hybrid")
    )  # one plan serves all three (memoised)
    plans = []
    schedule = []
    with make_executor(settings.workers, settings.dask) as executor:
        first = plan_period(
            by_period[0], starts[0], period, platform, settings, seed, ("proportional",), executor
        )
        static = replace(first.configs["proportional"], label="static")
        schedule.append(
            (starts[0], first.configs["nonpartitioned"] if strategy == "nonpartitioned" else static)
        )
        if strategy in ("static", "nonpartitioned"):
            return schedule, [first]
        for k in range(1, len(starts)):
            key = (
                _fingerprint(by_period[k - 1]),
                starts[k - 1],
                period,
                platform,
                replace(settings, strategy=None),
                seed,
                wanted,
            )
            plan = _PLANS.get(key)
            if plan is None:
                plan = plan_period(
                    by_period[k - 1],
                    starts[k - 1],
                    period,
                    platform,
                    settings,
                    seed,
                    wanted,
                    executor,
                )
                _PLANS[key] = plan
            plans.append(plan)
            schedule.append((starts[k], plan.configs[strategy]))
    return schedule, plans


@dataclass
class QueueRun:
    """A multi-queue model ready to run, with the plans that configured it."""

    model: Any
    schedule: list[tuple[float, QueueConfig]]
    plans: list[Any]


def queue_run(config: RunConfig, jobs: list[Job], platform: Platform) -> QueueRun:
    """Plan the partitions of a multi-queue scenario (``[queues]``) and build its model
    (``run.simulate`` runs and collects it, then adds ``queue_summary``)."""
    from market_hpc.core.model import HPCModel
    from market_hpc.policies import make_policy

    settings = config.queues
    assert settings.strategy is not None
    schedule, plans = plan_schedule(jobs, platform, settings, config.seed, settings.strategy)
    first = schedule[0][1]
    policy = make_policy(
        f"queues-{first.mode}", config.policy.allocator, scheduler_params={"config": first}
    )
    model = HPCModel(
        jobs,
        platform,
        policy=policy,
        exclusive=config.exclusive,
        seed=config.seed,
        record_timeseries=config.timeseries,
        queues=first,
        reconfigurations=schedule[1:],
    )
    return QueueRun(model, schedule, plans)


def queue_summary(
    summary: dict[str, Any], frame: Any, run: QueueRun, jobs: Sequence[Job], config: RunConfig
) -> None:
    """Add per-period metrics, the configurations in force and the planning cost to a
    finished multi-queue run's summary."""
    period = config.queues.period_days * DAY
    rows = period_metrics(
        frame, jobs, period_starts(jobs, period), period, run.model.platform.total_cores
    )
    times = [when for when, _ in run.schedule]
    for row in rows:
        k = row["period"]
        in_force = run.schedule[max(0, bisect.bisect_right(times, row["start"]) - 1)][1]
        row.update(
            plan_row(
                in_force,
                run.plans[k - 1].details if 1 <= k <= len(run.plans) else {},
                in_force.label,
            )
        )
    summary["queue_periods"] = rows
    for row in rows:  # scalars: a sweep stores them in its per-run rows (``queues_report``)
        for key, value in row.items():
            if key not in ("period", "start"):
                summary[f"period{row['period']}_{key}"] = value
    history = run.model.queue_agent.history  # the first entry is stamped at construction (t = 0)
    summary["queue_configs"] = [
        {"from": run.schedule[0][0] if k == 0 else when, "config": c.describe()}
        for k, (when, c) in enumerate(history)
    ]
    summary["planning_seconds"] = sum(p.seconds for p in run.plans)
    summary["planning_simulation_seconds"] = sum(p.simulation_seconds for p in run.plans)
    summary["planning_simulations"] = sum(p.simulations for p in run.plans)
