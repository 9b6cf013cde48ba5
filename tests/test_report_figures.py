"""Sweep report pictures and page: paired 95% intervals in report.html, plain numbers with
units, one colour scale per heatmap row, titles that fit, bounded figure sizes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from market_hpc.experiment import report as report_module
from market_hpc.experiment.report import write_report
from market_hpc.experiment.sweep import run_sweep

SWEEP = """
platform = "nodes=4,cores=8"
timeseries = false
workload = { generator = "lublin-feitelson", jobs = 30 }
policy = { scheduler = "fifo" }
seeds = 3
[grid]
"policy.scheduler" = ["fifo", "easy"]
"policy.allocator" = ["first-fit", "best-fit"]
"workload.load_factor" = [1.0, 2.0, 3.0, 4.0]
[report]
metrics = ["mean_wait", "holds"]
"""


@pytest.fixture(scope="module")
def sweep_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("figs")
    (folder / "sweep.toml").write_text(SWEEP)
    run_sweep(folder / "sweep.toml", folder / "out", progress=False)
    return folder / "out"


@pytest.fixture(scope="module")
def figures(sweep_out: Path) -> dict[str, Figure]:
    drawn: dict[str, Figure] = {}
    original = report_module._save

    def keep(figure: Figure, path: Path) -> Path:
        drawn[path.name] = figure
        return original(figure, path)

    report_module._save = keep  # type: ignore[assignment]
    try:
        write_report(sweep_out, progress=False)
    finally:
        report_module._save = original  # type: ignore[assignment]
    return drawn


def test_html_carries_the_paired_intervals_in_plain_numbers(
    sweep_out: Path, figures: dict[str, Figure]
) -> None:
    page = (sweep_out / "report" / "report.html").read_text()
    section = page[page.index("<summary>Paired differences") : page.index("Summary: mean")]
    assert "easy − fifo" in section and "difference (s) [95% CI]" in section
    assert re.search(r"[-+][\d,]+ \[[-+][\d,]+, [-+][\d,]+\]", section)  # +1,234 [-5, +9]
    verdicts = set(
        re.findall(r"<td>(higher|lower|undecided|equal|holds|contradicted)</td>", section)
    )
    assert verdicts and verdicts <= {"higher", "lower", "undecided", "equal"}
    assert not re.search(r"\d\.\d+e[+-]\d", page)  # no scientific notation anywhere
    assert re.search(r"[\d,]+ ± [\d,]+ s \(3\)", page)  # mean ± std with its unit


def test_heatmap_rows_share_one_colour_scale(figures: dict[str, Figure]) -> None:
    figure = figures["mean_wait_heatmap_scheduler_allocator.png"]  # 4 load panels: 2 rows
    panels = [axes for axes in figure.axes if axes.images]
    assert len(panels) == 4
    limits = [axes.images[0].get_clim() for axes in panels]
    assert limits[0] == limits[1] == limits[2] and limits[3] != limits[0]
    bars = [axes for axes in figure.axes if not axes.images]
    assert len(bars) == 2  # one colour bar per row
    cells = [text.get_text() for axes in panels for text in axes.texts]
    assert cells and all(re.fullmatch(r"[\d,]+(\.\d+)?", text) for text in cells)


def test_constant_heatmap_says_so_instead_of_a_colour_bar(figures: dict[str, Figure]) -> None:
    figure = figures["holds_heatmap_scheduler_allocator.png"]
    assert all(axes.images for axes in figure.axes)  # no colour bar axes
    assert all("every cell 0" in axes.get_title() for axes in figure.axes)


def test_titles_fit_and_figures_stay_readable(figures: dict[str, Figure]) -> None:
    for name, figure in figures.items():
        assert figure.get_figwidth() <= report_module.MAX_WIDTH + 2.5, name
        title = figure._suptitle
        if title is None:
            continue
        renderer = figure.canvas.get_renderer()
        box = title.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= figure.bbox.width, (name, title.get_text())


def _tick_labels(axis) -> list:  # type: ignore[no-untyped-def]
    renderer = axis.figure.canvas.get_renderer()
    return [
        (tick.label1.get_text(), tick.label1.get_window_extent(renderer))
        for tick in axis.get_major_ticks()
        if tick.label1.get_visible() and tick.label1.get_text()
    ]


def _no_overlap(boxes: list) -> bool:  # type: ignore[type-arg]
    return not any(
        a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
    )


def test_saved_figures_have_plain_ticks_that_do_not_overlap(tmp_path: Path) -> None:
    from market_hpc.experiment.report_style import save_figure

    figure = Figure(figsize=(3.2, 2.4), layout="constrained")
    axes = figure.add_subplot()
    # start times of trace slices (3.3e6 to 9.8e6 s) and a metric near 1e6 + small steps:
    # matplotlib's defaults print "1e7" and "+1e6" in the corners
    axes.plot([3_283_200.0, 6_566_400.0, 9_763_200.0], [1_000_000.1, 1_000_000.3, 1_000_000.5])
    save_figure(figure, tmp_path / "plain.png")
    for axis in (axes.xaxis, axes.yaxis):
        assert axis.get_offset_text().get_text() == ""
        labels = _tick_labels(axis)
        assert len(labels) >= 2
        assert all("e" not in text and "×" not in text for text, _ in labels)
        assert _no_overlap([box for _, box in labels])
    x_texts = [text for text, _ in _tick_labels(axes.xaxis)]
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", text) for text in x_texts), x_texts
    assert (tmp_path / "plain.svg").is_file()


def test_forest_ticks_of_large_differences_do_not_overlap(tmp_path: Path) -> None:
    import pandas as pd

    from market_hpc.experiment.report_forest import forest_figure
    from market_hpc.experiment.report_style import save_figure

    rows = [
        ("sjf", f"{lf}", d, d - 40_000.0, d + 30_000.0)
        for lf, d in (("1.0", -20_000.0), ("1.5", -42_000.0), ("2.0", -86_000.0))
    ]
    table = pd.DataFrame(
        [
            {
                "policy": p,
                "baseline": "fifo",
                "seeds": 3,
                "mean_diff": d,
                "ci_low": lo,
                "ci_high": hi,
                "rel_mean": d / 120_000,
                "rel_low": lo / 120_000,
                "rel_high": hi / 120_000,
                "verdict": "undecided",
                "load_factor": lf,
            }
            for policy in ("sjf", "easy")
            for p, lf, d, lo, hi in [(policy, *r[1:]) for r in rows]
        ]
    )
    figure = forest_figure("mean_wait", table, "s")
    save_figure(figure, tmp_path / "forest.png")
    for axes in figure.axes:
        labels = _tick_labels(axes.xaxis)
        assert len(labels) >= 2 and _no_overlap([box for _, box in labels]), [t for t, _ in labels]
        assert all(re.fullmatch(r"-?\d{1,3}(,\d{3})*", text) for text, _ in labels)
