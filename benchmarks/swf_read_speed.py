"""CPU time of ``read_swf`` and ``stream_swf`` on
archive traces, and a fingerprint of the jobs read.

Run from a checkout (``PYTHONPATH=.``) to compare two versions of the reader: the
fingerprint (SHA-256 of every job's fields, in order) must not change, and the CPU time
(``time.process_time``, best of ``--repeat``; CPU time, not wall time, since other work may
share the machine) says what a change cost::

    PYTHONPATH=. python benchmarks/swf_read_speed.py ../shared/traces/HPC2N-2002-2.1-cln.swf.gz
"""

from __future__ import annotations

import argparse
import time

from market_hpc.workload.info import jobs_fingerprint
from market_hpc.workload.swf import read_swf
from market_hpc.workload.swf_stream import stream_swf


def best_cpu(function: object, repeat: int) -> float:
    """Smallest CPU time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        function()  # type: ignore[operator]
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for trace in args.traces:
        workload = read_swf(trace)
        read = best_cpu(lambda: read_swf(trace), args.repeat)  # noqa: B023 - called at once
        stream = best_cpu(lambda: tuple(stream_swf(trace)), args.repeat)  # noqa: B023
        print(
            f"{trace}: {len(workload.jobs)} jobs, fingerprint {jobs_fingerprint(workload.jobs)}, "
            f"read_swf {read:.3f} s CPU, stream_swf {stream:.3f} s CPU (best of {args.repeat}), "
            f"anomalies {workload.report.anomalies}"
        )


if __name__ == "__main__":
    main()
