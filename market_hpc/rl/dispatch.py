"""One decision built job by job: what the learning environment and a trained policy share.

At an instant where the model decides, :class:`InstantDispatcher` offers a window of the
first K waiting jobs (queue order). Each choice names one job of the window:

- the job fits now: it starts (on the allocator's placement, as the classic schedulers
  place it) and the same instant offers the rest again;
- it does not fit: it is this instant's *head*. Nothing else starts, or, with
  ``backfill=True``, EASY backfilling runs around it (``policies.classic.Easy``'s
  public ``schedule``: the jobs already chosen, then the head, then the rest of the queue
  in queue order), and the instant ends.

The instant also ends when no waiting job can fit what is left. Choosing the queue's
first job at every step is therefore FIFO, choosing the shortest estimate is SJF, and
with backfilling the first job gives EASY: start for start (``tests/rl/test_env.py``).
The choice is asked again at the next instant whatever was chosen before (a head holds
nothing across instants), so any priority order reproduces its strict scheduler.

Everything here is numpy and the model's own code; gymnasium is not needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from struct import Struct
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.errors import ConfigError
from market_hpc.policies.base import (
    NOTHING,
    Action,
    Allocator,
    Decision,
    RunningJob,
    Start,
    View,
    fast_view,
)
from market_hpc.policies.classic import Easy
from market_hpc.policies.scratch import PassScratch
from market_hpc.validation import Range, check

if TYPE_CHECKING:
    from market_hpc.policies.base import FastView

JOB_FEATURES = (
    "wait",
    "cores",
    "gpus",
    "mem",
    "bb",
    "estimate",
    "value_now",
    "value_slope",
    "fits_now",
    "present",
)
"""The features of each window slot, in order (all 0 for an empty slot)."""
RELEASE_HORIZONS = (900.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 24 * 3600.0)
"""Seconds ahead at which the platform features give the share of cores expected free."""
PLATFORM_FEATURES = (
    "free_cores",
    "free_gpus",
    "free_mics",
    "free_mem",
    "free_bb",
    "queue_length",
    *(f"cores_free_in_{int(h)}s" for h in RELEASE_HORIZONS),
)
"""The platform features that follow the window, in order."""
TIME_SCALE = 3600.0
"""Times (wait, estimate) enter the observation as ``t / (t + TIME_SCALE)``: 0.5 at an hour."""
_F = len(JOB_FEATURES)
_G = len(PLATFORM_FEATURES)
_WINDOW = Range(1, 100_000, integer=True)
_MIN = np.minimum.reduce  # ndarray.min without its Python-level wrapper
# The platform features written as float32 into the observation in one call: the C cast
# numpy's float64 -> float32 assignment makes (values in [0, 1], far from overflow).
_TAIL = Struct(f"={_G}f")
_NO_RELEASES = (0.0,) * len(RELEASE_HORIZONS)
_JOB_ID = attrgetter("job_id")


def observation_size(window: int) -> int:
    """Length of the flat observation for a window of ``window`` jobs."""
    return window * _F + len(PLATFORM_FEATURES)


@dataclass(frozen=True)
class DispatchOptions:
    """How decisions are offered (saved beside a trained model, so it runs as trained).

    Attributes:
        window: K, the jobs offered (the first K waiting jobs in queue order).
        backfill: EASY backfilling around a chosen job that does not fit.
        allocator: Registered allocator that places the chosen jobs.
    """

    window: int = 128
    backfill: bool = False
    allocator: str = "first-fit"

    def __post_init__(self) -> None:
        check(self.window, _WINDOW, "window")
        object.__setattr__(
            self, "window", int(self.window)
        )  # 8.0 (TOML, JSON) sizes the spaces as 8
        if not isinstance(self.backfill, (bool, np.bool_)):
            raise ConfigError(f"backfill: got {self.backfill!r}; valid: true or false")
        object.__setattr__(self, "backfill", bool(self.backfill))  # saved as JSON beside a model
        from market_hpc.policies.registry import allocator_names

        if (
            not isinstance(self.allocator, str)
            or self.allocator not in allocator_names()
            or self.allocator == "max-bid"
        ):
            valid = [name for name in allocator_names() if name != "max-bid"]
            raise ConfigError(f"allocator: got {self.allocator!r}; valid: {', '.join(valid)}")


class _Table:
    """Per-job features that do not change while a job waits, one row per job seen (by id):
    the job's observation row (``wait``, ``value_*`` and ``fits_now`` filled per step) and
    what the fit test compares."""

    __slots__ = ("beyond_cores", "curves", "features", "index", "jobs", "need", "submit", "used")

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.jobs: dict[int, Job] = {}  # by id: the jobs a backfilling pass starts
        self.features = np.zeros((256, _F), dtype=np.float32)
        self.need = np.zeros(
            (5, 256)
        )  # cores, gpus, mics, mem, bb (by column): what the fit test compares
        self.submit = np.zeros(256)
        self.curves: dict[
            int, Any
        ] = {}  # row -> (value curve, its maximum, run time) of market jobs
        self.used = 0
        self.beyond_cores = False  # some job seen needs more than cores (GPUs, ..., burst buffer)

    def rows(self, jobs: Sequence[Job], platform: Platform) -> np.ndarray:
        index = self.index
        try:  # every job seen before (the common case): one C-level pass
            return np.fromiter(
                map(index.__getitem__, map(_JOB_ID, jobs)), dtype=np.intp, count=len(jobs)
            )
        except KeyError:
            pass
        rows = [index.get(job.job_id, -1) for job in jobs]
        for i, row in enumerate(rows):
            if row < 0:
                rows[i] = self._add(jobs[i], platform)
        return np.array(rows, dtype=np.intp)

    def _add(self, job: Job, platform: Platform) -> int:
        row = self.used
        if row == len(self.submit):
            self.features = np.concatenate([self.features, np.zeros_like(self.features)])
            self.need = np.concatenate([self.need, np.zeros_like(self.need)], axis=1)
            self.submit = np.concatenate([self.submit, np.zeros_like(self.submit)])
        self.used += 1
        self.index[job.job_id] = row
        self.jobs[job.job_id] = job
        total = platform.total
        amounts = [job.units * a for a in job.unit]
        shares = [amounts[r] / total[r] if total[r] > 0 else 0.0 for r in (0, 1, 3)]
        bb = job.bb / platform.burst_buffer if platform.burst_buffer > 0 else 0.0
        self.features[row, 1:6] = (*shares, bb, job.estimate / (job.estimate + TIME_SCALE))
        self.features[row, 9] = 1.0
        self.need[:, row] = (*amounts, job.bb)
        if job.bb or any(amounts[1:]):
            self.beyond_cores = True
        self.submit[row] = job.submit
        curve = job.payload.get("value_curve") if job.payload else None
        if curve is not None:
            self.curves[row] = (curve, float(curve.max_value), _run_of(job))
        return row


class InstantDispatcher:
    """Builds one instant's :class:`Decision` from choices of window slots.

    Args:
        options: Window, backfilling and allocator.
        allocator: A ready allocator (default: ``options.allocator``, made here).
    """

    def __init__(self, options: DispatchOptions, allocator: Allocator | None = None) -> None:
        from market_hpc.policies.registry import make_allocator

        self.options = options
        self.allocator: Allocator = (
            make_allocator(options.allocator) if allocator is None else allocator
        )
        self.backfiller = Easy(self.allocator) if options.backfill else None
        self._table = _Table()
        self.platform: Platform | None = None
        self._total = np.zeros(4)
        self._inverse_total = [0.0] * 4
        self._total_cores = 0.0
        self._inverse_bb = 0.0
        self.view: View | None = None
        self.queue: list[Job] = []
        self.started: list[Job] = []
        self.actions: list[Action] = []
        self.head: Job | None = None
        self._scratch: PassScratch | None = None
        # What is free (cores, GPUs, MICs, memory, burst buffer) as Python numbers: the
        # cores-only fit tests and the observation read them without a numpy call.
        self._free_values: list[float] = [0.0] * 5
        # The window's rows and needs, built when a choice may be needed (None until then:
        # most instants at which nothing fits are told so by the queue's smallest request).
        self._rows: np.ndarray | None = np.zeros(0, dtype=np.intp)
        self._need = np.zeros((5, 0))
        self._releases: list[tuple[float, int]] = []
        self._released: list[float] | None = None
        self._cores_only = False
        self._view_type: type | None = None
        self._min_cores_offered = False
        self._masks: dict[int, np.ndarray] = {}  # by the slots offered
        self._blank = np.zeros(observation_size(options.window), dtype=np.float32)

    # ------------------------------------------------------------ an instant
    def begin(self, view: View) -> bool:
        """Start the decision at ``view.time``; whether a choice is needed (some waiting
        job may fit what is free; otherwise :meth:`finish` gives the empty decision)."""
        if view.platform is not self.platform:
            self.platform = view.platform
            self._total = np.asarray(view.platform.total, dtype=float)
            self._inverse_total = [1.0 / t if t > 0 else 0.0 for t in self._total.tolist()]
            self._total_cores = float(self._total[0])
            bb = float(view.platform.burst_buffer)
            self._inverse_bb = 1.0 / bb if bb > 0 else 0.0
            self._table = _Table()
            # Only cores (no other resource, no burst buffer): the fit test reads one row.
            self._cores_only = not np.asarray(view.platform.total)[1:].any() and bb == 0
        if type(view) is not self._view_type:
            self._view_type = type(view)
            self._min_cores_offered = fast_view(view, "queue_min_cores") is not None
        self.view = view
        self.queue = list(view.queue)
        self.started, self.actions, self.head = [], [], None
        self._releases = []
        self._released = None
        self._scratch = None
        self._rows = None
        if not self.queue:
            return False
        if self._cores_only and self._min_cores_offered:
            # What needs_choice would find (the smallest request fits the free cores or
            # not), without it; the rows only when a choice is needed.
            if cast("FastView", view).queue_min_cores > view.free_total[0]:
                return False
            self._build()
            return True
        self._build()
        return self.needs_choice()

    def _build(self) -> None:
        """The free totals and the queue's rows and needs (once per instant that needs them)."""
        view = self.view
        assert view is not None, "begin(view) first"
        self._free_values = [*view.free_total, view.free_bb]
        self._rows = self._table.rows(self.queue, view.platform)
        self._need = self._table.need.take(self._rows, axis=1)

    def needs_choice(self) -> bool:
        """Whether some waiting job passes the totals test (fits what is free, summed)."""
        if self.head is not None or not len(self.queue):
            return False
        if self._rows is None:
            self._build()
        if self._cores_only:
            return bool(_MIN(self._need[0]) <= self._free_values[0])
        return bool((self._need <= self._free_column()).all(axis=0).any())

    def _fits_totals(self, slot: int) -> bool:
        if self._cores_only and not self._table.beyond_cores:  # the other rows are all 0
            return bool(self._need[0, slot] <= self._free_values[0])
        return bool((self._need[:, slot] <= self._free_column()[:, 0]).all())

    def _free_column(self) -> np.ndarray:
        """What is free as a ``(5, 1)`` float column (compared with the needs' columns)."""
        return np.array(self._free_values, dtype=float)[:, None]

    @property
    def free(self) -> np.ndarray:
        """What is free now, after this instant's starts so far: cores, GPUs, MICs, memory
        (summed over the nodes) and burst buffer (read-only, as of this call)."""
        if self._rows is None and self.view is not None:
            self._build()
        free = np.array(self._free_values, dtype=float)
        free.flags.writeable = False
        return free

    def window(self) -> list[Job]:
        """The jobs offered now, slot by slot."""
        return self.queue[: self.options.window]

    def mask(self) -> np.ndarray:
        """Slots holding a job (each may be chosen; one that does not fit becomes the head)."""
        offered = min(len(self.queue), self.options.window)
        mask = self._masks.get(offered)
        if mask is None:
            mask = self._masks[offered] = np.zeros(self.options.window, dtype=bool)
            mask[:offered] = True
        return mask.copy()  # the caller may keep it

    def fits_mask(self) -> np.ndarray:
        """Slots whose job passes the totals test now."""
        if self._rows is None:
            self._build()
        mask = np.zeros(self.options.window, dtype=bool)
        k = min(len(self.queue), self.options.window)
        mask[:k] = (self._need[:, :k] <= self._free_column()).all(axis=0)
        return mask

    def choose(self, slot: int) -> tuple[list[Job], bool]:
        """Act on the job in ``slot``; return the jobs started by this choice (backfilled
        ones included) and whether the instant is over.

        Raises:
            ValueError: ``slot`` holds no job.
        """
        view = self.view
        assert view is not None, "begin(view) first"
        queue = self.queue
        if not 0 <= slot < min(len(queue), self.options.window):
            raise ValueError(
                f"slot {slot} holds no job: the window holds {min(len(queue), self.options.window)}"
            )
        rows = self._rows
        if rows is None:
            self._build()
            rows = self._rows
            assert rows is not None
        job = queue[slot]
        allocation = None
        if self._fits_totals(slot):
            if self._scratch is None:
                self._scratch = PassScratch(view)
            allocation = self._scratch.allocate(self.allocator, job)
        if allocation is not None:
            assert self._scratch is not None
            self._scratch.take(job, allocation)
            self.actions.append(Start(job.job_id, allocation))
            self.started.append(job)
            need = self._need
            self._free_values = [
                free - taken for free, taken in zip(self._free_values, need[:, slot].tolist())
            ]
            del queue[slot]
            if slot == 0:  # views, no copy
                self._rows, self._need = rows[1:], need[:, 1:]
            else:
                self._rows = np.concatenate((rows[:slot], rows[slot + 1 :]))
                self._need = np.concatenate((need[:, :slot], need[:, slot + 1 :]), axis=1)
            self._releases.append((view.time + job.estimate, job.cores))
            return [job], not self.needs_choice()
        self.head = job
        return self._backfill(slot), True

    def _backfill(self, slot: int) -> list[Job]:
        """EASY around the head in ``slot`` (``Easy.schedule`` over the jobs already chosen,
        the head, then the rest in queue order), replacing this instant's starts."""
        if self.backfiller is None or self.head is None:
            return []
        view = self.view
        assert view is not None
        self._close(undo=True)
        queue = self.queue
        decision = self.backfiller.schedule(
            view, [*self.started, self.head, *queue[:slot], *queue[slot + 1 :]]
        )
        self.actions = list(decision.actions)
        added = self.actions[len(self.started) :]
        if not added:
            return []
        jobs = self._table.jobs
        return [jobs[action.job_id] for action in added]

    def _close(self, undo: bool = False) -> None:
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            if undo:
                scratch.__exit__(RuntimeError, None, None)  # undo its placements
            else:
                scratch.__exit__(None, None, None)  # the model claims them as it applies the starts

    def finish(self) -> Decision:
        """This instant's decision (call once, when :meth:`choose` said it is over or no
        choice was needed)."""
        self._close()
        actions, self.actions = self.actions, []
        self.view = None
        return Decision(tuple(actions)) if actions else NOTHING

    # ----------------------------------------------------------- observation
    def _released_by(self, view: View) -> list[float]:
        """The cores the running jobs release by each of ``RELEASE_HORIZONS`` from now, by
        their expected ends (``view.running`` is sorted by them): the same all instant long
        (the jobs chosen now are added per observation), so counted once per instant."""
        released = self._released
        if released is None:
            released = self._released = cores_released_by(view.running, view.time)
        return released

    def observation(self) -> np.ndarray:
        """The flat observation: the window's job features, then the platform's
        (``JOB_FEATURES``, ``PLATFORM_FEATURES``), each in [-1, 1]."""
        view = self.view
        assert view is not None
        if self._rows is None:
            self._build()
        rows = self._rows
        assert rows is not None
        k = self.options.window
        obs = self._blank.copy()  # a copy costs less than a new zeroed array
        now = view.time
        table = self._table
        queued = len(self.queue)
        n = min(k, queued)
        free_cores, gpus, mics, mem, bb = self._free_values
        if n:
            rows = rows[:n]
            block = obs[: n * _F].reshape(n, _F)  # the slots holding a job
            table.features.take(rows, axis=0, out=block)
            wait = now - table.submit.take(rows)
            wait /= wait + TIME_SCALE
            block[:, 0] = wait
            if self._cores_only:
                block[:, 8] = self._need[0, :n] <= free_cores
            else:
                block[:, 8] = (self._need[:, :n] <= self._free_column()).all(axis=0)
            if table.curves:
                curves = table.curves
                for i, row in enumerate(rows.tolist()):
                    found = curves.get(row)
                    if found is not None:
                        curve, top, run = found
                        elapsed = (
                            now - float(table.submit[row]) + run
                        )  # at completion, if started now
                        value = float(curve.value_at(elapsed))
                        later = float(curve.value_at(elapsed + TIME_SCALE))
                        block[i, 6] = value / top
                        block[i, 7] = max(-1.0, (later - value) / top)
        inverse = self._inverse_total
        cores = self._total_cores
        if cores <= 0:
            shares: Sequence[float] = _NO_RELEASES
        else:
            shares = []
            extra = self._releases
            for horizon, released in zip(RELEASE_HORIZONS, self._released_by(view), strict=True):
                if extra:
                    by = now + horizon
                    for end, amount in extra:
                        if end <= by:
                            released += amount
                share = (free_cores + released) / cores
                shares.append(share if share < 1.0 else 1.0)  # noqa: FURB136  # min(), no call
        _TAIL.pack_into(
            obs,  # type: ignore[arg-type]  # an ndarray is a writable buffer (numpy's stubs say not)
            4 * k * _F,
            free_cores * inverse[0],
            gpus * inverse[1],
            mics * inverse[2],
            mem * inverse[3],
            bb * self._inverse_bb,
            queued / (queued + k),
            *shares,
        )
        return obs


