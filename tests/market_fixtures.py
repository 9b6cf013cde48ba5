"""Hand-built market workloads shared by the market tests."""

from __future__ import annotations

from market_hpc.algorithms.valuecurve import PiecewiseLinearCurve, StepCurve
from market_hpc.domain.job import Job

# Fig. 5 of Singh et al. (HPCS 2015): expected values ("Loss") of the running jobs.
FIG5_LOSSES = {1: 100.0, 2: 120.0, 3: 50.0, 4: 240.0, 5: 80.0, 6: 300.0, 7: 60.0}
# (job, cores, arrival): with maxV/maxVH on hlrs-3x9 these land as the paper's Fig. 5:
# node 0 runs j1, j4, j7; node 1 runs j3, j2, j5; node 2 runs j6; all 27 cores busy.
FIG5_ARRIVALS = ((1, 3, 0), (3, 3, 1), (6, 9, 2), (4, 3, 3), (2, 4, 4), (7, 3, 5), (5, 2, 6))


def rigid_profile(cores: int) -> tuple[float, ...]:
    """A job whose best core count is ``cores`` (flat after it), long enough to stay running."""
    return tuple(float(1000 // min(c, cores)) for c in range(1, cores + 1))


def market_job(job_id: int, arrival: float, profile: tuple[float, ...], curve: object) -> Job:
    """A moldable market job with a value curve."""
    return Job(
        job_id,
        arrival,
        profile[0],
        profile[0],
        units=len(profile),
        profile=profile,
        payload={"value_curve": curve},
    )


def fig5_jobs() -> list[Job]:
    """Seven running jobs filling hlrs-3x9 and j8 arriving at t=7.

    j8's value: 400 when done within 10 time-units of arrival, 100 at 20, 0 at 30; its
    response time is 20 on 3 cores, 10 on 6 (c* = 6) and 30 on 2. Holding {j7} frees 3
    cores (net 100 - 60 = 40), {j7, j4} 6 (400 - 300 = 100), {j5} 2 (0 - 80 = -80),
    {j5, j2} 6 (400 - 200 = 200): the paper's Fig. 5 table.
    """
    jobs = [
        market_job(job_id, arrival, rigid_profile(cores), StepCurve(FIG5_LOSSES[job_id], 10_000.0))
        for job_id, cores, arrival in FIG5_ARRIVALS
    ]
    j8_curve = PiecewiseLinearCurve(((0, 400), (10, 400), (20, 100), (30, 0)))
    jobs.append(market_job(8, 7, (60.0, 30.0, 20.0, 15.0, 12.0, 10.0), j8_curve))
    return jobs
