"""Every-step against event timing of the market dispatchers: paired 95 % intervals of
total profit (every-step minus event) on the demo's job sets.

    PYTHONPATH=. python benchmarks/market_timing.py [--seeds 1 2 3] [--sizes 10 25 50 100]

Job sets: the demo's (``hlrs-3x9``, HLRS-like task graphs at load 2, the spec value
curves); each seed's job set runs under every market policy twice, deciding only at
events (the default) and at every integer time step while jobs wait (``every_step``,
the paper's loop). Runs of one seed are paired (``experiment.stats.paired_differences``).
Prints a Markdown table (docs/market.md, "Decision timing").
"""

from __future__ import annotations

import argparse
import math
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pandas as pd

from market_hpc.policies.market.dispatchers import MARKET_SCHEDULERS

MARKET = MARKET_SCHEDULERS


def run(case: tuple[str, int, int, bool]) -> dict[str, Any]:
    """Total profit and decision count of one run."""
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate

    policy, size, seed, every_step = case
    result = simulate(
        config_from_dict(
            {
                "name": "timing",
                "platform": "hlrs-3x9",
                "seed": seed,
                "timeseries": False,
                "workload": {"generator": "taskgraphs", "jobs": size, "load": 2.0},
                "policy": {"scheduler": policy, "every_step": every_step},
            }
        )
    )
    return {
        "policy": policy,
        "jobs": size,
        "seed": seed,
        "timing": "every_step" if every_step else "event",
        "total_profit": result.summary["total_profit"],
        "decisions": result.summary["decisions"],
    }


def main() -> None:
    from market_hpc.experiment.stats import paired_differences

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 25, 50, 100])
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    cases = [
        (p, n, s, e) for n in args.sizes for p in MARKET for s in args.seeds for e in (False, True)
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        runs = pd.DataFrame(list(pool.map(run, cases, chunksize=4)))
    print(
        "| jobs | policy | seeds | event profit | every-step - event (95 % CI) | relative | "
        "verdict | "
        "decisions event / every-step |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (size, policy), group in runs.groupby(["jobs", "policy"], sort=False):
        row = paired_differences(group, "timing", "total_profit", "seed", baseline="event").iloc[0]
        mean = group[group.timing == "event"].total_profit.mean()
        decisions = group.groupby("timing").decisions.mean()
        interval = (
            f"[{row.ci_low:+,.0f}, {row.ci_high:+,.0f}]"
            if math.isfinite(row.ci_low)
            else "(no interval: every pair differs alike)"
        )
        print(
            f"| {size} | {policy} | {row.seeds} | {mean:,.0f} | {row.mean_diff:+,.0f} {interval} | "
            f"{100 * row.rel_mean:+.1f} % | {row.verdict} | "
            f"{decisions['event']:.0f} / {decisions['every_step']:.0f} |"
        )


if __name__ == "__main__":
    main()
