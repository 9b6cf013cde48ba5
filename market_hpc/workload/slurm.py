"""Read Slurm accounting (``sacct --parsable2``) and convert it to an SWF trace.

Export a month of a cluster with (one line, the header line is needed)::

    sacct --allusers --parsable2 --starttime 2024-03-01 --endtime 2024-04-01 \\
      --format=JobID,Submit,Start,End,Elapsed,Timelimit,NCPUS,ReqCPUS,NNodes,State,Partition,ReqMem,AllocTRES,ReqTRES,User

Every data line ends as exactly one of (counted in :class:`SacctConversion`):

* **converted**: an allocation line (``123``, array element ``123_4``, het component
  ``123+1``) with a known Submit, Start and End and a positive CPU count becomes one
  SWF job. Heterogeneous components become separate jobs (SWF has no co-allocation).
* **skipped, with its reason** (a fact of the data, never an error): ``job_step``
  (``123.batch``, ``123.extern``, ``123.0``: the allocation line carries the job),
  ``pending_array`` (``123_[4-9]``: elements that never started), ``cancelled_before_start``
  (State CANCELLED and Start Unknown/None), ``never_started`` (any other state without
  a Start, e.g. PENDING), ``still_running`` (End Unknown), ``no_cpus`` (every CPU count
  0), ``duplicate`` (the same JobID with the same Start again, e.g. two overlapping
  exports concatenated).
* **rejected, with file, line and field** (malformed): a wrong number of ``|`` fields,
  a time, duration, count, memory, TRES or state that does not parse, Start before
  Submit, End before Start. Without ``lenient`` the first one raises
  :class:`TraceFormatError`; with it the line is counted under its field and the first
  messages are kept.

The mapping to the 18 SWF fields (1-based) is written in ``docs/slurm.md``. GPU requests
(``gres/gpu=N``, ``gres/gpu:TYPE=N`` in AllocTRES, else ReqTRES) have no SWF field: they go
to the side file, and a run of the SWF gives them back to the jobs
(:mod:`market_hpc.workload.gpu_requests`).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.validation import COUNT, MAX_INT, MAX_SECONDS, TIME
from market_hpc.workload.slurm_fields import (
    parse_duration,
    parse_job_id,
    parse_memory_mib,
    parse_timestamp,
    tres_gpus,
    tres_memory_mib,
)

_T = TypeVar("_T")

SACCT_FORMAT = (
    "JobID,Submit,Start,End,Elapsed,Timelimit,NCPUS,ReqCPUS,NNodes,State,"
    "Partition,ReqMem,AllocTRES,ReqTRES,User"
)
REQUIRED = ("jobid", "submit", "start", "end")
CPU_COLUMNS = ("ncpus", "alloccpus", "reqcpus")
SKIP_REASONS: dict[str, str] = {
    "job_step": "job steps (.batch, .extern, .N): the allocation line is the job",
    "pending_array": "array elements that never started (123_[4-9])",
    "cancelled_before_start": "cancelled before they started (no Start)",
    "never_started": "never started (no Start; e.g. PENDING at export)",
    "still_running": "still running at export (End Unknown)",
    "no_cpus": "no CPU count (NCPUS, AllocCPUS and ReqCPUS all 0)",
    "duplicate": "the same JobID and Start seen before",
}
# sacct's base states; "CANCELLED by 123" and "FAILED+" forms are reduced to the first word.
SWF_STATUS: dict[str, int] = {
    "COMPLETED": 1,
    "CANCELLED": 5,
    "FAILED": 0,
    "TIMEOUT": 0,
    "NODE_FAIL": 0,
    "OUT_OF_MEMORY": 0,
    "BOOT_FAIL": 0,
    "DEADLINE": 0,
    "PREEMPTED": 0,
    "REQUEUED": 0,
    "REVOKED": 0,
    "PENDING": -1,
    "RUNNING": -1,
    "SUSPENDED": -1,
    "RESIZING": -1,
    "REQUEUE_FED": -1,
    "REQUEUE_HOLD": -1,
    "SPECIAL_EXIT": 0,
    "STOPPED": -1,
}
MAX_MESSAGES = 5


@dataclass(frozen=True)
class SacctJob:
    """One converted allocation (times in epoch seconds, as sacct gave them).

    Attributes:
        line: 1-based line in the sacct file.
        slurm_id: The JobID text (``123_4``, ``77+1``).
        submit, start, run_time: Seconds; ``run_time`` is Elapsed, else End - Start.
        alloc_cpus: NCPUS / AllocCPUS (0 when absent).
        req_cpus: ReqCPUS (0 when absent).
        time_limit: Timelimit in seconds, -1 for none (UNLIMITED, Partition_Limit).
        nodes: NNodes (0 when absent).
        state: First word of State ("" when absent).
        partition: Partition ("" when absent).
        mem_mib_per_cpu: ReqMem per CPU, else the ``mem=`` of AllocTRES (ReqTRES) per CPU,
            -1 when neither gives it.
        gpus: GPUs from AllocTRES, else ReqTRES (0 when absent).
        user: User ("" when absent).
    """

    line: int
    slurm_id: str
    submit: float
    start: float
    run_time: float
    alloc_cpus: int
    req_cpus: int
    time_limit: float
    nodes: int
    state: str
    partition: str
    mem_mib_per_cpu: float
    gpus: int
    user: str

    @property
    def cpus(self) -> int:
        """The processor request a replay uses: ReqCPUS when positive, else NCPUS."""
        return self.req_cpus if self.req_cpus > 0 else self.alloc_cpus


@dataclass(frozen=True)
class SacctConversion:
    """What reading a sacct file converted, skipped and rejected.

    Attributes:
        source: The file read.
        lines: Lines in the file, the header included.
        jobs: Converted jobs, sorted by (submit, line).
        skipped: Lines per ``SKIP_REASONS`` key (only reasons that occurred).
        rejected: Malformed lines per field name (``lenient`` only).
        messages: The first ``MAX_MESSAGES`` rejection messages (file:line: field: why).
    """

    source: str
    lines: int
    jobs: tuple[SacctJob, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)
    messages: tuple[str, ...] = ()

    def describe(self) -> list[str]:
        """Human-readable counts, one line each (for the terminal and the SWF header)."""
        data_lines = len(self.jobs) + sum(self.skipped.values()) + sum(self.rejected.values())
        out = [f"{self.source}: {data_lines:,} data lines, {len(self.jobs):,} converted to jobs"]
        for reason, count in self.skipped.items():
            out.append(f"  skipped {count:,}: {SKIP_REASONS[reason]}")
        for column, count in self.rejected.items():
            out.append(f"  rejected {count:,}: malformed {column}")
        out.extend(f"    {message}" for message in self.messages)
        gpus = sum(1 for job in self.jobs if job.gpus)
        if gpus:
            jobs = "job uses" if gpus == 1 else "jobs use"
            out.append(
                f"  note: {gpus:,} {jobs} GPUs; SWF holds CPUs only (GPUs are in the "
                "side file, which runs of the SWF read)"
            )
        return out


class _Line:
    """The cells of one data line, by lower-case column name."""

    def __init__(self, source: str, number: int, cells: dict[str, str]) -> None:
        self.source, self.number, self.cells = source, number, cells

    def text(self, column: str) -> str:
        return self.cells.get(column, "").strip()

    def fail(self, column: str, message: str) -> TraceFormatError:
        return TraceFormatError(self.source, self.number, message, field=column)

    def parsed(self, column: str, parse: Callable[[str], _T]) -> _T:
        try:
            return parse(self.text(column))
        except ValueError as exc:
            raise self.fail(column, str(exc)) from None

    def count(self, *columns: str) -> int:
        for column in columns:
            if column in self.cells and self.text(column):
                value = self.parsed(column, _whole)
                if value > MAX_INT:  # what the SWF a replay reads can hold
                    raise self.fail(
                        column, f"{self.text(column)} is too large; valid: {COUNT.describe()}"
                    )
                if value > 0:
                    return int(value)
        return 0

    def seconds(self, column: str) -> float | None:
        """A duration column in seconds (``None`` when absent or unknown), refused beyond the
        times a replay keeps to the second."""
        if column not in self.cells:
            return None
        value: float | None = self.parsed(column, parse_duration)
        if value is not None and value > MAX_SECONDS:
            raise self.fail(
                column,
                f"{self.text(column)} ({value:.3g} s) is too long to keep second "
                f"precision; valid: {TIME.describe()}",
            )
        return value


def _whole(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{text!r} is not a whole number")
    return int(text)


def is_sacct(path: str | os.PathLike[str]) -> bool:
    """Whether a file looks like sacct ``--parsable``/``--parsable2`` output: its first line
    (after a byte-order mark, if any) is ``|``-separated, with a JobID column or with at
    least five cells (an export without its header line, which :func:`read_sacct` then
    refuses by name; SWF has no ``|``)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.readline(4096)
    except OSError:
        return False
    try:  # (a compressed SWF is binary: its bytes may hold '|' by chance)
        first = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    cells = {cell.strip().lower() for cell in first.split("|")}
    return "|" in first and ("jobid" in cells or first.count("|") >= 4)


