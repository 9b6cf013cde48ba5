"""Value curves: what a job is worth as a function of when it completes.

Singh, Dziurzanski & Indrusiak, HPCS 2015, Sec. III-B: a value curve is "usually a
monotonically-decreasing function and trends towards zero with the increasing completion
time"; Fig. 2(b): value 500 if the job completes within 15 time-units.

Decisions where the paper is silent:

* The argument is the *elapsed* time ``completion - arrival``.
* Every curve is non-increasing, flat at ``max_value`` for negative elapsed times, and 0
  for every elapsed time after its finite ``zero_time``.
* At a jump a curve takes its *left* limit: completing exactly at a ``StepCurve``
  deadline still earns the full value ("within 15 time-units"). So ``value_at(zero_time)``
  is 0 for continuous curves but positive where the curve jumps to 0 (``StepCurve``, a
  truncated ``ExponentialCurve``).
* ``remaining_value(e)`` is the exact area under the curve from ``e`` to ``zero_time``
  (the minVR criterion, Sec. V). Invalid parameters raise ``ConfigError``.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, TypeAlias

import numpy as np

from market_hpc.errors import ConfigError, UnknownNameError


def _check_finite(owner: Any, name: str, *, positive: bool = False) -> None:
    """Coerce field ``name`` of a frozen curve to float; check it is finite and >= 0."""
    value = getattr(owner, name)
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not 0 <= number < math.inf or (positive and number == 0):
        valid = "a finite number > 0" if positive else "a finite number >= 0"
        raise ConfigError(f"{type(owner).__name__}: {name} must be {valid}, got {value!r}")
    object.__setattr__(owner, name, number)


class _Curve:
    """Shared behaviour; each subclass is a frozen dataclass with a ``kind``."""

    __slots__ = ()
    kind: ClassVar[str]

    def value_at(self, elapsed: float) -> float:
        """Return the value of completing ``elapsed`` time-units after arrival."""
        raise NotImplementedError

    def values(self, elapsed: np.ndarray) -> np.ndarray:
        """Return ``value_at`` of every element of ``elapsed`` (vectorised)."""
        raise NotImplementedError

    def remaining_value(self, elapsed: float) -> float:
        """Return the area under the curve from ``elapsed`` to ``zero_time``."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form (``kind`` plus fields); ``curve_from_dict`` inverts it."""
        data: dict[str, Any] = {"kind": self.kind}
        for item in fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            data[item.name] = [list(p) for p in value] if isinstance(value, tuple) else value
        return data


@dataclass(frozen=True, slots=True)
class StepCurve(_Curve):
    """Full value until a deadline, nothing after (Fig. 2: 500 within 15 time-units).

    Args:
        max_value: Value earned when completing at or before ``deadline`` (> 0).
        deadline: Last elapsed time that still earns ``max_value`` (>= 0).

    >>> curve = StepCurve(500.0, 15.0)
    >>> curve.value_at(15.0), curve.value_at(15.5), curve.zero_time
    (500.0, 0.0, 15.0)
    >>> curve.remaining_value(5.0)
    5000.0
    """

    kind: ClassVar[str] = "step"
    max_value: float
    deadline: float

    def __post_init__(self) -> None:
        _check_finite(self, "max_value", positive=True)
        _check_finite(self, "deadline")

    @property
    def zero_time(self) -> float:
        """Elapsed time after which the value is 0 (the deadline)."""
        return float(self.deadline)

    def value_at(self, elapsed: float) -> float:
        return float(self.max_value) if elapsed <= self.deadline else 0.0

    def values(self, elapsed: np.ndarray) -> np.ndarray:
        elapsed = np.asarray(elapsed, dtype=float)
        return np.where(elapsed <= self.deadline, float(self.max_value), 0.0)

    def remaining_value(self, elapsed: float) -> float:
        return float(self.max_value) * max(self.deadline - elapsed, 0.0)


