"""``market-hpc policies``: every scheduler, allocator and bidder with its summary, its
family, what it handles and where it comes from (built in, or a plugin's distribution).
A family of schedulers named ``PREFIX:ARGUMENT`` is listed once, by its placeholder
(``learned:PATH``), among the schedulers."""

from __future__ import annotations

import argparse
from collections.abc import Collection


def policies_listing() -> list[str]:
    """The lines ``market-hpc policies`` prints."""
    # Imported here, not at the top: ``market-hpc --help`` imports this module and must not
    # load numpy (tests/test_startup.py).
    from market_hpc.policies import registry
    from market_hpc.policies.capabilities import UNDECLARED_TEXT

    registry.scheduler_names()  # loads the built-ins and the plugins
    lines = ["schedulers (name [family; origin]: summary / handles / allocators):"]
    entries = [*registry.SCHEDULERS.values(), *registry.scheduler_families()]
    for entry in sorted(entries, key=lambda entry: entry.name):
        caps = entry.capabilities
        allocators = (
            sorted(entry.allocators)
            if entry.allocators is not None
            else sorted(set(registry.ALLOCATORS) - registry.MARKET_ONLY_ALLOCATORS)
        )
        lines.append(
            f"  {entry.name} [{entry.family}; {registry.origin(entry.factory)}]: {entry.summary}"
        )
        lines.append(f"      handles: {caps.describe()}")
        lines.append(
            f"      allocators: {', '.join(allocators)} (default {entry.default_allocator})"
        )
    lines.append("allocators (name [origin]: summary / places):")
    for name, (factory, summary) in sorted(registry.ALLOCATORS.items()):
        lines.append(f"  {name} [{registry.origin(factory)}]: {summary}")
        lines.append(f"      places: {getattr(factory, 'places', None) or UNDECLARED_TEXT}")
    lines.append("bidders (name [origin]: summary / prices):")
    for name, (factory, summary) in sorted(registry.BIDDERS.items()):
        lines.append(f"  {name} [{registry.origin(factory)}]: {summary}")
        lines.append(f"      prices: {getattr(factory, 'prices', None) or UNDECLARED_TEXT}")
    return lines


def parameter_listing(name: str) -> list[str]:
    """The lines ``market-hpc policies NAME`` prints: each declared keyword parameter of
    the scheduler, allocator or bidder ``name`` with its type, what is valid and its default
    (read from the class's ``parameters``, ``market_hpc.parameters``).

    Raises:
        UnknownNameError: no scheduler, allocator or bidder has that name (the schedulers
            listed).
    """
    from market_hpc.policies import registry

    registry.scheduler_names()
    key = name.lower()
    kinds: list[tuple[str, Collection[str]]] = [
        ("scheduler", registry.SCHEDULERS),
        ("allocator", registry.ALLOCATORS),
        ("bidder", registry.BIDDERS),
    ]
    kind = next((kind for kind, names in kinds if key in names), None)
    if kind is None:
        registry.scheduler_entry(name)  # a family member, or the unknown-name error
        kind = "scheduler"
    declared = registry.parameters_of(kind, key)
    lines = [_headline(kind, name), f"{kind} {key} parameters (name: type; valid; default):"]
    if declared is None:
        lines.append("  undeclared (a plugin's: its factory checks them)")
    elif not declared:
        lines.append("  none")
    for parameter, param in (declared or {}).items():
        lines.append(
            f"  {parameter}: {param.kind}; {param.describe()}; default {param.default_text()}"
        )
    return lines


def _headline(kind: str, name: str) -> str:
    """``KIND NAME [FAMILY; ORIGIN]: SUMMARY`` (a scheduler's family; allocators and bidders
    have none)."""
    from market_hpc.policies import registry

    if kind == "scheduler":
        entry = registry.scheduler_entry(name)
        return (
            f"scheduler {entry.name} [{entry.family}; {registry.origin(entry.factory)}]: "
            f"{entry.summary}"
        )
    factory, summary = (registry.ALLOCATORS if kind == "allocator" else registry.BIDDERS)[
        name.lower()
    ]
    return f"{kind} {name.lower()} [{registry.origin(factory)}]: {summary}"


def cmd_policies(args: argparse.Namespace) -> int:
    """Print the listing, or one policy's parameters."""
    name = getattr(args, "name", None)
    print("\n".join(parameter_listing(name) if name else policies_listing()))
    return 0


def add_policies_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``market-hpc policies``."""
    command = sub.add_parser(
        "policies",
        help="list every scheduler, allocator and bidder: what it handles, where it comes from",
    )
    command.add_argument(
        "name", nargs="?", help="a scheduler, allocator or bidder: list its parameters"
    )
    command.set_defaults(func=cmd_policies)
