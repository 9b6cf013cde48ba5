"""Seeded synthetic rigid-job workloads after Lublin & Feitelson (2003).

U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the
characteristics of rigid jobs", J. Parallel Distrib. Comput. 63(11):1105-1122, 2003.
Parameters are the paper's batch-job defaults, as in the authors' reference program
``m_lublin99.c``:

* **Size.** With probability ``SERIAL_PROB = 0.2927`` a job is serial. Otherwise
  ``x = log2(size)`` comes from a two-stage uniform: ``U(ULOW, UMED)`` with probability
  ``UPROB = 0.875``, else ``U(UMED, UHI)``, with ``ULOW = 1.2``; with probability
  ``POW2_PROB = 0.6686`` (of all jobs) ``x`` is rounded to an integer, giving a power of
  two; the size is ``round(2**x)``.
* **Run time.** ``log(run time)`` follows a hyper-gamma: ``Gamma(A1 = 6.57,
  B1 = 0.823)`` with probability ``p = PA * size + PB`` (``PA = -0.003``,
  ``PB = 0.6986``, clipped to [0, 1]), else ``Gamma(A2 = 639.1, B2 = 0.0156)`` (shape,
  scale), so bigger jobs run longer. Draws above ``log`` 12 (about 45 hours) are redrawn.
* **Arrivals.** ``log(inter-arrival)`` at rush hour is ``Gamma(AARR * ARAR =
  6.0415 * 1.0519, BARR = 0.8531)``, redrawn above 13. A daily cycle of 48 half-hour
  buckets weights bucket ``i`` by ``GammaCDF(i + 0.5) - GammaCDF(i - 0.5)`` with shape
  ``ANUM = 6.1271`` and scale ``BNUM = 5.2740`` over ``i = 11 .. 58`` (taken modulo the
  day: the fitted day starts at ``CYCLIC_DAY_START``), normalised to mean 1. Each
  inter-arrival buys ``exp(gamma) / 1800`` points, and the clock crosses a bucket by
  paying its weight, so quiet hours pass quickly; the trace starts at midnight and the
  first job arrives after one inter-arrival.

Deviations and choices (the reference program targets a 128-node machine):

* ``UHI = log2(max_procs)`` and ``UMED = UHI - 2`` (the batch default 5 for 128 nodes),
  with ``ULOW <= UMED <= UHI`` enforced for tiny machines. A power-of-two size rounded
  above ``max_procs`` becomes the largest power of two ``<= max_procs``; other sizes are
  capped at ``max_procs``. ``max_procs = 1`` gives serial jobs only.
* Only batch jobs are generated (the interactive class is not mixed in).
* ``p`` uses the size in processors as fitted, so for machines far above 128 processors
  large jobs almost always take the long run-time branch.
* Run times and submit times are whole seconds (run time >= 1 s), as in the reference.
* ``load_factor`` divides every arrival time (see ``transform.scale_load``), compressing
  the daily cycle too.
* Random numbers come from numpy (four independent streams spawned from ``seed`` for
  sizes, run times, arrivals and estimates), so samples match the model, not the bits of
  the reference program's ``drand48``.
* Estimates (not part of the model): the run time times a user overestimate factor drawn
  uniformly from ``[1, OVERESTIMATE_MAX = 5]`` (in the spirit of the "f-model" of
  Mu'alem & Feitelson, IEEE TPDS 12(6), 2001), rounded up to whole minutes as users
  request wall time. Estimates are never below the run time.
"""

from __future__ import annotations

import math

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError
from market_hpc.validation import POSITIVE_FACTOR, check

SERIAL_PROB = 0.2927
POW2_PROB = 0.6686
ULOW, UMED_BELOW_UHI, UPROB = 1.2, 2.0, 0.875
A1, B1, A2, B2, PA, PB = 6.57, 0.823, 639.1, 0.0156, -0.003, 0.6986
AARR, BARR, ARAR = 6.0415, 0.8531, 1.0519
ANUM, BNUM = 6.1271, 5.2740
CYCLIC_DAY_START = 11
BUCKETS = 48
SECONDS_IN_BUCKET = 86400 / BUCKETS
MAX_LOG_RUN_TIME = 12.0
MAX_LOG_INTER_ARRIVAL = 13.0
OVERESTIMATE_MAX = 5.0


def lublin_feitelson(
    n_jobs: int, max_procs: int = 128, seed: int = 0, *, load_factor: float = 1.0
) -> tuple[Job, ...]:
    """Generate a batch workload from the Lublin & Feitelson (2003) model.

    Args:
        n_jobs: Number of jobs, ``>= 0``.
        max_procs: Processors of the target machine (largest job size), ``>= 1``.
        seed: Seed, ``>= 0``; the same arguments give the same jobs, bit for bit.
        load_factor: Positive multiplier of the arrival rate (1 = the model's rate).

    Returns:
        Jobs with ids ``1..n_jobs`` in submit order, ``units = size`` processors,
        ``unit = (1, 0, 0, 0)``, unknown user and queue (``-1``).

    Raises:
        ConfigError: An argument is out of range.

    >>> jobs = lublin_feitelson(200, 64, seed=7)
    >>> len(jobs), max(job.units for job in jobs) <= 64
    (200, True)
    >>> jobs == lublin_feitelson(200, 64, seed=7)
    True
    >>> all(job.estimate >= job.run_time >= 1 for job in jobs)
    True
    """
    _check_int("n_jobs", n_jobs, 0)
    _check_int("max_procs", max_procs, 1)
    _check_int("seed", seed, 0)
    check(load_factor, POSITIVE_FACTOR, "load_factor")
    if n_jobs == 0:
        return ()
    size_rng, run_rng, arrival_rng, estimate_rng = (
        np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(4)
    )
    sizes = job_sizes(n_jobs, max_procs, size_rng)
    run_times = run_times_for(sizes, run_rng)
    arrivals = np.floor(arrival_times(n_jobs, arrival_rng) / load_factor)
    factors = estimate_rng.uniform(1.0, OVERESTIMATE_MAX, n_jobs)
    estimates = np.maximum(np.ceil(run_times * factors / 60.0) * 60.0, run_times)
    return tuple(
        Job(job_id, submit, run, estimate, units=size)
        for job_id, submit, run, estimate, size in zip(
            range(1, n_jobs + 1),
            arrivals.tolist(),
            run_times.tolist(),
            estimates.tolist(),
            sizes.tolist(),
            strict=True,
        )
    )


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")


