"""How close the ``slurm`` scheduler comes to a site's own Slurm (``market-hpc slurm-check``).

A site's ``sacct --parsable2`` export is read as ``market-hpc trace convert`` reads it
(:func:`~market_hpc.workload.slurm.read_sacct`: steps, pending array elements, jobs that
never started or still run are left out and counted by reason), replayed under the site's
slurm.conf by :func:`~market_hpc.studies.slurm_compare.replay` on the nodes the
slurm.conf declares (or a given platform), and compared with the recorded start times by
:func:`~market_hpc.studies.slurm_compare.compare`. The wait error of a job is its
simulated wait less its recorded wait (both from the same submit time: the simulated start
less the recorded one).

Decisions where the export leaves a choice: a job's CPUs are its allocated CPUs (NCPUS,
else ReqCPUS), what it held; its run time is Elapsed, else End - Start; a job without a
time limit (``UNLIMITED``, ``Partition_Limit``) is given its partition's ``MaxTime``, else
``NO_LIMIT`` (Slurm's backfill plans an infinite limit a year ahead); a partition the
slurm.conf does not name sends the job to the default partition (counted in a note); jobs
are numbered in Slurm's order (job, array element, het component), so same-second
submissions queue as Slurm queues them. The fair-share tree is a fresh ``sacctmgr``
tree's (:func:`~market_hpc.studies.slurm_compare.replay`): sacct does not record shares.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from market_hpc.domain.platform import NodeType, Platform, load_platform
from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.policies.slurm.conf import NodeLine, SlurmConf, read_slurm_conf
from market_hpc.studies.slurm_compare import FORMAT, Agreement, Record, compare, replay_outcome
from market_hpc.validation import MAX_INT
from market_hpc.workload.slurm import SKIP_REASONS, SacctJob, read_sacct
from market_hpc.workload.slurm_fields import parse_job_id

NO_LIMIT = 365 * 86400.0
"""The time limit given to a job without one (seconds): Slurm's backfill plans an
``INFINITE`` limit one year ahead (``YEAR_SECONDS`` in ``backfill.c``)."""
CPU_COLUMNS = ("ncpus", "alloccpus", "reqcpus")
CSV_NAME = "slurm_check.csv"
CSV_COLUMNS = (
    "job_id",
    "user",
    "cpus",
    "partition",
    "submit",
    "recorded_start",
    "simulated_start",
    "recorded_wait",
    "simulated_wait",
    "wait_error",
)
NOT_STARTED = {
    "dropped": "not started in the replay: dropped by the simulated slurm (a time limit "
    "above its partition's MaxTime, or larger than its partition's nodes)",
    "rejected": "not started in the replay: larger than the platform",
}


@dataclass(frozen=True)
class CheckedJob:
    """One compared job; times in seconds after the export's first submit.

    Attributes:
        slurm_id: Its JobID (``123``, ``123_4``, ``77+1``).
        user, cpus, partition: As replayed.
        submit, recorded_start, simulated_start: Seconds after the first submit.
    """

    slurm_id: str
    user: str
    cpus: int
    partition: str
    submit: float
    recorded_start: float
    simulated_start: float

    @property
    def wait_error(self) -> float:
        """Simulated wait less recorded wait (s): positive, the model starts it later."""
        return self.simulated_start - self.recorded_start


@dataclass(frozen=True)
class SlurmCheck:
    """The comparison of an export with its replay.

    Attributes:
        export, slurm_conf: The files read.
        platform: The platform replayed, described, and where it came from.
        origin: The first submit (epoch seconds).
        data_lines: Data lines of the export (the header not counted).
        jobs: The compared jobs, in submit order.
        left_out: Export lines not compared (steps, jobs that never started, jobs the
            replay did not start...), per reason (only reasons that occurred).
        notes: What the replay assumed for some jobs (no time limit, unknown partition,
            GPUs).
        agreement: :func:`~market_hpc.studies.slurm_compare.compare`'s figures.
        mean_wait_error: The mean of the wait errors (s; the bias), rounded as ``agreement``.
        unmodelled: The slurm.conf keys the scheduler does not model.
    """

    export: str
    slurm_conf: str
    platform: str
    origin: float
    data_lines: int
    jobs: tuple[CheckedJob, ...]
    agreement: Agreement
    mean_wait_error: float
    left_out: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    unmodelled: tuple[str, ...] = ()

    def describe(self) -> list[str]:
        """The printed report, one line each."""
        a = self.agreement
        unmodelled = f": {', '.join(self.unmodelled)}" if self.unmodelled else ""
        return [
            (
                f"export: {self.export} ({self.data_lines:,} data lines; first submit "
                f"{self.origin:.0f}, times below are seconds after it)"
            ),
            f"slurm.conf: {self.slurm_conf} ({len(self.unmodelled)} keys not modelled{unmodelled})",
            f"platform: {self.platform}",
            f"jobs compared: {len(self.jobs):,}; lines left out: {sum(self.left_out.values()):,}",
            *(f"  left out {count:,}: {reason}" for reason, count in self.left_out.items()),
            *(f"  note: {note}" for note in self.notes),
            (
                f"wait error (simulated wait - recorded wait): |error| median "
                f"{a.median_deviation:.2f} s, p95 {a.p95_deviation:.2f} s, max "
                f"{a.max_deviation:.2f} s; mean (bias) {self.mean_wait_error:+.2f} s"
            ),
            (
                f"start order: Kendall's tau-b {a.kendall_tau:.4f}, same position "
                f"{100 * a.same_position:.2f} %"
            ),
            (
                "Slurm's own scheduling lag (start - the submit or job end that let it "
                f"start): median {a.lag_median:.2f} s, max {a.lag_max:.2f} s"
            ),
        ]

    def csv_text(self) -> str:
        """The per-job table (``CSV_COLUMNS``), one row per compared job."""
        text = io.StringIO(newline="")
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for job in self.jobs:
            writer.writerow(
                (
                    job.slurm_id,
                    job.user,
                    job.cpus,
                    job.partition,
                    *(
                        format(value, ".15g")
                        for value in (
                            job.submit,
                            job.recorded_start,
                            job.simulated_start,
                            job.recorded_start - job.submit,
                            job.simulated_start - job.submit,
                            job.wait_error,
                        )
                    ),
                )
            )
        return text.getvalue()


def check_export(
    export: str | os.PathLike[str],
    slurm_conf: str | os.PathLike[str],
    platform: str | None = None,
    *,
    lenient: bool = False,
) -> SlurmCheck:
    """Replay ``export`` under ``slurm_conf`` and compare its start times with the recorded.

    Args:
        export: ``sacct --parsable2`` output with its header line (``FORMAT``'s columns at
            least; gzip-compressed or not).
        slurm_conf: The slurm.conf the jobs ran under.
        platform: A platform spec (preset, ``nodes=N,cores=C``, ``FILE.toml``); ``None``:
            the slurm.conf's ``NodeName`` lines.
        lenient: Count malformed export lines as left out instead of raising.

    Raises:
        ConfigError: A file cannot be read, a slurm.conf key cannot be read, no platform.
        TraceFormatError: Not an export, missing columns, a malformed line (file, line,
            field), no job to compare.
    """
    source = os.fspath(export)
    check_header(source)
    conf = read_conf(os.fspath(slurm_conf))
    machine = (
        (load_platform(platform), "--platform")
        if platform is not None
        else (conf_platform(conf), "from the slurm.conf's NodeName lines")
    )
    conversion = read_sacct(source, lenient=lenient)
    left_out = {SKIP_REASONS[key]: count for key, count in conversion.skipped.items()}
    left_out |= {f"malformed {key} (--lenient)": n for key, n in conversion.rejected.items()}
    sacct_jobs = sorted(conversion.jobs, key=slurm_order)
    records, notes = as_records(sacct_jobs, conf)
    gpu_jobs = sum(1 for job in sacct_jobs if job.gpus)
    if gpu_jobs:
        notes += (f"{gpu_jobs:,} jobs use GPUs: replayed on their CPUs alone",)
    simulated, statuses = replay_outcome(records, conf.path, platform=machine[0])
    started = [r for r in records if math.isfinite(simulated[r.job_id])]
    for record in records:
        if not math.isfinite(simulated[record.job_id]):
            status = statuses[record.job_id]
            reason = NOT_STARTED.get(status, f"not started in the replay (status {status})")
            left_out[reason] = left_out.get(reason, 0) + 1
    if not started:
        raise TraceFormatError(
            source,
            None,
            f"no job to compare: none of the {len(records)} jobs started in the replay",
        )
    origin = min(r.submit for r in records)
    jobs = tuple(
        CheckedJob(
            job.slurm_id,
            record.user,
            record.cpus,
            record.partition,
            record.submit - origin,
            record.start - origin,
            simulated[record.job_id],
        )
        for record, job in sorted(  # the replay's order: submit, then Slurm's
            zip(records, sacct_jobs, strict=True), key=lambda pair: (pair[0].submit, pair[0].job_id)
        )
        if math.isfinite(simulated[record.job_id])
    )
    errors = np.array([job.wait_error for job in jobs])
    return SlurmCheck(
        export=source,
        slurm_conf=conf.path,
        platform=f"{machine[0].describe()} ({machine[1]})",
        origin=origin,
        data_lines=conversion.lines - 1,
        jobs=jobs,
        agreement=compare(started, simulated),
        mean_wait_error=round(float(errors.mean()), 2),
        left_out=left_out,
        notes=notes,
        unmodelled=conf.unmodelled,
    )


def first_line(source: str) -> str:
    """The export's first line (gzip or not, a byte-order mark dropped).

    Raises:
        ConfigError: The file cannot be read.
    """
    try:
        with open(source, "rb") as handle:
            compressed = handle.read(2) == b"\x1f\x8b"
        opener = gzip.open if compressed else open
        with opener(source, "rt", encoding="utf-8-sig", errors="replace") as handle:
            return str(handle.readline())
    except (OSError, EOFError) as exc:
        cause = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"cannot read sacct file {source}: {cause}") from None


def check_header(source: str) -> None:
    """Refuse a file that is not a sacct export with the columns the check needs.

    Raises:
        ConfigError: The file cannot be read.
        TraceFormatError: No ``|``-separated header line, or columns missing (line 1).
    """
    line = first_line(source)
    columns = [cell.strip().lower() for cell in line.rstrip().rstrip("|").split("|")]
    if "|" not in line or "jobid" not in columns:
        raise TraceFormatError(
            source,
            1,
            f"not a sacct --parsable2 export (the first line is no '|'-separated header "
            f"with JobID); export with sacct --parsable2 --format={FORMAT}",
            field="header",
        )
    wanted = [name for name in FORMAT.split(",") if name.lower() not in CPU_COLUMNS]
    missing = [name for name in wanted if name.lower() not in columns]
    if not any(name in columns for name in CPU_COLUMNS):
        missing.append("NCPUS (or AllocCPUS / ReqCPUS)")
    if missing:
        raise TraceFormatError(
            source,
            1,
            f"the header line lacks {', '.join(missing)}; export with "
            f"sacct --parsable2 --format={FORMAT}",
            field="header",
        )


def read_conf(path: str) -> SlurmConf:
    """The slurm.conf, its modelled keys checked (``FILE:LINE: Key=value is invalid``).

    Raises:
        ConfigError: The file cannot be read, or a key cannot.
    """
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise ConfigError(f"cannot read slurm.conf {path}: {exc.strerror or exc}") from None
    return read_slurm_conf(path)


def node_cpus(path: str, node: NodeLine) -> int:
    """A ``NodeName`` line's CPUs: ``CPUs``, else Boards x Sockets(PerBoard) x
    CoresPerSocket x ThreadsPerCore (slurm.conf(5); each 1 when absent).

    Raises:
        ConfigError: A value that is not an integer >= 1 (file, line, key, value).
    """

    def count(key: str) -> int:
        text = node.settings.get(key.lower(), "1")
        if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_INT:
            raise ConfigError(
                f"{path}:{node.line}: NodeName={node.names[0]} {key}={text} is invalid; "
                f"valid: an integer in [1, {MAX_INT}]"
            )
        return int(text)

    if "cpus" in node.settings:
        return count("CPUs")
    sockets = count("SocketsPerBoard" if "socketsperboard" in node.settings else "Sockets")
    return count("Boards") * sockets * count("CoresPerSocket") * count("ThreadsPerCore")


def conf_platform(conf: SlurmConf) -> Platform:
    """The platform of a slurm.conf's ``NodeName`` lines, one node type per line, in order
    (the order ``PartitionName Nodes=`` indices refer to).

    Raises:
        ConfigError: No ``NodeName`` line, or one whose CPUs cannot be read.
    """
    if not conf.nodes:
        raise ConfigError(
            f"{conf.path}: no NodeName line declares the nodes; give the platform "
            "(--platform nodes=N,cores=C)"
        )
    types = []
    for node in conf.nodes:
        name = node.names[0] if len(node.names) == 1 else f"{node.names[0]}..{node.names[-1]}"
        types.append(NodeType(name, len(node.names), node_cpus(conf.path, node)))
    return Platform("slurm.conf", tuple(types))


def slurm_order(job: SacctJob) -> tuple[int, int, int, int]:
    """Slurm's order of a job: job number, array element, het component (then line)."""
    parsed = parse_job_id(job.slurm_id)
    task = int(parsed.array_task) if parsed.array_task else -1
    het = -1 if parsed.het_component is None else parsed.het_component
    return (parsed.job, task, het, job.line)


