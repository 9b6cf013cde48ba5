"""What the market auctions' resource and spanning rules cost (issue 34).

    PYTHONPATH=. python benchmarks/market_resources.py ab --before 0ce1c38   # cores-only path, A/B
    PYTHONPATH=. python benchmarks/market_resources.py cost                  # general path's runs

``ab``: a KTH-style market replay (KTH-SP2 under the market rule, one pool of 100 cores,
``--first-n`` jobs) decided by the cores-only path, on this checkout ("after") and on the
source of ``--before`` extracted with ``git archive`` ("before"), each run in its own child
process, the sides alternated (each first in turn); the CPU seconds (``process_time``) of the
simulation alone (the workload is built before the clock starts), the median of ``--repeats`` runs
per side and policy, and the ratio after / before. The cores-only path must stay as fast.

``cost``: CPU seconds of runs only the general path decides (``algorithms.market_offers``):
the same KTH jobs on KTH's real platform (100 one-core nodes: jobs span nodes), with S4
burst-buffer requests (pool sized for a 0.9 offered load), HPC2N at 1.5x load on its 120
two-core nodes, and Eurora-like GPU/MIC jobs on ``eurora``, against the pooled cores-only
runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KTH = REPO.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
HPC2N = REPO.parent / "shared" / "traces" / "HPC2N-2002-2.1-cln.swf.gz"

CHILD = r"""
import json, sys, time
from market_hpc.domain.platform import load_platform
from market_hpc.experiment.config import config_from_dict
from market_hpc.experiment.run import build_workload, run_model
from market_hpc.workload.burst_buffer import with_capacity

config = config_from_dict(json.loads(sys.argv[1]))
platform = with_capacity(load_platform(config.platform), config.workload.burst_buffer)
jobs, _ = build_workload(config, platform)
platform = with_capacity(platform, config.workload.burst_buffer, jobs)
began = time.process_time()
model, _ = run_model(config, platform, jobs, len(jobs))
seconds = time.process_time() - began
frame = model.recorder.jobs_frame()
print(json.dumps({"cpu": seconds, "jobs": len(jobs), "holds": model.recorder.holds,
                  "spanning": int(frame["nodes"].fillna("").str.contains(";").sum()),
                  "digest": int(frame["start_time"].fillna(-1).sum())}))
"""


def kth(
    platform: str, scheduler: str, first_n: int, trace: Path = KTH, **workload: Any
) -> dict[str, Any]:
    return {
        "name": "bench",
        "platform": platform,
        "seed": 1,
        "timeseries": False,
        "workload": {"trace": str(trace), "first_n": first_n, "market": True, **workload},
        "policy": {"scheduler": scheduler},
    }


def child(source: Path, config: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(config)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def extract(commit: str, into: Path) -> Path:
    archive = into / "before.tar"
    subprocess.run(
        [
            "git",
            "-C",
            str(REPO),
            "archive",
            "--format=tar",
            "-o",
            str(archive),
            commit,
            "market_hpc",
        ],
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def ab(before: str, first_n: int, repeats: int, schedulers: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        old = extract(before, Path(tmp))
        for scheduler in schedulers:
            config = kth("nodes=1,cores=100", scheduler, first_n)
            times: dict[str, list[float]] = {"before": [], "after": []}
            seen = {}
            sides = [("before", old), ("after", REPO)]
            for repeat in range(repeats):
                for side, source in (
                    sides if repeat % 2 == 0 else sides[::-1]
                ):  # each side first in turn
                    got = child(source, config)
                    times[side].append(got["cpu"])
                    seen[side] = got["digest"], got["holds"]
            assert seen["before"] == seen["after"], f"{scheduler}: the schedules differ: {seen}"
            medians = {side: statistics.median(values) for side, values in times.items()}
            paired = statistics.median(a / b for a, b in zip(times["after"], times["before"]))
            print(
                f"{scheduler:7s} KTH first {first_n} on nodes=1,cores=100: before "
                f"{medians['before']:.3f} s, "
                f"after {medians['after']:.3f} s CPU (median of {repeats}), ratio after/before "
                f"{medians['after'] / medians['before']:.3f} (median of the paired ratios "
                f"{paired:.3f}); runs: before "
                f"{', '.join(f'{t:.3f}' for t in times['before'])}; after "
                f"{', '.join(f'{t:.3f}' for t in times['after'])}"
            )


def cost(first_n: int, schedulers: list[str]) -> None:
    bb = {"burst_buffer": {"scenario": "S4", "machine": "theta", "target_load": 0.9}}
    cases = {
        "pooled (cores-only path)": lambda s: kth("nodes=1,cores=100", s, first_n),
        "kth-sp2, spanning": lambda s: kth("kth-sp2", s, first_n),
        "kth-sp2, spanning + S4 bb": lambda s: kth("kth-sp2", s, first_n, **bb),
        "hpc2n pooled (cores-only)": lambda s: kth(
            "nodes=1,cores=240", s, first_n, HPC2N, load_factor=1.5
        ),
        "hpc2n 120x2, spanning": lambda s: kth("hpc2n", s, first_n, HPC2N, load_factor=1.5),
        "eurora GPU/MIC": lambda s: {
            "name": "bench",
            "platform": "eurora",
            "seed": 1,
            "timeseries": False,
            "workload": {"generator": "eurora", "jobs": first_n, "market": True},
            "policy": {"scheduler": s},
        },
    }
    for scheduler in schedulers:
        for label, make in cases.items():
            got = child(REPO, make(scheduler))
            print(
                f"{scheduler:7s} {label:28s} {got['jobs']:6d} jobs: {got['cpu']:7.3f} s CPU, "
                f"{got['holds']} holds, {got['spanning']} jobs on several nodes"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("ab", "cost"))
    parser.add_argument("--before", default="0ce1c38", help="commit of the 'before' side (ab)")
    parser.add_argument(
        "--first-n", type=int, default=10000, help="KTH jobs (eurora: generated jobs)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--schedulers", default="sjq,maxvh,minvrh,maxvlh")
    args = parser.parse_args()
    if not KTH.is_file():
        print(f"needs {KTH}")
        return 1
    schedulers = args.schedulers.split(",")
    if args.mode == "ab":
        ab(args.before, args.first_n, args.repeats, schedulers)
    else:
        cost(args.first_n, schedulers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
