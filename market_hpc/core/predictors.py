"""Online run-time predictors (Netti et al., ISC'18, after AccaSim): what schedulers see.

The model calls ``predict(job, now)`` when a job arrives and uses the result as the
estimate every policy sees; the clock always uses the real run time. ``observe(job,
run_time, now)`` is called at the job's *simulated* completion, so a prediction only
uses runs that had finished before the job was submitted (causal).

=============== ==================================================================
name            prediction
=============== ==================================================================
``wall-time``   the job's requested wall-time (its ``estimate`` in the workload)
``data-driven`` the mean run time of the user's last two completed jobs, capped by
                the request; with one completed job, that job's run time; with none
                (or an unknown user, ``user == -1``), the requested wall-time
``real``        the job's real run time (the oracle)
=============== ==================================================================

Decisions where the paper is silent or where its heuristic needs data we lack:

* The data-driven predictor is the simple per-user locality rule of the issue rather
  than the 6-rule profile cascade of Galleguillos et al. (job names are not in SWF
  traces); it exploits the same observation that consecutive jobs of a user run for
  similar times.
* Its fallback and cap are the job's own request (AccaSim code semantics):
  the workloads carry no per-queue default or maximum wall-time.
* "Last" means last to *complete* in simulated time, the order in which the knowledge
  base learns about runs.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable

from market_hpc.domain.job import Job
from market_hpc.errors import UnknownNameError
from market_hpc.validation import MAX_SECONDS

MIN_PROFILE_TIME = 1.0  # a predicted profile's shortest response time (the market's 1 s grid)

HISTORY = 2


class WallTimePredictor:
    """Predict the requested wall-time (what schedulers see without a predictor)."""

    name = "wall-time"

    def predict(self, job: Job, now: float) -> float:
        """The job's request."""
        return job.estimate

    def observe(self, job: Job, run_time: float, now: float) -> None:
        """Nothing to learn."""


class RealRunTimePredictor:
    """Predict the real run time (perfect knowledge; the paper's R)."""

    name = "real"

    def predict(self, job: Job, now: float) -> float:
        """The job's real run time."""
        return job.run_time

    def observe(self, job: Job, run_time: float, now: float) -> None:
        """Nothing to learn."""


class UserHistoryPredictor:
    """Mean of the user's last ``history`` completed run times, capped by the request.

    >>> predictor = UserHistoryPredictor()
    >>> job = Job(1, 0.0, 50.0, 3600.0, user=7)
    >>> predictor.predict(job, 0.0)            # no history: the request
    3600.0
    >>> predictor.observe(Job(2, 0.0, 100.0, 3600.0, user=7), 100.0, 100.0)
    >>> predictor.predict(job, 100.0)          # one run
    100.0
    >>> for run in (200.0, 400.0):
    ...     predictor.observe(Job(3, 0.0, run, 3600.0, user=7), run, 500.0)
    >>> predictor.predict(job, 500.0)          # the last two: (200 + 400) / 2
    300.0
    >>> predictor.predict(Job(4, 0.0, 5.0, 120.0, user=7), 500.0)   # capped by the request
    120.0
    """

    name = "data-driven"

    def __init__(self, history: int = HISTORY) -> None:
        if history < 1:
            raise ValueError(f"history must be >= 1, got {history}")
        self.history = history
        self._runs: dict[int, deque[float]] = {}

    def predict(self, job: Job, now: float) -> float:
        """Mean of the user's recent runs, capped by the request; else the request."""
        runs = self._runs.get(job.user)
        if not runs:
            return job.estimate
        return min(sum(runs) / len(runs), job.estimate)

    def observe(self, job: Job, run_time: float, now: float) -> None:
        """Remember the run time of a completed job of a known user."""
        if job.user < 0:
            return
        runs = self._runs.get(job.user)
        if runs is None:
            runs = self._runs[job.user] = deque(maxlen=self.history)
        runs.append(float(run_time))


Predictor = WallTimePredictor | RealRunTimePredictor | UserHistoryPredictor
PREDICTORS: dict[str, Callable[[], Predictor]] = {
    "wall-time": WallTimePredictor,
    "data-driven": UserHistoryPredictor,
    "real": RealRunTimePredictor,
}


def predicted(job: Job, estimate: float) -> Job:
    """``job`` as a scheduler told ``estimate`` sees it.

    A moldable job whose dispatchers are told estimates (a ``run_profile`` beside its
    ``profile``, ``workload.all_families.market_knowledge = "estimate"``) is told a profile
    of the same shape scaled to the prediction as well: the market's auctions read the
    profile where rigid policies read the estimate. Widths of ``NARROWER_TIME`` (a job that
    may not mold) stay past every value curve, capped at ``MAX_SECONDS``.

    >>> job = Job(1, 0.0, 10.0, 40.0, units=2, profile=(80.0, 40.0), run_profile=(20.0, 10.0))
    >>> predicted(job, 10.0).profile, predicted(job, 10.0).estimate
    ((20.0, 10.0), 10.0)
    >>> predicted(job, 40.0) is job
    True
    """
    if estimate == job.estimate:
        return job
    if job.run_profile is None:
        return dataclasses.replace(job, estimate=estimate)
    real = job.run_profile[job.units - 1] if job.units <= len(job.run_profile) else job.run_time
    factor = estimate / real if real > 0 else 1.0
    profile = tuple(min(max(t * factor, MIN_PROFILE_TIME), MAX_SECONDS) for t in job.run_profile)
    return dataclasses.replace(job, estimate=estimate, profile=profile)


def predictor_names() -> list[str]:
    """Registered predictor names, sorted."""
    return sorted(PREDICTORS)


def make_predictor(name: str) -> Predictor:
    """A fresh predictor by name.

    Raises:
        UnknownNameError: for an unknown name, listing the registered ones.

    >>> make_predictor("real").name
    'real'
    >>> make_predictor("oracle")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.UnknownNameError: unknown predictor 'oracle'; valid choices: data-driven,
        real, wall-time
    """
    factory = PREDICTORS.get(name.lower())
    if factory is None:
        raise UnknownNameError("predictor", name, PREDICTORS)
    return factory()
