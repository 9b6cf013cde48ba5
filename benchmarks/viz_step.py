#!/usr/bin/env python3
"""Time one browser-app step per platform preset: this checkout against an older commit.

Per step it times ``VizModel.step()`` plus what the page's tiles build after a Step click,
without the browser: the node grid (PNG), the time series and the selected job's value
curve (SVG text now; matplotlib PNGs before the viz speed-up), the queue's top jobs, the status
line and the job details. Only the tiles both sides have are timed.

The "before" side is the app of ``--before REV`` (default: the commit before the
viz speed-up, 7877a0d, which made the plots SVG and the node grid a palette lookup). It is
checked out with ``git worktree add --detach`` into a temporary folder, which is removed
afterwards whatever happens. Each side runs in its own child process (this script with
``--child ROOT``), which puts ROOT first on ``sys.path`` and so imports that checkout's
``market_hpc`` and ``visualization``. Both build ``VizModel`` with the same controls (only
those the older constructor takes): policy, preset, Lublin-Feitelson jobs, load, seed 1.
At the default ``--load 1`` both simulate the same jobs (above 1 they differ: the older app
multiplies the generator's arrival rate, the newer compresses the arrival times); each
child reports its model's state at the first timed step, and the script says when the two
differ.

The children run in alternating order, ``--rounds`` times per preset; the script prints
the median over rounds of each child's median ms per step and the ratio before / after.
Mesa's Play sleeps its interval between steps, so Play reaches 5 steps/s when step +
render stays under 150 ms. The machine may be shared: read the numbers with the load
average printed beside them.

Usage (from the repository root; no solara needed)::

    python benchmarks/viz_step.py
    python benchmarks/viz_step.py --preset curie --policy easy --steps 30 --rounds 3
    python benchmarks/viz_step.py --before main~20
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BUDGET_MS = 150.0  # step + render per step for 5 steps/s with Mesa's play interval
DEFAULT_BEFORE = (
    "7877a0d~1"  # before "Viz: SVG time series and value curve, node grid sectioned..."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--before",
        default=DEFAULT_BEFORE,
        help=f"commit to compare with (default {DEFAULT_BEFORE})",
    )
    parser.add_argument("--preset", action="append", help="repeatable (default: every preset)")
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--jobs", type=int, default=1500)
    parser.add_argument(
        "--load",
        type=float,
        default=1.0,
        help="the app's load control; at 1.0 both sides build the same jobs (default)",
    )
    parser.add_argument("--warmup", type=int, default=60, help="steps before timing")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--rounds", type=int, default=2, help="before/after child pairs per preset")
    parser.add_argument("--child", metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(Path(args.child), args)
    commit = _git("rev-parse", "--verify", f"{args.before}^{{commit}}").strip()
    signal.signal(
        signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM)
    )  # so the worktree is removed
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from market_hpc.domain.platform import PRESETS

    print(f"before: {args.before} = {commit[:10]}; after: this checkout ({REPO})")
    print(
        f"{args.policy}, {args.jobs} Lublin-Feitelson jobs at load {args.load:g}, {args.warmup} "
        f"warm-up steps, {args.steps} timed, "
        f"{args.rounds} rounds; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    with BeforeCheckout(commit) as old_root:
        print(
            f"{'preset':>10} {'nodes':>6} {'step b/a':>11} {'render b/a':>13} {'before':>8} "
            f"{'after':>7} "
            f"{'ratio':>6}  (ms per step, median over rounds; step + render; ratio = before / "
            "after)"
        )
        within = True
        for name in args.preset or list(PRESETS):
            within &= compare(name, old_root, args)
    return 0 if within else 1


def _git(*command: str, cwd: Path = REPO) -> str:
    done = subprocess.run(["git", *command], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(command)}: {done.stderr.strip()}")
    return done.stdout


class BeforeCheckout:
    """``git worktree add --detach`` of ``commit`` into a temporary folder; removed on exit."""

    def __init__(self, commit: str) -> None:
        self.commit = commit
        self.folder = Path(tempfile.mkdtemp(prefix="viz-before-"))
        self.root = self.folder / "checkout"

    def __enter__(self) -> Path:
        try:
            _git("worktree", "add", "--detach", str(self.root), self.commit)
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        return self.root

    def __exit__(self, *exc: object) -> None:
        for attempt in range(3):  # another git command of the shared repository may hold a lock
            removed = subprocess.run(
                ["git", "worktree", "remove", "--force", str(self.root)],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=False,
            )
            if removed.returncode == 0 or not self.root.exists():
                break
            time.sleep(0.5 * (attempt + 1))
        shutil.rmtree(self.folder, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=REPO, capture_output=True, check=False)
        if self.folder.exists():
            print(
                f"could not remove {self.folder}: {removed.stderr.strip()}; run "
                f"`git worktree remove --force {self.root}`",
                file=sys.stderr,
            )


def compare(preset: str, old_root: Path, args: argparse.Namespace) -> bool:
    """Run the two children ``args.rounds`` times in alternating order; print one row."""
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for index in range(args.rounds):
        order = [("before", old_root), ("after", REPO)]
        for side, root in order if index % 2 == 0 else order[::-1]:
            result = run_child(root, preset, args)
            if "error" in result:
                print(f"{preset:>10}: {side}: {result['error']}")
                return side == "before"  # an older checkout may lack a preset or a policy
            runs[side].append(result)
    before, after = (_medians(runs[side]) for side in ("before", "after"))
    total_b, total_a = (
        before["step_ms"] + before["render_ms"],
        after["step_ms"] + after["render_ms"],
    )
    print(
        f"{preset:>10} {runs['after'][0]['nodes']:>6} "
        f"{before['step_ms']:>5.1f}/{after['step_ms']:<5.1f} "
        f"{before['render_ms']:>6.1f}/{after['render_ms']:<6.1f} {total_b:>8.1f} {total_a:>7.1f} "
        f"{total_b / total_a:>6.2f}"
    )
    states = {json.dumps(run["state"]) for run in runs["before"] + runs["after"]}
    if len(states) > 1:
        print(
            f"{'':>10} note: the sides reached different states at the first timed step: "
            f"{sorted(states)}"
        )
    return total_a < BUDGET_MS


def _medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in ("step_ms", "render_ms")}


def run_child(root: Path, preset: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        str(root),
        "--preset",
        preset,
        "--policy",
        args.policy,
        "--jobs",
        str(args.jobs),
        "--load",
        str(args.load),
        "--warmup",
        str(args.warmup),
        "--steps",
        str(args.steps),
    ]
    env = dict(os.environ, PYTHONPATH=str(root), MARKET_HPC_VIZ_SCENARIO="")
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": f"child failed ({done.returncode}): {done.stderr.strip()[-600:]}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# ------------------------------------------------------------------ the child process
def child(root: Path, args: argparse.Namespace) -> int:
    """Time ``args.steps`` steps of one preset with ROOT's app; print one JSON line."""
    sys.path.insert(0, str(root))
    import market_hpc
    import visualization

    for module in (market_hpc, visualization):
        if not Path(module.__file__ or "").resolve().is_relative_to(root.resolve()):
            raise SystemExit(
                f"{module.__name__} was imported from {module.__file__}, not from {root}"
            )
    from visualization.model import VizModel

    controls: dict[str, Any] = {
        "policy": args.policy,
        "platform": args.preset[0],
        "jobs": args.jobs,
        "seed": 1,
        "load": args.load,
        "workload": "lublin-feitelson",
    }
    accepted = inspect.signature(VizModel.__init__).parameters
    model = VizModel(**{key: value for key, value in controls.items() if key in accepted})
    if model.error:
        print(json.dumps({"error": model.error}))
        return 0
    render = _render(model)
    for _ in range(args.warmup):
        model.step()
    state = {
        "now": model.now,
        "queued": len(model.queue_agent.jobs),
        "running": len(model.job_agents),
    }
    render()
    steps, renders = [], []
    for _ in range(args.steps):
        if not model.running:
            break
        began = time.perf_counter()
        model.step()
        stepped = time.perf_counter()
        render()
        steps.append(stepped - began)
        renders.append(time.perf_counter() - stepped)
    if not steps:
        print(
            json.dumps(
                {"error": "the run ended during the warm-up; lower --warmup or raise --jobs"}
            )
        )
        return 0
    print(
        json.dumps(
            {
                "nodes": model.platform.n_nodes,
                "state": state,
                "steps": len(steps),
                "step_ms": 1e3 * statistics.median(steps),
                "render_ms": 1e3 * statistics.median(renders),
            }
        )
    )
    return 0


def _render(model: Any) -> Callable[[], None]:
    """Every tile both app versions build after a step, as their components build them."""
    from visualization.node_grid import node_grid_pixels, png_bytes
    from visualization.panels import job_details, queue_rows, status
    from visualization.plots import TimeSeriesPlot, ValueCurvePlot

    series, curve_plot = (
        TimeSeriesPlot(model.platform, model.time_unit),
        ValueCurvePlot(model.time_unit),
    )

    def picture(plot: Any) -> object:
        return (
            plot.svg() if hasattr(plot, "svg") else plot.png()
        )  # SVG since the viz speed-up (7877a0d)

    def render() -> None:
        rows = queue_rows(model, limit=12)
        status(model, model.time_unit)
        selected = rows[0].job_id if rows else None
        if selected is not None:
            job_details(model, selected, model.time_unit)
        png_bytes(node_grid_pixels(model, selected))
        series.update(model)
        picture(series)
        agent = model.job_agents.get(selected) if selected is not None else None
        curve = None if agent is None else agent.job.payload.get("value_curve")
        if agent is not None and curve is not None:
            curve_plot.update(curve, model.now - agent.job.submit)
            picture(curve_plot)

    return render


if __name__ == "__main__":
    sys.exit(main())
