"""Compare a real Slurm's start times (``sacct``) with the ``slurm`` scheduler's replay.

Pure functions over a recorded ``sacct --parsable2`` export (``benchmarks/slurm_validate.py``
writes one per configuration; ``tests/slurm/test_validate.py`` runs them on the recorded
files; ``market-hpc slurm-check`` runs them on a site's export,
:mod:`market_hpc.studies.slurm_check`): the jobs are replayed in the simulator with their
recorded submit times, CPU counts, users, partitions, time limits and run times
(End - Start) under the same slurm.conf, and the two start orders and start times are
compared.

Figures (``Agreement``):

* Kendall's tau-b of the two start-time vectors (ties in either count as ties);
* the share of jobs at the same position of the start order (jobs sorted by start time,
  then job id);
* the start-time deviation ``|sim - slurm|`` in seconds: median, 95th percentile, max
  (with both submit times equal, it is the wait error ``|simulated wait - recorded wait|``);
* Slurm's own lag: each job's start less the event that let it start (its submission or
  the last job end before its start), which the simulator's event-driven decisions do
  not have; along a chain of jobs that wait for each other these lags add up, and so
  does the deviation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.errors import TraceFormatError
from market_hpc.policies import make_policy
from market_hpc.policies.slurm.conf import read_slurm_conf
from market_hpc.workload.slurm_fields import parse_duration, parse_timestamp

FORMAT = "JobID,User,Submit,Start,End,Timelimit,NCPUS,State,Partition"


@dataclass(frozen=True)
class Record:
    """One job of the export (times in seconds since the epoch)."""

    job_id: int
    user: str
    submit: float
    start: float
    end: float
    limit: float
    cpus: int
    partition: str = ""


def parse_sacct(text: str, source: str = "sacct") -> list[Record]:
    """The allocation lines (no steps) of a ``sacct --parsable2 --format=FORMAT`` export.

    >>> text = "JobID|User|Submit|Start|End|Timelimit|NCPUS|State|Partition\\n" \\
    ...        "7|u1|1000|1002|1012|00:02:00|4|COMPLETED|debug\\n" \\
    ...        "7.batch||1000|1002|1012||4|COMPLETED|\\n"
    >>> [(r.job_id, r.user, r.submit, r.end, r.limit, r.cpus, r.partition)
    ...  for r in parse_sacct(text)]
    [(7, 'u1', 1000.0, 1012.0, 120.0, 4, 'debug')]

    Raises:
        TraceFormatError: a line that does not parse (file, line, field).
    """
    lines = text.splitlines()
    if not lines:
        raise TraceFormatError(source, None, "empty sacct export")
    header = [name.lower() for name in lines[0].split("|")]
    missing = [name for name in FORMAT.lower().split(",") if name not in header]
    if missing:
        raise TraceFormatError(
            source, 1, f"missing columns {', '.join(missing)}; export with --format={FORMAT}"
        )
    records = []
    for number, line in enumerate(lines[1:], start=2):
        row = dict(zip(header, line.split("|")))
        if not line.strip() or "." in row["jobid"]:
            continue
        if len(row) != len(header):
            raise TraceFormatError(
                source, number, f"{len(row)} fields, the header has {len(header)}"
            )
        values = {}
        for name in ("submit", "start", "end"):
            try:
                values[name] = parse_timestamp(row[name])
            except ValueError:
                values[name] = None
            if values[name] is None:
                raise TraceFormatError(source, number, f"{row[name]!r} is not a time", field=name)
        try:
            limit = parse_duration(row["timelimit"])
        except ValueError:
            limit = None
        if limit is None or not row["jobid"].isdigit() or not row["ncpus"].isdigit():
            raise TraceFormatError(
                source, number, "JobID, Timelimit and NCPUS must be numbers", field="jobid"
            )
        records.append(
            Record(
                int(row["jobid"]),
                row["user"],
                float(values["submit"] or 0.0),
                float(values["start"] or 0.0),
                float(values["end"] or 0.0),
                limit,
                int(row["ncpus"]),
                row["partition"],
            )
        )
    return records


def replay_jobs(records: list[Record], partitions: Sequence[str] = ()) -> list[Job]:
    """The records as simulator jobs: times from the first submit, users numbered by name,
    each job's queue the index of its partition in ``partitions`` (slurm.conf order; -1,
    the default partition, when absent)."""
    origin = min(r.submit for r in records)
    users = {name: i for i, name in enumerate(sorted({r.user for r in records}))}
    queues = {name: i for i, name in enumerate(partitions)}
    return [
        Job(
            r.job_id,
            r.submit - origin,
            max(r.end - r.start, 0.0),
            r.limit,
            units=r.cpus,
            user=users[r.user],
            queue=queues.get(r.partition, -1),
        )
        for r in sorted(records, key=lambda r: (r.submit, r.job_id))
    ]


ROOT_ASSOCIATION = "-2"
"""The user id standing for ``root``'s association in the validation's account (1 share,
never submits; ``benchmarks/slurm_validate.py`` adds root to the account)."""


def replay(
    records: list[Record],
    slurm_conf: str | Path,
    cores: int = 32,
    platform: str | Platform | None = None,
) -> dict[int, float]:
    """Simulated start of each job (seconds from the first submit; NaN for a job the
    replay did not start: dropped or rejected) on ``platform``, else one node of ``cores``.

    The fair-share tree is the validation's, which is a fresh ``sacctmgr`` tree's: one
    account (half the root's shares, beside the root user) holding every user of the
    export and root, one share each.
    """
    starts, _ = replay_outcome(records, slurm_conf, cores, platform)
    return starts


def replay_outcome(
    records: list[Record],
    slurm_conf: str | Path,
    cores: int = 32,
    platform: str | Platform | None = None,
) -> tuple[dict[int, float], dict[int, str]]:
    """:func:`replay`'s starts and each job's final status (``finished``, ``dropped``,
    ``rejected``, ...)."""
    partitions = [partition.name for partition in read_slurm_conf(slurm_conf).partitions]
    jobs = replay_jobs(records, partitions)
    shares = {str(user): 1 for user in sorted({job.user for job in jobs})} | {ROOT_ASSOCIATION: 1}
    params = {"slurm_conf": str(slurm_conf), "shares": shares, "account_share": 0.5}
    policy = make_policy("slurm", "first-fit", scheduler_params=params)
    model = HPCModel(
        jobs,
        platform=f"nodes=1,cores={cores}" if platform is None else platform,
        policy=policy,
        seed=0,
        record_timeseries=False,
    )
    model.run()
    frame = model.recorder.jobs_frame()
    ids = [int(j) for j in frame["job_id"]]
    starts = {j: float(s) for j, s in zip(ids, frame["start_time"])}
    return starts, {j: str(status) for j, status in zip(ids, frame["status"])}


@dataclass(frozen=True)
class Agreement:
    """How close the replay comes to the real Slurm."""

    jobs: int
    kendall_tau: float
    same_position: float
    median_deviation: float
    p95_deviation: float
    max_deviation: float
    lag_median: float = 0.0
    lag_max: float = 0.0

    def line(self, label: str) -> str:
        """One printed line."""
        return (
            f"{label:<22} jobs {self.jobs:4d}  tau {self.kendall_tau:6.3f}  same position "
            f"{100 * self.same_position:5.1f} %  start deviation median "
            f"{self.median_deviation:5.1f} s  "
            f"p95 {self.p95_deviation:5.1f} s  max {self.max_deviation:5.1f} s  "
            f"(Slurm's event lag median {self.lag_median:3.1f} s, max {self.lag_max:3.1f} s)"
        )


def kendall_tau_b(first: list[float], second: list[float]) -> float:
    """Kendall's tau-b (ties in either list count as ties; 1.0 for fewer than two items).

    >>> kendall_tau_b([1, 2, 3], [1, 2, 3]), kendall_tau_b([1, 2, 3], [3, 2, 1])
    (1.0, -1.0)
    >>> round(kendall_tau_b([1, 2, 2, 3], [1, 3, 2, 4]), 4)
    0.9129
    """
    if len(first) < 2:
        return 1.0
    # scipy's tau-b: Knight's O(n log n) count of the same pairs (a site's export has
    # 10^5 jobs; the pairwise loop would take hours).
    tau = float(stats.kendalltau(first, second, variant="b").statistic)
    return tau if math.isfinite(tau) else 1.0  # every item tied in a list: no order to compare


def event_lags(records: list[Record]) -> np.ndarray:
    """Each job's start less its submission or the last job end before its start, if later.

    >>> event_lags([Record(1, "a", 0, 1, 5, 60, 1), Record(2, "a", 0, 7, 9, 60, 1)]).tolist()
    [1.0, 2.0]
    """
    ends = np.sort(np.asarray([r.end for r in records], dtype=float))
    starts = np.asarray([r.start for r in records], dtype=float)
    submits = np.asarray([r.submit for r in records], dtype=float)
    before = np.searchsorted(ends, starts, side="right")  # ends at or before each start
    last_end = np.where(before > 0, ends[np.maximum(before - 1, 0)], submits)
    lags: np.ndarray = starts - np.maximum(submits, last_end)
    return lags


def compare(records: list[Record], simulated: dict[int, float]) -> Agreement:
    """Compare the recorded starts with the simulated ones (both from the first submit).

    >>> records = [Record(1, "a", 0, 0, 5, 60, 1), Record(2, "a", 0, 5, 9, 60, 1),
    ...            Record(3, "a", 1, 9, 9, 60, 1)]
    >>> agreement = compare(records, {1: 0.0, 2: 6.0, 3: 6.0})
    >>> agreement.kendall_tau, agreement.same_position, agreement.median_deviation
    (0.8165, 1.0, 1.0)
    >>> agreement.p95_deviation, agreement.max_deviation
    (2.8, 3.0)
    """
    origin = min(r.submit for r in records)
    ids = sorted(r.job_id for r in records)
    real = {r.job_id: r.start - origin for r in records}
    real_order = sorted(ids, key=lambda j: (real[j], j))
    sim_order = sorted(ids, key=lambda j: (simulated[j], j))
    same = sum(a == b for a, b in zip(real_order, sim_order)) / len(ids)
    deviation = np.abs(np.array([simulated[j] - real[j] for j in ids]))
    lags = event_lags(records)
    return Agreement(
        len(ids),
        round(kendall_tau_b([real[j] for j in ids], [simulated[j] for j in ids]), 4),
        round(same, 4),
        round(float(np.median(deviation)), 2),
        round(float(np.percentile(deviation, 95)), 2),
        round(float(deviation.max()), 2),
        round(float(np.median(lags)), 2),
        round(float(lags.max()), 2),
    )
