"""RLScheduler's Table V protocol (Zhang et al., SC'20) on any SWF trace, under both
semantics side by side.

Sequences of 1,024 consecutive jobs, each run from an empty machine by every heuristic;
the score of a heuristic is the mean over the sequences of the sequence's mean bounded
slowdown max(1, (wait + run) / max(run, 10)).

    python examples/rlscheduler_table5.py                      # HPC2N, RLScheduler's draw
    python examples/rlscheduler_table5.py --trace T.swf --platform nodes=128,cores=1
    python examples/rlscheduler_table5.py --draw uniform --seed 0 --learned model.zip

--draw rlscheduler (default): RLScheduler's sequences, env.seed(SEED) with gym's 2019
seeding, then per sequence randint(JOBS, M - JOBS - 1), M = min(--draw-range, trace jobs)
(its make_table_script.py passes 10,000 for HPC2N and SDSC-SP2; Lublin-256 has 10,000
jobs). --draw uniform: the project's seeded uniform draw over the whole trace.

Columns: "project" (HPCModel and the registered schedulers: a head does not stick, EASY
backfilling), "rlscheduler" (market_hpc.rl.rlscheduler: the chosen job waits until it
fits, RLScheduler's backfilling; WFP3 and UNICEP read the real wait), "rlscheduler, its
wait" (WFP3 and UNICEP read RLScheduler's -1 - submit) and the published HPC2N figures.
The platform is the trace header's (MaxNodes nodes of MaxProcs / MaxNodes processors)
unless --platform names one; a platform narrower than the trace's widest job is refused.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from market_hpc.domain.platform import Platform, load_platform
from market_hpc.errors import ConfigError, MarketHpcError
from market_hpc.rl.evaluate import paired_table, run_slice, slice_starts
from market_hpc.rl.rlscheduler import (
    machine,
    project_jobs,
    read_rlscheduler_trace,
    rlscheduler_starts,
    sequence_bsld,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
TRACE = SHARED / "HPC2N-2002-2.1-cln.swf.gz"
PUBLISHED = {  # RLScheduler, Table V, HPC2N: bounded slowdown (its README's table)
    "fifo": 297.18,
    "wfp3": 426.99,
    "unicep": 609.77,
    "sjf": 157.71,
    "f1": 118.01,
    "easy": 127.38,
    "wfp3-easy": 97.39,
    "unicep-easy": 175.12,
    "sjf-easy": 122.04,
    "f1-easy": 71.95,
}
ROWS = {  # the project's scheduler: (RLScheduler's score, backfilling)
    "fifo": ("fcfs", False),
    "sjf": ("sjf", False),
    "f1": ("f1", False),
    "wfp3": ("wfp3", False),
    "unicep": ("unicep", False),
    "easy": ("fcfs", True),
    "sjf-easy": ("sjf", True),
    "f1-easy": ("f1", True),
    "wfp3-easy": ("wfp3", True),
    "unicep-easy": ("unicep", True),
}
SEMANTICS = ("both", "project", "rlscheduler")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trace", default=str(TRACE), help="SWF trace (default: %(default)s)")
    parser.add_argument(
        "--platform",
        default="",
        help="preset or nodes=N,cores=C (default: the trace header's MaxNodes and MaxProcs)",
    )
    parser.add_argument("--draw", choices=("rlscheduler", "uniform"), default="rlscheduler")
    parser.add_argument(
        "--draw-range",
        type=int,
        default=10_000,
        help="RLScheduler's batch_job_slice: sequences start below it (0: the whole trace)",
    )
    parser.add_argument("--semantics", choices=SEMANTICS, default="both")
    parser.add_argument("--sequences", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=1, help="RLScheduler's env.seed (default 1)")
    parser.add_argument(
        "--learned",
        action="append",
        default=[],
        help="a saved model (learned:PATH), project semantics; repeatable",
    )
    parser.add_argument("--out", default="", help="CSV of the per-sequence results")
    return parser


def _check_counts(args: argparse.Namespace) -> None:
    for name in ("sequences", "jobs"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name}: got {getattr(args, name)}; valid: an integer >= 1")
    if args.draw_range < 0 or args.seed < 0:
        raise ConfigError(
            f"--draw-range {args.draw_range}, --seed {args.seed}: valid: integers >= 0"
        )


def table5(args: argparse.Namespace) -> pd.DataFrame:
    """The per-sequence results (one row per sequence, semantics and policy)."""
    _check_counts(args)
    trace = read_rlscheduler_trace(args.trace)
    source = Path(args.trace).name
    platform: Platform | None = load_platform(args.platform) if args.platform else None
    nodes, per_node = machine(trace, platform, source)
    spec = platform if platform is not None else f"nodes={nodes},cores={per_node:g}"
    if args.draw == "rlscheduler":
        starts = rlscheduler_starts(
            len(trace), args.jobs, args.sequences, args.seed, args.draw_range
        )
    else:
        starts = slice_starts(len(trace), args.jobs, args.sequences, args.seed)
    print(
        f"{source}: {len(trace):,} jobs with run time > 0, machine {nodes} x {per_node:g}; "
        f"{args.draw} draw, sequences start at {starts}"
    )
    rows = []
    for start in starts:
        if args.semantics in ("both", "project"):
            jobs = project_jobs(trace, start, args.jobs)
            for name in [*ROWS, *(f"learned:{path}" for path in args.learned)]:
                rows.append(
                    {
                        "semantics": "project",
                        "policy": name,
                        "start": start,
                        "bsld": run_slice(jobs, spec, name)["bsld"],
                    }
                )
        if args.semantics in ("both", "rlscheduler"):
            for name, (score, backfill) in ROWS.items():
                waits = ["real", "rlscheduler"] if score in ("wfp3", "unicep") else ["real"]
                for wait in waits:
                    label = "rlscheduler" if wait == "real" else "rlscheduler, its wait"
                    value = sequence_bsld(
                        trace, start, args.jobs, score, backfill, nodes, per_node, wait
                    )
                    rows.append({"semantics": label, "policy": name, "start": start, "bsld": value})
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean per policy and semantics, beside the published HPC2N figures."""
    table = frame.pivot_table(index="policy", columns="semantics", values="bsld", aggfunc="mean")
    table["published (HPC2N)"] = [PUBLISHED.get(name, np.nan) for name in table.index]
    order = [name for name in [*ROWS, *sorted(table.index)] if name in table.index]
    return table.loc[list(dict.fromkeys(order))]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    began = time.perf_counter()
    try:
        frame = table5(args)
    except MarketHpcError as exc:
        print(f"rlscheduler_table5: error: {exc}", file=sys.stderr)
        return 2
    pd.set_option("display.width", 160)
    print(summary(frame).round(2).to_string())
    if "project" in set(frame["semantics"]):
        intervals = paired_table(frame[frame["semantics"] == "project"], "fifo")
        print("project semantics, 95 % t intervals over the sequences:")
        print(intervals[["mean", "ci_low", "ci_high"]].round(2).to_string())
    print(f"({time.perf_counter() - began:.0f} s)")
    if args.out:
        frame.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
