"""Seed 004 speed: one monthly reconfiguration of an HPC2N month, and the single-queue path.

    PYTHONPATH=$PWD python benchmarks/queues.py [--month 7] [--workers 1 2]

1. Plans one HPC2N month (DP-NLPM + DQR + hybrid; the previous month is the history)
   with the sampling simulations in this process and in N local processes of the sweep
   runner; prints the time, the share spent in simulations, and the ratio.
2. Replays the month with EASY and no queues here and in ``/work/main`` (the code
   before seed 004, another process) and prints the ratio: the single-queue path must
   not slow down. Also the ``queues-shared`` dispatcher vs ``easy`` (same schedule).

Timings on a shared 2-core machine are noisy: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from market_hpc.core.model import HPCModel
from market_hpc.domain.platform import load_platform
from market_hpc.experiment.config import QueuesConfig
from market_hpc.experiment.queues import plan_period
from market_hpc.experiment.sweep_exec import make_executor
from market_hpc.policies import make_policy
from market_hpc.workload import read_swf, time_slice

TRACE = (
    Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "HPC2N-2002-2.1-cln.swf.gz"
)
CURIE = TRACE.with_name("CEA-Curie-2011-2.1-cln.swf.gz")
CURIE_PLATFORM = "nodes=5040,cores=16"  # Curie's thin nodes (docs/queues.md)
MONTH = 30 * 86400.0
REPLAY = """
import sys, time
from market_hpc.core.model import HPCModel
from market_hpc.workload import read_swf, time_slice
jobs = list(time_slice(read_swf(sys.argv[1]).jobs, float(sys.argv[2]), float(sys.argv[3])))
best = 1e9
for _ in range(3):
    began = time.perf_counter()
    HPCModel(jobs, "hpc2n", "easy", "first-fit", record_timeseries=False).run()
    best = min(best, time.perf_counter() - began)
print(best)
"""


def plan(jobs, start, workers, platform="hpc2n"):  # type: ignore[no-untyped-def]
    settings = QueuesConfig(strategy="hybrid", workers=workers)
    with make_executor(workers) as executor:
        began, cpu = time.perf_counter(), time.process_time()
        result = plan_period(
            jobs, start, MONTH, load_platform(platform), settings, seed=1, executor=executor
        )
        print(f"  workers={workers}: CPU time of this process {time.process_time() - cpu:.1f} s")
        return time.perf_counter() - began, result


def replay_seconds(root: str, start: float, end: float) -> float:
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run(
        [sys.executable, "-c", REPLAY, str(TRACE), str(start), str(end)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--month", type=int, default=7, help="HPC2N month index (30-day) to configure"
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--main", default="/work/main", help="checkout without seed 004, for the ratio"
    )
    parser.add_argument(
        "--curie-start",
        type=float,
        default=None,
        help="instead: plan one Curie month (5,040 nodes) from this submit time (s) and stop",
    )
    args = parser.parse_args()
    if args.curie_start is not None:
        jobs = list(time_slice(read_swf(CURIE).jobs, args.curie_start, args.curie_start + MONTH))
        print(
            f"history: {len(jobs)} Curie jobs from {args.curie_start:.0f} s -> next month's "
            "configuration"
        )
        seconds, result = plan(jobs, args.curie_start, 1, CURIE_PLATFORM)
        print(
            f"  planning one month of a 5,040-node system: {seconds:.1f} s wall (goal 60 s), "
            "simulations "
            f"{result.simulation_seconds:.1f} s, {result.simulations} distinct simulations"
        )
        print(
            f"    DP-NLPM: {result.details['dpnlpm'].get('source')}; DQR: {result.details['dqr']}"
        )
        return
    start = (args.month - 1) * MONTH
    jobs = list(time_slice(read_swf(TRACE).jobs, start, start + MONTH))
    print(
        f"history: {len(jobs)} HPC2N jobs of month {args.month - 1} -> configuration of month "
        f"{args.month}"
    )
    times = {}
    for workers in args.workers:
        seconds, result = plan(jobs, start, workers)
        times[workers] = seconds
        print(
            f"  workers={workers}: {seconds:6.1f} s, simulations {result.simulation_seconds:6.1f} "
            "s "
            f"({100 * result.simulation_seconds / seconds:.0f}%), {result.simulations} distinct "
            "simulations"
        )
        print(f"    hybrid: {result.configs['hybrid'].describe()}")
    if len(times) > 1:
        first, *rest = args.workers
        for workers in rest:
            print(
                f"  ratio workers={workers} / workers={first}: {times[workers] / times[first]:.2f}"
            )
    month = list(time_slice(read_swf(TRACE).jobs, start + MONTH, start + 2 * MONTH))
    if Path(args.main).is_dir():
        here = base = float("inf")
        for _ in range(3):  # alternate the two checkouts: load on a shared machine drifts
            here = min(
                here,
                replay_seconds(
                    str(Path(__file__).resolve().parents[1]), start + MONTH, start + 2 * MONTH
                ),
            )
            base = min(base, replay_seconds(args.main, start + MONTH, start + 2 * MONTH))
        print(
            f"single-queue EASY replay ({len(month)} jobs): this branch {here:.2f} s, main "
            f"{base:.2f} s, "
            f"ratio {here / base:.2f}"
        )
    timings = {}
    for name in ("easy", "queues-shared"):
        began = time.perf_counter()
        HPCModel(
            month, "hpc2n", policy=make_policy(name, "first-fit"), record_timeseries=False
        ).run()
        timings[name] = time.perf_counter() - began
    print(
        f"queues-shared vs easy dispatcher: {timings['queues-shared']:.2f} s vs "
        f"{timings['easy']:.2f} s, "
        f"ratio {timings['queues-shared'] / timings['easy']:.2f}"
    )


if __name__ == "__main__":
    main()
