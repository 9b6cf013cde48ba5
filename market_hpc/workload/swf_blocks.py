"""The vectorised passes of the streaming SWF reader: the file in blocks of whole lines.

:class:`~market_hpc.workload.swf_stream.SwfStream` reads a trace twice. On a regular
file (every job line 18 numbers, no malformed line, no duplicate id, no partial-execution
status 2, 3 or 4, no bare CR; lines of
unknown run time, size or submit time are fine) both passes work on blocks of whole
lines, each parsed by ``read_swf``'s own vectorised pass (pandas' C reader,
:func:`~market_hpc.workload.swf.parse_fast`), so they cost what ``read_swf`` costs, not
one Python loop over 18 fields per line:

* :func:`scan_blocks` (pass 1) parses blocks of ``SCAN_BLOCK_BYTES`` and keeps what the
  stream needs: the header, line counts, the unknown lines (numbers, fields, kinds),
  each kept job's id and submit time (16 bytes per job) and the count of kept jobs whose
  estimate falls back to the run time. It returns ``None`` as soon as
  a block is not regular, or at the end when an id repeats across blocks: the caller
  then runs the line-by-line pass, which decides (and names the line) exactly as
  ``read_swf``'s slow pass does. A file that fits in one block keeps its parsed rows, so
  it is parsed once.
* :func:`block_jobs` (pass 2) parses blocks of ``JOB_BLOCK_BYTES`` again and builds
  each block's jobs with ``read_swf``'s builder
  (:func:`~market_hpc.workload.swf.jobs_in_row_order`), in file order.

Blocks end at ``\\n``, as the lines of both ``read_swf`` passes do, so a block boundary
never changes a line, a header line or a line number.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.workload.swf import data_line_numbers, header_lines, jobs_in_row_order, parse_fast
from market_hpc.workload.swf_format import (
    JOB_ID,
    N_FIELDS,
    SUBMIT,
    check_line_ends,
    estimate_fallbacks,
    text_start,
    unknown_masks,
)

SCAN_BLOCK_BYTES = 1 << 22
"""Text per block of pass 1 (4 MiB: ~45,000 archive lines, ~15 MB of parsed rows at once)."""
JOB_BLOCK_BYTES = 1 << 20
"""Text per block of pass 2 (1 MiB: ~11,000 jobs built at once)."""
_ROWS_PER_BATCH = 8192
_GZIP_MAGIC = b"\x1f\x8b"


def open_trace(source: str) -> IO[bytes]:
    """The trace as a byte stream, decompressed when it is gzip data, past a UTF-8
    byte-order mark (as ``read_swf``: :func:`~market_hpc.workload.swf_format.text_start`).

    Raises:
        ConfigError: The file is missing or unreadable.
        TraceFormatError: UTF-16 or UTF-32 text, or corrupt gzip data at the start.
    """
    try:
        handle = open(source, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise ConfigError(f"cannot read trace {source}: {exc.strerror or exc}") from None
    stream: IO[bytes] = handle
    if handle.read(2) == _GZIP_MAGIC:
        stream = gzip.GzipFile(fileobj=handle, mode="rb")  # type: ignore[assignment]
    handle.seek(0)
    try:
        skip = text_start(stream.read(4), source)
    except (OSError, EOFError, zlib.error) as exc:
        stream.close()
        raise TraceFormatError(source, None, f"corrupt gzip data: {exc}") from None
    except TraceFormatError:
        stream.close()
        raise
    stream.seek(skip)
    return stream


def read_blocks(source: str, size: int) -> Iterator[bytes]:
    """The trace's text in blocks of about ``size`` bytes, each ending at ``\\n`` (the last
    one may not).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile(delete=False) as f:
    ...     _ = f.write(b"ab\\ncd\\nefgh\\ni")
    >>> list(read_blocks(f.name, 4)); os.unlink(f.name)
    [b'ab\\n', b'cd\\n', b'efgh\\n', b'i']

    Raises:
        TraceFormatError: Corrupt gzip data.
    """
    handle = open_trace(source)
    line = 1  # of each block's first line: a bare CR is named by its line
    try:
        rest = b""
        while chunk := handle.read(size):
            chunk = rest + chunk if rest else chunk
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                rest = chunk
                continue
            rest = chunk[cut:]
            block = chunk[:cut] if rest else chunk
            check_line_ends(block, source, line)
            line += block.count(b"\n")
            yield block
        if rest:
            check_line_ends(rest, source, line)
            yield rest
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFormatError(source, None, f"corrupt gzip data: {exc}") from None
    finally:
        handle.close()


def _block_rows(block: bytes) -> np.ndarray | None:
    """The ``(n, 18)`` rows of a block's job lines; ``None`` when it is not regular."""
    rows = parse_fast(block)
    if rows is None and not data_line_numbers(block).size:
        return np.zeros((0, N_FIELDS))  # only header, comment or blank lines
    return rows


