"""How a simulating command starts: Mesa imported first, no cyclic GC while importing,
and everything imported frozen out of the GC's sight before the one run of ``replay`` or
``run`` (``market_hpc.cli.commands.main`` and ``run_commands``)."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from contextlib import ExitStack

from market_hpc.gc_pause import gc_paused

SIMULATING_COMMANDS = frozenset({"replay", "run", "demo", "sweep"})
ONE_RUN_COMMANDS = frozenset({"replay", "run"})
GC_STATE = {"frozen": False}
IMPORT_PAUSE = ExitStack()
"""Holds ``gc_paused()`` from ``prepare_imports`` until ``collect_from_here`` closes it
(the run starts) or ``main`` returns (the run never started, e.g. an error before it)."""


def prepare_imports(arguments: Sequence[str]) -> None:
    """Start a command that simulates: Mesa first and, for one run, no cyclic GC while
    importing (``gc_paused`` held by ``IMPORT_PAUSE``, closed before the run).

    Mesa's logging helpers call ``inspect.stack()`` while Mesa is imported, and
    ``inspect.getmodule`` scans ``sys.modules`` once per frame on the stack: imported from
    here (few frames, few modules loaded) that costs ~0.1-0.25 s less than at the end of
    ``market_hpc.experiment``'s import chain. The imports of ``replay``/``run`` create
    next to no garbage, yet trigger full collections (15-50 ms each) as they allocate.
    ``--help`` and ``trace`` import neither Mesa nor anything else here.
    """
    if (
        not arguments
        or arguments[0] not in SIMULATING_COMMANDS
        or {"-h", "--help"} & set(arguments)
    ):
        return
    if arguments[0] in ONE_RUN_COMMANDS:
        IMPORT_PAUSE.enter_context(gc_paused())  # (a GC the caller turned off stays off)
    import mesa  # noqa: F401


def collect_from_here() -> None:
    """Before the one run of ``replay``/``run``: move everything imported out of the cyclic
    GC's sight (``gc.freeze``), so no collection during the run walks the modules again
    (~0.3-0.5 s of a KTH replay), and end the pause ``prepare_imports`` began."""
    if not gc.get_freeze_count():  # (a caller that froze objects itself keeps them frozen)
        gc.freeze()
        GC_STATE["frozen"] = True
    IMPORT_PAUSE.close()


def unfreeze() -> None:
    """Undo ``collect_from_here``'s freeze (for callers in process, e.g. tests: those
    objects collect again)."""
    if GC_STATE["frozen"]:
        GC_STATE["frozen"] = False
        gc.unfreeze()
