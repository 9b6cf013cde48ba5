"""The Standard Workload Format's layout and line rules, shared by every SWF reader and writer.

One definition of what an SWF line is (:mod:`market_hpc.workload.swf` documents the
semantics): the 18 fields and the indices of those the readers use, the rules deciding
whether a line's job is unknown or the line is malformed, the request and estimate rules
(and the count of estimates that fall back to the run time),
the text checks (byte-order marks, bare CRs) and the shortest exact text of a number.
:func:`~market_hpc.workload.swf.read_swf`, the streaming reader
(:mod:`market_hpc.workload.swf_stream`, :mod:`market_hpc.workload.swf_blocks`) and the
writers (:mod:`market_hpc.workload.swf_rows`, schedule exports) all use these.
"""

from __future__ import annotations

import math
import re
import unicodedata

import numpy as np

from market_hpc.errors import TraceFormatError
from market_hpc.validation import MAX_SECONDS, TIME, TRACE_ID, parse_ascii_number

FIELD_NAMES: tuple[str, ...] = (
    "job id",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
)
N_FIELDS = len(FIELD_NAMES)
UNKNOWN_KINDS: tuple[str, ...] = ("unknown_run_time", "unknown_size", "unknown_submit")
UNKNOWN_REASONS: dict[str, str] = {
    "unknown_run_time": "run time unknown (field 4 is -1)",
    "unknown_size": "processor count unknown (fields 5 and 8 not positive)",
    "unknown_submit": "submit time unknown (field 2 is -1)",
}
MALFORMED_KINDS: tuple[str, ...] = (
    "field_count",
    "non_numeric",
    "not_finite",
    "non_integer",
    "bad_job_id",
    "negative_submit",
    "negative_run_time",
    "time_too_large",
    "duplicate_job_id",
    "missing_summary",
)

# 0-based indices of the fields the readers use (FIELD_NAMES has them all).
JOB_ID, SUBMIT, RUN, ALLOC, REQ, REQ_TIME, STATUS, USER, QUEUE = 0, 1, 3, 4, 7, 8, 10, 11, 14
INT_COLUMNS = (JOB_ID, ALLOC, REQ, USER, QUEUE)
"""Fields that must hold integers."""
TIME_COLUMNS = (SUBMIT, RUN, REQ_TIME)
"""Fields in seconds, at most :data:`~market_hpc.validation.MAX_SECONDS`."""
MAX_EXACT_INT = 2.0**53
"""Integers of smaller magnitude are exact in float64."""
UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def text_start(head: bytes, source: str) -> int:
    """Bytes to skip at the start of a trace: 3 for a UTF-8 byte-order mark, else 0.

    Raises:
        TraceFormatError: UTF-16 or UTF-32 text (SWF is ASCII).
    """
    if head.startswith(UTF8_BOM):
        return len(UTF8_BOM)
    for mark, encoding in _WIDE_BOMS:
        if head.startswith(mark):
            raise TraceFormatError(
                source,
                1,
                f"the file is {encoding} text (byte-order mark "
                f"{mark.hex(' ')}); SWF is ASCII: convert it, e.g. iconv -f {encoding} -t ASCII",
            )
    return 0


def check_line_ends(data: bytes, source: str, first_line: int = 1) -> None:
    """Refuse a bare CR (``\\r`` not followed by ``\\n``), naming its line.

    Lines end at ``\\n`` (``\\r\\n`` is fine); a file with old Mac line ends would
    otherwise read as one line.

    >>> check_line_ends(b"1\\r\\n2\\r3\\n", "t.swf")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.TraceFormatError: t.swf:2: bare CR line end (\\r without \\n, old Mac text):
    convert the line ends to \\n, e.g. tr '\\r' '\\n'
    """
    if b"\r" not in data or data.count(b"\r") == data.count(b"\r\n"):
        return
    position = data.find(b"\r")
    while data[position + 1 : position + 2] == b"\n":
        position = data.find(b"\r", position + 2)
    line = first_line + data.count(b"\n", 0, position)
    raise TraceFormatError(
        source,
        line,
        "bare CR line end (\\r without \\n, old Mac text): convert the "
        "line ends to \\n, e.g. tr '\\r' '\\n'",
    )


_ASCII_SPACE = re.compile("[ \t\n\r\x0b\x0c]+")


def split_fields(text: str) -> list[str]:
    """The fields of a line (its comment removed): split at ASCII spaces and tabs only.

    ``str.split()`` would also split at Unicode spaces such as U+00A0 (no-break space),
    which SWF does not allow; kept inside a field here, :func:`check_line` names them.

    >>> split_fields("1  2\t3"), split_fields("1\u00a02 3")
    (['1', '2', '3'], ['1\xa02', '3'])
    """
    if text.isascii():
        return text.split()
    return [field for field in _ASCII_SPACE.split(text) if field]


def _odd_separator(token: str) -> str | None:
    """A message for a field holding a non-ASCII space (e.g. U+00A0), else ``None``."""
    if token.isascii():
        return None
    odd = next((char for char in token if char.isspace()), None)
    if odd is None:
        return None
    return (
        f"{token!r} holds U+{ord(odd):04X} ({unicodedata.name(odd, 'a non-ASCII space')}) as a "
        "separator; SWF fields are separated by ASCII spaces or tabs"
    )


def unknown_values(tokens: list[str]) -> list[float] | None:
    """The values of a line whose run time, size or submit time is unknown, else ``None``.

    Decided before any other check (NaN stands for a field that is not a number), so a
    line of a job that could never be simulated is skipped, not reported as malformed.

    Args:
        tokens: The line's whitespace-separated fields (comment removed).
    """
    if len(tokens) != N_FIELDS:
        return None
    values = []
    for token in tokens:
        value = parse_ascii_number(token)
        values.append(math.nan if value is None else value)
    # The scalar twin of unknown_masks (NaN compares false in both).
    if values[RUN] == -1 or (values[ALLOC] <= 0 and values[REQ] <= 0) or values[SUBMIT] == -1:
        return values
    return None