@dataclass(frozen=True, slots=True)
class LinearDecayCurve(_Curve):
    """Flat at ``max_value`` until ``plateau_end``, then linear down to 0 at ``zero_time``.

    The default curve, with ``plateau_end = alpha * RT(c*)`` and
    ``zero_time = plateau_end + beta * RT(1)`` (see ``workload.taskgraph_jobs``).

    Args:
        max_value: Value of completing by ``plateau_end`` (> 0).
        plateau_end: End of the flat part (>= 0).
        zero_time: Elapsed time at which the value reaches 0 (> ``plateau_end``).

    >>> curve = LinearDecayCurve(500.0, 15.0, 35.0)
    >>> curve.value_at(15.0), curve.value_at(25.0), curve.value_at(35.0)
    (500.0, 250.0, 0.0)
    >>> curve.remaining_value(0.0)  # 500 * 15 + 500 * 20 / 2
    12500.0
    >>> curve.remaining_value(25.0)  # 250 * 10 / 2
    1250.0
    """

    kind: ClassVar[str] = "linear_decay"
    max_value: float
    plateau_end: float
    zero_time: float

    def __post_init__(self) -> None:
        _check_finite(self, "max_value", positive=True)
        _check_finite(self, "plateau_end")
        _check_finite(self, "zero_time")
        if self.zero_time <= self.plateau_end:
            raise ConfigError(
                f"LinearDecayCurve: zero_time must be > plateau_end={self.plateau_end!r}, "
                f"got {self.zero_time!r} (use StepCurve for a vertical drop)"
            )

    def value_at(self, elapsed: float) -> float:
        if elapsed <= self.plateau_end:
            return float(self.max_value)
        if elapsed >= self.zero_time:
            return 0.0
        # The fraction is <= 1 by construction; multiplying last keeps the value <= max.
        return self.max_value * ((self.zero_time - elapsed) / (self.zero_time - self.plateau_end))

    def values(self, elapsed: np.ndarray) -> np.ndarray:
        elapsed = np.asarray(elapsed, dtype=float)
        clipped = np.clip(elapsed, self.plateau_end, self.zero_time)
        ramp = self.max_value * ((self.zero_time - clipped) / (self.zero_time - self.plateau_end))
        return np.where(elapsed <= self.plateau_end, self.max_value, ramp)

    def remaining_value(self, elapsed: float) -> float:
        if elapsed >= self.zero_time:
            return 0.0
        if elapsed <= self.plateau_end:
            flat = self.max_value * (self.plateau_end - elapsed)
            return flat + self.max_value * (self.zero_time - self.plateau_end) / 2.0
        return self.value_at(elapsed) * (self.zero_time - elapsed) / 2.0


