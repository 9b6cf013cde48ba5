"""The seed 003 study: the eight methods in the paper's BB-bound regime, with CIs.

Runs (or reads) three sweeps, ``scenarios/bbsched_<name>.toml`` into
``out/bbsched_<name>`` (``market-hpc sweep --keep-runs``; re-running resumes):

* ``regime``: 8 methods x S1-S4 x 2 traces x 5 seeds, pools sized so S4 offers an
  expected BB load of 0.9 on KTH-SP2 and 0.95 on HPC2N
  (``workload.burst_buffer.target_load``);
* ``table3``: BBSched at w = 10 and 50 on S4 (w = 20 comes from ``regime``);
* ``nostarve``: the baseline and BBSched on S4 without the starvation bound;

then writes into ``out/bbsched_regime``: ``study_runs.csv`` (one row per run: metrics,
offered and achieved loads, the policy's counts), ``study_paired.csv`` (every method
against the baseline of the same workload, paired by seed: mean difference and 95 %
t-interval, absolute and relative) and ``study_summary.md`` (regime check, per-workload
tables with CIs, BBSched's mechanism counts, Table 3, the no-bound runs, claims).

Metrics (paper §4.2, spec §6, A8, A18): over the slice minus a 15-day warm-up and a
15-day cool-down, node usage = node-seconds used / (nodes x interval), BB usage likewise
in GB-seconds; mean wait and mean slowdown ((wait + run) / run, jobs of >= 60 s) over
the jobs submitted in the interval.

    nice python benchmarks/bbsched_study.py --workers 2            # run + tables
    python benchmarks/bbsched_study.py --no-run                      # tables only
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.experiment.stats import paired_differences

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = ("regime", "table3", "nostarve")
METHODS = [
    "bb-baseline",
    "bbsched",
    "bb-weighted",
    "bb-weighted-cpu",
    "bb-weighted-bb",
    "bb-constrained-cpu",
    "bb-constrained-bb",
    "bb-binpacking",
]
LABEL = {
    "bb-baseline": "Baseline",
    "bbsched": "BBSched",
    "bb-weighted": "Weighted",
    "bb-weighted-cpu": "Weighted_CPU",
    "bb-weighted-bb": "Weighted_BB",
    "bb-constrained-cpu": "Constrained_CPU",
    "bb-constrained-bb": "Constrained_BB",
    "bb-binpacking": "Bin_Packing",
}
TRACE = {"theta": "KTH", "cori": "HPC2N"}
NODES = {"kth-sp2": 100, "hpc2n": 240}
MARGIN = 15 * 86400.0
MIN_RUN_FOR_SLOWDOWN = 60.0
METRICS = ("bb_usage", "node_usage", "mean_wait", "mean_slowdown", "max_wait")
COUNTS = (
    "invocations",
    "fit_two_plus",
    "eligible_two_plus",
    "optimiser_runs",
    "reserved_runs",
    "changed",
    "exact_runs",
    "ga_runs",
    "forced_jobs",
    "forced_starts",
    "forced_blocks",
    "backstop_jobs",
    "solver_seconds",
)


def run_sweep(name: str, workers: int) -> tuple[float, float]:
    """Run one sweep; its wall time and the CPU seconds (user + system) of the sweep
    process and its workers (``RUSAGE_CHILDREN``: the machine may be shared)."""
    began, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "market_hpc",
            "sweep",
            str(ROOT / "scenarios" / f"bbsched_{name}.toml"),
            "--out",
            str(ROOT / "out" / f"bbsched_{name}"),
            "--workers",
            str(workers),
            "--keep-runs",
        ],
        check=True,
        cwd=ROOT,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - began, cpu


def run_metrics(run_dir: Path) -> dict[str, float | str]:
    """The paper's four metrics of one run over its measurement interval, and its loads."""
    return metrics_of(
        pd.read_parquet(run_dir / "jobs.parquet"), json.loads((run_dir / "config.json").read_text())
    )


