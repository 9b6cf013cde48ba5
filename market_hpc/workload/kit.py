"""A KIT-ForHLR-II-like workload for the ``kit-fh2`` preset (PCP'20, Galleguillos et al.; its KIT
trace is not among the shared traces).

Matched to what the PCP'20 paper and its code report: 1,152 thin
nodes (20 cores) and 21 fat nodes (48 cores, 4 GPUs, 1 TB), jobs asking for cores only
(the trace has no GPU requests; the authors' KIT config models cores only), 66.26% of
the jobs short (< 1 h), and the authors' conversion of a request into units: a request
below a node's cores is one unit, a multiple of a node is whole-node units
(``rn = cores / cores_per_node``). Thin-partition jobs use 20-core nodes, fat-partition
jobs 48-core ones; as in the authors' code the partition is not enforced, but a
48-core unit only fits a fat node.

Assumptions where the paper reports nothing, stated once here:

* 3% of jobs are fat-partition jobs (1-4 units of 48 cores, or one unit of 24-47);
  of the thin ones 35% ask for less than a node (1/2/4/8/10/16 cores), the others
  for 1/2/4/8/16/32/64/128 nodes (p .40/.18/.14/.12/.08/.05/.02/.01).
* Short run times: truncated exponential on [10 s, 1 h) with a 15-minute scale; the
  others log-uniform on [1 h, 72 h] (72 h: ForHLR II's longest wall-time).
* Requested wall-time: the run time times a factor in [1, 3] rounded up to 15
  minutes, at most 72 h; 10% of jobs ask for 72 h.
* Arrivals: Poisson, at the rate that offers ``load`` times the platform's cores
  (work = cores x run time); 40 users with Zipf(1) activity.
"""

from __future__ import annotations

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform, load_platform
from market_hpc.domain.resources import RESOURCES
from market_hpc.errors import ConfigError

HOUR = 3600.0
SHORT_SHARE = 0.6626
MAX_WALLTIME = 72 * HOUR
THIN_CORES, FAT_CORES = 20, 48
FAT_SHARE = 0.03
SUB_NODE_SHARE = 0.35
SUB_NODE_CORES = (1, 2, 4, 8, 10, 16)
NODE_COUNTS = ((1, 2, 4, 8, 16, 32, 64, 128), (0.40, 0.18, 0.14, 0.12, 0.08, 0.05, 0.02, 0.01))
USERS = 40


def _durations(rng: np.random.Generator, count: int) -> np.ndarray:
    short = np.zeros(count, dtype=bool)  # the paper's share exactly, at random positions
    short[rng.permutation(count)[: round(SHORT_SHARE * count)]] = True
    scale = 900.0
    u = rng.random(count)
    # inverse CDF of an exponential truncated to [10 s, 1 h)
    top = 1.0 - np.exp(-(HOUR - 10.0) / scale)
    short_times = 10.0 + -scale * np.log1p(-u * top)
    long_times = np.exp(rng.uniform(np.log(HOUR), np.log(MAX_WALLTIME), count))
    return np.floor(np.where(short, short_times, long_times))


def _request(rng: np.random.Generator) -> tuple[int, int]:
    """(units, cores per unit) of one job, by the authors' conversion of a core count."""
    if rng.random() < FAT_SHARE:
        if rng.random() < 0.5:
            return 1, int(rng.integers(24, FAT_CORES))
        return int(rng.integers(1, 5)), FAT_CORES
    if rng.random() < SUB_NODE_SHARE:
        return 1, int(rng.choice(SUB_NODE_CORES))
    counts, weights = NODE_COUNTS
    return int(rng.choice(counts, p=weights)), THIN_CORES


def kit_like(
    n_jobs: int, seed: int = 0, load: float = 0.9, platform: Platform | str = "kit-fh2"
) -> tuple[Job, ...]:
    """Generate ``n_jobs`` KIT-like jobs offering ``load`` x the platform's cores.

    Raises:
        ConfigError: for bad parameters, or when a job cannot fit ``platform`` (naming
            the job and the resource, see ``require_fits``).

    >>> jobs = kit_like(2000, seed=1)
    >>> round(sum(j.run_time < 3600 for j in jobs) / len(jobs), 2)
    0.66
    >>> sorted({j.unit[0] for j in jobs if j.units > 1})
    [20, 48]
    """
    if n_jobs < 1 or load <= 0:
        raise ConfigError(f"kit workload needs jobs >= 1 and load > 0, got {n_jobs}, {load}")
    target = load_platform(platform)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1001]))
    run = _durations(rng, n_jobs)
    requests = [_request(rng) for _ in range(n_jobs)]
    work = sum(units * cores * t for (units, cores), t in zip(requests, run))
    span = work / (load * target.total_cores)
    submits = np.floor(np.sort(rng.uniform(0.0, span, n_jobs)))
    factor = rng.uniform(1.0, 3.0, n_jobs)
    asks_max = rng.random(n_jobs) < 0.1
    estimate = np.minimum(np.ceil(np.maximum(run, 1.0) * factor / 900.0) * 900.0, MAX_WALLTIME)
    estimate = np.where(asks_max, MAX_WALLTIME, np.maximum(estimate, run))
    weights = 1.0 / np.arange(1, USERS + 1)
    users = rng.choice(USERS, size=n_jobs, p=weights / weights.sum())
    jobs = tuple(
        Job(
            i + 1,
            float(submits[i]),
            float(run[i]),
            float(estimate[i]),
            units=units,
            unit=(cores, 0, 0, 0),
            user=int(users[i]),
            queue=0 if cores < FAT_CORES else 1,
        )
        for i, (units, cores) in enumerate(requests)
    )
    require_fits(jobs, target, f"kit workload (seed {seed})")
    return jobs


def require_fits(jobs: tuple[Job, ...] | list[Job], platform: Platform, source: str) -> None:
    """Fail at load time for a job the empty platform can never hold.

    Raises:
        ConfigError: naming the first such job, the resource that is short and what the
            platform offers.

    >>> from market_hpc.domain.platform import parse_inline
    >>> require_fits([Job(7, 0.0, 1.0, 1.0, units=1, unit=(2, 1, 0, 0))],
    ...              parse_inline("nodes=2,cores=4"), "demo")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: demo: job 7 can never run on 'nodes=2,cores=4': a unit needs
    gpus=1 but the largest node has 0
    """
    from market_hpc.algorithms.cp.instance import unfit_reason

    capacity = platform.capacity
    checked: dict[tuple[tuple[int, ...], int], str | None] = {}
    for job in jobs:
        key = (job.unit, job.units)
        if key not in checked:
            checked[key] = unfit_reason(job.unit, job.units, capacity, RESOURCES)
        reason = checked[key]
        if reason is not None:
            raise ConfigError(
                f"{source}: job {job.job_id} can never run on {platform.name!r}: {reason}"
            )
