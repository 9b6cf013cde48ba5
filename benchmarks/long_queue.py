#!/usr/bin/env python3
"""Scheduling passes over long queues: the kept-up queue structures against the plain passes.

Archive traces keep thousands of jobs waiting for months, and every arrival and
completion makes a decision. Three shortcuts keep such decisions cheap; this script runs
each policy twice on the same overloaded workload in one process, with the shortcut and
without it, checks that every job starts at the same time on both sides and prints the
time per job, the mean queue length and the ratio:

* ``easy``: the backfilling walk visits only the jobs the queue's columns keep
  (``algorithms/queue_columns.py``), against the walk over every waiting job
  (``Easy.columns_from`` set out of reach);
* ``sjf``, ``ljf``: the queue kept sorted by the scheduler's key between decisions
  (``view.queue_sorted``), against a sort of the whole queue at every decision;
* ``queues-partitioned``, ``queues-hybrid``, ``queues-shared`` (seed 004): a pass in which
  no waiting job's cores fit the free cores is skipped, against running every pass;
* ``bb-baseline``, ``bbsched`` (seed 003, FCFS): the window taken from the queue's front
  and the rest passed on in queue order, against arranging the whole queue;
* ``prb``, ``ebf`` (seed 000, first-fit): jobs asking for more than is free left out of
  the pass (``QueueColumns.fitting``), against trying every waiting job.

The workload is KTH-SP2 (``../shared/traces``) on fewer processors than the trace was
made for (``--procs``, default 30 single-core nodes; jobs larger than that are left out),
or, without the trace or with ``--synthetic``, ``scaling.py``'s synthetic jobs offered at
load ``--load`` (default 1.6) on ``--procs`` nodes. Timed: ``HPCModel(...).run()``.

Usage (from the repository root)::

    python benchmarks/long_queue.py                    # KTH-SP2, first 5,000 jobs, 30 nodes
    python benchmarks/long_queue.py --jobs 10000 --policies easy ljf
    python benchmarks/long_queue.py --synthetic --procs 64 --jobs 20000

Exit status 1 when any start time differs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
KTH = REPO.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
POLICIES = (
    "easy",
    "sjf",
    "ljf",
    "queues-partitioned",
    "queues-hybrid",
    "queues-shared",
    "bb-baseline",
    "bbsched",
    "prb",
    "ebf",
)


def load_jobs(args: argparse.Namespace) -> tuple[list, str]:
    """The workload (``Job`` records fitting ``--procs``) and its description."""
    from market_hpc.domain.job import Job

    if KTH.exists() and not args.synthetic:
        from market_hpc.workload.swf import read_swf

        jobs = [j for j in read_swf(KTH).jobs if j.cores <= args.procs][: args.jobs]
        return jobs, f"KTH-SP2, first {len(jobs):,} jobs of <= {args.procs} processors"
    sys.path.insert(0, str(REPO / "benchmarks"))
    import scaling

    scaling.LOAD = args.load
    submit, run, estimate, procs = scaling.workload(args.jobs, args.procs)
    keep = procs <= args.procs
    jobs = [
        Job(i + 1, float(s), float(r), float(e), units=int(p))
        for i, (s, r, e, p) in enumerate(zip(submit[keep], run[keep], estimate[keep], procs[keep]))
    ]
    return jobs, f"synthetic, {len(jobs):,} jobs at offered load {args.load}"


def queue_config(mode: str, procs: int):  # type: ignore[no-untyped-def]
    """Three queues over ``procs`` single-core nodes: short, narrow, wide."""
    from market_hpc.domain.queues import QueueConfig, QueueSpec

    third = max(procs // 3, 1)
    queues = (
        QueueSpec("short", 1, procs, 0, 3600),
        QueueSpec("narrow", 1, third, 3600),
        QueueSpec("wide", third + 1, procs, 3600),
    )
    if mode == "partitioned":
        return QueueConfig(queues, partitions=(third, third, procs - 2 * third))
    if mode == "hybrid":
        return QueueConfig(
            queues,
            mode="hybrid",
            partitions=(third // 2, third // 2, third),
            pool=procs - 2 * third,
            tau_pf=0.2,
        )
    return QueueConfig(queues, mode="shared")


@contextlib.contextmanager
def without_shortcut(policy: str) -> Iterator[None]:
    """Turn the policy's long-queue shortcut off for the block."""
    from market_hpc.core.view import ModelView
    from market_hpc.policies.classic import Easy

    if policy == "easy":
        saved = Easy.columns_from
        Easy.columns_from = 10**12
        try:
            yield
        finally:
            Easy.columns_from = saved
        return
    if policy.startswith("bb"):  # seed 003 windows: always arranged over the whole queue
        from market_hpc.policies.bbsched.schedulers import WindowScheduler

        saved_front = WindowScheduler._arrange_front
        WindowScheduler._arrange_front = lambda *args: None  # type: ignore[method-assign]
        try:
            yield
        finally:
            WindowScheduler._arrange_front = saved_front  # type: ignore[method-assign]
        return
    if policy in ("prb", "ebf"):  # seed 000: every waiting job tried, placeable or not
        from market_hpc.policies.hetero import schedulers as hetero_schedulers

        saved_skip = hetero_schedulers._skips_unplaceable
        hetero_schedulers._skips_unplaceable = lambda allocator: False
        try:
            yield
        finally:
            hetero_schedulers._skips_unplaceable = saved_skip
        return
    name = "queue_sorted" if policy in ("sjf", "ljf") else "queue_min_cores"
    saved_attr = ModelView.__dict__[name]
    delattr(ModelView, name)
    try:
        yield
    finally:
        setattr(ModelView, name, saved_attr)