def cores_released_by(running: Iterable[RunningJob], now: float) -> list[float]:
    """The cores the running jobs (sorted by expected end) release by each of
    ``RELEASE_HORIZONS`` from ``now``, in one walk that stops at the last horizon (on
    KTH-SP2 slices, about six running jobs a step, cheaper than bisecting their ends).

    >>> def running(end, cores, seq):
    ...     job = Job(seq, 0.0, end, end, units=cores)
    ...     return RunningJob(end, seq, job, 0.0, ((0, cores),), cores)
    >>> cores_released_by([running(600.0, 2, 1), running(5000.0, 4, 2)], 0.0)  # by 900 s, 1 h, ...
    [2.0, 2.0, 6.0, 6.0, 6.0]
    """
    released: list[float] = []
    limits = [now + horizon for horizon in RELEASE_HORIZONS]
    limit = limits[0]
    total = 0.0
    for job in running:
        if job.est_end > limit:
            while job.est_end > limit:
                released.append(total)
                if len(released) == len(limits):
                    break
                limit = limits[len(released)]
            if len(released) == len(limits):
                break
        total += job.units * job.job.unit[0]
    released.extend([total] * (len(limits) - len(released)))
    return released


def _run_of(job: Job) -> float:
    """What the job's value is read at: completion after its estimate (rigid jobs) or its
    requested size's profile time (moldable jobs started at their size)."""
    if job.profile is not None:
        return float(job.profile[min(job.units, len(job.profile)) - 1])
    return job.estimate


