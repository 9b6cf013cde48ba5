"""Broken policy plugins for tests/test_plugins.py, reached through real
``importlib.metadata.EntryPoint`` objects (``plugin_cases:NAME``)."""

from __future__ import annotations

from market_hpc.policies.classic import Fifo
from market_hpc.policies.registry import register_scheduler

NOT_A_POLICY = {"scheduler": "saf"}  # an entry point must name a module or a function


def register_nothing() -> None:
    """A plugin function that forgets to register anything."""


def register_a_duplicate() -> None:
    """Registers a new scheduler, then one under a built-in name: the second fails, and
    the first must be undone with it."""
    register_scheduler("half-registered", "registered before the failure")(Fifo)
    register_scheduler("easy", "a second easy")(Fifo)


def register_fine() -> None:
    """A working plugin function."""
    register_scheduler("fifo-again", "FIFO under another name (plugin function)")(Fifo)
