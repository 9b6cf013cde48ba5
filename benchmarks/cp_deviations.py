"""Effect of two documented deviations from the papers' tie-breaks, on the Eurora-like
study system (where memory and accelerators matter), paired by seed.

    PYTHONPATH=. nice python benchmarks/cp_deviations.py --seeds 1 2 3

* HCP'19's best-fit orders candidate nodes by free *cores* (``allocation.best_fit``);
  AccaSim's Best-Fit sorts by the raw sum of every type's availability (memory in MB,
  so memory dominates). Variant: ``free.sum(axis=1)`` as the key.
* CPH's PRB tie-break (``Cph.prb``) sums cores, GPUs and MICs per unit, leaving memory
  out. Variant: memory in GB added to the sum.

Each variant is patched in for its run only (a monkeypatch of the one line), the rest
of the configuration is ``benchmarks/cp_study.py``'s Eurora run.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np


@contextmanager
def patched(owner: type, name: str, replacement: object) -> Iterator[None]:
    """``owner.name`` replaced for the duration of the block."""
    original = getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        setattr(owner, name, original)


def accasim_best_fit() -> Any:
    from market_hpc.policies import allocators
    from market_hpc.policies.allocators import BestFit, job_fits

    def allocate(self, job, free, view):  # type: ignore[no-untyped-def]
        if job.bb > view.free_bb:
            return None
        return allocators.best_fit(job_fits(job, free, view), free.sum(axis=1), job.units)

    return patched(BestFit, "allocate", allocate)


def prb_with_memory() -> Any:
    from market_hpc.policies.cp import Cph

    def prb(self, queue, now):  # type: ignore[no-untyped-def]
        waits = [self.expected_wait.get(job.queue, self.default_wait) for job in queue]
        longest = max(waits, default=self.default_wait)
        demand = [
            max(1, math.ceil(j.estimate)) * j.units * (sum(j.unit[:3]) + j.unit[3] / 1024)
            for j in queue
        ]
        order = sorted(
            range(len(queue)),
            key=lambda i: (-longest * (now - queue[i].submit + 1.0) / waits[i], demand[i], i),
        )
        return [queue[i] for i in order], [max(1, int(longest // waits[i])) for i in order]

    return patched(Cph, "prb", prb)


@contextmanager
def as_is() -> Iterator[None]:
    yield


def main() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cp_study import one_run

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--jobs", type=int, default=1500)
    args = parser.parse_args()
    for scheduler, variant, name in (
        ("hcp19", accasim_best_fit, "best-fit by the sum of all types"),
        ("cph", prb_with_memory, "PRB tie-break with memory"),
    ):
        rows = {}
        for label, patch in (("as is", as_is), (name, variant)):
            with patch():
                rows[label] = [
                    one_run(("eurora", scheduler, seed, args.jobs, 1)) for seed in args.seeds
                ]
        for metric in ("mean_slowdown", "mean_wait"):
            base = np.array([r[metric] for r in rows["as is"]])
            other = np.array([r[metric] for r in rows[name]])
            print(
                f"{scheduler} {metric}: as is {base.mean():.3f}, {name} {other.mean():.3f}, "
                f"paired difference {np.mean(other - base):+.3f} (per seed "
                f"{np.round(other - base, 3).tolist()})",
                flush=True,
            )


if __name__ == "__main__":
    main()
