"""The ``market-hpc`` command line: :mod:`~market_hpc.cli.commands` lists the commands,
:mod:`~market_hpc.cli.tools` holds the longer ones."""

from market_hpc.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
