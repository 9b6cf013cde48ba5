#!/usr/bin/env python3
"""cProfile our in-process simulation (the part ``heapq_yardstick.py`` times).

Profiles ``HPCModel(jobs, platform, scheduler, "first-fit", record_timeseries=False).run()``
followed by ``model.recorder.jobs_frame()``; the trace is read before profiling starts.
Prints the top functions by own time (``tottime``) and, with ``--cumulative``, by
cumulative time. cProfile slows Python-level calls a lot more than C calls, so read the
shares, not the absolute seconds.

Usage (from the repository root)::

    python benchmarks/profile_sim.py --trace kth --scheduler fifo
    python benchmarks/profile_sim.py --trace hpc2n --scheduler easy --top 25 --cumulative
    python benchmarks/profile_sim.py --trace kth --platform nodes=100,cores=1 --dump /tmp/kth.prof
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO.parent / "shared" / "traces"
KNOWN = {
    "kth": ("KTH-SP2-1996-2.1-cln.swf.gz", "nodes=100,cores=1"),
    "hpc2n": ("HPC2N-2002-2.1-cln.swf.gz", "nodes=240,cores=1"),
    "curie": ("CEA-Curie-2011-2.1-cln.swf.gz", "curie"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="kth", help="kth, hpc2n, curie or an SWF path")
    parser.add_argument("--platform", help="platform spec (default: per known trace)")
    parser.add_argument("--scheduler", default="fifo")
    parser.add_argument("--allocator", default="first-fit")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--cumulative", action="store_true", help="also list by cumulative time")
    parser.add_argument("--dump", help="write the raw profile here (for snakeviz etc.)")
    args = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from market_hpc.core.model import HPCModel
    from market_hpc.workload import read_swf

    file, platform = KNOWN.get(args.trace, (args.trace, None))
    trace = TRACES / file if args.trace in KNOWN else Path(file)
    platform = args.platform or platform
    if platform is None:
        parser.error("--platform is needed for a trace given by path")
    jobs = list(read_swf(trace).jobs)

    def simulate() -> None:
        model = HPCModel(jobs, platform, args.scheduler, args.allocator, record_timeseries=False)
        model.run()
        model.recorder.jobs_frame()

    began = time.perf_counter()
    simulate()
    plain = time.perf_counter() - began
    profiler = cProfile.Profile()
    began = time.perf_counter()
    profiler.runcall(simulate)
    profiled = time.perf_counter() - began
    print(
        f"{trace.name} on {platform}, {args.scheduler}+{args.allocator}: {len(jobs):,} jobs; "
        f"{plain:.2f} s unprofiled, {profiled:.2f} s under cProfile"
    )
    stats = pstats.Stats(profiler)
    if args.dump:
        stats.dump_stats(args.dump)
    stats.sort_stats("tottime").print_stats(args.top)
    if args.cumulative:
        stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
