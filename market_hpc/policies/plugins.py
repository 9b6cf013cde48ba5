"""Third-party policies: installed packages that declare an entry point in the group
``market_hpc.policies``.

An entry point names a module, whose import runs its ``register_scheduler`` /
``register_allocator`` / ``register_bidder`` decorators, or a function, called with no
arguments, that registers them::

    [project.entry-points."market_hpc.policies"]
    my-policies = "my_package.policies"

The registry loads every plugin once, after the built-in policies, the first time a name
is looked up, in every process that looks one up (Dask workers included). A plugin that
fails (its import raises, it names neither a module nor a function, it registers nothing,
or it takes a name already registered) is undone, reported with a ``PluginWarning``
naming it and its entry point, and listed by ``plugin_failures()`` and in the
unknown-name errors; the other policies stay available. See docs/extending.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from importlib import metadata
from types import ModuleType
from typing import Protocol

from market_hpc.errors import MarketHpcError, PluginError

GROUP = "market_hpc.policies"
_FAILURES: list[PluginError] = []
_LOADED: list[str] = []


class PluginWarning(UserWarning):
    """A policy plugin failed to load; the message names it and its entry point."""


class Registry(Protocol):
    """What loading needs of the registry (``market_hpc.policies.registry`` itself, passed
    in by it: this module does not import it)."""

    def snapshot(self) -> tuple[frozenset[str], ...]: ...
    def added_since(self, names: tuple[frozenset[str], ...]) -> list[str]: ...
    def restore(self, names: tuple[frozenset[str], ...]) -> None: ...


def _label(entry_point: metadata.EntryPoint) -> str:
    return f"{entry_point.name} = {entry_point.value}"


def _distribution(entry_point: metadata.EntryPoint) -> str | None:
    dist = getattr(entry_point, "dist", None)
    return None if dist is None else f"{dist.metadata['Name']} {dist.version}"


def load_plugin(entry_point: metadata.EntryPoint, registry: Registry) -> list[str]:
    """Load one plugin into ``registry``; return what it registered (``["scheduler saf", ...]``).

    Raises:
        PluginError: naming the entry point and its package; whatever the plugin
            registered before it failed is removed again.
    """
    before = registry.snapshot()
    try:
        target = entry_point.load()
        if not isinstance(target, ModuleType):
            if not callable(target) or isinstance(target, type):
                raise PluginError(
                    _label(entry_point),
                    _distribution(entry_point),
                    f"names a {type(target).__name__}; it must name a module or a "
                    "function that registers policies",
                )
            target()
        added = registry.added_since(before)
        if not added:
            raise PluginError(
                _label(entry_point),
                _distribution(entry_point),
                "registered no scheduler, allocator or bidder",
            )
    except Exception as exc:  # a third-party import may raise anything: report it, keep the rest
        registry.restore(before)
        if isinstance(exc, PluginError):
            raise
        what = str(exc) if isinstance(exc, MarketHpcError) else f"{type(exc).__name__}: {exc}"
        raise PluginError(_label(entry_point), _distribution(entry_point), what) from exc
    return added


def load_plugins(
    registry: Registry, entry_points: Iterable[metadata.EntryPoint] | None = None
) -> list[PluginError]:
    """Load every plugin of ``GROUP`` (or the given entry points) into ``registry``;
    return the failures.

    Each failure is also reported as a ``PluginWarning`` and kept for ``plugin_failures()``.
    """
    found = metadata.entry_points(group=GROUP) if entry_points is None else entry_points
    failures = []
    for entry_point in sorted(found, key=lambda ep: ep.name):
        try:
            load_plugin(entry_point, registry)
        except PluginError as exc:
            failures.append(exc)
            _FAILURES.append(exc)
            warnings.warn(str(exc), PluginWarning, stacklevel=2)
        else:
            _LOADED.append(_label(entry_point))
    return failures


def plugin_failures() -> list[PluginError]:
    """The plugins that failed to load in this process (each names its entry point)."""
    return list(_FAILURES)


def loaded_plugins() -> list[str]:
    """The entry points loaded in this process, as ``name = module:object``."""
    return list(_LOADED)


def failure_note() -> str:
    """A sentence for unknown-name errors: which plugins failed to load (or nothing)."""
    if not _FAILURES:
        return ""
    return "; plugins that failed to load: " + "; ".join(str(exc) for exc in _FAILURES)
