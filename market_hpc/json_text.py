"""Strict JSON text for every file the package writes.

``json.dumps`` writes ``NaN`` and ``Infinity`` by default, which strict parsers refuse.
Here non-finite floats become ``null`` and numpy scalars plain numbers, and the text is
produced with ``allow_nan=False`` so nothing non-standard can slip through.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any


def finite_or_none(value: Any) -> Any:
    """``value`` with every non-finite float (also in lists, tuples, dicts) as ``None``,
    numpy scalars and arrays as Python numbers and lists.

    >>> finite_or_none({"a": float("nan"), "b": [1.5, float("inf")]})
    {'a': None, 'b': [1.5, None]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(item) for item in value]
    if type(value).__module__ == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            return finite_or_none(value.tolist())
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            return finite_or_none(float(value))
    return value


def json_text(
    value: Any, indent: int | None = 2, default: Callable[[Any], Any] | None = None, **options: Any
) -> str:
    """Strict JSON for ``value`` (non-finite floats as ``null``), ending in a newline.

    Args:
        value: Plain data (dicts, lists, numbers, strings; numpy scalars accepted).
        indent: As ``json.dumps``.
        default: As ``json.dumps`` (for other types); its result is made finite too.
        options: Other ``json.dumps`` keywords (``sort_keys``, ``separators``).

    >>> json_text({"x": float("nan")}, indent=None)
    '{"x": null}\\n'
    """

    def fallback(item: Any) -> Any:
        if default is None:
            raise TypeError(f"not JSON serialisable: {type(item).__name__}")
        return finite_or_none(default(item))

    return (
        json.dumps(
            finite_or_none(value), indent=indent, default=fallback, allow_nan=False, **options
        )
        + "\n"
    )
