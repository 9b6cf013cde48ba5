"""A Gantt chart a person can read: hover text per job, job ids where they fit, a legend,
a minimum drawn size, and a default window that keeps most jobs wider than a few pixels."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from market_hpc.cli import main
from market_hpc.experiment.gantt import gantt_rectangles
from market_hpc.experiment.gantt_svg import MIN_WIDTH_PX, READABLE_PX, default_window, gantt_svg

SVG = "{http://www.w3.org/2000/svg}"

# 2 nodes x 4 cores. Job 1 runs 49 h on one core; jobs 2..9 run 240 s to 660 s on 2 or 4
# cores, all within the first 2 h.
TRACE = "\n".join(
    ["1 0 -1 176400 1 -1 -1 1 180000 -1 1 1 -1 -1 1 1 -1 -1"]
    + [f"{j} {600 * (j - 2)} -1 {120 + 60 * j} {4 if j % 2 else 2} -1 -1 {4 if j % 2 else 2} 7200 -1 1 "
       f"{j % 3 + 2} -1 -1 1 1 -1 -1" for j in range(2, 10)]) + "\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gantt")
    (folder / "t.swf").write_text(TRACE)
    assert main(["replay", str(folder / "t.swf"), "--platform", "nodes=2,cores=4",
                 "--scheduler", "fifo", "--out", str(folder / "run")]) == 0
    return folder / "run"


def _jobs(svg: Path) -> dict[int, ET.Element]:
    root = ET.parse(svg).getroot()
    groups = {}
    for group in root.iter(f"{SVG}g"):
        title = group.find(f"{SVG}title")
        assert title is not None and title.text
        groups[int(re.match(r"job (\d+)", title.text).group(1))] = group  # type: ignore[union-attr]
    return groups


def test_default_window_is_said_and_keeps_jobs_readable(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", str(run)]) == 0
    out = capsys.readouterr().out
    # at 820 px and 5 px readable: over 49 h or 24 h only job 1 is (240 s -> 1.1 / 2.3 px);
    # over 12 h jobs 3..9 and 1 (8 of 9: 240 s -> 4.6 px); over 6 h all 9 (240 s -> 9.1 px)
    assert "Gantt chart: window 0.00 to 6.00 hours of the run's 49.00" in out
    assert "--window START:END" in out and "--window all" in out
    groups = _jobs(run / "schedule.svg")
    assert set(groups) == set(range(1, 10))
    widths = [float(rect.get("width")) for g in groups.values() for rect in g.iter(f"{SVG}rect")]
    assert min(widths) >= READABLE_PX


def test_window_all_draws_the_whole_run_with_a_minimum_width(run: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", str(run), "--window", "all"]) == 0
    assert "Gantt chart: window" not in capsys.readouterr().out
    groups = _jobs(run / "schedule.svg")
    # a 240 s job in a 49 h window is 1.1 px at 820 px: drawn at the minimum width
    widths = [float(rect.get("width")) for g in groups.values() for rect in g.iter(f"{SVG}rect")]
    assert min(widths) == MIN_WIDTH_PX
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
    assert "colour: user" in text and "other users" in text  # the legend


def test_svg_geometry_is_hand_checkable() -> None:
    # one node of 4 cores; job 5 on 2 cores for 100 s of a 1,000 s window, job 6 for 1 s
    rects = gantt_rectangles([5, 6], [0.0, 500.0], [100.0, 501.0], [[(0, 2)], [(0, 1)]], [4])
    import pandas as pd

    jobs = pd.DataFrame({"job_id": [5, 6], "user": [1, 2], "submit_time": [0.0, 400.0],
                         "start_time": [0.0, 500.0], "end_time": [100.0, 501.0],
                         "wait_time": [0.0, 100.0], "nodes": ["0:2", "0:1"]})
    text = gantt_svg(rects, jobs, [4], (0.0, 1000.0), (0, 1), (1.0, "s"), "t")
    root = ET.fromstring(text)
    boxes = {g.find(f"{SVG}title").text.split(",")[0]: g.find(f"{SVG}rect").attrib  # type: ignore[union-attr]
             for g in root.iter(f"{SVG}g")}
    assert boxes["job 5"]["width"] == "82.0"  # 100 s of 1,000 s at 820 px
    assert boxes["job 5"]["height"] == "20.0"  # 2 of 4 cores of a 40 px row
    assert boxes["job 6"]["width"] == f"{MIN_WIDTH_PX:.1f}"  # 0.8 px drawn as the minimum
    assert float(boxes["job 6"]["x"]) == pytest.approx(64 + 410.0)


def test_default_window_of_jobs_that_all_fit_is_the_whole_run() -> None:
    assert default_window(np.array([0.0, 50.0]), np.array([3000.0, 2000.0])) == (0.0, 3000.0, 1.0)
