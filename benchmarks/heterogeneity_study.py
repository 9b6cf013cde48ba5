"""The seed 000 study: scenarios/heterogeneity.toml, its tables next to the paper's, a plot.

Runs the sweep (``market-hpc sweep`` underneath; re-running resumes), or reads the
results of one, then writes into the results directory:

* ``study_table.csv``: one row per run (scheduler, allocator, month, seed,
  mean_slowdown, mean_queue_size, load ratios, mean wait);
* ``study_summary.md``: per month, the mean over seeds of slowdown ``s`` and queue size
  ``q`` per scheduler x allocator, the best heterogeneity-aware allocator and its gains
  over first-fit and best-fit (as the paper's Tables 2-3 compute them), next to the
  paper's rows for the same month;
* ``heterogeneity.png``: slowdown and queue size per scheduler and allocator, one panel
  row per month, bars the seed means and ticks the seeds;
* with ``--ablations``, ``ablations.csv`` and a section of the summary: runs outside the
  paper's grid that explain where we differ (first-fit with the MIC block first,
  WEIGHTED and PRIORITY-WEIGHTED ranked unit-free, the wall-time and real run-time
  predictors instead of the data-driven one, EBF recomputing its reservation).

    python benchmarks/heterogeneity_study.py --out out/heterogeneity --workers 2
    python benchmarks/heterogeneity_study.py --out out/heterogeneity --no-run --ablations
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "heterogeneity.toml"
ALLOCATORS = ["first-fit", "best-fit", "balanced", "weighted", "priority-weighted"]
SHORT = {
    "first-fit": "FF",
    "best-fit": "BF",
    "balanced": "B",
    "weighted": "W",
    "priority-weighted": "P-W",
}
NEW = ["balanced", "weighted", "priority-weighted"]
SCHEDULERS = ["sjf", "ebf", "prb", "cph"]
# The paper's Tables 2 and 3 (predictor D), (s, q) per allocator.
PAPER = {
    "2014-09": {
        "cph": {
            "first-fit": (41, 27),
            "best-fit": (42, 28),
            "balanced": (11, 11),
            "weighted": (10, 10),
            "priority-weighted": (8, 8),
        },
        "sjf": {
            "first-fit": (34, 28),
            "best-fit": (29, 23),
            "balanced": (19, 20),
            "weighted": (23, 19),
            "priority-weighted": (14, 14),
        },
        "prb": {
            "first-fit": (43, 24),
            "best-fit": (47, 27),
            "balanced": (30, 16),
            "weighted": (36, 16),
            "priority-weighted": (40, 20),
        },
        "ebf": {
            "first-fit": (51, 33),
            "best-fit": (48, 34),
            "balanced": (39, 19),
            "weighted": (37, 20),
            "priority-weighted": (53, 37),
        },
    },
    "2014-08": {
        "cph": {
            "first-fit": (8, 7),
            "best-fit": (7, 6),
            "balanced": (11, 7),
            "weighted": (4, 4),
            "priority-weighted": (7, 6),
        },
        "sjf": {
            "first-fit": (26, 17),
            "best-fit": (32, 22),
            "balanced": (18, 14),
            "weighted": (18, 13),
            "priority-weighted": (15, 11),
        },
        "prb": {
            "first-fit": (20, 13),
            "best-fit": (22, 14),
            "balanced": (14, 10),
            "weighted": (8, 6),
            "priority-weighted": (5, 3),
        },
        "ebf": {
            "first-fit": (22, 15),
            "best-fit": (26, 16),
            "balanced": (21, 15),
            "weighted": (14, 10),
            "priority-weighted": (18, 13),
        },
    },
    "2014-04": {
        "cph": {
            "first-fit": (251, 57),
            "best-fit": (271, 55),
            "balanced": (238, 63),
            "weighted": (315, 82),
            "priority-weighted": (254, 70),
        },
        "sjf": {
            "first-fit": (1269, 230),
            "best-fit": (1270, 229),
            "balanced": (1266, 233),
            "weighted": (1276, 218),
            "priority-weighted": (1253, 216),
        },
        "prb": {
            "first-fit": (1852, 615),
            "best-fit": (2023, 640),
            "balanced": (1778, 594),
            "weighted": (1829, 627),
            "priority-weighted": (1910, 599),
        },
        "ebf": {
            "first-fit": (3004, 697),
            "best-fit": (2563, 702),
            "balanced": (2197, 619),
            "weighted": (2378, 686),
            "priority-weighted": (2313, 674),
        },
    },
    "2015-04": {
        "cph": {
            "first-fit": (10, 4),
            "best-fit": (10, 4),
            "balanced": (7, 4),
            "weighted": (8, 4),
            "priority-weighted": (7, 4),
        },
        "sjf": {
            "first-fit": (16, 5),
            "best-fit": (16, 5),
            "balanced": (10, 5),
            "weighted": (10, 5),
            "priority-weighted": (10, 5),
        },
        "ebf": {
            "first-fit": (28, 5),
            "best-fit": (28, 5),
            "balanced": (18, 4),
            "weighted": (20, 4),
            "priority-weighted": (20, 4),
        },
        "prb": {
            "first-fit": (28, 5),
            "best-fit": (28, 5),
            "balanced": (21, 4),
            "weighted": (22, 4),
            "priority-weighted": (22, 4),
        },
    },
}
COLUMNS = [
    "scheduler",
    "allocator",
    "month",
    "seed",
    "mean_slowdown",
    "mean_queue_size",
    "load_ratio_cores",
    "load_ratio_gpus",
    "mean_wait",
    "jobs_completed",
    "simulation_seconds",
]


def gains(table: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """Best new allocator by slowdown and its gains (%) over FF and BF, as in the paper."""
    best = min(NEW, key=lambda a: table[a][0])
    s, q = table[best]
    out: dict[str, Any] = {"best": SHORT[best]}
    for base in ("first-fit", "best-fit"):
        bs, bq = table[base]
        out[f"s_vs_{SHORT[base]}"] = 100 * (bs - s) / bs if bs else float("nan")
        out[f"q_vs_{SHORT[base]}"] = 100 * (bq - q) / bq if bq else float("nan")
    return out


def month_section(frame: pd.DataFrame, month: str) -> list[str]:
    """Markdown lines: our seed means next to the paper's row, with gains."""
    rows = frame[frame["month"] == month]
    means = rows.groupby(["scheduler", "allocator"])[["mean_slowdown", "mean_queue_size"]].mean()
    lines = [
        (
            f"### {month} ({int(rows['jobs_completed'].mean())} jobs, mean of "
            f"{rows['seed'].nunique()} "
            "seeds)"
        ),
        "",
        "| sched | source | "
        + " | ".join(f"{SHORT[a]} s / q" for a in ALLOCATORS)
        + " | best | gain s vs FF | gain q vs FF | gain s vs BF | gain q vs BF |",
        "|---|---|" + "---|" * (len(ALLOCATORS) + 5),
    ]
    for scheduler in SCHEDULERS:
        sources: list[tuple[str, dict[str, tuple[float, float]]]] = []
        if (scheduler, "first-fit") in means.index:
            sources.append(
                ("ours", {a: tuple(means.loc[(scheduler, a)].tolist()) for a in ALLOCATORS})
            )  # type: ignore[misc]
        if month in PAPER:
            sources.append(("paper", PAPER[month][scheduler]))
        for label, table in sources:
            g = gains(table)
            cells = " | ".join(f"{table[a][0]:.1f} / {table[a][1]:.1f}" for a in ALLOCATORS)
            lines.append(
                f"| {scheduler} | {label} | {cells} | {g['best']} | {g['s_vs_FF']:.0f}% | "
                f"{g['q_vs_FF']:.0f}% | {g['s_vs_BF']:.0f}% | {g['q_vs_BF']:.0f}% |"
            )
    spread = rows.pivot_table(
        index=["scheduler", "seed"], columns="allocator", values="mean_slowdown"
    )
    lines += [
        "",
        "Slowdown per seed:",
        "",
        "| sched | seed | " + " | ".join(SHORT[a] for a in ALLOCATORS) + " |",
        "|---|---|" + "---|" * len(ALLOCATORS),
    ]
    for (scheduler, seed), values in spread[ALLOCATORS].iterrows():
        lines.append(f"| {scheduler} | {seed} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
    return lines + [""]


def plot(frame: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    months = sorted(frame["month"].unique(), reverse=True)
    fig, axes = plt.subplots(len(months), 2, figsize=(12, 3.6 * len(months)), squeeze=False)
    width = 0.16
    for row, month in enumerate(months):
        data = frame[frame["month"] == month]
        for col, (metric, label) in enumerate(
            (("mean_slowdown", "mean slowdown"), ("mean_queue_size", "mean queue size at dispatch"))
        ):
            ax = axes[row][col]
            for k, allocator in enumerate(ALLOCATORS):
                xs = np.arange(len(SCHEDULERS)) + (k - 2) * width
                values = [
                    data[(data.scheduler == s) & (data.allocator == allocator)][metric]
                    for s in SCHEDULERS
                ]
                ax.bar(xs, [v.mean() for v in values], width, label=SHORT[allocator])
                for x, v in zip(xs, values):
                    ax.scatter([x] * len(v), v, color="black", s=6, zorder=3)
            ax.set_xticks(np.arange(len(SCHEDULERS)), [s.upper() for s in SCHEDULERS])
            ax.set_title(f"Eurora-like {month}: {label}")
            ax.set_yscale("log")
        axes[row][0].legend(ncol=5, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# ------------------------------------------------------------------ ablations
def ablation_run(task: tuple[str, str, str, int, str]) -> dict[str, Any]:
    """One run outside the grid (executed in a worker process)."""
    from market_hpc.core.metrics import mean_queue_size, slowdowns
    from market_hpc.core.model import HPCModel
    from market_hpc.core.predictors import make_predictor
    from market_hpc.domain.platform import PRESETS, Platform
    from market_hpc.policies import make_policy
    from market_hpc.workload.eurora import MONTHS, eurora_like

    variant, scheduler, allocator, seed, month = task
    jobs = eurora_like(int(MONTHS[month].jobs_per_30_days), seed, month)
    platform: Platform = PRESETS["eurora"]
    params: dict[str, Any] = {}
    scheduler_params: dict[str, Any] = {}
    predictor = "data-driven"
    if variant == "mic-block-first":
        platform = Platform("eurora-mic-first", tuple(reversed(platform.node_types)))
    elif variant == "unit-free":
        params = {"unit_free": True}
    elif variant in ("wall-time", "real"):
        predictor = variant
    elif variant == "dynamic-reservation":
        scheduler_params = {"static_reservation": False}
    policy = make_policy(
        scheduler,
        allocator,
        scheduler_params=scheduler_params or None,
        allocator_params=params or None,
    )
    model = HPCModel(
        jobs,
        platform,
        policy=policy,
        seed=seed,
        record_timeseries=False,
        predictor=make_predictor(predictor),
    )
    model.run()
    frame = model.recorder.jobs_frame()
    return {
        "variant": variant,
        "scheduler": scheduler,
        "allocator": allocator,
        "seed": seed,
        "month": month,
        "mean_slowdown": float(slowdowns(frame)[0].mean()),
        "mean_queue_size": mean_queue_size(frame),
    }


def ablation_tasks(seeds: list[int], month: str) -> list[tuple[str, str, str, int, str]]:
    schedulers = SCHEDULERS[:3]  # CPH's CP solve per decision is left out of the ablations
    tasks = [("mic-block-first", s, "first-fit", seed, month) for s in schedulers for seed in seeds]
    tasks += [
        ("unit-free", s, a, seed, month)
        for s in schedulers
        for a in ("weighted", "priority-weighted")
        for seed in seeds
    ]
    tasks += [
        (p, s, a, seeds[0], month)
        for p in ("wall-time", "real")
        for s in schedulers
        for a in ("first-fit", "balanced")
    ]
    tasks += [
        ("dynamic-reservation", "ebf", a, seed, month)
        for a in ("first-fit", "balanced")
        for seed in seeds
    ]
    return tasks


def ablation_section(ablations: pd.DataFrame, frame: pd.DataFrame, month: str) -> list[str]:
    base = frame[frame["month"] == month].set_index(["scheduler", "allocator", "seed"])
    lines = [
        (
            f"### Ablations ({month}; mean over the seeds run; 'grid' = the same runs in the study "
            "grid)"
        ),
        "",
        "| variant | scheduler | allocator | s | q | grid s | grid q |",
        "|---|---|---|---|---|---|---|",
    ]
    grouped = ablations.groupby(["variant", "scheduler", "allocator"])
    for (variant, scheduler, allocator), rows in grouped:
        keys = [(scheduler, allocator, seed) for seed in rows["seed"]]
        grid = base.loc[keys]
        lines.append(
            f"| {variant} | {scheduler} | {allocator} | {rows.mean_slowdown.mean():.2f} | "
            f"{rows.mean_queue_size.mean():.2f} | {grid.mean_slowdown.mean():.2f} | "
            f"{grid.mean_queue_size.mean():.2f} |"
        )
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "heterogeneity")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-run", action="store_true", help="only read the stored results")
    parser.add_argument(
        "--ablations", action="store_true", help="also run the ablations (a few minutes)"
    )
    args = parser.parse_args()
    if not args.no_run:
        from market_hpc.experiment.sweep import run_sweep

        began = time.perf_counter()
        outcome = run_sweep(SCENARIO, args.out, workers=args.workers)
        print(f"sweep: {outcome.describe()} in {time.perf_counter() - began:.0f} s")
    results = pd.read_csv(args.out / "results.csv")
    failed = results[results["status"] != "ok"]
    if len(failed):
        raise SystemExit(
            f"{len(failed)} runs failed: {failed[['run_id', 'error']].values.tolist()}"
        )
    frame = results[COLUMNS].sort_values(["month", "scheduler", "allocator", "seed"])
    frame.to_csv(args.out / "study_table.csv", index=False)
    print(
        f"runs: {len(frame)}; simulation seconds per run: mean "
        f"{frame.simulation_seconds.mean():.1f}, "
        f"total {frame.simulation_seconds.sum():.0f}"
    )
    lines = ["# Heterogeneity study: our means vs the paper's Tables 2-3 (predictor D)", ""]
    for month in sorted(frame["month"].unique(), reverse=True):
        lines += month_section(frame, month)
    if args.ablations:
        month = "2014-09"
        seeds = sorted(frame["seed"].unique().tolist())
        began = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            ablations = pd.DataFrame(list(pool.map(ablation_run, ablation_tasks(seeds, month))))
        ablations.to_csv(args.out / "ablations.csv", index=False)
        print(f"ablations: {len(ablations)} runs in {time.perf_counter() - began:.0f} s")
        lines += ablation_section(ablations, frame, month)
    elif (args.out / "ablations.csv").is_file():  # from an earlier --ablations run
        lines += ablation_section(pd.read_csv(args.out / "ablations.csv"), frame, "2014-09")
    (args.out / "study_summary.md").write_text("\n".join(lines) + "\n")
    plot(frame, args.out / "heterogeneity.png")
    print("\n".join(lines))
    print(f"wrote {args.out / 'study_table.csv'}, study_summary.md, heterogeneity.png")


if __name__ == "__main__":
    main()
