"""Cost of Job's number checks: Job construction with the checks against the
same dataclass with the checks it had before, in one process.

    python benchmarks/job_checks.py [--jobs 200000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from market_hpc.domain.job import Job
from market_hpc.domain.resources import N_RESOURCES


def before_checks(self: Job) -> None:
    """``Job.__post_init__`` before the number checks (unit shape and counts only)."""
    if len(self.unit) != N_RESOURCES:
        raise ValueError(
            f"job {self.job_id}: unit must have {N_RESOURCES} entries, got {self.unit}"
        )
    if self.unit[0] < 1 or min(self.unit) < 0:
        raise ValueError(
            f"job {self.job_id}: a unit needs >= 1 core and no negative amounts, got {self.unit}"
        )
    if self.units < 1:
        raise ValueError(f"job {self.job_id}: units must be >= 1, got {self.units}")


OldJob = dataclasses.make_dataclass(
    "OldJob",
    [(f.name, f.type, f) for f in dataclasses.fields(Job)],
    namespace={"__post_init__": before_checks},
    frozen=True,
    slots=True,
)


def build(cls: type, n: int) -> float:
    unit = (1, 0, 0, 0)
    began = time.perf_counter()
    for i in range(n):
        cls(i, float(i), 30.0, 60.0, 4, unit, 0.0, 3, 1)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    old = min(build(OldJob, args.jobs) for _ in range(args.repeat))
    new = min(build(Job, args.jobs) for _ in range(args.repeat))
    print(
        f"{args.jobs} jobs, best of {args.repeat}: before {old * 1e9 / args.jobs:.0f} ns/job, "
        f"checked {new * 1e9 / args.jobs:.0f} ns/job, ratio {new / old:.2f}"
    )


if __name__ == "__main__":
    main()
