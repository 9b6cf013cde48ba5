"""Sweep reports: zip groups as one series, rows rebuilt from parts/, no silent averaging,
``[report]`` checked before any run, UTF-8 errors, units, legends outside, the HTML file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from matplotlib.figure import Figure

from market_hpc.cli import main
from market_hpc.errors import ConfigError
from market_hpc.experiment import report as report_module
from market_hpc.experiment.metrics_table import METRICS, metric
from market_hpc.experiment.report import axis_label, write_report
from market_hpc.experiment.report_data import load_results
from market_hpc.experiment.sweep import SweepError, load_sweep, run_sweep

BASE = """
platform = "nodes=4,cores=8"
timeseries = true
workload = { generator = "lublin-feitelson", jobs = 40 }
policy = { scheduler = "fifo" }
"""
ZIP_SWEEP = (
    BASE
    + """
seeds = 2
[grid]
"policy.scheduler" = ["fifo", "easy"]
[[zip]]
"workload.jobs" = [30, 40, 50]
"workload.load_factor" = [1.0, 1.5, 2.0]
[report]
metrics = ["mean_wait"]
"""
)
THREE_AXES = (
    BASE
    + """
[grid]
"policy.scheduler" = ["fifo", "easy"]
"policy.allocator" = ["first-fit", "best-fit"]
"workload.load_factor" = [1.0, 2.0]
[report]
metrics = ["mean_bounded_slowdown"]
"""
)


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def zip_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("zip")
    out = folder / "out"
    run_sweep(write(folder, ZIP_SWEEP), out, progress=False)
    return out


def test_zip_group_is_one_axis_drawn_as_one_series(zip_sweep: Path) -> None:
    data = load_results(zip_sweep)
    assert [(a.name, a.columns, a.x) for a in data.axes] == [
        ("scheduler", ("scheduler",), None),
        ("jobs, load_factor", ("jobs", "load_factor"), "jobs"),
    ]
    written = {p.name for p in write_report(zip_sweep, progress=False)}
    # one heatmap (scheduler x the zip group), never jobs x load_factor (an empty diagonal)
    assert [n for n in written if "heatmap" in n and n.endswith(".png")] == [
        "mean_wait_heatmap_scheduler_jobs_load_factor.png"
    ]
    lines = pd.read_csv(zip_sweep / "report" / "mean_wait_vs_jobs.csv")
    assert list(lines.columns) == ["scheduler", "jobs", "mean", "min", "max", "std", "n"]
    assert len(lines) == 6 and set(lines["n"]) == {2}  # 2 policies x 3 zip steps, not 30 lines
    heat = pd.read_csv(zip_sweep / "report" / "mean_wait_heatmap_scheduler_jobs_load_factor.csv")
    assert heat["jobs, load_factor"].tolist()[:3] == ["30, 1.0", "40, 1.5", "50, 2.0"]


def test_report_rebuilds_a_stale_results_table_from_parts(
    zip_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = zip_sweep / "results.parquet"
    table = pq.read_table(results)
    pq.write_table(table.slice(0, 5), results)  # what a sweep killed before consolidating leaves
    write_report(zip_sweep)
    assert (
        f"rebuilt results.parquet and results.csv from parts/: {table.num_rows - 5} rows"
        in capsys.readouterr().err
    )
    assert pq.read_table(results).num_rows == table.num_rows
    assert len(pd.read_csv(zip_sweep / "results.csv")) == table.num_rows
    html = (zip_sweep / "report" / "report.html").read_text()
    assert "rebuilt results.parquet" in html


def test_plots_facet_or_name_what_they_average(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_sweep(write(tmp_path, THREE_AXES), out, progress=False)
    write_report(out, progress=False)
    folder = out / "report"
    heat = pd.read_csv(folder / "mean_bounded_slowdown_heatmap_scheduler_allocator.csv")
    assert {"load_factor", "scheduler", "allocator"} <= set(heat.columns)  # one panel per load
    assert "averaged_over" not in heat
    assert len(heat) == 8 and set(heat["n"]) == {1}
    bars = pd.read_csv(folder / "mean_bounded_slowdown_by_policy.csv")
    assert len(bars) == 8  # scheduler x allocator bars, grouped by load factor
    original = report_module.MAX_PANELS
    report_module.MAX_PANELS = 1  # too many panels: average, and say so
    try:
        write_report(out, progress=False)
    finally:
        report_module.MAX_PANELS = original
    heat = pd.read_csv(folder / "mean_bounded_slowdown_heatmap_scheduler_allocator.csv")
    assert set(heat["averaged_over"]) == {"load_factor"} and set(heat["n"]) == {2}


@pytest.mark.smoke
def test_report_metrics_are_checked_before_any_run(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + '[report]\nmetrics = ["mean_wiat"]\n')
    with pytest.raises(
        SweepError,
        match=r"report.metrics: unknown metric 'mean_wiat'; valid metrics: "
        r"jobs_total, .*mean_wait",
    ):
        run_sweep(path, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


@pytest.mark.smoke
def test_non_utf8_sweep_file_names_the_file_and_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(BASE.encode() + b'name = "caf\xe9"\n')
    offset = len(BASE.encode()) + len('name = "caf')
    line = BASE.count("\n") + 1
    with pytest.raises(
        SweepError,
        match=rf"latin1.toml: sweep file is not valid UTF-8 .*byte 0xe9 at "
        rf"offset {offset} \(line {line}, column 12\)",
    ):
        load_sweep(path)
    assert main(["run", str(path)]) == 2  # scenarios share the one TOML reader


@pytest.mark.smoke
def test_scenario_reader_shares_the_utf8_check(tmp_path: Path) -> None:
    from market_hpc.experiment.config import load_scenario

    path = tmp_path / "s.toml"
    path.write_bytes(b'name = "\xff"\n')
    with pytest.raises(ConfigError, match=r"byte 0xff at offset 8 \(line 1, column 9\)"):
        load_scenario(path)


@pytest.mark.smoke
def test_axis_labels_carry_units_from_the_metric_table() -> None:
    assert axis_label("mean_wait", "s") == "mean wait (s)"
    assert axis_label("mean_wait", "time-units") == "mean wait (time-units)"
    assert axis_label("simulation_seconds", "time-units") == "simulation wall time (s)"
    assert axis_label("utilisation_gpus", "s") == "utilisation of GPUs (fraction)"
    assert all(entry.name == name and entry.label for name, entry in METRICS.items())
    assert metric("not_in_table").axis_label == "not_in_table"


def test_legend_sits_outside_the_axes(zip_sweep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures: list[Figure] = []
    original = report_module._save

    def keep(figure: Figure, path: Path) -> Path:
        figures.append(figure)
        return original(figure, path)

    monkeypatch.setattr(report_module, "_save", keep)
    write_report(zip_sweep, progress=False)
    checked = 0
    for figure in figures:
        renderer = figure.canvas.get_renderer()
        for axes in figure.axes:
            legend = axes.get_legend()
            if legend is None:
                continue
            box, data = legend.get_window_extent(renderer), axes.get_window_extent(renderer)
            assert box.x0 >= data.x1, f"legend over the data in {axes.get_title()!r}"
            checked += 1
        labels = [
            axes.get_ylabel()
            for axes in figure.axes
            if axes.get_ylabel() and "heatmap" not in axes.get_title()
        ]
        labels += [
            axes.get_xlabel()
            for axes in figure.axes  # forest plots: differences along x
            if axes.get_xlabel().startswith("difference to the baseline")
        ]
        assert any("(s)" in label or label in ("scheduler",) for label in labels)
    assert checked >= 2


def test_html_report_is_one_self_contained_file(zip_sweep: Path) -> None:
    write_report(zip_sweep, progress=False)
    html = (zip_sweep / "report" / "report.html").read_text()
    pngs = sorted((zip_sweep / "report").glob("*.png"))
    assert html.count("src='data:image/png;base64,") == len(pngs) > 0
    assert "mean wait (s)" in html and "<table" in html
    assert "http://" not in html and "https://" not in html and "<script" not in html
