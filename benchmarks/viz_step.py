#!/usr/bin/env python3
"""Time one browser-app step per platform preset, before and after issue 15, in one run.

Per step it times ``VizModel.step()`` plus everything the page's tiles build after a Step
click, without the browser, twice on the same model state:

* after (the app now): the node grid (numpy palette lookup + PNG), the time series and
  the selected job's value curve as SVG text, the queue's top jobs and the status line;
* before (``viz_before_grid.py``/``viz_before_plots.py``, the code this issue replaced):
  the per-cell-coloured node grid and the matplotlib time series and value curve
  (Agg + PNG), with the same queue and status.

Both renders run on every step, alternating which goes first, and the medians are
compared; the ratio is before / after. The model is first run ``--warmup`` steps so the
queue, the grid and the series are full. Mesa's Play sleeps its 50 ms interval between
steps, so Play reaches 5 steps/s when step + render stays under 150 ms. The machine is
shared: read the numbers with the load average printed beside them.

Usage (from the repository root, with the viz-free base install: no solara needed)::

    python benchmarks/viz_step.py
    python benchmarks/viz_step.py --preset curie --policy easy --steps 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUDGET_MS = 150.0  # step + render per step for 5 steps/s with Mesa's 50 ms play interval


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", action="append", help="repeatable (default: every preset)")
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--jobs", type=int, default=1500)
    parser.add_argument("--gpu-share", type=float, default=0.3)
    parser.add_argument("--warmup", type=int, default=60, help="steps before timing")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    args = parser.parse_args(argv)
    for folder in (REPO, REPO / "benchmarks"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    from market_hpc.domain.platform import PRESETS

    print(f"{args.policy}, {args.jobs} Lublin-Feitelson jobs ({100 * args.gpu_share:.0f} % GPU jobs), "
          f"{args.warmup} warm-up steps, {args.steps} timed; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    print(f"{'preset':>10} {'nodes':>6} {'step':>7} {'before':>8} {'after':>7} {'ratio':>6}  "
          f"(ms per step, median; render + step; before / after)")
    within = True
    for name in args.preset or list(PRESETS):
        within &= measure(name, args)
    return 0 if within else 1


def _renders(model) -> tuple[Callable[[], None], Callable[[], None]]:  # type: ignore[no-untyped-def]
    """The (before, after) renders of every tile, as the components build them."""
    import viz_before_grid
    import viz_before_plots

    from visualization.node_grid import node_grid_pixels, png_bytes
    from visualization.panels import job_details, queue_rows, status
    from visualization.plots import TimeSeriesPlot, ValueCurvePlot

    old_series = viz_before_plots.TimeSeriesPlot(model.platform, model.time_unit)
    old_curve = viz_before_plots.ValueCurvePlot(model.time_unit)
    series, curve_plot = TimeSeriesPlot(model.platform, model.time_unit), ValueCurvePlot(model.time_unit)

    def panels() -> int | None:
        rows = queue_rows(model, limit=12)
        status(model, model.time_unit)
        selected = rows[0].job_id if rows else None
        if selected is not None:
            job_details(model, selected, model.time_unit)
        return selected

    def curve_of(selected: int | None):  # type: ignore[no-untyped-def]
        agent = model.job_agents.get(selected) if selected is not None else None
        return None if agent is None else agent.job.payload.get("value_curve"), agent

    def before() -> None:
        selected = panels()
        png_bytes(viz_before_grid.node_grid_pixels(model, selected))
        old_series.update(model)
        old_series.png()
        curve, agent = curve_of(selected)
        if curve is not None:
            old_curve.update(curve, model.now - agent.job.submit)
            old_curve.png()

    def after() -> None:
        selected = panels()
        png_bytes(node_grid_pixels(model, selected))
        series.update(model)
        series.svg()
        curve, agent = curve_of(selected)
        if curve is not None:
            curve_plot.update(curve, model.now - agent.job.submit)
            curve_plot.svg()

    return before, after


def measure(preset: str, args: argparse.Namespace) -> bool:
    """Time ``args.steps`` steps on one preset; print before/after ms per step and the ratio."""
    from visualization.model import VizModel

    model = VizModel(policy=args.policy, platform=preset, workload="lublin-feitelson", jobs=args.jobs,
                     gpu_share=args.gpu_share, seed=1)
    if model.error:
        print(f"{preset:>10}: {model.error}")
        return False
    before, after = _renders(model)
    for _ in range(args.warmup):
        model.step()
    before()
    after()
    steps, befores, afters = [], [], []
    for index in range(args.steps):
        if not model.running:
            break
        began = time.perf_counter()
        model.step()
        steps.append(time.perf_counter() - began)
        order = [(before, befores), (after, afters)]
        for render, sink in order if index % 2 else order[::-1]:
            began = time.perf_counter()
            render()
            sink.append(time.perf_counter() - began)
    if not steps:
        print(f"{preset:>10}: the run ended during the warm-up; lower --warmup or raise --jobs")
        return False
    step = 1e3 * statistics.median(steps)
    old, new = 1e3 * statistics.median(befores), 1e3 * statistics.median(afters)
    print(f"{preset:>10} {model.platform.n_nodes:>6} {step:>7.1f} {old + step:>8.1f} {new + step:>7.1f} "
          f"{(old + step) / (new + step):>6.2f}")
    return new + step < BUDGET_MS


if __name__ == "__main__":
    sys.exit(main())
