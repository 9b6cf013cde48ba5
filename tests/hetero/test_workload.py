"""Seed 000 workloads, predictors, metrics and configuration."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market_hpc.core.metrics import mean_queue_size
from market_hpc.core.model import HPCModel
from market_hpc.core.predictors import make_predictor, predictor_names
from market_hpc.domain.job import Job
from market_hpc.domain.platform import load_platform
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.experiment import config_from_dict, load_scenario, simulate
from market_hpc.workload.accelerators import AcceleratorRule, add_accelerators, user_draw
from market_hpc.workload.eurora import MONTHS, class_of, eurora_like, workload_statistics

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


# ------------------------------------------------------------ Eurora-like jobs
def test_eurora_like_matches_the_papers_table_1() -> None:
    stats = workload_statistics(eurora_like(30_000, seed=2, month="2014-09"))
    assert stats["share_cpu"] == pytest.approx(0.228, abs=0.02)
    assert stats["share_mic"] == pytest.approx(0.007, abs=0.004)
    assert stats["share_gpu"] == pytest.approx(0.764, abs=0.02)
    assert stats["mean_run_cpu"] == pytest.approx(2856, rel=0.02)
    assert stats["mean_run_gpu"] == pytest.approx(383, rel=0.02)
    assert stats["mean_run_mic"] == pytest.approx(3388, rel=0.05)
    assert stats["share_short"] == pytest.approx(0.9314, abs=0.005)
    assert stats["share_medium"] == pytest.approx(0.0610, abs=0.005)
    assert stats["share_long"] == pytest.approx(0.0075, abs=0.002)


def test_eurora_months_set_the_load_level_and_cpu_share() -> None:
    april = eurora_like(20_000, seed=1, month="2014-04")
    assert workload_statistics(april)["share_cpu"] == pytest.approx(0.308, abs=0.03)
    for month, profile in MONTHS.items():
        jobs = eurora_like(2_000, seed=1, month=month)
        span_days = (jobs[-1].submit - jobs[0].submit) / 86400
        assert span_days == pytest.approx(2_000 / profile.jobs_per_30_days * 30, rel=0.15), month


def test_eurora_like_jobs_fit_the_preset_and_are_reproducible() -> None:
    jobs = eurora_like(3_000, seed=4)
    platform = load_platform("eurora")
    model = HPCModel(jobs, platform, "fifo", "first-fit", record_timeseries=False)
    assert all(model._can_ever_run(job) for job in jobs)
    assert all(job.run_time <= job.estimate and job.queue in (0, 1, 2) for job in jobs)
    assert [j.submit for j in jobs] == sorted(j.submit for j in jobs)
    assert eurora_like(3_000, seed=4) == jobs
    assert eurora_like(3_000, seed=5) != jobs
    assert {class_of(j) for j in jobs} == {"cpu", "gpu", "mic"}
    with pytest.raises(UnknownNameError, match="unknown Eurora month '2014-13'"):
        eurora_like(10, seed=1, month="2014-13")


def test_consecutive_jobs_of_a_user_have_similar_run_times() -> None:
    jobs = eurora_like(20_000, seed=3, month="2014-09")
    last: dict[int, float] = {}
    same_user, shuffled = [], []
    runs = np.array([j.run_time for j in jobs])
    rng = np.random.default_rng(0)
    for job in jobs:
        if job.user in last:
            same_user.append(abs(np.log(job.run_time) - np.log(last[job.user])))
            shuffled.append(abs(np.log(job.run_time) - np.log(rng.choice(runs))))
        last[job.user] = job.run_time
    assert np.mean(same_user) < 0.6 * np.mean(shuffled)


# ------------------------------------------------------------- accelerator rule
def test_accelerator_rule_by_user_is_stable_and_keeps_what_cannot_be_placed() -> None:
    platform = load_platform("curie")
    jobs = [
        Job(i, float(i), 10.0, 20.0, units=size, user=i % 50)
        for i, size in enumerate([1, 8, 9, 64, 1152, 1153, 5000] * 20, start=1)
    ]
    rule = AcceleratorRule(gpu_users=0.3, seed=7)
    out, report = add_accelerators(jobs, rule, platform)
    gpu_users = {u for u in range(50) if user_draw(u, 7) < 0.3}
    for before, after in zip(jobs, out):
        if (
            before.user in gpu_users and before.units <= 1152
        ):  # 144 hybrid nodes x 2 units x 4 cores
            assert (after.units, after.unit) == (-(-before.units // 4), (4, 1, 0, 0))
        else:
            assert after == before
    assert report["gpu_jobs"] + report["kept_cpu_too_large"] == sum(
        j.user in gpu_users for j in jobs
    )
    assert add_accelerators(jobs[:40], rule, platform)[0] == out[:40]  # slices draw the same users


def test_accelerator_rule_by_partition_and_its_validation() -> None:
    jobs = [Job(1, 0.0, 5.0, 5.0, units=8), Job(2, 0.0, 5.0, 5.0, units=8)]
    rule = AcceleratorRule(gpu_partition=8, cores_per_unit=8, accelerators_per_unit=2)
    out, report = add_accelerators(jobs, rule, load_platform("curie"), partitions={1: 8, 2: 10})
    assert out[0].unit == (8, 2, 0, 0) and out[0].units == 1 and out[1] == jobs[1]
    assert report["gpu_jobs"] == 1
    with pytest.raises(ConfigError, match="need an SWF trace"):
        add_accelerators(jobs, rule, load_platform("curie"))
    with pytest.raises(ConfigError, match=r"gpu_users must be in \[0, 1\]"):
        AcceleratorRule(gpu_users=1.5)


# ------------------------------------------------------------------ predictors
def test_data_driven_predictions_are_causal_and_drive_only_what_schedulers_see() -> None:
    jobs = [
        Job(1, 0.0, 100.0, 1000.0, user=1),
        Job(2, 10.0, 300.0, 1000.0, user=1),
        Job(3, 150.0, 50.0, 1000.0, user=1),
        Job(4, 400.0, 50.0, 1000.0, user=1),
    ]
    model = HPCModel(jobs, "nodes=4,cores=1", "fifo", predictor=make_predictor("data-driven"))
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")
    # job 2 arrives before job 1 ends: no history, the request; job 3 sees job 1; job 4
    # the last two to complete, job 3 (ended at 200) and job 2 (ended at 310)
    assert frame["estimate"].tolist() == [1000.0, 1000.0, 100.0, 175.0]
    assert frame["run_time"].tolist() == [100.0, 300.0, 50.0, 50.0]  # the clock uses real run times


def test_predictor_registry() -> None:
    assert predictor_names() == ["data-driven", "real", "wall-time"]
    job = Job(1, 0.0, 42.0, 600.0, user=3)
    assert make_predictor("real").predict(job, 0.0) == 42.0
    assert make_predictor("wall-time").predict(job, 0.0) == 600.0
    with pytest.raises(
        UnknownNameError,
        match=re.escape("unknown predictor 'oracle'; valid choices: data-driven, real, wall-time"),
    ):
        make_predictor("oracle")


# ---------------------------------------------------------------------- metrics
def test_mean_queue_size_counts_jobs_waiting_before_each_decision() -> None:
    jobs = [Job(1, 0.0, 10.0, 10.0), Job(2, 0.0, 10.0, 10.0), Job(3, 5.0, 10.0, 10.0)]
    model = HPCModel(jobs, "nodes=1,cores=1", "fifo")
    model.run()
    frame = model.recorder.jobs_frame()
    # instants 0, 5, 10, 20, 30: waiting before the decision 2, 2, 2, 1, 0
    assert mean_queue_size(frame) == pytest.approx(7 / 5)
    empty = pd.DataFrame({"status": [], "submit_time": [], "start_time": [], "end_time": []})
    assert np.isnan(mean_queue_size(empty))


def test_summary_reports_queue_size_and_load_ratios() -> None:
    config = config_from_dict(
        {
            "platform": "eurora",
            "seed": 1,
            "workload": {"generator": "eurora", "jobs": 300, "month": "2014-09"},
            "policy": {"scheduler": "ebf", "allocator": "weighted", "predictor": "data-driven"},
        }
    )
    summary = simulate(config).summary
    for key in ("mean_queue_size", "load_ratio_cores", "load_ratio_gpus", "load_ratio_mics"):
        assert np.isfinite(summary[key]), key
    assert 0 < summary["load_ratio_gpus"] < 1


# ----------------------------------------------------------------------- config
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"policy": {"predictor": "oracle"}},
            "unknown policy.predictor 'oracle'; valid choices: data-driven, real, wall-time",
        ),
        (
            {"workload": {"generator": "eurora", "month": "2099-01"}},
            "unknown workload.month '2099-01'; valid choices: 2014-04, 2014-08, 2014-09, 2015-04",
        ),
        (
            {"workload": {"generator": "lublin-feitelson", "month": "2014-09"}},
            'workload.month applies to generator = "eurora" only',
        ),
        (
            {"workload": {"generator": "eurora", "accelerators": {"gpu_users": -1.0}}},
            r"workload.accelerators.gpu_users must be in \[0, 1\]",
        ),
        (
            {"workload": {"generator": "eurora", "accelerators": {"tpus": 1}}},
            "unknown config key 'workload.accelerators.tpus'",
        ),
    ],
)
def test_seed_000_config_errors(data: dict, message: str) -> None:
    base = {"workload": {"generator": "eurora"}}
    base.update({k: {**base.get(k, {}), **v} for k, v in data.items()})
    with pytest.raises(ConfigError, match=message):
        config_from_dict(base)


def test_the_study_sweep_file_expands_to_the_grid() -> None:
    from market_hpc.experiment.sweep import load_sweep

    sweep = load_sweep(SCENARIOS / "heterogeneity.toml")
    grid = tomllib.loads((SCENARIOS / "heterogeneity.toml").read_text())["grid"]
    combos = len(grid["policy.scheduler"]) * len(grid["policy.allocator"])
    assert len(sweep.runs) == combos * len(sweep.seeds) * 2  # two months
    assert {"scheduler", "allocator"} <= {p.column for p in sweep.parameters}


def test_curie_slice_scenario_adds_gpu_jobs(tmp_path: Path) -> None:
    from conftest import SHARED_TRACES

    if not (SHARED_TRACES / "CEA-Curie-2011-2.1-cln.swf.gz").is_file():
        pytest.skip("CEA-Curie trace absent")
    config = load_scenario(SCENARIOS / "curie_slice.toml", {"workload.first_n": 3000})
    result = simulate(config)
    assert result.workload_report["accelerators"]["gpu_jobs"] > 0
    assert (result.jobs["gpus"] > 0).any()


@pytest.mark.parametrize("name", ["heterogeneity.toml", "heterogeneity_months.toml"])
def test_study_sweeps_run_end_to_end_on_small_data(name: str) -> None:
    import copy

    from invariants import assert_schedule_invariants

    from market_hpc.experiment.run import build_workload
    from market_hpc.experiment.sweep import load_sweep

    sweep = load_sweep(SCENARIOS / name)
    runs = [run for run in sweep.runs if run.seed == sweep.seeds[0]]
    grid = tomllib.loads((SCENARIOS / name).read_text())["grid"]
    assert len(runs) == len(grid["policy.scheduler"]) * len(grid["policy.allocator"]) * 2
    for run in runs:
        data = copy.deepcopy(run.config)
        data["workload"]["jobs"] = 120
        config = config_from_dict(data)
        jobs, _ = build_workload(config, load_platform(config.platform))
        result = simulate(config, jobs=jobs)
        assert_schedule_invariants(jobs, result.jobs, config.platform, segments=result.segments)
        assert result.summary["jobs_completed"] == len(jobs), run.params