def run_once(policy: str, jobs: list, procs: int) -> tuple[float, np.ndarray, float]:
    """(seconds, start times by job order, mean queue length at decisions)."""
    from market_hpc.core.model import HPCModel
    from market_hpc.policies import make_policy

    platform = f"nodes={procs},cores=1"
    if policy.startswith("queues-"):
        config = queue_config(policy.removeprefix("queues-"), procs)
        model = HPCModel(
            jobs,
            platform,
            policy=make_policy(policy, "first-fit", scheduler_params={"config": config}),
            queues=config,
            record_timeseries=True,
        )
    else:
        model = HPCModel(jobs, platform, policy, "first-fit", record_timeseries=True)
    began = time.perf_counter()
    model.run()
    took = time.perf_counter() - began
    frame = model.recorder.jobs_frame().set_index("job_id")
    starts = frame.loc[[j.job_id for j in jobs], "start_time"].to_numpy(dtype=np.float64)
    return took, starts, float(model.recorder.timeseries_frame()["queue_length"].mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--jobs", type=int, default=5000, help="jobs to replay (default 5,000)")
    parser.add_argument("--procs", type=int, default=30, help="single-core nodes (default 30)")
    parser.add_argument(
        "--synthetic", action="store_true", help="use the synthetic workload even with the trace"
    )
    parser.add_argument(
        "--load", type=float, default=1.6, help="offered load of the synthetic workload"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    warnings.filterwarnings("ignore")
    jobs, described = load_jobs(args)
    print(f"== {described} on nodes={args.procs},cores=1")
    print(
        f"{'policy':20s} {'mean queue':>10s} {'with (us/job)':>14s} {'without':>10s} {'ratio':>7s} "
        "mismatches"
    )
    failed = 0
    for policy in args.policies:
        fast, starts, queue = run_once(policy, jobs, args.procs)
        with without_shortcut(policy):
            slow, plain, _ = run_once(policy, jobs, args.procs)
        same = (starts == plain) | (np.isnan(starts) & np.isnan(plain))
        mismatches = int((~same).sum())
        failed += mismatches
        per_job = 1e6 / len(jobs)
        print(
            f"{policy:20s} {queue:10.0f} {fast * per_job:14.1f} {slow * per_job:10.1f} "
            f"{slow / fast:6.2f}x {mismatches}",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
