"""RLScheduler's Table V protocol (Zhang et al., SC'20) on HPC2N, with this project's schedulers.

10 sequences of 1,024 consecutive jobs, sampled uniformly from the trace (seeded), each
run from an empty machine by every scheduler; the score of a scheduler is the mean over
the sequences of the sequence's mean bounded slowdown max(1, (wait + run) / max(run, 10)).

    python examples/rlscheduler_table5.py                       # the heuristics
    python examples/rlscheduler_table5.py --learned model.zip    # and a trained dispatcher

Prints the table beside the published figures and writes it as CSV (--out). The
differences are discussed in docs/learned-dispatchers.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from market_hpc.rl.evaluate import evaluate, paired_table, slice_starts
from market_hpc.workload.swf import read_swf

TRACE = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "HPC2N-2002-2.1-cln.swf.gz"
PUBLISHED = {  # RLScheduler, Table V, HPC2N: bounded slowdown
    "fifo": 297.18, "sjf": 157.71, "f1": 118.01, "RL (RLScheduler)": 117.01,
    "easy": 127.38, "sjf-easy": 122.04, "f1-easy": 71.95, "RL (RLScheduler) + backfilling": 86.14,
}
NO_BACKFILL = ["fifo", "sjf", "f1", "wfp3", "unicep"]
BACKFILL = ["easy", "sjf-easy", "f1-easy", "wfp3-easy", "unicep-easy"]


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", default=str(TRACE), help="HPC2N SWF trace (default: %(default)s)")
    parser.add_argument("--sequences", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learned", action="append", default=[], help="a saved model (learned:PATH); repeatable")
    parser.add_argument("--out", default="", help="CSV of the per-sequence results")
    args = parser.parse_args(argv)

    began = time.perf_counter()
    # RLScheduler keeps the jobs whose run time is positive.
    jobs = [job for job in read_swf(args.trace).jobs if job.run_time > 0]
    starts = slice_starts(len(jobs), args.jobs, args.sequences, args.seed)
    names = NO_BACKFILL + BACKFILL + [f"learned:{path}" for path in args.learned]
    frame = evaluate(jobs, "hpc2n", {name: name for name in names}, starts, args.jobs, label=Path(args.trace).name)
    table = paired_table(frame, "fifo")
    table["published"] = [PUBLISHED.get(name, float("nan")) for name in table.index]
    order = [name for name in names if name in table.index]
    table = table.loc[order]
    pd.set_option("display.width", 160)
    print(f"{len(jobs)} jobs with run time > 0; sequences start at {starts}")
    print(table[["mean", "ci_low", "ci_high", "published"]].round(2).to_string())
    print(f"({time.perf_counter() - began:.0f} s)")
    if args.out:
        frame.to_csv(args.out, index=False)
    return table


if __name__ == "__main__":
    main()