@dataclass(frozen=True, slots=True)
class PiecewiseLinearCurve(_Curve):
    """Linear interpolation through ``(elapsed, value)`` points.

    Points must have non-decreasing times and non-increasing values, and the last value
    must be 0. Two points may share a time (a vertical drop; the curve takes the first,
    left-limit value there). Before the first point the curve is flat at its value.

    Args:
        points: At least two ``(elapsed, value)`` pairs; the first value is ``max_value``.

    >>> curve = PiecewiseLinearCurve(((0, 500), (15, 500), (25, 100), (35, 0)))
    >>> curve.value_at(20.0), curve.zero_time, curve.remaining_value(25.0)
    (300.0, 35.0, 500.0)
    >>> PiecewiseLinearCurve(((0, 500), (10, 600), (20, 0)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: PiecewiseLinearCurve: point 1 (10.0, 600.0) raises the value...
    """

    kind: ClassVar[str] = "piecewise_linear"
    points: tuple[tuple[float, float], ...]

    def __post_init__(self) -> None:
        try:
            points = tuple((float(t), float(v)) for t, v in self.points)
        except (TypeError, ValueError) as exc:
            got = f"points must be (elapsed, value) pairs, got {self.points!r}"
            raise ConfigError(f"PiecewiseLinearCurve: {got}") from exc
        if len(points) < 2:
            raise ConfigError(f"PiecewiseLinearCurve: need at least 2 points, got {len(points)}")
        for index, (time, value) in enumerate(points):
            prev_time, prev_value = points[index - 1] if index else (0.0, math.inf)
            problem = (
                "must have finite elapsed >= 0 and value >= 0"
                if not (0 <= time < math.inf and 0 <= value < math.inf)
                else f"goes back in time from {prev_time}; elapsed times must be non-decreasing"
                if time < prev_time
                else f"raises the value above {prev_value}; values must be non-increasing"
                if value > prev_value
                else "must have value > 0 (it is the maximum value)"
                if index == 0 and value == 0
                else "must have value 0 so the curve has a zero time"
                if index == len(points) - 1 and value != 0
                else ""
            )
            if problem:
                raise ConfigError(f"PiecewiseLinearCurve: point {index} {(time, value)} {problem}")
        object.__setattr__(self, "points", points)

    @property
    def max_value(self) -> float:
        """Value of the first point."""
        return self.points[0][1]

    @property
    def zero_time(self) -> float:
        """Elapsed time after which the value is 0 (time of the first zero-valued point)."""
        return next(time for time, value in self.points if value == 0)

    def value_at(self, elapsed: float) -> float:
        points = self.points
        index = bisect_left(points, (elapsed, -math.inf))  # first point at or after elapsed
        if index == 0:
            return points[0][1]
        if index == len(points):
            return 0.0
        (t0, v0), (t1, v1) = points[index - 1], points[index]
        if elapsed == t1:
            return v1
        return v0 + (v1 - v0) * (elapsed - t0) / (t1 - t0)

    def values(self, elapsed: np.ndarray) -> np.ndarray:
        elapsed = np.asarray(elapsed, dtype=float)
        times, vals = np.array(self.points).T
        index = np.searchsorted(times, elapsed, side="left")
        prev = np.maximum(index - 1, 0)
        nxt = np.minimum(index, len(times) - 1)
        t0, v0, t1, v1 = times[prev], vals[prev], times[nxt], vals[nxt]
        with np.errstate(invalid="ignore", divide="ignore"):
            inner = v0 + (v1 - v0) * (elapsed - t0) / (t1 - t0)
        out = np.where(elapsed == t1, v1, inner)
        out = np.where(index == 0, vals[0], out)
        return np.where(index == len(times), 0.0, out)

    def remaining_value(self, elapsed: float) -> float:
        first_time, first_value = self.points[0]
        area = first_value * max(first_time - elapsed, 0.0)
        for (t0, v0), (t1, v1) in zip(self.points, self.points[1:]):
            if t1 <= elapsed or t1 == t0:
                continue
            start = max(t0, elapsed)
            start_value = v0 + (v1 - v0) * (start - t0) / (t1 - t0)
            area += (start_value + v1) * (t1 - start) / 2.0
        return area


