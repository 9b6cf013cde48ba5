"""One workload for all families (workload.all_families): the rule's steps, its options and
their errors, and every family running on the jobs it builds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from market_hpc.domain.job import Job
from market_hpc.domain.platform import load_platform
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.experiment.config import config_from_dict
from market_hpc.experiment.run import build_workload, simulate
from market_hpc.workload.accelerators import AcceleratorRule
from market_hpc.workload.all_families import (
    AllFamiliesRule,
    platform_accelerators,
    rigid_view,
    with_value,
)
from market_hpc.workload.burst_buffer import BurstBufferRule
from market_hpc.workload.market_rule import MarketRule


def write_swf(path: Path, n_jobs: int = 60, seed: int = 5, max_procs: int = 8) -> Path:
    """A small SWF trace: Poisson arrivals, 1..max_procs processors, estimates >= run times."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(120.0, n_jobs)).round()
    lines = []
    for i in range(n_jobs):
        run = float(rng.integers(0, 3000)) if i % 10 else 0.0  # every tenth job ran 0 s
        procs = int(rng.integers(1, max_procs + 1))
        fields = [
            i + 1,
            int(submit[i]),
            -1,
            int(run),
            procs,
            -1,
            -1,
            procs,
            int(run * 2 + 60),
            -1,
            1,
            int(rng.integers(1, 6)),
            -1,
            -1,
            1,
            -1,
            -1,
            -1,
        ]
        lines.append(" ".join(str(f) for f in fields))
    path.write_text("; tiny trace\n" + "\n".join(lines) + "\n")
    return path


def config(
    trace: Path, scheduler: str = "easy", platform: str = "nodes=4,cores=8", **workload: object
):
    return config_from_dict(
        {
            "platform": platform,
            "seed": 3,
            "timeseries": False,
            "workload": {"trace": str(trace), "all_families": {"enabled": True}, **workload},
            "policy": {"scheduler": scheduler},
        }
    )


def test_with_value_profiles_every_unit_shape_and_runs_zero_length_jobs_one_second() -> None:
    gpu = with_value(
        Job(1, 0.0, 3600.0, 7200.0, units=2, unit=(4, 1, 0, 0)), MarketRule(serial_fraction=0.0)
    )
    assert gpu.profile == (
        7200.0,
        3600.0,
    )  # Amdahl over units, equal to the run time on the request
    assert gpu.payload["value_curve"].max_value == 8.0  # 8 cores x 1 h: one unit per core-hour
    zero = with_value(Job(2, 0.0, 0.0, 0.0, units=3), MarketRule())
    assert (zero.run_time, zero.estimate, zero.profile) == (1.0, 1.0, (1.0, 1.0, 1.0))
    assert rigid_view([gpu])[0].profile is None and "value_curve" in rigid_view([gpu])[0].payload


def test_the_pool_is_sized_at_the_recorded_load_so_load_scaling_overloads_it_too() -> None:
    rule = AllFamiliesRule(enabled=True, bb_load=0.8)
    assert rule.burst_buffer(BurstBufferRule(), 1.5).target_load == pytest.approx(1.2)
    given = BurstBufferRule("S1", capacity_gb=500.0)
    assert rule.burst_buffer(given, 2.0) is given  # a [workload.burst_buffer] of one's own wins


def test_accelerators_follow_the_platforms_gpu_and_mic_node_shares() -> None:
    eurora = platform_accelerators(AcceleratorRule(), load_platform("eurora"), 7)
    assert (eurora.gpu_users, eurora.mic_users, eurora.cores_per_unit, eurora.seed) == (
        0.5,
        0.5,
        4,
        7,
    )
    own = AcceleratorRule(gpu_partition=8)
    assert platform_accelerators(own, load_platform("eurora"), 7) is own
    assert not platform_accelerators(AcceleratorRule(), load_platform("kth-sp2"), 7).enabled


