"""How the browser app's page is laid out, measured in headless Chromium: the time-series
legend stays off the plotted lines, the charts follow the node grid without an empty band
at common window sizes, and Mesa's Play interval slider starts at the app's interval.

Same server and browser as ``test_viz_browser.py`` (helpers in ``viz_browser.py``).
"""

from __future__ import annotations

import re

import pytest
from viz_browser import REPO, Server, click_step, open_page, playwright_or_skip, serve, settled

pytestmark = pytest.mark.browser  # run-tests runs these on the newest Python and Mesa too

GAP_BOUND_PX = 40  # node grid tile's last line to the charts' top, at 1400 x 900


def app_play_interval() -> int:
    """``PLAY_INTERVAL_MS`` as ``visualization/app.py`` sets it (read, not imported: the
    app patches Mesa's module when imported)."""
    found = re.search(
        r"^PLAY_INTERVAL_MS = (\d+)$", (REPO / "visualization" / "app.py").read_text(), re.MULTILINE
    )
    assert found, "visualization/app.py sets no PLAY_INTERVAL_MS"
    return int(found.group(1))


@pytest.fixture(scope="module")
def sync_api():  # type: ignore[no-untyped-def]
    """Playwright's sync API, or a skip naming what is missing."""
    return playwright_or_skip()


@pytest.fixture(scope="module")
def viz_server(sync_api, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``market-hpc viz`` (controls' workload), shared by the module."""
    yield from serve(tmp_path_factory)


@pytest.fixture
def page(sync_api, viz_server: Server):  # type: ignore[no-untyped-def]
    """The app in a 1400 x 900 window."""
    yield from open_page(sync_api, viz_server, viewport=(1400, 900))


# Legend elements are the texts and swatches drawn in a series' colour; the plot areas are
# the framed rectangles; every polyline vertex and newest-sample dot in page pixels.
CHART_GEOMETRY = """() => {
  const svg = document.querySelector('.mhpc-timeseries svg');
  const box = e => {
    const r = e.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  };
  const colours = new Set([...svg.querySelectorAll('polyline')].map(p => p.getAttribute('stroke')));
  const legend = [...svg.querySelectorAll('text[fill], rect[fill]:not([stroke])')]
    .filter(e => colours.has(e.getAttribute('fill')))
    .map(e => ({label: e.textContent || 'swatch ' + e.getAttribute('fill'), box: box(e)}));
  const lines = [...svg.querySelectorAll('polyline')].map(line => {
    const matrix = line.getScreenCTM();
    return {colour: line.getAttribute('stroke'),
            points: [...line.points].map(p => {
              const q = p.matrixTransform(matrix);
              return [q.x, q.y];
            })};
  });
  const dots = [...svg.querySelectorAll('circle')].map(box);
  return {legend, lines, dots, areas: [...svg.querySelectorAll("rect[stroke='#999']")].map(box)};
}"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _segment_meets_box(p: list[float], q: list[float], box: list[float]) -> bool:
    """Whether the segment ``p``-``q`` passes through ``box`` (Liang-Barsky clipping)."""
    low, high = 0.0, 1.0
    dx, dy = q[0] - p[0], q[1] - p[1]
    for delta, start, lo, hi in ((dx, p[0], box[0], box[2]), (dy, p[1], box[1], box[3])):
        if delta == 0:
            if not lo <= start <= hi:
                return False
            continue
        t1, t2 = sorted(((lo - start) / delta, (hi - start) / delta))
        low, high = max(low, t1), min(high, t2)
    return low <= high


def test_chart_legends_stay_off_the_plotted_lines(page) -> None:  # type: ignore[no-untyped-def]
    """Twenty steps of the default run put the 'running' line at the top of the jobs axis,
    right where a legend inside the plot area would be."""
    click_step(page, 20)
    chart = settled(lambda: page.evaluate(CHART_GEOMETRY))
    labels = [item["label"] for item in chart["legend"]]
    assert {"queued", "running", "holds", "drops"} <= set(labels), labels
    assert len(chart["areas"]) == 4 and all(b[2] > b[0] and b[3] > b[1] for b in chart["areas"]), (
        chart["areas"]
    )
    assert all(b[2] > b[0] and b[3] > b[1] for b in (item["box"] for item in chart["legend"])), (
        chart["legend"]
    )
    for item in chart["legend"]:
        box = item["box"]
        for line in chart["lines"]:
            crossing = [
                (p, q)
                for p, q in zip(line["points"], line["points"][1:])
                if _segment_meets_box(p, q, box)
            ]
            assert not crossing, (
                f"legend {item['label']!r} at {box} crosses the {line['colour']} line at "
                f"{crossing[0]}"
            )
        assert not [dot for dot in chart["dots"] if _overlap(dot, box)], (
            f"legend {item['label']!r} covers a dot"
        )
        assert not [area for area in chart["areas"] if _overlap(area, box)], (
            f"legend {item['label']!r} at {box} is inside a plot area {chart['areas']}"
        )


GRID_AND_CHARTS = """() => {
  const tile = document.querySelector('img.mhpc-nodes').closest('.mhpc-tile');
  const shown = [...tile.querySelectorAll('*')].map(e => e.getBoundingClientRect())
    .filter(r => r.height > 0);
  return {content: Math.max(...shown.map(r => r.bottom)),
          picture: document.querySelector('img.mhpc-nodes').getBoundingClientRect().bottom,
          charts: document.querySelector('.mhpc-timeseries svg').getBoundingClientRect().top,
          hidden: tile.scrollHeight - tile.clientHeight};
}"""


@pytest.mark.parametrize("window", [(1400, 900), (1920, 1080)])
def test_charts_follow_the_node_grid_without_a_gap(page, window: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size({"width": window[0], "height": window[1]})
    page.locator(".mhpc-timeseries svg").wait_for(timeout=30_000)
    click_step(page, 3)
    where = settled(lambda: page.evaluate(GRID_AND_CHARTS))
    print(f"\n{window[0]} x {window[1]}: {where}")
    assert where["hidden"] <= 1, f"the node grid tile hides {where['hidden']} px of its content"
    gap = where["charts"] - where["content"]
    assert 0 <= gap < GAP_BOUND_PX, (
        f"{gap:.0f} px from the node grid's last line to the charts: {where}"
    )


def test_play_interval_starts_at_the_apps_interval(page) -> None:  # type: ignore[no-untyped-def]
    """Mesa's slider (min 1 ms, step 10 ms) shows the app's interval, not the nearest
    step the browser snaps it to."""
    thumb = (
        page.locator(".v-input")
        .filter(has_text="Play Interval (ms)")
        .first.locator("[role=slider]")
    )
    thumb.wait_for(state="attached", timeout=10_000)
    page.wait_for_timeout(
        1_000
    )  # the browser snaps a value off the slider's steps, then reports it
    shown = settled(
        lambda: (
            page.get_by_text(re.compile(r"^Play Interval \(ms\): ")).inner_text(),
            thumb.get_attribute("aria-valuenow"),
        )
    )
    interval = app_play_interval()
    assert shown == (f"Play Interval (ms): {interval}", str(interval)), shown
