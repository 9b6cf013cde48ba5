"""Regenerate the synthetic sample traces in this directory, exactly.

Usage::

    python traces/make_samples.py [OUT_DIR]     # default: this script's directory

Each sample is ``lublin_feitelson(n_jobs, max_procs, seed, load_factor=2.0)`` written
with ``write_swf``; the same numpy and market_hpc versions give the same jobs, and
gzip output carries no timestamp.
"""

from __future__ import annotations

import sys
from pathlib import Path

from market_hpc.domain.job import Job
from market_hpc.workload import lublin_feitelson, write_swf

LOAD_FACTOR = 2.0
SAMPLES: tuple[tuple[str, int, int, int, str], ...] = (
    # file name, jobs, processors, seed, what it imitates
    ("lf-kth-like-2000.swf", 2000, 100, 1996, "KTH SP2 size (100 processors)"),
    ("lf-240p-5000.swf.gz", 5000, 240, 2002, "HPC2N Seth size (120 nodes x 2)"),
)


def offered_load(jobs: tuple[Job, ...], procs: int) -> float:
    """Sum of processors x run time over processors x submit span."""
    span = jobs[-1].submit - jobs[0].submit
    return sum(job.units * job.run_time for job in jobs) / (procs * span)


def header(name: str, n_jobs: int, procs: int, seed: int, what: str, load: float) -> list[str]:
    """SWF header lines describing one sample."""
    return [
        "; Version: 2.2",
        "; Computer: synthetic, Lublin & Feitelson (2003) batch-job model",
        f"; Installation: none; imitates the {what}",
        "; Acknowledge: U. Lublin and D. G. Feitelson, J. Parallel Distrib. Comput. 63(11), 2003",
        "; Information: traces/README.md of market_hpc",
        f"; MaxJobs: {n_jobs}",
        f"; MaxRecords: {n_jobs}",
        f"; MaxNodes: {procs}",
        f"; MaxProcs: {procs}",
        (f"; Note: {name} = market_hpc.workload.lublin_feitelson(n_jobs={n_jobs}, "
        f"max_procs={procs}, seed={seed}, load_factor={LOAD_FACTOR})"),
        "; Note: estimates (field 9) = run time x U[1, 5], rounded up to whole minutes",
        f"; Note: offered load {load:.2f} (sum of procs x run time / (MaxProcs x submit span))",
    ]


def build(out_dir: Path) -> list[Path]:
    """Write every sample into ``out_dir`` and return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, n_jobs, procs, seed, what in SAMPLES:
        jobs = lublin_feitelson(n_jobs, procs, seed, load_factor=LOAD_FACTOR)
        load = offered_load(jobs, procs)
        path = out_dir / name
        write_swf(jobs, path, header=header(name, n_jobs, procs, seed, what, load))
        paths.append(path)
    return paths


def main(argv: list[str]) -> int:
    out_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    for path in build(out_dir):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