def read_sacct(path: str | os.PathLike[str], *, lenient: bool = False) -> SacctConversion:
    """Read sacct ``--parsable2`` (or ``--parsable``) output with its header line.

    Args:
        path: The file.
        lenient: Count malformed lines instead of raising on the first.

    Returns:
        The converted jobs and the counts of everything else.

    Raises:
        ConfigError: The file cannot be read.
        TraceFormatError: No header with the required columns, a malformed line (unless
            ``lenient``), or no job to convert.
    """
    source = os.fspath(path)
    rows = _sacct_text(source).split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    columns = _header(source, rows[0] if rows else "")
    trailing = rows[0].rstrip().endswith("|")  # --parsable ends every line with a '|'
    jobs: list[SacctJob] = []
    skipped: dict[str, int] = {}
    rejected: dict[str, int] = {}
    messages: list[str] = []
    seen: set[tuple[str, float]] = set()
    for number, row in enumerate(rows[1:], start=2):
        if not row.strip():
            continue
        try:
            outcome = _convert(source, number, columns, row.rstrip("\r"), trailing)
        except TraceFormatError as exc:
            if not lenient:
                raise
            rejected[exc.field or "line"] = rejected.get(exc.field or "line", 0) + 1
            if len(messages) < MAX_MESSAGES:
                messages.append(str(exc))
            continue
        if isinstance(outcome, SacctJob) and (outcome.slurm_id, outcome.start) in seen:
            outcome = "duplicate"
        if isinstance(outcome, str):
            skipped[outcome] = skipped.get(outcome, 0) + 1
            continue
        seen.add((outcome.slurm_id, outcome.start))
        jobs.append(outcome)
    conversion = SacctConversion(
        source,
        len(rows),
        tuple(sorted(jobs, key=lambda j: (j.submit, j.line))),
        skipped,
        rejected,
        tuple(messages),
    )
    if not jobs:
        detail = "; ".join(conversion.describe()[1:]) or "no data lines"
        raise TraceFormatError(source, None, f"no jobs to convert ({detail})")
    return conversion


