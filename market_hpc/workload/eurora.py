"""An Eurora-like workload for the ``eurora`` preset (the real trace is not public).

Matched to what Netti et al. (ISC 2018) report:

* job classes by the counts of Table 1: CPU-only 85,046 (22.8%), MIC 2,500 (0.7%),
  GPU 284,774 (76.4%), with mean durations 47:36, 56:28 and 6:23 (2856 s, 3388 s, 383 s);
* duration classes over all jobs: short (< 1 h) 93.14%, medium (1-5 h) 6.10%, long
  (> 5 h) 0.76% (the printed 0.75% plus the rounding remainder);
* monthly load levels (``MONTHS``): the months' job counts (Apr 2015 3,740, Apr 2014
  85,245, Sep 2014 77,786, Aug 2014 47,967, each spread over 30 days), Apr 2014's 30.8%
  and Apr 2015's "about half" CPU-only jobs, Apr 2014's frequent bursts and 5,000
  core-hour burst at the start, Apr 2015's 8,000 core-hour burst mid-month, the
  "tamer" bursts of Sep 2014 and the evenly spread jobs of Aug 2014. ``month=None``
  gives the whole-trace averages (372,320 jobs over 17 months).

Duration model. Each class mixes the three duration classes with shares chosen so
that both the overall shares and the class means hold (``CLASS_MIX``: GPU jobs are 1.5%
medium and 0.3% long, CPU-only and MIC jobs share the rest). Medium and long durations
are log-uniform on [1 h, 5 h] and [5 h, 12 h] (12 h: an assumed longest queue limit);
short ones a truncated exponential on [1 s, 1 h) whose scale makes the class mean
exact. A job's duration is the class's quantile at the job's *rank* (within its class)
of a latent score ``0.9 * profile score + 0.44 * noise``: so the marginals are matched
exactly while consecutive jobs of one user profile run for similar times, the time
locality the data-driven predictor relies on.

Assumptions where the paper reports nothing, stated once here:

* Users: 60 CPU, 80 GPU and 5 MIC users with Zipf(1) activity, 3 job profiles each
  (chosen with probability 0.6, 0.3, 0.1). A profile fixes units, the unit vector,
  the queue policy and the duration score.
* Requests per unit: CPU-only jobs 1/2/4/8/16 cores (p .25/.10/.15/.20/.30), 1/2/4/8
  units (.70/.15/.10/.05); GPU (MIC) jobs 1/2 accelerators (.6/.4) with 1/2/4/8 cores
  (.3/.2/.3/.2), 1/2/4/8 units (.75/.12/.08/.05); memory 1 GB per core (MIC/GPU units
  +1 GB), at most a node's 16 GB.
* Queues ``debug`` (0, <= 30 min), ``parallel`` (1, <= 6 h), ``longpar`` (2, <= 12 h):
  the smallest one holding the run time. Requested wall-time: the queue limit for
  60% of profiles, else the run time times a profile factor in [1.2, 4] rounded up to
  10 minutes (never above the limit).
* Arrivals: a non-homogeneous Poisson process with a day-night cycle (peak 15:00,
  night at 40% of the mean rate) of *submission events*; an event submits a burst of
  jobs of one profile (geometric size with the month's mean), one every 0-5 s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.domain.platform import MIB_PER_GB
from market_hpc.errors import ConfigError, UnknownNameError

DAY = 86400.0
HOUR = 3600.0
CPU, MIC, GPU = 0, 1, 2
CLASS_NAMES = ("cpu", "mic", "gpu")
CLASS_COUNTS = (85_046, 2_500, 284_774)
CLASS_MEAN_DURATION = (2856.0, 3388.0, 383.0)
DURATION_SHARES = (0.9314, 0.0610, 0.0076)  # short, medium, long
MEDIUM = (HOUR, 5 * HOUR)
LONG = (5 * HOUR, 12 * HOUR)
GPU_MIX = (0.982, 0.015, 0.003)
QUEUE_LIMITS = (1800.0, 6 * HOUR, 12 * HOUR)
QUEUE_NAMES = ("debug", "parallel", "longpar")
LOCALITY = 0.9


def _other_mix() -> tuple[float, float, float]:
    """Duration-class shares of CPU-only and MIC jobs given the GPU mix and Table 1."""
    total = sum(CLASS_COUNTS)
    gpu = CLASS_COUNTS[GPU] / total
    rest = 1.0 - gpu
    medium = (DURATION_SHARES[1] - gpu * GPU_MIX[1]) / rest
    long = (DURATION_SHARES[2] - gpu * GPU_MIX[2]) / rest
    return (1.0 - medium - long, medium, long)


CLASS_MIX = (_other_mix(), _other_mix(), GPU_MIX)


def _log_uniform_mean(low: float, high: float) -> float:
    return (high - low) / math.log(high / low)


def _truncated_exponential_mean(scale: float, high: float) -> float:
    tail = math.exp(-high / scale)
    return scale - high * tail / (1.0 - tail)


def _short_scale(target: float) -> float:
    """Scale of the exponential on [0, 1 h) whose truncated mean is ``target``."""
    low, high = 1.0, 1e6
    for _ in range(200):
        middle = 0.5 * (low + high)
        if _truncated_exponential_mean(middle, HOUR) < target:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def _short_scales() -> tuple[float, ...]:
    scales = []
    for cls in range(3):
        short, medium, long = CLASS_MIX[cls]
        rest = medium * _log_uniform_mean(*MEDIUM) + long * _log_uniform_mean(*LONG)
        scales.append(_short_scale((CLASS_MEAN_DURATION[cls] - rest) / short))
    return tuple(scales)


SHORT_SCALE = _short_scales()


def duration_quantile(cls: int, u: np.ndarray) -> np.ndarray:
    """Run time (s) of class ``cls`` at quantiles ``u`` in (0, 1).

    >>> duration_quantile(GPU, np.array([0.5, 0.99, 0.999])).round().tolist()
    [118.0, 8493.0, 32266.0]
    """
    short, medium, _ = CLASS_MIX[cls]
    out = np.empty_like(u, dtype=np.float64)
    is_short = u < short
    is_medium = ~is_short & (u < short + medium)
    is_long = ~is_short & ~is_medium
    v = u[is_short] / short
    scale = SHORT_SCALE[cls]
    out[is_short] = -scale * np.log1p(-v * (1.0 - math.exp(-HOUR / scale)))
    for mask, (low, high), start, width in (
        (is_medium, MEDIUM, short, medium),
        (is_long, LONG, short + medium, 1.0 - short - medium),
    ):
        w = (u[mask] - start) / width
        out[mask] = low * (high / low) ** w
    return out


@dataclass(frozen=True)
class MonthProfile:
    """Load level and character of one month of the Eurora trace.

    Attributes:
        name: ``YYYY-MM``.
        jobs_per_30_days: Arrival rate (the month's job count).
        cpu_share: Fraction of CPU-only jobs (MIC jobs stay 0.67%, GPU jobs the rest).
        burst_mean: Mean jobs per submission event.
        surges: ``(position in the span, core-hours)`` of one-off bursts of CPU work.
    """

    name: str
    jobs_per_30_days: float
    cpu_share: float
    burst_mean: float
    surges: tuple[tuple[float, float], ...] = ()


MONTHS: dict[str, MonthProfile] = {
    "2014-04": MonthProfile("2014-04", 85_245, 0.308, 6.0, ((0.0, 5000.0),)),
    "2014-08": MonthProfile("2014-08", 47_967, CLASS_COUNTS[CPU] / sum(CLASS_COUNTS), 1.5),
    "2014-09": MonthProfile("2014-09", 77_786, CLASS_COUNTS[CPU] / sum(CLASS_COUNTS), 3.0),
    "2015-04": MonthProfile("2015-04", 3_740, 0.5, 2.0, ((0.5, 8000.0),)),
}
WHOLE_TRACE = MonthProfile(
    "all", sum(CLASS_COUNTS) / 17.0, CLASS_COUNTS[CPU] / sum(CLASS_COUNTS), 3.0
)

USERS = (100, 5, 150)  # per class
ZIPF = 0.8
PROFILE_PROBS = (0.6, 0.3, 0.1)
CPU_CORES = ((1, 2, 4, 8, 16), (0.25, 0.10, 0.15, 0.20, 0.30))
CPU_UNITS = ((1, 2, 4, 8), (0.70, 0.15, 0.10, 0.05))
ACC_PER_UNIT = ((1, 2), (0.6, 0.4))
ACC_CORES = ((1, 2, 4, 8), (0.3, 0.2, 0.3, 0.2))
ACC_UNITS = ((1, 2, 4, 8), (0.75, 0.12, 0.08, 0.05))
NODE_CORES, NODE_MEM_GB = 16, 16


def _choice(rng: np.random.Generator, table: tuple[tuple[int, ...], tuple[float, ...]]) -> int:
    return int(rng.choice(table[0], p=table[1]))


def _request(rng: np.random.Generator, cls: int) -> tuple[int, tuple[int, ...]]:
    """(units, unit vector) of one submission event of class ``cls``."""
    if cls == CPU:
        cores, units = _choice(rng, CPU_CORES), _choice(rng, CPU_UNITS)
        return units, (cores, 0, 0, min(cores, NODE_MEM_GB) * MIB_PER_GB)
    cores, units, acc = _choice(rng, ACC_CORES), _choice(rng, ACC_UNITS), _choice(rng, ACC_PER_UNIT)
    mem = min(cores + 1, NODE_MEM_GB) * MIB_PER_GB
    return units, ((cores, acc, 0, mem) if cls == GPU else (cores, 0, acc, mem))


def _profile(rng: np.random.Generator) -> tuple[float, bool, float]:
    """(latent duration score, asks the queue limit, request factor) of a user profile."""
    return float(rng.standard_normal()), bool(rng.random() < 0.6), float(rng.uniform(1.2, 4.0))


def _arrival_times(rng: np.random.Generator, count: int, span: float) -> np.ndarray:
    """``count`` sorted event times of a day-night Poisson process on ``[0, span)``."""
    grid = np.linspace(0.0, span, max(2, int(span // 60) + 2))
    hour = (grid % DAY) / HOUR
    rate = 1.0 + 0.6 * np.cos(2 * np.pi * (hour - 15.0) / 24.0)
    cumulative = np.concatenate(([0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1]) * np.diff(grid))))
    points = np.sort(rng.uniform(0.0, cumulative[-1], count))
    return np.interp(points, cumulative, grid)


def month_profile(month: str | None) -> MonthProfile:
    """The profile of a month name, or the whole-trace averages for ``None``."""
    if month is None:
        return WHOLE_TRACE
    if month not in MONTHS:
        raise UnknownNameError("Eurora month", month, MONTHS)
    return MONTHS[month]


def eurora_like(n_jobs: int, seed: int = 0, month: str | None = None) -> tuple[Job, ...]:
    """Generate ``n_jobs`` Eurora-like jobs at a month's load level (see module doc).

    The jobs span ``n_jobs / jobs_per_30_days * 30`` days, so the month's job count gives
    a month. Same arguments, same jobs, bit for bit.

    Raises:
        ConfigError: ``n_jobs < 1``; UnknownNameError for an unknown month.

    >>> jobs = eurora_like(200, seed=1, month="2014-09")
    >>> len(jobs), jobs[0].job_id, all(j.run_time <= j.estimate for j in jobs)
    (200, 1, True)
    """
    if n_jobs < 1:
        raise ConfigError(f"eurora workload needs >= 1 job, got {n_jobs}")
    profile = month_profile(month)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]
    users_rng, events_rng, time_rng, noise_rng = streams
    span = n_jobs / profile.jobs_per_30_days * 30 * DAY
    gpu_share = 1.0 - profile.cpu_share - CLASS_COUNTS[MIC] / sum(CLASS_COUNTS)
    class_p = np.array([profile.cpu_share, CLASS_COUNTS[MIC] / sum(CLASS_COUNTS), gpu_share])
    pools = [
        [[_profile(users_rng) for _ in PROFILE_PROBS] for _ in range(USERS[cls])]
        for cls in range(3)
    ]
    activity = [np.arange(1, n + 1) ** -ZIPF for n in USERS]
    activity = [a / a.sum() for a in activity]
    user_base = np.cumsum((0,) + USERS[:-1])

    surge_jobs = _surges(profile, span, n_jobs)
    regular = n_jobs - len(surge_jobs)
    sizes = events_rng.geometric(
        1.0 / profile.burst_mean, int(regular / profile.burst_mean * 2) + 10
    )
    while sizes.sum() < regular:
        sizes = np.concatenate((sizes, events_rng.geometric(1.0 / profile.burst_mean, regular)))
    events = int(np.searchsorted(np.cumsum(sizes), regular)) + 1
    sizes = sizes[:events]
    sizes[-1] -= sizes.sum() - regular
    event_class = events_rng.choice(3, events, p=class_p)
    event_user = np.zeros(events, dtype=np.int64)
    for cls in range(3):
        members = np.flatnonzero(event_class == cls)
        event_user[members] = events_rng.choice(USERS[cls], members.size, p=activity[cls])
    event_profile = events_rng.choice(len(PROFILE_PROBS), events, p=PROFILE_PROBS)
    event_request = [_request(users_rng, cls) for cls in event_class.tolist()]
    event_time = np.floor(_arrival_times(time_rng, events, span))
    gaps = events_rng.integers(0, 6, regular)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    gaps[first] = 0  # the first job of a burst goes at the event time
    steps = np.cumsum(gaps)
    offsets = steps - np.repeat(steps[first], sizes)
    event_of_job = np.repeat(np.arange(events), sizes)
    submit = event_time[event_of_job] + offsets
    order = np.lexsort((np.arange(regular), submit))
    submit, event_of_job = submit[order], event_of_job[order]
    classes = event_class[event_of_job]
    users = event_user[event_of_job]
    which_profile = event_profile[event_of_job]

    scores = np.array(
        [
            pools[c][u][w][0]
            for c, u, w in zip(classes.tolist(), users.tolist(), which_profile.tolist())
        ]
    )
    latent = LOCALITY * scores + math.sqrt(1 - LOCALITY**2) * noise_rng.standard_normal(regular)
    durations = np.empty(regular)
    for cls in range(3):
        members = np.flatnonzero(classes == cls)
        if members.size:
            ranks = np.argsort(np.argsort(latent[members], kind="stable"), kind="stable")
            durations[members] = duration_quantile(cls, (ranks + 0.5) / members.size)
    jobs = []
    for time, event, cls, user, which, duration in zip(
        submit.tolist(),
        event_of_job.tolist(),
        classes.tolist(),
        users.tolist(),
        which_profile.tolist(),
        durations.tolist(),
    ):
        units, unit = event_request[event]
        _, asks_limit, factor = pools[cls][user][which]
        jobs.append(
            _job(time, duration, units, unit, int(user_base[cls] + user), asks_limit, factor)
        )
    jobs.extend(surge_jobs)
    jobs.sort(key=lambda job: job.submit)
    return tuple(
        Job(i, j.submit, j.run_time, j.estimate, j.units, j.unit, user=j.user, queue=j.queue)
        for i, j in enumerate(jobs, start=1)
    )


def _job(
    submit: float,
    duration: float,
    units: int,
    unit: tuple[int, ...],
    user: int,
    asks_limit: bool,
    factor: float,
) -> Job:
    run = float(max(1, round(duration)))
    queue = next(
        q for q, limit in enumerate(QUEUE_LIMITS) if run <= limit or q == len(QUEUE_LIMITS) - 1
    )
    limit = QUEUE_LIMITS[queue]
    request = limit if asks_limit else min(limit, math.ceil(run * factor / 600.0) * 600.0)
    return Job(
        0, float(submit), run, max(request, run), units=units, unit=unit, user=user, queue=queue
    )


SURGE_UNIT = (16, 0, 0, 16 * MIB_PER_GB)
SURGE_UNITS, SURGE_RUN = 4, 3 * HOUR
SURGE_USER = sum(USERS)


def _surges(profile: MonthProfile, span: float, n_jobs: int) -> list[Job]:
    """One-off bursts of 64-core, 3-hour CPU jobs scaled to the generated span."""
    jobs: list[Job] = []
    per_job = SURGE_UNITS * SURGE_UNIT[0] * SURGE_RUN / HOUR
    for position, core_hours in profile.surges:
        count = round(core_hours * span / (30 * DAY) / per_job)
        count = min(count, n_jobs // 10)
        start = math.floor(position * span)
        for k in range(count):
            jobs.append(
                _job(start + 10 * k, SURGE_RUN, SURGE_UNITS, SURGE_UNIT, SURGE_USER, True, 1.0)
            )
    return jobs


def class_of(job: Job) -> str:
    """``cpu``, ``mic`` or ``gpu`` (a job asking both accelerators counts as GPU)."""
    if job.unit[1] > 0:
        return "gpu"
    return "mic" if job.unit[2] > 0 else "cpu"


def workload_statistics(jobs: tuple[Job, ...] | list[Job]) -> dict[str, float]:
    """Class shares and mean run times, duration-class shares (the paper's Table 1 terms)."""
    classes = np.array([class_of(j) for j in jobs])
    runs = np.array([j.run_time for j in jobs])
    stats: dict[str, float] = {"jobs": float(len(jobs))}
    for name in CLASS_NAMES:
        mask = classes == name
        stats[f"share_{name}"] = float(mask.mean())
        stats[f"mean_run_{name}"] = float(runs[mask].mean()) if mask.any() else float("nan")
    stats["share_short"] = float((runs < HOUR).mean())
    stats["share_medium"] = float(((runs >= HOUR) & (runs <= 5 * HOUR)).mean())
    stats["share_long"] = float((runs > 5 * HOUR).mean())
    return stats
