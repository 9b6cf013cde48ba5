#!/usr/bin/env python3
"""Write the figures README.md, docs/getting-started.md and docs/performance.md quote from
current runs, into the pages' generated blocks (``<!-- NAME:start -->`` .. ``<!-- NAME:end -->``).

    python scripts/docs_numbers.py                       # the fast blocks (a few seconds)
    python scripts/docs_numbers.py demo-time hpc2n-market   # the measured ones (minutes)
    python scripts/docs_numbers.py --list

Blocks (``fast`` ones are compared with a fresh run by ``tests/test_docs_numbers.py``;
the measured ones hold timings, which vary between runs and machines, so the test checks
only their deterministic counts and that they name the machine and the load):

* ``replay-example`` (getting-started): what ``market-hpc replay`` prints for the page's
  first replay (the bundled ``traces/lf-kth-like-2000.swf`` on ``kth-sp2``, EASY).
* ``demo-quick-line`` (getting-started): the minVRH - minVR line of ``market-hpc demo
  --quick`` (steep value curves), computed with the demo's own functions for those two
  policies only (each run is seeded by itself, so the numbers are the demo's).
* ``demo-time`` (README, getting-started): ``market-hpc demo`` in a child process: its run
  count, the wall time it prints and its CPU time (user + system, ``os.wait4``).
* ``overload-runs`` (README): the overload study's sweep commands with their run counts
  (expanding the sweep files reads the traces: about 25 s of CPU).
* ``penalty-sweep`` (performance): the penalty sweep's 240 runs on two workers, timed.
* ``hpc2n-market`` (performance): ``market-hpc run scenarios/hpc2n_market.toml`` in a child
  process: wall, CPU and peak RSS, decisions, total profit, holds (needs
  ``../shared/traces/``; about 30 s on an idle 2-core machine, minutes under load).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from doc_blocks import ROOT, write_block

README = ROOT / "README.md"
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
PERFORMANCE = ROOT / "docs" / "performance.md"
REPLAY_EXAMPLE = (
    "replay",
    "traces/lf-kth-like-2000.swf",
    "--platform",
    "kth-sp2",
    "--scheduler",
    "easy",
    "--allocator",
    "first-fit",
    "--out",
    "out/kth-easy",
)
REPLAY_SHOWN = (
    "jobs_total",
    "jobs_completed",
    "mean_wait",
    "mean_bounded_slowdown",
    "utilisation_cores",
)


@dataclass(frozen=True)
class Block:
    """A generated block: the pages it is written into and how its text is made."""

    pages: tuple[Path, ...]
    make: Callable[[], str]
    fast: bool


def replay_example() -> str:
    """The page's first replay, as printed (the metric lines the page shows, in order)."""
    from market_hpc.cli import main

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "kth-easy"
        argv = [*REPLAY_EXAMPLE[:-1], str(out)]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main(argv)
    if code != 0:
        raise RuntimeError(f"market-hpc {' '.join(argv)} exited {code}")
    lines = printed.getvalue().replace(str(out), REPLAY_EXAMPLE[-1]).splitlines()
    header = [line for line in lines if line.startswith("replay of ")]
    metrics = [line for line in lines if line.split()[:1] and line.split()[0] in REPLAY_SHOWN]
    written = [line for line in lines if line.startswith("results written to")]
    command = (
        "market-hpc " + " ".join(REPLAY_EXAMPLE[:4]) + " \\\n    " + " ".join(REPLAY_EXAMPLE[4:])
    )
    return "\n".join(
        ["```bash", command, "```", "", "```text", *header, *metrics, "  ...", *written, "```", ""]
    )


def demo_quick_line() -> str:
    """The minVRH - minVR line of ``market-hpc demo --quick`` under the steep value curves."""
    from market_hpc.experiment.stats import format_differences, paired_differences
    from market_hpc.studies.demo import LABELS, QUICK_SIZES, run_study

    table = run_study(QUICK_SIZES, 3, curves="steep", policies=("minvr", "minvrh"))
    diff = paired_differences(table, "policy", "total_profit", "seed", "minvr", ["minvrh"])
    line = format_differences(diff, LABELS)
    return (
        f"```text\n every holding variant earns more than its base (paper: always):\n{line}\n```\n"
    )


def _measured(argv: list[str], cwd: Path) -> tuple[str, float, float, int]:
    """Run ``argv`` as a child; its stdout, wall seconds, CPU seconds and peak RSS (kB)."""
    began = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{text}")
    return text, wall, usage.ru_utime + usage.ru_stime, int(usage.ru_maxrss)


def machine() -> str:
    """Where a timing was taken: date, cores, Python and the load average at the start."""
    load = os.getloadavg()[0]
    return (
        f"{date.today().isoformat()}, {os.cpu_count()} cores (`{platform.machine()}`, "
        f"Python {platform.python_version()}), load average {load:.1f} at the start"
    )


def demo_time() -> str:
    """``market-hpc demo``: its runs, printed wall time and CPU time."""
    where = machine()
    with tempfile.TemporaryDirectory() as scratch:
        text, wall, cpu, _ = _measured(
            [sys.executable, "-m", "market_hpc", "demo", "--out", str(Path(scratch) / "demo")], ROOT
        )
    runs = re.search(r"(\d[\d,]*) runs", text)
    printed = re.search(r" in ([\d.]+) s\s*$", text)
    if runs is None or printed is None:
        raise RuntimeError(f"market-hpc demo printed no run count or time:\n{text}")
    return (
        f"Measured by `python scripts/docs_numbers.py demo-time` ({where}): "
        f"{runs[1]} runs; the demo printed {float(printed[1]):.1f} s, the whole command took "
        f"{wall:.1f} s of wall time and {cpu:.1f} s of CPU (user + system). Wall time moves "
        "with the machine's load; CPU time much less.\n"
    )