def metrics_of(jobs: pd.DataFrame, provenance: dict[str, Any]) -> dict[str, float | str]:
    """``run_metrics`` of a run's jobs frame and its ``config.json`` contents; also the
    longest waits (max and 99th percentile of the measured jobs' waits)."""
    config, report = provenance["config"], provenance["workload"]["burst_buffer"]
    workload, window = config["workload"], config["policy"]["window"]
    nodes = NODES[config["platform"]]
    pool = report["capacity_gb"]
    begin, end = workload["start"] + MARGIN, workload["end"] - MARGIN
    started = jobs[jobs["start_time"].notna()]
    overlap = (
        np.minimum(started["end_time"], end) - np.maximum(started["start_time"], begin)
    ).clip(lower=0)
    span = end - begin
    inside = jobs[
        (jobs["submit_time"] >= begin)
        & (jobs["submit_time"] < end)
        & (jobs["status"] == "finished")
    ]
    long = inside[inside["run_time"] >= MIN_RUN_FOR_SLOWDOWN]
    return {
        "trace": TRACE[report["machine"]],
        "scenario": report["scenario"],
        "window": window["size"],
        "starvation": window["starvation"],
        "starvation_by": window.get("starvation_by", "invocations"),
        "starvation_backstop": window.get("starvation_backstop", 0.0),
        "pool_gb": pool,
        "offered_bb_load": report["offered_bb_load"],
        "offered_node_load": report["offered_node_load"],
        "node_usage": float((started["cores"] * overlap).sum() / (nodes * span)),
        "bb_usage": float((started["bb"] * overlap).sum() / (pool * span)),
        "mean_wait": float(inside["wait_time"].mean()),
        "mean_slowdown": float(((long["wait_time"] + long["run_time"]) / long["run_time"]).mean()),
        "max_wait": float(inside["wait_time"].max()),
        "p99_wait": float(inside["wait_time"].quantile(0.99)),
        "jobs_measured": len(inside),
    }


