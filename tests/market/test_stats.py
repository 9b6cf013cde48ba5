"""Paired differences with confidence intervals across seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from market_hpc.errors import ConfigError
from market_hpc.experiment.stats import format_differences, paired_differences, paired_tables
from market_hpc.studies.demo import claims_with_confidence, run_study


def runs(differences: list[float]) -> pd.DataFrame:
    rows = []
    for seed, diff in enumerate(differences, start=1):
        base = 100.0 * seed
        rows += [
            {"policy": "base", "seed": seed, "profit": base},
            {"policy": "new", "seed": seed, "profit": base + diff},
        ]
    return pd.DataFrame(rows)


def test_interval_is_the_paired_t_interval_over_seeds():
    diffs = [3.0, 5.0, 4.0, 8.0, 1.0]
    row = paired_differences(runs(diffs), "policy", "profit", "seed", "base").iloc[0]
    low, high = scipy_stats.t.interval(
        0.95, len(diffs) - 1, loc=np.mean(diffs), scale=scipy_stats.sem(diffs)
    )
    assert (row.mean_diff, row.ci_low, row.ci_high) == pytest.approx((4.2, low, high))
    assert row.verdict == "higher" and row.seeds == 5


def test_pairing_is_by_seed_not_by_row_order():
    frame = runs([2.0, 3.0, 4.0]).sample(frac=1.0, random_state=3)
    row = paired_differences(frame, "policy", "profit", "seed", "base").iloc[0]
    assert row.mean_diff == pytest.approx(3.0)
    # unpaired, the seeds' spread (100..300) would swamp the difference; paired it does not
    assert row.ci_low > 0


def test_undecided_and_contradicted_verdicts():
    assert (
        paired_differences(runs([5.0, -4.0, 1.0]), "policy", "profit", "seed", "base").verdict[0]
        == "undecided"
    )
    assert (
        paired_differences(runs([-5.0, -4.0, -6.0]), "policy", "profit", "seed", "base").verdict[0]
        == "lower"
    )


def test_missing_baseline_names_the_choices():
    with pytest.raises(ConfigError, match="baseline 'maxv' not among"):
        paired_differences(runs([1.0, 2.0]), "policy", "profit", "seed", "maxv")


def test_report_tables_split_by_the_other_swept_parameters(tmp_path: Path):
    frame = pd.concat(
        [
            runs([2.0, 3.0, 4.0]).assign(curves="spec"),
            runs([-2.0, -3.0, -4.0]).assign(curves="steep"),
        ]
    ).rename(columns={"policy": "scheduler"})
    written = paired_tables(frame, ["scheduler", "curves"], "profit", tmp_path)
    table = pd.read_csv(written[0])
    assert table.set_index("curves").verdict.to_dict() == {"spec": "higher", "steep": "lower"}
    assert "curves=steep" in written[1].read_text()


def test_demo_claims_come_with_intervals():
    study = run_study(
        (10,),
        seeds=2,
        policies=("maxv", "maxvh", "sjq", "sjqh", "maxvd", "maxvdh", "minvr", "minvrh", "maxvlh"),
    )
    tables = claims_with_confidence(study)
    assert list(tables["holding"].policy) == ["sjqh", "maxvh", "maxvdh", "minvrh"]
    assert set(tables["lookahead"].baseline) == {"maxv", "maxvh"}
    assert (tables["holding"].seeds == 2).all()


def test_replicates_that_do_not_vary_get_no_interval():
    # seeds over a fixed trace: every seed gives the same runs, so the same difference
    row = paired_differences(runs([212.5, 212.5]), "policy", "profit", "seed", "base").iloc[0]
    assert row.mean_diff == 212.5 and np.isnan(row.ci_low) and np.isnan(row.ci_high)
    assert row.verdict == "no spread"
    text = format_differences(
        paired_differences(runs([212.5, 212.5]), "policy", "profit", "seed", "base")
    )
    assert "CI" not in text and "no interval" in text and "+212.5" in text
    assert (
        paired_differences(runs([0.0, 0.0, 0.0]), "policy", "profit", "seed", "base").verdict[0]
        == "equal"
    )


def test_relative_interval_is_the_absolute_one_over_the_baseline_mean():
    # base 100, 200, 300 (mean 200); differences 3, 5, 4: mean 4 -> +2 %
    row = paired_differences(runs([3.0, 5.0, 4.0]), "policy", "profit", "seed", "base").iloc[0]
    assert row.rel_mean == pytest.approx(4.0 / 200.0)
    assert (row.rel_low, row.rel_high) == pytest.approx((row.ci_low / 200.0, row.ci_high / 200.0))
    # a negative baseline mean scales by its magnitude: signs still agree with the verdict
    negative = runs([3.0, 5.0, 4.0]).assign(profit=lambda f: f.profit - 1000.0)
    row = paired_differences(negative, "policy", "profit", "seed", "base").iloc[0]
    assert (
        row.verdict == "higher" and row.rel_low > 0 and row.rel_mean == pytest.approx(4.0 / 800.0)
    )


def test_relative_interval_never_contradicts_the_absolute_one():
    # differences +10, +12, +11 (higher); per-seed ratios (1 %, 1.2 %, 1,100 %) would give
    # a relative interval containing 0, contradicting the verdict
    frame = pd.DataFrame(
        {
            "policy": ["base", "new"] * 3,
            "seed": [1, 1, 2, 2, 3, 3],
            "profit": [1000.0, 1010.0, 1000.0, 1012.0, 1.0, 12.0],
        }
    )
    row = paired_differences(frame, "policy", "profit", "seed", "base").iloc[0]
    assert row.verdict == "higher"
    assert 0 < row.rel_low < row.rel_mean < row.rel_high
    assert row.rel_mean == pytest.approx(11.0 / 667.0)