@dataclass(frozen=True, slots=True)
class ExponentialCurve(_Curve):
    """Flat until ``plateau_end``, then ``max_value * exp(-(e - plateau_end) / tau)``.

    A strictly decreasing tail for sensitivity studies (not the default), cut to 0 once it falls
    below ``floor * max_value`` or after ``horizon``, whichever is first.

    Args:
        max_value: Value of completing by ``plateau_end`` (> 0).
        plateau_end: End of the flat part (>= 0).
        tau: Decay time constant (> 0).
        floor: Fraction of ``max_value`` below which the value is 0, in [0, 1).
        horizon: Elapsed time after which the value is 0 (> ``plateau_end``), or
            ``None``; at least one of ``floor > 0`` and ``horizon`` is required.

    >>> curve = ExponentialCurve(500.0, 15.0, tau=10.0, floor=0.01)
    >>> round(curve.value_at(25.0), 3), round(curve.zero_time, 3)
    (183.94, 61.052)
    >>> round(curve.remaining_value(15.0), 6)  # 500 * 10 * (1 - 0.01)
    4950.0
    """

    kind: ClassVar[str] = "exponential"
    max_value: float
    plateau_end: float
    tau: float
    floor: float = 0.01
    horizon: float | None = None

    def __post_init__(self) -> None:
        _check_finite(self, "max_value", positive=True)
        _check_finite(self, "plateau_end")
        _check_finite(self, "tau", positive=True)
        _check_finite(self, "floor")
        if not self.floor < 1.0:
            raise ConfigError(f"ExponentialCurve: floor must be in [0, 1), got {self.floor!r}")
        if self.horizon is None and self.floor == 0.0:
            raise ConfigError("ExponentialCurve: floor=0 needs a horizon, else it never reaches 0")
        if self.horizon is not None:
            _check_finite(self, "horizon")
            if self.horizon <= self.plateau_end:
                raise ConfigError(
                    f"ExponentialCurve: horizon must be > plateau_end={self.plateau_end!r}, "
                    f"got {self.horizon!r}"
                )

    @property
    def zero_time(self) -> float:
        """Elapsed time after which the value is 0 (floor crossing or horizon)."""
        cut = math.inf if self.floor == 0.0 else self.plateau_end + self.tau * -math.log(self.floor)
        return cut if self.horizon is None else min(cut, float(self.horizon))

    def value_at(self, elapsed: float) -> float:
        if elapsed <= self.plateau_end:
            return float(self.max_value)
        if elapsed > self.zero_time:
            return 0.0
        return self.max_value * math.exp(-(elapsed - self.plateau_end) / self.tau)

    def values(self, elapsed: np.ndarray) -> np.ndarray:
        elapsed = np.asarray(elapsed, dtype=float)
        decay = np.exp(-np.maximum(elapsed - self.plateau_end, 0.0) / self.tau)
        return np.where(elapsed > self.zero_time, 0.0, self.max_value * decay)

    def remaining_value(self, elapsed: float) -> float:
        end = self.zero_time
        if elapsed >= end:
            return 0.0
        flat = self.max_value * max(self.plateau_end - elapsed, 0.0)
        start = max(elapsed, self.plateau_end)
        tail = math.exp(-(start - self.plateau_end) / self.tau)
        tail -= math.exp(-(end - self.plateau_end) / self.tau)
        return flat + self.max_value * self.tau * tail


ValueCurve: TypeAlias = StepCurve | LinearDecayCurve | PiecewiseLinearCurve | ExponentialCurve

CURVE_KINDS: Mapping[str, type[ValueCurve]] = {
    cls.kind: cls for cls in (StepCurve, LinearDecayCurve, PiecewiseLinearCurve, ExponentialCurve)
}


def curve_from_dict(data: Mapping[str, Any]) -> ValueCurve:
    """Build a curve from its ``to_dict`` form.

    Args:
        data: A mapping with a ``kind`` key and the curve's parameters.

    Raises:
        ConfigError: on a missing or unknown ``kind`` (listing the valid kinds), a missing
            or unexpected parameter, or an invalid value.

    >>> curve_from_dict({"kind": "step", "max_value": 500, "deadline": 15})
    StepCurve(max_value=500.0, deadline=15.0)
    >>> curve_from_dict({"kind": "sigmoid"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    market_hpc.errors.UnknownNameError: unknown value curve kind 'sigmoid'; valid choices: ...
    """
    if not isinstance(data, Mapping) or "kind" not in data:
        raise ConfigError(
            f"value curve needs a 'kind' key (one of {', '.join(sorted(CURVE_KINDS))}), "
            f"got {data!r}"
        )
    kind = data["kind"]
    if kind not in CURVE_KINDS:
        raise UnknownNameError("value curve kind", str(kind), CURVE_KINDS)
    cls = CURVE_KINDS[kind]
    params = {key: value for key, value in data.items() if key != "kind"}
    names = [item.name for item in fields(cls)]
    for key in sorted(set(params) - set(names)):
        valid = ", ".join(names)
        raise ConfigError(f"value curve {kind!r}: unexpected key {key!r}; valid: {valid}")
    for item in fields(cls):
        if item.default is MISSING and item.name not in params:
            raise ConfigError(f"value curve {kind!r}: missing key {item.name!r}")
    return cls(**params)


def value_density(value: float, cores: int) -> float:
    """Value per used core, the maxVD criterion (Locke 1986; paper Sec. V).

    Raises:
        ValueError: if ``cores < 1``.

    >>> value_density(500.0, 4)
    125.0
    """
    if cores < 1:
        raise ValueError(f"value_density: cores must be >= 1, got {cores}")
    return value / cores
