"""Where a CP dispatching decision's time goes: inside CP-SAT's Solve, or in the Python
around it (instance, priority order, greedy plan, model building, checks).

    PYTHONPATH=. python benchmarks/cp_overhead.py [--jobs 1000] [--before /work/main]

Each of the four CP dispatchers (pcp20, pcp19, hcp19, cph; default parameters) replays
the same workload in this process: the first ``--jobs`` jobs of KTH-SP2 on
``nodes=30,cores=1`` (the synthetic GPU + memory workload of
``benchmarks/cp_equivalence.py`` when ``../shared/traces`` is absent). Per dispatcher it
prints the decisions, the total ``decide`` time, the wall time of the CP-SAT solve calls
(``cp_instance.solve``) and the rest (Python overhead), and ms per decision.

``--before CHECKOUT`` also runs the same measurement on another checkout of the package
(e.g. the unmodified main branch) in a child process, one dispatcher at a time, alternating
with this one, so both see about the same machine load, and prints the ratios. The
decisions are the same (``benchmarks/cp_equivalence.py`` checks that), so the solve time
should match and only the overhead differ; the machine is shared, so numbers are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KTH = REPO.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
SCHEDULERS = ("pcp20", "pcp19", "hcp19", "cph")


def workload(jobs: int) -> tuple[str, str, list[Any]]:
    """``(name, platform, jobs)``: KTH-SP2's first jobs, or the synthetic multi-resource one."""
    if KTH.is_file():
        from market_hpc.domain.platform import load_platform
        from market_hpc.experiment import config_from_dict
        from market_hpc.experiment.run import build_workload

        config = config_from_dict(
            {
                "name": "kth",
                "platform": "nodes=30,cores=1",
                "timeseries": False,
                "workload": {"trace": str(KTH), "first_n": jobs},
                "policy": {"scheduler": "easy"},
            }
        )
        return (
            f"KTH-SP2 first {jobs}",
            "nodes=30,cores=1",
            build_workload(config, load_platform(config.platform))[0],
        )
    sys.path.insert(0, str(REPO / "tests"))
    from invariants import random_workload

    platform = "nodes=5,cores=8,gpus=2,mem=32"
    units = [(1, 0, 0, 2048), (2, 1, 0, 4096), (4, 0, 0, 1024), (1, 0, 0, 16384), (8, 2, 0, 30000)]
    return f"synthetic {jobs}", platform, random_workload(1, platform, units, count=jobs)


def measure(scheduler: str, jobs: int) -> dict[str, Any]:
    """Decisions, decide seconds and solve seconds of one replay."""
    from market_hpc.algorithms.cp import instance as cp_instance
    from market_hpc.algorithms.cp import pcp20 as cp_pcp20
    from market_hpc.algorithms.cp import pooled as cp_pooled
    from market_hpc.core.model import HPCModel

    name, platform, loaded = workload(jobs)
    solve_seconds = [0.0]
    original = cp_instance.solve

    def timed_solve(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            solve_seconds[0] += time.perf_counter() - began

    cp_pcp20.solve = cp_pooled.solve = timed_solve  # the two call sites of cp_instance.solve
    try:
        model = HPCModel(
            loaded, platform=platform, scheduler=scheduler, seed=3, record_timeseries=False
        )
        policy = model.policy
        decide = policy.decide
        decisions, decide_seconds = [0], [0.0]

        def timed_decide(view: Any, rng: Any) -> Any:
            began = time.perf_counter()
            try:
                return decide(view, rng)
            finally:
                decisions[0] += 1
                decide_seconds[0] += time.perf_counter() - began

        policy.decide = timed_decide
        began = time.perf_counter()
        model.run()
        run_seconds = time.perf_counter() - began
    finally:
        cp_pcp20.solve = cp_pooled.solve = original
    return {
        "workload": name,
        "scheduler": scheduler,
        "decisions": decisions[0],
        "run": run_seconds,
        "decide": decide_seconds[0],
        "solve": solve_seconds[0],
    }


def child(checkout: str, scheduler: str, jobs: int) -> dict[str, Any]:
    """``measure`` run by another checkout's code in a child process."""
    env = dict(os.environ, PYTHONPATH=checkout, PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--jobs", str(jobs), "--one", scheduler],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def row(label: str, r: dict[str, Any]) -> str:
    rest = r["decide"] - r["solve"]
    per = 1000.0 / max(1, r["decisions"])
    return (
        f"{label:<16}{r['decisions']:>10}{r['decide']:>11.2f}{r['solve']:>10.2f}{rest:>10.2f}"
        f"{r['decide'] * per:>12.2f}{r['solve'] * per:>10.2f}{rest * per:>10.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument(
        "--before", help="another checkout of market_hpc to compare with (e.g. /work/main)"
    )
    parser.add_argument("--schedulers", default=",".join(SCHEDULERS))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child mode: one scheduler, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.jobs)))
        return 0
    print(
        f"{'':<16}{'decisions':>10}{'decide s':>11}{'solve s':>10}{'rest s':>10}"
        f"{'ms/decide':>12}{'ms solve':>10}{'ms rest':>10}"
    )
    for scheduler in args.schedulers.split(","):
        before = child(args.before, scheduler, args.jobs) if args.before else None
        now = measure(scheduler, args.jobs)
        if before is not None:
            print(row(f"{scheduler} before", before))
        print(
            row(f"{scheduler} now", now) + f"   ({now['workload']}, whole run {now['run']:.2f} s)"
        )
        if before is not None:
            rest_before, rest_now = before["decide"] - before["solve"], now["decide"] - now["solve"]
            print(
                f"{scheduler} ratio before/now: decide {before['decide'] / now['decide']:.2f}x, "
                f"solve {before['solve'] / now['solve']:.2f}x, rest "
                f"{rest_before / max(rest_now, 1e-9):.2f}x; "
                f"same decisions count: {before['decisions'] == now['decisions']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
