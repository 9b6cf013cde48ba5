"""Read and write Standard Workload Format (SWF) traces.

SWF (Parallel Workloads Archive, Feitelson et al.) has one job per line, 18
whitespace-separated numeric fields, ``-1`` meaning unknown; lines starting with ``;``
are header comments. Text after a ``;`` on a job line is ignored as a comment too, and
blank lines are skipped. Files may be gzip-compressed (detected from their content).

Semantics used here (1-based field numbers):

* field 1 job id (unique), 2 submit time in seconds from the trace start (kept as is:
  SWF times already are relative), 4 run time, 5 allocated processors, 8 requested
  processors, 9 requested time, 12 user id, 15 queue.
* A job's processor request is field 8 when positive, else field 5. It becomes
  ``Job(units=procs, unit=(1, 0, 0, 0))``.
* A job's estimate is field 9 when positive, else its run time: a perfect estimate the
  trace never recorded, so every reader counts those jobs
  (:attr:`TraceReport.estimate_fallback_jobs`); runs report and warn about them.
* Run time 0 is valid and kept. Jobs submitted at the same second are all kept; jobs are
  returned sorted by (submit time, job id), which is file order for archive traces.
* Data facts, skipped and counted in both modes (never silently): run time ``-1``
  (``unknown_run_time``), fields 5 and 8 both non-positive (``unknown_size``), submit
  time ``-1`` (``unknown_submit``; e.g. LLNL-Thunder's all ``-1`` lines), decided in
  that order *before* any other field check, so such a line never fails the read. Each
  skipped line is kept in :attr:`Workload.skipped` with its line number and reason, so
  results can list it (``jobs.csv`` status ``skipped``).
* Partial executions (field 11 status 2, 3, 4; ``Preemption: Double`` logs and this
  project's schedule exports show a held job as a whole-job line plus one line per
  part): a part line of a job number that also has a whole-job line (status 0, 1, 5,
  -1 or any other value), in any order, is skipped in both modes and counted as
  ``partial_execution`` (in the report only: it is not a job that was skipped, so it is
  not in :attr:`Workload.skipped`), even when one of its fields is unknown (a part of
  unknown run time, size or submit time without a whole-job line is skipped as unknown). Part lines
  of a job number without a whole-job line raise ``TraceFormatError`` at the first of them (field
  11), after every line was checked; with ``lenient=True`` that first part is the job and the job's
  other parts are counted as ``missing_summary``. :mod:`market_hpc.workload.swf_partial` has the
  rules.
* Malformed lines raise :class:`TraceFormatError` naming the file, the 1-based line
  and the field, or with ``lenient=True`` are skipped and counted under their kind:
  ``field_count`` (not 18 fields), ``non_numeric`` (only ASCII decimal numbers are
  numbers: no Unicode digits, ``1_0``, hex), ``not_finite`` (NaN, infinity),
  ``non_integer`` (fields 1, 5, 8, 12, 15 must be integers), ``bad_job_id`` (job ids are
  positive), ``negative_submit``, ``negative_run_time`` (negative other than -1),
  ``time_too_large`` (a submit, run or requested time beyond
  :data:`~market_hpc.validation.MAX_SECONDS`, where float64 no longer keeps seconds),
  ``duplicate_job_id`` (two whole-job lines with one id: the first wins).
* Text: a UTF-8 byte-order mark is skipped; UTF-16/32 text and bare CR line ends
  (``\\r`` without ``\\n``, old Mac text) raise ``TraceFormatError`` naming the cause
  (the line of the first bare CR), in every mode.
* No job lines at all, or none kept, raises ``TraceFormatError`` "no jobs...". A
  missing or unreadable file raises :class:`ConfigError` with the path and OS reason.

Parsing first tries a vectorised pass (pandas' C reader); if that pass sees anything
irregular, a line-by-line pass decides, so both give identical results and the slow
pass supplies the line numbers.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from market_hpc.atomic_file import atomic_write
from market_hpc.domain.job import CORE_UNIT, Job
from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.gc_pause import gc_paused
from market_hpc.validation import MAX_SECONDS, TRACE_ID
from market_hpc.workload.swf_format import (
    FIELD_NAMES,
    INT_COLUMNS,
    JOB_ID,
    MALFORMED_KINDS,
    MAX_EXACT_INT,
    N_FIELDS,
    QUEUE,
    RUN,
    STATUS,
    SUBMIT,
    TIME_COLUMNS,
    UNKNOWN_KINDS,
    UNKNOWN_REASONS,
    USER,
    check_line,
    check_line_ends,
    estimate_fallbacks,
    format_number,
    request_and_estimate,
    split_fields,
    text_start,
    unknown_masks,
    unknown_values,
)
from market_hpc.workload.swf_partial import PARTIAL_STATUSES, PartialLines, is_partial

MAX_EXAMPLES = 5  # example line numbers kept per anomaly kind

__all__ = [  # the layout and line rules live in swf_format; re-exported for readers of this module
    "FIELD_NAMES",
    "MALFORMED_KINDS",
    "MAX_EXAMPLES",
    "N_FIELDS",
    "UNKNOWN_KINDS",
    "UNKNOWN_REASONS",
    "SkippedJobs",
    "TraceReport",
    "Workload",
    "check_line_ends",
    "data_line_numbers",
    "header_lines",
    "jobs_in_row_order",
    "parse_fast",
    "read_swf",
    "request_and_estimate",
    "text_start",
    "write_swf",
    "write_trace_text",
]

# pandas 3 parses floats exactly by default and deprecates the option that pandas 2 needs.
_EXACT_FLOATS: dict[str, str] = (
    {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
)


@dataclass(frozen=True)
class TraceReport:
    """What reading a trace kept and skipped.

    Attributes:
        lines: Lines in the file (header, blank and job lines).
        job_lines: Non-blank, non-comment lines.
        jobs_kept: Jobs in the resulting workload.
        anomalies: Skipped job lines per anomaly kind (only kinds that occurred).
        examples: Up to ``MAX_EXAMPLES`` 1-based line numbers per anomaly kind.
        estimate_fallback_jobs: Kept jobs without a wall-time request (field 9 not
            positive), whose estimate is therefore their run time.
    """

    lines: int
    job_lines: int
    jobs_kept: int
    anomalies: dict[str, int]
    examples: dict[str, tuple[int, ...]]
    estimate_fallback_jobs: int = 0

    @property
    def skipped(self) -> int:
        """Job lines that did not become jobs."""
        return sum(self.anomalies.values())

    @property
    def estimate_fallback_share(self) -> float:
        """The share of kept jobs whose estimate fell back to the run time (0 without jobs).

        >>> TraceReport(100, 100, 100, {}, {}, estimate_fallback_jobs=3).estimate_fallback_share
        0.03
        """
        return self.estimate_fallback_jobs / self.jobs_kept if self.jobs_kept else 0.0


@dataclass(frozen=True, eq=False)
class SkippedJobs:
    """Job lines skipped because a key field is unknown, kept so results can list them.

    Attributes:
        lines: 1-based line numbers, in file order.
        rows: ``(n, 18)`` field values of those lines (NaN where a field is not a number).
        kinds: The ``UNKNOWN_KINDS`` entry of each line.
    """

    lines: np.ndarray
    rows: np.ndarray
    kinds: tuple[str, ...]

    @classmethod
    def empty(cls) -> SkippedJobs:
        """No skipped lines."""
        return cls(np.zeros(0, dtype=np.int64), np.zeros((0, N_FIELDS)), ())

    def __len__(self) -> int:
        return len(self.kinds)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SkippedJobs):
            return NotImplemented
        return (
            self.kinds == other.kinds
            and np.array_equal(self.lines, other.lines)
            and np.array_equal(self.rows, other.rows, equal_nan=True)
        )

    __hash__ = None  # type: ignore[assignment]

    def records(self) -> list[dict[str, object]]:
        """One dict per skipped line with the job fields that are known (NaN/-1 otherwise).

        ``procs`` and ``estimate`` follow the request and estimate rules (field 8 when
        positive, else field 5; field 9 when positive, else the run time) and ``reason``
        names the line and what was unknown.
        """
        out: list[dict[str, object]] = []
        procs, estimates = request_and_estimate(self.rows)
        for line, row, kind, job_procs, estimate in zip(
            self.lines.tolist(),
            self.rows,
            self.kinds,
            procs.tolist(),
            estimates.tolist(),
            strict=True,
        ):
            out.append(
                {
                    "job_id": _whole_or(row[JOB_ID], -1),
                    "submit": _known(row[SUBMIT]),
                    "run_time": _known(row[RUN]),
                    "procs": _whole_or(job_procs, 0),
                    "estimate": _known(estimate),
                    "user": _whole_or(row[USER], -1),
                    "queue": _whole_or(row[QUEUE], -1),
                    "reason": f"line {line}: {UNKNOWN_REASONS[kind]}",
                }
            )
        return out


def _known(value: float) -> float:
    return float(value) if value >= 0 else math.nan


def _whole_or(value: float, default: int) -> int:
    return (
        int(value) if math.isfinite(value) and value > 0 and value == math.floor(value) else default
    )


@dataclass(frozen=True)
class Workload:
    """Jobs read from a trace, with the trace's header and what was skipped.

    Attributes:
        jobs: Jobs sorted by (submit, job_id).
        header: The ``;`` header lines, verbatim without trailing whitespace.
        source: The path read.
        report: Counts of lines, kept jobs and anomalies.
        skipped: The lines skipped for an unknown run time, size or submit time.
    """

    jobs: tuple[Job, ...]
    header: tuple[str, ...]
    source: str
    report: TraceReport
    skipped: SkippedJobs = field(default_factory=SkippedJobs.empty)


class _Anomalies:
    """Counts skipped lines per kind and keeps the first few line numbers."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[int]] = {}

    def add(self, kind: str, lines: list[int], count: int | None = None) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + (len(lines) if count is None else count)
        kept = self.examples.setdefault(kind, [])
        kept.extend(lines[: MAX_EXAMPLES - len(kept)])


