"""The seed 003 study: scenarios/bbsched.toml, its metrics as the paper defines them.

Runs the sweep (``market-hpc sweep --keep-runs`` underneath; re-running resumes) and
times it, or reads the results of one, then writes into the results directory:

* ``study_runs.csv``: one row per run: trace, scenario, method, seed, node usage,
  burst-buffer usage, mean wait, mean slowdown, and their change against the baseline of
  the same workload and seed;
* ``study_table.csv``: the same, averaged over seeds (changes are of the seed means);
* ``study_summary.md``: per workload the eight methods side by side, then the paper's
  claims checked (best BB usage in how many workloads, largest BB-usage gain, largest
  wait reduction, node usage, every method beating the baseline on wait).

Metrics (paper §4.2, spec §6, A8, A18): over the measurement interval, the trace slice
minus a 15-day warm-up and a 15-day cool-down, node usage = node-seconds used in the
interval / (nodes x interval), burst-buffer usage likewise in GB-seconds; mean wait and
mean slowdown ((wait + run) / run) over jobs submitted in the interval, slowdown only
over jobs that ran at least 60 s (the paper filters "abnormal jobs" without saying how).

    python benchmarks/bbsched_study.py --out out/bbsched --workers 2
    python benchmarks/bbsched_study.py --out out/bbsched --no-run
    python benchmarks/bbsched_study.py --scenario scenarios/bbsched_pressure.toml --out out/bbsched_pressure
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "bbsched.toml"
METHODS = ["bb-baseline", "bbsched", "bb-weighted", "bb-weighted-cpu", "bb-weighted-bb",
           "bb-constrained-cpu", "bb-constrained-bb", "bb-binpacking"]
LABEL = {"bb-baseline": "Baseline", "bbsched": "BBSched", "bb-weighted": "Weighted",
         "bb-weighted-cpu": "Weighted_CPU", "bb-weighted-bb": "Weighted_BB",
         "bb-constrained-cpu": "Constrained_CPU", "bb-constrained-bb": "Constrained_BB",
         "bb-binpacking": "Bin_Packing"}
MACHINE = {"theta": "KTH-SP2 (Theta-like, WFP)", "cori": "HPC2N (Cori-like, FCFS)"}
MARGIN = 15 * 86400.0
MIN_RUN_FOR_SLOWDOWN = 60.0


def run_sweep(scenario: Path, out: Path, workers: int) -> float:
    """Run the sweep; return its wall time in seconds."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "market_hpc", "sweep", str(scenario), "--out", str(out),
                    "--workers", str(workers), "--keep-runs"], check=True, cwd=ROOT)
    return time.perf_counter() - began


def run_metrics(run_dir: Path) -> dict[str, float | str]:
    """The paper's four metrics of one run over its measurement interval."""
    jobs = pd.read_parquet(run_dir / "jobs.parquet")
    provenance = json.loads((run_dir / "config.json").read_text())
    workload = provenance["config"]["workload"]
    nodes = {"kth-sp2": 100, "hpc2n": 240}[provenance["config"]["platform"]]
    pool = provenance["workload"]["burst_buffer"]["capacity_gb"]
    begin, end = workload["start"] + MARGIN, workload["end"] - MARGIN
    started = jobs[jobs["start_time"].notna()]
    overlap = (np.minimum(started["end_time"], end) - np.maximum(started["start_time"], begin)).clip(lower=0)
    span = end - begin
    inside = jobs[(jobs["submit_time"] >= begin) & (jobs["submit_time"] < end) & (jobs["status"] == "finished")]
    long = inside[inside["run_time"] >= MIN_RUN_FOR_SLOWDOWN]
    rule = workload["burst_buffer"]
    return {
        "machine": rule["machine"], "scenario": rule["scenario"],
        "node_usage": float((started["cores"] * overlap).sum() / (nodes * span)),
        "bb_usage": float((started["bb"] * overlap).sum() / (pool * span)),
        "mean_wait": float(inside["wait_time"].mean()),
        "mean_slowdown": float(((long["wait_time"] + long["run_time"]) / long["run_time"]).mean()),
        "jobs_measured": len(inside),
    }


METRICS = ("node_usage", "bb_usage", "mean_wait", "mean_slowdown")


def run_table(out: Path) -> pd.DataFrame:
    """One row per run, with its change against the baseline of the same workload and seed."""
    results = pd.read_parquet(out / "results.parquet")
    rows = []
    for row in results.itertuples(index=False):
        if row.status != "ok":
            raise SystemExit(f"run {row.run_id} failed: {row.error}")
        metrics = run_metrics(out / "runs" / row.run_id)
        rows.append({"method": row.scheduler, "seed": row.seed,
                     "duration_s": row.duration_s, "solver_s": row.policy_solver_seconds,
                     "ga_runs": row.policy_ga_runs, "forced": row.policy_forced_starts, **metrics})
    return with_change(pd.DataFrame(rows), ["machine", "scenario", "seed"])


