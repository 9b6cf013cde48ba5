"""The decision page of a sweep with a leaderboard: the policies no other beats, the Pareto
chart without a value axis when nothing earned value, and labels that never overlap."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from market_hpc.errors import ConfigError
from market_hpc.experiment.decision import decision_table, pairwise_tests
from market_hpc.experiment.label_placement import freeze_layout, label_boxes, place_labels
from market_hpc.experiment.leaderboard import LeaderboardSpec
from market_hpc.experiment.leaderboard_pareto import pareto_figures, pareto_objectives
from market_hpc.experiment.report import write_report
from market_hpc.experiment.report_decision import decision_section
from market_hpc.experiment.stats import holm
from market_hpc.experiment.sweep import run_sweep


def runs_frame(offsets: dict[str, list[float]]) -> pd.DataFrame:
    """One setting, four slices; each policy's slowdown is the slice's base plus its offset."""
    rows = [
        {
            "policy_label": policy,
            "setting": "KTH x2",
            "replicate_key": str(slice_),
            "mean_bounded_slowdown": base + change[slice_],
        }
        for slice_, base in enumerate((20.0, 35.0, 50.0, 80.0))
        for policy, change in offsets.items()
    ]
    return pd.DataFrame(rows)


def test_one_clearly_best_policy_is_the_decision_alone() -> None:
    runs = runs_frame(
        {"easy": [0, 0, 0, 0], "sjf": [-10.0, -11.0, -9.5, -10.5], "fifo": [0.5, -0.4, 0.2, -0.1]}
    )
    table = decision_table(runs, "mean_bounded_slowdown", "lower").set_index("policy")
    assert table.loc[table["in_set"]].index.tolist() == ["sjf"]
    assert table.loc["easy", "beaten_by"] == "sjf" and table.loc["fifo", "beaten_by"] == "sjf"
    assert table["rank"].to_dict() == {"sjf": 1, "easy": 2, "fifo": 3}  # fifo: +0.05 on average
    pairs = pairwise_tests(runs, "mean_bounded_slowdown", "lower")
    assert len(pairs) == 3  # every pair of the setting, Holm over the three
    assert pairs["p_adjusted"].tolist() == pytest.approx(holm(pairs["p_value"].tolist()).tolist())
    easy_fifo = pairs[(pairs["policy_a"] == "easy") & (pairs["policy_b"] == "fifo")].iloc[0]
    assert easy_fifo["winner"] == "" and easy_fifo["p_adjusted"] > 0.05


def test_two_tied_policies_are_both_in_the_decision() -> None:
    runs = runs_frame(
        {
            "easy": [0, 0, 0, 0],
            "sjf": [-10.0, -11.0, -9.5, -10.5],
            "ebf": [-10.2, -10.6, -9.9, -10.4],
        }
    )
    table = decision_table(runs, "mean_bounded_slowdown", "lower").set_index("policy")
    assert sorted(table.index[table["in_set"]]) == ["ebf", "sjf"]
    assert set(table.loc["easy", "beaten_by"].split(", ")) == {"ebf", "sjf"}
    higher = runs.assign(
        mean_bounded_slowdown=-runs["mean_bounded_slowdown"]
    )  # the same, higher is better
    flipped = decision_table(higher, "mean_bounded_slowdown", "higher").set_index("policy")
    assert flipped["in_set"].to_dict() == table["in_set"].to_dict()


def test_decision_refuses_a_metric_without_a_better_direction() -> None:
    with pytest.raises(ConfigError, match="no better direction"):
        pairwise_tests(runs_frame({"a": [0] * 4, "b": [1] * 4}), "mean_bounded_slowdown", "")


def test_pareto_chart_drops_the_value_axis_when_nothing_earned_value(tmp_path: Path) -> None:
    rows = [
        {
            "policy_label": p,
            "setting": "all x1",
            "load_factor": 1.0,
            "mean_bounded_slowdown": s + r,
            "value_earned": 0.0,
            "utilisation_cores": u,
        }
        for r in range(3)
        for p, s, u in (("easy", 5.0, 0.6), ("sjf", 3.0, 0.5), ("fifo", 9.0, 0.7))
    ]
    runs = pd.DataFrame(rows)
    spec = LeaderboardSpec(setting=("load_factor",))
    x_name, y_name, why = pareto_objectives(runs, spec)
    assert (x_name, y_name) == ("mean_bounded_slowdown", "utilisation_cores") and "instead" in why
    (png,) = pareto_figures(runs, spec, tmp_path)
    svg = png.with_suffix(".svg").read_text()
    assert "utilisation of cores" in svg and "value earned" not in svg
    flat = runs.drop(columns="utilisation_cores")
    assert (
        pareto_objectives(flat, spec)[1] is None
        and pareto_figures(flat, spec, tmp_path / "none") == []
    )
    assert pareto_objectives(runs.assign(value_earned=np.nan), spec)[1] == "utilisation_cores"


def test_labels_never_overlap_even_in_a_crowd() -> None:
    rng = np.random.default_rng(7)
    xs = np.concatenate(
        [rng.normal(40, 3, 22), [400.0, 401.0]]
    )  # a crowd, two near-coincident points
    ys = np.concatenate([rng.normal(4000, 15, 22), [3900.0, 3900.5]])
    names = [f"policy-{i}+allocator" if i % 3 else f"p{i}" for i in range(len(xs))]
    figure = Figure(figsize=(7.1, 4.6), layout="constrained")
    axes = figure.add_subplot()
    axes.scatter(xs, ys)
    axes.margins(0.12)
    freeze_layout(figure)
    unplaced = place_labels(axes, xs.tolist(), ys.tolist(), names)
    figure.canvas.draw()
    boxes = label_boxes(axes)
    assert len(boxes) + len(unplaced) == len(names) and not unplaced
    for first, second in itertools.combinations(boxes, 2):
        assert not first.overlaps(second), (first, second)
    frame = axes.get_window_extent()
    assert all(
        frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1
        for b in boxes
    )


SWEEP = """
platform = "nodes=4,cores=8"
workload = { generator = "lublin-feitelson", jobs = 40 }
policy = { scheduler = "fifo" }
seeds = 4
[grid]
"workload.load_factor" = [1.0, 2.0]
"policy.scheduler" = ["fifo", "easy", "sjf"]
[report]
metrics = ["mean_bounded_slowdown"]
[report.leaderboard]
baseline = "easy"
policy = ["scheduler"]
replicate = ["seed"]
setting = ["load_factor"]
metrics = ["mean_bounded_slowdown", "mean_wait", "jobs_dropped"]
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("decision")
    (folder / "sweep.toml").write_text(SWEEP)
    run_sweep(folder / "sweep.toml", folder / "out", progress=False)
    write_report(folder / "out", progress=False)
    return folder / "out" / "report"


