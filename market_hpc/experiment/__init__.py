"""Scenarios, runs and results."""

from market_hpc.experiment.config import (
    PolicyConfig,
    RunConfig,
    WorkloadConfig,
    config_from_dict,
    load_scenario,
)
from market_hpc.experiment.run import Result, simulate

__all__ = [
    "PolicyConfig",
    "Result",
    "RunConfig",
    "WorkloadConfig",
    "config_from_dict",
    "load_scenario",
    "simulate",
]
