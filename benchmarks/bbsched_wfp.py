"""The WFP base order (seed 003, Theta's base scheduler) against queue length.

``wfp_order`` sorts the whole queue with a Python key per job at every invocation;
``wfp_order_fast`` computes the same priorities in numpy and sorts them with a stable
``lexsort`` (the same order, tested). Both stay O(queue): EASY's backfilling pass walks
the whole queue in WFP order after the window, so the full order is needed; what changes
is the per-job constant (three attribute reads instead of a key call, a tuple and a
Python sort comparison). Prints per queue length the mean time of one ordering and the
ratio, then a whole WFP run (KTH-like synthetic overload) with each.

    python benchmarks/bbsched_wfp.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.policies.bbsched.window import wfp_order, wfp_order_fast


def queue(count: int, seed: int = 3) -> list[Job]:
    rng = np.random.default_rng(seed)
    return [
        Job(
            i + 1,
            float(rng.uniform(0, 86400)),
            100.0,
            float(rng.uniform(60, 86400)),
            units=int(rng.integers(1, 64)),
        )
        for i in range(count)
    ]


def mean_seconds(function, jobs: list[Job], repeat: int) -> float:  # type: ignore[no-untyped-def]
    began = time.process_time()
    for step in range(repeat):
        function(jobs, 90000.0 + step)
    return (time.process_time() - began) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print(f"{'queue':>6} | {'sorted key (ms)':>15} | {'numpy (ms)':>10} | ratio")
    for count in (20, 50, 200, 1000, 5000):
        jobs = queue(count)
        assert [j.job_id for j in wfp_order(jobs, 1e5)] == [
            j.job_id for j in wfp_order_fast(jobs, 1e5, small=0)
        ]
        plain = mean_seconds(wfp_order, jobs, args.repeat)
        fast = mean_seconds(lambda q, now: wfp_order_fast(q, now, small=0), jobs, args.repeat)
        print(f"{count:>6} | {plain * 1e3:15.3f} | {fast * 1e3:10.3f} | {plain / fast:5.2f}x")
    print("(CPU time per ordering; queues of <= 48 jobs use the sorted key in the policy)")
    print(
        f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
