"""Pure transformations of job sequences: load scaling, prefixes and time windows.

Each transform is written once, as a stream (:func:`in_window`, :func:`prefix`,
:func:`scaled`, composed in the configured order by :func:`windowed`); the list
functions (:func:`time_slice`, :func:`first_n`, :func:`scale_load`) materialise the same
streams as tuples, and a streamed replay draws the jobs through them one by one
(``experiment.streaming``). Jobs are frozen, so changed jobs are copies
(``dataclasses.replace``) and the input is never modified. Order is preserved.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, InvalidNumberError
from market_hpc.validation import MAX_SECONDS, MAX_SECONDS_TEXT, POSITIVE_FACTOR, check


def scale_load(jobs: Sequence[Job], factor: float) -> tuple[Job, ...]:
    """Compress (factor > 1) or stretch (factor < 1) inter-arrival times.

    With ``t0`` the earliest submit time, each job's submit becomes
    ``t0 + (submit - t0) / factor``; run times and estimates are unchanged, so the
    offered load is multiplied by ``factor``.

    Args:
        jobs: Jobs in any order.
        factor: Positive, finite load multiplier.

    Returns:
        The jobs with scaled submit times, in input order.

    Raises:
        ConfigError: ``factor`` is not a positive finite number.

    >>> jobs = [Job(1, 100.0, 5.0, 5.0), Job(2, 110.0, 5.0, 5.0), Job(3, 140.0, 5.0, 5.0)]
    >>> [job.submit for job in scale_load(jobs, 2.0)]
    [100.0, 105.0, 120.0]
    >>> [job.submit for job in scale_load(jobs, 0.5)]
    [100.0, 120.0, 180.0]
    >>> scale_load(jobs, 0)
    Traceback (most recent call last):
    ...
    market_hpc.errors.InvalidNumberError: load factor: got 0; valid: a finite number > 0
    """
    check(factor, POSITIVE_FACTOR, "load factor")
    if not jobs:
        return ()
    t0 = min(job.submit for job in jobs)
    last = max(job.submit for job in jobs)
    scaled_submit(t0, last, factor)  # refuses a factor that stretches times beyond MAX_SECONDS
    return tuple(scaled(jobs, factor, t0))


def scaled(jobs: Iterable[Job], factor: float, origin: float | None = None) -> Iterator[Job]:
    """Each job with its submit time scaled from ``origin`` (:func:`scaled_submit`).

    Args:
        jobs: Jobs; without ``origin`` sorted by submit time (the first one's is the origin).
        factor: Positive, finite load multiplier (checked by the caller).
        origin: The time that stays put (``scale_load``: the earliest submit).

    >>> [job.submit for job in scaled([Job(1, 10.0, 1.0, 1.0), Job(2, 30.0, 1.0, 1.0)], 2.0)]
    [10.0, 20.0]
    """
    for job in jobs:
        if origin is None:
            origin = job.submit
        yield dataclasses.replace(job, submit=scaled_submit(origin, job.submit, factor))


def scaled_submit(origin: float, submit: float, factor: float) -> float:
    """``origin + (submit - origin) / factor``, refused when beyond ``MAX_SECONDS``.

    >>> scaled_submit(100.0, 140.0, 2.0)
    120.0
    >>> scaled_submit(0.0, 3600.0, 1e-300)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.InvalidNumberError: load factor: got 1e-300; valid: a factor keeping submit
    times in [0, 2^50 (1.1e15 s)] (the submit time 3600 s would become 3.6e+303 s)
    """
    scaled = origin + (submit - origin) / factor
    if not scaled <= MAX_SECONDS:
        raise InvalidNumberError(
            "load factor",
            factor,
            f"a factor keeping submit times in [0, {MAX_SECONDS_TEXT}] "
            f"(the submit time {submit:g} s would become {scaled:g} s)",
        )
    return scaled


def first_n(jobs: Sequence[Job], n: int) -> tuple[Job, ...]:
    """Keep the first ``n`` jobs (all of them when there are fewer).

    Args:
        jobs: Jobs, normally in submit order as :func:`read_swf` returns them.
        n: Number of jobs to keep, ``>= 0``.

    Raises:
        ConfigError: ``n`` is negative or not an integer.

    >>> jobs = [Job(i, float(i), 1.0, 1.0) for i in range(1, 6)]
    >>> [job.job_id for job in first_n(jobs, 3)]
    [1, 2, 3]
    >>> len(first_n(jobs, 10))
    5
    """
    return tuple(prefix(jobs, n))


def prefix(jobs: Iterable[Job], n: int) -> Iterator[Job]:
    """The first ``n`` jobs as a stream (:func:`first_n`).

    Raises:
        ConfigError: ``n`` is negative or not an integer.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ConfigError(f"number of jobs must be an integer >= 0, got {n!r}")
    return itertools.islice(jobs, n)


def check_window_keeps_jobs(
    submits: np.ndarray | Sequence[float], start: float | None, end: float | None, source: str
) -> None:
    """Refuse a time window (``workload.start``/``workload.end``) that keeps no job.

    Args:
        submits: The submit times of the workload's jobs (any order).
        start: ``workload.start`` (``None``: unset).
        end: ``workload.end`` (``None``: unset).
        source: The trace or job set the jobs come from (for the message).

    Raises:
        ConfigError: No submit time is in ``[start, end)``; names the window and the
            workload's range of submit times.

    >>> submits = np.array([10.0, 20.0])
    >>> check_window_keeps_jobs(submits, None, 0.0, "t.swf")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: workload.end = 0 keeps no job of t.swf: its jobs are submitted
    from 10 to 20 s
    """
    if start is None and end is None or not len(submits):
        return
    submits = np.asarray(submits, dtype=np.float64)
    low = -np.inf if start is None else start
    high = np.inf if end is None else end
    if bool(((submits >= low) & (submits < high)).any()):
        return
    window = ", ".join(
        f"workload.{name} = {value:g}"
        for name, value in (("start", start), ("end", end))
        if value is not None
    )
    raise ConfigError(
        f"{window} keeps no job of {source}: its jobs are submitted from "
        f"{float(submits.min()):g} to {float(submits.max()):g} s"
    )


def time_slice(
    jobs: Sequence[Job], start: float, end: float, *, rebase: bool = False
) -> tuple[Job, ...]:
    """Keep the jobs submitted in ``[start, end)``.

    Args:
        jobs: Jobs in any order.
        start: Window start (inclusive), seconds.
        end: Window end (exclusive), seconds; ``>= start``.
        rebase: Subtract ``start`` from the kept submit times, so the window starts
            at time 0.

    Returns:
        The jobs in the window, in input order.

    Raises:
        ConfigError: ``end < start`` or a bound is NaN.

    >>> jobs = [Job(i, t, 1.0, 1.0) for i, t in enumerate([0.0, 50.0, 100.0, 150.0])]
    >>> [job.submit for job in time_slice(jobs, 50, 150)]
    [50.0, 100.0]
    >>> [job.submit for job in time_slice(jobs, 50, 150, rebase=True)]
    [0.0, 50.0]
    """
    if math.isnan(start) or math.isnan(end) or end < start:
        raise ConfigError(f"time slice needs start <= end, got start={start!r}, end={end!r}")
    kept = in_window(jobs, start, end)
    if rebase:
        return tuple(dataclasses.replace(job, submit=job.submit - start) for job in kept)
    return tuple(kept)


def in_window(
    jobs: Iterable[Job], start: float | None, end: float | None, *, by_submit: bool = False
) -> Iterator[Job]:
    """The jobs submitted in ``[start, end)`` (``None``: unbounded), as a stream.

    Args:
        jobs: Jobs in any order.
        start: Window start (inclusive), or ``None``.
        end: Window end (exclusive), or ``None``.
        by_submit: The jobs come sorted by submit time: stop at the first at or past
            ``end`` (a streamed trace is not read beyond its window).

    >>> jobs = [Job(i, t, 1.0, 1.0) for i, t in enumerate([0.0, 50.0, 100.0, 150.0])]
    >>> [job.submit for job in in_window(jobs, 50.0, None)], [
    ...     job.submit for job in in_window(jobs, None, 100.0)
    ... ]
    ([50.0, 100.0, 150.0], [0.0, 50.0])
    """
    low = -math.inf if start is None else start
    high = math.inf if end is None else end
    if by_submit:
        return itertools.takewhile(
            lambda job: job.submit < high, (job for job in jobs if low <= job.submit)
        )
    return (job for job in jobs if low <= job.submit < high)


def windowed(
    jobs: Iterable[Job],
    start: float | None = None,
    end: float | None = None,
    n: int | None = None,
    *,
    by_submit: bool = False,
) -> Iterator[Job]:
    """The configured part of a workload before load scaling: the time window
    (``workload.start``/``end``), then the first ``n`` jobs (``workload.first_n``).

    >>> jobs = [Job(i, float(i), 1.0, 1.0) for i in range(10)]
    >>> [job.job_id for job in windowed(jobs, 2.0, 8.0, 3)]
    [2, 3, 4]
    """
    if start is not None or end is not None:
        jobs = in_window(jobs, start, end, by_submit=by_submit)
    return iter(jobs) if n is None else prefix(jobs, n)