def as_records(jobs: list[SacctJob], conf: SlurmConf) -> tuple[list[Record], tuple[str, ...]]:
    """The jobs (in Slurm's order) as comparison records numbered 1..n, and what was assumed."""
    limits = {p.name: p.max_time for p in conf.partitions}
    default = next((p for p in conf.partitions if p.default), None)
    no_limit = unknown = 0
    records = []
    for number, job in enumerate(jobs, start=1):
        limit = job.time_limit
        if job.partition not in limits:
            unknown += 1
        if limit <= 0:
            no_limit += 1
            own = limits.get(job.partition, default.max_time if default else math.inf)
            limit = own if math.isfinite(own) else NO_LIMIT
        records.append(
            Record(
                number,
                job.user,
                job.submit,
                job.start,
                job.start + job.run_time,
                limit,
                job.alloc_cpus or job.req_cpus,
                job.partition,
            )
        )
    notes = []
    if no_limit:
        notes.append(
            f"{no_limit:,} jobs without a time limit: given their partition's MaxTime, "
            f"else {NO_LIMIT:.0f} s"
        )
    if unknown:
        notes.append(
            f"{unknown:,} jobs in a partition the slurm.conf does not name: replayed in "
            "its default partition"
        )
    return records, tuple(notes)


def write_check_csv(check: SlurmCheck, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``OUT/slurm_check.csv`` (atomically; the folder is made when missing).

    Raises:
        OutputError: It cannot be written.
    """
    from market_hpc.atomic_file import write_file
    from market_hpc.errors import OutputError

    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(str(folder), exc.strerror or str(exc)) from None
    return write_file(folder / CSV_NAME, check.csv_text())
