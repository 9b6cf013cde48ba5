"""Scenario keys for value-curve shapes and holding costs."""

from __future__ import annotations

import pytest

from market_hpc.algorithms.valuecurve import ExponentialCurve, StepCurve
from market_hpc.domain.platform import load_platform
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.experiment import simulate
from market_hpc.experiment.config import config_from_dict
from market_hpc.experiment.run import build_workload

BASE = {"platform": "hlrs-3x9", "seed": 2, "workload": {"generator": "taskgraphs", "jobs": 12}}


@pytest.mark.parametrize(
    ("shape", "kind"), [("step", StepCurve), ("exponential", ExponentialCurve)]
)
def test_curve_shape_reaches_the_generated_jobs(shape, kind):
    config = config_from_dict({**BASE, "workload": {**BASE["workload"], "curve_shape": shape}})
    jobs, report = build_workload(config, load_platform("hlrs-3x9"))
    assert all(isinstance(job.payload["value_curve"], kind) for job in jobs)
    assert report["curve_shape"] == shape


def test_unknown_curve_shape_names_the_choices():
    with pytest.raises(UnknownNameError, match="linear_decay"):
        config_from_dict({**BASE, "workload": {**BASE["workload"], "curve_shape": "sigmoid"}})


def test_holding_costs_are_validated_and_reach_the_model():
    with pytest.raises(ConfigError, match="hold_progress_loss"):
        config_from_dict({**BASE, "policy": {"scheduler": "maxvh", "hold_progress_loss": 1.5}})
    free = simulate(config_from_dict({**BASE, "policy": {"scheduler": "maxvh"}}))
    costly = simulate(
        config_from_dict(
            {
                **BASE,
                "policy": {"scheduler": "maxvh", "resume_seconds": 5.0, "hold_progress_loss": 0.5},
            }
        )
    )
    assert free.summary["holds"] > 0
    assert costly.summary["total_profit"] != free.summary["total_profit"]
