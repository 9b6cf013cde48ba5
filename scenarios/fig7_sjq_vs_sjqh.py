"""Seed 002, Fig. 7: profit of each job under SJQ and SJQH (one 30-job set).

    python scenarios/fig7_sjq_vs_sjqh.py [--seed 1] [--jobs 30] [--curves spec|steep]
                                         [--shape linear_decay|step|exponential] [--out out/fig7]

Writes ``fig7.csv`` (job, profit under each policy, status, holds) and ``fig7.png``
(paired bars), and explains every zero: dropped while queued, or held and then dropped.
The figure's data are not in the paper's text; what it shows (spec checklist 6) is that
SJQH leaves more jobs with zero profit than SJQ, some of them held and then expired.
The script prints whether that holds for the chosen set.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from market_hpc.model import HPCModel
from market_hpc.workload.applications import CURVE_REGIMES, library_job_set
from market_hpc.workload.taskgraph_jobs import CURVE_SHAPES


def per_job(jobs, policy: str) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """One column block per policy: value, status and holds of every job."""
    model = HPCModel(jobs, "hlrs-3x9", policy, record_timeseries=False)
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")
    return frame[["value", "status", "hold_count"]].add_prefix(f"{policy}_")


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--load", type=float, default=2.0)
    parser.add_argument("--curves", choices=sorted(CURVE_REGIMES), default="spec",
                        help="value-curve regime (default: spec)")
    parser.add_argument("--shape", choices=CURVE_SHAPES, default="linear_decay",
                        help="value-curve shape (default: linear_decay)")
    parser.add_argument("--out", default="out/fig7")
    args = parser.parse_args(argv)
    jobs = library_job_set(args.jobs, args.seed, load=args.load, curves=args.curves, curve_shape=args.shape)
    table = per_job(jobs, "sjq").join(per_job(jobs, "sjqh"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "fig7.csv")
    for policy in ("sjq", "sjqh"):
        zeros = table[table[f"{policy}_value"] == 0]
        held = zeros[zeros[f"{policy}_hold_count"] > 0].index.tolist()
        queued = zeros[zeros[f"{policy}_hold_count"] == 0].index.tolist()
        print(f"{policy.upper()}: profit {table[f'{policy}_value'].sum():,.0f}, "
              f"{len(table) - len(zeros)} jobs with profit; zero profit: expired in the queue {queued}, "
              f"held then expired {held}")
    zeros = {policy: int((table[f"{policy}_value"] == 0).sum()) for policy in ("sjq", "sjqh")}
    print(f"Fig. 7 shape (more zero-profit jobs under SJQH than SJQ): "
          f"{'reproduced' if zeros['sjqh'] > zeros['sjq'] else 'not reproduced'} "
          f"({zeros['sjqh']} vs {zeros['sjq']}; {args.curves} curves, {args.shape}, seed {args.seed})")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.5))
    table[["sjq_value", "sjqh_value"]].rename(columns={"sjq_value": "SJQ", "sjqh_value": "SJQH"}).plot.bar(ax=ax)
    ax.set_xlabel("job")
    ax.set_ylabel("profit")
    ax.set_title("Profit by job, SJQ vs SJQH (cf. Singh et al. 2015, Fig. 7)")
    fig.tight_layout()
    fig.savefig(out / "fig7.png", dpi=120)
    plt.close(fig)
    print(f"wrote {out}/fig7.csv and fig7.png")
    return table


if __name__ == "__main__":
    main()
