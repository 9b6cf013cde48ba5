#!/usr/bin/env python3
"""Time ``HPCModel.run()`` and the ``step()`` loop of this checkout against another
checkout (e.g. ``main``, or a commit before a change), alternately.

Each measurement is a child process ``sys.executable -c ...`` with ``PYTHONPATH`` set to
one checkout; it times only the simulation (``time.perf_counter`` around ``run()`` or the
``while model.running: model.step()`` loop), so interpreter start and imports do not
count. Rounds alternate the two checkouts and the script prints the median of each and
their ratio (this / other): on a shared machine only the ratio means something.

    git worktree add /tmp/base <older commit>
    PYTHONPATH=. python benchmarks/api_speed.py --other /tmp/base --rounds 5

Workload: KTH-SP2 (28,489 jobs, ``../shared/traces``) under EASY on its 100 nodes, or,
when the trace is absent, 20,000 Lublin-Feitelson jobs on ``nodes=128,cores=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KTH = REPO.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"

PROBE = """
import json, sys, time
from market_hpc.core.model import HPCModel
path, mode = sys.argv[1], sys.argv[2]
if path:
    from market_hpc.workload import read_swf
    jobs, platform = read_swf(path).jobs, "kth-sp2"
else:
    from market_hpc.workload.synthetic import lublin_feitelson
    jobs, platform = lublin_feitelson(20_000, 128, 1, load_factor=1.2), "nodes=128,cores=1"
model = HPCModel(jobs, platform, "easy", "first-fit")
began = time.perf_counter()
if mode == "run":
    model.run()
else:
    while model.running:
        model.step()
seconds = time.perf_counter() - began
print(json.dumps([seconds, model.recorder.finished, getattr(model, "steps", 0)]))
"""


def measure(checkout: Path, mode: str) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    trace = str(KTH) if KTH.is_file() else ""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, trace, mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
    )
    seconds, finished, _steps = json.loads(done.stdout.strip().splitlines()[-1])
    return float(seconds), int(finished)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--other", required=True, help="the checkout to compare with (e.g. a git worktree)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    other = Path(args.other).resolve()
    print(f"workload: {'KTH-SP2, EASY' if KTH.is_file() else '20,000 Lublin-Feitelson jobs, EASY'}")
    for mode in ("run", "step"):
        times: dict[str, list[float]] = {"this": [], "other": []}
        finished = set()
        for _ in range(args.rounds):
            for label, checkout in (("this", REPO), ("other", other)):
                seconds, count = measure(checkout, mode)
                times[label].append(seconds)
                finished.add(count)
        assert len(finished) == 1, f"the checkouts finished different job counts: {finished}"
        this, that = statistics.median(times["this"]), statistics.median(times["other"])
        print(
            f"{mode:4}: this {this:.3f} s, other {that:.3f} s (medians of {args.rounds}); "
            f"ratio this/other {this / that:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
