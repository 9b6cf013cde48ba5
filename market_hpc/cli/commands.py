"""``market-hpc``: the command line, thin over ``market_hpc.experiment``.

The parser lists every command; each group lives in its own module (``run_commands``:
run, replay, trace info; ``study_commands``: demo, sweep, report; ``tools``: trace
conversion and catalogue, export, plot; ``policies_cmd``, ``platforms_cmd``, ``audit_command``,
``slurm_check_command``), and
``startup`` prepares the imports of a simulating command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from market_hpc.cli.audit_command import add_audit_command
from market_hpc.cli.run_commands import add_run_commands
from market_hpc.cli.startup import IMPORT_PAUSE, prepare_imports, unfreeze
from market_hpc.cli.study_commands import add_demo_command, add_sweep_commands
from market_hpc.cli.tools import (
    add_catalogue_commands,
    add_convert_command,
    add_export_command,
    add_plot_command,
)
from market_hpc.errors import MarketHpcError, TraceFormatError


def _replay_choices() -> tuple[str, str, str, str]:
    """Platform presets, schedulers, allocators and bidders for ``replay --help`` (plugins
    included).

    Importing them loads numpy and every policy module, so only the ``replay`` command
    pays for it; ``market-hpc --help`` and the other commands start without.
    """
    from market_hpc.domain.platform import PRESETS
    from market_hpc.policies import allocator_names, bidder_names, scheduler_names
    from market_hpc.policies.registry import scheduler_families

    families = "".join(f"; or {family.name} ({family.summary})" for family in scheduler_families())
    return (
        ", ".join(PRESETS),
        ", ".join(scheduler_names()) + families,
        ", ".join(allocator_names()),
        ", ".join(bidder_names()),
    )


def build_parser(list_choices: bool = True) -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests).

    Args:
        list_choices: Name every preset, scheduler and allocator in ``replay``'s help
            (imports the policy registry); without, the help points to ``replay --help``.
    """
    from market_hpc import __version__

    if list_choices:
        presets, schedulers, allocators, bidders = _replay_choices()
    else:
        presets = schedulers = allocators = bidders = "see market-hpc replay --help"

    parser = argparse.ArgumentParser(
        prog="market-hpc",
        description="Simulate HPC dispatching under overload: market auctions with hold/resume, "
        "classic schedulers, trace replay.",
    )
    parser.add_argument("--version", action="version", version=f"market-hpc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    add_demo_command(sub)
    trace_sub = add_run_commands(sub, presets, schedulers, allocators, bidders)
    add_convert_command(trace_sub)
    add_catalogue_commands(trace_sub)
    add_sweep_commands(sub)
    add_export_command(sub)
    add_plot_command(sub)
    from market_hpc.cli.policies_cmd import add_policies_command

    add_policies_command(sub)
    from market_hpc.cli.platforms_cmd import add_platforms_command

    add_platforms_command(sub)
    add_audit_command(sub)
    from market_hpc.cli.slurm_check_command import add_slurm_check_command

    add_slurm_check_command(sub)
    from market_hpc.viz import add_viz_command

    add_viz_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``market-hpc`` and ``python -m market_hpc``."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    with IMPORT_PAUSE:  # ends a pause the run did not end (an error before it)
        prepare_imports(arguments)
        try:
            return _main(arguments, argv)
        finally:
            unfreeze()


def _main(arguments: list[str], argv: Sequence[str] | None) -> int:
    # (the choices are only read by ``replay --help``: listing them imports every family)
    parser = build_parser(
        list_choices="replay" in arguments and bool({"-h", "--help"} & set(arguments))
    )
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except MarketHpcError as exc:
        print(f"market-hpc: error: {exc}", file=sys.stderr)
        if (
            isinstance(exc, TraceFormatError)
            and exc.line is not None
            and getattr(args, "lenient", True) is False
        ):
            print(
                "market-hpc: hint: add --lenient to skip malformed lines and count them by kind",
                file=sys.stderr,
            )
        return 2
    except OSError as exc:
        if exc.filename is None:
            raise
        # A file the command could not write or read outside the checked results folder
        # (a sweep's tables, an export, a converted trace): one line, not a traceback.
        print(f"market-hpc: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("market-hpc: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
