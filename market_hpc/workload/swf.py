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
* A job's estimate is field 9 when positive, else its run time.
* Run time 0 is valid and kept. Jobs submitted at the same second are all kept; jobs are
  returned sorted by (submit time, job id), which is file order for archive traces.
* Data facts, skipped and counted in both modes (never silently): run time ``-1``
  (``unknown_run_time``), fields 5 and 8 both non-positive (``unknown_size``), submit
  time ``-1`` (``unknown_submit``; e.g. LLNL-Thunder's all ``-1`` lines), decided in
  that order *before* any other field check, so such a line never fails the read. Each
  skipped line is kept in :attr:`Workload.skipped` with its line number and reason, so
  results can list it (``jobs.csv`` status ``skipped``).
* Malformed lines raise :class:`TraceFormatError` naming the file, the 1-based line
  and the field, or with ``lenient=True`` are skipped and counted under their kind:
  ``field_count`` (not 18 fields), ``non_numeric`` (only ASCII decimal numbers are
  numbers: no Unicode digits, ``1_0``, hex), ``not_finite`` (NaN, infinity),
  ``non_integer`` (fields 1, 5, 8, 12, 15 must be integers), ``bad_job_id`` (job ids are
  positive), ``negative_submit``, ``negative_run_time`` (negative other than -1),
  ``time_too_large`` (a submit, run or requested time beyond
  :data:`~market_hpc.validation.MAX_SECONDS`, where float64 no longer keeps seconds),
  ``duplicate_job_id`` (the first line with an id wins).
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

import gc
import gzip
import io
import math
import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from market_hpc.domain.job import CORE_UNIT, Job
from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.validation import MAX_SECONDS, TIME, TRACE_ID, parse_ascii_number

FIELD_NAMES: tuple[str, ...] = (
    "job id", "submit time", "wait time", "run time", "allocated processors",
    "average CPU time", "used memory", "requested processors", "requested time",
    "requested memory", "status", "user id", "group id", "executable", "queue",
    "partition", "preceding job", "think time",
)
N_FIELDS = len(FIELD_NAMES)
UNKNOWN_KINDS: tuple[str, ...] = ("unknown_run_time", "unknown_size", "unknown_submit")
UNKNOWN_REASONS: dict[str, str] = {
    "unknown_run_time": "run time unknown (field 4 is -1)",
    "unknown_size": "processor count unknown (fields 5 and 8 not positive)",
    "unknown_submit": "submit time unknown (field 2 is -1)",
}
MALFORMED_KINDS: tuple[str, ...] = (
    "field_count", "non_numeric", "not_finite", "non_integer", "bad_job_id", "negative_submit",
    "negative_run_time", "time_too_large", "duplicate_job_id",
)
MAX_EXAMPLES = 5  # example line numbers kept per anomaly kind

_JOB_ID, _SUBMIT, _RUN, _ALLOC, _REQ, _REQ_TIME, _USER, _QUEUE = 0, 1, 3, 4, 7, 8, 11, 14
_INT_COLUMNS = (_JOB_ID, _ALLOC, _REQ, _USER, _QUEUE)
_TIME_COLUMNS = (_SUBMIT, _RUN, _REQ_TIME)
UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
              (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
_MAX_EXACT_INT = 2.0**53
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
    """

    lines: int
    job_lines: int
    jobs_kept: int
    anomalies: dict[str, int]
    examples: dict[str, tuple[int, ...]]

    @property
    def skipped(self) -> int:
        """Job lines that did not become jobs."""
        return sum(self.anomalies.values())


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
        return (self.kinds == other.kinds and np.array_equal(self.lines, other.lines)
                and np.array_equal(self.rows, other.rows, equal_nan=True))

    __hash__ = None  # type: ignore[assignment]

    def records(self) -> list[dict[str, object]]:
        """One dict per skipped line with the job fields that are known (NaN/-1 otherwise).

        ``procs`` and ``estimate`` follow the request and estimate rules (field 8 when
        positive, else field 5; field 9 when positive, else the run time) and ``reason``
        names the line and what was unknown.
        """
        out: list[dict[str, object]] = []
        procs, estimates = request_and_estimate(self.rows)
        for line, row, kind, job_procs, estimate in zip(self.lines.tolist(), self.rows, self.kinds,
                                                         procs.tolist(), estimates.tolist(), strict=True):
            out.append({
                "job_id": _whole_or(row[_JOB_ID], -1), "submit": _known(row[_SUBMIT]),
                "run_time": _known(row[_RUN]), "procs": _whole_or(job_procs, 0),
                "estimate": _known(estimate),
                "user": _whole_or(row[_USER], -1),
                "queue": _whole_or(row[_QUEUE], -1),
                "reason": f"line {line}: {UNKNOWN_REASONS[kind]}",
            })
        return out


def _known(value: float) -> float:
    return float(value) if value >= 0 else math.nan


def _whole_or(value: float, default: int) -> int:
    return int(value) if math.isfinite(value) and value > 0 and value == math.floor(value) else default


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
        lenient: Skip and count malformed lines instead of raising.

    Returns:
        The workload: jobs sorted by (submit, job_id), header lines and a report.

    Raises:
        ConfigError: The file is missing or unreadable.
        TraceFormatError: A malformed line (unless ``lenient``), corrupt gzip data, or no
            jobs to keep.
    """
    source = os.fspath(path)
    data = _read_bytes(source)
    header = _header_lines(data)
    anomalies = _Anomalies()
    rows = _parse_fast(data)
    line_numbers: np.ndarray | None = None
    if rows is None:
        rows, line_numbers = _parse_slow(data, source, lenient, anomalies)
    job_lines = len(rows) + sum(anomalies.counts.values())
    if job_lines == 0:
        raise TraceFormatError(source, None, "no jobs: the file has no job lines")
    keep, skipped = _drop_unknowns(rows, data, line_numbers, anomalies)
    jobs = _jobs_from_rows(rows[keep])
    if not jobs:
        reasons = ", ".join(f"{k}: {v}" for k, v in anomalies.counts.items())
        message = f"no jobs: all {job_lines} job lines skipped ({reasons})"
        raise TraceFormatError(source, None, message)
    n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    examples = {kind: tuple(lines) for kind, lines in anomalies.examples.items()}
    report = TraceReport(n_lines, job_lines, len(jobs), dict(anomalies.counts), examples)
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


def text_start(head: bytes, source: str) -> int:
    """Bytes to skip at the start of a trace: 3 for a UTF-8 byte-order mark, else 0.

    Raises:
        TraceFormatError: UTF-16 or UTF-32 text (SWF is ASCII).
    """
    if head.startswith(UTF8_BOM):
        return len(UTF8_BOM)
    for mark, encoding in _WIDE_BOMS:
        if head.startswith(mark):
            raise TraceFormatError(source, 1, f"the file is {encoding} text (byte-order mark "
                                   f"{mark.hex(' ')}); SWF is ASCII: convert it, e.g. iconv -f {encoding} -t ASCII")
    return 0


def check_line_ends(data: bytes, source: str, first_line: int = 1) -> None:
    """Refuse a bare CR (``\\r`` not followed by ``\\n``), naming its line.

    Lines end at ``\\n`` (``\\r\\n`` is fine); a file with old Mac line ends would
    otherwise read as one line.

    >>> check_line_ends(b"1\\r\\n2\\r3\\n", "t.swf")
    Traceback (most recent call last):
    ...
    market_hpc.errors.TraceFormatError: t.swf:2: bare CR line end (\\r without \\n, old Mac text): convert the line ends to \\n, e.g. tr '\\r' '\\n'
    """
    if b"\r" not in data or data.count(b"\r") == data.count(b"\r\n"):
        return
    position = data.find(b"\r")
    while data[position + 1:position + 2] == b"\n":
        position = data.find(b"\r", position + 2)
    line = first_line + data.count(b"\n", 0, position)
    raise TraceFormatError(source, line, "bare CR line end (\\r without \\n, old Mac text): convert the "
                           "line ends to \\n, e.g. tr '\\r' '\\n'")


def _header_lines(data: bytes) -> tuple[str, ...]:
    """Return the comment lines, found from their ``;`` (few, so this is fast)."""
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


def _parse_fast(data: bytes) -> np.ndarray | None:
    """Parse every job line at once; ``None`` when anything needs the slow pass."""
    if data.count(b"\r") != data.count(b"\r\n"):
        return None  # pandas ends lines at a bare CR, the slow pass does not
    try:
        frame = pd.read_csv(
            io.BytesIO(data), sep=r"\s+", comment=";", header=None, dtype=np.float64,
            engine="c", encoding="latin-1", **_EXACT_FLOATS,
        )
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    all_rows = frame.to_numpy(dtype=np.float64)
    if all_rows.ndim != 2 or all_rows.shape[1] != N_FIELDS or len(all_rows) == 0:
        return None
    if np.isnan(all_rows).any():  # a short line (padded with NaN) or an NA token
        return None
    rows = all_rows[_unknown_masks(all_rows)[0]]  # unknown lines skip every other check
    ints = rows[:, _INT_COLUMNS]
    if not (
        np.isfinite(rows).all()
        and (np.abs(ints) < _MAX_EXACT_INT).all()
        and (ints == np.floor(ints)).all()
        and (rows[:, _SUBMIT] >= 0).all()
        and (rows[:, _RUN] >= 0).all()
        and TRACE_ID.contains_all(rows[:, _JOB_ID])
        and (rows[:, _TIME_COLUMNS] <= MAX_SECONDS).all()
        and np.unique(rows[:, _JOB_ID]).size == len(rows)
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
    text = data.decode("utf-8", errors="replace")
    for number, line in enumerate(text.split("\n"), start=1):
        tokens = line.split(";", 1)[0].split()
        if not tokens:
            continue
        unknown = _unknown_values(tokens)
        if unknown is not None:
            rows.append(unknown)
            numbers.append(number)
            continue
        values, problem = _check_line(tokens, first_line_of)
        if problem is not None:
            kind, index, message = problem
            if not lenient:
                label = None if index is None else f"{index + 1} ({FIELD_NAMES[index]})"
                raise TraceFormatError(source, number, message, field=label)
            anomalies.add(kind, [number])
            continue
        first_line_of[values[_JOB_ID]] = number
        rows.append(values)
        numbers.append(number)
    array = np.asarray(rows, dtype=np.float64).reshape(len(rows), N_FIELDS)
    return array, np.asarray(numbers, dtype=np.int64)


def _unknown_values(tokens: list[str]) -> list[float] | None:
    """The values of a line whose run time, size or submit time is unknown, else ``None``.

    Decided before any other check (NaN stands for a field that is not a number), so a
    line of a job that could never be simulated is skipped, not reported as malformed.
    """
    if len(tokens) != N_FIELDS:
        return None
    values = []
    for token in tokens:
        value = parse_ascii_number(token)
        values.append(math.nan if value is None else value)
    # The scalar twin of _unknown_masks (NaN compares false in both).
    if values[_RUN] == -1 or (values[_ALLOC] <= 0 and values[_REQ] <= 0) or values[_SUBMIT] == -1:
        return values
    return None


def _unknown_masks(rows: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Rows to check further, and the rows of each unknown kind (first kind wins).

    >>> rows = np.full((3, N_FIELDS), 1.0)
    >>> rows[0, _RUN] = rows[0, _SUBMIT] = -1; rows[1, _SUBMIT] = -1
    >>> known, kinds = _unknown_masks(rows)
    >>> known.tolist(), {k: v.tolist() for k, v in kinds.items()}
    ([False, False, True], {'unknown_run_time': [True, False, False], 'unknown_size': [False, False, False], 'unknown_submit': [False, True, False]})
    """
    run = rows[:, _RUN] == -1
    size = ~run & (rows[:, _ALLOC] <= 0) & (rows[:, _REQ] <= 0)
    submit = ~run & ~size & (rows[:, _SUBMIT] == -1)
    kinds = {"unknown_run_time": run, "unknown_size": size, "unknown_submit": submit}
    return ~(run | size | submit), kinds


def _check_line(
    tokens: list[str], first_line_of: dict[float, int]
) -> tuple[list[float], tuple[str, int | None, str] | None]:
    """Return the values of one job line and its first problem, if any."""
    if len(tokens) != N_FIELDS:
        return [], ("field_count", None, f"expected {N_FIELDS} fields, got {len(tokens)}")
    values: list[float] = []
    for index, token in enumerate(tokens):
        value = parse_ascii_number(token)
        if value is None:
            if token.lstrip("+-").lower() in ("nan", "inf", "infinity"):
                return [], ("not_finite", index, f"{token!r} is not a finite number")
            message = f"{token!r} is not an ASCII number (digits 0-9, an optional sign, point and exponent)"
            return [], ("non_numeric", index, message)
        if not math.isfinite(value):
            return [], ("not_finite", index, f"{token!r} is not a finite number")
        values.append(value)
    for index in _INT_COLUMNS:
        value = values[index]
        if not (abs(value) < _MAX_EXACT_INT and value == math.floor(value)):
            return [], ("non_integer", index, f"{tokens[index]!r} is not an integer")
    if not TRACE_ID.contains(values[_JOB_ID]):
        return [], ("bad_job_id", _JOB_ID, f"job id {tokens[_JOB_ID]} is not positive; valid: {TRACE_ID.describe()}")
    for index in _TIME_COLUMNS:
        if values[index] > MAX_SECONDS:
            message = (f"{tokens[index]} s is too large to keep second precision in float64; "
                       f"valid: {TIME.describe()}")
            return [], ("time_too_large", index, message)
    if values[_SUBMIT] < 0:
        return [], ("negative_submit", _SUBMIT, f"negative submit time {tokens[_SUBMIT]}")
    run = values[_RUN]
    if run < 0 and run != -1:
        message = f"negative run time {tokens[_RUN]} (only -1, unknown, may be negative)"
        return [], ("negative_run_time", _RUN, message)
    first = first_line_of.get(values[_JOB_ID])
    if first is not None:
        message = f"duplicate job id {tokens[_JOB_ID]} (first on line {first})"
        return [], ("duplicate_job_id", _JOB_ID, message)
    return values, None


def _drop_unknowns(
    rows: np.ndarray, data: bytes, line_numbers: np.ndarray | None, anomalies: _Anomalies
) -> tuple[np.ndarray, SkippedJobs]:
    """Count jobs of unknown run time, size or submit time; return the mask of jobs to
    keep and the skipped lines."""
    keep, kinds = _unknown_masks(rows)
    if keep.all():
        return keep, SkippedJobs.empty()
    if line_numbers is None:
        line_numbers = _data_line_numbers(data)
    kind_of = np.full(len(rows), "", dtype=object)
    for kind, mask in kinds.items():
        count = int(mask.sum())
        if count:
            anomalies.add(kind, line_numbers[mask][:MAX_EXAMPLES].tolist(), count)
            kind_of[mask] = kind
    skipped = ~keep
    return keep, SkippedJobs(line_numbers[skipped], rows[skipped], tuple(kind_of[skipped].tolist()))


def _data_line_numbers(data: bytes) -> np.ndarray:
    """1-based numbers of the job lines, in order (the fast pass's row order)."""
    numbers = [
        number
        for number, line in enumerate(data.split(b"\n"), start=1)
        if line.split(b";", 1)[0].strip()
    ]
    return np.asarray(numbers, dtype=np.int64)


def request_and_estimate(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The SWF request and estimate rules, the one definition every reader uses.

    A job's processors are field 8 when positive, else field 5; its estimate is field 9
    when positive, else its run time (field 4). NaN (a field that is not a number) is not
    positive.

    Args:
        rows: ``(n, 18)`` field values.

    Returns:
        The processors and the estimates, as floats.

    >>> rows = np.full((3, N_FIELDS), -1.0)
    >>> rows[:, _RUN], rows[:, _ALLOC] = 50.0, 4.0
    >>> rows[1, _REQ], rows[1, _REQ_TIME] = 8.0, 600.0
    >>> rows[2, _REQ], rows[2, _REQ_TIME] = np.nan, 0.0
    >>> [values.tolist() for values in request_and_estimate(rows)]
    [[4.0, 8.0, 4.0], [50.0, 600.0, 50.0]]
    """
    procs = np.where(rows[:, _REQ] > 0, rows[:, _REQ], rows[:, _ALLOC])
    estimate = np.where(rows[:, _REQ_TIME] > 0, rows[:, _REQ_TIME], rows[:, _RUN])
    return procs, estimate


def jobs_in_row_order(rows: np.ndarray) -> list[Job]:
    """Build the jobs of checked rows, in row order, with :func:`request_and_estimate`."""
    procs, estimate = request_and_estimate(rows)
    job_ids, users, queues = rows[:, [_JOB_ID, _USER, _QUEUE]].astype(np.int64).T.tolist()
    columns = zip(job_ids, rows[:, _SUBMIT].tolist(), rows[:, _RUN].tolist(), estimate.tolist(),
                  procs.astype(np.int64).tolist(), users, queues, strict=True)
    # Pause the cyclic GC: 300k new jobs would otherwise trigger many useless passes.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return [
            Job(job_id, submit, run_time, est, units, CORE_UNIT, 0.0, user, queue)
            for job_id, submit, run_time, est, units, user, queue in columns
        ]
    finally:
        if was_enabled:
            gc.enable()


def _jobs_from_rows(rows: np.ndarray) -> list[Job]:
    """Build jobs sorted by (submit, job_id) with the request and estimate rules."""
    return jobs_in_row_order(rows[np.lexsort((rows[:, _JOB_ID], rows[:, _SUBMIT]))])


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
    out = [line if line.lstrip().startswith(";") else f"; {line}" for text in header
           for line in (text.splitlines() or [""])]
    seen: set[int] = set()
    for job in jobs:
        _check_writable(job, seen)
        estimate = _number(job.estimate) if job.estimate > 0 else "-1"
        out.append(
            f"{job.job_id} {_number(job.submit)} -1 {_number(job.run_time)} {job.units} -1 -1 "
            f"{job.units} {estimate} -1 1 {job.user} -1 -1 {job.queue} -1 -1 -1"
        )
    write_trace_text("\n".join(out) + "\n", path)


def write_trace_text(text: str, path: str | os.PathLike[str]) -> None:
    """Write a trace's text, gzip-compressed without a timestamp when the path ends in
    ``.gz`` (the same text gives the same bytes).

    Raises:
        ConfigError: The file cannot be written.
    """
    payload = text.encode("utf-8")
    target = os.fspath(path)
    if target.endswith(".gz"):
        payload = gzip.compress(payload, compresslevel=9, mtime=0)
    try:
        with open(target, "wb") as handle:
            handle.write(payload)
    except OSError as exc:
        raise ConfigError(f"cannot write trace {target}: {exc.strerror or exc}") from None


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


def _number(value: float) -> str:
    """Shortest exact text of a number: integers without a decimal point.

    >>> _number(3.0), _number(0.25), _number(1e20)
    ('3', '0.25', '100000000000000000000')
    """
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)
