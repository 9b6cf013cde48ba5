"""The overload study's leaderboard, metrics and sweep options on hand-made tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market_hpc.core.metrics import jain_index, queue_sizes, summarize, user_fairness
from market_hpc.errors import ConfigError
from market_hpc.experiment.leaderboard import cost_table, leaderboard_spec, mark, prepare, ranking
from market_hpc.experiment.leaderboard_plots import pareto_front, write_leaderboard
from market_hpc.experiment.sweep_spec import SweepError, load_sweep


def test_jain_index_on_three_users() -> None:
    assert jain_index(np.array([1.0, 2.0, 3.0])) == pytest.approx(
        36 / 42
    )  # (1+2+3)^2 / (3 (1+4+9))
    assert jain_index(np.array([4.0, 4.0, 4.0])) == 1.0
    assert jain_index(np.array([9.0, 0.0, 0.0])) == pytest.approx(1 / 3)  # one user bears it all
    assert np.isnan(jain_index(np.array([])))


def test_user_fairness_averages_bounded_slowdowns_per_user_first() -> None:
    jobs = pd.DataFrame(
        {  # user 1: slowdowns 1 and 5 (mean 3); user 2: 3; user 3: 1 (run 5 s: bounded by 10)
            "status": ["finished"] * 4 + ["dropped"],
            "user": [1, 1, 2, 3, 3],
            "submit_time": [0.0, 0.0, 0.0, 0.0, 0.0],
            "end_time": [100.0, 500.0, 300.0, 8.0, 50.0],
            "run_time": [100.0, 100.0, 100.0, 5.0, np.nan],
        }
    )
    assert user_fairness(jobs) == pytest.approx(49 / (3 * 19))  # means 3, 3, 1


def test_max_queue_size_counts_waiting_jobs_at_arrivals_and_completions() -> None:
    jobs = pd.DataFrame(
        {
            "status": ["finished", "finished", "finished"],
            "submit_time": [0.0, 0.0, 1.0],
            "start_time": [0.0, 10.0, 20.0],
            "end_time": [10.0, 20.0, 30.0],
        }
    )
    # waiting before each instant's decision (submitted at or before it, not started before it):
    # instants 0, 1, 10, 20, 30 -> jobs {1, 2}, {2, 3}, {2, 3}, {3}, {}
    assert queue_sizes(jobs).tolist() == [2, 2, 2, 1, 0]
    summary = summarize(
        jobs.assign(run_time=10.0, wait_time=[0.0, 10.0, 19.0], user=[1, 2, 3], bb=0.0),
        pd.DataFrame(),
        np.array([4, 0, 0, 0]),
        np.zeros(4),
    )
    assert summary["max_queue_size"] == 2 and summary["mean_queue_size"] == pytest.approx(1.4)
    assert summary["user_fairness"] == pytest.approx(jain_index(np.array([1.0, 2.0, 2.9])))


def results_table() -> pd.DataFrame:
    """Three policies on three slices of one trace at two loads.

    Bounded slowdowns: at load 1, ``sjf`` is easy - 2 on every slice +- 0.5 (p 0.020, Holm
    x 2 = 0.040: better), ``fifo`` easy + 0, +3, -3 (p 1). At load 2, ``sjf`` is easy - 5 +- 1
    (p 0.013, x 3), ``fifo`` easy + 10 on every slice (p 0: worse, but no interval claimed)."""
    rows = []
    for load, offsets in (
        (1.0, {"easy": [0, 0, 0], "sjf": [-2.5, -1.5, -2.0], "fifo": [0, 3, -3]}),
        (2.0, {"easy": [0, 0, 0], "sjf": [-4, -5, -6], "fifo": [10, 10, 10]}),
    ):
        for slice_, base in enumerate((20.0, 30.0, 40.0)):
            for policy, change in offsets.items():
                rows.append(
                    {
                        "scheduler": policy,
                        "allocator": "first-fit",
                        "start": 100.0 * slice_,
                        "trace": "/t/KTH-SP2-1996-2.1-cln.swf.gz",
                        "load_factor": load,
                        "mean_bounded_slowdown": base * load + change[slice_],
                        "value_earned": 100.0 - change[slice_],
                        "run_cpu_seconds": 1.0 + 30.0 * (policy == "sjf"),
                        "cpu_per_decision_ms": 0.1,
                        "decisions": 10,
                        "jobs_total": 400,
                        "offered_load_cores": 0.7 * load,
                        "mean_queue_size": 5.0 * load,
                        "max_queue_size": 30 * load,
                    }
                )
    return pd.DataFrame(rows)


def test_ranking_pairs_by_slice_and_marks_significance() -> None:
    spec = leaderboard_spec({"baseline": "easy"})
    table = ranking(prepare(results_table(), spec), "mean_bounded_slowdown", "easy")
    load1 = table[table["setting"] == "KTH-SP2-1996 x1"].set_index("policy")
    assert load1["rank"].to_dict() == {
        "sjf": 1,
        "easy": 2,
        "fifo": 2,
    }  # fifo's mean equals easy's: a tie
    assert load1.loc["sjf", "mark"] == "better" and load1.loc["sjf", "diff"] == pytest.approx(-2.0)
    half = 4.302653 * 0.5 / np.sqrt(3)  # t(0.975, 2) x sd / sqrt(n)
    assert load1.loc["sjf", "ci_low"] == pytest.approx(-2.0 - half, rel=1e-5)
    assert load1.loc["fifo", "mark"] == "n.s." and load1.loc["easy", "mark"] == "baseline"
    load2 = table[table["setting"] == "KTH-SP2-1996 x2"].set_index("policy")
    assert load2.loc["fifo", "mark"] == "worse" and np.isnan(load2.loc["fifo", "ci_low"])
    assert load2.loc["fifo", "p_value"] == 0.0 and load1.loc["fifo", "p_adjusted"] == 1.0
    assert load2.loc["fifo", "rank"] == 3
    value = ranking(prepare(results_table(), spec), "value_earned", "easy")
    assert value[value["setting"].str.endswith("x2")].iloc[0]["policy"] == "sjf"  # higher is better


def test_marks_follow_the_metrics_better_direction() -> None:
    assert [mark(-1.0, 0.01, "lower"), mark(-1.0, 0.01, "higher"), mark(1.0, 0.01, "higher")] == [
        "better",
        "worse",
        "better",
    ]
    assert [mark(-1.0, 0.05, "lower"), mark(-1.0, np.nan, "lower")] == ["n.s.", "n.s."]


def test_cost_table_names_policies_over_twenty_times_the_baseline() -> None:
    runs = prepare(results_table(), leaderboard_spec({}))
    cost = cost_table(runs, "easy").set_index("policy")
    assert cost.loc["sjf", "ratio_max"] == 31.0 and bool(cost.loc["sjf", "costly"])
    assert not bool(cost.loc["fifo", "costly"])


def test_pareto_front_keeps_the_undominated_points() -> None:
    slowdown, value = np.array([1.0, 2.0, 2.0, 3.0]), np.array([5.0, 6.0, 5.0, 7.0])
    assert pareto_front(slowdown, value).tolist() == [True, True, False, True]


def test_leaderboard_files(tmp_path: Path) -> None:
    written = write_leaderboard(results_table(), {"baseline": "easy"}, tmp_path)
    names = {path.name for path in written}
    assert {
        "leaderboard.md",
        "cost.csv",
        "pareto_load_1.png",
        "pareto_load_2.png",
        "rank_heatmap.png",
        "leaderboard_mean_bounded_slowdown.csv",
    } <= names
    text = (tmp_path / "leaderboard.md").read_text()
    assert "| 1 | sjf |" in text and "sjf (up to 31.00x)" in text and "▲" in text
    assert (tmp_path / "rank_heatmap.svg").is_file()


def test_leaderboard_spec_refuses_unknown_keys_and_metrics() -> None:
    with pytest.raises(ConfigError, match="keys among baseline"):
        leaderboard_spec({"baseline": "easy", "colour": "red"})
    with pytest.raises(ConfigError, match="unknown metric 'speed'"):
        leaderboard_spec({"rank_by": "speed"})


SWEEP = """
platform = "nodes=4,cores=2"
workload = {{ generator = "lublin-feitelson", jobs = 20 }}
[grid]
"policy.scheduler" = ["fifo", "easy"]
"workload.load_factor" = [1.0, 2.0, 3.0]
[[zip]]
"workload.jobs" = [20, 20, 30]
"workload.max_procs" = [2, 4, 2]
{quick}
[report]
leaderboard = {{ baseline = "easy", replicate = ["jobs"], setting = ["load_factor"] }}
"""


def test_quick_replaces_the_grid_lists_and_zip_groups_it_names(tmp_path: Path) -> None:
    file = tmp_path / "s.toml"
    file.write_text(
        SWEEP.format(
            quick='[quick.grid]\n"workload.load_factor" = [2.0]\n'
            '[[quick.zip]]\n"workload.jobs" = [20]\n"workload.max_procs" = [2]\n'
        )
    )
    assert (
        len(load_sweep(file).runs) == 18
    )  # 2 x 3 x 3 rows; ebf-like repeated values in a zip column are fine
    quick = load_sweep(file, quick=True)
    assert len(quick.runs) == 2 and {run.params["load_factor"] for run in quick.runs} == {2.0}
    assert json.loads(json.dumps(quick.leaderboard))["baseline"] == "easy"
    file.write_text(SWEEP.format(quick=""))
    with pytest.raises(SweepError, match="--quick needs a \\[quick\\] table"):
        load_sweep(file, quick=True)
    file.write_text(SWEEP.format(quick='[quick.grid]\n"policy.allocator" = ["best-fit"]\n'))
    with pytest.raises(SweepError, match="policy.allocator is not a \\[grid\\] parameter"):
        load_sweep(file, quick=True)


def test_a_zip_group_may_repeat_a_value_in_a_column_but_not_a_row(tmp_path: Path) -> None:
    file = tmp_path / "s.toml"
    file.write_text(
        SWEEP.format(quick="")
        .replace("[20, 20, 30]", "[20, 20, 20]")
        .replace("[2, 4, 2]", "[2, 4, 2]")
    )
    with pytest.raises(SweepError, match="row 3 repeats row 1"):
        load_sweep(file)
