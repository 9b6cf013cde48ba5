#!/usr/bin/env python3
"""Check ``market_hpc`` against AccaSim 1.1.3 on KTH-SP2 (FIFO + first fit, 100 x 1 core).

What it does:

(a) If an AccaSim virtualenv is present (``$ACCASIM_PYTHON``, default
    ``/tmp/accasim-venv/bin/python``), writes the AccaSim driver embedded below to a
    temporary directory and runs it, timing the whole command.  Nothing from AccaSim is
    part of this repository; the venv is made with::

        python3 -m venv /tmp/accasim-venv && /tmp/accasim-venv/bin/pip install accasim==1.1.3

    With ``--reference CSV`` a stored reference (``job_id,submit_time,start_time,end_time``)
    is used instead and AccaSim is not run.
(b) Times our whole command (``python -m market_hpc replay ... --out DIR``) and our
    in-process simulation (``read_swf`` + ``HPCModel(...).run()``).
(c) Compares start times job by job, prints the number of mismatches, the mean waits,
    the SHA-256 of our schedule and the speed ratios (AccaSim time / our time).

AccaSim facts this comparison relies on (AccaSim 1.1.3 source):
    * processors = SWF field 8 (requested) if != -1, else field 5 (allocated); a line with
      both -1 is skipped (utils/reader_class.py:94-99).  KTH has 218 jobs with field 5 >
      field 8; using field 5 instead gives 1,513 different start times.
    * duration = SWF field 4 (run time); field 9 (requested time) becomes
      ``expected_duration`` (utils/misc.py:67-72) and is unused by FIFO; no wall-time kill.
    * each instant: completions are released first (base/simulator_class.py:542), then
      the queue (jobs already waiting + jobs submitted now) is dispatched once
      (simulator_class.py:552-566, base/event_class.py:497-515).
    * FIFO sorts by submit time with a stable sort, so same-second submissions keep file
      order (base/scheduler_class.py:300, 315-317); the first job that does not fit blocks
      all later ones (allocator_class.py:327-336; skip_jobs_on_allocation defaults False,
      scheduler_class.py:100).
    * jobs that can never fit are rejected and not written (scheduler_class.py:182-188,
      230-255); none in KTH on 100 x 1 core.

Expected reference: 27,992 jobs, mean wait 218,832.06 s, SHA-256 below.

Usage (from the repository root)::

    python benchmarks/accasim_kth.py
    python benchmarks/accasim_kth.py --reference /tmp/accasim_kth_reference.csv
    python benchmarks/accasim_kth.py --save-reference /tmp/accasim_kth_reference.csv
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = "../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz"  # relative to the repo root
PLATFORM = "nodes=100,cores=1"
DEFAULT_ACCASIM_PYTHON = "/tmp/accasim-venv/bin/python"

EXPECTED_JOBS = 27992
EXPECTED_MEAN_WAIT = 218832.06
# sha256("\n".join(f"{job_id}:{int(start_time)}" for jobs sorted by job_id)), no final newline
EXPECTED_SHA256 = "2c4835bf063bb16ed3ad689fdc54843d6cbe40c818d391b2c64e3ae9983b3515"

# The AccaSim driver, written to a temporary directory and run with AccaSim's python.
ACCASIM_DRIVER = r'''#!/usr/bin/env python3
"""Reference run of AccaSim 1.1.3 (FIFO + FirstFit) on an SWF trace.

Usage: python run_kth.py TRACE(.swf or .swf.gz) OUTDIR [--nodes 100] [--cores 1] [--csv OUT.csv]

