"""Read one CSV file of a run folder into typed columns, naming the line and column of
the first value that is not of its column's type, and cross-check its Parquet twin.

Decisions:
    * The CSV file is read, its Parquet twin only compared with it: a reviewer opens
      ``jobs.csv``, so a hand-edited CSV is what is audited.
    * Columns are read as bytes and converted one by one (Arrow, vectorised); only when a
      conversion fails is the first failing row searched (by halving), so a clean file
      pays nothing for the error messages.
    * ``int`` columns also take integral numbers written as floats (``4.0``), which some
      writers give an integer column holding a missing value.
    * Line numbers count the file's lines (the header is line 1; blank lines, which are
      skipped, are counted too).
    * Numbers of the two files agree within a relative ``TWIN_TOLERANCE`` (NaN equals NaN);
      texts exactly, a missing text reading as empty. Columns the audit does not know are
      compared by name only.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from market_hpc.errors import ConfigError

TWIN_TOLERANCE = 1e-12
HEADER_BYTES = 1 << 20
KINDS = ("int", "float", "text")
_VALID = {
    "int": "a whole number",
    "float": "a number (NaN and inf allowed by the type)",
    "text": "UTF-8 text",
}


class AuditReadError(ConfigError):
    """A run folder the audit cannot read: a file missing or malformed, a value not of its
    column's type or outside its range (``market-hpc audit`` exits 2).

    Attributes:
        path: The file.
        line: Its line (CSV; ``None`` when the whole file is at fault).
        column: The column or key at fault (``None`` when none is).
    """

    def __init__(
        self, path: str | Path, message: str, line: int | None = None, column: str | None = None
    ) -> None:
        self.path, self.line, self.column = str(path), line, column
        where = "".join(
            [
                f": line {line}" if line is not None else "",
                f", column {column!r}" if column is not None and line is not None else "",
                f": column {column!r}" if column is not None and line is None else "",
            ]
        )
        super().__init__(f"{path}{where}: {message}")


@dataclass(frozen=True)
class CsvTable:
    """A CSV file's typed columns.

    Attributes:
        path: The file.
        names: The header's column names, in order.
        columns: Known columns: int64 / float64 numpy arrays, text as object arrays.
        rows: Data rows.
        texts: The text columns as Arrow string arrays.
    """

    path: Path
    names: tuple[str, ...]
    columns: dict[str, np.ndarray]
    rows: int
    texts: dict[str, Any] = field(default_factory=dict)

    def line(self, row: int) -> int:
        """The file line of data row ``row`` (0-based; read again, on error paths only)."""
        seen = -1
        with open(self.path, "rb") as handle:
            for number, text in enumerate(handle, start=1):
                if number == 1 or not text.strip(b"\r\n"):
                    continue
                seen += 1
                if seen == row:
                    return number
        return row + 2

    def fail(self, row: int, column: str, message: str) -> AuditReadError:
        """The error naming data row ``row``'s line and ``column``."""
        return AuditReadError(self.path, message, self.line(row), column)


def read_csv(path: Path, kinds: Mapping[str, str], required: tuple[str, ...]) -> CsvTable:
    """Read ``path``, converting the columns named in ``kinds`` (``int``/``float``/``text``).

    Raises:
        AuditReadError: no such file, an empty or non-UTF-8 header, a duplicated or missing
            required column, a row with the wrong number of fields, or a value not of its
            column's kind (naming line and column).
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    names = _header(path)
    missing = [name for name in required if name not in names]
    if missing:
        raise AuditReadError(
            path,
            f"line 1 (header) lacks column(s) {', '.join(missing)}; "
            f"valid: a header with at least {', '.join(required)}",
        )
    typed = _typed_read(path, names, kinds)
    if typed is not None:
        return typed
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=list(names), skip_rows=1),
            convert_options=pcsv.ConvertOptions(column_types={name: pa.binary() for name in names}),
        )
    except (pa.ArrowException, OSError, ValueError) as exc:
        bad = _ragged_line(path, len(names))
        if bad is not None:
            line, fields = bad
            column = names[min(fields, len(names) - 1)]
            raise AuditReadError(
                path,
                f"{fields} fields where the header has {len(names)}; valid: one value per column",
                line,
                column,
            ) from None
        raise AuditReadError(path, f"not readable as CSV: {_first_line(exc)}") from None
    rows = table.num_rows
    shell = CsvTable(path, names, {}, rows)
    converted = {
        name: _convert(shell, name, table.column(name).combine_chunks(), kind)
        for name, kind in kinds.items()
        if name in names
    }
    return _table(path, names, converted, rows)


def _table(path: Path, names: tuple[str, ...], converted: dict[str, Any], rows: int) -> CsvTable:
    """The table of converted columns (numbers as numpy, texts as Arrow arrays)."""
    texts = {
        name: values for name, values in converted.items() if not isinstance(values, np.ndarray)
    }
    columns = {
        name: np.asarray(texts[name].to_numpy(zero_copy_only=False), dtype=object)
        if name in texts
        else values
        for name, values in converted.items()
    }
    return CsvTable(path, names, columns, rows, texts)


def _ragged_line(path: Path, width: int) -> tuple[int, int] | None:
    """The first line (and its field count) without ``width`` fields (error paths only)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        reader = csv.reader(handle)
        next(reader, None)
        for fields in reader:
            if fields and len(fields) != width:
                return reader.line_num, len(fields)
    return None