@dataclass
class BlockScan:
    """What pass 1 found in a regular file.

    Attributes:
        header: The ``;`` header lines.
        lines: Lines in the file.
        job_lines: Non-blank, non-comment lines.
        ids: Id of each kept job, in file order.
        submits: Submit time of each kept job, in file order.
        unknown_lines: 1-based numbers of the lines skipped for an unknown field.
        unknown_rows: Their ``(n, 18)`` fields.
        unknown_kinds: Their ``UNKNOWN_KINDS`` entries.
        rows: The kept jobs' rows when the file was one block (else ``None``).
        estimate_fallback_jobs: Kept jobs without a wall-time request
            (:func:`~market_hpc.workload.swf_format.estimate_fallbacks`).
    """

    header: tuple[str, ...]
    lines: int
    job_lines: int
    ids: np.ndarray
    submits: np.ndarray
    unknown_lines: np.ndarray
    unknown_rows: np.ndarray
    unknown_kinds: tuple[str, ...]
    rows: np.ndarray | None
    estimate_fallback_jobs: int = 0


def scan_blocks(source: str, block_bytes: int = SCAN_BLOCK_BYTES) -> BlockScan | None:
    """Pass 1 on a regular file; ``None`` when the line-by-line pass must decide.

    Raises:
        ConfigError: The file is missing or unreadable.
        TraceFormatError: Corrupt gzip data.
    """
    header: list[str] = []
    ids: list[np.ndarray] = []
    submits: list[np.ndarray] = []
    unknown_lines: list[np.ndarray] = []
    unknown_rows: list[np.ndarray] = []
    unknown_kinds: list[str] = []
    n_lines = job_lines = blocks = fallbacks = 0
    kept_rows: np.ndarray | None = None
    block = b""
    for block in read_blocks(source, block_bytes):
        rows = _block_rows(block)
        if rows is None:
            return None
        header.extend(header_lines(block))
        known, kinds = unknown_masks(rows)
        if not known.all():
            numbers = data_line_numbers(block) + n_lines
            unknown_lines.append(numbers[~known])
            unknown_rows.append(rows[~known])
            unknown_kinds.extend(_kinds(kinds, ~known))
            rows = rows[known]
        fallbacks += estimate_fallbacks(rows)
        ids.append(rows[:, JOB_ID].copy())
        submits.append(rows[:, SUBMIT].copy())
        kept_rows = rows
        n_lines += block.count(b"\n")
        job_lines += len(known)
        blocks += 1
    if block and not block.endswith(b"\n"):
        n_lines += 1
    all_ids = np.concatenate(ids) if ids else np.zeros(0)
    if np.unique(all_ids).size != all_ids.size:
        return None  # an id repeats across blocks: the line-by-line pass names the line
    return BlockScan(
        tuple(header),
        n_lines,
        job_lines,
        all_ids,
        np.concatenate(submits) if submits else np.zeros(0),
        np.concatenate(unknown_lines) if unknown_lines else np.zeros(0, dtype=np.int64),
        np.concatenate(unknown_rows) if unknown_rows else np.zeros((0, N_FIELDS)),
        tuple(unknown_kinds),
        kept_rows if blocks == 1 else None,
        fallbacks,
    )


def _kinds(kinds: dict[str, np.ndarray], rows: np.ndarray) -> list[str]:
    """The ``UNKNOWN_KINDS`` entry of each selected row, from ``unknown_masks``' masks."""
    kind_of = np.full(len(rows), "", dtype=object)
    for kind, mask in kinds.items():
        kind_of[mask] = kind
    return kind_of[rows].tolist()  # type: ignore[no-any-return]


def unknown_kinds(rows: np.ndarray) -> list[str]:
    """The ``UNKNOWN_KINDS`` entry of each row of unknown run time, size or submit time.

    >>> rows = np.full((2, N_FIELDS), 1.0)
    >>> rows[0, 3] = -1; rows[1, 1] = -1
    >>> unknown_kinds(rows)
    ['unknown_run_time', 'unknown_submit']
    """
    return _kinds(unknown_masks(rows)[1], np.ones(len(rows), dtype=bool))


def in_submit_order(ids: np.ndarray, submits: np.ndarray) -> bool:
    """Whether distinct ids come in ``(submit, job_id)`` order.

    >>> in_submit_order(np.array([2.0, 1.0, 3.0]), np.array([0.0, 1.0, 1.0]))
    True
    >>> in_submit_order(np.array([2.0, 1.0]), np.array([1.0, 1.0]))
    False
    """
    later = np.diff(submits)
    return bool(((later > 0) | ((later == 0) & (np.diff(ids) > 0))).all())


def row_jobs(rows: np.ndarray) -> Iterator[Job]:
    """The jobs of kept rows, in row order, built ``_ROWS_PER_BATCH`` at a time."""
    for start in range(0, len(rows), _ROWS_PER_BATCH):
        yield from jobs_in_row_order(rows[start : start + _ROWS_PER_BATCH])


def block_jobs(source: str, block_bytes: int = JOB_BLOCK_BYTES) -> Iterator[Job]:
    """Pass 2 on a file :func:`scan_blocks` accepted: the kept jobs in file order.

    Raises:
        TraceFormatError: The file changed since pass 1 (a block is no longer regular),
            or corrupt gzip data.
    """
    for block in read_blocks(source, block_bytes):
        rows = _block_rows(block)
        if rows is None:
            raise TraceFormatError(source, None, "file changed while it was read")
        yield from jobs_in_row_order(rows[unknown_masks(rows)[0]])
