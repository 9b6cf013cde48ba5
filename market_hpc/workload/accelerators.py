"""Add GPU/MIC unit requests to the jobs of a CPU-only SWF trace (Netti et al., ISC'18).

SWF has no accelerator fields, so heterogeneous allocation on a real trace needs a rule
saying which jobs use accelerators and how. The rule (``AcceleratorRule``):

1. **Which jobs.** A job is an *accelerated* job of kind GPU (or MIC) when

   * its SWF partition (field 16) is ``gpu_partition`` (``mic_partition``): on CEA-Curie
     partition 8 is ``hybrid``, the partition of the 144 GPU nodes, so the jobs that
     ran there are the GPU jobs (14,260 of the trace's jobs); or
   * its user is one of a fixed fraction ``gpu_users`` (``mic_users``) of users, drawn
     by a stable hash of ``(seed, user)``: the same user is always drawn the same way,
     whatever slice of the trace is replayed, so a user's jobs are all GPU jobs or none
     (applications are GPU codes or not). Jobs with an unknown user (``-1``) are never
     drawn.

   A job drawn for both kinds becomes a GPU job (no node has both).
2. **What it asks.** A job of P processors becomes ``ceil(P / cores_per_unit)`` units of
   ``cores_per_unit`` cores plus ``accelerators_per_unit`` GPUs (MICs) and
   ``mem_per_unit`` GB each. The default 4 cores + 1 GPU puts 2 units on a Curie hybrid
   node (8 cores, 2 GPUs). Run time, estimate, user and queue are unchanged.
3. **What cannot be placed stays CPU-only.** A job whose converted request the platform
   cannot hold even when empty keeps its CPU-only request and is counted in the report
   (``kept_cpu_too_large``): it ran on the real machine, so rejecting it would change the
   workload more than the rule intends.
4. **Recorded requests stay.** A job that already asks for accelerators (the GPU
   request a Slurm trace recorded, :mod:`market_hpc.workload.gpu_requests`) is left as
   it is and counted (``kept_recorded``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.algorithms.allocation import units_fit
from market_hpc.domain.job import CORE_UNIT, Job
from market_hpc.domain.platform import MIB_PER_GB, Platform
from market_hpc.errors import ConfigError

SWF_JOB_ID, SWF_PARTITION = 0, 15  # 0-based columns


@dataclass(frozen=True)
class AcceleratorRule:
    """Which jobs of a trace use accelerators and what they ask (module docstring).

    Attributes:
        gpu_partition: SWF partition whose jobs become GPU jobs (None: not used).
        mic_partition: SWF partition whose jobs become MIC jobs (None: not used).
        gpu_users: Fraction of users whose jobs become GPU jobs, in [0, 1].
        mic_users: Fraction of users whose jobs become MIC jobs, in [0, 1].
        cores_per_unit: Cores of one accelerated unit (>= 1).
        accelerators_per_unit: GPUs (MICs) of one accelerated unit (>= 1).
        mem_per_unit: Memory of one accelerated unit in GB (>= 0).
        seed: Seed of the user draw.
    """

    gpu_partition: int | None = None
    mic_partition: int | None = None
    gpu_users: float = 0.0
    mic_users: float = 0.0
    cores_per_unit: int = 4
    accelerators_per_unit: int = 1
    mem_per_unit: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("gpu_users", "mic_users"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"workload.accelerators.{name} must be in [0, 1], got {value}")
        if self.cores_per_unit < 1 or self.accelerators_per_unit < 1 or self.mem_per_unit < 0:
            raise ConfigError(
                "workload.accelerators: needs cores_per_unit >= 1, accelerators_per_unit >= 1 and "
                f"mem_per_unit >= 0, got {self.cores_per_unit}, {self.accelerators_per_unit}, "
                f"{self.mem_per_unit}"
            )

    @property
    def enabled(self) -> bool:
        """Whether the rule changes anything."""
        return (
            self.gpu_partition is not None
            or self.mic_partition is not None
            or self.gpu_users > 0
            or self.mic_users > 0
        )

    @property
    def uses_partitions(self) -> bool:
        """Whether the rule needs the trace's partition field."""
        return self.gpu_partition is not None or self.mic_partition is not None