def _typed_read(path: Path, names: tuple[str, ...], kinds: Mapping[str, str]) -> CsvTable | None:
    """The table read in one typed pass, or ``None`` when any value or row is off (then the
    bytes are read again and converted column by column, to name the first bad value)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    # (integers are parsed as floats: Arrow's integer parser takes hex, 0x10 = 16)
    arrow = {"int": pa.float64(), "float": pa.float64(), "text": pa.string()}
    types = {name: arrow[kinds[name]] if name in kinds else pa.binary() for name in names}
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=list(names), skip_rows=1),
            convert_options=pcsv.ConvertOptions(
                column_types=types, strings_can_be_null=False, null_values=["", "NaN", "nan"]
            ),
        )
    except (pa.ArrowException, OSError, ValueError):
        return None
    converted: dict[str, Any] = {}
    for name in kinds:
        if name not in names:
            continue
        column = table.column(name).combine_chunks()
        if kinds[name] == "text":
            converted[name] = column
            continue
        values = column.to_numpy(zero_copy_only=False)
        if kinds[name] == "int":
            if column.null_count or not _whole(values).all():
                return None
            values = values.astype(np.int64)
        converted[name] = values
    return _table(path, names, converted, table.num_rows)


def _header(path: Path) -> tuple[str, ...]:
    if not path.is_file():
        what = "not a regular file" if path.exists() else "no such file"
        raise AuditReadError(path, f"{what} (a run folder has it: market-hpc run/replay --out)")
    try:
        with open(path, "rb") as handle:
            first = handle.readline(HEADER_BYTES)
    except OSError as exc:
        raise AuditReadError(path, f"cannot read: {exc.strerror or exc}") from None
    if not first.strip(b"\r\n"):
        raise AuditReadError(path, "line 1: empty; valid: a header naming the columns")
    try:
        text = first.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise AuditReadError(path, "line 1 (header): not UTF-8 text") from None
    names = tuple(next(csv.reader([text]), []))
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise AuditReadError(path, f"line 1 (header): column {name!r} appears twice")
        seen.add(name)
    return names


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _first_failing(array: Any, convert: Callable[[Any], Any]) -> int:
    """The first row of ``array`` that ``convert`` rejects (``convert(array)`` failed)."""
    low, high = 0, len(array)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            convert(array.slice(low, middle - low))
            low = middle
        except (ValueError, TypeError, ArithmeticError, NotImplementedError):
            high = middle
    return low


def _convert(table: CsvTable, name: str, raw: Any, kind: str) -> Any:
    """One column's bytes as ``kind`` values (numbers: numpy; text: an Arrow array)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def utf8(array: Any) -> Any:
        return pc.cast(array, pa.string())

    try:
        text = utf8(raw)
    except (ValueError, TypeError):
        row = _first_failing(raw, utf8)
        raise table.fail(row, name, f"not UTF-8 text (got {raw[row].as_py()[:40]!r})") from None
    if kind == "text":
        return text
    trimmed = pc.utf8_trim_whitespace(text)  # as the typed read takes " 7"
    empty = pc.equal(trimmed, "")
    if kind == "int" and pc.any(empty).as_py():
        row = int(np.flatnonzero(empty.to_numpy(zero_copy_only=False))[0])
        raise table.fail(row, name, f"empty; valid: {_VALID['int']}")
    numbers = pc.if_else(empty, pa.scalar(None, pa.string()), trimmed)

    def as_float(array: Any) -> Any:
        return pc.cast(array, pa.float64())

    try:
        values = np.asarray(as_float(numbers).to_numpy(zero_copy_only=False), dtype=np.float64)
    except (ValueError, TypeError, ArithmeticError):
        row = _first_failing(numbers, as_float)
        shown = text[row].as_py()[:40]
        raise table.fail(row, name, f"got {shown!r}; valid: {_VALID[kind]}") from None
    if kind == "float":
        return values
    whole = _whole(values)
    if not whole.all():
        row = int(np.flatnonzero(~whole)[0])
        raise table.fail(row, name, f"got {text[row].as_py()[:40]!r}; valid: {_VALID['int']}")
    return values.astype(np.int64)


