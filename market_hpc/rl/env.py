"""``HPCDispatchEnv``: a Gymnasium environment whose every step is a dispatch choice made
in the project's own ``HPCModel``.

The model runs as in any replay until an instant needs a decision; it then pauses
(``HPCModel.next_decision``) and the agent builds that decision job by job
(``market_hpc.rl.dispatch.InstantDispatcher``): each step chooses one of the first K waiting
jobs. A chosen job that fits starts and the same instant is offered again; one that does
not fit is the instant's head (nothing more starts, or EASY backfills around it) and the
model resumes (``HPCModel.resume``), validating the decision as it validates any policy's.
Instants at which no waiting job can fit are decided (nothing starts) without a step.

An episode is a slice of N consecutive jobs (by submit time) starting at a seeded index of
the workload, on an empty machine; it ends when every job of the slice has started (or
was refused at arrival because no node can ever hold it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from market_hpc.core.model import HPCModel, release_model
from market_hpc.domain.job import Job
from market_hpc.domain.platform import PRESETS, Platform, load_platform
from market_hpc.errors import ConfigError, InvalidNumberError, UnknownNameError
from market_hpc.policies.base import Decision
from market_hpc.rl.dispatch import DispatchOptions, InstantDispatcher
from market_hpc.rl.evaluate import episode_metrics
from market_hpc.rl.registry import (
    ModelSpec,
    make_observation,
    make_reward,
)
from market_hpc.validation import Range, check

INVALID_ACTIONS = ("wrap", "raise")
"""What a step does with a slot that holds no job: ``wrap`` (the slot modulo the jobs
offered; for agents without masks, and ``check_env``'s random actions) or ``raise``."""
_COUNT = Range(1, 10_000_000, integer=True)
_OPTIONS = (
    "allocator",
    "backfill",
    "episode_jobs",
    "exclusive",
    "invalid_action",
    "observation",
    "observation_params",
    "reward",
    "reward_params",
    "reward_timing",
    "start_range",
    "window",
)
"""The constructor's keyword options (what ``from_config`` passes on)."""


class _Paused:
    """The model's policy while the environment decides: never asked (the model pauses
    before asking), so asking it is a bug."""

    name = "rl-env"

    def decide(self, view: Any, rng: Any) -> Decision:
        raise RuntimeError(
            "HPCDispatchEnv decides through next_decision/resume; the policy is never asked"
        )


class HPCDispatchEnv(gym.Env):
    """Dispatching as a Gymnasium environment over ``HPCModel``.

    Args:
        jobs: The workload (sorted here by submit time, then job id).
        platform: A ``Platform``, preset, inline spec or TOML path.
        episode_jobs: N, the jobs of an episode (a slice of consecutive jobs).
        window: K, the waiting jobs offered (the first K in queue order); the action is
            ``Discrete(K)``.
        backfill: EASY backfilling around a chosen job that does not fit now.
        allocator: Registered allocator placing the jobs (default first-fit).
        reward: A registered reward (``market_hpc.rl.registry``): ``bsld`` (bounded
            slowdown ``max(1, (wait + run) / max(run, 10))``, negated), ``wait`` (seconds,
            negated), ``value`` (value earned, for market jobs with value curves) or one
            registered with ``register_reward``.
        reward_params: Keyword parameters of the reward (default none).
        reward_timing: ``episode`` (the sum over the slice's jobs divided by N, at the
            last step) or ``step`` (each step's started jobs, same scale: the step rewards
            of an episode add up to its episode reward).
        start_range: Fractions of the workload ``[low, high)`` from which an episode's
            first job is drawn (e.g. ``(0, 0.7)`` to train, ``(0.7, 1)`` to evaluate).
        exclusive: Whole nodes per job.
        invalid_action: ``wrap`` or ``raise`` (``INVALID_ACTIONS``).
        observation: A registered observation: ``default`` (``dispatch.JOB_FEATURES`` per
            slot, then ``dispatch.PLATFORM_FEATURES``) or one registered with
            ``register_observation``.
        observation_params: Keyword parameters of the observation (default none).

    Raises:
        ConfigError: an option out of range or unknown, naming it and what is valid.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012  # gymnasium declares it so

    def __init__(
        self,
        jobs: Sequence[Job],
        platform: Platform | str = "kth-sp2",
        *,
        episode_jobs: int = 256,
        window: int = 128,
        backfill: bool = False,
        allocator: str = "first-fit",
        reward: str = "bsld",
        reward_timing: str = "episode",
        start_range: tuple[float, float] = (0.0, 1.0),
        exclusive: bool = False,
        invalid_action: str = "wrap",
        observation: str = "default",
        observation_params: dict[str, Any] | None = None,
        reward_params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        episode_jobs = int(check(episode_jobs, _COUNT, "episode_jobs"))
        self._metric, reward_entry = make_reward(reward, reward_params)
        if not isinstance(reward_timing, str) or reward_timing not in ("step", "episode"):
            raise ConfigError(f"reward_timing: got {reward_timing!r}; valid: step, episode")
        if not isinstance(invalid_action, str) or invalid_action not in INVALID_ACTIONS:
            raise ConfigError(
                f"invalid_action: got {invalid_action!r}; valid: {', '.join(INVALID_ACTIONS)}"
            )
        if not isinstance(exclusive, (bool, np.bool_)):
            raise ConfigError(f"exclusive: got {exclusive!r}; valid: true or false")
        self.options = DispatchOptions(window=window, backfill=backfill, allocator=allocator)
        self.platform = checked_platform(platform)
        self.jobs = sorted(checked_jobs(jobs), key=lambda j: (j.submit, j.job_id))
        if len({j.job_id for j in self.jobs}) != len(self.jobs):
            raise ConfigError("workload has duplicate job ids")
        if reward_entry.check is not None:
            reward_entry.check(self.jobs)
        self.episode_jobs = episode_jobs
        self.reward_kind, self.reward_timing = reward, reward_timing
        self.exclusive = bool(exclusive)
        self.invalid_action = invalid_action
        self._first, self._last = start_indices(start_range, len(self.jobs), self.episode_jobs)
        self.observation = make_observation(observation, self.options.window, observation_params)
        self.model_spec = ModelSpec(
            observation,
            dict(observation_params or {}),
            reward,
            dict(reward_params or {}),
            reward_timing,
        )
        self.observation_space = spaces.Box(
            float(self.observation.low),
            float(self.observation.high),
            shape=(int(self.observation.size),),
            dtype=np.float32,
        )
        self.action_space = spaces.Discrete(self.options.window)
        self.dispatcher = InstantDispatcher(self.options)
        self.model: HPCModel | None = None
        self.start_index = -1
        self._done = True
        self._sign = -1.0 if reward_entry.negate else 1.0
        self._total = 0.0
        self._started = 0

    @classmethod
    def from_config(cls, config: Any, **options: Any) -> HPCDispatchEnv:
        """The environment over the workload and platform a run of ``config`` uses (a
        ``RunConfig`` or scenario path): trace or generator, load factor, market rule,
        burst buffer, platform, allocator and node exclusivity. ``options`` are the
        other arguments of the constructor."""
        from market_hpc.experiment.config import RunConfig, load_scenario
        from market_hpc.experiment.run import build_workload
        from market_hpc.workload.burst_buffer import with_capacity

        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise UnknownNameError("HPCDispatchEnv option", unknown[0], _OPTIONS)
        if not isinstance(config, (RunConfig, str, Path)):
            raise ConfigError(f"config: got {config!r}; valid: a RunConfig or a scenario TOML path")
        if not isinstance(config, RunConfig):
            config = load_scenario(Path(config))
        platform = with_capacity(load_platform(config.platform), config.workload.burst_buffer)
        jobs, _ = build_workload(config, platform)
        platform = with_capacity(platform, config.workload.burst_buffer, jobs)
        options.setdefault("allocator", config.policy.allocator or "first-fit")
        options.setdefault("exclusive", config.exclusive)
        return cls(jobs, platform, **options)

    # ------------------------------------------------------------- gymnasium
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode: a seeded slice of N jobs (``options={"start": i}`` picks the
        slice beginning at the i-th job instead)."""
        integer = isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_))
        if seed is not None and not (integer and seed >= 0):
            raise ConfigError(f"seed: got {seed!r}; valid: None or an integer >= 0")
        if options is not None and (not isinstance(options, dict) or set(options) - {"start"}):
            raise ConfigError(
                f"options: got {options!r}; valid: None or a dict with the key 'start'"
            )
        super().reset(seed=None if seed is None else int(seed))
        self.start_index = episode_start(
            self.np_random, options, self._first, self._last, len(self.jobs) - self.episode_jobs
        )
        slice_ = self.jobs[self.start_index : self.start_index + self.episode_jobs]
        release_model(self.model)  # the last episode's (Mesa 3.3 would keep every one)
        self.model = HPCModel(
            slice_,
            self.platform,
            policy=_Paused(),
            exclusive=self.exclusive,
            record_timeseries=False,
        )
        self._done = False
        self._total = 0.0
        self._started = 0
        self._advance()
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Choose the job in slot ``action`` (see the module's description)."""
        if self._done or self.model is None:
            raise RuntimeError("the episode is over: call reset()")
        offered = min(len(self.dispatcher.queue), self.options.window)
        slot = action if type(action) is int else action_slot(action, offered)
        invalid = not 0 <= slot < offered
        if invalid:
            if self.invalid_action == "raise":
                raise InvalidNumberError(
                    "action",
                    slot,
                    f"a slot 0..{offered - 1}, the slots holding a job "
                    "(action_masks()); this action names no job",
                )
            slot %= offered
        now = self.model.now
        started, over = self.dispatcher.choose(slot)
        gained = self._count(started, now)
        if over:
            self.model.resume(self.dispatcher.finish())
            self._advance()
        if self.reward_timing == "step":
            reward = self._sign * gained / self.episode_jobs
        else:
            reward = self._sign * self._total / self.episode_jobs if self._done else 0.0
        info = self._info()
        info["invalid_action"] = invalid
        return self._observation(), float(reward), self._done, False, info

    def action_masks(self) -> np.ndarray:
        """Slots that hold a job (MaskablePPO's mask; any of them is a valid choice)."""
        if self._done:
            mask = np.zeros(self.options.window, dtype=bool)
            mask[0] = True  # a terminal observation: nothing is chosen from it
            return mask
        return self.dispatcher.mask()

    # ------------------------------------------------------------- internals
    def window_jobs(self) -> list[Job]:
        """The jobs in the window now, slot by slot (for scripted agents and tests)."""
        return [] if self._done else self.dispatcher.window()

    def _count(self, started: list[Job], now: float) -> float:
        gained = 0.0
        metric = self._metric
        for job in started:
            gained += metric(job, now)
        self._started += len(started)
        self._total += gained
        return gained

    def _advance(self) -> None:
        """Run the model to the next instant that needs a choice (deciding, without a
        step, the instants at which nothing can fit), or to the end of the episode."""
        model = self.model
        assert model is not None
        while True:
            view = model.next_decision()
            if view is None:
                self._done = True
                return
            if self.dispatcher.begin(view):
                return
            model.resume(self.dispatcher.finish())

    def _observation(self) -> np.ndarray:
        if self._done:
            return np.zeros(int(self.observation.size), dtype=np.float32)
        return np.asarray(self.observation(self.dispatcher), dtype=np.float32)

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "time": 0.0 if self.model is None else self.model.now,
            "started": self._started,
            "start_index": self.start_index,
        }
        if self._done and self._started and self.model is not None:
            info["episode_metrics"] = self._episode_metrics()
        return info

    def _episode_metrics(self) -> dict[str, float]:
        """The slice's mean bounded slowdown and wait, and the value earned, over its jobs
        that started (read from the model's results at the episode's end)."""
        assert self.model is not None
        return episode_metrics(self.model)


