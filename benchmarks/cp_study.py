"""Seed 001 study: PCP'20 against its own greedy plan, HCP'19, CPH, EASY (and PCP'19 on
Eurora), KIT-like and Eurora-like, several seeds, paired 95% confidence intervals.

    PYTHONPATH=. nice python benchmarks/cp_study.py --seeds 1 2 3 4 5 --out /tmp/cp_study.json

Systems (run times known: the paper's -R predictor), loaded until the machine saturates
and queues build (``LOADS``; the first multi-seed study ran at load 1.5
/ 4 with 0.40 core use, where PCP'20 built a model in 130 of 9,550 decisions):

* **KIT-like**: ``kit-fh2`` (1,152 thin + 21 fat nodes), the ``kit`` generator at offered
  load 6 (``--kit-jobs``, default 1,500 jobs per seed; CPH runs on the first
  ``--cph-seeds`` seeds there only).
* **Eurora-like**: ``eurora`` (64 nodes), the ``eurora`` generator, arrivals compressed
  8x, **one continuous run** of ``--eurora-jobs`` (default 1,500) per seed, cut into
  ``--months`` equal windows of submit time, as the paper cuts its months out of one
  simulation of the whole trace: a window's jobs are measured with whatever the jobs
  before them left running and queued (only the first window starts empty).

Per run: mean slowdown and wait over the measured jobs, dispatch time, the CP
statistics of ``summary.json``, the use of each resource and the mean queue while jobs
arrive (``regime``), wall and CPU seconds (the machine is shared: CPU time / 2 is
what 2 idle cores would take). Paired differences (PCP'20 minus
greedy-plan, PCP'20 minus HCP'19) per seed (KIT) or per seed and window (Eurora), with a
Student-t 95% confidence interval. Runs go to ``--workers`` processes (niced by the
caller); the machine is shared, so times are noisy, while every decision is
deterministic (same seed, same schedule).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

SCHEDULERS = ("pcp20", "greedy-plan", "pcp20-model", "hcp19", "cph", "easy")
PAIRS = (("pcp20", "greedy-plan"), ("pcp20", "hcp19"), ("pcp20", "pcp20-model"))
CP_KEYS = (
    "cp_status_counts",
    "cp_model_status_counts",
    "cp_models",
    "cp_changed_share",
    "cp_mean_variables",
    "cp_max_variables",
    "cp_mean_constraints",
    "cp_max_constraints",
    "cp_relaxation_counts",
)
VARIANTS = {"pcp20-model": ("pcp20", {"relax": False})}
"""Study labels that are a registered scheduler with parameters: ``pcp20-model`` is PCP'20
without its schedule relaxation (``cp_relax``), the earlier default: the model's
own search from the same hint, at the same budget (the "cold search" the relaxation is
measured against)."""


LOADS = {"kit": 6.0, "eurora": 8.0}
"""Offered load per system: KIT-like ``load`` (x the cores), Eurora-like ``load_factor``
(arrivals compressed), chosen so that the machine saturates and queues hold 10-100 jobs
(docs/cp.md, "Regime")."""


def config(
    system: str, scheduler: str, seed: int, jobs: int, load: float | None = None
) -> dict[str, Any]:
    value = LOADS[system] if load is None else load
    platform, generator, load_key = {
        "kit": ("kit-fh2", "kit", "load"),
        "eurora": ("eurora", "eurora", "load_factor"),
    }[system]
    load_table = {load_key: value}
    name, params = VARIANTS.get(scheduler, (scheduler, {}))
    policy: dict[str, Any] = {"scheduler": name, "predictor": "real"}
    if params:
        policy["params"] = params
    return {
        "platform": platform,
        "seed": seed,
        "timeseries": False,
        "workload": {"generator": generator, "jobs": jobs, **load_table},
        "policy": policy,
    }


def one_run(task: tuple[str, str, int, int, int]) -> dict[str, Any]:
    """Simulate one (system, scheduler, seed); per-window job metrics and the summary."""
    from market_hpc.core.metrics import slowdowns
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate

    system, scheduler, seed, jobs, windows = task
    began, cpu = time.perf_counter(), time.process_time()
    result = simulate(config_from_dict(config(system, scheduler, seed, jobs)))
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    frame = result.jobs
    frame = frame[frame["status"] == "finished"]
    submit = frame["submit_time"].to_numpy()
    edges = np.linspace(submit.min(), submit.max(), windows + 1)
    cut = np.clip(np.searchsorted(edges, submit, side="right") - 1, 0, windows - 1)
    per_window = []
    for w in range(windows):
        part = frame[cut == w]
        slowdown, _ = slowdowns(part)
        per_window.append(
            {
                "jobs": len(part),
                "slowdown": float(slowdown.mean()),
                "wait": float(part["wait_time"].mean()),
            }
        )
    summary = result.summary
    keep = (
        "mean_slowdown",
        "mean_wait",
        "std_slowdown",
        "std_wait",
        "mean_dispatch_ms",
        "p99_dispatch_ms",
        "max_dispatch_ms",
        "decisions",
        "utilisation_cores",
        "utilisation_gpus",
        "utilisation_mics",
        "jobs_completed",
    ) + CP_KEYS
    return {
        "system": system,
        "scheduler": scheduler,
        "seed": seed,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "windows": per_window,
        **regime(frame, system),
        **{k: summary[k] for k in keep if k in summary},
    }


def regime(frame: Any, system: str) -> dict[str, float]:
    """While jobs arrive (first to last submit): the share of each resource the running
    jobs hold (the bottleneck: cores on KIT-like, GPUs on Eurora-like) and the mean number
    of jobs waiting (sampled at 2,000 evenly spaced instants)."""
    from market_hpc.domain.platform import load_platform

    capacity = load_platform(config(system, "easy", 1, 1)["platform"]).capacity.sum(axis=0)
    first, last = float(frame["submit_time"].min()), float(frame["submit_time"].max())
    start, end = frame["start_time"].to_numpy(float), frame["end_time"].to_numpy(float)
    overlap = np.clip(np.minimum(end, last) - np.maximum(start, first), 0, None)
    use = {
        f"use_{r}": float(
            (frame[r].to_numpy(float) * overlap).sum() / (capacity[i] * (last - first))
        )
        for i, r in enumerate(("cores", "gpus", "mics", "mem"))
        if capacity[i] > 0
    }
    instants = np.linspace(first, last, 2000)
    waiting = np.searchsorted(
        np.sort(frame["submit_time"].to_numpy(float)), instants, side="right"
    ) - np.searchsorted(np.sort(start), instants, side="right")
    return {**use, "queue_mean": float(waiting.mean()), "queue_max": int(waiting.max())}


def paired(
    runs: list[dict[str, Any]], system: str, a: str, b: str, metric: str
) -> tuple[float, float, float, int]:
    """Mean paired difference a - b over (seed, window) and its 95% t interval."""
    from market_hpc.experiment.stats import t_interval

    by = {(r["scheduler"], r["seed"]): r for r in runs if r["system"] == system}
    diffs = [
        wa[metric] - wb[metric]
        for (s, seed), r in by.items()
        if s == a and (b, seed) in by
        for wa, wb in zip(r["windows"], by[b, seed]["windows"])
    ]
    if not diffs:
        return float("nan"), float("nan"), float("nan"), 0
    return (*t_interval(diffs), len(diffs))


def report(runs: list[dict[str, Any]]) -> None:
    for system in ("kit", "eurora"):
        rows = [r for r in runs if r["system"] == system]
        if not rows:
            continue
        print(f"\n== {system} ({len({r['seed'] for r in rows})} seeds)")
        bottleneck = "use_cores" if system == "kit" else "use_gpus"
        print(
            f"{'scheduler':>12} {'runs':>4} | {'slowdown':>8} {'wait s':>8} | {'disp ms':>7} "
            f"{'p99':>7} | "
            f"{bottleneck[4:]:>5} {'queue':>5} {'decis':>6} {'models':>6} {'OPT/mod':>7} "
            f"{'changed':>7} {'vars':>6} "
            f"{'cons':>6} | {'run s':>6} {'cpu s':>6} | relaxation proved/unpacked/bound"
        )
        for scheduler in SCHEDULERS + ("pcp19",):
            mine = [r for r in rows if r["scheduler"] == scheduler]
            if not mine:
                continue
            slow = np.mean([w["slowdown"] for r in mine for w in r["windows"]])
            wait = np.mean([w["wait"] for r in mine for w in r["windows"]])
            models = sum(r.get("cp_models", 0) for r in mine)
            optimal = sum(r.get("cp_model_status_counts", {}).get("OPTIMAL", 0) for r in mine)
            changed = np.mean([r.get("cp_changed_share", 0.0) for r in mine])
            print(
                f"{scheduler:>12} {len(mine):4d} | {slow:8.3f} {wait:8.1f} | "
                f"{np.mean([r['mean_dispatch_ms'] for r in mine]):7.1f} "
                f"{np.mean([r['p99_dispatch_ms'] for r in mine]):7.1f} | "
                f"{np.mean([r.get(bottleneck, np.nan) for r in mine]):5.3f} "
                f"{np.mean([r.get('queue_mean', np.nan) for r in mine]):5.1f} "
                f"{np.mean([r['decisions'] for r in mine]):6.0f} {models:6d} "
                f"{optimal / models if models else float('nan'):7.3f} {changed:7.3f} "
                f"{np.mean([r.get('cp_mean_variables', 0) for r in mine]):6.1f} "
                f"{np.mean([r.get('cp_mean_constraints', 0) for r in mine]):6.1f} | "
                f"{np.mean([r['seconds'] for r in mine]):6.1f} "
                f"{np.mean([r.get('cpu_seconds', np.nan) for r in mine]):6.1f} | "
                + "/".join(
                    str(sum(r.get("cp_relaxation_counts", {}).get(tag, 0) for r in mine))
                    for tag in ("proved", "unpacked", "bound")
                )
            )
            if scheduler == "pcp20":
                print(
                    " " * 14
                    + "OPTIMAL share per seed: "
                    + ", ".join(
                        format(
                            r["cp_model_status_counts"].get("OPTIMAL", 0) / max(1, r["cp_models"]),
                            ".3f",
                        )
                        for r in sorted(mine, key=lambda r: r["seed"])
                    )
                )
        for a, b in PAIRS:
            for metric in ("slowdown", "wait"):
                mean, low, high, n = paired(runs, system, a, b, metric)
                print(
                    f"  {a} - {b} {metric:>8}: {mean:+9.3f}  95% CI [{low:+.3f}, {high:+.3f}]  (n "
                    f"= {n} pairs)"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--kit-jobs", type=int, default=1500)
    parser.add_argument("--eurora-jobs", type=int, default=1500)
    parser.add_argument("--months", type=int, default=3, help="Eurora windows cut from each run")
    parser.add_argument(
        "--cph-seeds", type=int, default=2, help="seeds CPH runs on KIT (it is slow there)"
    )
    parser.add_argument("--pcp19-seeds", type=int, default=1, help="seeds PCP'19 runs on Eurora")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--systems", nargs="+", default=["kit", "eurora"], choices=["kit", "eurora"]
    )
    parser.add_argument(
        "--schedulers", nargs="+", default=None, help="run only these labels (default: all)"
    )
    parser.add_argument(
        "--merge",
        type=Path,
        default=None,
        help="a saved run whose runs not repeated here are reported (and saved) with these",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--report", type=Path, default=None, help="only print the tables of a saved run"
    )
    args = parser.parse_args()
    if args.report is not None:
        report(json.loads(args.report.read_text()))
        return
    tasks = []
    for seed in args.seeds:
        for scheduler in SCHEDULERS:
            if scheduler == "cph" and seed not in args.seeds[: args.cph_seeds]:
                tasks.append(("eurora", scheduler, seed, args.eurora_jobs, args.months))
                continue
            tasks.append(("kit", scheduler, seed, args.kit_jobs, 1))
            tasks.append(("eurora", scheduler, seed, args.eurora_jobs, args.months))
        if seed in args.seeds[: args.pcp19_seeds]:
            tasks.append(("eurora", "pcp19", seed, args.eurora_jobs, args.months))
    tasks = [
        t
        for t in tasks
        if t[0] in args.systems and (args.schedulers is None or t[1] in args.schedulers)
    ]
    # the paired dispatchers first, seed by seed (a cut-short run still gives intervals), then
    # EASY, CPH and PCP'19
    rank = {
        "pcp20": 0,
        "greedy-plan": 0,
        "pcp20-model": 0,
        "hcp19": 0,
        "easy": 1,
        "cph": 2,
        "pcp19": 3,
    }
    tasks.sort(key=lambda t: (rank[t[1]], t[2], t[0] != "kit"))
    began = time.perf_counter()
    runs = []
    with ProcessPoolExecutor(args.workers) as pool:
        for run in pool.map(one_run, tasks):
            runs.append(run)
            if args.out is not None:  # saved after every run
                args.out.write_text(json.dumps(runs, indent=1))
    print(
        f"{len(runs)} runs in {time.perf_counter() - began:.0f} s wall ({args.workers} workers), "
        f"{sum(r['cpu_seconds'] for r in runs):.0f} s CPU in the runs"
    )
    if args.merge is not None:
        done = {(r["system"], r["scheduler"], r["seed"]) for r in runs}
        runs += [
            r
            for r in json.loads(args.merge.read_text())
            if (r["system"], r["scheduler"], r["seed"]) not in done
        ]
    if args.out is not None:
        args.out.write_text(json.dumps(runs, indent=1))
    report(runs)


if __name__ == "__main__":
    main()
