"""``market-hpc platforms``: every platform preset with its node types and counts.

The command prints one Markdown table (aligned, so it reads in a terminal too); the same
table sits in ``docs/concepts.md`` and ``README.md`` between ``<!-- platform-table:start -->``
and ``<!-- platform-table:end -->``, written by ``scripts/platform_table.py`` and kept equal
by ``tests/test_platforms_command.py``.
"""

from __future__ import annotations

import argparse

HEADER = (
    "preset",
    "node type",
    "nodes",
    "cores/node",
    "GPUs/node",
    "MICs/node",
    "memory/node (GB)",
    "preset total",
    "burst buffer (GB)",
)
RIGHT_ALIGNED = frozenset({2, 3, 4, 5, 6, 8})
NOT_DEFINED = "-"
FOOTNOTE = (
    f"`{NOT_DEFINED}`: the preset defines none. A preset's total counts all its "
    "nodes; `--platform` also takes `nodes=N,cores=C[,gpus=G,mics=M,mem=GB,bb=GB]` "
    "or a TOML file."
)


def _count(value: float) -> str:
    return f"{value:,g}" if isinstance(value, float) else f"{value:,}"


def _defined(value: float) -> str:
    return _count(value) if value else NOT_DEFINED


def platform_rows() -> list[tuple[str, ...]]:
    """One row per node type of every preset, in ``PRESETS`` order: the preset's name,
    total and burst buffer on its first node type's row only."""
    # Imported here, not at the top: ``market-hpc --help`` imports this module and must not
    # load numpy (tests/test_startup.py).
    from market_hpc.domain.platform import MIB_PER_GB, PRESETS

    rows: list[tuple[str, ...]] = []
    for name, platform in PRESETS.items():
        total = platform.total
        parts = [f"{platform.n_nodes:,} nodes", f"{int(total[0]):,} cores"]
        parts += [
            f"{int(total[i]):,} {label}" for i, label in ((1, "GPUs"), (2, "MICs")) if total[i]
        ]
        for index, node in enumerate(platform.node_types):
            first = index == 0
            rows.append(
                (
                    f"`{name}`" if first else "",
                    node.name,
                    _count(node.count),
                    _count(node.cores),
                    _count(node.gpus),
                    _count(node.mics),
                    _defined(node.mem // MIB_PER_GB),
                    ", ".join(parts) if first else "",
                    _defined(platform.burst_buffer) if first else "",
                )
            )
    return rows


def platforms_table() -> list[str]:
    """The lines ``market-hpc platforms`` prints: an aligned Markdown table and a footnote."""
    rows = [HEADER, *platform_rows()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]

    def line(cells: tuple[str, ...]) -> str:
        padded = [
            cell.rjust(width) if i in RIGHT_ALIGNED else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (width + 1) + ":") if i in RIGHT_ALIGNED else "-" * (width + 2)
            for i, width in enumerate(widths)
        )
        + "|"
    )
    return [line(HEADER), rule, *(line(row) for row in rows[1:]), "", FOOTNOTE]


def cmd_platforms(args: argparse.Namespace) -> int:
    """Print the table."""
    print("\n".join(platforms_table()))
    return 0


def add_platforms_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``market-hpc platforms``."""
    command = sub.add_parser(
        "platforms",
        help="list every platform preset: node types, counts, cores, GPUs, MICs, "
        "memory, burst buffer",
        description="Print every platform preset (--platform NAME) as a Markdown table: one "
        "row per node type with its node count and per-node cores, GPUs, MICs and memory, "
        "and the preset's totals and burst buffer. --platform also takes an inline spec "
        "nodes=N,cores=C[,gpus=G,mics=M,mem=GB,bb=GB] or a TOML file.",
    )
    command.set_defaults(func=cmd_platforms)
