"""The one registry of schedulers and allocators.

A dispatcher is a scheduler (which job) composed with an allocator (where). Market
policies choose their node themselves by auction; they are registered as schedulers
with ``allocators=("max-bid",)``.

>>> from market_hpc.policies import make_policy
>>> make_policy("fifo", "first-fit").name
'fifo+first-fit'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.policies.base import Allocator, Policy

SchedulerFactory = Callable[..., Policy]
AllocatorFactory = Callable[..., Allocator]


@dataclass(frozen=True)
class SchedulerEntry:
    """A registered scheduler.

    Attributes:
        name: Registry name (lower case, e.g. ``easy``).
        factory: ``factory(allocator, **params) -> Policy``.
        allocators: Allocators it accepts; ``None`` means every registered one.
        default_allocator: Used when none is given.
        summary: One line for ``--help`` and docs.
        market: Whether it is a seed 002 market dispatcher (needs value curves).
    """

    name: str
    factory: SchedulerFactory
    allocators: tuple[str, ...] | None
    default_allocator: str
    summary: str
    market: bool = False


SCHEDULERS: dict[str, SchedulerEntry] = {}
ALLOCATORS: dict[str, tuple[AllocatorFactory, str]] = {}
MARKET_ONLY_ALLOCATORS: set[str] = set()


def register_scheduler(
    name: str,
    summary: str,
    *,
    allocators: tuple[str, ...] | None = None,
    default_allocator: str = "first-fit",
    market: bool = False,
) -> Callable[[SchedulerFactory], SchedulerFactory]:
    """Class/function decorator adding a scheduler to the registry."""

    def add(factory: SchedulerFactory) -> SchedulerFactory:
        if name in SCHEDULERS:
            raise ValueError(f"scheduler {name!r} registered twice")
        SCHEDULERS[name] = SchedulerEntry(name, factory, allocators, default_allocator, summary, market)
        return factory

    return add


def register_allocator(
    name: str, summary: str, *, market_only: bool = False
) -> Callable[[AllocatorFactory], AllocatorFactory]:
    """Class/function decorator adding an allocator to the registry.

    ``market_only`` allocators (the auction's single-node ``max-bid``) are offered only to
    schedulers that list them explicitly.
    """

    def add(factory: AllocatorFactory) -> AllocatorFactory:
        if name in ALLOCATORS:
            raise ValueError(f"allocator {name!r} registered twice")
        ALLOCATORS[name] = (factory, summary)
        if market_only:
            MARKET_ONLY_ALLOCATORS.add(name)
        return factory

    return add


BUILTIN_MODULES = ("allocators", "classic", "market", "hetero", "hetero_schedulers", "market_baselines",
                   "bbsched", "queues", "cp")


def _load_builtin() -> None:
    # Importing the modules runs their register_* decorators.
    for module in BUILTIN_MODULES:
        importlib.import_module(f"market_hpc.policies.{module}")


def scheduler_names() -> list[str]:
    """All registered scheduler names, sorted."""
    _load_builtin()
    return sorted(SCHEDULERS)


def allocator_names() -> list[str]:
    """All registered allocator names, sorted."""
    _load_builtin()
    return sorted(ALLOCATORS)


def allocators_for(scheduler: str) -> list[str]:
    """The allocators a scheduler composes with, sorted."""
    entry = scheduler_entry(scheduler)
    if entry.allocators is not None:
        return sorted(entry.allocators)
    return sorted(set(ALLOCATORS) - MARKET_ONLY_ALLOCATORS)


def scheduler_entry(name: str) -> SchedulerEntry:
    """Look up a scheduler; unknown names fail listing the known ones."""
    _load_builtin()
    key = name.lower()
    if key not in SCHEDULERS:
        raise UnknownNameError("scheduler", name, SCHEDULERS)
    return SCHEDULERS[key]


def make_allocator(name: str, **params: Any) -> Allocator:
    """Instantiate a registered allocator by name."""
    _load_builtin()
    key = name.lower()
    if key not in ALLOCATORS:
        raise UnknownNameError("allocator", name, ALLOCATORS)
    return ALLOCATORS[key][0](**params)


def make_policy(
    scheduler: str,
    allocator: str | None = None,
    scheduler_params: dict[str, Any] | None = None,
    allocator_params: dict[str, Any] | None = None,
) -> Policy:
    """Compose a scheduler with an allocator into a dispatcher.

    Raises:
        UnknownNameError: for an unknown scheduler or allocator (lists the valid names).
        ConfigError: when the scheduler does not work with that allocator.
    """
    entry = scheduler_entry(scheduler)
    alloc_name = (allocator or entry.default_allocator).lower()
    try:
        alloc = make_allocator(alloc_name, **(allocator_params or {}))
    except TypeError as exc:
        raise ConfigError(f"allocator {alloc_name!r}: bad parameters {allocator_params}: {exc}") from None
    valid = allocators_for(entry.name)
    if alloc_name not in valid:
        raise ConfigError(
            f"scheduler {entry.name!r} does not work with allocator {alloc_name!r}; "
            f"valid choices: {', '.join(valid)}"
        )
    try:
        return entry.factory(alloc, **(scheduler_params or {}))
    except TypeError as exc:
        raise ConfigError(f"scheduler {entry.name!r}: bad parameters {scheduler_params}: {exc}") from None
