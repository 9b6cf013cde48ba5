"""The seed 004 study: every strategy on trace slices, metrics per period.

    python -m market_hpc.experiment.queues_study scenarios/queues.toml --out out/queues

runs ``scenarios/queues.toml`` once per strategy and per study (the scenario's own
trace slice, plus the overrides in ``STUDIES``), and writes ``periods.csv`` (one row per
strategy, study and period) and ``configs.csv`` (the configuration in force per period).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from market_hpc.experiment.config import QUEUE_STRATEGIES, load_scenario
from market_hpc.experiment.queues import BSLD_FLOOR, period_metrics  # noqa: F401 - re-exported

# Trace slices of the study: (name, overrides of the scenario).
STUDIES: dict[str, dict[str, Any]] = {
    "hpc2n": {},
    "curie": {"platform": "nodes=5040,cores=16",
              "workload.trace": "../../shared/traces/CEA-Curie-2011-2.1-cln.swf.gz",
              "workload.start": 32_000_000.0, "workload.end": 39_800_000.0},
}


# The paper's comparisons (§IV-B): (strategy, baseline, metric).
CLAIMS = (
    ("dpnlpm", "static", "mean_wait_h"), ("dpnlpm", "proportional", "mean_wait_h"),
    ("dqr", "dpnlpm", "mean_wait_h"), ("dqr", "static", "mean_wait_h"),
    ("hybrid", "static", "mean_wait_h"), ("hybrid", "static", "max_wait_h"),
    ("hybrid", "nonpartitioned", "mean_wait_h"), ("hybrid", "static", "bsld"),
    ("hybrid", "nonpartitioned", "bsld"), ("hybrid", "static", "utilisation"),
    ("hybrid", "dqr", "utilisation"),
)


def compare(table: pd.DataFrame) -> pd.DataFrame:
    """Relative change of a strategy against a baseline over the evaluated periods
    (period >= 1): mean and best (most negative for waits, largest for utilisation)
    of the per-period changes, and the periods where the strategy did better."""
    rows = []
    evaluated = table[table["period"] >= 1]
    for study, group in evaluated.groupby("study"):
        wide = group.pivot(index="period", columns="strategy")
        for strategy, baseline, metric in CLAIMS:
            if (metric, strategy) not in wide or (metric, baseline) not in wide:
                continue
            ours, base = wide[(metric, strategy)], wide[(metric, baseline)]
            change = (ours - base) / base.where(base != 0)
            better = (ours > base) if metric == "utilisation" else (ours < base)
            best = change.max() if metric == "utilisation" else change.min()
            rows.append({"study": study, "comparison": f"{strategy} vs {baseline}", "metric": metric,
                         "mean_change_pct": round(100 * float(change.mean()), 1),
                         "best_change_pct": round(100 * float(best), 1),
                         "periods_better": f"{int(better.sum())}/{len(better)}"})
    return pd.DataFrame(rows)


def run_study(scenario: Path, out: Path, studies: Sequence[str], strategies: Sequence[str]) -> pd.DataFrame:
    """Run every strategy on every study; write and return the per-period table."""
    from market_hpc.experiment.run import simulate

    out.mkdir(parents=True, exist_ok=True)
    rows, configs = [], []
    for study in studies:
        for strategy in strategies:
            config = load_scenario(scenario, {**STUDIES[study], "queues.strategy": strategy})
            began = time.perf_counter()
            result = simulate(config)
            seconds = time.perf_counter() - began
            summary = result.summary
            print(f"{study:6s} {strategy:15s} {seconds:7.1f} s (planning {summary['planning_seconds']:.1f} s, "
                  f"{summary['planning_simulations']} sample simulations)", flush=True)
            for row in summary["queue_periods"]:
                rows.append({"study": study, "strategy": strategy, **row, "run_seconds": seconds,
                             "planning_seconds": summary["planning_seconds"]})
            for entry in summary["queue_configs"]:
                configs.append({"study": study, "strategy": strategy, **entry})
    table = pd.DataFrame(rows)
    table.to_csv(out / "periods.csv", index=False)
    compare(table).to_csv(out / "claims.csv", index=False)
    pd.DataFrame(configs).to_csv(out / "configs.csv", index=False)
    (out / "studies.json").write_text(json.dumps(STUDIES, indent=2) + "\n")
    return table


def main(argv: Sequence[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--out", type=Path, default=Path("out/queues"))
    parser.add_argument("--studies", nargs="+", default=list(STUDIES), choices=list(STUDIES))
    parser.add_argument("--strategies", nargs="+", default=list(QUEUE_STRATEGIES), choices=QUEUE_STRATEGIES)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    table = run_study(args.scenario, args.out, args.studies, args.strategies)
    print(table.to_string(index=False))
    print(compare(table).to_string(index=False))
    print(f"study took {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