def with_change(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    base = table[table["method"] == "bb-baseline"].set_index(keys)
    for metric in METRICS:
        ref = base[metric].reindex(pd.MultiIndex.from_frame(table[keys])).to_numpy()
        table[f"{metric}_vs_base_pct"] = 100.0 * (table[metric].to_numpy() - ref) / ref
    return table


def study_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Seed means per workload and method, with their change against the baseline's mean."""
    keys = ["machine", "scenario", "method"]
    numeric = [c for c in ("duration_s", "solver_s", "ga_runs", "forced", *METRICS, "jobs_measured") if c in runs]
    table = runs.groupby(keys, as_index=False)[numeric].mean()
    table["seeds"] = runs.groupby(keys)["seed"].nunique().to_numpy()
    return with_change(table, ["machine", "scenario"])


def summary(table: pd.DataFrame, seconds: float | None) -> str:
    lines = ["# Seed 003 study: BBSched and seven baselines", ""]
    if seconds is not None:
        lines += [f"Sweep wall time: {seconds:.0f} s ({len(table)} workload x method points).", ""]
    for (machine, scenario), group in table.groupby(["machine", "scenario"], sort=True):
        lines += [f"## {MACHINE[machine]} {scenario}", "",
                  "| method | node usage | BB usage | mean wait (h) | mean slowdown | wait vs baseline |",
                  "|---|---|---|---|---|---|"]
        for method in METHODS:
            r = group[group["method"] == method].iloc[0]
            lines.append(f"| {LABEL[method]} | {100 * r.node_usage:.2f} % | {100 * r.bb_usage:.2f} % | "
                         f"{r.mean_wait / 3600:.2f} | {r.mean_slowdown:.1f} | {r.mean_wait_vs_base_pct:+.1f} % |")
        lines.append("")
    lines += claims(table)
    return "\n".join(lines) + "\n"


def claims(table: pd.DataFrame) -> list[str]:
    workloads = table.groupby(["machine", "scenario"])
    best_bb = sum(g.loc[g["bb_usage"].idxmax(), "method"] == "bbsched" for _, g in workloads)
    best_node = sum(g.loc[g["node_usage"].idxmax(), "method"] == "bbsched" for _, g in workloads)
    best_wait = sum(g.loc[g["mean_wait"].idxmin(), "method"] == "bbsched" for _, g in workloads)
    bbs = table[table["method"] == "bbsched"]
    others = table[~table["method"].isin(["bb-baseline"])]
    beat = int((others["mean_wait_vs_base_pct"] < 0).sum())
    bb_best = f"* BBSched has the best BB usage in {best_bb} of {workloads.ngroups} workloads (paper: 10 of 10)."
    bb_gain = (f"* BBSched's largest BB-usage gain over the baseline: {bbs['bb_usage_vs_base_pct'].max():+.2f} % "
               "relative (paper: up to +15.46 %).")
    wait = (f"* BBSched's largest wait reduction: {-bbs['mean_wait_vs_base_pct'].min():.1f} % "
            f"(paper: up to 41 % on Theta, 33.44 % on Cori); best wait in {best_wait} of {workloads.ngroups}.")
    node = (f"* BBSched has the best node usage in {best_node} of {workloads.ngroups} workloads (paper: 7 of 10); "
            f"largest node-usage gain {bbs['node_usage_vs_base_pct'].max():+.2f} % (paper: up to 20.03 %).")
    others_line = (f"* Methods beating the baseline's mean wait: {beat} of {len(others)} method x workload pairs "
                   "(paper: all).")
    return ["## The paper's claims, checked", "", bb_best, bb_gain, wait, node, others_line, ""]


def seed_lines(runs: pd.DataFrame) -> str:
    """How BBSched's change against the baseline varies across seeds."""
    bbs = runs[runs["method"] == "bbsched"]
    if bbs["seed"].nunique() < 2:
        return ""
    lines = ["## BBSched against the baseline, per seed (mean wait change %)", "",
             "| workload | " + " | ".join(f"seed {s}" for s in sorted(bbs["seed"].unique())) + " |",
             "|---|" + "---|" * bbs["seed"].nunique()]
    for (machine, scenario), group in bbs.groupby(["machine", "scenario"]):
        cells = " | ".join(f"{v:+.1f}" for v in group.sort_values("seed")["mean_wait_vs_base_pct"])
        lines.append(f"| {MACHINE[machine]} {scenario} | {cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", type=Path, default=SCENARIO, help="the sweep file (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bbsched")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-run", action="store_true", help="only read an existing sweep")
    args = parser.parse_args()
    seconds = None if args.no_run else run_sweep(args.scenario.resolve(), args.out, args.workers)
    runs = run_table(args.out)
    runs.to_csv(args.out / "study_runs.csv", index=False)
    table = study_table(runs)
    table.to_csv(args.out / "study_table.csv", index=False)
    text = summary(table, seconds) + seed_lines(runs)
    (args.out / "study_summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
