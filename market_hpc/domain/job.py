"""The job record and its lifecycle states."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

from market_hpc.domain.resources import N_RESOURCES
from market_hpc.errors import InvalidNumberError
from market_hpc.validation import (
    COUNT,
    MAX_INT,
    MAX_SECONDS,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE_TIME,
    TIME,
    check,
)

_INF = float("inf")
#: One processor core and nothing else: the unit of a plain processor job.
CORE_UNIT: tuple[int, int, int, int] = (1, 0, 0, 0)


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
    Netti et al.'s jobs ask for several units of e.g. 4 cores + 1 GPU each. Units are placed
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
        profile: For moldable jobs (market task graphs), the response time on
            c = 1..len(profile) cores of one node; ``None`` for rigid jobs, which run
            ``run_time`` on exactly ``units`` units.
        payload: Extension data keyed by feature (e.g. ``"market"`` for value curves and
            task graphs). Never read by the model's core loop.
        run_profile: For a moldable job whose dispatchers are told estimates, the response
            times that drive the clock (``run_time`` is to ``estimate`` as ``run_profile``
            is to ``profile``); ``None``: ``profile`` is the truth as well (task graphs
            profiled at design time, ``market_knowledge = "recorded"``).
    """

    job_id: int
    submit: float
    run_time: float
    estimate: float
    units: int = 1
    unit: tuple[int, ...] = CORE_UNIT
    bb: float = 0.0
    user: int = -1
    queue: int = -1
    profile: tuple[float, ...] | None = None
    payload: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    run_profile: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        # One chained test per field (~0.2 us a job): every number finite and in range
        # (NaN fails every comparison). Only a job that fails it pays for the detail.
        try:
            valid = (
                type(self.job_id) is int
                and 0 <= self.job_id <= MAX_INT
                and 0.0 <= self.submit <= MAX_SECONDS
                and 0.0 <= self.run_time <= MAX_SECONDS
                and 0.0 <= self.estimate <= MAX_SECONDS
                and 0.0 <= self.bb < _INF
                and type(self.units) is int
                and 1 <= self.units <= MAX_INT
                and (self.unit == CORE_UNIT or _unit_ok(self.unit))
                and (self.profile is None or _profile_ok(self.profile))
                and (
                    self.run_profile is None
                    or self.profile is not None
                    and _profile_ok(self.run_profile)
                    and len(self.run_profile) == len(self.profile)
                )
            )
        except TypeError:  # a string or None compared with a number
            valid = False
        if not valid:
            _check_job(self)

    @property
    def moldable(self) -> bool:
        """Whether the job may start on any core count 1..len(profile)."""
        return self.profile is not None

    @property
    def clock_profile(self) -> tuple[float, ...] | None:
        """The response times that drive the clock: ``run_profile`` when set, else ``profile``."""
        return self.profile if self.run_profile is None else self.run_profile

    @property
    def may_mold(self) -> bool:
        """Whether the job may start narrower than its request: moldable, and not held to
        its size by ``payload["molding"] = False`` (``workload.all_families.molding``)."""
        return self.profile is not None and self.payload.get("molding") is not False

    @property
    def cores(self) -> int:
        """Total cores requested (units x cores per unit)."""
        return self.units * self.unit[0]

    def total(self, resource: int) -> int:
        """Total amount of one resource index requested."""
        return self.units * self.unit[resource]


def _unit_ok(unit: object) -> bool:
    return (
        type(unit) is tuple
        and len(unit) == N_RESOURCES
        and all(type(a) is int and 0 <= a <= MAX_INT for a in unit)
        and unit[0] >= 1
    )


_NUMBER_TYPES = frozenset((float, int))


def _profile_ok(profile: object) -> bool:
    # C-level passes (types, then bounds) instead of one Python test per entry: a rigid
    # profile of a 17,000-unit Curie job has 17,000 entries. NaN passes min/max but not fsum.
    return (
        type(profile) is tuple
        and len(profile) >= 1
        and _NUMBER_TYPES.issuperset(map(type, profile))
        and 0.0 < min(profile)
        and max(profile) <= MAX_SECONDS
        and math.isfinite(math.fsum(profile))
    )


def _check_job(job: Job) -> None:
    """Raise ``InvalidNumberError`` naming the job's first invalid field (the slow path of
    ``Job.__post_init__``: numpy scalars that the fast test does not take pass here)."""
    where = f"job {job.job_id!r}"
    check(job.job_id, NON_NEGATIVE_INT, f"{where}: job_id")
    for name in ("submit", "run_time", "estimate"):
        check(getattr(job, name), TIME, f"{where}: {name}")
    check(job.bb, NON_NEGATIVE, f"{where}: bb")
    check(job.units, COUNT, f"{where}: units")
    unit = job.unit
    if not isinstance(unit, tuple | list) or len(unit) != N_RESOURCES:
        raise InvalidNumberError(
            f"{where}: unit",
            unit,
            f"a tuple of {N_RESOURCES} integers (cores >= 1, gpus, mics, mem in MiB >= 0)",
        )
    check(unit[0], COUNT, f"{where}: unit[0] (cores per unit)")
    for index in range(1, N_RESOURCES):
        check(unit[index], NON_NEGATIVE_INT, f"{where}: unit[{index}]")
    if job.profile is not None:
        if not isinstance(job.profile, tuple) or not job.profile:
            raise InvalidNumberError(
                f"{where}: profile", job.profile, "a non-empty tuple of run times"
            )
        for cores, seconds in enumerate(job.profile, start=1):
            check(
                seconds, POSITIVE_TIME, f"{where}: profile[{cores - 1}] (run time on {cores} cores)"
            )
    if job.run_profile is not None:
        if (
            job.profile is None
            or not isinstance(job.run_profile, tuple)
            or len(job.run_profile) != len(job.profile)
        ):
            raise InvalidNumberError(
                f"{where}: run_profile",
                job.run_profile,
                "a tuple of run times as long as the job's profile (which must be set)",
            )
        for cores, seconds in enumerate(job.run_profile, start=1):
            check(
                seconds,
                POSITIVE_TIME,
                f"{where}: run_profile[{cores - 1}] (real run time on {cores} cores)",
            )