def test_options_are_validated_with_clear_errors(tmp_path: Path) -> None:
    trace = write_swf(tmp_path / "t.swf")
    with pytest.raises(
        UnknownNameError, match="workload.all_families.bb_scenario 'S9'.*S1, S2, S3, S4"
    ):
        config(trace, all_families={"enabled": True, "bb_scenario": "S9"})
    with pytest.raises(ConfigError, match="workload.all_families.bb_load"):
        config(trace, all_families={"enabled": True, "bb_load": 0.0})
    with pytest.raises(ConfigError, match="needs workload.trace"):
        config_from_dict({"workload": {"generator": "kit", "all_families": {"enabled": True}}})
    with pytest.raises(ConfigError, match="not both"):
        config(trace, market=True)
    with pytest.raises(UnknownNameError, match="workload.all_families.colour"):
        config(trace, all_families={"enabled": True, "colour": 1})


def test_config_round_trips_and_the_rule_off_leaves_run_ids_alone(tmp_path: Path) -> None:
    trace = write_swf(tmp_path / "t.swf")
    on = config(trace, load_factor=2.0)
    assert (
        on.workload.burst_buffer.scenario == "S4"
        and on.workload.burst_buffer.target_load == pytest.approx(1.8)
    )
    assert config_from_dict(on.to_dict()) == on
    off = config_from_dict({"workload": {"trace": str(trace)}})
    assert "all_families" not in off.to_dict()["workload"]


def test_every_job_carries_what_every_family_reads(tmp_path: Path) -> None:
    trace = write_swf(tmp_path / "t.swf", n_jobs=80)
    spec = tmp_path / "half_gpu.toml"
    spec.write_text(
        'name = "half-gpu"\n[[node_type]]\nname = "gpu"\ncount = 4\ncores = 8\ngpus = 2\n'
        '[[node_type]]\nname = "thin"\ncount = 4\ncores = 8\n'
    )
    platform = load_platform(str(spec))
    jobs, report = build_workload(config(trace, platform=str(spec)), platform)
    assert all("value_curve" in job.payload and job.profile is not None for job in jobs)
    assert sum(1 for job in jobs if job.bb > 0) == round(0.75 * len(jobs))  # S4: 75 % request
    assert (
        report["accelerators"]["gpu_jobs"] > 0
        and report["accelerators"]["rule"]["gpu_users"] == 0.5
    )
    assert any(job.unit[1] == 1 for job in jobs)
    assert (
        report["all_families"]["zero_length_jobs"] == 8 and min(job.run_time for job in jobs) == 1.0
    )
    queues, _ = build_workload(config(trace, "queues-hybrid", platform=str(spec)), platform)
    assert queues == jobs  # the queues run moldable jobs at their requested size: the same jobs
    assert [dataclasses.replace(j, profile=None, run_profile=None) for j in jobs] == rigid_view(
        jobs
    )


@pytest.mark.parametrize("scheduler", ["fifo", "easy", "bbsched", "greedy-plan"])
def test_rigid_families_run_the_same_jobs_and_earn_value(tmp_path: Path, scheduler: str) -> None:
    trace = write_swf(tmp_path / "t.swf")
    result = simulate(config(trace, scheduler))
    summary = result.summary
    assert summary["jobs_completed"] == 60 and summary["value_earned"] > 0
    assert summary["offered_load_bb"] > 0 and summary["utilisation_bb"] > 0


def test_the_hybrid_queues_run_the_same_jobs(tmp_path: Path) -> None:
    trace = write_swf(tmp_path / "t.swf", n_jobs=120)
    run = config_from_dict(
        {
            "platform": "nodes=4,cores=8",
            "seed": 3,
            "timeseries": False,
            "workload": {"trace": str(trace), "all_families": {"enabled": True}},
            "policy": {"scheduler": "queues-hybrid"},
            "queues": {"strategy": "hybrid", "period_days": 0.1, "samples": 5},
        }
    )
    summary = simulate(run).summary
    assert summary["jobs_completed"] == 120 and summary["value_earned"] > 0


def test_queues_strategy_none_is_unset() -> None:
    run = config_from_dict({"workload": {"generator": "kit"}, "queues": {"strategy": "none"}})
    assert run.queues.strategy is None
    assert run.to_dict() == config_from_dict({"workload": {"generator": "kit"}}).to_dict()
