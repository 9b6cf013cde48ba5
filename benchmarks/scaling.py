#!/usr/bin/env python3
"""Scaling: seconds per 1,000 jobs and peak memory against the node count and the job count.

Rows (FIFO and EASY with first-fit on ``nodes=N,cores=1``):

* **nodes**: the same synthetic workload of 10^5 jobs on 10^2, 10^3, 10^4 and 10^5 nodes
  (arrival rate tuned for a 90% load on 10^2 nodes, so the small machine queues and the
  large ones do not: only the node count changes);
* **jobs**: 10^4, 10^5 and 10^6 jobs on 10^3 nodes (arrival rate tuned for a 90% load on
  10^3 nodes).

Jobs: 30% serial, the rest 2^k processors with k uniform in 1..6; run times log-uniform
in [30 s, 20,000 s]; estimates the run time times a uniform factor in [1, 4], rounded up;
Poisson arrivals on the integer second grid; everything from one seed. Each row runs in
its own child process: it streams the jobs into ``HPCModel`` (an iterator, so the trace
never sits in memory), runs it and writes ``jobs.csv`` in chunks to a temporary file
(``Recorder.write_jobs_csv``); the child's peak RSS after that is the row's memory. Then
the same child runs the bare heapq loop of ``heapq_yardstick.py`` on the same jobs (int
lists built from the same arrays: its list building is timed, as in the yardstick),
checks that every start time agrees and prints both times. Ratios are taken in one
process; on a loaded machine they are noisy (``uptime`` is printed).

Goals: ours within 5x of the heapq loop on every row; seconds per 1,000 jobs
flat (within 2x) from 10^2 to 10^5 nodes; the 10^6-job row under 1 GB.

Usage (from the repository root)::

    python benchmarks/scaling.py            # full: about 15 min on an idle 2-core machine
    python benchmarks/scaling.py --quick    # 2x10^4 jobs per node row, 10^4/10^5 jobs: about 2 min
    # one row (scheduler nodes jobs load-nodes):
    python benchmarks/scaling.py --row fifo 100 100000 100

Exit status 1 when any start time differs.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SEED = 13
LOAD = 0.9


def workload(n_jobs: int, load_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(submit, run, estimate, procs)`` int64 arrays of the synthetic workload."""
    rng = np.random.default_rng(SEED)
    procs = np.where(rng.random(n_jobs) < 0.3, 1, 2 ** rng.integers(1, 7, n_jobs)).astype(np.int64)
    run = np.ceil(np.exp(rng.uniform(np.log(30), np.log(20_000), n_jobs))).astype(np.int64)
    estimate = np.ceil(run * rng.uniform(1.0, 4.0, n_jobs)).astype(np.int64)
    mean_work = float((procs * run).mean())
    gap = mean_work / (LOAD * load_nodes)
    submit = np.floor(np.cumsum(rng.exponential(gap, n_jobs))).astype(np.int64)
    return submit, run, estimate, procs


def job_stream(arrays: tuple[np.ndarray, ...]) -> Iterator:
    """``Job`` records one at a time, in (submit, job_id) order."""
    from market_hpc.domain.job import Job

    submit, run, estimate, procs = arrays
    for i, (s, r, e, p) in enumerate(
        zip(submit.tolist(), run.tolist(), estimate.tolist(), procs.tolist())
    ):
        yield Job(i + 1, float(s), float(r), float(e), units=p)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_row(scheduler: str, nodes: int, n_jobs: int, load_nodes: int) -> dict[str, float | int]:
    """One row, in this process: ours (streamed in, results written in chunks), then the
    heapq loop; returns the numbers as a dict."""
    sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]
    from heapq_yardstick import yardstick

    from market_hpc.core.model import HPCModel

    arrays = workload(n_jobs, load_nodes)
    gc.collect()
    with tempfile.TemporaryDirectory() as tmp:
        cpu = time.process_time()
        began = time.perf_counter()
        model = HPCModel(
            job_stream(arrays),
            f"nodes={nodes},cores=1",
            scheduler,
            "first-fit",
            record_timeseries=False,
        )
        model.run()
        ran = time.perf_counter()
        model.recorder.write_jobs_csv(Path(tmp) / "jobs.csv")
        ours = time.perf_counter() - began
        ours_cpu = time.process_time() - cpu
    ours_run = ran - began
    ours_peak = peak_mb()
    columns = model.recorder.jobs
    ids = np.array(columns.ints["job_id"], dtype=np.int64)
    starts = np.array(columns.floats["start_time"])[np.argsort(ids)]
    del model, columns
    gc.collect()
    cpu = time.process_time()
    began = time.perf_counter()
    submit, run, estimate, procs = (a.tolist() for a in arrays)
    built = time.perf_counter()
    theirs = yardstick(submit, run, estimate, procs, nodes, scheduler == "easy")
    ended = time.perf_counter()
    heapq_cpu = time.process_time() - cpu
    expected = np.array([np.nan if s is None else s for s in theirs], dtype=np.float64)
    mismatches = int((~((starts == expected) | (np.isnan(starts) & np.isnan(expected)))).sum())
    return {
        "scheduler": scheduler,
        "nodes": nodes,
        "jobs": n_jobs,
        "ours_s": ours,
        "ours_run_s": ours_run,
        "ours_cpu_s": ours_cpu,
        "heapq_cpu_s": heapq_cpu,
        "heapq_s": ended - began,
        "heapq_loop_s": ended - built,
        "peak_mb": ours_peak,
        "mismatches": mismatches,
    }