def episode_start(
    rng: np.random.Generator, options: dict[str, Any] | None, first: int, last: int, highest: int
) -> int:
    """The index of an episode's first job: ``options["start"]`` when given (checked to be
    an index in ``0..highest``), else drawn from ``first..last`` with ``rng``.

    Raises:
        ConfigError: ``options["start"]`` is not an index in ``0..highest``.
    """
    start = None if options is None else options.get("start")
    if start is None:
        return int(rng.integers(first, last + 1))
    if (
        not isinstance(start, (int, np.integer))
        or isinstance(start, bool)
        or not 0 <= start <= highest
    ):
        raise ConfigError(f"options['start']: got {start!r}; valid: an index 0..{highest}")
    return int(start)


def start_indices(start_range: tuple[float, float], n: int, episode_jobs: int) -> tuple[int, int]:
    """The first and last index an episode of ``episode_jobs`` jobs may start at, when it
    starts within ``start_range`` (fractions of the ``n``-job workload).

    Raises:
        ConfigError: ``start_range`` is not two fractions ``0 <= low < high <= 1``, or the
            episode does not fit in it.
    """
    try:
        low, high = (float(x) for x in start_range)
    except (TypeError, ValueError):
        raise ConfigError(
            f"start_range: got {start_range!r}; valid: two fractions 0 <= low < high <= 1"
        ) from None
    if not 0.0 <= low < high <= 1.0:
        raise ConfigError(
            f"start_range: got {start_range!r}; valid: two fractions 0 <= low < high <= 1"
        )
    first = math.floor(low * n)
    last = min(math.ceil(high * n), n) - episode_jobs  # the last valid first index
    if last < first:
        raise ConfigError(
            f"episode_jobs: {episode_jobs} jobs do not fit in start_range {start_range!r} of a "
            f"{n}-job workload (it holds {max(0, min(math.ceil(high * n), n) - first)} jobs)"
        )
    return first, last


