"""PCP'20 (and HCP'19) against EASY on one overload-study slice, in one process: CPU ratio.

    python benchmarks/cp_budget.py                          # KTH-SP2, first slice, 2x load
    python benchmarks/cp_budget.py --trace hpc2n --slice 1 --budget 0 1.0
    python benchmarks/cp_budget.py --trace curie --schedulers pcp20 hcp19

The slices are those of ``scenarios/overload_study.toml`` (read from it); every run is
``scenarios/overload_study_base.toml`` with that slice, the load and the scheduler (EASY
with first-fit, the CP dispatchers with best-fit, as the study). For each decision budget
(``policy.params.decision_budget``; 0: none, the behaviour before budgets) it prints the
run's CPU (``run_cpu_seconds``), its ratio to EASY's run in the same process, CPU per
decision, the decisions whose budget ran out (``BUDGET``, ``cp_budget_exhausted``) and the
mean bounded slowdown. Goal (issue 45): CPU per run within 50x EASY's. The machine is
shared: read the ratio together with the load average printed.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "scenarios" / "overload_study.toml"
BASE = REPO / "scenarios" / "overload_study_base.toml"
TRACES = {"kth": "kth-sp2", "hpc2n": "hpc2n", "curie": "curie"}  # catalogue names in the study file


def slice_settings(trace: str, number: int) -> dict[str, Any]:
    """The ``--set`` overrides of slice ``number`` (1-5) of ``trace`` in the study file."""
    spec = tomllib.loads(STUDY.read_text())["zip"][1]
    rows = [i for i, path in enumerate(spec["workload.trace"]) if TRACES[trace] == path.lower()]
    if not 1 <= number <= len(rows):
        raise SystemExit(f"--slice must be 1-{len(rows)} for {trace}, got {number}")
    i = rows[number - 1]
    return {key: values[i] for key, values in spec.items()}


def run(
    settings: dict[str, Any], scheduler: str, load: float, budget: float | None
) -> dict[str, Any]:
    """One run's summary."""
    from market_hpc.experiment import load_scenario
    from market_hpc.experiment.run import simulate

    overrides = {
        **settings,
        "workload.load_factor": load,
        "policy.scheduler": scheduler,
        "policy.allocator": "first-fit" if scheduler == "easy" else "best-fit",
    }
    if budget is not None:
        overrides["policy.params.decision_budget"] = budget
    return simulate(load_scenario(BASE, overrides)).summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", choices=sorted(TRACES), default="kth")
    parser.add_argument("--slice", type=int, default=1, help="1-5, as in the study file")
    parser.add_argument(
        "--load", type=float, default=2.0, help="workload.load_factor (default 2.0)"
    )
    parser.add_argument("--schedulers", nargs="+", default=["pcp20"], choices=["pcp20", "hcp19"])
    parser.add_argument(
        "--budget",
        nargs="+",
        type=float,
        default=[None],
        help="decision budgets to run (default: the scheduler's, 1.0; 0: none)",
    )
    args = parser.parse_args()
    settings = slice_settings(args.trace, args.slice)
    from market_hpc.errors import ConfigError
    from market_hpc.workload.trace_catalogue import resolve_trace

    try:
        settings["workload.trace"] = resolve_trace(settings["workload.trace"], STUDY.parent)
    except ConfigError as error:
        raise SystemExit(str(error)) from None
    print(
        f"{TRACES[args.trace]} slice {args.slice} "
        f"({settings['workload.start']:.0f}-{settings['workload.end']:.0f} s), "
        f"load {args.load}; load average {os.getloadavg()[0]:.2f}"
    )
    easy = run(settings, "easy", args.load, None)
    base = easy["run_cpu_seconds"]
    print(
        f"{'run':<24} {'CPU s':>8} {'x EASY':>8} {'ms/decision':>12} {'BUDGET':>7} "
        f"{'exhausted':>9} {'bsld':>9}"
    )
    print(
        f"{'easy':<24} {base:8.2f} {1.0:8.1f} {easy['cpu_per_decision_ms']:12.3f} {'-':>7} "
        f"{'-':>9} "
        f"{easy['mean_bounded_slowdown']:9.2f}"
    )
    for scheduler in args.schedulers:
        for budget in args.budget:
            summary = run(settings, scheduler, args.load, budget)
            cpu = summary["run_cpu_seconds"]
            label = f"{scheduler} budget {'default' if budget is None else budget}"
            print(
                f"{label:<24} {cpu:8.2f} {cpu / base:8.1f} {summary['cpu_per_decision_ms']:12.3f} "
                f"{summary['cp_status_counts'].get('BUDGET', 0):7d} "
                f"{summary['cp_budget_exhausted']:9d} "
                f"{summary['mean_bounded_slowdown']:9.2f}"
            )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
