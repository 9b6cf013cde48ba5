"""The one place numbers from outside are checked: finite, in range, named when refused.

Every time, size, factor and id that comes from a trace file, a scenario, a command-line
flag or the Python API (``Job``, ``HPCModel``) is checked against one of the ranges
below, once, where it enters; the simulation's hot path never checks again. A refused
number raises :class:`~market_hpc.errors.InvalidNumberError` naming the source (file
and line, key, flag or argument), what it got and what is valid.

Times are seconds in float64. They are kept below ``MAX_SECONDS = 2**50`` s (about 36
million years): there adjacent floats are 1/4 s apart, so a submit time plus any run
time still lands on the right second even after the clock has grown eightfold (a
submit time of 4e18 s, by contrast, is 512 s from its neighbours: a 40 s job would run
0 s).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from market_hpc.errors import InvalidNumberError

MAX_SECONDS = 2.0**50
MAX_SECONDS_TEXT = "2^50 (1.1e15 s)"
MAX_INT = 2**53 - 1  # integers a float64 holds exactly

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Range:
    """Valid values: finite numbers in ``[low, high]`` (bounds open when flagged), or
    integers in it when ``integer``.

    >>> FRACTION.contains(0.5), FRACTION.contains(math.nan), TIME.contains(4e18)
    (True, False, False)
    >>> POSITIVE_FACTOR.describe()
    'a finite number > 0'
    """

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a valid number of this range (bools are not numbers)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy scalars too
            return False
        try:
            number = float(value)
        except OverflowError:  # an int beyond float64
            return False
        if self.integer and not number.is_integer():
            return False
        above = self.low < number if self.low_open else self.low <= number
        below = number < self.high if self.high_open else number <= self.high
        return above and below and math.isfinite(number)

    def contains_all(self, values: np.ndarray) -> bool:
        """Vectorised :meth:`contains` over a float array (for whole trace columns)."""
        import numpy as np  # (the command line checks its flags without numpy)

        above = values > self.low if self.low_open else values >= self.low
        below = values < self.high if self.high_open else values <= self.high
        ok = above & below & np.isfinite(values)
        if self.integer:
            ok &= values == np.floor(values)
        return bool(ok.all())

    def describe(self) -> str:
        """What is valid, in words."""
        kind = "an integer" if self.integer else "a finite number"
        low = (
            f"{'>' if self.low_open else '>='} {_text(self.low)}" if math.isfinite(self.low) else ""
        )
        high = (
            f"{'<' if self.high_open else '<='} {_text(self.high)}"
            if math.isfinite(self.high)
            else ""
        )
        if low and high:
            if not self.low_open and not self.high_open:
                return f"{kind} in [{_text(self.low)}, {_text(self.high)}]"
            return f"{kind} {low} and {high}"
        return " ".join(part for part in (kind, low or high) if part)


def _text(bound: float) -> str:
    if bound == MAX_SECONDS:
        return MAX_SECONDS_TEXT
    if bound == MAX_INT:
        return "2^53 - 1"
    return f"{bound:g}"


TIME = Range(0.0, MAX_SECONDS)
"""Submit times, run times, estimates, time bounds, holding costs in seconds."""
POSITIVE_TIME = Range(0.0, MAX_SECONDS, low_open=True)
"""Periods and time units that must be positive."""
FRACTION = Range(0.0, 1.0)
"""Shares and probabilities."""
POSITIVE_FACTOR = Range(0.0, math.inf, low_open=True)
"""Multipliers such as the load factor (the times they produce are checked as ``TIME``)."""
NON_NEGATIVE = Range(0.0, math.inf)
"""Amounts such as burst-buffer gigabytes."""
COUNT = Range(1, MAX_INT, integer=True)
"""Counts that must be at least one: units, jobs, workers, first_n."""
NON_NEGATIVE_INT = Range(0, MAX_INT, integer=True)
"""Seeds, job ids of the Python API, resource amounts per unit."""
TRACE_ID = Range(1, MAX_INT, integer=True)
"""SWF job ids (field 1): positive."""


def check(value: Any, valid: Range, source: str) -> Any:
    """Return ``value`` when it is in ``valid``; else raise naming ``source``.

    >>> check(2.0, POSITIVE_FACTOR, "--load-factor")
    2.0
    >>> check(math.nan, POSITIVE_FACTOR, "--load-factor")
    Traceback (most recent call last):
    ...
    market_hpc.errors.InvalidNumberError: --load-factor: got nan; valid: a finite number > 0
    """
    if valid.contains(value):
        return value
    raise InvalidNumberError(source, value, valid.describe())


def parse_ascii_number(token: str) -> float | None:
    """The value of a finite ASCII decimal number (``12``, ``-1``, ``.5``, ``1e5``), else
    ``None``: no Unicode digits, underscores, hex, ``nan`` or ``inf``.

    ``float`` takes exactly these among ASCII strings without ``_`` (plus nan and
    infinities, refused here), so the check costs one ``isascii`` per token.

    >>> parse_ascii_number("1e3"), parse_ascii_number("1_0"), parse_ascii_number("\u0661\u0662")
    (1000.0, None, None)
    >>> parse_ascii_number("nan"), parse_ascii_number("0x10"), parse_ascii_number("-.5")
    (None, None, -0.5)
    """
    if not token.isascii() or "_" in token:
        return None
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def flag_number(text: str | float | None, valid: Range, flag: str, integer: bool = False) -> Any:
    """A command-line flag's value: an ASCII number checked against ``valid``, ``None``
    when the flag was not given (``text`` may be the flag's numeric default).

    >>> flag_number("4", COUNT, "--workers", integer=True)
    4
    >>> flag_number("nan", POSITIVE_FACTOR, "--load-factor")
    Traceback (most recent call last):
    ...
    market_hpc.errors.InvalidNumberError: --load-factor: got 'nan'; valid: a finite number > 0
    """
    if text is None:
        return None
    value = parse_ascii_number(text.strip()) if isinstance(text, str) else text
    if value is None or not valid.contains(value):
        raise InvalidNumberError(flag, text, valid.describe())
    return int(value) if integer else float(value)