def hpc2n_market() -> str:
    """``market-hpc run scenarios/hpc2n_market.toml``: time, memory and its key results."""
    where = machine()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "hpc2n-maxvh"
        _, wall, cpu, rss = _measured(
            [
                sys.executable,
                "-m",
                "market_hpc",
                "run",
                "scenarios/hpc2n_market.toml",
                "--out",
                str(out),
            ],
            ROOT,
        )
        summary = json.loads((out / "summary.json").read_text())
    return (
        "* `market-hpc run scenarios/hpc2n_market.toml` (HPC2N, "
        f"{summary['jobs_total']:,} jobs at 1.5x load, maxVH, {summary['decisions']:,} "
        f"decisions): **{wall:.1f} s wall**, {cpu:.1f} s CPU (user + system), peak RSS "
        f"{rss / 1024:,.0f} MB; total profit {summary['total_profit']:,.2f}, "
        f"{summary['holds']:,} holds, {summary['jobs_completed']:,} jobs completed, "
        f"{summary['jobs_dropped']:,} dropped. Measured by `python scripts/docs_numbers.py "
        f"hpc2n-market` ({where}).\n"
    )


def penalty_sweep() -> str:
    """``market-hpc sweep scenarios/penalty_sweep.toml --workers 2``: runs, wall and CPU time
    (the workers' CPU included: ``os.wait4`` counts the children the command waited for)."""
    where = machine()
    with tempfile.TemporaryDirectory() as scratch:
        text, wall, cpu, _ = _measured(
            [
                sys.executable,
                "-m",
                "market_hpc",
                "sweep",
                "scenarios/penalty_sweep.toml",
                "--workers",
                "2",
                "--out",
                str(Path(scratch) / "penalty"),
            ],
            ROOT,
        )
    runs = re.search(r": (\d[\d,]*) runs: (\d[\d,]*) done", text)
    if runs is None:
        raise RuntimeError(f"the sweep printed no run count:\n{text}")
    return (
        "* `market-hpc sweep scenarios/penalty_sweep.toml --workers 2` "
        f"({runs[1]} runs, {runs[2]} done, report included): **{wall:.1f} s wall**, "
        f"{cpu:.1f} s CPU (user + system, the workers included). Measured by "
        f"`python scripts/docs_numbers.py penalty-sweep` ({where}).\n"
    )


OVERLOAD_SWEEPS = (
    ("scenarios/overload_study.toml", False, ""),
    ("scenarios/overload_study.toml", True, "KTH-SP2 at 2x, both tracks: "),
    ("scenarios/overload_study_2x.toml", False, "all traces at 2x: "),
)


def overload_runs() -> str:
    """The overload study's sweep commands with their run counts (``load_sweep`` expands
    each file as ``market-hpc sweep`` does; it reads the traces, hence not a fast block)."""
    from market_hpc.experiment.sweep import load_sweep

    commands = [
        (
            f"market-hpc sweep {file}{' --quick' if quick else ''} --workers 2",
            f"{label}{len(load_sweep(ROOT / file, quick=quick).runs):,} runs",
        )
        for file, quick, label in OVERLOAD_SWEEPS
    ]
    width = max(len(command) for command, _ in commands)
    lines = [f"{command.ljust(width)}  # {count}" for command, count in commands]
    return "\n".join(
        [
            "```bash",
            *lines,
            "```",
            "",
            (
                "(Run counts written by `python scripts/docs_numbers.py overload-runs`; "
                "the sweeps' measured times are in `docs/overload.md`.)"
            ),
            "",
        ]
    )


BLOCKS: dict[str, Block] = {
    "replay-example": Block((GETTING_STARTED,), replay_example, fast=True),
    "demo-quick-line": Block((GETTING_STARTED,), demo_quick_line, fast=True),
    "demo-time": Block((README, GETTING_STARTED), demo_time, fast=False),
    "hpc2n-market": Block((PERFORMANCE,), hpc2n_market, fast=False),
    "overload-runs": Block((README,), overload_runs, fast=False),
    "penalty-sweep": Block((PERFORMANCE,), penalty_sweep, fast=False),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "blocks",
        nargs="*",
        metavar="BLOCK",
        help=f"blocks to regenerate ({', '.join(BLOCKS)}; default: the fast ones)",
    )
    parser.add_argument("--list", action="store_true", help="list the blocks and their pages")
    args = parser.parse_args()
    if args.list:
        for name, block in BLOCKS.items():
            pages = ", ".join(str(page.relative_to(ROOT)) for page in block.pages)
            print(f"{name}: {pages} ({'fast' if block.fast else 'measured'})")
        return 0
    unknown = [name for name in args.blocks if name not in BLOCKS]
    if unknown:
        parser.error(f"unknown block {unknown[0]!r}; valid: {', '.join(BLOCKS)}")
    chosen = args.blocks or [name for name, block in BLOCKS.items() if block.fast]
    for name in chosen:
        body = BLOCKS[name].make()
        for page in BLOCKS[name].pages:
            changed = write_block(page, name, body)
            print(f"{page.relative_to(ROOT)}: {name} {'rewritten' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
