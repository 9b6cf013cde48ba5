"""Record or check the CP dispatchers' decisions: every job's start and allocation, and
a digest of every CP-SAT model solved (its proto and the solver parameters).

    PYTHONPATH=. python benchmarks/cp_equivalence.py record /tmp/cp_reference.json
    PYTHONPATH=. python benchmarks/cp_equivalence.py check /tmp/cp_reference.json

Workloads: (a) the first 1,500 jobs of KTH-SP2 on ``nodes=30,cores=1`` (skipped when
``../shared/traces`` is absent) and (b) synthetic multi-resource workloads
(``tests/invariants.random_workload`` on a GPU + memory platform, core-level and
node-exclusive). ``record`` is run on the unmodified code, ``check`` after each change:
any changed start, allocation or model is reported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KTH = REPO.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
SCHEDULERS = ("pcp20", "pcp19", "hcp19", "cph")
SYNTHETIC = "nodes=5,cores=8,gpus=2,mem=32"
SYNTHETIC_UNITS = [
    (1, 0, 0, 2048),
    (2, 1, 0, 4096),
    (4, 0, 0, 1024),
    (1, 0, 0, 16384),
    (8, 2, 0, 30000),
]


@contextmanager
def model_digests() -> Iterator[list[str]]:
    """Digest of every model solved inside the block (proto bytes + solver parameters)."""
    from market_hpc.algorithms.cp import instance as cp_instance
    from market_hpc.algorithms.cp import pcp20 as cp_pcp20
    from market_hpc.algorithms.cp import pooled as cp_pooled

    digests: list[str] = []
    original = cp_instance.solve

    def recording(model: Any, *args: Any, **kwargs: Any) -> Any:
        solver, status = original(model, *args, **kwargs)
        digest = hashlib.sha256(str(model.Proto()).encode())  # text format: every field
        digest.update(str(solver.parameters).encode())
        digests.append(f"{digest.hexdigest()[:16]}:{status}")
        return solver, status

    cp_pcp20.solve = cp_pooled.solve = recording
    try:
        yield digests
    finally:
        cp_pcp20.solve = cp_pooled.solve = original


def cases() -> list[tuple[str, str, Any]]:
    """``(name, platform, loader)`` of every workload that is available here."""
    sys.path.insert(0, str(REPO / "tests"))
    from invariants import random_workload

    out: list[tuple[str, str, Any]] = []
    if KTH.is_file():

        def kth() -> list[Any]:
            from market_hpc.domain.platform import load_platform
            from market_hpc.experiment import config_from_dict
            from market_hpc.experiment.run import build_workload

            config = config_from_dict(
                {
                    "name": "kth",
                    "platform": "nodes=30,cores=1",
                    "timeseries": False,
                    "workload": {"trace": str(KTH), "first_n": 1500},
                    "policy": {"scheduler": "easy"},
                }
            )
            return build_workload(config, load_platform(config.platform))[0]

        out.append(("kth1500", "nodes=30,cores=1", kth))
    for seed in (1, 2, 3):
        out.append(
            (
                f"synthetic{seed}",
                SYNTHETIC,
                lambda seed=seed: random_workload(seed, SYNTHETIC, SYNTHETIC_UNITS, count=160),
            )
        )
    return out


def run(scheduler: str, platform: str, jobs: list[Any], exclusive: bool) -> dict[str, Any]:
    """Starts, allocations and model digests of one run."""
    from market_hpc.core.model import HPCModel

    with model_digests() as digests:
        model = HPCModel(
            jobs,
            platform=platform,
            scheduler=scheduler,
            exclusive=exclusive,
            seed=3,
            record_timeseries=False,
        )
        model.run()
    frame = model.recorder.jobs_frame()
    rows = [
        [
            int(r.job_id),
            str(r.status),
            None if r.start_time != r.start_time else float(r.start_time),
            str(r.nodes),
        ]
        for r in frame.itertuples()
    ]
    stats = model.policy.summary_stats() if hasattr(model.policy, "summary_stats") else None
    return {"jobs": rows, "models": digests, "stats": stats}


def collect(only: str | None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, platform, load in cases():
        jobs = load()
        for exclusive in (False, True) if name.startswith("synthetic") else (False,):
            for scheduler in SCHEDULERS:
                key = f"{name}/{'excl' if exclusive else 'core'}/{scheduler}"
                if only and only not in key:
                    continue
                results[key] = run(scheduler, platform, jobs, exclusive)
                print(
                    key,
                    len(results[key]["jobs"]),
                    "jobs",
                    len(results[key]["models"]),
                    "models",
                    flush=True,
                )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("record", "check"))
    parser.add_argument("file")
    parser.add_argument("--only", help="run only the cases whose key contains this")
    args = parser.parse_args()
    results = collect(args.only)
    if args.mode == "record":
        Path(args.file).write_text(json.dumps(results))
        return 0
    reference = json.loads(Path(args.file).read_text())
    bad = 0
    for key, got in results.items():
        want = reference.get(key)
        if want is None:
            print(f"{key}: no reference")
            bad += 1
            continue
        for part in ("jobs", "models", "stats"):
            if got[part] != want[part]:
                bad += 1
                diff = (
                    next((i for i, (a, b) in enumerate(zip(got[part], want[part])) if a != b), None)
                    if isinstance(got[part], list)
                    else None
                )
                print(
                    f"{key}: {part} differ (first at {diff}; {len(got[part] or [])} vs "
                    f"{len(want[part] or [])})"
                )
    print("identical" if not bad else f"{bad} differences", f"({len(results)} runs)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