Writes into OUTDIR: the plain SWF (if the input is gzipped), sys_config.json,
AccaSim's own outputs (sched-*.swf, stats-*.swf) and reference.csv with
job_id,submit_time,start_time,end_time parsed from the sched-* file.
Prints a JSON summary line prefixed with "SUMMARY ".
"""
import argparse
import calendar
import collections
import collections.abc
import gzip
import json
import os
import shutil
import sys
import time

# --- runtime patches (nothing in site-packages is edited) --------------------
# AccaSim 1.1.3 does `from collections import Mapping` (utils/misc.py:35),
# removed in Python 3.10.
for _n in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):
    if not hasattr(collections, _n):
        setattr(collections, _n, getattr(collections.abc, _n))

# AccaSim writes times in the sched-* file as local-time strings
# (utils/misc.py str_datetime uses datetime.fromtimestamp).  Force UTC so the
# strings can be converted back to the exact integer times without DST issues.
os.environ["TZ"] = "UTC"
time.tzset()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("outdir")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()

    t_all0 = time.perf_counter()
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    results = os.path.join(outdir, "results")
    if os.path.isdir(results):
        shutil.rmtree(results)
    os.makedirs(results)

    # AccaSim's DefaultReader opens the workload with plain open(); decompress.
    trace = args.trace
    if trace.endswith(".gz"):
        plain = os.path.join(outdir, os.path.basename(trace)[:-3])
        with gzip.open(trace, "rb") as fi, open(plain, "wb") as fo:
            shutil.copyfileobj(fi, fo)
        trace = plain

    sys_config = os.path.join(outdir, "sys_config.json")
    with open(sys_config, "w") as f:
        json.dump({
            "groups": {"g0": {"core": args.cores}},
            "resources": {"g0": args.nodes},
            # one SWF processor == one core; (this is also AccaSim's default)
            "equivalence": {"processor": {"core": 1}},
            "start_time": 0,
        }, f)

    from accasim.base.simulator_class import Simulator
    from accasim.base.scheduler_class import FirstInFirstOut
    from accasim.base.allocator_class import FirstFit

    t_sim0 = time.perf_counter()
    allocator = FirstFit()
    dispatcher = FirstInFirstOut(allocator)
    sim = Simulator(trace, sys_config, dispatcher,
                    RESULTS_FOLDER_PATH=results,
                    scheduling_output=True, statistics_output=True,
                    show_statistics=True, pprint_output=False,
                    benchmark_output=False)
    out_files = sim.start_simulation()
    t_sim1 = time.perf_counter()
    stats = {}
    rejected = sim.rejected_jobs
    loaded = sim.loaded_jobs

    sched_fp = out_files["sched-"]
    stats_fp = out_files.get("stats-")
    if stats_fp and os.path.exists(stats_fp):
        with open(stats_fp) as f:
            for line in f:
                k, _, v = line.partition(":")
                stats[k.strip()] = v.strip()

    def to_epoch(s):
        return calendar.timegm(time.strptime(s, "%Y-%m-%d %H:%M:%S"))

    # sched line format (misc.py DEFAULT_SIMULATION["SCHEDULE_OUTPUT"]):
    # {job_id};{user};{queue_time}__{assignations}__{start_time};{end_time};
    #     {nodes};{cpu};{mem};{expected_duration};
    rows = []
    with open(sched_fp) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            head, assign, tail = line.split("__")
            job_id, _user, qt = head.split(";")
            st, et = tail.split(";")[:2]
            rows.append((int(job_id), to_epoch(qt), to_epoch(st), to_epoch(et)))
    rows.sort()
    csv_fp = args.csv or os.path.join(outdir, "reference.csv")
    with open(csv_fp, "w") as f:
        f.write("job_id,submit_time,start_time,end_time\n")
        for r in rows:
            f.write("%d,%d,%d,%d\n" % r)
    n = len(rows)
    mean_wait = sum(r[2] - r[1] for r in rows) / n if n else float("nan")
    summary = {
        "jobs": n,
        "loaded_jobs": loaded,
        "rejected_jobs": rejected,
        "mean_wait": mean_wait,
        "accasim_simulation_time_s": stats.get("Simulation time"),
        "accasim_stats": stats,
        "simulator_object_and_run_s": t_sim1 - t_sim0,
        "driver_total_s": time.perf_counter() - t_all0,
        "csv": csv_fp,
        "sched_file": sched_fp,
    }
    print("SUMMARY " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
'''


def schedule_sha256(starts: dict[int, float]) -> str:
    """SHA-256 of "job_id:start_time" lines (integer start times), sorted by job id."""
    payload = "\n".join(f"{job}:{round(starts[job])}" for job in sorted(starts))
    return hashlib.sha256(payload.encode()).hexdigest()


def read_reference(path: Path) -> dict[int, tuple[float, float, float]]:
    """job_id -> (submit, start, end) from a reference CSV."""
    with open(path, newline="") as handle:
        return {
            int(row["job_id"]): (
                float(row["submit_time"]),
                float(row["start_time"]),
                float(row["end_time"]),
            )
            for row in csv.DictReader(handle)
        }


def run_accasim(python: str, trace: Path, workdir: Path) -> tuple[Path, float, dict]:
    """Run the embedded driver; returns (reference CSV, wall seconds, driver summary)."""
    driver = workdir / "run_kth.py"
    driver.write_text(ACCASIM_DRIVER)
    out = workdir / "accasim"
    csv_path = workdir / "accasim_reference.csv"
    cmd = [python, str(driver), str(trace), str(out), "--csv", str(csv_path)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise RuntimeError(f"AccaSim driver failed with exit code {proc.returncode}")
    summary: dict = {}
    for line in proc.stdout.splitlines():
        if line.startswith("SUMMARY "):
            summary = json.loads(line[len("SUMMARY ") :])
    return csv_path, wall, summary


def run_our_command(trace: Path, out: Path) -> float | None:
    """Time the whole ``market-hpc replay`` command; None if it fails."""
    cmd = [
        sys.executable,
        "-m",
        "market_hpc",
        "replay",
        str(trace),
        "--platform",
        PLATFORM,
        "--scheduler",
        "fifo",
        "--allocator",
        "first-fit",
        "--out",
        str(out),
        "--overwrite",
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"  our command failed (exit {proc.returncode}): {' '.join(cmd)}")
        print("  " + (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1])
        return None
    return wall


def run_ours_in_process(trace: Path) -> tuple[dict[int, tuple[float, float, float]], float, float]:
    """Our simulation in this process: (job_id -> (submit, start, end), read s, simulate s)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # run as a script from anywhere: find the package
    try:
        from market_hpc.workload import read_swf
    except ImportError:
        from market_hpc.workload.swf import read_swf
    from market_hpc.core.model import HPCModel

    start = time.perf_counter()
    workload = read_swf(trace)
    read_seconds = time.perf_counter() - start
    start = time.perf_counter()
    model = HPCModel(workload.jobs, platform=PLATFORM, scheduler="fifo", allocator="first-fit")
    model.run()
    sim_seconds = time.perf_counter() - start
    frame = model.recorder.jobs_frame()
    rows = {
        int(job): (float(sub), float(st), float(en))
        for job, sub, st, en in zip(
            frame["job_id"], frame["submit_time"], frame["start_time"], frame["end_time"]
        )
    }
    return rows, read_seconds, sim_seconds