def unknown_masks(rows: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Rows to check further, and the rows of each unknown kind (first kind wins).

    Args:
        rows: ``(n, 18)`` field values.

    Returns:
        The mask of rows whose job is known, and one mask per ``UNKNOWN_KINDS`` entry.

    >>> rows = np.full((3, N_FIELDS), 1.0)
    >>> rows[0, RUN] = rows[0, SUBMIT] = -1; rows[1, SUBMIT] = -1
    >>> known, kinds = unknown_masks(rows)
    >>> known.tolist(), {k: v.tolist() for k, v in kinds.items()}  # doctest: +NORMALIZE_WHITESPACE
    ([False, False, True], {'unknown_run_time': [True, False, False],
     'unknown_size': [False, False, False], 'unknown_submit': [False, True, False]})
    """
    run = rows[:, RUN] == -1
    size = ~run & (rows[:, ALLOC] <= 0) & (rows[:, REQ] <= 0)
    submit = ~run & ~size & (rows[:, SUBMIT] == -1)
    kinds = {"unknown_run_time": run, "unknown_size": size, "unknown_submit": submit}
    return ~(run | size | submit), kinds


def check_line(
    tokens: list[str], first_line_of: dict[float, int]
) -> tuple[list[float], tuple[str, int | None, str] | None]:
    """Return the values of one job line and its first problem, if any.

    Args:
        tokens: The line's whitespace-separated fields (comment removed).
        first_line_of: Line number of each job id kept so far (for duplicate ids).

    Returns:
        The values (empty when there is a problem) and ``None`` or the problem as
        ``(MALFORMED_KINDS entry, 0-based field index or None, message)``.
    """
    for index, token in enumerate(tokens):
        odd = _odd_separator(token)
        if odd is not None:
            return [], ("non_numeric", index, odd)
    if len(tokens) != N_FIELDS:
        return [], ("field_count", None, f"expected {N_FIELDS} fields, got {len(tokens)}")
    values: list[float] = []
    for index, token in enumerate(tokens):
        value = parse_ascii_number(token)
        if value is None:
            if token.lstrip("+-").lower() in ("nan", "inf", "infinity"):
                return [], ("not_finite", index, f"{token!r} is not a finite number")
            message = (
                f"{token!r} is not an ASCII number (digits 0-9, an optional sign, point and "
                "exponent)"
            )
            return [], ("non_numeric", index, message)
        if not math.isfinite(value):
            return [], ("not_finite", index, f"{token!r} is not a finite number")
        values.append(value)
    for index in INT_COLUMNS:
        value = values[index]
        if not (abs(value) < MAX_EXACT_INT and value == math.floor(value)):
            return [], ("non_integer", index, f"{tokens[index]!r} is not an integer")
    if not TRACE_ID.contains(values[JOB_ID]):
        return [], (
            "bad_job_id",
            JOB_ID,
            f"job id {tokens[JOB_ID]} is not positive; valid: {TRACE_ID.describe()}",
        )
    for index in TIME_COLUMNS:
        if values[index] > MAX_SECONDS:
            message = (
                f"{tokens[index]} s is too large to keep second precision in float64; "
                f"valid: {TIME.describe()}"
            )
            return [], ("time_too_large", index, message)
    if values[SUBMIT] < 0:
        return [], ("negative_submit", SUBMIT, f"negative submit time {tokens[SUBMIT]}")
    run = values[RUN]
    if run < 0 and run != -1:
        message = f"negative run time {tokens[RUN]} (only -1, unknown, may be negative)"
        return [], ("negative_run_time", RUN, message)
    first = first_line_of.get(values[JOB_ID])
    if first is not None:
        message = f"duplicate job id {tokens[JOB_ID]} (first on line {first})"
        return [], ("duplicate_job_id", JOB_ID, message)
    return values, None


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
    >>> rows[:, RUN], rows[:, ALLOC] = 50.0, 4.0
    >>> rows[1, REQ], rows[1, REQ_TIME] = 8.0, 600.0
    >>> rows[2, REQ], rows[2, REQ_TIME] = np.nan, 0.0
    >>> [values.tolist() for values in request_and_estimate(rows)]
    [[4.0, 8.0, 4.0], [50.0, 600.0, 50.0]]
    """
    procs = np.where(rows[:, REQ] > 0, rows[:, REQ], rows[:, ALLOC])
    estimate = np.where(rows[:, REQ_TIME] > 0, rows[:, REQ_TIME], rows[:, RUN])
    return procs, estimate


def estimate_fallbacks(rows: np.ndarray) -> int:
    """Count the rows whose estimate falls back to the run time (field 9 not positive).

    :func:`request_and_estimate` tells such a job its own run time, a perfect estimate
    the trace never recorded; every reader counts them with this one definition.

    Args:
        rows: ``(n, 18)`` field values of the jobs kept.

    >>> rows = np.full((3, N_FIELDS), -1.0)
    >>> rows[1, REQ_TIME], rows[2, REQ_TIME] = 600.0, 0.0
    >>> estimate_fallbacks(rows)
    2
    """
    return int(np.count_nonzero(~(rows[:, REQ_TIME] > 0)))


def format_number(value: float) -> str:
    """Shortest exact text of a number: integers without a decimal point.

    >>> format_number(3.0), format_number(0.25), format_number(1e20)
    ('3', '0.25', '100000000000000000000')
    """
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)
