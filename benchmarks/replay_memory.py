#!/usr/bin/env python3
"""Peak memory of whole ``market-hpc replay`` commands, before and after streaming.

Each run is a child process ``python -m market_hpc replay TRACE ... --out TMP`` (imports,
trace, simulation, summary, every results file); its peak RSS comes from ``os.wait4``
(as ``/usr/bin/time -v``). "before" runs the same command on the source tree of
``--before-rev`` (default: the commit before the streaming reader and writer), extracted
with ``git archive`` to a temporary directory; "after" runs this checkout. Both write
their results; ``jobs.csv`` and ``summary.json`` (without wall-clock timings) are
compared, so the numbers come with a check that nothing else changed.

Runs:

* ``curie``: CEA-Curie (312,807 jobs), ``--platform curie --scheduler easy`` (target:
  under 400 MB);
* ``million``: the synthetic workload of ``scaling.py``'s 10^6-job rows (10^3 nodes,
  90% load) written as a gzip SWF trace, replayed on ``nodes=1000,cores=1`` with
  first-fit, FIFO and EASY (target: streamed, under 1 GB).

Usage (from the repository root)::

    python benchmarks/replay_memory.py                        # curie and million, before and after
    python benchmarks/replay_memory.py --only curie --side after
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CURIE = REPO.parent / "shared" / "traces" / "CEA-Curie-2011-2.1-cln.swf.gz"
BEFORE_REV = "4e70131"
TIMINGS = (
    "dispatch_seconds",
    "mean_dispatch_ms",
    "p99_dispatch_ms",
    "max_dispatch_ms",
    "simulation_seconds",
)


def million_trace(path: Path, n_jobs: int) -> Path:
    """``scaling.py``'s workload of ``n_jobs`` jobs (10^3-node load) as a gzip SWF file."""
    sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]
    from scaling import job_stream, workload

    from market_hpc.workload import write_swf

    write_swf(
        job_stream(workload(n_jobs, 1_000)), path, header=[f"scaling.py workload, {n_jobs} jobs"]
    )
    return path


def replay(source: Path, args: list[str], out: Path) -> tuple[float, float, float, int, str]:
    """Run one replay from ``source``; returns (wall s, CPU s, peak RSS MB, exit code,
    stderr tail). CPU time (user + system) is less sensitive to other load than wall."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    cmd = [sys.executable, "-m", "market_hpc", "replay", *args, "--out", str(out)]
    with tempfile.TemporaryFile() as log:
        began = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=source, env=env, stdout=subprocess.DEVNULL, stderr=log)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - began
        log.seek(0)
        tail = log.read().decode(errors="replace")[-2000:]
    return (
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024.0,
        os.waitstatus_to_exitcode(status),
        tail,
    )


def summary(folder: Path) -> dict[str, object]:
    data = json.loads((folder / "summary.json").read_text())
    return {key: value for key, value in data.items() if key not in TIMINGS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("curie", "million"), action="append")
    parser.add_argument("--side", choices=("before", "after"), action="append")
    parser.add_argument("--before-rev", default=BEFORE_REV)
    parser.add_argument("--jobs", type=int, default=1_000_000, help="jobs of the synthetic trace")
    parser.add_argument("--scheduler", choices=("fifo", "easy"), action="append")
    args = parser.parse_args()
    sides = args.side or ["before", "after"]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sources = {"after": REPO}
        if "before" in sides:
            before = tmp / "before"
            before.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(REPO), "archive", args.before_rev],
                capture_output=True,
                check=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
            sources["before"] = before
        runs: list[tuple[str, list[str]]] = []
        if "curie" in (args.only or ["curie", "million"]):
            runs.append(("curie easy", [str(CURIE), "--platform", "curie", "--scheduler", "easy"]))
        if "million" in (args.only or ["curie", "million"]):
            trace = million_trace(tmp / "million.swf.gz", args.jobs)
            for scheduler in args.scheduler or ["fifo", "easy"]:
                runs.append(
                    (
                        f"{args.jobs:,} {scheduler}",
                        [
                            str(trace),
                            "--platform",
                            "nodes=1000,cores=1",
                            "--scheduler",
                            scheduler,
                            "--allocator",
                            "first-fit",
                        ],
                    )
                )
        print(f"{'run':<20} {'side':<7} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}", flush=True)
        for name, replay_args in runs:
            folders = {}
            for side in sides:
                out = tmp / f"{name.replace(' ', '_')}_{side}"
                wall, cpu, peak, code, tail = replay(sources[side], replay_args, out)
                print(
                    f"{name:<20} {side:<7} {wall:>8.1f} {cpu:>8.1f} {peak:>8.0f}"
                    + ("" if code == 0 else f"  FAILED {code}"),
                    flush=True,
                )
                if code != 0:
                    print(tail)
                    failures += 1
                    continue
                folders[side] = out
            if len(folders) == 2:
                same_csv = (folders["before"] / "jobs.csv").read_bytes() == (
                    folders["after"] / "jobs.csv"
                ).read_bytes()
                same_summary = summary(folders["before"]) == summary(folders["after"])
                print(
                    f"{name:<20} jobs.csv identical: {same_csv}; summary.json identical (timings "
                    "aside): "
                    f"{same_summary}",
                    flush=True,
                )
                failures += (not same_csv) + (not same_summary)
            for folder in folders.values():
                for path in folder.iterdir():
                    path.unlink()
    print(f"load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
