"""The leaderboard's statistics: paired t-test p-values, Holm-Bonferroni over every
comparison of a metric, the cross-trace line per policy, and the context columns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from market_hpc.experiment.leaderboard import (
    leaderboard_spec,
    prepare,
    ranking,
    setting_traces,
    significant_counts,
)
from market_hpc.experiment.leaderboard_plots import write_leaderboard
from market_hpc.experiment.stats import holm, paired_p_value


def test_holm_on_a_hand_example() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 (m = 4): 4 x 0.005 = 0.02, 3 x 0.01 = 0.03, 2 x 0.03 = 0.06,
    # 1 x 0.04 = 0.04 raised to the running maximum 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.3, 0.4]) == pytest.approx([0.6, 0.6])  # capped by the running max, not yet by 1
    assert holm([0.6, 0.9]).tolist() == [1.0, 1.0]
    adjusted = holm([0.02, np.nan, 0.01])  # no test: left out of the family (m = 2)
    assert np.isnan(adjusted[1]) and adjusted[[0, 2]] == pytest.approx([0.02, 0.02])
    assert holm([]).size == 0


def test_paired_p_value_is_the_paired_t_test() -> None:
    policy, base = np.array([12.0, 21.0, 33.0, 41.0]), np.array([10.0, 20.0, 30.0, 40.0])
    assert paired_p_value(policy - base) == pytest.approx(
        scipy_stats.ttest_rel(policy, base).pvalue
    )
    assert paired_p_value([-1.5, -2.0, -2.5]) == pytest.approx(
        0.020204, abs=1e-6
    )  # t = -6.93, 2 df
    assert paired_p_value([4.0, 4.0, 4.0]) == 0.0 and paired_p_value([0.0, 0.0]) == 1.0
    assert np.isnan(paired_p_value([4.0])) and np.isnan(paired_p_value([]))


def runs_frame(offsets: dict[tuple[str, float], dict[str, list[float]]]) -> pd.DataFrame:
    """Runs of ``easy`` and other policies on three slices per (trace, load): the bounded
    slowdown is the slice's base plus the policy's offset."""
    rows = []
    for (trace, load), policies in offsets.items():
        for slice_, base in enumerate((20.0, 30.0, 40.0)):
            for policy, change in {"easy": [0.0] * 3, **policies}.items():
                rows.append(
                    {
                        "scheduler": policy,
                        "allocator": "first-fit",
                        "start": 100.0 * slice_,
                        "trace": f"/t/{trace}-2.1-cln.swf.gz",
                        "load_factor": load,
                        "mean_bounded_slowdown": base * load + change[slice_],
                        "mean_bounded_slowdown_all": 2 * base * load + change[slice_],
                        "value_earned": 100.0 - change[slice_],
                        "jobs_dropped": 3.0 + (policy == "sjf"),
                        "completed_core_hours": 500.0 - change[slice_],
                        "completed_share": 0.9,
                    }
                )
    return pd.DataFrame(rows)


def test_an_unadjusted_significant_difference_is_not_significant_after_holm() -> None:
    # sjf at load 1: -1.5, -2, -2.5 (p 0.0202, its 95 % interval below 0); the other three
    # comparisons are far from significant, so Holm multiplies the smallest p by m = 4.
    runs = runs_frame(
        {
            ("KTH-SP2-1996", 1.0): {"sjf": [-1.5, -2.0, -2.5], "fifo": [0.0, 3.0, -3.0]},
            ("KTH-SP2-1996", 2.0): {"sjf": [1.0, -1.0, 0.0], "fifo": [2.0, -1.0, 1.0]},
        }
    )
    table = ranking(prepare(runs, leaderboard_spec({})), "mean_bounded_slowdown", "easy")
    assert list(table.columns) == [
        "setting",
        "rank",
        "policy",
        "mean",
        "replicates",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "p_adjusted",
        "mark",
    ]
    sjf = table[(table["setting"] == "KTH-SP2-1996 x1") & (table["policy"] == "sjf")].iloc[0]
    assert sjf["ci_high"] < 0 and sjf["p_value"] < 0.05  # significant alone
    assert sjf["p_adjusted"] == pytest.approx(4 * sjf["p_value"]) and sjf["mark"] == "n.s."
    assert sjf["rank"] == 1  # the rank is unchanged: it never said anything about significance
    base = table[table["policy"] == "easy"]
    assert (
        base["mark"].eq("baseline").all()
        and base["p_value"].isna().all()
        and base["p_adjusted"].isna().all()
    )
    # alone in its family (one setting, one policy), the same difference is better
    alone = ranking(
        prepare(
            runs[(runs["load_factor"] == 1.0) & (runs["scheduler"] != "fifo")], leaderboard_spec({})
        ),
        "mean_bounded_slowdown",
        "easy",
    )
    assert alone.set_index("policy").loc["sjf", "mark"] == "better"


def test_one_replicate_gives_no_p_value_and_leaves_the_family() -> None:
    runs = runs_frame({("KTH-SP2-1996", 1.0): {"sjf": [-1.5, -2.0, -2.5], "fifo": [5.0, 5.0, 5.0]}})
    runs = runs[
        ~((runs["scheduler"] == "fifo") & (runs["start"] > 0))
    ]  # fifo ran on the first slice only
    table = ranking(prepare(runs, leaderboard_spec({})), "mean_bounded_slowdown", "easy").set_index(
        "policy"
    )
    assert np.isnan(table.loc["fifo", "p_value"]) and table.loc["fifo", "mark"] == "n.s."
    assert (
        table.loc["sjf", "p_adjusted"] == table.loc["sjf", "p_value"]
        and table.loc["sjf", "mark"] == "better"
    )


def test_cross_trace_counts_and_consistency() -> None:
    # sjf is better on KTH at both loads and on HPC2N at 2x (p 0: the same -4 on every
    # slice), fifo better on KTH at 1x and worse on HPC2N at 2x, maxv never significant.
    same = [-4.0, -4.0, -4.0]
    runs = runs_frame(
        {
            ("KTH-SP2-1996", 1.0): {"sjf": same, "fifo": same, "maxv": [1.0, -1.0, 0.0]},
            ("KTH-SP2-1996", 2.0): {
                "sjf": same,
                "fifo": [1.0, -1.0, 0.0],
                "maxv": [1.0, -1.0, 0.0],
            },
            ("HPC2N-2002", 2.0): {"sjf": same, "fifo": [4.0, 4.0, 4.0], "maxv": [1.0, -1.0, 0.0]},
        }
    )
    runs = prepare(runs, leaderboard_spec({}))
    traces = setting_traces(runs)
    assert traces == {
        "KTH-SP2-1996 x1": "KTH-SP2-1996",
        "KTH-SP2-1996 x2": "KTH-SP2-1996",
        "HPC2N-2002 x2": "HPC2N-2002",
    }
    table = ranking(runs, "mean_bounded_slowdown", "easy")
    counts = significant_counts(table[table["policy"] != "easy"], traces).set_index("policy")
    assert counts.loc["sjf"].to_dict() == {
        "better": 3,
        "worse": 0,
        "n.s.": 0,
        "equal": 0,
        "traces": 2,
        "traces_better": 2,
        "traces_worse": 0,
        "consistent": "yes",
    }
    assert counts.loc[
        "fifo", ["better", "worse", "traces_better", "traces_worse", "consistent"]
    ].tolist() == [1, 1, 1, 1, "no"]
    assert counts.loc["maxv", "n.s."] == 3 and counts.loc["maxv", "consistent"] == ""


def test_leaderboard_ranks_by_every_job_and_shows_the_context(tmp_path: Path) -> None:
    runs = runs_frame(
        {("KTH-SP2-1996", 1.0): {"sjf": [-1.5, -2.0, -2.5], "fifo": [0.0, 3.0, -3.0]}}
    )
    written = write_leaderboard(
        runs,
        {
            "baseline": "easy",
            "rank_by": "mean_bounded_slowdown_all",
            "metrics": ["mean_bounded_slowdown"],
        },
        tmp_path,
    )
    names = {path.name for path in written}
    assert {
        "leaderboard_mean_bounded_slowdown_all.csv",
        "leaderboard_jobs_dropped.csv",
        "leaderboard_completed_core_hours.csv",
        "leaderboard_summary.csv",
    } <= names
    text = (tmp_path / "leaderboard.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| rank |"))
    assert header.split(" | ")[2:] == [
        "mean bounded slowdown (10 s), every job",
        "mean bounded slowdown (10 s)",
        "value earned",
        "jobs dropped",
        "core-hours completed",
        "share of jobs completed |",
    ]
    assert "| sjf | 1 | 0 | 0 | 0 | 1 of 1 | 0 of 1 | yes |" in text and "Holm-adjusted" in text
    summary = pd.read_csv(tmp_path / "leaderboard_summary.csv")
    assert list(summary.columns) == [
        "policy",
        "better",
        "worse",
        "n.s.",
        "equal",
        "traces",
        "traces_better",
        "traces_worse",
        "consistent",
    ]
    board = pd.read_csv(tmp_path / "leaderboard_mean_bounded_slowdown_all.csv")
    assert {"p_value", "p_adjusted"} <= set(board.columns)


def test_a_setting_with_a_track_counts_its_trace_once() -> None:
    from market_hpc.experiment.leaderboard import LeaderboardSpec, prepare, setting_traces

    frame = pd.DataFrame(
        {
            "scheduler": ["easy"] * 4,
            "allocator": ["first-fit"] * 4,
            "start": [0.0] * 4,
            "trace": ["kth", "kth", "hpc2n", "hpc2n"],
            "load_factor": [2.0] * 4,
            "market_knowledge": ["estimate", "recorded"] * 2,
        }
    )
    spec = LeaderboardSpec(setting=("market_knowledge", "trace", "load_factor"))
    traces = setting_traces(prepare(frame, spec))
    assert len(traces) == 4 and sorted(set(traces.values())) == ["hpc2n", "kth"]