def run_table(sweep: str) -> pd.DataFrame:
    out = ROOT / "out" / f"bbsched_{sweep}"
    results = pd.read_parquet(out / "results.parquet")
    rows = []
    for row in results.to_dict("records"):
        if row["status"] != "ok":
            raise SystemExit(f"run {row['run_id']} failed: {row['error']}")
        counts = {name: row.get(f"policy_{name}", np.nan) for name in COUNTS}
        rows.append(
            {
                "sweep": sweep,
                "method": row["scheduler"],
                "seed": row["seed"],
                "duration_s": row["duration_s"],
                **counts,
                **run_metrics(out / "runs" / row["run_id"]),
            }
        )
    return pd.DataFrame(rows)


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Each method against the baseline of the same trace, scenario and seed."""
    tables = []
    main = runs[runs["sweep"] == "regime"]
    for (trace, scenario), group in main.groupby(["trace", "scenario"]):
        for metric in METRICS:
            table = paired_differences(group, "method", metric, "seed", "bb-baseline", METHODS[1:])
            table.insert(0, "metric", metric)
            table.insert(0, "scenario", scenario)
            table.insert(0, "trace", trace)
            tables.append(table)
    nostarve = runs[runs["sweep"] == "nostarve"]
    for trace, group in nostarve.groupby("trace"):
        for metric in METRICS:
            table = paired_differences(group, "method", metric, "seed", "bb-baseline", ["bbsched"])
            table.insert(0, "metric", metric)
            table.insert(0, "scenario", "S4 no bound")
            table.insert(0, "trace", trace)
            tables.append(table)
    window = runs[
        (runs["method"] == "bbsched") & (runs["scenario"] == "S4") & (runs["sweep"] != "nostarve")
    ]
    for trace, group in window.assign(w=window["window"].astype(str)).groupby("trace"):
        for metric in METRICS:
            table = paired_differences(group, "w", metric, "seed", "20", ["10", "50"])
            table.insert(0, "metric", metric)
            table.insert(0, "scenario", "S4 window vs 20")
            table.insert(0, "trace", trace)
            tables.append(table)
    return pd.concat(tables, ignore_index=True)


def cell(row: pd.Series, metric: str) -> str:
    """A paired difference: points for usage, percent of the baseline for wait/slowdown."""
    if metric in ("bb_usage", "node_usage"):
        return f"{100 * row.mean_diff:+.2f} [{100 * row.ci_low:+.2f}, {100 * row.ci_high:+.2f}]"
    return f"{100 * row.rel_mean:+.1f} % [{100 * row.rel_low:+.1f}, {100 * row.rel_high:+.1f}]"


def summary(
    runs: pd.DataFrame, pairs: pd.DataFrame, seconds: dict[str, tuple[float, float]]
) -> str:
    main = runs[runs["sweep"] == "regime"]
    lines = ["# Seed 003 study in the BB-bound regime", ""]
    if seconds:
        lines += [
            "Sweeps, wall / CPU seconds (sweep process and workers): "
            + ", ".join(f"{k} {wall:.0f} / {cpu:.0f} s" for k, (wall, cpu) in seconds.items())
            + f"; in all {sum(w for w, _ in seconds.values()):.0f} / "
            f"{sum(c for _, c in seconds.values()):.0f} s",
            "",
        ]
    lines += [
        "## Regime check (baseline, mean over seeds)",
        "",
        (
            "| trace | scenario | pool GB | offered BB load | BB usage | offered node load | node "
            "usage | "
            "mean wait h | max wait h |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = (
        main[main["method"] == "bb-baseline"].groupby(["trace", "scenario"]).mean(numeric_only=True)
    )
    for (trace, scenario), r in base.iterrows():
        lines.append(
            f"| {trace} | {scenario} | {r.pool_gb:,.0f} | {100 * r.offered_bb_load:.1f} % | "
            f"{100 * r.bb_usage:.1f} % | {100 * r.offered_node_load:.1f} % | "
            f"{100 * r.node_usage:.1f} % | "
            f"{r.mean_wait / 3600:.2f} | {r.max_wait / 3600:.1f} |"
        )
    lines += [
        "",
        "## Against the baseline: paired differences over seeds, 95 % CI",
        "",
        "Usage in percentage points, wait and slowdown in % of the baseline.",
        "",
    ]
    for (trace, scenario), group in pairs[pairs["scenario"].isin(["S1", "S2", "S3", "S4"])].groupby(
        ["trace", "scenario"]
    ):
        lines += [
            f"### {trace}-{scenario}",
            "",
            "| method | BB usage | node usage | mean wait | mean slowdown | max wait |",
            "|---|---|---|---|---|---|",
        ]
        for method in METHODS[1:]:
            cells = [
                cell(group[(group["metric"] == m) & (group["policy"] == method)].iloc[0], m)
                for m in METRICS
            ]
            lines.append(f"| {LABEL[method]} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## BBSched's mechanisms per run (mean over seeds)",
        "",
        (
            "| workload | invocations | >= 2 fit | >= 2 may start | optimiser ran | ran / >= 2 fit "
            "| "
            "under a reservation | changed vs base order | forced jobs | forced starts | "
            "a starving job holds the reservation | starving by the backstop |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    bbs = (
        runs[runs["method"] == "bbsched"]
        .groupby(["sweep", "trace", "scenario", "window"])
        .mean(numeric_only=True)
    )
    for (sweep, trace, scenario, window), r in bbs.iterrows():
        lines.append(
            f"| {trace}-{scenario} w={window} ({sweep}) | {r.invocations:,.0f} | "
            f"{r.fit_two_plus:,.0f} | "
            f"{r.eligible_two_plus:,.0f} | {r.optimiser_runs:,.0f} | "
            f"{100 * r.optimiser_runs / r.fit_two_plus:.0f} % | {r.reserved_runs:,.0f} | "
            f"{r.changed:,.0f} | "
            f"{r.forced_jobs:,.0f} | {r.forced_starts:,.0f} | {r.forced_blocks:,.0f} | "
            f"{r.backstop_jobs:,.0f} |"
        )
    lines += [
        "",
        "## Table 3: BBSched on S4 by window size (mean over seeds)",
        "",
        "| trace | w | node usage | BB usage | mean wait (s) | mean slowdown |",
        "|---|---|---|---|---|---|",
    ]
    table3 = runs[
        (runs["method"] == "bbsched") & (runs["scenario"] == "S4") & (runs["starvation"] < 1e9)
    ]
    for (trace, window), r in (
        table3.groupby(["trace", "window"]).mean(numeric_only=True).iterrows()
    ):
        lines.append(
            f"| {trace} | {window} | {100 * r.node_usage:.2f} % | {100 * r.bb_usage:.2f} % | "
            f"{r.mean_wait:,.0f} | {r.mean_slowdown:.2f} |"
        )
    lines += [
        "",
        "Paired against w = 20:",
        "",
        "| trace | w | BB usage | node usage | mean wait | mean slowdown | max wait |",
        "|---|---|---|---|---|---|---|",
    ]
    for (trace, w), group in pairs[pairs["scenario"] == "S4 window vs 20"].groupby(
        ["trace", "policy"]
    ):
        cells = [cell(group[group["metric"] == m].iloc[0], m) for m in METRICS]
        lines.append(f"| {trace} | {w} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## S4 without the starvation bound: BBSched against the baseline",
        "",
        "| trace | BB usage | node usage | mean wait | mean slowdown | max wait |",
        "|---|---|---|---|---|---|",
    ]
    for trace, group in pairs[pairs["scenario"] == "S4 no bound"].groupby("trace"):
        cells = [cell(group[group["metric"] == m].iloc[0], m) for m in METRICS]
        lines.append(f"| {trace} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def claims(runs: pd.DataFrame, pairs: pd.DataFrame) -> list[str]:
    """The paper's headline claims against the regime sweep (means over seeds; CIs paired)."""
    main = runs[runs["sweep"] == "regime"]
    means = main.groupby(["trace", "scenario", "method"]).mean(numeric_only=True).reset_index()
    workloads = means.groupby(["trace", "scenario"])
    count = workloads.ngroups
    best = {
        m: sum(
            g.loc[g[m].idxmax() if m != "mean_wait" else g[m].idxmin(), "method"] == "bbsched"
            for _, g in workloads
        )
        for m in ("bb_usage", "node_usage", "mean_wait")
    }
    regime = pairs[pairs["scenario"].isin(["S1", "S2", "S3", "S4"])]
    bbs = regime[regime["policy"] == "bbsched"]

    def span(metric: str) -> str:
        rows = bbs[bbs["metric"] == metric]
        return "; ".join(f"{r.trace}-{r.scenario} {cell(r, metric)}" for r in rows.itertuples())

    wait = regime[regime["metric"] == "mean_wait"]
    below = int((wait["ci_high"] < 0).sum())
    mean_below = int((wait["mean_diff"] < 0).sum())
    node = (
        f"* BBSched has the best mean node usage in {best['node_usage']} of {count} (paper: 7 of "
        "10); "
        f"against the baseline: {span('node_usage')}."
    )
    waits = (
        f"* BBSched's mean wait against the baseline: {span('mean_wait')}; best mean wait in "
        f"{best['mean_wait']} of {count}."
    )
    beat = (
        f"* Method x workload pairs with a lower mean wait than the baseline: {mean_below} of "
        f"{len(wait)} "
        f"(CI entirely below 0: {below}) (paper: all)."
    )
    return [
        "## Claims (regime sweep)",
        "",
        (
            f"* BBSched has the best mean BB usage in {best['bb_usage']} of {count} workloads "
            "(paper: "
            "all)."
        ),
        f"* BBSched's BB usage against the baseline, points [95 % CI]: {span('bb_usage')}.",
        node,
        waits,
        beat,
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-run", action="store_true", help="only read the sweeps' results")
    args = parser.parse_args()
    seconds = {} if args.no_run else {name: run_sweep(name, args.workers) for name in SWEEPS}
    runs = pd.concat([run_table(name) for name in SWEEPS], ignore_index=True)
    out = ROOT / "out" / "bbsched_regime"
    runs.to_csv(out / "study_runs.csv", index=False)
    pairs = paired(runs)
    pairs.to_csv(out / "study_paired.csv", index=False)
    text = summary(runs, pairs, seconds) + "\n" + "\n".join(claims(runs, pairs))
    (out / "study_summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
