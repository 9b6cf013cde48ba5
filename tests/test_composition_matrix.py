"""Every registered scheduler, with every allocator it accepts, on every kind of workload a
scenario can build: it runs with the schedule invariants holding, or it is refused at
configuration time with its pinned message. No cell fails mid-run.

The schedulers come from the live registry (installed plugins included); the expected
refusals are pinned per capability set, with the lists of schedulers that handle what is
lacking pinned as the built-in names plus whatever plugins declare (or are assumed) to
handle it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import pytest
from invariants import assert_schedule_invariants

from market_hpc.algorithms.valuecurve import LinearDecayCurve
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import NodeType, Platform
from market_hpc.errors import ConfigError
from market_hpc.policies import allocators_for, scheduler_names
from market_hpc.policies.registry import builtin_capabilities, capability_table
from market_hpc.workload.applications import library_job_set
from market_hpc.workload.market_rule import apply_market_rule

PLATFORM = Platform(
    "matrix",
    (NodeType("cpu", 2, 4, mem=8192), NodeType("acc", 2, 4, gpus=2, mics=1, mem=8192)),
    burst_buffer=100.0,
)


def rigid(units_from: list[tuple[int, ...]], count: int = 10) -> list[Job]:
    """Small rigid jobs, some spanning nodes (up to 6 units on 4-core nodes), in bursts."""
    return [
        Job(
            i + 1,
            float(2 * (i // 2)),
            float(3 + 4 * (i % 3)),
            float(4 + 4 * (i % 3)),
            units=1 + (i * 5) % 6 if units_from[i % len(units_from)] == (1, 0, 0, 0) else 1 + i % 2,
            unit=units_from[i % len(units_from)],
        )
        for i in range(count)
    ]


def moldable(jobs: list[Job]) -> list[Job]:
    """``jobs`` with a speedup profile and a value curve, keeping their unit vectors (what
    the market auctions would be given with accelerators or a burst buffer)."""
    curve = LinearDecayCurve(10.0, 40.0, 400.0)
    return [
        replace(
            job,
            profile=tuple(job.run_time * job.units / c for c in range(1, job.units + 1)),
            payload={"value_curve": curve, "c_star": job.units},
        )
        for job in jobs
    ]


CORES = [(1, 0, 0, 0)]
ACCELERATORS = [(1, 1, 0, 0), (2, 0, 1, 0), (1, 0, 0, 0)]
MEMORY = [(1, 0, 0, 2048), (1, 0, 0, 0)]


def with_bb(jobs: list[Job]) -> list[Job]:
    return [replace(job, bb=float(5 + 17 * (job.job_id % 4))) for job in jobs]


CELLS: dict[str, Callable[[], list[Job]]] = {
    "cores": lambda: rigid(CORES),
    "gpu-mic": lambda: rigid(ACCELERATORS),
    "memory": lambda: rigid(MEMORY),
    "burst-buffer": lambda: with_bb(rigid(CORES)),
    "moldable": lambda: apply_market_rule(rigid(CORES)),
    "task-graph": lambda: list(library_job_set(6, 3, platform_cores=16)),
    "queues": lambda: [replace(job, queue=job.job_id % 3) for job in rigid(CORES)],
    "moldable-gpu-mic": lambda: moldable(rigid(ACCELERATORS)),
    "moldable-memory": lambda: moldable(rigid(MEMORY)),
    "moldable-burst-buffer": lambda: with_bb(apply_market_rule(rigid(CORES))),
}


def handlers(builtin: str, predicate: Callable[[str], bool]) -> str:
    """The pinned built-in names plus the registered non-built-ins that satisfy ``predicate``."""
    pinned = set(builtin.split(", "))
    names = pinned | {name for name in capability_table() if name not in pinned and predicate(name)}
    return ", ".join(sorted(names))


RIGID_SCHEDULERS = (
    "bb-baseline, bb-binpacking, bb-constrained-bb, bb-constrained-cpu, bb-weighted, "
    "bb-weighted-bb, bb-weighted-cpu, bbsched, cph, easy, ebf, fifo, greedy-plan, hcp19, ljf, "
    "pcp19, pcp20, prb, queues-hybrid, queues-partitioned, queues-shared, sjf"
)
MARKET_SCHEDULERS = (
    "maxv, maxvd, maxvdh, maxvdlh, maxvh, maxvlh, minvr, minvrh, minvrlh, sjq, sjqh, sjqlh"
)


def _handles(need: str) -> Callable[[str], bool]:
    return lambda name: capability_table()[name].handles(need)


def ignores(label: str, need: str, count: int, example: int) -> str:
    jobs = f"{count} job{'s' if count != 1 else ''} (e.g. job {example})"
    builtin = (
        RIGID_SCHEDULERS + ", " + MARKET_SCHEDULERS
    )  # the market auctions handle every resource
    return (
        f"it ignores {label}, requested by {jobs} (handled by: {handlers(builtin, _handles(need))})"
    )


def no_rigid(count: int, example: int = 1) -> str:
    return (
        f"it does not run rigid jobs (no speedup profile): {count} jobs (e.g. job {example}) "
        f"(run by: {handlers(RIGID_SCHEDULERS, _handles('rigid'))})"
    )


def no_curves(count: int, example: int = 1) -> str:
    curve_free = handlers(
        RIGID_SCHEDULERS + ", easy-mold", lambda name: not capability_table()[name].value_curves
    )
    return (
        f"it needs value curves, missing for {count} jobs (e.g. job {example}) (use a task-graph "
        "job set or "
        f"workload.market = true; schedulers that need none: {curve_free})"
    )


# What each cell lacks for easy-mold (cores, of several nodes for a spans_nodes job, and the
# burst buffer; profiles, no value curves).
MOLD_LACKS: dict[str, list[Callable[[], str]]] = {
    "cores": [lambda: no_rigid(10)],
    "gpu-mic": [
        lambda: ignores("GPUs", "gpus", 4, 1),
        lambda: ignores("MICs", "mics", 3, 2),
        lambda: no_rigid(10),
    ],
    "memory": [lambda: ignores("memory", "mem", 5, 1), lambda: no_rigid(10)],
    "burst-buffer": [lambda: no_rigid(10)],
    "queues": [lambda: no_rigid(10)],
    "moldable-gpu-mic": [
        lambda: ignores("GPUs", "gpus", 4, 1),
        lambda: ignores("MICs", "mics", 3, 2),
    ],
    "moldable-memory": [lambda: ignores("memory", "mem", 5, 1)],
}
# The market auctions account for every resource: they lack only rigid jobs' profiles and
# value curves (the cells of rigid jobs).
MARKET_LACKS: dict[str, list[Callable[[], str]]] = {
    cell: [lambda: no_rigid(10), lambda: no_curves(10)]
    for cell in ("cores", "gpu-mic", "memory", "burst-buffer", "queues")
}


def expected_refusal(scheduler: str, cell: str) -> str | None:
    """The pinned refusal of a built-in scheduler on a cell, or ``None`` when it runs."""
    caps = capability_table()[scheduler]
    if caps.molds and caps.value_curves:
        lacks = MARKET_LACKS.get(cell, [])
    elif caps.molds:
        lacks = MOLD_LACKS.get(cell, [])
    else:
        return None
    if not lacks:
        return None
    return f"scheduler {scheduler!r} cannot run this workload: " + "; ".join(
        lack() for lack in lacks
    )


PAIRS = [
    (scheduler, allocator)
    for scheduler in scheduler_names()
    for allocator in allocators_for(scheduler)
]


@pytest.mark.parametrize("cell", sorted(CELLS))
@pytest.mark.parametrize(("scheduler", "allocator"), PAIRS, ids=[f"{s}+{a}" for s, a in PAIRS])
def test_runs_or_is_refused_before_the_run(scheduler: str, allocator: str, cell: str) -> None:
    jobs = CELLS[cell]()
    expected = expected_refusal(scheduler, cell)
    if expected is not None:
        with pytest.raises(ConfigError) as refused:
            HPCModel(jobs, PLATFORM, scheduler=scheduler, allocator=allocator, seed=1)
        assert str(refused.value) == expected
        return
    model = HPCModel(
        jobs, PLATFORM, scheduler=scheduler, allocator=allocator, seed=1, record_timeseries=False
    )
    model.run()  # a PolicyError here is a mid-run refusal: the capabilities are wrong
    assert_schedule_invariants(jobs, model.recorder.jobs_frame(), PLATFORM)


def test_the_matrix_covers_every_builtin_family() -> None:
    families = {capability_table()[name].family for name, _ in PAIRS}
    assert {
        "classic",
        "heterogeneity",
        "cp",
        "bbsched",
        "queues",
        "market",
        "market baseline",
    } <= families
    assert set(builtin_capabilities()) <= set(scheduler_names())


def test_rigid_schedulers_run_moldable_jobs_at_their_requested_size() -> None:
    jobs = CELLS["moldable"]()
    model = HPCModel(jobs, PLATFORM, scheduler="fifo", seed=1, record_timeseries=False)
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")
    spanning = [job for job in jobs if job.units > 4]
    assert spanning, "the cell must hold jobs wider than a node"
    for job in spanning:
        row = frame.loc[job.job_id]
        assert ";" in row["nodes"], f"job {job.job_id} should span nodes: {row['nodes']}"
        assert (
            row["end_time"] - row["start_time"] == job.run_time
        )  # the market rule's profile[units - 1]


def test_rigid_schedulers_refuse_moldable_jobs_the_platform_cannot_hold_at_their_size() -> None:
    jobs = apply_market_rule([Job(7, 0.0, 10.0, 10.0, units=20), Job(8, 1.0, 10.0, 10.0, units=2)])
    molders = handlers(
        "easy-mold, " + MARKET_SCHEDULERS, lambda name: capability_table()[name].molds
    )
    expected = (
        "scheduler 'easy' cannot run this workload: it runs moldable jobs at their requested size, "
        "which "
        "the platform cannot hold for 1 job (e.g. job 7) (schedulers that mold jobs to a node: "
        f"{molders})"
    )
    with pytest.raises(ConfigError, match=re.escape(expected)):
        HPCModel(jobs, PLATFORM, scheduler="easy")
    model = HPCModel(jobs, PLATFORM, scheduler="maxv", seed=1)  # the auction molds it to one node
    model.run()
    assert_schedule_invariants(jobs, model.recorder.jobs_frame(), PLATFORM)
