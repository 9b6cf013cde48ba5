"""BBSched (Fan et al., HPDC'19): what the reading of the paper's starvation bound does.

The paper bounds "the number of iterations that a job can stay in the window ... (e.g.,
50)" and defines neither the value nor an iteration (``policies/bbsched/starvation.py``).
This runs the baseline and BBSched on the study's eight regime workloads
(``scenarios/bbsched_regime.toml``: KTH and HPC2N, S1-S4) under each reading below, and
prints per reading and workload BBSched's optimiser share (optimiser runs over the
invocations where two or more window jobs fit), how often a
starving job held the reservation, the jobs forced by the backstop, and the paired 95 %
CIs of BBSched against the baseline *of the same reading* (BB and node usage in points,
mean wait, mean slowdown, max wait in %), plus each reading's max wait against today's
(``inv-50``) for both methods: what the reading costs the longest waiters.

Runs go to ``out/bbsched_starvation/runs.csv`` (one row per run, re-running resumes),
the tables to ``out/bbsched_starvation/summary.md``.

``--trace KTH --load-factor 0.87`` runs one trace's workloads with its arrivals stretched
(``workload.load_factor``: the offered node load times 0.87; the pool is still sized for
the target BB load of the stretched jobs); the load factor is a column of ``runs.csv``.

    nice python benchmarks/bbsched_starvation.py --seeds 5 --workers 2
    python benchmarks/bbsched_starvation.py --readings inv-50,opt-50 --seeds 2
    nice python benchmarks/bbsched_starvation.py --readings inv-50 --trace KTH --load-factor 0.87
"""

from __future__ import annotations

import argparse
import copy
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pandas as pd
from bbsched_study import COUNTS, LABEL, ROOT, cell, metrics_of

from market_hpc.experiment import config_from_dict, simulate
from market_hpc.experiment.run import provenance
from market_hpc.experiment.stats import paired_differences
from market_hpc.experiment.sweep_spec import load_sweep

DAY = 86400.0
READINGS: dict[str, dict[str, Any]] = {
    "inv-50": {"starvation": 50, "starvation_by": "invocations", "starvation_backstop": 0.0},
    "inv-100": {"starvation": 100, "starvation_by": "invocations", "starvation_backstop": 0.0},
    "inv-200": {"starvation": 200, "starvation_by": "invocations", "starvation_backstop": 0.0},
    "inv-400": {"starvation": 400, "starvation_by": "invocations", "starvation_backstop": 0.0},
    "opt-50": {"starvation": 50, "starvation_by": "optimised", "starvation_backstop": 0.0},
    "opt-50-bs2d": {"starvation": 50, "starvation_by": "optimised", "starvation_backstop": 2 * DAY},
    "passed-50-bs1d": {
        "starvation": 50,
        "starvation_by": "passed-over",
        "starvation_backstop": DAY,
    },
    "passed-50-bs2d": {
        "starvation": 50,
        "starvation_by": "passed-over",
        "starvation_backstop": 2 * DAY,
    },
    "inv-50-bs1d": {"starvation": 50, "starvation_by": "invocations", "starvation_backstop": DAY},
    "opt-50-bs1d": {"starvation": 50, "starvation_by": "optimised", "starvation_backstop": DAY},
    "passed-10-bs1d": {
        "starvation": 10,
        "starvation_by": "passed-over",
        "starvation_backstop": DAY,
    },
    "sec-1d": {"starvation": DAY, "starvation_by": "seconds", "starvation_backstop": 0.0},
    "none": {"starvation": 1e12, "starvation_by": "invocations", "starvation_backstop": 0.0},
}
METHODS = ("bb-baseline", "bbsched")
METRICS = ("bb_usage", "node_usage", "mean_wait", "mean_slowdown", "max_wait")
OUT = ROOT / "out" / "bbsched_starvation"


def one_run(task: tuple[str, int, dict[str, Any]]) -> dict[str, Any]:
    reading, seed, config = task
    began = time.process_time()
    result = simulate(config_from_dict(config))
    counts = {name: result.summary.get(f"policy_{name}") for name in COUNTS}
    return {
        "reading": reading,
        "method": config["policy"]["scheduler"],
        "seed": seed,
        "load_factor": config["workload"].get("load_factor", 1.0),
        "cpu_s": time.process_time() - began,
        **counts,
        **metrics_of(result.jobs, provenance(result.config, result.workload_report)),
    }


def trace_of(config: dict[str, Any]) -> str:
    return "KTH" if config["platform"] == "kth-sp2" else "HPC2N"


def tasks(
    readings: list[str],
    seeds: int,
    traces: tuple[str, ...] = ("KTH", "HPC2N"),
    load_factor: float | None = None,
) -> list[tuple[str, int, dict[str, Any]]]:
    """The regime sweep's baseline and BBSched runs of ``traces`` under each reading; a
    ``load_factor`` replaces the scenario's ``workload.load_factor``."""
    sweep = load_sweep(ROOT / "scenarios" / "bbsched_regime.toml")
    chosen = []
    for reading in readings:
        for spec in sweep.runs:
            if (
                spec.config["policy"]["scheduler"] in METHODS
                and spec.seed <= seeds
                and trace_of(spec.config) in traces
            ):
                config = copy.deepcopy(spec.config)
                config["policy"]["window"].update(READINGS[reading])
                if load_factor is not None:
                    config["workload"]["load_factor"] = load_factor
                chosen.append((reading, spec.seed, config))
    return chosen


