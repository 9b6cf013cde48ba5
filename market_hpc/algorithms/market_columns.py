"""Queued market jobs as numpy columns, so an auction prices the whole queue at once.

Every market decision (seed 002, Algorithm 2) needs, for every queued job, its value when
it completes on ``c*`` cores started now (to drop worthless jobs and to rank them), its
remaining value (minVR) and its value on the winning bid's cores. Priced one job at a
time in Python that is O(queue) interpreted work per decision. :class:`MarketColumns`
keeps what those prices depend on in columns, in queue order, updated only when a job
arrives or leaves the queue (a held job's progress only changes while it is out of the
queue), and evaluates them with elementwise numpy arithmetic.

Exactness: every column is evaluated with the same IEEE operations, in the same order, as
the scalar code (``LinearDecayCurve.value_at``, ``remaining_value``,
``algorithms.market.remaining_time``): numpy's elementwise ``+ - * /``, ``ceil`` and
comparisons on float64 give the same bits as Python's, so decisions are identical. Step
curves are linear curves whose ramp has zero width (the same formulas give their value
and area exactly); curves of other kinds (piecewise linear, exponential) are priced by
their own scalar methods, row by row. Pure data; no Mesa.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from market_hpc.algorithms.market import c_star, remaining_time
from market_hpc.algorithms.valuecurve import LinearDecayCurve, StepCurve
from market_hpc.domain.job import Job

_COLUMNS = ("job_id", "arrival", "best", "fastest", "progress", "holds", "vmax", "plateau", "zero", "offset",
            "alive", "scalar")


def _empty(dtype: Any = np.float64) -> np.ndarray:
    return np.zeros(64, dtype=dtype)


class MarketColumns:
    """Value-curve parameters, profiles and progress of queued jobs, in queue order.

    Rows are appended on :meth:`push` and marked dead on :meth:`take`; the columns are
    compacted once dead rows outnumber live ones. :meth:`live` returns the live rows in
    queue order; the pricing methods take such row indices.

    >>> columns = MarketColumns()
    >>> columns.push(Job(1, 0.0, 10.0, 10.0, units=2, profile=(20.0, 10.0),
    ...                  payload={"value_curve": LinearDecayCurve(100.0, 10.0, 30.0)}), 0.0, 0)
    >>> rows = columns.live()
    >>> columns.fastest[rows].tolist(), columns.values(rows, np.array([20.0])).tolist()
    ([10.0], [50.0])
    >>> columns.remaining_values(rows, np.array([0.0])).tolist()   # 100 * 10 + 100 * 20 / 2
    [2000.0]
    >>> columns.values_on(rows, 0.0, np.array([1])).tolist()   # done at 20 on one core
    [50.0]
    """

    def __init__(self, jobs: Iterable[tuple[Job, float, int]] = ()) -> None:
        self._size = 0
        self._dead = 0
        self._scalar = 0  # live rows priced by their curve's own methods
        self.jobs: list[Job | None] = []
        self.curves: list[Any] = []
        self.position: dict[int, int] = {}
        self._profiles = np.empty(256, dtype=np.float64)
        self._profiles_end = 0
        self.invalid: dict[int, str] = {}  # job id -> what it lacks (raised by the policy)
        self.job_id, self.arrival, self.best, self.fastest = _empty(np.int64), _empty(), _empty(np.int64), _empty()
        self.progress, self.holds, self.vmax, self.plateau = _empty(), _empty(np.int64), _empty(), _empty()
        self.zero, self.offset, self.alive, self.scalar = _empty(), _empty(np.int64), _empty(np.bool_), _empty(np.bool_)
        for job, progress, holds in jobs:
            self.push(job, progress, holds)

    def __len__(self) -> int:
        return self._size - self._dead

    @property
    def profiles(self) -> np.ndarray:
        """All rows' response-time profiles, concatenated (row ``r`` starts at ``offset[r]``)."""
        return self._profiles

    def push(self, job: Job, progress: float, holds: int) -> None:
        """Append a queued job (its progress and hold count as it enters the queue)."""
        curve = job.payload.get("value_curve")
        profile = job.profile
        if curve is None or profile is None:
            self.invalid[job.job_id] = "no value curve" if curve is None else "no profile"
            return
        row = self._size
        if row == len(self.alive):
            self._grow(2 * row)
        best = job.payload.get("c_star") or c_star(profile)
        start = self._profiles_end
        if start + len(profile) > len(self._profiles):
            grown = np.empty(2 * (start + len(profile)), dtype=np.float64)
            grown[:start] = self._profiles[:start]
            self._profiles = grown
        self._profiles[start:start + len(profile)] = profile
        self._profiles_end = start + len(profile)
        scalar = type(curve) not in (LinearDecayCurve, StepCurve)
        plateau = curve.deadline if type(curve) is StepCurve else getattr(curve, "plateau_end", 0.0)
        self.job_id[row], self.arrival[row], self.best[row] = job.job_id, job.submit, best
        self.fastest[row] = remaining_time(profile, best, progress)
        self.progress[row], self.holds[row], self.vmax[row] = progress, holds, curve.max_value
        self.plateau[row], self.zero[row], self.offset[row] = plateau, curve.zero_time, start
        self.alive[row], self.scalar[row] = True, scalar
        self._scalar += scalar
        self.jobs.append(job)
        self.curves.append(curve)
        self.position[job.job_id] = row
        self._size = row + 1

    def take(self, job_id: int) -> None:
        """Remove a queued job (started, dropped)."""
        if self.invalid.pop(job_id, None) is not None:
            return
        row = self.position.pop(job_id)
        self.alive[row] = False
        self._scalar -= bool(self.scalar[row])
        self.jobs[row] = None
        self.curves[row] = None
        self._dead += 1
        if self._dead > 256 and self._dead * 2 > self._size:
            self._compact()

    def live(self) -> np.ndarray:
        """Indices of the live rows, in queue order."""
        if not self._dead:
            return np.arange(self._size)
        return np.flatnonzero(self.alive[:self._size])

    def values(self, rows: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
        """``curve.value_at(elapsed)`` of each row (``LinearDecayCurve.value_at``'s operations)."""
        vmax, plateau, zero = self.vmax[rows], self.plateau[rows], self.zero[rows]
        with np.errstate(divide="ignore", invalid="ignore"):  # step rows: zero-width ramp, unused
            ramp = vmax * ((zero - elapsed) / (zero - plateau))
        out = np.where(elapsed <= plateau, vmax, np.where(elapsed >= zero, 0.0, ramp))
        if self._scalar:
            self._scalar_rows(rows, elapsed, out, "value_at")
        return out

    def remaining_values(self, rows: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
        """``curve.remaining_value(elapsed)`` of each row (the minVR key)."""
        vmax, plateau, zero = self.vmax[rows], self.plateau[rows], self.zero[rows]
        flat = vmax * (plateau - elapsed) + vmax * (zero - plateau) / 2.0
        ramp = self.values(rows, elapsed) * (zero - elapsed) / 2.0
        out = np.where(elapsed >= zero, 0.0, np.where(elapsed <= plateau, flat, ramp))
        if self._scalar:
            self._scalar_rows(rows, elapsed, out, "remaining_value")
        return out

    def values_on(self, rows: np.ndarray, now: float, cores: np.ndarray) -> np.ndarray:
        """Value of each row started at ``now`` on ``cores`` cores (``market.profit``)."""
        full = self._profiles[self.offset[rows] + cores - 1]
        progress = self.progress[rows]
        resumed = np.ceil((1.0 - progress) * full - 1e-9)
        left = np.where(progress == 0.0, full, resumed)
        return self.values(rows, (now + left) - self.arrival[rows])

    def _scalar_rows(self, rows: np.ndarray, elapsed: np.ndarray, out: np.ndarray, method: str) -> None:
        curves = self.curves
        for index in np.flatnonzero(self.scalar[rows]).tolist():
            out[index] = getattr(curves[rows[index]], method)(float(elapsed[index]))

    def _grow(self, size: int) -> None:
        for name in _COLUMNS:
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[:len(old)] = old
            setattr(self, name, new)

    def _compact(self) -> None:
        keep = self.live()
        lengths = [len(job.profile) for job in (self.jobs[r] for r in keep.tolist())]  # type: ignore[union-attr, arg-type]
        starts = self.offset[keep]
        pieces = [self._profiles[s:s + n] for s, n in zip(starts.tolist(), lengths)]
        profiles = np.concatenate(pieces) if pieces else np.empty(0)
        self._profiles = np.empty(max(256, 2 * len(profiles)), dtype=np.float64)
        self._profiles[:len(profiles)] = profiles
        self._profiles_end = len(profiles)
        offsets = np.zeros(len(keep), dtype=np.int64)
        if lengths:
            offsets[1:] = np.cumsum(lengths[:-1])
        for name in _COLUMNS:
            column = getattr(self, name)
            kept = column[keep]
            column[:] = 0
            column[:len(kept)] = kept
        self.offset[:len(keep)] = offsets
        self.jobs = [self.jobs[r] for r in keep.tolist()]
        self.curves = [self.curves[r] for r in keep.tolist()]
        self.position = {job.job_id: row for row, job in enumerate(self.jobs)}  # type: ignore[union-attr]
        self._size, self._dead = len(keep), 0
