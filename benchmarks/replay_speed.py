#!/usr/bin/env python3
"""Time whole ``market-hpc replay`` commands and their peak memory.

Each run is a child process ``sys.executable -m market_hpc replay ...`` (interpreter
start, imports, trace parsing, simulation, metrics and, unless ``--no-out``, writing the
results folder to a temporary directory), timed from outside with ``time.perf_counter``.
Peak memory is the child's maximum resident set size, read from ``os.wait4`` (the same
figure as ``/usr/bin/time -v``'s "Maximum resident set size"; Linux reports KiB).

Runs and targets:

* ``kth``: KTH-SP2, ``nodes=100,cores=1``, FIFO + first-fit: >= 10x faster than
  AccaSim's whole run (25 s on the issue author's machine, i.e. <= 2.5 s). With
  ``--accasim`` AccaSim's whole run is timed by this script too (needs the AccaSim
  virtualenv of ``benchmarks/accasim_kth.py``).
* ``hpc2n``: HPC2N (202,876 jobs), EASY + first-fit on the ``hpc2n`` preset (120 nodes x
  2 cores) and on ``nodes=240,cores=1`` (the processor-count view): < 30 s.
* ``curie``: CEA-Curie (312,826 job lines), EASY with core-level first-fit on the
  ``curie`` preset (93,312 cores): < 3 min and < 4 GB peak memory.

Usage (from the repository root)::

    python benchmarks/replay_speed.py                 # all three
    python benchmarks/replay_speed.py --only hpc2n
    python benchmarks/replay_speed.py --only kth --accasim

Numbers mean something only on an otherwise idle machine (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO.parent / "shared" / "traces"

# name -> (trace, [(platform, scheduler)], seconds target, MB target or None)
RUNS: dict[str, tuple[str, list[tuple[str, str]], float, float | None]] = {
    "kth": ("KTH-SP2-1996-2.1-cln.swf.gz", [("nodes=100,cores=1", "fifo")], 2.5, None),
    "hpc2n": (
        "HPC2N-2002-2.1-cln.swf.gz",
        [("hpc2n", "easy"), ("nodes=240,cores=1", "easy")],
        30.0,
        None,
    ),
    "curie": ("CEA-Curie-2011-2.1-cln.swf.gz", [("curie", "easy")], 180.0, 4096.0),
}


def replay(
    trace: Path, platform: str, scheduler: str, out: Path | None, timeout: float, extra: list[str]
) -> tuple[float, float, int, str]:
    """Run one replay; returns (wall seconds, peak RSS MB, exit code, last output lines)."""
    cmd = [
        sys.executable,
        "-m",
        "market_hpc",
        "replay",
        str(trace),
        "--platform",
        platform,
        "--scheduler",
        scheduler,
        "--allocator",
        "first-fit",
        *extra,
    ]
    if out is not None:
        cmd += ["--out", str(out)]
    with tempfile.TemporaryFile() as log:
        began = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        deadline = began + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.02)
        wall = time.perf_counter() - began
        child.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
        log.seek(0)
        tail = log.read().decode(errors="replace").strip().splitlines()[-6:]
    peak_mb = usage.ru_maxrss / 1024.0 if sys.platform != "darwin" else usage.ru_maxrss / 2**20
    return wall, peak_mb, child.returncode, "\n".join(tail)


def accasim_kth(trace: Path) -> float | None:
    """AccaSim's whole run on KTH (FIFO + FirstFit) via benchmarks/accasim_kth.py."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import accasim_kth

    python = os.environ.get("ACCASIM_PYTHON", accasim_kth.DEFAULT_ACCASIM_PYTHON)
    if not Path(python).exists():
        print(f"  AccaSim not found at {python}; skipped")
        return None
    with tempfile.TemporaryDirectory(prefix="accasim_") as tmp:
        _, wall, summary = accasim_kth.run_accasim(python, trace, Path(tmp))
    print(
        f"  AccaSim 1.1.3 whole run: {wall:.2f} s (its own simulation time: "
        f"{summary.get('accasim_simulation_time_s')})"
    )
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        choices=sorted(RUNS),
        action="append",
        help="run only this trace (repeatable; default: all)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per command (all are shown)")
    parser.add_argument(
        "--no-out", action="store_true", help="do not pass --out (no results written)"
    )
    parser.add_argument("--no-timeseries", action="store_true", help="pass --no-timeseries")
    parser.add_argument("--accasim", action="store_true", help="also time AccaSim's whole KTH run")
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds before a run is killed"
    )
    args = parser.parse_args(argv)
    extra = ["--no-timeseries"] if args.no_timeseries else []
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {load}")
    failed = 0
    for name in args.only or list(RUNS):
        file, runs, seconds_target, mb_target = RUNS[name]
        trace = TRACES / file
        print(f"== {name}: {trace.name}")
        accasim_wall = accasim_kth(trace) if name == "kth" and args.accasim else None
        for platform, scheduler in runs:
            for attempt in range(args.repeat):
                with tempfile.TemporaryDirectory(prefix="replay_speed_") as tmp:
                    out = None if args.no_out else Path(tmp) / "out"
                    wall, peak, code, tail = replay(
                        trace, platform, scheduler, out, args.timeout, extra
                    )
                speed = "OK" if wall < seconds_target else "SLOW"
                verdicts = [f"{speed} (< {seconds_target:g} s)"]
                if mb_target is not None:
                    size = "OK" if peak < mb_target else "TOO BIG"
                    verdicts.append(f"{size} (< {mb_target:g} MB)")
                if accasim_wall is not None:
                    verdicts.append(f"AccaSim / ours = {accasim_wall / wall:.1f}x (target >= 10x)")
                label = f"--platform {platform} --scheduler {scheduler} --allocator first-fit"
                print(
                    f"  {label}: {wall:.2f} s, peak {peak:,.0f} MB, exit {code};"
                    f" {'; '.join(verdicts)}"
                )
                if code != 0:
                    failed += 1
                    print("    " + tail.replace("\n", "\n    "))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