def _whole(values: np.ndarray) -> np.ndarray:
    """Which values are integers a float64 holds exactly."""
    with np.errstate(invalid="ignore"):
        whole: np.ndarray = (
            np.isfinite(values) & (values == np.round(values)) & (np.abs(values) < 2.0**53)
        )
        return whole


def twin_disagreement(table: CsvTable, parquet: Path, key: str) -> str | None:
    """How ``parquet`` disagrees with the CSV ``table`` (``None``: it agrees or is absent).

    Args:
        table: The CSV file, read.
        parquet: Its Parquet twin.
        key: The id column named with a disagreeing row (``job_id``).

    Raises:
        AuditReadError: ``parquet`` exists but cannot be read as Parquet.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not parquet.exists():
        return None
    if not parquet.is_file():
        raise AuditReadError(parquet, "not a file")
    try:
        twin = pq.read_table(parquet)
    except (pa.ArrowException, OSError, ValueError, TypeError, IndexError, KeyError) as exc:
        raise AuditReadError(parquet, f"not readable as Parquet: {_first_line(exc)}") from None
    csv_name, twin_name = table.path.name, parquet.name
    only_csv = sorted(set(table.names) - set(twin.column_names))
    only_twin = sorted(set(twin.column_names) - set(table.names))
    if only_csv or only_twin or len(set(twin.column_names)) != len(twin.column_names):
        return (
            f"{twin_name} disagrees with {csv_name}: columns only in {csv_name}: "
            f"{', '.join(only_csv) or 'none'}; only in {twin_name}: "
            f"{', '.join(only_twin) or 'none'}"
        )
    if twin.num_rows != table.rows:
        return f"{twin_name} has {twin.num_rows} rows, {csv_name} {table.rows}: they disagree"
    for name, values in table.columns.items():
        found = _column_disagreement(values, twin.column(name), table.texts.get(name))
        if found is None:
            continue
        row, csv_value, twin_value = found
        ident = f" (job {table.columns[key][row]})" if key in table.columns else ""
        return (
            f"{twin_name} disagrees with {csv_name} at line {table.line(row)}{ident}, column "
            f"{name!r}: {csv_value} in {csv_name}, {twin_value} in {twin_name}"
        )
    return None


def _column_disagreement(values: np.ndarray, column: Any, text: Any) -> tuple[int, str, str] | None:
    """The first row where a Parquet column differs from the CSV's values, with both."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if text is not None:
        try:
            twin = pc.fill_null(pc.cast(column, pa.string()), "").combine_chunks()
        except (pa.ArrowException, ValueError, TypeError):
            return 0, "text", f"values of type {column.type}"
        same = pc.equal(twin, text)
        if pc.all(same).as_py():
            return None
        row = int(np.flatnonzero(~same.to_numpy(zero_copy_only=False))[0])
        return row, repr(values[row]), repr(twin[row].as_py())
    try:
        twin_numbers = np.asarray(
            pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64
        )
    except (pa.ArrowException, ValueError, TypeError):
        return 0, "numbers", f"values of type {column.type}"
    mine = values.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = (mine == twin_numbers) | (
            np.abs(mine - twin_numbers) <= TWIN_TOLERANCE * np.abs(mine)
        )
    close |= np.isnan(mine) & np.isnan(twin_numbers)
    if close.all():
        return None
    row = int(np.flatnonzero(~close)[0])
    mine_text = f"{values[row]:g}" if values.dtype.kind == "f" else str(values[row])
    return row, mine_text, f"{twin_numbers[row]:g}"


def frame_columns(
    frame: Any, kinds: Mapping[str, str], required: tuple[str, ...], name: str
) -> dict[str, np.ndarray]:
    """A pandas frame's known columns typed as :func:`read_csv` types a file's.

    Raises:
        AuditReadError: a required column missing, or a value not of its column's kind.
    """
    import pandas as pd

    fail = frame_fail(name)
    missing = [column for column in required if column not in frame]
    if missing:
        raise AuditReadError(f"{name} frame", f"lacks column(s) {', '.join(missing)}")
    columns: dict[str, np.ndarray] = {}
    for column, kind in kinds.items():
        if column not in frame:
            continue
        series = frame[column]
        if kind == "text":
            columns[column] = series.astype(object).fillna("").astype(str).to_numpy(dtype=object)
            continue
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        if kind == "int":
            whole = _whole(values)
            if not whole.all():
                row = int(np.flatnonzero(~whole)[0])
                raise fail(row, column, f"got {series.iloc[row]!r}; valid: {_VALID['int']}")
            values = values.astype(np.int64)
        columns[column] = values
    return columns


def frame_fail(name: str) -> Callable[[int, str, str], AuditReadError]:
    """The error builder for rows of an in-memory frame (``jobs frame row 3: ...``)."""

    def fail(row: int, column: str, message: str) -> AuditReadError:
        return AuditReadError(f"{name} frame row {row}", message, None, column)

    return fail