def test_report_opens_with_the_decision_then_heat_map_pareto_and_cost(study: Path) -> None:
    page = (study / "report.html").read_text()
    order = [
        page.index(text)
        for text in (
            "Decision: the policies no other beats",
            "<h3>x1:",
            "<h3>x2:",
            "Rank by mean bounded slowdown",
            "Pareto charts",
            "<h2>Cost</h2>",
            "<h2>Summary</h2>",
        )
    ]
    assert order == sorted(order)
    assert "No paired differences: they need" not in page  # the leaderboard pairs by its replicates
    decided = pd.read_csv(study / "decision.csv")
    assert (
        set(decided["setting"]) == {"x1", "x2"} and decided.groupby("setting")["in_set"].any().all()
    )
    assert len(pd.read_csv(study / "decision_pairs.csv")) == 2 * 3  # three pairs per setting
    # generated jobs carry no value curves: the Pareto chart says so and plots something else
    assert "Every run&#x27;s value earned is 0 or n/a" in page
    for svg in study.glob("pareto_load_*.svg"):
        assert "value earned" not in svg.read_text()


def test_decision_section_names_who_beats_whom_and_what_the_chosen_cost(tmp_path: Path) -> None:
    rows = [
        {
            "scheduler": policy,
            "allocator": "first-fit",
            "start": 100.0 * slice_,
            "load_factor": 2.0,
            "trace": "/t/KTH-SP2-1996-2.1-cln.swf.gz",
            "mean_bounded_slowdown": base + change,
            "run_cpu_seconds": cpu,
            "cpu_per_decision_ms": 0.1,
            "decisions": 10,
            "jobs_dropped": drops,
        }
        for slice_, base in enumerate((20.0, 35.0, 50.0, 80.0))
        for policy, change, cpu, drops in (
            ("easy", 0.0, 1.0, 0),
            ("sjf", -10.0 - slice_ % 2, 3.0, 2),
            ("fifo", 30.0 + slice_, 1.0, 0),
        )
    ]
    page, files = decision_section(pd.DataFrame(rows), {"baseline": "easy"}, tmp_path)
    assert [path.name for path in files] == ["decision.csv", "decision_pairs.csv"]
    assert "KTH-SP2-1996 x2: 1 of 3 policies" in page
    assert "Beaten significantly: easy (by sjf); fifo (by sjf, easy)." in page
    chosen = page[page.index("<table") : page.index("</table>")]
    assert "sjf" in chosen and "3.00x" in chosen and "fifo" not in chosen  # its CPU: 3x easy's
    assert "Not in these results: core-hours completed, share of jobs completed" in page
