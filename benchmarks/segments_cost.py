#!/usr/bin/env python3
"""What writing ``segments.csv`` and ``segments.parquet`` costs a whole replay.

One ``market-hpc replay`` (in this process, through the CLI's ``main``) is run
alternately with and without the segment files (B: ``results_out.SegmentFiles`` replaced
by a writer that writes nothing), ``--rounds`` times each, and each run's CPU
time (``time.process_time``, the whole command: read, simulate, write) is recorded. The
medians and their ratio (with / without) are printed, with the CPU time of the segment
writer alone in the A runs and its share of the replay. Target: the ratio at most 1.03.

Measured on KTH-SP2, EASY, 7 rounds, on the shared 2-core machine at load 12-16: writer
0.08 s of a 3.4-4.1 s replay (2.2-2.5 %); the ratio of medians 1.010 and 0.946 in two
runs (the load's noise is larger than the writer). Before the writer went from pandas
frames to Arrow arrays: writer 0.19 s, ratio 1.067.

Usage (from the repository root)::

    python benchmarks/segments_cost.py                       # KTH-SP2, EASY, 5 rounds
    python benchmarks/segments_cost.py --trace ../shared/traces/HPC2N-2002-2.1-cln.swf.gz \\
        --platform nodes=240,cores=1 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from market_hpc.cli import main
from market_hpc.experiment import results_out

KTH = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"


class NoSegmentFiles:
    """``SegmentFiles`` that writes nothing (the B side)."""

    def __init__(self, *call: Any, **keywords: Any) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None: ...

    def write_through(self, *call: Any, **keywords: Any) -> None: ...


def one_run(args: argparse.Namespace, out: Path, with_segments: bool) -> tuple[float, float]:
    """CPU seconds of one replay command, and of its segment writing (0 without)."""
    real = results_out.SegmentFiles
    spent = [0.0]

    class Timed(real):  # type: ignore[misc, valid-type]
        """``SegmentFiles`` timing its own work (opening, each block, closing)."""

        def __init__(self, *call: Any, **keywords: Any) -> None:
            begin = time.process_time()
            super().__init__(*call, **keywords)
            spent[0] += time.process_time() - begin

        def __enter__(self) -> Self:
            begin = time.process_time()
            super().__enter__()
            spent[0] += time.process_time() - begin
            return self

        def __exit__(self, *exc_info: object) -> None:
            begin = time.process_time()
            super().__exit__(*exc_info)
            spent[0] += time.process_time() - begin

        def write_through(self, *call: Any, **keywords: Any) -> None:
            begin = time.process_time()
            super().write_through(*call, **keywords)
            spent[0] += time.process_time() - begin

    results_out.SegmentFiles = Timed if with_segments else NoSegmentFiles  # type: ignore[misc]
    command = [
        "replay",
        str(args.trace),
        "--platform",
        args.platform,
        "--scheduler",
        args.scheduler,
        "--out",
        str(out),
        "--overwrite",
    ]
    gc.collect()
    try:
        begin = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            status = main(command)
        cpu = time.process_time() - begin
    finally:
        results_out.SegmentFiles = real  # type: ignore[misc]
    if status != 0:
        raise SystemExit(f"replay failed ({status}): {' '.join(command)}")
    if with_segments != (out / "segments.csv").exists():
        raise SystemExit("the segment files were (not) written as asked")
    return cpu, spent[0]


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=KTH)
    parser.add_argument("--platform", default="nodes=100,cores=1")
    parser.add_argument("--scheduler", default="easy")
    parser.add_argument(
        "--rounds", type=int, default=5, help="runs of each side (>= 5 for the target)"
    )
    args = parser.parse_args()
    if not args.trace.exists():
        raise SystemExit(
            f"trace not found: {args.trace} (the archive traces live in ../shared/traces)"
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{args.trace.name}, {args.scheduler} on {args.platform}, {args.rounds} rounds, load "
        f"{load:.2f}"
    )
    with_times: list[float] = []
    without_times: list[float] = []
    writer_times: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run"
        one_run(args, out, True)  # warm-up: imports, page cache
        for round_ in range(args.rounds):
            order = (True, False) if round_ % 2 == 0 else (False, True)
            for with_segments in order:
                cpu, writer = one_run(args, out, with_segments)
                (with_times if with_segments else without_times).append(cpu)
                if with_segments:
                    writer_times.append(writer)
                print(
                    f"  round {round_ + 1} {'with' if with_segments else 'without'} segments: "
                    f"{cpu:.3f} s CPU"
                    + (f" (segment writer {writer:.3f} s)" if with_segments else "")
                )
    a, b = statistics.median(with_times), statistics.median(without_times)
    print(
        f"median CPU with segments {a:.3f} s, without {b:.3f} s, segment writer alone "
        f"{statistics.median(writer_times):.3f} s"
    )
    share = statistics.median(writer_times) / b
    print(
        f"ratio with / without: {a / b:.4f} (target <= 1.03); the writer alone is {share:.1%} of "
        "the "
        "replay without it (steadier than the ratio on a loaded machine)"
    )


if __name__ == "__main__":
    main_cli()
