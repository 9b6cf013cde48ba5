"""Plain data for the text panels: the status line, the queue's top jobs, one job's details.

No solara here, so the benchmark and tests read the same numbers the page shows.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from market_hpc.algorithms.market.maths import c_star, profit
from market_hpc.domain.job import Job, JobStatus
from market_hpc.core.model import HPCModel
from market_hpc.core.recorder import JOB_COLUMNS, format_allocation
from visualization.model import format_clock

_ROW = {name: index for index, name in enumerate(JOB_COLUMNS)}


@dataclass(frozen=True)
class QueueRow:
    """A waiting job as the queue panel lists it.

    Attributes:
        position: 1-based place in queue order.
        job_id: Job id.
        held: Times it was held (0: never started or never held).
        cores: Cores it asks for (c*, its best core count, for moldable jobs).
        waited: Time since arrival.
        value: Value if started now on ``cores`` (None without a value curve).
        density: ``value / cores`` (None without a value curve).
    """

    position: int
    job_id: int
    held: int
    cores: int
    waited: float
    value: float | None
    density: float | None


def _best_cores(job: Job) -> int:
    if job.profile is None:
        return job.cores
    return int(job.payload.get("c_star") or c_star(job.profile))


def queue_rows(model: HPCModel, limit: int = 10) -> list[QueueRow]:
    """The top ``limit`` waiting jobs: by current value density when jobs carry value
    curves (what the market wants most), else the head of the queue in order."""
    now = model.now
    agents = model.job_agents
    rows = []
    for position, job in enumerate(list(model.queue_agent.jobs.values()), start=1):
        agent = agents[job.job_id]
        cores = _best_cores(job)
        curve = job.payload.get("value_curve")
        value = density = None
        if curve is not None and job.profile is not None:
            value = profit(curve, now, job.submit, job.profile, cores, agent.progress)
            density = value / cores
        rows.append(QueueRow(position, job.job_id, agent.hold_count, cores, now - job.submit,
                             value, density))
        if curve is None and len(rows) >= limit:
            break
    if rows and rows[0].density is not None:
        return heapq.nlargest(limit, rows, key=lambda r: (r.density or 0.0, -r.position))
    return rows[:limit]


@dataclass(frozen=True)
class Status:
    """The numbers of the status line."""

    clock: str
    step: int
    queued: int
    held: int
    running: int
    finished: int
    dropped: int
    holds: int
    profit: float
    utilisation: float


def status(model: HPCModel, unit: str) -> Status:
    """What the status line shows now."""
    recorder = model.recorder
    held = sum(1 for a in list(model.job_agents.values()) if a.status is JobStatus.HELD)
    total = float(model.platform.total[0])
    used = total - float(model.free_total[0])
    return Status(format_clock(model.now, unit), int(model.steps), len(model.queue_agent.jobs), held,
                  len(model.running_by_end), recorder.finished, recorder.drops, recorder.holds,
                  recorder.profit, 100.0 * used / total if total else 0.0)


def job_details(model: HPCModel, job_id: int, unit: str) -> list[tuple[str, str]] | None:
    """Label/value pairs describing a job in or gone from the system (None: unknown)."""
    agent = model.job_agents.get(job_id)
    if agent is None:
        return _departed(model, job_id, unit)
    job = agent.job
    pairs = [("status", agent.status.value), ("arrived", format_clock(job.submit, unit)),
             ("asks for", _request(job)), ("progress", f"{100.0 * agent.progress:.0f} %"),
             ("holds", str(agent.hold_count))]
    if agent.running is not None:
        pairs.append(("running on", _nodes(agent.running.allocation)))
        pairs.append(("segment since", format_clock(agent.running.start, unit)))
        pairs.append(("expected end", format_clock(agent.running.est_end, unit)))
    elif agent.last_allocation:
        pairs.append(("last ran on", _nodes(agent.last_allocation)))
    curve = job.payload.get("value_curve")
    if curve is not None:
        pairs.append(("max value", f"{curve.max_value:,.1f}"))
        if agent.status is not JobStatus.RUNNING and job.profile is not None:
            cores = _best_cores(job)
            pairs.append(("value if started now", f"{profit(curve, model.now, job.submit, job.profile, cores, agent.progress):,.1f}"))
    return pairs


def _request(job: Job) -> str:
    if job.profile is not None:
        return f"1-{len(job.profile)} cores on one node (best {_best_cores(job)})"
    extra = "".join(f", {job.total(i)} {name}" for i, name in ((1, "GPUs"), (2, "MICs")) if job.unit[i])
    return f"{job.cores} cores{extra}"


def _nodes(allocation: tuple[tuple[int, int], ...]) -> str:
    text = format_allocation(allocation).replace(";", ", ")
    return text if len(text) <= 60 else text[:57] + "..."


def _departed(model: HPCModel, job_id: int, unit: str) -> list[tuple[str, str]] | None:
    for row in reversed(model.recorder.rows):
        if row[_ROW["job_id"]] == job_id:
            pairs = [("status", str(row[_ROW["status"]])),
                     ("arrived", format_clock(row[_ROW["submit_time"]], unit))]
            end = row[_ROW["end_time"]]
            if not math.isnan(end):
                pairs.append(("left", format_clock(end, unit)))
            pairs += [("holds", str(row[_ROW["hold_count"]])), ("value earned", f"{row[_ROW['value']]:,.1f}")]
            return pairs
    return None


def queue_layout(model: HPCModel) -> str:
    """How the waiting jobs are split, for the queue tile: one queue, or seed 004's
    partitions (node ranges per queue, machine-wide reservation queues, the hybrid pool),
    so a job waiting beside idle nodes of another partition is explained."""
    config = _queue_config(model)
    if config is None:
        return "one queue"
    from market_hpc.algorithms.queues.partitions import layout

    platform = model.platform
    if config.mode == "shared":
        return f"{len(config.queues)} queues sharing every node (one EASY)"
    ranges, pool = layout(config, platform.n_nodes)
    parts = []
    for queue, (lo, hi) in zip(config.queues, ranges, strict=True):
        cores = f"{queue.min_cores:,}-{queue.max_cores:,} cores"
        where = ("machine-wide by reservation" if queue.reservation else
                 f"nodes {lo:,}-{hi - 1:,}" if hi > lo else "no nodes")
        parts.append(f"{queue.name} ({cores}): {where}")
    if config.mode == "hybrid" and pool[1] > pool[0]:
        parts.append(f"shared pool: nodes {pool[0]:,}-{pool[1] - 1:,}")
    pool_note = " (or in the shared pool, by priority factor)" if config.mode == "hybrid" else ""
    return (f"{len(config.queues)} queues, each on its own partition; a job waits for its "
            f"queue's nodes{pool_note} even when other nodes are idle: " + "; ".join(parts))


def _queue_config(model: HPCModel):  # type: ignore[no-untyped-def]
    """The seed 004 queue configuration the policy uses (None: one queue)."""
    return model.policy_hooks.queue_config(model.platform)


def queue_bands(model: HPCModel) -> list[tuple[str, int, int]]:
    """The node ranges ``(name, lo, hi)`` the node grid marks: one per queue that owns a
    partition, then the hybrid pool; none for one queue or queues sharing every node
    (reservation queues are machine-wide, so they own no band)."""
    config = _queue_config(model)
    if config is None or config.mode == "shared":
        return []
    from market_hpc.algorithms.queues.partitions import layout

    ranges, pool = layout(config, model.platform.n_nodes)
    bands = [(queue.name, lo, hi) for queue, (lo, hi) in zip(config.queues, ranges, strict=True)
             if not queue.reservation and hi > lo]
    if config.mode == "hybrid" and pool[1] > pool[0]:
        bands.append(("shared pool", pool[0], pool[1]))
    return bands


def burst_buffer_use(model: HPCModel) -> tuple[float, float] | None:
    """Burst buffer in use and its capacity in GB (None: the platform has none)."""
    total = float(model.platform.burst_buffer)
    if total <= 0:
        return None
    return total - float(model.free_bb), total
