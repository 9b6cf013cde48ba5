"""The job record and its lifecycle states."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from market_hpc.domain.resources import N_RESOURCES


class JobStatus(enum.Enum):
    """Where a job is in its life. Terminal states: finished, dropped, rejected."""

    QUEUED = "queued"
    RUNNING = "running"
    HELD = "held"
    FINISHED = "finished"
    DROPPED = "dropped"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class Job:
    """One job as submitted.

    A job asks for ``units`` identical units, each needing the resource vector ``unit``
    (cores, gpus, mics, mem in MiB; see ``market_hpc.domain.resources``). A plain
    parallel job of P processors that may span nodes is ``units=P, unit=(1, 0, 0, 0)``.
    Seed 000 jobs ask for several units of e.g. 4 cores + 1 GPU each. Units are placed
    all or nothing; several units of a job may share a node.

    Attributes:
        job_id: Unique identifier (SWF field 1).
        submit: Arrival time in seconds (or time-units for market studies).
        run_time: Real run time; drives the clock. For moldable task-graph jobs this is
            the 1-core response time and the real duration comes from the job's profile.
        estimate: What schedulers are told (wall-time request); never drives the clock.
        units: Number of identical units requested (>= 1).
        unit: Resource vector of one unit, length ``N_RESOURCES``.
        bb: Burst-buffer request from the shared pool (GB), 0 if none.
        user: Submitting user id, -1 when unknown.
        queue: Queue / partition id, -1 when unknown.
        profile: For moldable jobs (seed 002 task graphs), the response time on
            c = 1..len(profile) cores of one node; ``None`` for rigid jobs, which run
            ``run_time`` on exactly ``units`` units.
        payload: Extension data keyed by feature (e.g. ``"market"`` for value curves and
            task graphs). Never read by the model's core loop.
    """

    job_id: int
    submit: float
    run_time: float
    estimate: float
    units: int = 1
    unit: tuple[int, ...] = (1, 0, 0, 0)
    bb: float = 0.0
    user: int = -1
    queue: int = -1
    profile: tuple[float, ...] | None = None
    payload: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if len(self.unit) != N_RESOURCES:
            raise ValueError(f"job {self.job_id}: unit must have {N_RESOURCES} entries, got {self.unit}")
        if self.unit[0] < 1 or min(self.unit) < 0:
            raise ValueError(f"job {self.job_id}: a unit needs >= 1 core and no negative amounts, got {self.unit}")
        if self.units < 1:
            raise ValueError(f"job {self.job_id}: units must be >= 1, got {self.units}")

    @property
    def moldable(self) -> bool:
        """Whether the job may start on any core count 1..len(profile)."""
        return self.profile is not None

    @property
    def cores(self) -> int:
        """Total cores requested (units x cores per unit)."""
        return self.units * self.unit[0]

    def total(self, resource: int) -> int:
        """Total amount of one resource index requested."""
        return self.units * self.unit[resource]
