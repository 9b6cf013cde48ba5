#!/usr/bin/env python3
"""Time one browser-app step: ``model.step()`` plus everything the page's tiles build.

Per step it times ``VizModel.step()`` and the render the Solara components do after a
Step click, without the browser: the node-grid picture (numpy + PNG), the time-series
figure updated in place (matplotlib Agg + PNG), the queue's top jobs, the status line and
the selected job's details with its value curve. Target (issue 6): under 300 ms for a
64-node x 32-core platform. As a yardstick in the same process it also times the time
series built as a fresh matplotlib figure every step (what the in-place update avoids)
and prints the ratio.

The model is first run ``--warmup`` steps into the overload so the queue, the grid and the
series are full. Read the numbers with the load average printed beside them.

Usage (from the repository root, with the viz-free base install: no solara needed)::

    python benchmarks/viz_step.py
    python benchmarks/viz_step.py --platform eurora --policy easy --steps 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_MS = 300.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", default="nodes=64,cores=32")
    parser.add_argument("--policy", action="append", help="repeatable (default: maxvdh and easy)")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--load", type=float, default=2.0)
    parser.add_argument("--warmup", type=int, default=60, help="steps before timing")
    parser.add_argument("--steps", type=int, default=60, help="timed steps")
    args = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    print(f"platform {args.platform}, {args.jobs} jobs, load {args.load}; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    ok = True
    for policy in args.policy or ["maxvdh", "easy"]:
        ok &= measure(policy, args)
    return 0 if ok else 1


def measure(policy: str, args: argparse.Namespace) -> bool:
    """Time ``args.steps`` steps of one policy; print ms per step and the yardstick ratio."""
    from visualization.model import VizModel
    from visualization.node_grid import node_grid_pixels, png_bytes
    from visualization.panels import job_details, queue_rows, status
    from visualization.plots import TimeSeriesPlot, ValueCurvePlot

    model = VizModel(policy=policy, platform=args.platform, jobs=args.jobs, load=args.load, seed=1)
    series, curve_plot = TimeSeriesPlot(model.platform, model.time_unit), ValueCurvePlot(model.time_unit)

    def render() -> None:
        rows = queue_rows(model, limit=12)
        selected = rows[0].job_id if rows else None
        png_bytes(node_grid_pixels(model, selected))
        series.update(model)
        series.png()
        status(model, model.time_unit)
        if selected is not None:
            job_details(model, selected, model.time_unit)
            curve = model.job_agents[selected].job.payload.get("value_curve")
            if curve is not None:
                curve_plot.update(curve, model.now - model.job_agents[selected].job.submit)
                curve_plot.png()

    def fresh_series() -> None:
        plot = TimeSeriesPlot(model.platform, model.time_unit)
        plot.update(model)
        plot.png()

    for _ in range(args.warmup):
        model.step()
    render()
    steps, renders, fresh = [], [], []
    for _ in range(args.steps):
        if not model.running:
            break
        began = time.perf_counter()
        model.step()
        stepped = time.perf_counter()
        render()
        rendered = time.perf_counter()
        fresh_series()
        steps.append(stepped - began)
        renders.append(rendered - stepped)
        fresh.append(time.perf_counter() - rendered)
    if not steps:
        print(f"{policy}: the run ended during the warm-up; lower --warmup or raise --jobs")
        return False
    total = [1e3 * (s + r) for s, r in zip(steps, renders, strict=True)]
    in_place = statistics.median(renders)
    print(f"{policy:>7} ({model.platform.n_nodes} x {int(model.platform.capacity[:, 0].max())} cores, "
          f"{len(model.queue_agent.jobs)} queued, {len(model.running_by_end)} running, {len(steps)} steps): "
          f"step {1e3 * statistics.median(steps):.1f} ms + render {1e3 * in_place:.1f} ms = "
          f"median {statistics.median(total):.1f} ms, max {max(total):.1f} ms per step "
          f"(target < {TARGET_MS:.0f} ms)")
    print(f"{'':>7} yardstick: time series as a fresh figure each step "
          f"{1e3 * statistics.median(fresh):.1f} ms; whole render / fresh series alone = "
          f"{in_place / statistics.median(fresh):.2f}")
    return statistics.median(total) < TARGET_MS


if __name__ == "__main__":
    sys.exit(main())