def user_draw(user: int, seed: int) -> float:
    """A stable uniform number in [0, 1) for ``(seed, user)``.

    >>> user_draw(42, 0) == user_draw(42, 0), 0.0 <= user_draw(42, 0) < 1.0
    (True, True)
    """
    digest = hashlib.blake2b(f"{seed}:{user}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def read_partitions(path: str | Path) -> dict[int, int]:
    """Job id -> SWF partition (field 16) of every job line of a trace."""
    frame = pd.read_csv(
        path,
        sep=r"\s+",
        comment=";",
        header=None,
        usecols=[SWF_JOB_ID, SWF_PARTITION],
        engine="c",
        compression="infer",
    )
    ids = frame[SWF_JOB_ID].to_numpy(dtype=np.int64)
    parts = frame[SWF_PARTITION].to_numpy(dtype=np.int64)
    return dict(zip(ids.tolist(), parts.tolist()))


def add_accelerators(
    jobs: Sequence[Job],
    rule: AcceleratorRule,
    platform: Platform,
    partitions: dict[int, int] | None = None,
) -> tuple[tuple[Job, ...], dict[str, Any]]:
    """Apply ``rule`` to ``jobs`` (see the module docstring).

    Args:
        jobs: Jobs in any order (returned in the same order).
        rule: The rule.
        platform: Where the jobs will run (decides what can be placed at all).
        partitions: Job id -> SWF partition, needed when the rule uses partitions.

    Returns:
        The jobs and a report: counts of GPU and MIC jobs made, jobs kept CPU-only
        because too large, jobs kept with the accelerators they recorded, and the rule.

    Raises:
        ConfigError: the rule uses partitions and none were given.

    >>> from market_hpc.domain.platform import load_platform
    >>> jobs = [Job(1, 0.0, 10.0, 20.0, units=6, user=3), Job(2, 0.0, 10.0, 20.0, units=99, user=3)]
    >>> platform = load_platform("nodes=4,cores=8,gpus=2")
    >>> out, report = add_accelerators(jobs, AcceleratorRule(gpu_users=1.0), platform)
    >>> [(j.units, j.unit) for j in out], report["gpu_jobs"], report["kept_cpu_too_large"]
    ([(2, (4, 1, 0, 0)), (99, (1, 0, 0, 0))], 1, 1)
    """
    if rule.uses_partitions and partitions is None:
        raise ConfigError("workload.accelerators: gpu_partition/mic_partition need an SWF trace")
    mem = round(rule.mem_per_unit * MIB_PER_GB)
    shapes = {
        "gpu": (rule.cores_per_unit, rule.accelerators_per_unit, 0, mem),
        "mic": (rule.cores_per_unit, 0, rule.accelerators_per_unit, mem),
    }
    room = {kind: int(units_fit(platform.capacity, shape).sum()) for kind, shape in shapes.items()}
    draws: dict[int, float] = {}
    counts = {"gpu_jobs": 0, "mic_jobs": 0, "kept_cpu_too_large": 0, "kept_recorded": 0}
    out = []
    for job in jobs:
        if job.unit != CORE_UNIT:  # the trace's own request
            counts["kept_recorded"] += 1
            out.append(job)
            continue
        kind = _kind(job, rule, partitions, draws)
        if kind is None:
            out.append(job)
            continue
        units = math.ceil(job.cores / rule.cores_per_unit)
        if units > room[kind]:
            counts["kept_cpu_too_large"] += 1
            out.append(job)
            continue
        counts[f"{kind}_jobs"] += 1
        out.append(dataclasses.replace(job, units=units, unit=shapes[kind], profile=None))
    return tuple(out), {**counts, "rule": dataclasses.asdict(rule)}


def _kind(
    job: Job, rule: AcceleratorRule, partitions: dict[int, int] | None, draws: dict[int, float]
) -> str | None:
    partition = partitions.get(job.job_id) if partitions is not None else None
    draw = None
    if job.user >= 0 and (rule.gpu_users > 0 or rule.mic_users > 0):
        draw = draws.get(job.user)
        if draw is None:
            draw = draws[job.user] = user_draw(job.user, rule.seed)
    if (rule.gpu_partition is not None and partition == rule.gpu_partition) or (
        draw is not None and draw < rule.gpu_users
    ):
        return "gpu"
    if (rule.mic_partition is not None and partition == rule.mic_partition) or (
        draw is not None and rule.gpu_users <= draw < rule.gpu_users + rule.mic_users
    ):
        return "mic"
    return None