def child(scheduler: str, nodes: int, n_jobs: int, load_nodes: int) -> dict[str, float | int]:
    out = subprocess.run(
        [sys.executable, __file__, "--row", scheduler, str(nodes), str(n_jobs), str(load_nodes)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"row {scheduler} {nodes} {n_jobs} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def print_row(kind: str, row: dict[str, float | int]) -> None:
    per_k = 1000.0 / float(row["jobs"])
    ratio = float(row["ours_s"]) / float(row["heapq_s"])
    cpu_ratio = float(row["ours_cpu_s"]) / float(row["heapq_cpu_s"])
    flag = "" if max(ratio, cpu_ratio) <= 5 else "  SLOW"
    print(
        f"{kind:<6} {row['scheduler']:<5} {row['nodes']:>7,} {row['jobs']:>10,}"
        f" {float(row['ours_s']) * per_k:>9.3f} {float(row['ours_cpu_s']) * per_k:>9.3f}"
        f" {float(row['heapq_s']) * per_k:>9.4f} {float(row['heapq_cpu_s']) * per_k:>9.4f}"
        f" {ratio:>6.1f}x {cpu_ratio:>6.1f}x {float(row['peak_mb']):>7.0f} "
        f"{row['mismatches']:>5}{flag}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller rows (about 2 minutes)")
    parser.add_argument(
        "--row",
        nargs=4,
        metavar=("SCHEDULER", "NODES", "JOBS", "LOAD_NODES"),
        help="run one row in this process and print it as JSON",
    )
    parser.add_argument(
        "--scheduler", choices=("fifo", "easy"), action="append", help="repeatable; default: both"
    )
    args = parser.parse_args(argv)
    if args.row:
        scheduler, nodes, n_jobs, load_nodes = args.row
        print(json.dumps(run_row(scheduler, int(nodes), int(n_jobs), int(load_nodes))))
        return 0
    node_jobs = 20_000 if args.quick else 100_000
    job_counts = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average"
        f" {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        "seconds per 1,000 jobs: wall and CPU (process time; less sensitive to other load),"
        " ours (build + run + chunked jobs.csv) and the bare heapq loop; their ratios"
    )
    print(
        f"{'rows':<6} {'sched':<5} {'nodes':>7} {'jobs':>10} {'ours wall':>9} {'ours cpu':>9}"
        f" {'heap wall':>9} {'heap cpu':>9} {'wall':>7} {'cpu':>7} {'peak MB':>7} {'mism.':>5}"
    )
    failures = 0
    for scheduler in args.scheduler or ["fifo", "easy"]:
        per_k = []
        for nodes in (100, 1_000, 10_000, 100_000):
            row = child(scheduler, nodes, node_jobs, 100)
            print_row("nodes", row)
            per_k.append(float(row["ours_cpu_s"]) / float(row["jobs"]) * 1000)
            failures += int(row["mismatches"])
        print(
            f"       {scheduler}: CPU seconds per 1,000 jobs from 10^2 to 10^5 nodes vary by"
            f" {max(per_k) / min(per_k):.2f}x (goal: within 2x)"
        )
        for n_jobs in job_counts:
            row = child(scheduler, 1_000, n_jobs, 1_000)
            print_row("jobs", row)
            failures += int(row["mismatches"])
    print(
        f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())};"
        f" total start-time mismatches: {failures}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