def job_run_time(job: Job) -> float:
    """The real run time of a job started now at its requested size."""
    if job.profile is not None:
        return float(job.profile[min(job.units, len(job.profile)) - 1])
    return job.run_time


def job_metric(job: Job, start: float, reward: str) -> float:
    """One started job's contribution: its bounded slowdown
    ``max(1, (wait + run) / max(run, 10))``, its wait, or the value it earns (finishing at
    ``start`` + its run time).

    >>> job_metric(Job(1, 0.0, 5.0, 5.0), 20.0, "bsld")
    2.5
    >>> job_metric(Job(1, 0.0, 100.0, 100.0), 300.0, "bsld")
    4.0
    """
    wait = start - job.submit
    if reward == "wait":
        return wait
    run = job_run_time(job)
    if reward == "bsld":
        return max(1.0, (wait + run) / max(run, 10.0))
    curve = job.payload.get("value_curve")
    return 0.0 if curve is None else float(curve.value_at(wait + run))


def first_fit_slot(window: Sequence[Job], key: Any = None) -> int:
    """The slot of the first job by ``key`` (``None``: the first slot): what a scripted
    agent reproducing a priority scheduler chooses."""
    if key is None or not window:
        return 0
    return min(range(len(window)), key=lambda i: key(window[i]))


__all__ = [
    "JOB_FEATURES",
    "PLATFORM_FEATURES",
    "RELEASE_HORIZONS",
    "TIME_SCALE",
    "DispatchOptions",
    "InstantDispatcher",
    "cores_released_by",
    "first_fit_slot",
    "job_metric",
    "job_run_time",
    "observation_size",
]