def _sacct_text(source: str) -> str:
    """The file's text (a BOM is not a column), gzip-compressed or not.

    Raises:
        ConfigError: The file cannot be read.
        TraceFormatError: Compressed data that is cut short or corrupt, naming the first
            line that could not be read.
    """
    try:
        with open(source, "rb") as handle:
            compressed = handle.read(2) == b"\x1f\x8b"
        if not compressed:
            with open(source, encoding="utf-8-sig", errors="replace") as handle:
                return handle.read()
    except OSError as exc:
        raise ConfigError(f"cannot read sacct file {source}: {exc.strerror or exc}") from None
    lines: list[str] = []
    try:
        with gzip.open(source, "rt", encoding="utf-8-sig", errors="replace") as handle:
            lines.extend(handle)
    except (OSError, EOFError, zlib.error) as exc:
        # (no line of the TraceFormatError: --lenient, which skips bad lines, cannot help)
        raise TraceFormatError(
            source,
            None,
            f"line {len(lines) + 1}: the gzip data is cut short "
            f"or corrupt ({exc}); valid: a whole .gz file (gzip -t checks "
            "it)",
        ) from None
    return "".join(lines)


def _header(source: str, line: str) -> list[str]:
    columns = [cell.strip().lower() for cell in line.rstrip().rstrip("|").split("|")]
    missing = [name for name in REQUIRED if name not in columns]
    if not any(name in columns for name in CPU_COLUMNS):
        missing.append("NCPUS (or AllocCPUS / ReqCPUS)")
    if missing:
        raise TraceFormatError(
            source,
            1,
            f"the header line lacks {', '.join(missing)}; export with "
            f"sacct --parsable2 --format={SACCT_FORMAT}",
            field="header",
        )
    return columns


