"""A Gantt chart a person can read: hover text per job, job ids where they fit, a legend
that says what colour means, a minimum drawn size, nothing outside the axes, and a default
window in which the run's median job is 5 px wide, with "N of M jobs" in the caption."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market_hpc.cli import main
from market_hpc.experiment.gantt import core_allocations, gantt_rectangles
from market_hpc.experiment.gantt_svg import (
    LEFT,
    MIN_HEIGHT_PX,
    MIN_WIDTH_PX,
    PLOT_WIDTH,
    SIZES,
    TOP,
    default_window,
    gantt_svg,
)
from market_hpc.experiment.run_page_gantt import TimeUnit, gantt_figures

SVG = "{http://www.w3.org/2000/svg}"

# 2 nodes x 4 cores. Job 1 runs 49 h on one core; jobs 2..9 run 240 s to 660 s on 2 or 4
# cores, all within the first 2 h.
TRACE = (
    "\n".join(
        ["1 0 -1 176400 1 -1 -1 1 180000 -1 1 1 -1 -1 1 1 -1 -1"]
        + [
            f"{j} {600 * (j - 2)} -1 {120 + 60 * j} {4 if j % 2 else 2} -1 -1 {4 if j % 2 else 2} "
            "7200 -1 1 "
            f"{j % 3 + 2} -1 -1 1 1 -1 -1"
            for j in range(2, 10)
        ]
    )
    + "\n"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gantt")
    (folder / "t.swf").write_text(TRACE)
    assert (
        main(
            [
                "replay",
                str(folder / "t.swf"),
                "--platform",
                "nodes=2,cores=4",
                "--scheduler",
                "fifo",
                "--out",
                str(folder / "run"),
            ]
        )
        == 0
    )
    return folder / "run"


def _jobs(svg: Path) -> dict[int, ET.Element]:
    root = ET.parse(svg).getroot()
    groups = {}
    for group in root.iter(f"{SVG}g"):
        title = group.find(f"{SVG}title")
        assert title is not None and title.text
        groups[int(re.match(r"job (\d+)", title.text).group(1))] = group  # type: ignore[union-attr]
    return groups


def test_default_window_makes_the_median_job_5_px_wide_and_says_how_many_jobs(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run)]) == 0
    out = capsys.readouterr().out
    assert (
        # median job 480 s: 480 s x 820 px / 5 px = 78,720 s = 21.87 h, shorter than the run
        "note: Gantt chart: 9 of 9 jobs drawn, window 0.00 to 21.87 hours (the run's median "
        "job 5 px wide; --window all: the whole run, --window START:END: any span)\n"
    ) in out
    groups = _jobs(run / "schedule.svg")
    assert set(groups) == set(range(1, 10))
    page = (run / "schedule.html").read_text()
    assert "9 of the run&#x27;s 9 jobs drawn, window 0.00 to 21.87 hours" in page
    assert "Jobs on nodes: 9 of 9 jobs, 2 nodes" in page


def test_window_all_draws_the_whole_run_with_a_minimum_width(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run), "--window", "all"]) == 0
    assert "9 of 9 jobs drawn, window 0.00 to 49.00 hours (--window)" in capsys.readouterr().out
    groups = _jobs(run / "schedule.svg")
    # a 240 s job in a 49 h window is 1.1 px at 820 px: drawn as it is, never below the minimum
    widths = [float(rect.get("width")) for g in groups.values() for rect in g.iter(f"{SVG}rect")]
    assert min(widths) == 1.1 and MIN_WIDTH_PX == 1.0
    heights = [float(rect.get("height")) for g in groups.values() for rect in g.iter(f"{SVG}rect")]
    assert min(heights) >= 2.0  # the 1-core job on a 4-core node is not a hairline


def test_every_job_has_hover_text_and_ids_show_where_they_fit(run: Path) -> None:
    assert main(["plot", str(run), "--window", "0:4h"]) == 0
    text = (run / "schedule.svg").read_text()
    groups = _jobs(run / "schedule.svg")
    for job, group in groups.items():
        hover = group.find(f"{SVG}title").text  # type: ignore[union-attr]
        for word in (f"job {job}, user ", "submit ", "start ", "end ", "wait ", "nodes "):
            assert word in hover, (job, hover)
    labelled = {int(t.text) for g in groups.values() for t in g.iter(f"{SVG}text")}  # type: ignore[arg-type]
    assert labelled and labelled <= set(groups)
    assert "colour: user" in text and "user 3" in text  # the legend: 4 users, all named
    assert "other users" not in text


def test_svg_geometry_is_hand_checkable() -> None:
    # one node of 4 cores; job 5 on 2 cores for 100 s of a 1,000 s window, job 6 for 1 s
    rects = gantt_rectangles([5, 6], [0.0, 500.0], [100.0, 501.0], [[(0, 2)], [(0, 1)]], [4])
    jobs = pd.DataFrame(
        {
            "job_id": [5, 6],
            "user": [1, 2],
            "submit_time": [0.0, 400.0],
            "start_time": [0.0, 500.0],
            "end_time": [100.0, 501.0],
            "wait_time": [0.0, 100.0],
            "nodes": ["0:2", "0:1"],
        }
    )
    text = gantt_svg(rects, jobs, [4], (0.0, 1000.0), (0, 1), (1.0, "s"), "t")
    root = ET.fromstring(text)
    boxes = {
        g.find(f"{SVG}title").text.split(",")[0]: g.find(f"{SVG}rect").attrib  # type: ignore[union-attr]
        for g in root.iter(f"{SVG}g")
    }
    assert boxes["job 5"]["width"] == "82.0"  # 100 s of 1,000 s at 820 px
    assert boxes["job 5"]["height"] == "20.0"  # 2 of 4 cores of a 40 px row
    assert boxes["job 6"]["width"] == "1.0"  # 0.8 px drawn as the 1 px minimum
    assert float(boxes["job 6"]["x"]) == pytest.approx(64 + 410.0)


def test_default_window_is_164_median_jobs_from_the_first_start_or_the_whole_run() -> None:
    starts, ends = np.array([50.0, 10.0, np.nan]), np.array([3000.0, 200000.0, np.nan])
    assert default_window(starts, ends) == (10.0, 200000.0)  # 164 x 101,470 s: past the end
    starts, ends = np.array([100.0, 200.0, 300.0]), np.array([160.0, 260.0, 90000.0])
    assert default_window(starts, ends) == (100.0, 100.0 + 164 * 60.0)  # median 60 s
    assert default_window(np.array([5.0, 5.0]), np.array([5.0, 9.0])) == (5.0, 9.0)  # capped
    assert default_window(np.array([5.0, 5.0]), np.array([5.0, 5.0])) == (5.0, 5.0)  # 0 s jobs


# 8 nodes x 4 cores, no users and no queues in the trace (-1): 1,200 jobs of 30 s to 15 min
# on 1 to 8 cores over about 4 days, and two that run 2 days on 16 cores.
def _busy_trace(seed: int = 7) -> str:
    rng = np.random.default_rng(seed)
    lines, submit = [], 0
    for job in range(1, 1201):
        submit += int(rng.integers(60, 540))
        run, size = int(rng.integers(30, 900)), int(rng.choice([1, 2, 4, 8]))
        lines.append(
            f"{job} {submit} -1 {run} {size} -1 -1 {size} {run * 2} -1 1 -1 -1 -1 -1 -1 -1 -1"
        )
    for job in (1201, 1202):
        lines.append(
            f"{job} {3600 * (job - 1200)} -1 172800 16 -1 -1 16 180000 -1 1 -1 -1 -1 -1 -1 -1 -1"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("busy")
    (folder / "busy.swf").write_text(_busy_trace())
    assert (
        main(
            [
                "replay",
                str(folder / "busy.swf"),
                "--platform",
                "nodes=8,cores=4",
                "--scheduler",
                "easy",
                "--out",
                str(folder / "run"),
            ]
        )
        == 0
    )
    return folder / "run"


def _inside(svg: Path) -> tuple[int, list[tuple[float, float, float, float]]]:
    """The jobs drawn and the pieces outside the plot area (x, y, width, height)."""
    root = ET.parse(svg).getroot()
    frame = next(r for r in root.iter(f"{SVG}rect") if r.get("fill") == "#fafafa")
    right = LEFT + PLOT_WIDTH
    bottom = TOP + float(frame.get("height"))  # type: ignore[arg-type]
    groups = _jobs(svg)
    outside = []
    for group in groups.values():
        for rect in group.iter(f"{SVG}rect"):
            x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))  # type: ignore[arg-type]
            if x < LEFT or y < TOP or x + w > right + 0.05 or y + h > bottom + 0.05:
                outside.append((x, y, w, h))
        for text in group.iter(f"{SVG}text"):
            x, y = float(text.get("x")), float(text.get("y"))  # type: ignore[arg-type]
            if not (LEFT <= x <= right and TOP <= y <= bottom):
                outside.append((x, y, 0.0, 0.0))
    return len(groups), outside


def test_whole_run_of_many_short_jobs_draws_them_all_inside_the_axes(
    busy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(busy)]) == 0  # the default: the median job (465 s) 5 px wide
    assert (
        "Gantt chart: 21 of 1,202 jobs drawn, window 0.14 to 21.42 hours (the run's median job"
        in capsys.readouterr().out
    )
    assert main(["plot", str(busy), "--window", "all"]) == 0
    assert (
        "Gantt chart: 1,202 of 1,202 jobs drawn, window 0.14 to 101.96 hours (--window)"
        in capsys.readouterr().out
    )
    drawn, outside = _inside(busy / "schedule.svg")
    assert drawn >= 0.9 * 1202 and outside == []
    text = (busy / "schedule.svg").read_text()
    # no users or queues in the trace: coloured by size, the legend names the bins
    assert "colour: job size (cores)" in text and "colour: user" not in text
    for words in ("1 core", "2 to 4 cores", "5 to 16 cores"):
        assert f">{words}</text>" in text
    fills = set(re.findall(r"<g fill='(#[0-9a-f]{6})'", text))
    assert fills == set(SIZES[:3])  # 1, 2-4 and 5-16 cores (the 8-core jobs and the 16-core ones)


def test_zoomed_view_cuts_pieces_at_the_window_and_the_node_range(
    busy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 3 to 3.2 days after the first submission (at 504 s)
    assert main(["plot", str(busy), "--window", "3d:3.2d", "--nodes", "2:5"]) == 0
    note = capsys.readouterr().out
    drawn, outside = _inside(busy / "schedule.svg")
    assert outside == [] and drawn > 10
    assert (
        f"Gantt chart: {drawn:,} of 1,202 jobs drawn, window 72.14 to 76.94 hours (--window)"
        in note
    )
    assert "lie outside the window or the node range" in note


def test_png_draws_one_patch_per_piece_inside_the_axes(busy: Path) -> None:
    jobs = pd.read_csv(busy / "jobs.csv")
    started = jobs[jobs["start_time"].notna()]
    allocations = core_allocations(
        started["nodes"].tolist(), started["cores"].tolist(), started["units"].tolist()
    )
    window = (float(started["start_time"].min()), float(started["end_time"].max()))
    notes: list[str] = []
    figure, caption, _ = gantt_figures(
        started, allocations, np.full(8, 4), window, TimeUnit(86400.0, "days"), notes, (0, 8)
    )
    assert caption.startswith("1,202 of the run's 1,202 jobs drawn, window ")
    axes = figure.axes[0]
    (patches,) = axes.collections
    rects = gantt_rectangles(
        started["job_id"].tolist(),
        started["start_time"].tolist(),
        started["end_time"].tolist(),
        allocations,
        [4] * 8,
    )
    assert len(patches.get_paths()) == len(rects.job) >= 1202
    vertices = np.concatenate([path.vertices for path in patches.get_paths()])
    x_low, x_high = axes.get_xlim()
    y_high, y_low = axes.get_ylim()  # nodes grow downwards
    assert vertices[:, 0].min() >= x_low - 1e-9 and vertices[:, 0].max() <= x_high + 1e-9
    assert vertices[:, 1].min() >= y_low - 1e-9 and vertices[:, 1].max() <= y_high + 1e-9
    # the narrowest piece is the 1 px minimum of the axes' real width, the lowest 2 px
    width_px = axes.get_window_extent().width
    widths = np.array([np.ptp(p.vertices[:, 0]) for p in patches.get_paths()])
    assert widths.min() * width_px / (x_high - x_low) == pytest.approx(MIN_WIDTH_PX)
    heights = np.array([np.ptp(p.vertices[:, 1]) for p in patches.get_paths()])
    assert heights.min() * axes.get_window_extent().height / 8 >= MIN_HEIGHT_PX - 1e-9
    legend = axes.get_legend()
    assert legend.get_title().get_text() == "colour: job size (cores)"
    assert [t.get_text() for t in legend.get_texts()] == ["1 core", "2 to 4 cores", "5 to 16 cores"]
    labels = [t.get_text() for t in axes.get_xticklabels()]
    assert labels and all("e" not in label for label in labels)