def job_sizes(n: int, max_procs: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` job sizes (processors) for a machine of ``max_procs`` processors.

    >>> sizes = job_sizes(1000, 128, np.random.default_rng(1))
    >>> int(sizes.min()) >= 1 and int(sizes.max()) <= 128
    True
    """
    uhi = math.log2(max_procs)
    ulow = min(ULOW, uhi)
    umed = min(max(uhi - UMED_BELOW_UHI, ulow), uhi)
    kind, stage, position = rng.random((3, n))
    low = np.where(stage <= UPROB, ulow, umed)
    high = np.where(stage <= UPROB, umed, uhi)
    exponent = low + position * (high - low)
    power_of_two = (kind > SERIAL_PROB) & (kind <= SERIAL_PROB + POW2_PROB)
    largest_power = math.floor(uhi + 1e-9)
    exponent = np.where(power_of_two, np.minimum(np.floor(exponent + 0.5), largest_power), exponent)
    sizes: np.ndarray = np.minimum(np.floor(2.0**exponent + 0.5), max_procs).astype(np.int64)
    sizes[kind <= SERIAL_PROB] = 1
    return sizes


def run_times_for(sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one run time (whole seconds) per job size from the hyper-gamma model.

    >>> runs = run_times_for(np.array([1, 2, 64]), np.random.default_rng(3))
    >>> runs.shape, bool((runs >= 1).all())
    ((3,), True)
    """
    p_first = np.clip(PA * sizes + PB, 0.0, 1.0)
    log_run = np.full(len(sizes), np.inf)
    todo = np.arange(len(sizes))
    while todo.size:
        first = rng.random(todo.size) <= p_first[todo]
        draws = np.where(
            first,
            rng.gamma(A1, B1, todo.size),
            rng.gamma(A2, B2, todo.size),
        )
        log_run[todo] = draws
        todo = todo[draws > MAX_LOG_RUN_TIME]
    run_times: np.ndarray = np.maximum(np.floor(np.exp(log_run)), 1.0)
    return run_times


def daily_weights() -> np.ndarray:
    """Return the 48 half-hour arrival weights of a day from midnight, mean 1.

    >>> weights = daily_weights()
    >>> weights.shape, round(float(weights.mean()), 12)
    ((48,), 1.0)
    >>> int(weights.argmax()) // 2  # the busiest hour
    13
    """
    weights = np.zeros(BUCKETS)
    for i in range(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START):
        weights[(i - 1) % BUCKETS] = _gamma_cdf(i + 0.5, ANUM, BNUM) - _gamma_cdf(
            i - 0.5, ANUM, BNUM
        )
    normalised: np.ndarray = weights / weights.mean()
    return normalised


def arrival_times(n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` arrival times (seconds, non-decreasing) with the daily cycle."""
    weights = daily_weights()
    log_gaps = np.full(n, np.inf)
    todo = np.arange(n)
    while todo.size:
        log_gaps[todo] = rng.gamma(AARR * ARAR, BARR, todo.size)
        todo = todo[log_gaps[todo] > MAX_LOG_INTER_ARRIVAL]
    points_per_gap = (np.exp(log_gaps) / SECONDS_IN_BUCKET).tolist()
    times = np.empty(n)
    clock = points = remainder = 0.0
    bucket = 0
    for index, gained in enumerate(points_per_gap):
        points += gained
        gap = 0.0
        while points > weights[bucket]:
            points -= weights[bucket]
            bucket = (bucket + 1) % BUCKETS
            gap += SECONDS_IN_BUCKET
        fraction = points / weights[bucket]
        gap += SECONDS_IN_BUCKET * (fraction - remainder)
        remainder = fraction
        clock += gap
        times[index] = clock
    return times


def _gamma_cdf(x: float, shape: float, scale: float) -> float:
    """Gamma distribution CDF by the series of the regularised incomplete gamma.

    >>> round(_gamma_cdf(2.0, 1.0, 1.0), 12) == round(1 - math.exp(-2.0), 12)
    True
    """
    if x <= 0:
        return 0.0
    z = x / scale
    term = total = 1.0 / shape
    denominator = shape
    for _ in range(10_000):
        denominator += 1.0
        term *= z / denominator
        total += term
        if term < total * 1e-16:
            break
    return total * math.exp(-z + shape * math.log(z) - math.lgamma(shape))