def compare(
    ref: dict[int, tuple[float, float, float]],
    ours: dict[int, tuple[float, float, float]],
    show: int,
) -> int:
    """Print the job-by-job comparison; returns the number of differences."""
    only_ref = sorted(set(ref) - set(ours))
    only_ours = sorted(set(ours) - set(ref))
    both = sorted(set(ref) & set(ours))
    mismatched = [j for j in both if not abs(ref[j][1] - ours[j][1]) < 1e-6]
    print(f"  jobs: reference {len(ref):,}, ours {len(ours):,}, both {len(both):,}")
    if only_ref:
        print(f"  only in reference: {len(only_ref):,} (e.g. {only_ref[:show]})")
    if only_ours:
        print(f"  only in ours: {len(only_ours):,} (e.g. {only_ours[:show]})")
    print(f"  start-time mismatches: {len(mismatched):,}")
    for job in mismatched[:show]:
        print(
            f"    job {job}: submit {ref[job][0]:.0f} reference start {ref[job][1]:.0f}"
            f" ours {ours[job][1]:.0f}"
        )
    return len(mismatched) + len(only_ref) + len(only_ours)


def mean_wait(rows: dict[int, tuple[float, float, float]]) -> float:
    waits = [start - submit for submit, start, _ in rows.values() if not math.isnan(start)]
    return sum(waits) / len(waits) if waits else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--trace",
        default=DEFAULT_TRACE,
        help="SWF trace (relative paths are taken from the repository root)",
    )
    parser.add_argument(
        "--reference",
        type=Path,
        help="stored reference CSV (job_id,submit_time,start_time,end_time); AccaSim is not run",
    )
    parser.add_argument(
        "--accasim-python", default=os.environ.get("ACCASIM_PYTHON", DEFAULT_ACCASIM_PYTHON)
    )
    parser.add_argument("--save-reference", type=Path, help="copy AccaSim's reference CSV here")
    parser.add_argument("--skip-command", action="store_true", help="do not time our whole command")
    parser.add_argument("--show", type=int, default=10, help="mismatches to print")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any start time differs")
    args = parser.parse_args(argv)

    trace = Path(args.trace)
    if not trace.is_absolute():
        trace = (REPO / trace).resolve()
    if not trace.exists():
        print(f"trace not found: {trace}")
        return 2

    with tempfile.TemporaryDirectory(prefix="accasim_kth_") as tmp:
        work = Path(tmp)
        ref: dict[int, tuple[float, float, float]] | None = None
        accasim_wall: float | None = None
        accasim_sim: float | None = None

        print("== AccaSim 1.1.3 (FIFO + FirstFit, 100 x 1 core)")
        if args.reference is not None:
            ref = read_reference(args.reference)
            print(f"  using stored reference {args.reference} (AccaSim not run)")
        elif Path(args.accasim_python).exists():
            csv_path, accasim_wall, summary = run_accasim(args.accasim_python, trace, work)
            ref = read_reference(csv_path)
            sim_text = str(summary.get("accasim_simulation_time_s") or "")
            accasim_sim = float(sim_text.split()[0]) if sim_text else None
            print(f"  whole command: {accasim_wall:.2f} s")
            if accasim_sim is not None:
                print(f"  simulation (AccaSim's own 'Simulation time'): {accasim_sim:.2f} s")
            if args.save_reference:
                args.save_reference.write_text(csv_path.read_text())
                print(f"  reference saved to {args.save_reference}")
        else:
            print(
                f"  AccaSim venv not found at {args.accasim_python}: skipping AccaSim"
                " (set ACCASIM_PYTHON or pass --reference CSV)"
            )

        if ref is not None:
            starts = {job: row[1] for job, row in ref.items()}
            sha = schedule_sha256(starts)
            print(f"  jobs {len(ref):,}, mean wait {mean_wait(ref):,.2f} s")
            print(
                f"  schedule sha256 {sha}"
                f" ({'matches' if sha == EXPECTED_SHA256 else 'DIFFERS from'} the expected one)"
            )

        print("== market_hpc")
        our_wall: float | None = None
        if not args.skip_command:
            our_wall = run_our_command(trace, work / "ours")
            if our_wall is not None:
                print(f"  whole command: {our_wall:.2f} s")
        ours, read_seconds, our_sim = run_ours_in_process(trace)
        if ours is not None:
            print(f"  read trace: {read_seconds:.2f} s, simulation: {our_sim:.2f} s")
            print(f"  jobs {len(ours):,}, mean wait {mean_wait(ours):,.2f} s")
            our_sha = schedule_sha256({j: r[1] for j, r in ours.items() if r[1] == r[1]})
            print(
                f"  schedule sha256 {our_sha}"
                f" ({'matches' if our_sha == EXPECTED_SHA256 else 'differs from'} AccaSim's)"
            )

        differences = 0
        if ref is not None and ours is not None:
            print("== comparison (start times, job by job)")
            differences = compare(ref, ours, args.show)
            print(f"  mean wait: AccaSim {mean_wait(ref):,.2f} s, ours {mean_wait(ours):,.2f} s")
        print("== speed (AccaSim time / our time; > 1 means we are faster)")
        if accasim_wall is not None and our_wall is not None:
            print(
                f"  whole command: {accasim_wall:.2f} / {our_wall:.2f} = "
                f"{accasim_wall / our_wall:.2f}x"
            )
        else:
            print("  whole command: n/a")
        if accasim_sim is not None and our_sim is not None:
            print(f"  simulation: {accasim_sim:.2f} / {our_sim:.2f} = {accasim_sim / our_sim:.2f}x")
        else:
            print("  simulation: n/a")
    return 1 if args.strict and differences else 0


if __name__ == "__main__":
    sys.exit(main())
