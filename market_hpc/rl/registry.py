"""Rewards and observations by name: what a researcher registers to change what a learned
dispatcher is rewarded for and what it sees.

A **reward** is a function of one started job and the time it started,
``reward(job, start, **params) -> float``, registered with :func:`register_reward`. The
environment adds up the values of the jobs each step starts and divides by the episode's
N jobs (per step, or the episode's sum at its last step: ``reward_timing``). With
``negate=True`` the function returns a cost (lower is better) and the reward is its
negation, as the built-in ``bsld`` and ``wait`` are.

An **observation** is a factory ``factory(window, **params) -> Observation``, registered
with :func:`register_observation`: an object with ``size`` (the length of the flat
observation), ``low`` and ``high`` (its bounds, which hold 0: the terminal observation is
all zeros) and ``__call__(dispatcher) -> numpy array`` reading the decision in progress
(:class:`~market_hpc.rl.dispatch.InstantDispatcher`: ``view``, ``queue``, ``window()``,
``free``, ``fits_mask()``).

Both are chosen by name in ``HPCDispatchEnv(reward=..., reward_params=..., observation=...,
observation_params=...)`` and saved with a trained model (:class:`ModelSpec`), so that
``learned:PATH`` rebuilds the observation the model was trained on. Names registered by
installed packages are found through the entry point group ``market_hpc.rl`` (a module
whose import registers them, or a function that does), loaded the first time a name is
not found.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any, Protocol, TypeVar

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError
from market_hpc.rl.dispatch import InstantDispatcher, job_metric, observation_size

GROUP = "market_hpc.rl"
"""The entry point group of installed packages that register rewards or observations."""

RewardFunction = Callable[..., float]
F = TypeVar("F", bound=Callable[..., Any])


class Observation(Protocol):
    """What an observation factory returns (see the module's description)."""

    size: int
    low: float
    high: float

    def __call__(self, dispatcher: InstantDispatcher) -> np.ndarray: ...


@dataclass(frozen=True)
class Entry:
    """One registered reward function or observation factory.

    Attributes:
        name: The registered name.
        factory: The reward function or the observation factory.
        params: The keyword parameters it takes (``None``: any, it takes ``**params``).
        negate: For a reward: the function returns a cost, the reward is its negation.
        check: For a reward: called with the workload, raises ``ConfigError`` when the
            reward cannot be earned on it (``value`` without value curves).
    """

    name: str
    factory: Callable[..., Any]
    params: tuple[str, ...] | None
    negate: bool = False
    check: Callable[[Sequence[Job]], None] | None = None


REWARDS: dict[str, Entry] = {}
OBSERVATIONS: dict[str, Entry] = {}
_PLUGINS: dict[str, list[str]] = {"loaded": [], "failed": []}


def _keywords(
    factory: Callable[..., Any], positional: int, kind: str, name: str
) -> tuple[str, ...] | None:
    """The keyword parameters after the ``positional`` leading ones (``None`` for ``**params``)."""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    leading = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(leading) < positional and not any(p.kind is p.VAR_POSITIONAL for p in parameters):
        raise ConfigError(
            f"{kind} {name!r}: {getattr(factory, '__module__', '?')}."
            f"{getattr(factory, '__qualname__', '?')} takes {len(leading)} positional "
            f"argument(s); a {kind} takes {positional} "
            f"({'job, start' if kind == 'reward' else 'window'}), then keyword parameters"
        )
    return tuple(p.name for p in parameters[positional:] if p.kind is not p.VAR_POSITIONAL)


def _register(table: dict[str, Entry], kind: str, name: str, entry: Entry) -> None:
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{kind} name: got {name!r}; valid: a non-empty string")
    if not callable(entry.factory):
        raise ConfigError(
            f"{kind} {name!r}: register_{kind} decorates a function or class, "
            f"got {type(entry.factory).__name__}"
        )
    if name in table:
        previous = table[name].factory
        raise ConfigError(
            f"{kind} {name!r} is already registered (by "
            f"{getattr(previous, '__module__', '?')}.{getattr(previous, '__qualname__', '?')})"
        )
    table[name] = entry


def register_reward(
    name: str, *, negate: bool = False, check: Callable[[Sequence[Job]], None] | None = None
) -> Callable[[F], F]:
    """Function decorator adding a reward: ``fn(job, start, **params) -> float``, one
    started job's contribution (see the module's description).

    Raises:
        ConfigError: ``name`` is already registered, or ``fn`` takes fewer than two
            positional arguments.
    """

    def decorate(function: F) -> F:
        params = _keywords(function, 2, "reward", name) if callable(function) else ()
        _register(REWARDS, "reward", name, Entry(name, function, params, bool(negate), check))
        return function

    return decorate


def register_observation(name: str) -> Callable[[F], F]:
    """Class or function decorator adding an observation factory:
    ``factory(window, **params) -> Observation`` (see the module's description).

    Raises:
        ConfigError: ``name`` is already registered.
    """

    def decorate(factory: F) -> F:
        params = _keywords(factory, 1, "observation", name) if callable(factory) else ()
        _register(OBSERVATIONS, "observation", name, Entry(name, factory, params))
        return factory

    return decorate


def load_plugins(entry_points: Sequence[metadata.EntryPoint] | None = None) -> list[str]:
    """Import the modules (or call the functions) the entry point group ``GROUP`` names,
    once per process; return the failures, each naming its entry point."""
    found = metadata.entry_points(group=GROUP) if entry_points is None else entry_points
    for entry_point in sorted(found, key=lambda ep: ep.name):
        label = f"{entry_point.name} = {entry_point.value}"
        if label in _PLUGINS["loaded"]:
            continue
        _PLUGINS["loaded"].append(label)
        try:
            target = entry_point.load()
            if not isinstance(target, ModuleType):
                target()
        except Exception as exc:  # noqa: BLE001  # a plugin may raise anything: name it, go on
            _PLUGINS["failed"].append(f"{label}: {type(exc).__name__}: {exc}")
    return list(_PLUGINS["failed"])


def lookup(kind: str, name: Any) -> Entry:
    """The entry registered as ``name`` (``kind``: ``reward`` or ``observation``), loading
    the installed plugins when it is not registered yet.

    Raises:
        ConfigError: ``{kind}: got NAME; valid: the registered names``.
    """
    table = REWARDS if kind == "reward" else OBSERVATIONS
    if isinstance(name, str) and name not in table:
        load_plugins()
    if not isinstance(name, str) or name not in table:
        failed = _PLUGINS["failed"]
        note = f"; plugins that failed to load: {'; '.join(failed)}" if failed else ""
        raise ConfigError(f"{kind}: got {name!r}; valid: {', '.join(table)}{note}")
    return table[name]


def _checked_params(entry: Entry, kind: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
        raise ConfigError(
            f"{kind}_params: got {params!r}; valid: a dict of the {kind} "
            f"{entry.name!r}'s parameters"
        )
    if entry.params is not None:
        unknown = sorted(set(params) - set(entry.params))
        if unknown:
            raise ConfigError(
                f"{kind}_params: {kind} {entry.name!r} has no parameter {unknown[0]!r}; "
                f"valid: {', '.join(entry.params) or 'none'}"
            )
    try:
        json.dumps(dict(params), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{kind}_params: got {params!r}; valid: JSON values (they are saved with a model): "
            f"{exc}"
        ) from None
    return dict(params)


def make_reward(name: Any, params: Mapping[str, Any] | None = None) -> tuple[RewardFunction, Entry]:
    """The reward ``name`` with ``params`` bound: ``(fn(job, start) -> float, its entry)``.

    Raises:
        ConfigError: an unknown name, or a parameter the reward does not take.
    """
    entry = lookup("reward", name)
    bound = _checked_params(entry, "reward", params)
    function = entry.factory
    if not bound:
        return function, entry
    return (lambda job, start: function(job, start, **bound)), entry


def make_observation(
    name: Any, window: int, params: Mapping[str, Any] | None = None
) -> Observation:
    """The observation ``name`` for a window of ``window`` jobs, with ``params``.

    Raises:
        ConfigError: an unknown name, a parameter it does not take, or an observation
            without a positive integer ``size`` or with bounds that do not hold 0.
    """
    entry = lookup("observation", name)
    observation = entry.factory(window, **_checked_params(entry, "observation", params))
    size = getattr(observation, "size", None)
    low, high = getattr(observation, "low", None), getattr(observation, "high", None)
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
        raise ConfigError(f"observation {entry.name!r}: size: got {size!r}; valid: an integer >= 1")
    if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and low <= 0 <= high):
        raise ConfigError(
            f"observation {entry.name!r}: bounds low={low!r}, high={high!r}; valid: numbers "
            "with low <= 0 <= high (the terminal observation is all zeros)"
        )
    return observation  # type: ignore[no-any-return]


@dataclass(frozen=True)
class ModelSpec:
    """The observation and reward a model is trained with, by registered name (saved beside
    it: ``learned.save_learned``)."""

    observation: str = "default"
    observation_params: dict[str, Any] = field(default_factory=dict)
    reward: str = "bsld"
    reward_params: dict[str, Any] = field(default_factory=dict)
    reward_timing: str = "episode"

    def to_json(self) -> dict[str, Any]:
        """The spec as saved: ``{"observation": {"name", "params"}, "reward": {"name",
        "params", "timing"}}``."""
        return {
            "observation": {"name": self.observation, "params": dict(self.observation_params)},
            "reward": {
                "name": self.reward,
                "params": dict(self.reward_params),
                "timing": self.reward_timing,
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelSpec:
        """The spec :meth:`to_json` wrote; a file without it (saved before rewards and
        observations had names) gives the defaults, what such models were trained with.

        Raises:
            KeyError, TypeError: ``data`` is not what :meth:`to_json` writes.
        """
        observation = data.get("observation", {"name": "default"})
        reward = data.get("reward", {"name": "bsld"})
        return cls(
            observation=str(observation["name"]),
            observation_params=dict(observation.get("params", {})),
            reward=str(reward["name"]),
            reward_params=dict(reward.get("params", {})),
            reward_timing=str(reward.get("timing", "episode")),
        )


# ------------------------------------------------------------------ built-ins
def check_value_curves(jobs: Sequence[Job]) -> None:
    """Refuse ``reward="value"`` when a job has no value curve (it would earn 0 whatever
    is chosen: a reward that teaches nothing).

    Raises:
        ConfigError: naming the first such job, how many there are, and what is valid.
    """
    lacking = [job.job_id for job in jobs if job.payload.get("value_curve") is None]
    if lacking:
        raise ConfigError(
            f"reward: got 'value', but {len(lacking)} of {len(jobs)} jobs have no value curve "
            f"(job {lacking[0]} first), so they would earn 0 whatever is chosen; valid: bsld or "
            "wait, or market jobs (a market rule, apply_market_rule)"
        )


@register_reward("bsld", negate=True)
def bounded_slowdown(job: Job, start: float) -> float:
    """The job's bounded slowdown ``max(1, (wait + run) / max(run, 10))`` (a cost)."""
    return job_metric(job, start, "bsld")


@register_reward("wait", negate=True)
def wait(job: Job, start: float) -> float:
    """The job's wait in seconds (a cost)."""
    return job_metric(job, start, "wait")


@register_reward("value", check=check_value_curves)
def value(job: Job, start: float) -> float:
    """The value the job earns, finishing at ``start`` plus its run time (market jobs)."""
    return job_metric(job, start, "value")


@register_observation("default")
class DefaultObservation:
    """The window's job features, then the platform's (``dispatch.JOB_FEATURES``,
    ``dispatch.PLATFORM_FEATURES``), each in [-1, 1]: ``InstantDispatcher.observation``."""

    low, high = -1.0, 1.0

    def __init__(self, window: int) -> None:
        self.size = observation_size(window)

    def __call__(self, dispatcher: InstantDispatcher) -> np.ndarray:
        return dispatcher.observation()


__all__ = [
    "GROUP",
    "OBSERVATIONS",
    "REWARDS",
    "DefaultObservation",
    "Entry",
    "ModelSpec",
    "Observation",
    "check_value_curves",
    "load_plugins",
    "lookup",
    "make_observation",
    "make_reward",
    "register_observation",
    "register_reward",
]
