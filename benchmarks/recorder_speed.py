#!/usr/bin/env python3
"""The recorder before and after, in one process, on the calls of a real replay.

A replay runs once with a recorder that also keeps every ``job_left`` and ``segment``
call (a recorder from before a segment was one call gets the segment's first six
arguments and, for its busy time, a ``busy`` call). Those calls are then fed, in their
order, to the recorder of this checkout and to ``market_hpc/core/recorder.py`` as it was
at ``--before`` (read with ``git show``), and each side's ``jobs_frame()`` and
``write_jobs_csv()`` are timed (CPU time, best of ``--repeat``). The frames must be equal
and the CSV files identical. The loop that feeds the calls is timed alone too (a recorder
whose methods do nothing) and taken off both sides, so the figures are what the recorder
itself costs per job.

Usage (from the repository root)::

    python benchmarks/recorder_speed.py --trace kth --scheduler fifo
    python benchmarks/recorder_speed.py --trace hpc2n --scheduler easy --repeat 3
    python benchmarks/recorder_speed.py --trace ../shared/traces/CEA-Curie-2011-2.1-cln.swf.gz \\
        --platform curie --scheduler easy --repeat 1
"""

from __future__ import annotations

import argparse
import functools
import gc
import inspect
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd

from market_hpc.core import recorder as after
from market_hpc.core.model import HPCModel
from market_hpc.workload import read_swf

TRACES = {
    "kth": ("KTH-SP2-1996-2.1-cln.swf.gz", "nodes=100,cores=1"),
    "hpc2n": ("HPC2N-2002-2.1-cln.swf.gz", "nodes=240,cores=1"),
}
METHODS = ("job_left", "segment")


def recorder_before(commit: str) -> types.ModuleType:
    """``market_hpc/core/recorder.py`` at ``commit``, as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{commit}:market_hpc/core/recorder.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("recorder_before")
    exec(compile(source, f"{commit}:market_hpc/core/recorder.py", "exec"), module.__dict__)  # noqa: S102
    return module


def recorded_calls(
    trace: str, platform: str, scheduler: str
) -> tuple[Any, list[tuple[int, tuple]]]:
    """Run the replay once; return its platform and every recorder call, in order."""
    calls: list[tuple[int, tuple]] = []

    class Recording(after.Recorder):
        def job_left(self, *args: Any) -> None:
            calls.append((0, args))
            super().job_left(*args)

        def segment(self, *args: Any) -> None:
            calls.append((1, args))
            super().segment(*args)

    model = HPCModel(
        read_swf(trace).jobs, platform, scheduler, "first-fit", record_timeseries=False
    )
    model.recorder = Recording(model.platform, False)
    model.run()
    return model.platform, calls


class Null:
    """The feeding loop alone."""

    def job_left(self, *args: Any) -> None:
        pass

    def segment(self, *args: Any) -> None:
        pass


def feed(recorder: Any, calls: list[tuple[int, tuple]]) -> float:
    """CPU seconds to make every call on ``recorder``."""
    methods = tuple(getattr(recorder, name) for name in METHODS)
    if len(inspect.signature(recorder.segment).parameters) == 6:  # an older recorder
        old_segment, busy = recorder.segment, recorder.busy

        def segment(*args: Any) -> None:
            busy(args[7], args[2] - args[1])
            old_segment(*args[:6])

        methods = (methods[0], segment)
    gc.collect()
    gc.disable()
    began = time.process_time()
    for index, args in calls:
        methods[index](*args)
    spent = time.process_time() - began
    gc.enable()
    return spent


def timed(function: Any) -> tuple[float, Any]:
    began = time.process_time()
    value = function()
    return time.process_time() - began, value


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trace", default="kth", help="kth, hpc2n or a trace path")
    parser.add_argument(
        "--platform", help="default: nodes=100,cores=1 (kth), nodes=240,cores=1 (hpc2n)"
    )
    parser.add_argument("--scheduler", default="fifo", choices=("fifo", "easy"))
    parser.add_argument(
        "--before", default="8c0f8a0", help="commit of the recorder to compare with"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    name, platform = TRACES.get(args.trace, (args.trace, None))
    trace = str(ROOT.parent / "shared" / "traces" / name) if args.trace in TRACES else args.trace
    platform = args.platform or platform
    if platform is None:
        parser.error("--platform is needed with a trace path")
    before = recorder_before(args.before)
    machine, calls = recorded_calls(trace, platform, args.scheduler)
    n_jobs = sum(1 for index, _ in calls if index == 0)
    print(
        f"{Path(trace).name} on {platform}, {args.scheduler}: {n_jobs:,} jobs, {len(calls):,} "
        "recorder calls; "
        f"before = {args.before}"
    )
    best: dict[str, dict[str, float]] = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            loop = feed(Null(), calls)
            outputs = {}
            for side, module in (("before", before), ("after", after)):
                recorder = module.Recorder(machine, False)
                spent = {"record": feed(recorder, calls) - loop}
                spent["jobs_frame"], frame = timed(recorder.jobs_frame)
                path = Path(tmp) / f"{side}.csv"
                spent["write_jobs_csv"], _ = timed(functools.partial(recorder.write_jobs_csv, path))
                outputs[side] = (frame, path.read_bytes())
                for key, value in spent.items():
                    best[side][key] = min(best[side].get(key, float("inf")), value)
                del recorder, frame
            pd.testing.assert_frame_equal(
                outputs["before"][0], outputs["after"][0], check_exact=True
            )
            assert outputs["before"][1] == outputs["after"][1], "jobs.csv differs"
            del outputs
    print(f"  (CPU seconds, best of {args.repeat}; us per job)")
    for key in ("record", "jobs_frame", "write_jobs_csv"):
        old, new = best["before"][key], best["after"][key]
        print(
            f"  {key:15s} before {old:7.3f} s ({1e6 * old / n_jobs:6.2f} us)  after {new:7.3f} s "
            f"({1e6 * new / n_jobs:6.2f} us)  before / after "
            f"{old / new if new > 0 else float('inf'):5.1f}x"
        )
    old = best["before"]["record"] + best["before"]["jobs_frame"]
    new = best["after"]["record"] + best["after"]["jobs_frame"]
    print(
        f"  record + jobs_frame: {1e6 * old / n_jobs:.2f} -> {1e6 * new / n_jobs:.2f} us per job "
        f"({old / new:.1f}x); frames equal, jobs.csv identical"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
