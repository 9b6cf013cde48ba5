"""The one registry of schedulers, allocators and bidders.

A dispatcher is a scheduler (which job) composed with an allocator (where). Market
policies choose their node themselves by auction; they are registered as schedulers
with ``allocators=("max-bid",)``. Bidders price nodes in those auctions.

The built-in policies register when a name is first looked up, then the installed
plugins (entry point group ``market_hpc.policies``, :mod:`market_hpc.policies.plugins`).

>>> from market_hpc.policies import make_policy
>>> make_policy("fifo", "first-fit").name
'fifo+first-fit'
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.parameters import Param, declared_parameters
from market_hpc.policies.base import Allocator, Policy
from market_hpc.policies.capabilities import UNDECLARED, UNDECLARED_MARKET, Capabilities
from market_hpc.policies.params import check_params

SchedulerFactory = Callable[..., Policy]
AllocatorFactory = Callable[..., Allocator]
BidderFactory = Callable[..., Any]  # -> algorithms.bidding.Bidder
_Class = TypeVar("_Class", bound=type)


@dataclass(frozen=True)
class SchedulerEntry:
    """A registered scheduler.

    Attributes:
        name: Registry name (lower case, e.g. ``easy``).
        factory: ``factory(allocator, **params) -> Policy``.
        allocators: Allocators it accepts; ``None`` means every registered one.
        default_allocator: Used when none is given.
        summary: One line for ``--help`` and docs.
        market: Whether it is a market dispatcher (Singh et al.) (needs value curves).
        handles: What it handles (``policies.capabilities``); ``None``: undeclared.
        parameters: Its declared keyword parameters with their defaults (the class's
            ``parameters``, ``market_hpc.parameters``); ``None``: undeclared (a plugin's).
    """

    name: str
    factory: SchedulerFactory
    allocators: tuple[str, ...] | None
    default_allocator: str
    summary: str
    market: bool = False
    handles: Capabilities | None = None
    parameters: Mapping[str, Param] | None = None

    @property
    def family(self) -> str:
        """Its family (``classic``, ``cp``, ``bbsched``, ...: its capabilities'), ``plugin``
        when it declares none."""
        return self.capabilities.family or "plugin"

    @property
    def capabilities(self) -> Capabilities:
        """Its declared capabilities, or the assumed ones of an undeclared scheduler."""
        if self.handles is not None:
            return self.handles
        return UNDECLARED_MARKET if self.market else UNDECLARED


SCHEDULERS: dict[str, SchedulerEntry] = {}
SCHEDULER_FAMILIES: dict[str, SchedulerEntry] = {}
"""Schedulers named ``PREFIX:ARGUMENT`` (``learned:PATH``), by prefix; each entry's factory
is ``factory(allocator, argument, **params)``."""
ALLOCATORS: dict[str, tuple[AllocatorFactory, str]] = {}
BIDDERS: dict[str, tuple[BidderFactory, str]] = {}
MARKET_ONLY_ALLOCATORS: set[str] = set()
DECLARED: dict[str, dict[str, Mapping[str, Param] | None]] = {"allocator": {}, "bidder": {}}
"""The declared parameters of each allocator and bidder (a scheduler's are its entry's)."""


def _check_new(kind: str, name: str, factory: Any, known: dict[str, Any]) -> None:
    if not callable(factory):
        raise ConfigError(
            f"{kind} {name!r}: register_{kind} decorates a class or function, "
            f"got {type(factory).__name__}"
        )
    if name in known:
        previous = known[name]
        previous = previous.factory if isinstance(previous, SchedulerEntry) else previous[0]
        raise ConfigError(
            f"{kind} {name!r} is already registered (its factory: "
            f"{getattr(previous, '__module__', '?')}.{getattr(previous, '__qualname__', '?')})"
        )


@overload
def register_scheduler(name: _Class, /) -> _Class: ...


@overload
def register_scheduler(
    name: str,
    summary: str,
    *,
    allocators: tuple[str, ...] | None = None,
    default_allocator: str = "first-fit",
    market: bool = False,
    handles: Capabilities | None = None,
    parameters: Mapping[str, Param] | None = None,
) -> Callable[[SchedulerFactory], SchedulerFactory]: ...


def register_scheduler(
    name: str | type,
    summary: str | None = None,
    *,
    allocators: tuple[str, ...] | None = None,
    default_allocator: str = "first-fit",
    market: bool = False,
    handles: Capabilities | None = None,
    parameters: Mapping[str, Param] | None = None,
) -> Any:
    """Class/function decorator adding a scheduler to the registry.

    The factory is called as ``factory(allocator, **params)`` and returns an object with
    ``name`` and ``decide(view, rng) -> Decision`` (docs/extending.md). ``handles``
    declares what it handles (``policies.capabilities.handles(...)``); workloads needing
    something else are refused before the run. Undeclared schedulers are listed as such
    and assumed to handle what the built-ins of their kind do. Its keyword parameters are
    the class's ``parameters`` (``market_hpc.parameters``), or ``parameters`` for a factory
    function; without either they are undeclared and the factory checks them.

    Used bare (``@register_scheduler`` on a class), it reads the whole entry from the
    class's declarations (``PolicyBase``: ``label``, ``summary``, ``handles``,
    ``allocators``, ``default_allocator``, ``market``, ``parameters``).

    Raises:
        ConfigError: the name is taken, what is decorated is not callable, a bare use
            decorates a class without a ``label`` and ``summary``, or its declared
            parameters are not its constructor's keywords.
    """
    if isinstance(name, type):
        return _register_declared(name)
    text = _summary_given("scheduler", name, summary)

    def add(factory: SchedulerFactory) -> SchedulerFactory:
        _check_new("scheduler", name, factory, SCHEDULERS)
        declared = declared_parameters("scheduler", name, factory, parameters)
        SCHEDULERS[name] = SchedulerEntry(
            name, factory, allocators, default_allocator, text, market, handles, declared
        )
        return factory

    return add


def _register_declared(cls: _Class) -> _Class:
    """Register ``cls`` from its class attributes (``register_scheduler`` used bare)."""
    label, summary = getattr(cls, "label", ""), getattr(cls, "summary", "")
    if not label or not summary:
        raise ConfigError(
            f"scheduler class {cls.__qualname__!r}: a bare @register_scheduler needs the "
            f"class to declare label and summary (got {label!r}, {summary!r})"
        )
    register_scheduler(
        label,
        summary,
        allocators=getattr(cls, "allocators", None),
        default_allocator=getattr(cls, "default_allocator", "first-fit"),
        market=getattr(cls, "market", False),
        handles=getattr(cls, "handles", None),
    )(cls)
    return cls


def register_scheduler_family(
    prefix: str,
    summary: str,
    *,
    default_allocator: str = "first-fit",
    handles: Capabilities | None = None,
    argument: str = "ARGUMENT",
) -> Callable[[Callable[..., Policy]], Callable[..., Policy]]:
    """Decorator adding a family of schedulers named ``PREFIX:ARGUMENT`` (e.g.
    ``learned:models/ppo.zip``): ``scheduler_entry`` resolves any such name, so the
    argument (kept as written, case included) is part of the scheduler's name in configs,
    sweeps and reports. The factory is called as ``factory(allocator, argument, **params)``.
    Family members are not listed by ``scheduler_names()`` (there is one per argument);
    ``scheduler_families()`` lists the families, named ``PREFIX:`` + ``argument`` (the
    argument's placeholder, e.g. ``learned:PATH``).

    Raises:
        ConfigError: the prefix is taken or has a ``:``.
    """

    def add(factory: Callable[..., Policy]) -> Callable[..., Policy]:
        if ":" in prefix or prefix in SCHEDULER_FAMILIES:
            raise ConfigError(
                f"scheduler family {prefix!r}: a prefix without ':' that is not taken"
            )
        SCHEDULER_FAMILIES[prefix] = SchedulerEntry(
            f"{prefix}:{argument}", factory, None, default_allocator, summary, False, handles
        )
        return factory

    return add


def _family_member(name: str) -> SchedulerEntry | None:
    """The entry of ``PREFIX:ARGUMENT`` when ``PREFIX`` is a registered family."""
    prefix, colon, argument = name.partition(":")
    family = SCHEDULER_FAMILIES.get(prefix.lower()) if colon else None
    if family is None:
        return None
    if not argument:
        raise ConfigError(
            f"scheduler {name!r}: the {prefix.lower()} family needs an argument: "
            f"{prefix.lower()}:ARGUMENT ({family.summary})"
        )
    made = family.factory

    def factory(allocator: Allocator, **params: Any) -> Policy:
        return made(allocator, argument, **params)

    factory.__module__ = getattr(made, "__module__", __name__)
    factory.__qualname__ = getattr(made, "__qualname__", "factory")
    return dataclasses.replace(family, name=f"{prefix.lower()}:{argument}", factory=factory)


@overload
def register_allocator(name: _Class, /) -> _Class: ...


@overload
def register_allocator(
    name: str, summary: str, *, market_only: bool = False
) -> Callable[[AllocatorFactory], AllocatorFactory]: ...


def register_allocator(
    name: str | type, summary: str | None = None, *, market_only: bool = False
) -> Any:
    """Class/function decorator adding an allocator to the registry.

    ``market_only`` allocators (the auction's single-node ``max-bid``) are offered only to
    schedulers that list them explicitly. Used bare (``@register_allocator`` on a class),
    it reads the entry from the class: ``name``, ``summary``, ``market_only``, ``parameters``
    (and ``places``, what ``market-hpc policies`` says it places).

    Raises:
        ConfigError: the name is taken, what is decorated is not callable, or a bare use
            decorates a class without a ``name`` and ``summary``.
    """
    if isinstance(name, type):
        cls = name
        label, text = _declared_names("allocator", cls)
        return register_allocator(label, text, market_only=getattr(cls, "market_only", False))(cls)
    text = _summary_given("allocator", name, summary)

    def add(factory: AllocatorFactory) -> AllocatorFactory:
        _check_new("allocator", name, factory, ALLOCATORS)
        DECLARED["allocator"][name] = declared_parameters("allocator", name, factory)
        ALLOCATORS[name] = (factory, text)
        if market_only:
            MARKET_ONLY_ALLOCATORS.add(name)
        return factory

    return add


@overload
def register_bidder(name: _Class, /) -> _Class: ...


@overload
def register_bidder(name: str, summary: str) -> Callable[[BidderFactory], BidderFactory]: ...


def register_bidder(name: str | type, summary: str | None = None) -> Any:
    """Class/function decorator adding a market bidding strategy to the registry.

    The factory is called as ``factory(**params)`` and returns an object with ``name`` and
    ``bids(free, capacity, nodes) -> array`` (``market_hpc.algorithms.market.bidding.Bidder``).
    Used bare (``register_bidder(cls)``), it reads ``name``, ``summary`` and
    ``parameters`` from the class (and ``prices``, what ``market-hpc policies`` says it
    prices).

    Raises:
        ConfigError: the name is taken, what is decorated is not callable, or a bare use
            decorates a class without a ``name`` and ``summary``.
    """
    if isinstance(name, type):
        return register_bidder(*_declared_names("bidder", name))(name)
    text = _summary_given("bidder", name, summary)

    def add(factory: BidderFactory) -> BidderFactory:
        _check_new("bidder", name, factory, BIDDERS)
        DECLARED["bidder"][name] = declared_parameters("bidder", name, factory)
        BIDDERS[name] = (factory, text)
        return factory

    return add


def _declared_names(kind: str, cls: type) -> tuple[str, str]:
    """The ``name`` and ``summary`` an allocator or bidder class declares."""
    label, summary = getattr(cls, "name", ""), getattr(cls, "summary", "")
    if not isinstance(label, str) or not label or not summary:
        raise ConfigError(
            f"{kind} class {cls.__qualname__!r}: a bare @register_{kind} needs the class to "
            f"declare name and summary (got {label!r}, {summary!r})"
        )
    return label, summary


def _summary_given(kind: str, name: str, summary: str | None) -> str:
    if summary is None:
        raise ConfigError(f"{kind} {name!r}: register_{kind} needs a summary")
    return summary


BUILTIN_MODULES = (
    "allocators",
    "classic",
    "market.dispatchers",
    "hetero.allocators",
    "hetero.schedulers",
    "market.baselines",
    "bbsched.schedulers",
    "queues.dispatchers",
    "cp",
    "market.bidders",
    "slurm",
)
FAMILY_MODULES = ("market_hpc.rl.heuristics", "market_hpc.rl.learned")
"""Built-in policies whose family lives outside ``market_hpc.policies`` (full module names)."""
_loaded = False
_imported = 0  # BUILTIN_MODULES imported so far, in order (``_load_until``)
_BUILTIN_NAMES: list[str] = []  # the schedulers registered by BUILTIN_MODULES and FAMILY_MODULES


def _load_builtin() -> None:
    """Register the built-in policies, then the installed plugins (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True  # before loading: a plugin may look names up while it registers
    for module in BUILTIN_MODULES:  # importing the modules runs their register_* decorators
        importlib.import_module(f"market_hpc.policies.{module}")
    for module in FAMILY_MODULES:
        importlib.import_module(module)
    _BUILTIN_NAMES.extend(SCHEDULERS)
    from market_hpc.policies.plugins import load_plugins

    load_plugins(sys.modules[__name__])  # this module is the Registry the loader fills


def _load_until(table: Mapping[str, Any], key: str) -> None:
    """Import the built-in policy modules, in ``BUILTIN_MODULES`` order, until ``key`` is
    registered in ``table``; everything (``_load_builtin``: the families and the installed
    plugins too) when no built-in module registers it. A run of ``fifo`` imports the
    allocators and the classic schedulers only, not every family."""
    global _imported
    while not _loaded and key not in table:
        if _imported == len(BUILTIN_MODULES):
            _load_builtin()
            return
        _imported += 1  # (before importing: a module may look names up while it registers)
        importlib.import_module(f"market_hpc.policies.{BUILTIN_MODULES[_imported - 1]}")


def snapshot() -> tuple[frozenset[str], ...]:
    """The registered names, built-ins and plugins loaded first (to undo a plugin that
    failed half-way, or a test's registrations, with ``restore``)."""
    _load_builtin()
    return (
        frozenset(SCHEDULERS),
        frozenset(ALLOCATORS),
        frozenset(BIDDERS),
        frozenset(SCHEDULER_FAMILIES),
    )


_TABLES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("scheduler", SCHEDULERS),
    ("allocator", ALLOCATORS),
    ("bidder", BIDDERS),
    ("scheduler family", SCHEDULER_FAMILIES),
)


def added_since(names: tuple[frozenset[str], ...]) -> list[str]:
    """What was registered since ``snapshot()``, as ``["scheduler lff", ...]``."""
    return sorted(
        f"{kind} {name}"
        for (kind, table), kept in zip(_TABLES, names)
        for name in set(table) - kept
    )


def restore(names: tuple[frozenset[str], ...]) -> None:
    """Remove what was registered since ``snapshot()``."""
    for (_, table), kept in zip(_TABLES, names):
        for name in set(table) - kept:
            del table[name]
            MARKET_ONLY_ALLOCATORS.discard(name)
            for declared in DECLARED.values():
                declared.pop(name, None)


def _unknown(kind: str, name: str, choices: Any) -> UnknownNameError:
    from market_hpc.policies.plugins import failure_note

    return UnknownNameError(kind, name, choices, failure_note())


def parameters_of(kind: str, name: str) -> Mapping[str, Param] | None:
    """The declared parameters of a registered scheduler, allocator or bidder (``None``
    when it declares none, or no such name is registered: a plugin's factory checks its own).

    >>> parameters_of("scheduler", "bbsched")["exact_budget"].default
    4000000
    """
    key = name.lower()
    if kind == "scheduler":
        _load_until(SCHEDULERS, key)
        entry = SCHEDULERS.get(key)
        return entry.parameters if entry is not None else None
    _load_until(DECLARED[kind], key)
    return DECLARED[kind].get(key)


def scheduler_names() -> list[str]:
    """All registered scheduler names, sorted."""
    _load_builtin()
    return sorted(SCHEDULERS)


def scheduler_families() -> list[SchedulerEntry]:
    """The families of ``PREFIX:ARGUMENT`` schedulers (``learned:PATH``), by name."""
    _load_builtin()
    return sorted(SCHEDULER_FAMILIES.values(), key=lambda entry: entry.name)


def allocator_names() -> list[str]:
    """All registered allocator names, sorted."""
    _load_builtin()
    return sorted(ALLOCATORS)


def bidder_names() -> list[str]:
    """All registered bidder names, sorted."""
    _load_builtin()
    return sorted(BIDDERS)


def make_bidder(name: str, **params: Any) -> Any:
    """Instantiate a registered bidder by name (an ``algorithms.bidding.Bidder``).

    Raises:
        UnknownNameError: for an unknown name (lists the valid ones).
        ConfigError: for parameters the bidder does not take.
    """
    key = name.lower()
    _load_until(BIDDERS, key)
    if key not in BIDDERS:
        raise _unknown("bidder", name, BIDDERS)
    check_params("bidder", key, params, DECLARED["bidder"][key])
    try:
        return BIDDERS[key][0](**params)
    except TypeError as exc:
        raise ConfigError(f"bidder {key!r}: bad parameters {params}: {exc}") from None


def allocators_for(scheduler: str) -> list[str]:
    """The allocators a scheduler composes with, sorted."""
    entry = scheduler_entry(scheduler)
    if entry.allocators is not None:
        return sorted(entry.allocators)
    _load_builtin()
    return sorted(set(ALLOCATORS) - MARKET_ONLY_ALLOCATORS)


def scheduler_entry(name: str) -> SchedulerEntry:
    """Look up a scheduler; unknown names fail listing the known ones."""
    key = name.lower()
    _load_until(SCHEDULERS, key)
    if key not in SCHEDULERS:
        member = _family_member(name)
        if member is not None:
            return member
        raise _unknown("scheduler", name, SCHEDULERS)
    return SCHEDULERS[key]


def make_allocator(name: str, **params: Any) -> Allocator:
    """Instantiate a registered allocator by name."""
    key = name.lower()
    _load_until(ALLOCATORS, key)
    if key not in ALLOCATORS:
        raise _unknown("allocator", name, ALLOCATORS)
    check_params("allocator", key, params, DECLARED["allocator"][key])
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
        raise ConfigError(
            f"allocator {alloc_name!r}: bad parameters {allocator_params}: {exc}"
        ) from None
    composes = (
        alloc_name in entry.allocators
        if entry.allocators is not None
        else alloc_name not in MARKET_ONLY_ALLOCATORS  # (known: make_allocator registered it)
    )
    if not composes:
        raise ConfigError(
            f"scheduler {entry.name!r} does not work with allocator {alloc_name!r}; "
            f"valid choices: {', '.join(allocators_for(entry.name))}"
        )
    try:
        policy = entry.factory(alloc, **(scheduler_params or {}))
    except TypeError as exc:
        raise ConfigError(
            f"scheduler {entry.name!r}: bad parameters {scheduler_params}: {exc}"
        ) from None
    if not callable(getattr(policy, "decide", None)):
        raise ConfigError(
            f"scheduler {entry.name!r} ({getattr(entry.factory, '__module__', '?')}): its factory "
            f"returned a {type(policy).__name__}, which has no decide(view, rng) method"
        )
    return policy


def builtin_capabilities() -> dict[str, Capabilities]:
    """The built-in schedulers' declared capabilities by name, sorted (each class declares
    its own ``handles``; the matrix test pins them)."""
    _load_builtin()
    entries = (SCHEDULERS[name] for name in sorted(_BUILTIN_NAMES) if name in SCHEDULERS)
    return {entry.name: entry.handles for entry in entries if entry.handles is not None}


def capability_table() -> dict[str, Capabilities]:
    """Every registered scheduler's capabilities (declared or assumed), by name."""
    _load_builtin()
    return {name: entry.capabilities for name, entry in sorted(SCHEDULERS.items())}


def origin(factory: Any) -> str:
    """Where a registered factory comes from: ``built in`` or its distribution's name."""
    module = getattr(factory, "__module__", "") or ""
    if module == "market_hpc" or module.startswith("market_hpc."):
        return "built in"
    from importlib import metadata

    top = module.split(".")[0]
    dists = metadata.packages_distributions().get(top)
    return dists[0] if dists else f"module {module}"


def check_composition(scheduler: str, jobs: Any, platform: Any) -> None:
    """Refuse, before any simulation, a scheduler that lacks what ``jobs`` need.

    Args:
        scheduler: A registered scheduler name.
        jobs: The built workload (a sequence of ``Job``).
        platform: The ``Platform`` it runs on.

    Raises:
        ConfigError: naming the scheduler, what it lacks, how many jobs need it (with an
            example job id) and the registered schedulers that handle it.
    """
    from market_hpc.policies.capabilities import lacks, refusal, workload_needs

    entry = scheduler_entry(scheduler)
    needs = workload_needs(jobs, platform)
    if not lacks(entry.capabilities, needs, {}):
        return  # (the table of every scheduler only names the alternatives of a refusal)
    message = refusal(entry.name, entry.capabilities, needs, capability_table())
    if message is not None:
        raise ConfigError(message)
