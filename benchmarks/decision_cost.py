#!/usr/bin/env python3
"""Microseconds per decision of every registered policy against the queue length.

One platform (``nodes=8,cores=32``) is filled at t=0 by long jobs (one per node, the last
node's split into a 31-core job and a 1-core job that ends at t=2). ``--lengths`` jobs
(1 to 32 cores, run times of minutes to a day; for the market policies each job gets the
market rule's profile and value curve) arrive at t=1, when
nothing can start; one more arrives at t=2, when the 1-core job ends. The decision at t=2
(one free core, one fresh arrival, the whole queue waiting) is then timed: the policy's
``decide`` is called on that same view repeatedly (the decision is not applied) and the
median CPU time (``process_time``; ``--wall`` for ``perf_counter``) is printed, with the ratio to
FIFO at the same length and, per policy, the growth from the second length to the last (100 to
10,000 by default).

Usage (from the repository root)::

    python benchmarks/decision_cost.py                      # every policy, 10..10,000
    python benchmarks/decision_cost.py --policies fifo maxvh easy ebf --lengths 100 10000

Single process, timings on a shared machine: read the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

PLATFORM = "nodes=8,cores=32"
LENGTHS = (10, 100, 1000, 10000)


def workload(length: int, seed: int = 1, market: bool = True) -> list[Any]:
    """The fillers and ``length + 1`` queued jobs (with ``market``, the market rule applied
    to all: moldable jobs on one node with value curves)."""
    from market_hpc.domain.job import Job
    from market_hpc.workload.market_rule import MarketRule

    rng = np.random.default_rng(seed)
    jobs = [Job(i, 0.0, 1e6, 1e6, units=32) for i in range(1, 8)]
    jobs += [Job(8, 0.0, 1e6, 1e6, units=31), Job(9, 0.0, 2.0, 2.0, units=1)]
    for k in range(length + 1):
        run = float(rng.integers(60, 86400))
        jobs.append(
            Job(100 + k, 1.0 if k < length else 2.0, run, run, units=int(rng.integers(1, 33)))
        )
    if not market:
        return jobs
    rule = MarketRule()
    return [rule.apply(job) for job in jobs]


def decision_state(policy_name: str, jobs: list[Any]) -> tuple[Any, Any]:
    """A model stopped at t=2 before its decision, and its policy."""
    from market_hpc.core.model import HPCModel, make_market_aware_policy
    from market_hpc.policies.base import NOTHING

    policy = make_market_aware_policy(policy_name, None, 0.0)
    model = HPCModel(jobs, PLATFORM, policy=policy, seed=1, record_timeseries=False)
    model.run(until=1.0)
    dispatch = model.manager.dispatch
    model.manager.dispatch = lambda: NOTHING  # type: ignore[method-assign]
    model.run(until=2.0)
    model.manager.dispatch = dispatch  # type: ignore[method-assign]
    return model, policy


def time_decision(
    policy_name: str, length: int, budget: float, clock: Any = time.process_time
) -> tuple[float, int]:
    """Median microseconds of ``decide`` at t=2 (CPU time by default: the machine is
    shared), and the queue length it saw."""
    from market_hpc.policies import scheduler_entry

    model, policy = decision_state(
        policy_name, workload(length, market=scheduler_entry(policy_name).market)
    )
    view = model.decision_view()
    rng = np.random.default_rng(0)
    times: list[float] = []
    spent = 0.0
    while spent < budget or len(times) < 3:
        began = clock()
        policy.decide(view, rng)
        took = clock() - began
        times.append(took)
        spent += took
        if took > budget:  # a slow policy (CP-SAT): one sample is enough
            break
    return 1e6 * statistics.median(times), len(view.queue)


def main() -> int:
    from market_hpc.policies import scheduler_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", nargs="*", help="policies (default: every registered one)")
    parser.add_argument("--lengths", nargs="*", type=int, default=list(LENGTHS))
    parser.add_argument("--budget", type=float, default=0.2, help="seconds of timed calls per cell")
    parser.add_argument(
        "--wall", action="store_true", help="time with perf_counter, not process CPU time"
    )
    args = parser.parse_args()
    clock = time.perf_counter if args.wall else time.process_time
    names = args.policies or scheduler_names()
    if "fifo" not in names:
        names = ["fifo", *names]
    rows: dict[str, list[float | None]] = {}
    for name in names:
        cells: list[float | None] = []
        for length in args.lengths:
            try:
                micros, _ = time_decision(name, length, args.budget, clock)
            except Exception as exc:  # noqa: BLE001 - a policy this set-up cannot run is reported
                print(f"{name}: {type(exc).__name__}: {exc}")
                micros = None
            cells.append(micros)
        rows[name] = cells
        print(
            f"{name:20s}",
            "  ".join("      n/a" if c is None else f"{c:9.1f}" for c in cells),
            flush=True,
        )
    fifo = rows["fifo"]
    head = "".join(f"{'q=' + str(n):>18s}" for n in args.lengths)
    what = "wall" if args.wall else "CPU"
    print(
        f"\n{what} microseconds per decision (x FIFO), platform {PLATFORM}\n{'policy':20s}{head}   "
        "growth"
    )
    for name, cells in rows.items():
        parts = [
            ("n/a" if c is None else f"{c:.3g} ({c / f:.0f}x)" if f else f"{c:.3g}")
            for c, f in zip(cells, fifo)
        ]
        growth = (
            f"{cells[-1] / cells[1]:.1f}x"
            if len(cells) > 2 and cells[1] and cells[-1] is not None
            else "n/a"
        )
        print(f"{name:20s}" + "".join(f"{p:>18s}" for p in parts) + f"   {growth}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
