#!/usr/bin/env python3
"""Time one browser-app step per platform preset against an older commit, or (``--browser``)
measure Play's pace in headless Chromium.

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

``--browser`` starts ``market-hpc viz`` of this checkout on a free loopback port and drives
Debian's ``/usr/bin/chromium`` headless through Playwright (``benchmarks/viz_page.py``, the
driver the browser tests use). Per case (``POLICY@PLATFORM``; default: the page as it
opens, ``maxvdh@nodes=32,cores=16`` with task graphs at load 2, and ``easy@curie``, the
5,544-node platform the README names) it opens a fresh page, sets the controls and Resets
when they differ from the page's, presses Play, reads the page's step counter when it
first moves and ``--seconds`` later, and prints steps per second; then Pause, and the
counter must stay still for 3 s. After the server has stopped, the same steps are timed in
this process (step + the tiles' builders, as above, in CPU time of this thread, so other
processes on a busy machine do not count): Mesa sleeps the play interval before each step,
so ``1000 / (interval + step + render ms)`` bounds what Play reaches on an idle machine
(reacton's render, the widgets' messages and the browser come on top). Over the Play the
script also reads the CPU seconds of the server's processes and of Chromium's (``/proc``),
per step played: ``1000 / (interval + server CPU ms)`` is what Play reaches on an idle
machine if all of the server's work were on the step's path (some of it, sending the
messages, overlaps the next sleep), with Chromium on the other core. The load average is
printed at the start and before each Play.

Usage (from the repository root; no solara needed without ``--browser``)::

    python benchmarks/viz_step.py
    python benchmarks/viz_step.py --preset curie --policy easy --steps 30 --rounds 3
    python benchmarks/viz_step.py --before main~20
    python benchmarks/viz_step.py --browser                   # 20 s of Play per case
    python benchmarks/viz_step.py --browser --case easy@curie --load 2.5 --seconds 30
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import re
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
BROWSER_CASES = (("maxvdh", "nodes=32,cores=16"), ("easy", "curie"))  # the page's, the README's
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
        help="the app's load control; at 1.0 (the default without --browser) both sides "
        "build the same jobs; with --browser the page's own 2.0 unless given",
    )
    parser.add_argument(
        "--browser",
        action="store_true",
        help="measure Play's steps/s in headless Chromium (needs playwright, the viz extra "
        "and /usr/bin/chromium)",
    )
    parser.add_argument(
        "--case",
        action="append",
        metavar="POLICY@PLATFORM",
        help="with --browser, repeatable (default: "
        + " and ".join(f"{policy}@{platform}" for policy, platform in BROWSER_CASES)
        + ")",
    )
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="with --browser: Play per case (default 20)"
    )
    parser.add_argument("--warmup", type=int, default=60, help="steps before timing")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--rounds", type=int, default=2, help="before/after child pairs per preset")
    parser.add_argument("--child", metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.browser:
        return browser_main(args)
    if args.load is None:
        args.load = 1.0
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
    state, steps, renders = time_steps(model, args.warmup, args.steps)
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


def time_steps(
    model: Any, warmup: int, steps: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[dict[str, Any], list[float], list[float]]:
    """Step ``warmup`` times, then time up to ``steps`` steps and the tiles' builders after
    each (seconds of ``clock``); also the model's state at the first timed step."""
    render = _render(model)
    for _ in range(warmup):
        model.step()
    state = {
        "now": model.now,
        "queued": len(model.queue_agent.jobs),
        "running": len(model.job_agents),
    }
    render()
    step_seconds, render_seconds = [], []
    for _ in range(steps):
        if not model.running:
            break
        began = clock()
        model.step()
        stepped = clock()
        render()
        step_seconds.append(stepped - began)
        render_seconds.append(clock() - stepped)
    return state, step_seconds, render_seconds


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


