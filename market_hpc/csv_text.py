"""CSV text of a frame, column by column in Arrow: the bytes ``DataFrame.to_csv`` writes.

``pandas.DataFrame.to_csv(index=False)`` formats every cell in Python (numpy's ``str``
of each float, ``str`` of each int, the csv module per row). :func:`csv_bytes` gives
the same bytes from whole columns:

* an integer column is cast to text by Arrow (decimal digits, as ``str``);
* a float column: NaN is the empty string; an integral value below 10^16 (not -0.0) is
  its integer text and ``.0``, which is what numpy's ``str`` gives; any other value is
  formatted by numpy's ``astype(str)``, the very call pandas makes;
* a text column (pandas ``str`` or ``object`` holding strings and missing values) is
  written as is, missing values empty;
* the cells of a row are joined by ``,`` and each row ends with ``\\n``.

Anything else (other column types, text that the csv module would quote, a column name
that needs quoting) returns ``None`` and the caller writes with pandas: the output is
always ``to_csv``'s, only faster when it can be.
"""

from __future__ import annotations

from typing import IO, Any

import numpy as np
import pandas as pd

_SPECIAL = '[,"\r\n]'  # characters the csv module (QUOTE_MINIMAL) would quote a field for
_FAST_LIMIT = 1e16  # numpy (and repr) switch to exponent notation from here


def float_cells(values: np.ndarray) -> tuple[Any, str]:
    """``values`` (float64) as ``to_csv``'s text, in two parts: an Arrow string array and
    a suffix every cell ends with (``".0"`` when every value is an integral value below
    10^16, not -0.0: the array is then their integer text; else ``""``). The suffix is
    joined once with the line (:func:`line_parts`), not cell by cell.

    >>> text, suffix = float_cells(np.array([3.0, -7.0]))
    >>> text.to_pylist(), suffix
    (['3', '-7'], '.0')
    >>> text, suffix = float_cells(np.array([3.0, -0.0, np.nan, 0.5, 1e16, -7.0]))
    >>> text.to_pylist(), suffix
    (['3.0', '-0.0', '', '0.5', '1e+16', '-7.0'], '')
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        whole = (
            (np.abs(values) < _FAST_LIMIT)
            & (values == np.trunc(values))
            & ~((values == 0) & np.signbit(values))
        )
    integers = pc.cast(pa.array(np.where(whole, values, 0).astype(np.int64)), pa.string())
    other = ~whole
    if not other.any():
        return integers, ".0"
    text = pc.binary_join_element_wise(integers, ".0", "")
    missing = np.isnan(values[other])
    formatted = values[other].astype(str).astype(object)
    formatted[missing] = ""
    text = pc.replace_with_mask(text, pa.array(other), pa.array(formatted, type=pa.string()))
    return text, ""


def _column_text(column: pd.Series) -> Any:
    """One column's cells as an Arrow string array (a float column: ``float_cells``' pair),
    or ``None`` when pandas must write it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    dtype = column.dtype
    if dtype.kind == "f" and dtype == np.float64:
        return float_cells(column.to_numpy())
    if dtype.kind in "iu" and isinstance(dtype, np.dtype):
        return pc.cast(pa.array(column.to_numpy()), pa.string())
    if isinstance(dtype, pd.StringDtype) or dtype == object:
        if dtype == object and pd.api.types.infer_dtype(column, skipna=True) not in (
            "string",
            "empty",
        ):
            return None  # not all strings: let pandas format them
        try:
            if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
                text = pa.chunked_array(column.array._pa_array).cast(pa.string())
            else:
                text = pa.array(column.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, AttributeError):
            return None  # not all strings: let pandas format them
        if pc.any(pc.match_substring_regex(text, _SPECIAL)).as_py():
            return None
        return pc.fill_null(text, "")
    return None


def csv_parts(frame: pd.DataFrame, header: bool = True) -> list[Any] | None:
    """``frame.to_csv(index=False, header=header)`` as UTF-8 buffers to write one after
    the other, or ``None`` when a column is not one of the kinds handled here (write with
    pandas then)."""
    names = [str(name) for name in frame.columns]
    if (
        any(ch in name for name in names for ch in ',"\r\n')
        or frame.columns.has_duplicates
        or not names
    ):
        return None
    parts: list[Any] = [(",".join(names) + "\n").encode()] if header else []
    if not len(frame):
        return parts
    cells = []
    for index in range(frame.shape[1]):
        text = _column_text(frame.iloc[:, index])
        if text is None:
            return None
        cells.append(text)
    return parts + line_parts(cells)


def line_parts(cells: list[Any]) -> list[Any]:
    """CSV lines of equally long Arrow string columns (already CSV text: nothing quoted),
    cells joined by ``,``, each line ended by ``\\n``, as buffers to write one after the other.
    A column may be given as ``(array, suffix)`` (``float_cells``): each of its cells is
    the array's text followed by ``suffix``. The lines are one Arrow join of the columns
    and the separators (suffixes included) as scalars.

    >>> import pyarrow as pa
    >>> b"".join(line_parts([pa.array(["1", "2"]), pa.array(["a", ""])]))
    b'1,a\\n2,\\n'
    >>> b"".join(line_parts([(pa.array(["1", "2"]), ".0"), pa.array(["a", ""])]))
    b'1.0,a\\n2.0,\\n'
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    pieces: list[Any] = []
    last = len(cells) - 1
    for index, cell in enumerate(cells):
        text, suffix = cell if isinstance(cell, tuple) else (cell, "")
        pieces += (text, suffix + ("\n" if index == last else ","))
    lines = pc.binary_join_element_wise(*pieces, "")
    return [
        _string_data(chunk)
        for chunk in (lines.chunks if isinstance(lines, pa.ChunkedArray) else [lines])
    ]


def csv_bytes(frame: pd.DataFrame, header: bool = True) -> bytes:
    """``frame.to_csv(index=False, header=header)``, encoded as UTF-8.

    >>> frame = pd.DataFrame({"a": [1, 2], "b": [0.5, np.nan], "c": ["x", "y;z"]})
    >>> csv_bytes(frame) == frame.to_csv(index=False).encode()
    True
    """
    parts = csv_parts(frame, header)
    if parts is None:
        text: str = frame.to_csv(index=False, header=header)
        return text.encode()
    return b"".join(parts)


def _string_data(array: Any) -> memoryview:
    """The bytes of every string of an Arrow string array, back to back (no copy)."""
    import pyarrow as pa

    if not len(array):
        return memoryview(b"")
    if array.type != pa.string():
        array = array.cast(pa.string())
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[
        array.offset : array.offset + len(array) + 1
    ]
    return memoryview(array.buffers()[2])[int(offsets[0]) : int(offsets[-1])]


def write_csv(
    frame: pd.DataFrame, handle: IO[bytes], header: bool = True, slice_rows: int = 4096
) -> None:
    """Append ``frame.to_csv(index=False, header=header)`` to a binary file, formatting
    ``slice_rows`` rows at a time (the text of a slice is written and dropped)."""
    for begin in range(0, max(len(frame), 1), slice_rows):
        part = frame.iloc[begin : begin + slice_rows]
        parts = csv_parts(part, header and begin == 0)
        if parts is None:
            handle.write(part.to_csv(index=False, header=header and begin == 0).encode())
            continue
        handle.writelines(parts)
        del parts
    _release_arrow_memory()


def _release_arrow_memory() -> None:
    """Give the pages Arrow's allocator kept from the text of the slices back to the system."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
