"""``market-hpc plot RUN_DIR``: Gantt geometry, occupancy, the page, and the page in Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market_hpc.cli import main
from market_hpc.errors import ConfigError
from market_hpc.experiment.gantt import gantt_rectangles, occupancy, parse_allocation
from market_hpc.experiment.run_page import parse_nodes, parse_window

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plot") / "run"
    assert (
        main(
            [
                "replay",
                str(REPO / "traces" / "lf-kth-like-2000.swf"),
                "--platform",
                "nodes=12,cores=8",
                "--scheduler",
                "easy",
                "--first-n",
                "250",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


def _geometry(run_dir: Path):  # type: ignore[no-untyped-def]
    jobs = pd.read_csv(run_dir / "jobs.csv")
    jobs = jobs[jobs["start_time"].notna()]
    allocations = [parse_allocation(text) for text in jobs["nodes"]]
    rects = gantt_rectangles(
        jobs["job_id"].tolist(),
        jobs["start_time"].tolist(),
        jobs["end_time"].tolist(),
        allocations,
        [8] * 12,
    )
    return jobs, allocations, rects


def test_gantt_rectangles_conserve_work_and_never_overlap(run_dir: Path) -> None:
    jobs, _, rects = _geometry(run_dir)
    drawn = float((rects.height * 8 * (rects.end - rects.start)).sum())
    expected = float((jobs["cores"] * (jobs["end_time"] - jobs["start_time"])).sum())
    assert drawn == pytest.approx(expected)  # every core-second is drawn once
    for i in range(len(rects.job)):  # no two jobs share a core slot at the same time
        clash = (
            (rects.start < rects.end[i])
            & (rects.end > rects.start[i])
            & (rects.y < rects.y[i] + rects.height[i] - 1e-9)
            & (rects.y + rects.height > rects.y[i] + 1e-9)
            & (rects.job != rects.job[i])
        )
        assert not clash.any(), (rects.job[i], rects.job[clash])


def test_zero_length_job_does_not_keep_its_slots() -> None:
    rects = gantt_rectangles([1, 2], [5, 6], [5, 9], [[(0, 4)], [(0, 4)]], [4])
    assert rects.job.tolist() == [2] and rects.height.tolist() == [1.0]


def test_occupancy_matches_the_utilisation(run_dir: Path) -> None:
    jobs, allocations, _ = _geometry(run_dir)
    window = (float(jobs["submit_time"].min()), float(jobs["end_time"].max()))
    grid, per_group = occupancy(
        jobs["start_time"].to_numpy(float),
        jobs["end_time"].to_numpy(float),
        allocations,
        np.full(12, 8),
        window,
        rows=5,
        bins=40,
    )
    assert per_group == 3 and grid.shape == (4, 40) and grid.max() <= 1 + 1e-9
    work = float((jobs["cores"] * (jobs["end_time"] - jobs["start_time"])).sum())
    assert grid.mean() == pytest.approx(work / (96 * (window[1] - window[0])))


def test_plot_writes_one_self_contained_page(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run_dir), "--window", "0:2d", "--nodes", "0:6"]) == 0
    page = (run_dir / "schedule.html").read_text()
    assert len(re.findall(r"<img alt='\w+' src='data:image/png;base64,", page)) == 3
    assert page.count("<svg ") == 1  # the Gantt chart, inline so its hover texts work
    assert not re.search(r"(src|href)=['\"]https?:", page)  # nothing fetched from outside
    assert "core utilisation" in page and "hours after the trace start" in page
    assert (run_dir / "plots" / "schedule-gantt.png").stat().st_size > 10_000
    assert "page:" in capsys.readouterr().out


def test_window_and_node_errors(run_dir: Path) -> None:
    assert parse_window("1.5h:2h") == (5400.0, 7200.0, False, False)
    assert parse_window("@1.5h:2h") == (5400.0, 7200.0, True, False)
    for bad in ("5", "2h:1h", "a:b"):
        with pytest.raises(ConfigError, match="--window"):
            parse_window(bad)
    with pytest.raises(ConfigError, match="--nodes expects FIRST:LAST"):
        parse_nodes("9:3")
    assert main(["plot", str(run_dir), "--window", "900d:901d"]) == 2


@pytest.mark.browser
def test_page_renders_in_headless_chromium(run_dir: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium")
    assert main(["plot", str(run_dir), "--out", str(run_dir / "page.html")]) == 0
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            tab = browser.new_page(viewport={"width": 1300, "height": 1000})
            requests: list[str] = []
            tab.on("request", lambda request: requests.append(request.url))
            tab.goto((run_dir / "page.html").as_uri())
            widths = tab.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
            assert len(widths) == 3 and min(widths) > 800
            box = tab.locator("svg").first.bounding_box()
            assert box is not None and box["width"] > 800
            hovers = tab.eval_on_selector_all("svg g > title", "els => els.map(e => e.textContent)")
            assert hovers and all(text.startswith("job ") and "wait" in text for text in hovers)
            assert [h.lower() for h in tab.locator("h2").all_inner_texts()] == [
                "summary",
                "gantt chart",
                "occupancy",
                "utilisation and queue",
                "wait and slowdown",
            ]
            assert all(url.startswith(("file:", "data:")) for url in requests), requests
            tab.screenshot(path=str(run_dir / "page.png"), full_page=True)
        finally:
            browser.close()


def test_report_of_a_run_folder_is_its_page(run_dir: Path) -> None:
    main(["plot", str(run_dir)])
    (run_dir / "schedule.html").unlink()
    assert main(["report", str(run_dir)]) == 0
    assert (run_dir / "schedule.html").is_file()
