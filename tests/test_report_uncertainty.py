"""Sweep reports that show uncertainty: the summary first, forest plots of the paired
differences, tables collapsed, no interval where replicates do not vary, SVG beside PNG."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection

from market_hpc.experiment.report import write_report
from market_hpc.experiment.report_data import Axis, SweepData
from market_hpc.experiment.report_forest import forest_figure, summary_html
from market_hpc.experiment.report_html import paired_section
from market_hpc.experiment.sweep import run_sweep

# 4 cores; fifo keeps the 1-core jobs 2..4 behind the 4-core job 1 (submit 1), sjf does not
TRACE = """\
1 0 -1 100 4 -1 -1 4 100 -1 1 1 -1 -1 1 1 -1 -1
2 1 -1 100 4 -1 -1 4 100 -1 1 1 -1 -1 1 1 -1 -1
3 2 -1 10 1 -1 -1 1 10 -1 1 1 -1 -1 1 1 -1 -1
4 3 -1 10 1 -1 -1 1 10 -1 1 1 -1 -1 1 1 -1 -1
"""

FIXED = """
platform = "nodes=1,cores=4"
timeseries = false
workload = {{ trace = "{trace}" }}
policy = {{ scheduler = "fifo" }}
seeds = 2
[grid]
"policy.scheduler" = ["fifo", "sjf"]
[report]
metrics = ["mean_wait"]
"""


@pytest.fixture(scope="module")
def fixed_trace_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fixed")
    (folder / "t.swf").write_text(TRACE)
    (folder / "sweep.toml").write_text(FIXED.format(trace=folder / "t.swf"))
    run_sweep(folder / "sweep.toml", folder / "out", progress=False)
    write_report(folder / "out", progress=False)
    return folder / "out"


def test_seeds_over_a_fixed_trace_get_no_interval(fixed_trace_sweep: Path) -> None:
    page = (fixed_trace_sweep / "report" / "report.html").read_text()
    # a fixed trace and deterministic policies: both seeds give the same difference
    table = pd.read_csv(fixed_trace_sweep / "report" / "mean_wait_paired_differences.csv")
    assert table.verdict.tolist() == ["no spread"]
    assert table.ci_low.isna().all() and table.ci_high.isna().all()
    assert "replicates do not vary" in page.lower()
    assert (
        "95% CI"
        not in (fixed_trace_sweep / "report" / "mean_wait_paired_differences.txt").read_text()
    )
    assert "same every seed, no interval" in page
    diff = table.mean_diff[0]
    assert not re.search(rf"{abs(diff):,.0f} \[[-+]{abs(diff):,.0f}, [-+]{abs(diff):,.0f}\]", page)


def test_page_opens_with_the_summary_then_forest_plots_then_collapsed_tables(
    fixed_trace_sweep: Path,
) -> None:
    page = (fixed_trace_sweep / "report" / "report.html").read_text()
    summary, forest = page.index("<h2>Summary</h2>"), page.index("mean_wait_paired_differences'")
    plots, tables = page.index("mean_wait_by_policy'"), page.index("<h2>Tables</h2>")
    assert summary < forest < plots < tables
    assert "sjf − fifo" in page[summary:forest]  # the differences are named in the summary
    assert "compared with fifo (the sweep's first policy)" in page[summary:forest]
    after = page[tables:]
    assert after.count("<details>") >= 2 and "<summary>Paired differences" in after
    assert "<table" not in re.sub(r"(?s)<details>.*?</details>", "", page)  # every table collapsed


def test_figures_are_saved_as_svg_and_png_repeatably(fixed_trace_sweep: Path) -> None:
    report = fixed_trace_sweep / "report"
    for stem in ("mean_wait_paired_differences", "mean_wait_by_policy"):
        assert (report / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert "<svg" in (report / f"{stem}.svg").read_text()
    before = {
        p.name: p.read_bytes() for p in report.glob("*") if p.suffix in (".svg", ".png", ".html")
    }
    write_report(fixed_trace_sweep, progress=False)
    after = {
        p.name: p.read_bytes() for p in report.glob("*") if p.suffix in (".svg", ".png", ".html")
    }
    assert before == after


def _paired_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "policy": ["b", "c", "d"],
            "baseline": ["a"] * 3,
            "seeds": [3, 3, 3],
            "mean_diff": [5.0, 2.0, -1.0],
            "ci_low": [1.0, np.nan, -4.0],
            "ci_high": [9.0, np.nan, 2.0],
            "rel_mean": [0.05, 0.02, -0.01],
            "rel_low": [0.01, np.nan, -0.04],
            "rel_high": [0.09, np.nan, 0.02],
            "verdict": ["higher", "no spread", "undecided"],
        }
    )


def test_forest_plot_draws_bars_only_where_there_is_an_interval() -> None:
    figure = forest_figure("mean_wait", _paired_table(), "s")
    axes = figure.axes[0]
    bars = [c for c in axes.collections if isinstance(c, LineCollection)]
    segments = [seg for c in bars for seg in c.get_segments()]
    spans = sorted((round(s[0][0], 6), round(s[1][0], 6)) for s in segments if s[0][1] == s[1][1])
    assert spans == [(-4.0, 2.0), (1.0, 9.0)]  # none for the no-spread row
    assert [t.get_text() for t in axes.get_yticklabels()] == ["b − a", "c − a", "d − a"]
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert any(text.startswith("no spread") for text in legend)


def test_summary_lists_the_significant_differences_with_better_or_worse(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text(_paired_table().to_csv(index=False))
    frame = pd.DataFrame(
        {"policy": ["a", "b"] * 2, "seed": [1, 1, 2, 2], "mean_wait": [1.0, 2.0, 3.0, 5.0]}
    )
    data = SweepData(frame, [Axis("policy", "policy", None, ("policy",))], [], "s", ["policy"])
    text = summary_html(data, ["mean_wait"], {"mean_wait": tmp_path / "p.csv"})
    assert "Significant at 95% (1," in text
    assert "b − a: higher (worse), +5.00 [+1.00, +9.00], +5.0 % [+1.0, +9.0] %" in text
    assert "c − a: +2.00 (worse), +2.0 %, the same in all 3 seeds" in text
    assert "d − a" not in text  # undecided: in the tables only
    assert "replicates do not vary" not in text.lower()  # this frame's seeds differ


def test_forest_plot_has_one_panel_per_comparison_across_settings() -> None:
    table = pd.concat(
        [
            _paired_table().iloc[[0, 2]].assign(curves=curves)
            for curves in ("spec", "steep", "flat")
        ],
        ignore_index=True,
    )
    figure = forest_figure("mean_wait", table, "s")
    panels = [axes for axes in figure.axes if axes.get_title()]
    assert [axes.get_title() for axes in panels] == ["b − a", "d − a"]
    assert [t.get_text() for t in panels[0].get_yticklabels()] == [
        "curves=spec",
        "curves=steep",
        "curves=flat",
    ]
    # each panel's points sit on the rows of their settings: b's +5 on all three rows
    points = [line for line in panels[0].lines if line.get_marker() in ("o", "s", "D")]
    assert sorted(y for line in points for y in line.get_ydata()) == [0, 1, 2]
    assert {x for line in points for x in line.get_xdata()} == {5.0}


def _impossible_table() -> pd.DataFrame:
    """Mean bounded slowdown, 3 seeds: the t interval of sjf − fifo reaches -157 % of
    fifo's mean 1,369.1 (a negative slowdown), d − a's +20 % stays possible."""
    return pd.DataFrame(
        {
            "policy": ["sjf", "d"],
            "baseline": ["fifo", "fifo"],
            "seeds": [3, 3],
            "mean_diff": [-1330.8, 100.0],
            "ci_low": [-2150.0, -50.0],
            "ci_high": [-511.6, 250.0],
            "rel_mean": [-1330.8 / 1369.1, 100.0 / 500.0],
            "rel_low": [-2150.0 / 1369.1, -0.1],
            "rel_high": [-511.6 / 1369.1, 0.5],
            "verdict": ["lower", "undecided"],
        }
    )


def test_intervals_are_cut_at_what_is_possible(tmp_path: Path) -> None:
    table = _impossible_table()
    (tmp_path / "p.csv").write_text(table.to_csv(index=False))
    frame = pd.DataFrame(
        {
            "policy": ["fifo", "sjf"] * 2,
            "seed": [1, 1, 2, 2],
            "mean_bounded_slowdown": [1.0, 2.0, 3.0, 5.0],
        }
    )
    data = SweepData(frame, [Axis("policy", "policy", None, ("policy",))], [], "s", ["policy"])
    text = summary_html(
        data, ["mean_bounded_slowdown"], {"mean_bounded_slowdown": tmp_path / "p.csv"}
    )
    assert (
        "sjf − fifo: lower (better), -1,331 [-1,369 (clipped), -512], -97.2 % "
        "[-100 (clipped), -37.4] %"
    ) in text
    assert "-157" not in text and "cut at -100 % and marked clipped" in text
    section = paired_section("mean_bounded_slowdown", tmp_path / "p.csv")
    assert "-97.2 % [-100 (clipped), -37.4] %" in section and "+20.0 % [-10.0, +50.0] %" in section
    # a metric that can be negative keeps the t interval as it is
    profit = paired_section("total_profit", tmp_path / "p.csv")
    assert "-97.2 % [-157.0, -37.4] %" in profit and "clipped" not in profit.split("<p>")[0]


def test_forest_bar_stops_at_the_lowest_possible_difference() -> None:
    figure = forest_figure("mean_bounded_slowdown", _impossible_table(), "x")
    axes = figure.axes[0]
    segments = [
        seg
        for c in axes.collections
        if isinstance(c, LineCollection)
        for seg in c.get_segments()
        if seg[0][1] == seg[1][1]
    ]
    spans = sorted((round(s[0][0], 1), round(s[1][0], 1)) for s in segments)
    assert spans == [(-1369.1, -511.6), (-50.0, 250.0)]
    ends = [line for line in axes.lines if line.get_gid() == "clipped"]
    assert [round(x, 1) for line in ends for x in line.get_xdata()] == [-1369.1]
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert "interval clipped: the policy's mean\ncannot be below 0 (-100 %)" in legend
    assert axes.get_xlim()[0] > -1500  # the impossible -2,150 is not drawn