def summary(runs: pd.DataFrame) -> str:
    lines = ["# The starvation bound's reading: baseline and BBSched on the regime workloads", ""]
    lines += [
        "## BBSched's mechanisms (mean over seeds)",
        "",
        (
            "| reading | workload | >= 2 fit | optimiser ran | share | holds reservation | "
            "backstop jobs |"
            " forced starts |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    bbs = (
        runs[runs["method"] == "bbsched"]
        .groupby(["reading", "trace", "scenario"])
        .mean(numeric_only=True)
    )
    for (reading, trace, scenario), r in bbs.iterrows():
        lines.append(
            f"| {reading} | {trace}-{scenario} | {r.fit_two_plus:,.0f} | {r.optimiser_runs:,.0f} | "
            f"{100 * r.optimiser_runs / r.fit_two_plus:.0f} % | {r.forced_blocks:,.0f} | "
            f"{r.backstop_jobs:,.0f} | {r.forced_starts:,.0f} |"
        )
    lines += [
        "",
        "## BBSched against the baseline of the same reading (paired, 95 % CI)",
        "",
        "| reading | workload | " + " | ".join(METRICS) + " |",
        "|---|---|" + "---|" * len(METRICS),
    ]
    for (reading, trace, scenario), group in runs.groupby(["reading", "trace", "scenario"]):
        cells = []
        for metric in METRICS:
            row = paired_differences(
                group, "method", metric, "seed", "bb-baseline", ["bbsched"]
            ).iloc[0]
            cells.append(cell(row, metric))
        lines.append(f"| {reading} | {trace}-{scenario} | " + " | ".join(cells) + " |")
    if "inv-50" in set(runs["reading"]):
        lines += [
            "",
            "## Each reading against inv-50 (today), same method (paired, 95 % CI)",
            "",
            "| method | reading | workload | mean wait | max wait | p99 wait | max wait h (mean) |",
            "|---|---|---|---|---|---|---|",
        ]
        for (method, trace, scenario), group in runs.groupby(["method", "trace", "scenario"]):
            others = [r for r in READINGS if r != "inv-50" and r in set(group["reading"])]
            for reading in others:
                rows = [
                    paired_differences(group, "reading", m, "seed", "inv-50", [reading]).iloc[0]
                    for m in ("mean_wait", "max_wait", "p99_wait")
                ]
                hours = group[group["reading"] == reading]["max_wait"].mean() / 3600
                lines.append(
                    f"| {LABEL[method]} | {reading} | {trace}-{scenario} | "
                    + " | ".join(cell(r, "mean_wait") for r in rows)
                    + f" | {hours:.1f} |"
                )
    lines += [
        "",
        "## Max wait (h, mean over seeds)",
        "",
        "| method | workload | " + " | ".join(READINGS) + " |",
        "|---|---|" + "---|" * len(READINGS),
    ]
    table = runs.pivot_table(
        index=["method", "trace", "scenario"], columns="reading", values="max_wait"
    )
    for (method, trace, scenario), r in table.iterrows():
        lines.append(
            f"| {LABEL[method]} | {trace}-{scenario} | "
            + " | ".join(
                f"{r[k] / 3600:.1f}" if k in r and pd.notna(r[k]) else "-" for k in READINGS
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--readings", default=",".join(READINGS), help=f"comma-separated, of {', '.join(READINGS)}"
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--trace", choices=("KTH", "HPC2N"), help="only this trace's workloads (default: both)"
    )
    parser.add_argument(
        "--load-factor",
        type=float,
        help="workload.load_factor for the runs (default: the scenario's)",
    )
    args = parser.parse_args()
    readings = args.readings.split(",")
    unknown = [r for r in readings if r not in READINGS]
    if unknown:
        raise SystemExit(f"unknown reading(s) {unknown}; valid: {', '.join(READINGS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "runs.csv"
    done = (
        pd.read_csv(path)
        if path.exists()
        else pd.DataFrame(columns=["reading", "method", "seed", "trace", "scenario", "load_factor"])
    )
    if "load_factor" not in done:
        done["load_factor"] = 1.0
    keys = set(
        zip(
            done["reading"],
            done["method"],
            done["seed"],
            done["trace"],
            done["scenario"],
            done["load_factor"].astype(float),
        )
    )
    traces = (args.trace,) if args.trace else ("KTH", "HPC2N")
    chosen = tasks(readings, args.seeds, traces, args.load_factor)
    todo = [
        t
        for t in chosen
        if (
            t[0],
            t[2]["policy"]["scheduler"],
            t[1],
            trace_of(t[2]),
            t[2]["workload"]["burst_buffer"]["scenario"],
            float(t[2]["workload"].get("load_factor", 1.0)),
        )
        not in keys
    ]
    began = time.perf_counter()
    rows = []
    with ProcessPoolExecutor(args.workers) as pool:
        for number, row in enumerate(pool.map(one_run, todo), start=1):
            rows.append(row)
            if number % 20 == 0 or number == len(todo):
                pd.concat([done, pd.DataFrame(rows)], ignore_index=True).to_csv(path, index=False)
                print(f"{number}/{len(todo)} runs, {time.perf_counter() - began:.0f} s", flush=True)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"{len(todo)} runs: {time.perf_counter() - began:.0f} s wall, "
        f"{children.ru_utime + children.ru_stime:.0f} s CPU (workers)"
    )
    runs = pd.concat([done, pd.DataFrame(rows)], ignore_index=True) if rows else done
    factors = {float(t[2]["workload"].get("load_factor", 1.0)) for t in chosen}
    runs = runs[
        runs["reading"].isin(readings)
        & (runs["seed"] <= args.seeds)
        & runs["trace"].isin(traces)
        & runs["load_factor"].astype(float).isin(factors)
    ]
    text = summary(runs)
    (OUT / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
