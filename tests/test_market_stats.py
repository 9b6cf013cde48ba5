"""Issue 14: paired differences with confidence intervals across seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from market_hpc.errors import ConfigError
from market_hpc.experiment.demo import claims_with_confidence, run_study
from market_hpc.experiment.stats import paired_differences, paired_tables


def runs(differences: list[float]) -> pd.DataFrame:
    rows = []
    for seed, diff in enumerate(differences, start=1):
        base = 100.0 * seed
        rows += [{"policy": "base", "seed": seed, "profit": base},
                 {"policy": "new", "seed": seed, "profit": base + diff}]
    return pd.DataFrame(rows)


def test_interval_is_the_paired_t_interval_over_seeds():
    diffs = [3.0, 5.0, 4.0, 8.0, 1.0]
    row = paired_differences(runs(diffs), "policy", "profit", "seed", "base").iloc[0]
    low, high = scipy_stats.t.interval(0.95, len(diffs) - 1, loc=np.mean(diffs), scale=scipy_stats.sem(diffs))
    assert (row.mean_diff, row.ci_low, row.ci_high) == pytest.approx((4.2, low, high))
    assert row.verdict == "higher" and row.seeds == 5


def test_pairing_is_by_seed_not_by_row_order():
    frame = runs([2.0, 3.0, 4.0]).sample(frac=1.0, random_state=3)
    row = paired_differences(frame, "policy", "profit", "seed", "base").iloc[0]
    assert row.mean_diff == pytest.approx(3.0)
    # unpaired, the seeds' spread (100..300) would swamp the difference; paired it does not
    assert row.ci_low > 0


def test_undecided_and_contradicted_verdicts():
    assert paired_differences(runs([5.0, -4.0, 1.0]), "policy", "profit", "seed", "base").verdict[0] == "undecided"
    assert paired_differences(runs([-5.0, -4.0, -6.0]), "policy", "profit", "seed", "base").verdict[0] == \
        "lower"


def test_missing_baseline_names_the_choices():
    with pytest.raises(ConfigError, match="baseline 'maxv' not among"):
        paired_differences(runs([1.0, 2.0]), "policy", "profit", "seed", "maxv")


def test_report_tables_split_by_the_other_swept_parameters(tmp_path: Path):
    frame = pd.concat([runs([2.0, 3.0, 4.0]).assign(curves="spec"),
                       runs([-2.0, -3.0, -4.0]).assign(curves="steep")]).rename(columns={"policy": "scheduler"})
    written = paired_tables(frame, ["scheduler", "curves"], "profit", tmp_path)
    table = pd.read_csv(written[0])
    assert table.set_index("curves").verdict.to_dict() == {"spec": "higher", "steep": "lower"}
    assert "curves=steep" in written[1].read_text()


def test_demo_claims_come_with_intervals():
    study = run_study((10,), seeds=2, policies=("maxv", "maxvh", "sjq", "sjqh", "maxvd", "maxvdh", "minvr",
                                                 "minvrh", "maxvlh"))
    tables = claims_with_confidence(study)
    assert list(tables["holding"].policy) == ["sjqh", "maxvh", "maxvdh", "minvrh"]
    assert set(tables["lookahead"].baseline) == {"maxv", "maxvh"}
    assert (tables["holding"].seeds == 2).all()