def _convert(
    source: str, number: int, columns: list[str], row: str, trailing: bool
) -> SacctJob | str:
    """One data line: a job, the key of a skip reason, or a raised TraceFormatError."""
    cells = row[:-1].split("|") if trailing and row.endswith("|") else row.split("|")
    if len(cells) != len(columns):
        raise TraceFormatError(
            source,
            number,
            f"expected {len(columns)} '|'-separated fields (as the header), got {len(cells)}",
            field="line",
        )
    line = _Line(source, number, dict(zip(columns, cells, strict=True)))
    job_id = line.parsed("jobid", parse_job_id)
    if job_id.step is not None:
        return "job_step"
    if job_id.pending_array:
        return "pending_array"
    state = line.text("state").split(" ")[0].rstrip("+").upper()
    if state and state not in SWF_STATUS:
        raise line.fail(
            "state", f"unknown state {line.text('state')!r}; valid: {', '.join(sorted(SWF_STATUS))}"
        )
    submit = line.parsed("submit", parse_timestamp)
    start = line.parsed("start", parse_timestamp)
    end = line.parsed("end", parse_timestamp)
    if submit is None:
        raise line.fail("submit", "Submit is unknown")
    if start is None:
        return "cancelled_before_start" if state == "CANCELLED" else "never_started"
    if start < submit:
        raise line.fail(
            "start", f"Start {line.text('start')} is before Submit {line.text('submit')}"
        )
    if end is None:
        return "still_running"
    if end < start:
        raise line.fail("end", f"End {line.text('end')} is before Start {line.text('start')}")
    elapsed = line.seconds("elapsed")
    limit = line.seconds("timelimit")
    if (
        elapsed is not None and elapsed > end - start + 1
    ):  # (less is suspension: Slurm leaves it out)
        raise line.fail(
            "elapsed",
            f"Elapsed {line.text('elapsed')} ({elapsed:,.0f} s) is longer than "
            f"End - Start ({end - start:,.0f} s)",
        )
    alloc_cpus, req_cpus = line.count("ncpus", "alloccpus"), line.count("reqcpus")
    if alloc_cpus == 0 and req_cpus == 0:
        return "no_cpus"
    nodes = line.count("nnodes", "allocnodes")
    memory = line.parsed("reqmem", lambda t: parse_memory_mib(t, alloc_cpus or req_cpus, nodes))
    tres = "alloctres" if line.text("alloctres") else "reqtres"
    if memory is None and line.text(tres):  # no ReqMem: the memory the TRES list gives the job
        memory = line.parsed(tres, lambda t: tres_memory_mib(t, alloc_cpus or req_cpus))
    if memory is not None and memory * 1024 > MAX_INT:  # SWF keeps KB per processor as an integer
        column = "reqmem" if line.text("reqmem") else tres
        raise line.fail(
            column,
            f"{line.text(column)} is too large ({memory:.3g} MiB per CPU); valid: "
            f"up to {MAX_INT // 1024:,} MiB per CPU",
        )
    return SacctJob(
        line=number,
        slurm_id=line.text("jobid"),
        submit=submit,
        start=start,
        run_time=elapsed if elapsed is not None else end - start,
        alloc_cpus=alloc_cpus,
        req_cpus=req_cpus,
        time_limit=limit if limit is not None and limit > 0 else -1.0,
        nodes=nodes,
        state=state,
        partition=line.text("partition"),
        mem_mib_per_cpu=-1.0 if memory is None else memory,
        gpus=line.parsed(tres, tres_gpus),
        user=line.text("user"),
    )


def swf_rows(conversion: SacctConversion) -> tuple[np.ndarray, dict[str, int], dict[str, int]]:
    """The 18 SWF fields of the converted jobs (see ``docs/slurm.md``), and the numbers
    given to partitions and users (1-based, in order of first appearance).

    Job ids are 1..n in submit order; times are seconds after the first submit.
    """
    partitions: dict[str, int] = {}
    users: dict[str, int] = {}
    jobs = conversion.jobs
    rows = np.full((len(jobs), 18), -1.0)
    origin = jobs[0].submit if jobs else 0.0
    for index, job in enumerate(jobs):
        queue = partitions.setdefault(job.partition, len(partitions) + 1) if job.partition else -1
        user = users.setdefault(job.user, len(users) + 1) if job.user else -1
        rows[index, :16] = (
            index + 1,
            job.submit - origin,
            job.start - job.submit,
            job.run_time,
            job.alloc_cpus or -1,
            -1,
            -1,
            job.req_cpus or -1,
            job.time_limit,
            round(job.mem_mib_per_cpu * 1024) if job.mem_mib_per_cpu >= 0 else -1,
            SWF_STATUS.get(job.state, -1),
            user,
            -1,
            -1,
            queue,
            queue,
        )
    return rows, partitions, users
