"""Hybrid-queue dispatcher (Kondameedi & Vadhiyar) cost against queue length: per-queue
passes vs the walk over every waiting job, same schedules.

    PYTHONPATH=$PWD python benchmarks/queues_routing.py [--trace hpc2n|curie] [--days 120]
        [--strategy static] [--repeat 1]

Builds a multi-queue run of ``scenarios/queues.toml`` (the HPC2N slice, or the Curie
slice on 5,040 x 16 cores) with the strategy's configurations, replays it with
``QueueDispatcher.per_queue`` on and off in this process, checks the job frames are
identical, and prints both times, the ratio, the dispatch time and the longest queue.
Timings on a shared 2-core machine are noisy: compare the ratio of one run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from market_hpc.domain.platform import load_platform
from market_hpc.experiment import load_scenario
from market_hpc.experiment.queues import queue_run
from market_hpc.experiment.run import build_workload
from market_hpc.policies.queues.dispatchers import QueueDispatcher

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "queues.toml"
TRACES = {
    "hpc2n": {"workload.start": 15_552_000.0},
    "curie": {
        "platform": "nodes=5040,cores=16",
        "workload.start": 32_000_000.0,
        "workload.trace": str(
            Path(__file__).resolve().parents[2]
            / "shared"
            / "traces"
            / "CEA-Curie-2011-2.1-cln.swf.gz"
        ),
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", choices=list(TRACES), default="hpc2n")
    parser.add_argument("--days", type=float, default=120.0)
    parser.add_argument("--strategy", default="static")
    args = parser.parse_args()
    overrides = dict(TRACES[args.trace])
    overrides["workload.end"] = overrides["workload.start"] + args.days * 86400
    config = load_scenario(SCENARIO, {**overrides, "queues.strategy": args.strategy})
    platform = load_platform(config.platform)
    jobs, _ = build_workload(config, platform)
    print(f"{args.trace}: {len(jobs)} jobs, {args.days:g} days, strategy {args.strategy}")
    frames, seconds = [], {}
    for per_queue in (True, False):
        QueueDispatcher.per_queue = per_queue
        run = queue_run(config, jobs, platform)
        began = time.perf_counter()
        longest = 0
        while run.model.running:
            run.model.step()
            longest = max(longest, len(run.model.queue_agent.jobs))
        seconds[per_queue] = time.perf_counter() - began
        frames.append(run.model.recorder.jobs_frame())
        print(
            f"  per_queue={per_queue}: replay {seconds[per_queue]:7.1f} s, dispatch "
            f"{run.model.manager.decide_seconds:7.1f} s, {run.model.manager.decisions} decisions, "
            f"longest queue {longest}"
        )
    QueueDispatcher.per_queue = True
    print(f"  identical schedules: {frames[0].equals(frames[1])}")
    print(f"  ratio walk / per-queue: {seconds[False] / seconds[True]:.2f}")


if __name__ == "__main__":
    main()
