#!/usr/bin/env python3
"""Sweep scaling: 1 vs 2 local workers, and the per-run overhead of Dask.

(a) Local processes. One sweep of ``--runs`` runs (default 20) of over 1 s each
    (Lublin-Feitelson, EASY on the KTH SP2 at load factor 1.5, one seed per run; the job
    count is calibrated so that seed 1 takes ``--seconds``, default 1.5 s) runs twice through
    ``run_sweep`` into fresh directories: ``--workers 1`` (in this process) and ``--workers 2``
    (spawned processes, start-up included). Prints both wall times, the mean run time and the ratio.
    Target: >= 1.7x.
(b) Dask. ``--short-runs`` short runs (default 200, a few tens of ms each) go through a
    warmed pool of 2 local processes and a warmed Dask LocalCluster of 2 single-threaded
    workers (both started and given a first task before timing). Per-run overhead of Dask
    over local processes = (T_dask - T_processes) x 2 workers / runs. Target: < 100 ms.
    Start-up times are printed separately.

Wall-time ratios need idle cores: the load average is printed first, and a control
(a pure-Python loop, twice serially vs in 2 processes) shows the most any parallel run
can gain on this machine at this moment.

Usage::

    python benchmarks/sweep_scaling.py [--runs 20] [--seconds 1.5] [--short-runs 200] [--no-dask]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

from market_hpc.experiment import config_from_dict, simulate
from market_hpc.experiment.sweep import load_sweep, run_sweep
from market_hpc.experiment.sweep_exec import DaskExecutor, ProcessExecutor, RunTask, execute_run

SWEEP = """
platform = "kth-sp2"
timeseries = false
seeds = {runs}
workload = {{ generator = "lublin-feitelson", jobs = {jobs}, load_factor = 1.5 }}
policy = {{ scheduler = "{scheduler}" }}
"""


def write_sweep(folder: Path, name: str, runs: int, jobs: int, scheduler: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(SWEEP.format(runs=runs, jobs=jobs, scheduler=scheduler))
    return path


def spin(iterations: int) -> float:
    """Busy pure-Python loop; returns its wall time."""
    began = time.perf_counter()
    total = 0
    for i in range(iterations):
        total += i
    return time.perf_counter() - began


def control_ratio(iterations: int = 15_000_000) -> float:
    """Serial time of two spins over their time in a warmed pool of 2 processes."""
    began = time.perf_counter()
    spin(iterations)
    spin(iterations)
    serial = time.perf_counter() - began
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(spin, [1000, 1000])
        began = time.perf_counter()
        pool.map(spin, [iterations, iterations])
        parallel = time.perf_counter() - began
    return serial / parallel


def calibrate_jobs(seconds: float) -> int:
    """Jobs per run such that seed 1 takes about ``seconds`` in this process."""
    jobs = 2000
    while True:
        config = config_from_dict(
            {
                "platform": "kth-sp2",
                "seed": 1,
                "timeseries": False,
                "workload": {"generator": "lublin-feitelson", "jobs": jobs, "load_factor": 1.5},
                "policy": {"scheduler": "easy"},
            }
        )
        began = time.perf_counter()
        simulate(config)
        took = time.perf_counter() - began
        if took >= seconds:
            return jobs
        jobs = int(jobs * min(4.0, max(1.2, 1.05 * seconds / took)))


def local_scaling(folder: Path, runs: int, jobs: int) -> None:
    sweep = load_sweep(write_sweep(folder, "long", runs, jobs, "easy"))
    times = {}
    for workers in (1, 2):
        began = time.perf_counter()
        outcome = run_sweep(sweep, folder / f"long-{workers}", workers=workers, progress=False)
        times[workers] = time.perf_counter() - began
        assert outcome.done == runs, outcome.describe()
    import pandas as pd

    durations = pd.read_parquet(folder / "long-1" / "results.parquet")["duration_s"]
    print(
        f"(a) {runs} runs of {jobs} jobs, mean {durations.mean():.2f} s per run "
        f"(min {durations.min():.2f} s)"
    )
    print(f"    1 worker  (in-process):      {times[1]:7.2f} s")
    print(f"    2 workers (spawned, incl. start-up): {times[2]:7.2f} s")
    print(f"    speed-up 1 -> 2 workers: {times[1] / times[2]:.2f}x (target >= 1.7x)")


def timed_batch(
    executor: ProcessExecutor | DaskExecutor, warm: list[RunTask], tasks: list[RunTask]
) -> tuple[float, float]:
    """(start-up incl. warm-up, batch) seconds."""
    began = time.perf_counter()
    with executor:
        for _ in executor.run(warm):
            pass
        ready = time.perf_counter()
        for row in executor.run(tasks):
            assert row["status"] == "ok", row
        done = time.perf_counter()
    return ready - began, done - ready


def dask_overhead(folder: Path, short_runs: int) -> None:
    sweep = load_sweep(write_sweep(folder, "short", short_runs + 4, 150, "fifo"))
    tasks = [RunTask(run.run_id, run.config) for run in sweep.runs]
    warm, batch = tasks[:4], tasks[4:]
    began = time.perf_counter()
    for task in batch[:20]:
        execute_run(task)
    mean_run = (time.perf_counter() - began) / 20
    start_pool, pool = timed_batch(ProcessExecutor(2), warm, batch)
    try:
        start_dask, on_dask = timed_batch(DaskExecutor("local:2"), warm, batch)
    except Exception as exc:  # noqa: BLE001 - report and go on: part (a) still counts
        print(f"(b) Dask LocalCluster unavailable here: {exc}")
        return
    overhead_ms = 1e3 * (on_dask - pool) * 2 / len(batch)
    print(f"(b) {len(batch)} short runs of ~{1e3 * mean_run:.0f} ms, 2 workers each, warmed")
    print(f"    local processes: {pool:6.2f} s  (start-up {start_pool:.2f} s)")
    print(f"    Dask LocalCluster: {on_dask:6.2f} s  (start-up {start_dask:.2f} s)")
    print(f"    Dask overhead per run over local processes: {overhead_ms:.1f} ms (target < 100 ms)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--seconds", type=float, default=1.5, help="calibrated length of a long run"
    )
    parser.add_argument("--short-runs", type=int, default=200)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args(argv)
    print(
        "load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f} on {} cores".format(
            *os.getloadavg(), os.cpu_count()
        )
    )
    print(
        f"control: pure-Python loop, 2 processes vs 1: {control_ratio():.2f}x "
        "(the ceiling for any speed-up here and now; 2.0 on idle cores)"
    )
    with tempfile.TemporaryDirectory(prefix="sweep-scaling-") as tmp:
        folder = Path(tmp)
        local_scaling(folder, args.runs, calibrate_jobs(args.seconds))
        if not args.no_dask:
            dask_overhead(folder, args.short_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
