"""The small built-in workloads the conformance checks run a policy on.

Which ones a policy gets follows its declared capabilities (``policies.capabilities``):

* every policy that does not mold jobs: seeded random rigid jobs
  (``invariants.random_workload``, 30 jobs) on single-core nodes, multi-core nodes and a
  mixed thin/fat platform, two seeds each; the mixed platform's jobs ask for GPUs when the
  policy declares ``gpus``, and a third of them for burst buffer (from an 8 GB pool) when
  it declares ``bb``;
* market policies and policies that mold jobs: moldable jobs with value curves, the
  market paper's overload of its 3 x 9-core platform (``overload_market_jobs``) and the
  market rule applied to random trace-like jobs (speedup profiles, value curves, jobs
  that span nodes), with GPUs and burst buffer as declared.

Decision: value curves are given to every moldable workload, so a policy that molds but
ignores value curves runs the same jobs as the market auctions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from market_hpc.algorithms.valuecurve import LinearDecayCurve
from market_hpc.domain.job import Job
from market_hpc.domain.platform import NodeType, Platform
from market_hpc.policies.capabilities import Capabilities
from market_hpc.testing.invariants import random_workload

SEEDS = (101, 102)
"""Seeds of the random rigid workloads."""
JOBS_PER_WORKLOAD = 30
MIXED = Platform("mixed", (NodeType("thin", 3, 4), NodeType("fat", 2, 8, gpus=2)))
BURST_BUFFER_GB = 8.0
MARKET_PLATFORM = "hlrs-3x9"
"""The market paper's platform (3 nodes x 9 cores)."""


@dataclass(frozen=True)
class Workload:
    """Jobs on a platform, with the label that names them in failure messages."""

    label: str
    platform: Platform | str
    jobs: tuple[Job, ...]


def with_burst_buffer(jobs: list[Job]) -> list[Job]:
    """Every third job (by id) asks for 1..5 GB of burst buffer."""
    return [
        replace(job, bb=float(1 + job.job_id % 5)) if job.job_id % 3 == 0 else job for job in jobs
    ]


def rigid_workloads(capabilities: Capabilities) -> list[Workload]:
    """The random rigid workloads for a policy with ``capabilities``."""
    gpus = "gpus" in capabilities.resources
    bb = "bb" in capabilities.resources
    mixed_units: list[tuple[int, ...]] = [(1, 0, 0, 0), (2, 0, 0, 0)]
    mixed_units += [(2, 1, 0, 0)] if gpus else []
    mixed = replace(MIXED, burst_buffer=BURST_BUFFER_GB) if bb else MIXED
    states: list[tuple[str, Platform | str, Sequence[tuple[int, ...]]]] = [
        ("heterogeneous", mixed, mixed_units),
        ("multi-core", "nodes=4,cores=4", [(2, 0, 0, 0), (1, 0, 0, 0)]),
        ("single-core", "nodes=5,cores=1", [(1, 0, 0, 0)]),
    ]
    workloads = []
    for name, platform, units in states:
        for seed in SEEDS:
            jobs = random_workload(seed, platform, units, count=JOBS_PER_WORKLOAD)
            if bb and platform is mixed:
                jobs = with_burst_buffer(jobs)
            workloads.append(Workload(f"{name}-seed{seed}", platform, tuple(jobs)))
    return workloads


def overload_market_jobs(seed: int, count: int = 40) -> list[Job]:
    """Moldable task-graph-like jobs with linear-decay value curves, arriving 0..3
    time-units apart: an overload of the market paper's 3 x 9-core platform, where the
    holding policies hold."""
    rng = np.random.default_rng(seed)
    jobs = []
    t = 0
    for job_id in range(1, count + 1):
        t += int(rng.integers(0, 4))
        tasks = int(rng.integers(3, 9))
        serial = float(rng.integers(20, 80))
        profile = tuple(float(np.ceil(max(serial / c, serial / 4))) for c in range(1, tasks + 1))
        plateau = profile[-1] * rng.uniform(1.0, 1.5)
        curve = LinearDecayCurve(
            float(rng.uniform(100, 1000)), plateau, plateau + rng.uniform(1, 3) * serial
        )
        jobs.append(
            Job(
                job_id,
                t,
                profile[0],
                profile[0],
                units=len(profile),
                profile=profile,
                payload={"value_curve": curve},
            )
        )
    return jobs


def moldable_workloads(capabilities: Capabilities) -> list[Workload]:
    """The moldable, valued workloads for a market policy or one that molds jobs."""
    from market_hpc.workload.market_rule import apply_market_rule

    gpus = "gpus" in capabilities.resources
    bb = "bb" in capabilities.resources
    platform: Platform | str = MIXED if gpus else "nodes=4,cores=4"
    units: list[tuple[int, ...]] = [(1, 0, 0, 0), (2, 0, 0, 0)]
    units += [(2, 1, 0, 0)] if gpus else []
    trace_like = random_workload(103, platform, units, count=20)
    if bb:
        platform = replace(MIXED, burst_buffer=BURST_BUFFER_GB) if gpus else f"{platform},bb=8"
        trace_like = with_burst_buffer(trace_like)
    too_large = set(random_workload_rejects(trace_like, platform))
    return [
        Workload("market-overload-seed5", MARKET_PLATFORM, tuple(overload_market_jobs(5, 30))),
        Workload(
            "market-rule-seed103",
            platform,
            tuple(apply_market_rule(job for job in trace_like if job.job_id not in too_large)),
        ),
    ]


def random_workload_rejects(jobs: list[Job], platform: Platform | str) -> list[int]:
    """Ids of the jobs too large for the empty platform (the market rule makes moldable
    jobs of them that no policy could run at their size)."""
    from market_hpc.domain.platform import load_platform
    from market_hpc.testing.invariants import can_ever_run

    loaded = load_platform(platform)
    return [job.job_id for job in jobs if not can_ever_run(job, loaded)]


def workloads_for(capabilities: Capabilities, moldable: bool) -> list[Workload]:
    """The workloads a policy runs: moldable ones when it is a market policy or molds."""
    return moldable_workloads(capabilities) if moldable else rigid_workloads(capabilities)