def checked_platform(platform: Any) -> Platform:
    """``platform`` resolved (``load_platform``) when it is a ``Platform`` or a string.

    Raises:
        ConfigError: any other type, or a string that names no platform.
    """
    if not isinstance(platform, (Platform, str)):
        raise ConfigError(
            f"platform: got {platform!r}; valid: a Platform, a preset "
            f"({', '.join(sorted(PRESETS))}), nodes=N,cores=C[,...] or FILE.toml"
        )
    return load_platform(platform)


def checked_jobs(jobs: Any) -> list[Job]:
    """``jobs`` as a list when it is an iterable of ``Job`` records (not a string or bytes).

    Raises:
        ConfigError: ``jobs`` is not iterable, or an item is not a ``Job``, naming it.
    """
    if isinstance(jobs, (str, bytes, dict)):
        raise ConfigError(
            f"jobs: got {type(jobs).__name__} {jobs!r:.60}; valid: a sequence of Job records"
        )
    try:
        listed = list(jobs)
    except TypeError:
        raise ConfigError(f"jobs: got {jobs!r:.60}; valid: a sequence of Job records") from None
    for index, job in enumerate(listed):
        if not isinstance(job, Job):
            raise ConfigError(
                f"jobs[{index}]: got {type(job).__name__} {job!r:.60}; "
                "valid: a Job record (market_hpc.domain.job.Job)"
            )
    return listed


def action_slot(action: Any, offered: int) -> int:
    """The slot an action names: an integer (Python or numpy, or a one-element integer array).

    Raises:
        InvalidNumberError: anything else (a float, a bool, a string, None), naming the slots.
    """
    value = action
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item() if value.dtype.kind in "iu" else value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise InvalidNumberError(
        "action",
        action,
        f"an integer slot 0..{max(0, offered - 1)} (a slot holding a job: action_masks())",
    )