def read_swf(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Read a plain or gzip-compressed SWF trace.

    Args:
        path: The trace file.
        lenient: Skip and count malformed lines instead of raising; keep a job's first
            partial execution when it has no whole-job line.

    Returns:
        The workload: jobs sorted by (submit, job_id), header lines and a report.

    Raises:
        ConfigError: The file is missing or unreadable.
        TraceFormatError: A malformed line or partial executions without a whole-job line
            (unless ``lenient``), corrupt gzip data, or no jobs to keep.
    """
    source = os.fspath(path)
    data = _read_bytes(source)
    header = header_lines(data)
    anomalies = _Anomalies()
    rows = parse_fast(data)
    line_numbers: np.ndarray | None = None
    if rows is None:
        rows, line_numbers = _parse_slow(data, source, lenient, anomalies)
    job_lines = len(rows) + sum(anomalies.counts.values())
    if job_lines == 0:
        raise TraceFormatError(source, None, "no jobs: the file has no job lines")
    keep, skipped = _drop_unknowns(rows, data, line_numbers, anomalies)
    kept = rows[keep]
    jobs = _jobs_from_rows(kept)
    if not jobs:
        reasons = ", ".join(f"{k}: {v}" for k, v in anomalies.counts.items())
        message = f"no jobs: all {job_lines} job lines skipped ({reasons})"
        raise TraceFormatError(source, None, message)
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    examples = {kind: tuple(lines) for kind, lines in anomalies.examples.items()}
    report = TraceReport(
        n_lines,
        job_lines,
        len(jobs),
        dict(anomalies.counts),
        examples,
        estimate_fallback_jobs=estimate_fallbacks(kept),
    )
    return Workload(jobs=tuple(jobs), header=header, source=source, report=report, skipped=skipped)


def _read_bytes(source: str) -> bytes:
    try:
        with open(source, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ConfigError(f"cannot read trace {source}: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceFormatError(source, None, f"corrupt gzip data: {exc}") from None
    skip = text_start(raw[:4], source)
    check_line_ends(raw, source)
    return raw[skip:] if skip else raw


def header_lines(data: bytes) -> tuple[str, ...]:
    """Return the comment lines, found from their ``;`` (few, so this is fast).

    Args:
        data: Trace text (whole lines).
    """
    lines: list[str] = []
    pos = data.find(b";")
    while pos != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end == -1 else end
        if not data[start:pos].strip():
            lines.append(data[start:end].decode("utf-8", errors="replace").rstrip())
        pos = data.find(b";", end)
    return tuple(lines)


def parse_fast(data: bytes) -> np.ndarray | None:
    """Parse every job line at once; ``None`` when anything needs the slow pass.

    Args:
        data: Trace text (whole lines).

    Returns:
        The ``(n, 18)`` field values of every job line (unknown lines included), or
        ``None`` when a line is irregular or a partial execution (status 2, 3 or 4): the
        line-by-line pass then decides.
    """
    if data.count(b"\r") != data.count(b"\r\n"):
        return None  # pandas ends lines at a bare CR, the slow pass does not
    try:
        frame = pd.read_csv(
            io.BytesIO(data),
            sep=r"\s+",
            comment=";",
            header=None,
            dtype=np.float64,
            engine="c",
            encoding="latin-1",
            **_EXACT_FLOATS,
        )
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    all_rows: np.ndarray = frame.to_numpy(dtype=np.float64)
    if all_rows.ndim != 2 or all_rows.shape[1] != N_FIELDS or len(all_rows) == 0:
        return None
    if np.isnan(all_rows).any():  # a short line (padded with NaN) or an NA token
        return None
    if np.isin(all_rows[:, STATUS], PARTIAL_STATUSES).any():
        return None  # partial executions: swf_partial decides, line by line
    rows = all_rows[unknown_masks(all_rows)[0]]  # unknown lines skip every other check
    ints = rows[:, INT_COLUMNS]
    if not (
        np.isfinite(rows).all()
        and (np.abs(ints) < MAX_EXACT_INT).all()
        and (ints == np.floor(ints)).all()
        and (rows[:, SUBMIT] >= 0).all()
        and (rows[:, RUN] >= 0).all()
        and TRACE_ID.contains_all(rows[:, JOB_ID])
        and (rows[:, TIME_COLUMNS] <= MAX_SECONDS).all()
        and np.unique(rows[:, JOB_ID]).size == len(rows)
    ):
        return None
    return all_rows


def _parse_slow(
    data: bytes, source: str, lenient: bool, anomalies: _Anomalies
) -> tuple[np.ndarray, np.ndarray]:
    """Check each line in order; return the well-formed rows and their line numbers."""
    rows: list[list[float]] = []
    numbers: list[int] = []
    first_line_of: dict[float, int] = {}
    unknown_whole: set[float] = (
        set()
    )  # job numbers of whole-job lines of unknown run time, size or submit
    partials = PartialLines()
    text = data.decode("utf-8", errors="replace")
    for number, line in enumerate(text.split("\n"), start=1):
        tokens = split_fields(line.split(";", 1)[0])
        if not tokens:
            continue
        partial = is_partial(tokens)
        unknown = unknown_values(tokens)
        if unknown is not None:
            if partial:
                partials.add_unknown(unknown[JOB_ID], number, unknown)
                continue
            unknown_whole.add(unknown[JOB_ID])
            rows.append(unknown)
            numbers.append(number)
            continue
        values, problem = check_line(
            tokens, {} if partial else first_line_of
        )  # parts repeat their job's id
        if problem is not None:
            kind, index, message = problem
            if not lenient:
                label = None if index is None else f"{index + 1} ({FIELD_NAMES[index]})"
                raise TraceFormatError(source, number, message, field=label)
            anomalies.add(kind, [number])
            continue
        if partial:
            if not partials.add(values[JOB_ID], number):
                continue
        else:
            first_line_of[values[JOB_ID]] = number
        rows.append(values)
        numbers.append(number)
    not_jobs, unknown_parts = partials.resolve(
        lambda job_id: job_id in first_line_of or job_id in unknown_whole,
        source,
        lenient,
        anomalies.add,
    )
    for number, values in unknown_parts:  # parts without a whole-job line: skipped as unknown
        rows.append(values)
        numbers.append(number)
    array = np.asarray(rows, dtype=np.float64).reshape(len(rows), N_FIELDS)
    line_numbers = np.asarray(numbers, dtype=np.int64)
    if not_jobs or unknown_parts:
        in_file_order = np.argsort(line_numbers, kind="stable")
        jobs = ~np.isin(line_numbers[in_file_order], list(not_jobs))
        array, line_numbers = array[in_file_order][jobs], line_numbers[in_file_order][jobs]
    return array, line_numbers


def _drop_unknowns(
    rows: np.ndarray, data: bytes, line_numbers: np.ndarray | None, anomalies: _Anomalies
) -> tuple[np.ndarray, SkippedJobs]:
    """Count jobs of unknown run time, size or submit time; return the mask of jobs to
    keep and the skipped lines."""
    keep, kinds = unknown_masks(rows)
    if keep.all():
        return keep, SkippedJobs.empty()
    if line_numbers is None:
        line_numbers = data_line_numbers(data)
    kind_of = np.full(len(rows), "", dtype=object)
    for kind, mask in kinds.items():
        count = int(mask.sum())
        if count:
            anomalies.add(kind, line_numbers[mask][:MAX_EXAMPLES].tolist(), count)
            kind_of[mask] = kind
    skipped = ~keep
    return keep, SkippedJobs(line_numbers[skipped], rows[skipped], tuple(kind_of[skipped].tolist()))


def data_line_numbers(data: bytes) -> np.ndarray:
    """1-based numbers of the job lines, in order (the fast pass's row order).

    Args:
        data: Trace text (whole lines).
    """
    numbers = [
        number
        for number, line in enumerate(data.split(b"\n"), start=1)
        if line.split(b";", 1)[0].strip()
    ]
    return np.asarray(numbers, dtype=np.int64)


def jobs_in_row_order(rows: np.ndarray) -> list[Job]:
    """Build the jobs of checked rows, in row order, with :func:`request_and_estimate`."""
    procs, estimate = request_and_estimate(rows)
    job_ids, users, queues = rows[:, [JOB_ID, USER, QUEUE]].astype(np.int64).T.tolist()
    columns = zip(
        job_ids,
        rows[:, SUBMIT].tolist(),
        rows[:, RUN].tolist(),
        estimate.tolist(),
        procs.astype(np.int64).tolist(),
        users,
        queues,
        strict=True,
    )
    # Pause the cyclic GC: new jobs trigger passes that reclaim nothing. Building HPC2N's
    # 202,876 jobs: 0.97 s paused, 1.56 s not (best of 3 each, alternated).
    with gc_paused():
        return [
            Job(job_id, submit, run_time, est, units, CORE_UNIT, 0.0, user, queue)
            for job_id, submit, run_time, est, units, user, queue in columns
        ]


def _jobs_from_rows(rows: np.ndarray) -> list[Job]:
    """Build jobs sorted by (submit, job_id) with the request and estimate rules."""
    return jobs_in_row_order(rows[np.lexsort((rows[:, JOB_ID], rows[:, SUBMIT]))])


def write_swf(
    jobs: Iterable[Job], path: str | os.PathLike[str], header: Iterable[str] = ()
) -> None:
    """Write jobs as an SWF file (gzip-compressed when the path ends in ``.gz``).

    Fields 1, 2, 4, 5 and 8 (both ``units``), 9 (the estimate, ``-1`` when it is 0), 11
    (status 1), 12 and 15 are filled, the rest are ``-1``. Header lines get a ``; ``
    prefix unless they start with ``;``. Gzip output has no timestamp, so the same
    jobs give the same bytes. The file reads back with :func:`read_swf` to equal jobs.

    Args:
        jobs: Plain processor jobs (``unit == (1, 0, 0, 0)``, no burst buffer, no
            profile) with unique positive ids and an estimate that is positive or equals
            the run time (``Job`` itself keeps times finite and in range).
        path: Output file.
        header: Header lines.

    Raises:
        ConfigError: A job SWF cannot represent exactly, or the file cannot be written.
    """
    out = [
        line if line.lstrip().startswith(";") else f"; {line}"
        for text in header
        for line in (text.splitlines() or [""])
    ]
    seen: set[int] = set()
    for job in jobs:
        _check_writable(job, seen)
        estimate = format_number(job.estimate) if job.estimate > 0 else "-1"
        out.append(
            f"{job.job_id} {format_number(job.submit)} -1 {format_number(job.run_time)} "
            f"{job.units} -1 -1 "
            f"{job.units} {estimate} -1 1 {job.user} -1 -1 {job.queue} -1 -1 -1"
        )
    write_trace_text("\n".join(out) + "\n", path)


def trace_bytes(text: str, path: str | os.PathLike[str]) -> bytes:
    """A trace's bytes as :func:`write_trace_text` writes them to ``path``: UTF-8,
    gzip-compressed without a timestamp when the path ends in ``.gz``."""
    payload = text.encode("utf-8")
    if os.fspath(path).endswith(".gz"):
        payload = gzip.compress(payload, compresslevel=9, mtime=0)
    return payload


def write_trace_text(text: str, path: str | os.PathLike[str]) -> None:
    """Write a trace's text, gzip-compressed without a timestamp when the path ends in
    ``.gz`` (the same text gives the same bytes), atomically: a failure leaves the
    previous file or none (:func:`~market_hpc.atomic_file.atomic_write`).

    Raises:
        ConfigError: The file cannot be written.
    """
    payload = trace_bytes(text, path)
    target = os.fspath(path)
    try:
        atomic_write(target, lambda handle: handle.write(payload))
    except OSError as exc:
        raise ConfigError(
            f"cannot write trace {target}: {exc.strerror or exc} (nothing written, "
            f"the previous {os.path.basename(target)} unchanged)"
        ) from None


def _check_writable(job: Job, seen: set[int]) -> None:
    where = f"job {job.job_id}"
    if job.unit != CORE_UNIT or job.bb or job.profile is not None:
        raise ConfigError(
            f"{where}: SWF holds processor counts only; got unit={job.unit}, bb={job.bb}, "
            f"profile={'set' if job.profile is not None else None}"
        )
    if job.job_id in seen:
        raise ConfigError(f"{where}: duplicate job id")
    seen.add(job.job_id)
    if not TRACE_ID.contains(job.job_id):  # Job checked its times; ids >= 0 there, > 0 in SWF
        raise ConfigError(f"{where}: SWF job ids are positive; valid: {TRACE_ID.describe()}")
    if not (math.isfinite(job.estimate) and (job.estimate > 0 or job.estimate == job.run_time)):
        message = f"estimate must be > 0 or equal the run time, got {job.estimate}"
        raise ConfigError(f"{where}: {message}")