# ------------------------------------------------------------------ --browser
def browser_main(args: argparse.Namespace) -> int:
    """Play each case in headless Chromium, then time its steps here; print one table."""
    try:
        from playwright import sync_api
    except ImportError:
        raise SystemExit("--browser needs playwright (the dev extra)") from None
    from viz_page import (
        CHROMIUM,
        browser_page,
        measure_play,
        running_server,
        thread_cpu_seconds,
        tree_cpu_seconds,
    )

    missing = [name for name in ("solara", "altair") if importlib.util.find_spec(name) is None]
    if missing:
        raise SystemExit(f"--browser needs the viz extra ({', '.join(missing)} missing)")
    if not CHROMIUM.is_file():
        raise SystemExit(f"--browser needs {CHROMIUM} (apt-get install chromium)")
    cases = [_parse_case(text) for text in args.case] if args.case else list(BROWSER_CASES)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from visualization.model import VizModel

    load = PAGE_LOAD if args.load is None else args.load
    interval = play_interval_ms()
    print(
        f"Play in headless Chromium ({CHROMIUM}), this checkout ({REPO}); {args.seconds:g} s "
        f"per case, load factor {load:g}, seed 1, play interval {interval} ms; load average "
        f"{_load_average()} on {os.cpu_count()} cores"
    )
    played = []
    with (
        tempfile.TemporaryDirectory(prefix="viz-play-") as folder,
        running_server(Path(folder) / "server.log") as server,
    ):
        for policy, platform in cases:
            with browser_page(sync_api, server) as page:
                _set_controls(page, policy, platform, load)
                at_play = _load_average()
                run = measure_play(
                    page,
                    args.seconds,
                    probe=lambda: (
                        tree_cpu_seconds(server.pid),
                        tree_cpu_seconds(os.getpid()),
                        thread_cpu_seconds(server.pid),
                    ),
                )
                if page.errors:
                    raise SystemExit(f"{policy}@{platform}: the page failed: {page.errors}")
            played.append((policy, platform, run, at_play))
            print(
                f"  {policy}@{platform}: steps {run.first_step} -> {run.last_step} in "
                f"{run.seconds:.1f} s = {run.steps_per_second:.2f} steps/s (load average "
                f"{at_play} at Play); paused: {run.paused_at} -> {run.paused_later}",
                flush=True,
            )
    print(
        f"{'case':>26} {'nodes':>6} {'browser':>8} {'step':>6} {'render':>7} {'bound':>6} "
        f"{'server':>7} {'thread':>7} {'chromium':>9} {'idle':>5}"
    )
    print(
        "  browser: steps/s in Chromium; step, render: in-process CPU ms per step (median over "
        "the same steps; CPU, not wall time, so that other processes do not count); "
        f"bound = 1000 / ({interval} + step + render); server, chromium: CPU ms "
        "per step played (the solara server; its busiest thread, Play's step thread, whose "
        "work is on each step's path; Chromium with Playwright); idle = 1000 / "
        f"({interval} + thread), Play on an idle machine where the rest runs beside it"
    )
    moved_and_stopped = True
    for policy, platform, run, _ in played:
        model = VizModel(policy=policy, platform=platform, load=load, scenario_file="")
        _, steps, renders = time_steps(
            model, run.first_step, run.last_step - run.first_step, clock=time.thread_time
        )
        step_ms, render_ms = (1e3 * statistics.median(t) if t else 0.0 for t in (steps, renders))
        (server_first, all_first, threads_first), (server_last, all_last, threads_last) = run.probed
        played_steps = max(run.last_step - run.first_step, 1)
        server_ms = 1e3 * (server_last - server_first) / played_steps
        chromium_ms = 1e3 * (all_last - all_first) / played_steps - server_ms
        thread_ms = (
            1e3
            * max(
                (
                    threads_last[key] - threads_first[key]
                    for key in threads_first.keys() & threads_last
                ),
                default=0.0,
            )
            / played_steps
        )
        print(
            f"{policy + '@' + platform:>26} {model.platform.n_nodes:>6} "
            f"{run.steps_per_second:>8.2f} {step_ms:>6.1f} {render_ms:>7.1f} "
            f"{1000 / (interval + step_ms + render_ms):>6.2f} {server_ms:>7.1f} "
            f"{thread_ms:>7.1f} {chromium_ms:>9.1f} {1000 / (interval + thread_ms):>5.2f}"
        )
        moved_and_stopped &= run.last_step > run.first_step and run.paused_later == run.paused_at
    print(f"load average at the end {_load_average()}")
    return 0 if moved_and_stopped else 1


PAGE_LOAD, LOAD_STEP = 2.0, 0.25  # the page's load factor slider: starts at 2.0, steps 0.25


def _parse_case(text: str) -> tuple[str, str]:
    policy, at, platform = text.partition("@")
    if not (at and policy and platform):
        raise SystemExit(f"--case {text!r}: expected POLICY@PLATFORM, e.g. easy@curie")
    return policy, platform


def _set_controls(page: Any, policy: str, platform: str, load: float) -> None:
    """Set the page's controls to the case's and Reset, when they differ from the page's."""
    from viz_page import click_step, reset_and_read, select, slide

    from visualization.model import DEFAULT_PLATFORM, DEFAULT_POLICY

    presses = round((load - PAGE_LOAD) / LOAD_STEP)
    if abs(PAGE_LOAD + presses * LOAD_STEP - load) > 1e-9:
        raise SystemExit(f"--load {load:g}: the page's slider moves by {LOAD_STEP:g}")
    if (policy, platform, presses) == (DEFAULT_POLICY, DEFAULT_PLATFORM, 0):
        return
    click_step(page, 1)  # so the Reset is seen: the counter goes back to 0
    if platform != DEFAULT_PLATFORM:
        select(page, "platform", platform)
    if policy != DEFAULT_POLICY:
        select(page, "policy (scheduler)", policy)
    if presses:
        slide(page, "load factor", presses)
    reset_and_read(page, f"{policy} on")


def play_interval_ms() -> int:
    """``PLAY_INTERVAL_MS`` as ``visualization/app.py`` sets it (read, not imported: the
    app patches Mesa's module when imported)."""
    found = re.search(
        r"^PLAY_INTERVAL_MS = (\d+)$", (REPO / "visualization" / "app.py").read_text(), re.MULTILINE
    )
    if not found:
        raise SystemExit("visualization/app.py sets no PLAY_INTERVAL_MS")
    return int(found.group(1))


def _load_average() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg()) + " (1/5/15 min)"


if __name__ == "__main__":
    sys.exit(main())
