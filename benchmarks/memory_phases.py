#!/usr/bin/env python3
"""Peak memory of a trace replay, phase by phase, list path against streamed path.

Runs in this process (start one per path: a process's peak never goes down):

* ``--path list``: what ``market-hpc replay`` did before the streamed replay:
  ``read_swf`` (whole file, all jobs in a tuple), ``simulate`` on the list, ``collect``
  (whole jobs frame with the allocation text) and ``Result.write``.
* ``--path stream``: what it does now: ``simulate_streaming`` (two-pass streaming
  reader, summary from seven columns) and ``StreamedResult.write`` (chunks).

After each phase it prints the resident set size now (``/proc/self/status`` VmRSS) and
the peak so far (``ru_maxrss``), in MB. With ``--tracemalloc`` it also prints the
Python-allocated bytes live after the run and the largest allocation sites (slow: about
2x run time). Linux only.

Usage (from the repository root)::

    python benchmarks/memory_phases.py --path stream             # CEA-Curie EASY on curie
    python benchmarks/memory_phases.py --path list
    python benchmarks/memory_phases.py --path stream \\
        --trace ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz \\
        --platform nodes=100,cores=1 --scheduler fifo
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CURIE = REPO.parent / "shared" / "traces" / "CEA-Curie-2011-2.1-cln.swf.gz"


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB."""
    current = 0.0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phase(name: str, began: float) -> None:
    now, peak = rss_mb()
    print(
        f"{name:<34} rss {now:8.1f} MB   peak so far {peak:8.1f} MB   "
        f"{time.perf_counter() - began:7.1f} s",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", choices=("list", "stream"), required=True)
    parser.add_argument("--trace", default=str(CURIE))
    parser.add_argument("--platform", default="curie")
    parser.add_argument("--scheduler", default="easy")
    parser.add_argument("--allocator", default=None)
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    began = time.perf_counter()
    phase("start (python)", began)
    import market_hpc.core.model  # noqa: F401  (mesa, pandas, numpy, the policies)
    from market_hpc.experiment import config_from_dict
    from market_hpc.experiment.run import simulate
    from market_hpc.experiment.streaming import simulate_streaming
    from market_hpc.workload import read_swf

    phase("imports", began)
    config = config_from_dict(
        {
            "name": Path(args.trace).name,
            "platform": args.platform,
            "workload": {"trace": args.trace},
            "policy": {"scheduler": args.scheduler, "allocator": args.allocator},
        }
    )
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(5)
    if args.path == "list":
        workload = read_swf(args.trace)
        phase(f"read_swf ({len(workload.jobs)} jobs)", began)
        del workload
        result = simulate(config)
        phase("simulate + collect (frames)", began)
    else:
        result = simulate_streaming(config)
        phase("simulate_streaming (summary)", began)
    if args.tracemalloc:
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        stats = snapshot.statistics("lineno")
        print(
            f"python-allocated after the run: {sum(s.size for s in stats) / 2**20:.1f} MB; largest "
            "sites:"
        )
        for stat in stats[:12]:
            frame = stat.traceback[0]
            print(
                f"  {stat.size / 2**20:8.1f} MB  {stat.count:>9} blocks  "
                f"{frame.filename}:{frame.lineno}"
            )
        del snapshot, stats
    with tempfile.TemporaryDirectory() as out:
        result.write(out)
        phase("write results", began)
        sizes = {path.name: path.stat().st_size / 2**20 for path in Path(out).iterdir()}
    print("files (MB): " + ", ".join(f"{name} {size:.1f}" for name, size in sorted(sizes.items())))
    print(f"jobs_total {result.summary['jobs_total']}, mean_wait {result.summary['mean_wait']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
