"""Queued market jobs as numpy columns, so an auction prices the whole queue at once.

Every market decision (Singh et al., Algorithm 2) needs, for every queued job, its value when
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

import itertools
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from market_hpc.algorithms.market.holding import may_trigger
from market_hpc.algorithms.market.index import LIMIT, QueueIndex
from market_hpc.algorithms.market.maths import c_star, remaining_time
from market_hpc.algorithms.valuecurve import LinearDecayCurve, StepCurve
from market_hpc.domain.job import CORE_UNIT, Job

LONG = 1024  # queues at least this long keep profit bounds (``bounds``)
_FLOATS = ("arrival", "fastest", "progress", "vmax", "plateau", "zero", "span", "wake", "half")
_INTS = (
    "job_id",
    "best",
    "holds",
    "base",
    "order",
    "scalar",
    "step",
    "unbounded",
    "group",
    "spans",
)


def one_core_units(job: Job) -> bool:
    """Whether ``job`` asks for one-core units and no burst buffer: what the cores-only
    market auction serves (with ``spans_nodes`` only on a one-node platform; ``plain``).

    >>> (one_core_units(Job(1, 0.0, 1.0, 1.0)),
    ...  one_core_units(Job(2, 0.0, 1.0, 1.0, unit=(2, 0, 0, 0))))
    (True, False)
    """
    return not (job.unit != CORE_UNIT or job.bb > 0)


class MarketColumns:
    """Value-curve parameters, profiles and progress of queued jobs, as dense columns.

    Rows ``0..len-1`` are the queued jobs; a job that leaves is replaced by the last row
    (O(1)), so rows are not in queue order: the ``order`` column is (SJQ's order, the
    order drops and arrivals are reported in). Static per-row quantities are computed
    once, on :meth:`push`, with the scalar code's operations: ``fastest`` (the remaining
    time on ``c*`` cores), ``span`` (``zero - plateau``) and ``wake`` (``floor(arrival +
    zero - fastest)``, the last instant the job can still earn something, the paper's
    drop time minus one).

    >>> columns = MarketColumns()
    >>> columns.push(Job(1, 0.0, 10.0, 10.0, units=2, profile=(20.0, 10.0),
    ...                  payload={"value_curve": LinearDecayCurve(100.0, 10.0, 30.0)}), 0.0, 0)
    >>> columns.fastest[:1].tolist(), columns.values(np.array([20.0])).tolist()
    ([10.0], [50.0])
    >>> columns.remaining_values(np.array([0.0])).tolist()   # 100 * 10 + 100 * 20 / 2
    [2000.0]
    >>> columns.values_on(0.0, np.array([1])).tolist()   # one core: done at 20
    [50.0]
    """

    def __init__(self, jobs: Iterable[tuple[Job, float, int]] = ()) -> None:
        self.size = 0
        self._pushed = 0  # queue order of the next push
        self._scalar = 0  # rows priced by their curve's own methods
        self._resumed = 0  # rows with progress > 0
        self._steps = 0  # rows with a step curve (zero-width ramp)
        self._unbounded = 0  # rows the drop index cannot vouch for (``bounded``)
        self.index = QueueIndex()
        self._buffers = (np.empty(0), np.empty((2, 0), dtype=np.int64))
        self._best_counts = np.zeros(1, dtype=np.int64)  # rows per c*
        self._most: int | None = None  # the largest c* (None: not known)
        self._bounds: dict[
            int, np.ndarray
        ] = {}  # bucket k -> upper bound of every row's profit on <= 2**k cores
        self._views: tuple[np.ndarray, ...] | None = None
        self.jobs: list[Job] = []
        self.curves: list[Any] = []
        self.position: dict[int, int] = {}
        self._profiles = np.empty(256, dtype=np.float64)
        self._profiles_end = 0
        self._profiles_live = 0
        self.invalid: dict[int, str] = {}  # job id -> what it lacks (raised by the policy)
        # What the auction must place beyond cores of one node (``algorithms.market_offers``):
        # each row's unit vector (as an index into ``units``), burst buffer and whether it may
        # span nodes; sticky flags tell whether any row ever needed more than cores of one node.
        self.units: list[tuple[int, ...]] = []
        self._unit_group: dict[tuple[int, ...], int] = {}
        self._bb = np.zeros(64)
        self.heavy_seen = False  # a row with a unit beyond one core, or a burst-buffer request
        self.spans_seen = False  # a row that may span nodes
        self._floats = np.zeros((len(_FLOATS), 64))
        self._ints = np.zeros((len(_INTS), 64), dtype=np.int64)
        for job, progress, holds in jobs:
            self.push(job, progress, holds)

    def __len__(self) -> int:
        return self.size

    def _columns(self) -> tuple[np.ndarray, ...]:
        """Views of every column's live rows, kept until a row is added or removed."""
        views = self._views
        if views is None:
            size = self.size
            views = self._views = (*self._floats[:, :size], *self._ints[:, :size])
        return views

    # Live columns (views of the first ``size`` rows).
    arrival = property(lambda self: self._columns()[0])
    fastest = property(lambda self: self._columns()[1])
    progress = property(lambda self: self._columns()[2])
    vmax = property(lambda self: self._columns()[3])
    plateau = property(lambda self: self._columns()[4])
    zero = property(lambda self: self._columns()[5])
    span = property(lambda self: self._columns()[6])
    wake = property(lambda self: self._columns()[7])
    half = property(lambda self: self._columns()[8])  # vmax * span / 2: the ramp's area
    job_id = property(lambda self: self._columns()[9])
    best = property(lambda self: self._columns()[10])
    holds = property(lambda self: self._columns()[11])
    base = property(lambda self: self._columns()[12])  # RT on c cores is profiles[base + c]
    order = property(lambda self: self._columns()[13])
    group = property(lambda self: self._columns()[17])  # the row's unit vector is ``units[group]``
    spans = property(
        lambda self: self._columns()[18]
    )  # 1: the job may span nodes (``spans_nodes``)

    @property
    def bb(self) -> np.ndarray:
        """Each row's burst-buffer request (GB)."""
        return self._bb[: self.size]

    def plain(self, n_nodes: int) -> bool:
        """Whether every row pushed so far asked for cores of one node only (no other
        resource, no burst buffer, no spanning where there is more than one node): the
        auction's cores-only path then decides (``policies.market``)."""
        return not self.heavy_seen and (not self.spans_seen or n_nodes == 1)

    def push(self, job: Job, progress: float, holds: int) -> None:
        """Append a queued job (its progress and hold count as it enters the queue)."""
        curve = job.payload.get("value_curve")
        profile = job.profile
        if curve is None or profile is None:
            self.invalid[job.job_id] = "no value curve" if curve is None else "no profile"
            return
        row = self.size
        if row == self._floats.shape[1]:
            self._floats = np.concatenate([self._floats, np.zeros_like(self._floats)], axis=1)
            self._ints = np.concatenate([self._ints, np.zeros_like(self._ints)], axis=1)
        best = job.payload.get("c_star") or c_star(profile)
        first = self._store_profile(profile)
        scalar = type(curve) not in (LinearDecayCurve, StepCurve)
        plateau = curve.deadline if type(curve) is StepCurve else getattr(curve, "plateau_end", 0.0)
        zero = curve.zero_time
        fastest = remaining_time(profile, best, progress)
        span = zero - plateau
        wake = math.floor(job.submit + zero - fastest)
        self._floats[:, row] = (
            job.submit,
            fastest,
            progress,
            curve.max_value,
            plateau,
            zero,
            span,
            wake,
            curve.max_value * span / 2.0,
        )
        step = type(curve) is StepCurve
        unbounded = scalar or not (
            abs(job.submit) < LIMIT
            and abs(zero) < LIMIT
            and 0.0 <= fastest < LIMIT
            and 1e-100 < curve.max_value < LIMIT
        )
        unit = job.unit
        group = self._unit_group.get(unit)
        if group is None:
            group = self._unit_group[unit] = len(self.units)
            self.units.append(unit)
        spans = bool(job.payload.get("spans_nodes"))
        if row == len(self._bb):
            self._bb = np.concatenate([self._bb, np.zeros_like(self._bb)])
        self._bb[row] = job.bb
        if not one_core_units(job):
            self.heavy_seen = True
        self.spans_seen = self.spans_seen or spans
        self._ints[:, row] = (
            job.job_id,
            best,
            holds,
            first - 1,
            self._pushed,
            scalar,
            step,
            unbounded,
            group,
            spans,
        )
        self.index.push(self._pushed, job.job_id, wake, submit=job.submit, fresh=may_trigger(holds))
        if best >= len(self._best_counts):
            self._best_counts = np.concatenate(
                [self._best_counts, np.zeros(best + 1, dtype=np.int64)]
            )
        self._best_counts[best] += 1
        if self._most is not None and best > self._most:
            self._most = best
        self._views = None
        self._steps += step
        self._unbounded += unbounded
        self._pushed += 1
        self._scalar += scalar
        self._resumed += progress > 0.0
        self.jobs.append(job)
        self.curves.append(curve)
        self.position[job.job_id] = row
        self.size = row + 1
        for bucket, column in list(self._bounds.items()):
            if len(column) <= row:
                column = self._bounds[bucket] = np.concatenate([column, np.empty_like(column)])
            column[row] = self._bound(job, progress, best, 1 << bucket, bool(unbounded))

    def take(self, job_id: int) -> None:
        """Remove a queued job (started, dropped): the last row takes its place."""
        if self.invalid.pop(job_id, None) is not None:
            return
        row = self.position.pop(job_id)
        self._scalar -= int(self._ints[5, row])
        self._steps -= int(self._ints[6, row])
        self._unbounded -= int(self._ints[7, row])
        best = int(self._ints[1, row])
        self._best_counts[best] -= 1
        if best == self._most:
            self._most = None  # found again when next asked for
        self.index.take(job_id)
        self._views = None
        self._resumed -= bool(self._floats[2, row] > 0.0)
        self._profiles_live -= len(self.jobs[row].profile)  # type: ignore[arg-type]
        last = self.size - 1
        if row != last:
            self._floats[:, row] = self._floats[:, last]
            for column in self._bounds.values():
                column[row] = column[last]
            self._ints[:, row] = self._ints[:, last]
            self._bb[row] = self._bb[last]
            moved = self.jobs[row] = self.jobs[last]
            self.curves[row] = self.curves[last]
            self.position[moved.job_id] = row
        self.jobs.pop()
        self.curves.pop()
        self.size = last
        if last < LONG // 4:
            self._bounds.clear()  # short again: stop keeping bounds

    def values(self, elapsed: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``curve.value_at(elapsed)`` of every row, bit for bit (into ``out``, which may be
        ``elapsed`` itself).

        ``LinearDecayCurve.value_at`` is ``vmax`` up to the plateau's end, 0 from the zero
        time on, ``vmax * ((zero - e) / span)`` between. Rounding is monotone, so that ramp
        is ``>= vmax`` on the plateau and ``<= 0`` from the zero time on: clipping it to
        ``[0, vmax]`` gives the same numbers. A step curve (``span = 0``) has ramp ``inf``
        before its deadline, ``nan`` at it (``fmin`` then keeps ``vmax``) and ``-inf`` after.
        """
        columns = self._columns()
        return self._priced(None, elapsed, out, columns[3], columns[5], columns[6], columns[14])

    def values_of(self, rows: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
        """``values`` of the given rows only (``elapsed`` has one entry per row)."""
        columns = self._columns()
        return self._priced(
            rows,
            elapsed,
            None,
            columns[3][rows],
            columns[5][rows],
            columns[6][rows],
            columns[14][rows],
        )

    def _priced(
        self,
        rows: np.ndarray | None,
        elapsed: np.ndarray,
        out: np.ndarray | None,
        vmax: np.ndarray,
        zero: np.ndarray,
        span: np.ndarray,
        scalar: np.ndarray,
    ) -> np.ndarray:
        kept = None
        if (
            self._scalar
        ):  # priced by their own methods, on the elapsed times before ``out`` overwrites them
            picks = np.flatnonzero(scalar)
            kept = picks, elapsed[picks].tolist(), (picks if rows is None else rows[picks]).tolist()
        out = self._ramp(vmax, span, np.subtract(zero, elapsed, out=out))
        if kept is not None:
            curves = self.curves
            for pick, time, row in zip(kept[0].tolist(), kept[1], kept[2]):
                out[pick] = curves[row].value_at(time)
        return out

    def _ramp(self, vmax: np.ndarray, span: np.ndarray, ahead: np.ndarray) -> np.ndarray:
        """``vmax * (ahead / span)`` clipped to ``[0, vmax]``, in place (``ahead = zero - e``)."""
        if self._steps:
            with np.errstate(divide="ignore", invalid="ignore"):
                np.divide(ahead, span, out=ahead)
        else:
            np.divide(ahead, span, out=ahead)
        np.multiply(vmax, ahead, out=ahead)
        np.fmin(ahead, vmax, out=ahead)
        np.maximum(ahead, 0.0, out=ahead)
        return ahead

    def remaining_values(self, elapsed: np.ndarray) -> np.ndarray:
        """``curve.remaining_value(elapsed)`` of every row (the minVR key).

        ``LinearDecayCurve.remaining_value``: 0 from the zero time on, ``vmax * (plateau -
        e) + half`` on the plateau, ``value_at(e) * (zero - e) / 2`` on the ramp; the same
        operations here, each branch computed for every row and the right one kept.
        """
        columns = self._columns()
        vmax, plateau, zero, span = columns[3], columns[4], columns[5], columns[6]
        ahead = np.subtract(zero, elapsed)
        # Strictly inside the ramp ``vmax * ((zero - e) / span)`` is already in [0, vmax]
        # (``values``' docstring), so its clipping is left out; elsewhere it is not used.
        with np.errstate(divide="ignore", invalid="ignore"):  # step curves (span 0): never used
            out: np.ndarray = np.divide(ahead, span)
            np.multiply(vmax, out, out=out)
            np.multiply(out, ahead, out=out)
        np.multiply(out, 0.5, out=out)  # x * 0.5 and x / 2 round the same real number: same bits
        flat = np.subtract(plateau, elapsed, out=ahead)
        np.multiply(vmax, flat, out=flat)
        np.add(flat, columns[8], out=flat)
        np.copyto(out, flat, where=elapsed <= plateau)
        np.copyto(out, 0.0, where=elapsed >= zero)
        if self._scalar:
            curves = self.curves
            for row in np.flatnonzero(columns[14]).tolist():
                out[row] = curves[row].remaining_value(float(elapsed[row]))
        return out

    def values_on(self, now: float, cores: np.ndarray) -> np.ndarray:
        """Value of every row started at ``now`` on ``cores`` cores (``market.profit``)."""
        full = self._profiles[self.base + cores]
        if self._resumed:
            progress = self.progress
            full = np.where(progress == 0.0, full, np.ceil((1.0 - progress) * full - 1e-9))
        return self.values((now + full) - self.arrival)

    def values_on_rows(self, now: float, rows: np.ndarray, cores: np.ndarray) -> np.ndarray:
        """``values_on`` of the given rows only (``cores`` has one entry per row)."""
        columns = self._columns()
        full = self._profiles[columns[12][rows] + cores]
        if self._resumed:
            progress = columns[2][rows]
            full = np.where(progress == 0.0, full, np.ceil((1.0 - progress) * full - 1e-9))
        return self.values_of(rows, (now + full) - columns[0][rows])

    def gains(self, now: float, bid: int) -> tuple[np.ndarray, np.ndarray]:
        """``values_on(now, cores)`` of every row with ``cores = min(best, bid)``, and
        ``cores``, in buffers the next call reuses.

        With ``bid`` at least every row's ``c*`` the response time is the ``fastest``
        column (``remaining_time`` on ``c*``: the same float as ``values_on``'s).
        """
        columns = self._columns()
        size = self.size
        if len(self._buffers[0]) < size:
            self._buffers = (np.empty(2 * size), np.empty((2, 2 * size), dtype=np.int64))
        full, cores, index = (
            self._buffers[0][:size],
            self._buffers[1][0, :size],
            self._buffers[1][1, :size],
        )
        if bid >= self.most():
            cores = columns[10]
            np.add(columns[1], now, out=full)
        else:
            np.minimum(columns[10], bid, out=cores)
            np.add(columns[12], cores, out=index)
            np.take(self._profiles, index, out=full, mode="clip")
            if self._resumed:
                progress = columns[2]
                resumed = np.ceil((1.0 - progress) * full - 1e-9)
                np.copyto(full, resumed, where=progress != 0.0)
            np.add(full, now, out=full)
        np.subtract(full, columns[0], out=full)
        return self.values(full, out=full), cores

    def bounds(self, bid: int) -> np.ndarray:
        """An upper bound of every row's profit on ``min(best, bid)`` cores at any time
        from its arrival on: its value had it started at arrival on ``min(best, 2**k)``
        cores, ``2**k >= bid`` (more cores up to ``c*`` finish no later when the profile
        does not rise up to there; ``inf`` where it does, and for rows priced by their
        curve's own methods). Values never rise with time and float rounding is monotone,
        so the bound holds bit for bit. Computed for the whole queue when a bucket is first
        asked for, then kept on push and take while the queue stays long.
        """
        bucket = (bid - 1).bit_length()
        column = self._bounds.get(bucket)
        size = self.size
        if column is None:
            columns = self._columns()
            best, base = columns[10], columns[12]
            cores = np.minimum(best, 1 << bucket)
            full = self._profiles[base + cores]
            progress = columns[2]
            if self._resumed:
                full = np.where(progress == 0.0, full, np.ceil((1.0 - progress) * full - 1e-9))
            column = np.empty(2 * size)
            self.values((columns[0] + full) - columns[0], out=column[:size])
            rises = np.concatenate(
                [
                    [0],
                    np.cumsum(
                        self._profiles[1 : self._profiles_end]
                        > self._profiles[: self._profiles_end - 1]
                    ),
                ]
            )
            column[:size][(rises[base + cores] != rises[base + 1]) | (columns[16] != 0)] = np.inf
            self._bounds[bucket] = column
        return column[:size]

    def _bound(self, job: Job, progress: float, best: int, most: int, unbounded: bool) -> float:
        """One row's entry of ``bounds`` (pushed while bounds are kept)."""
        profile = job.profile
        assert profile is not None
        cores = min(best, most)
        if unbounded or any(
            later > earlier for earlier, later in itertools.pairwise(profile[:cores])
        ):
            return math.inf
        return float(
            job.payload["value_curve"].value_at(
                (job.submit + remaining_time(profile, cores, progress)) - job.submit
            )
        )

    def most(self) -> int:
        """The largest ``c*`` of any row (-1 when empty)."""
        if self._most is None:
            counts = np.flatnonzero(self._best_counts)
            self._most = int(counts[-1]) if len(counts) else -1
        return self._most

    def drop_candidates(self, now: float) -> tuple[list[int] | None, float]:
        """Rows that may be worthless at ``now`` (``None``: every row) and the smallest
        wake of the other rows.

        Every row when some row is unbounded (a curve priced by its own methods, or times
        beyond ``market_index.LIMIT``); else only the rows ``QueueIndex.near`` hands over
        (``wake < now + MARGIN``): the others earn a positive value on ``c*`` cores now.
        """
        if self._unbounded or not abs(now) < LIMIT:
            return None, math.inf
        position = self.position
        return [position[job_id] for job_id in self.index.near(now)], self.index.next_wake()

    def _store_profile(self, profile: tuple[float, ...]) -> int:
        """Append a profile to the shared storage (rewritten once garbage dominates)."""
        need = len(profile)
        if self._profiles_end + need > len(self._profiles):
            if 2 * self._profiles_live < self._profiles_end:  # mostly left jobs' profiles
                self._repack()
            if self._profiles_end + need > len(self._profiles):
                grown = np.empty(2 * (self._profiles_end + need), dtype=np.float64)
                grown[: self._profiles_end] = self._profiles[: self._profiles_end]
                self._profiles = grown
        start = self._profiles_end
        self._profiles[start : start + need] = profile
        self._profiles_end = start + need
        self._profiles_live += need
        return start

    def _repack(self) -> None:
        bases = self._ints[3]
        end = 0
        packed = np.empty(len(self._profiles), dtype=np.float64)
        for row, job in enumerate(self.jobs):
            length = len(job.profile)  # type: ignore[arg-type]
            first = int(bases[row]) + 1
            packed[end : end + length] = self._profiles[first : first + length]
            bases[row] = end - 1
            end += length
        self._profiles, self._profiles_end = packed, end
