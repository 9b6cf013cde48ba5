"""scenarios/bbsched.toml validates into the 64-run study and its points run on small data
with the burst-buffer invariants checked."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import SHARED_TRACES, real_trace
from invariants import assert_schedule_invariants

from market_hpc.domain.platform import load_platform
from market_hpc.experiment import config_from_dict, simulate
from market_hpc.experiment.run import build_workload
from market_hpc.experiment.sweep_spec import load_sweep
from market_hpc.policies.bbsched.schedulers import BB_SCHEDULERS
from market_hpc.workload.burst_buffer import with_capacity

SWEEP = Path(__file__).resolve().parents[2] / "scenarios" / "bbsched.toml"


def needs_study_traces() -> None:
    """Skip, with the reason, when the two archive traces the study sweeps name are absent
    (a sweep validates every point's trace path when it loads)."""
    real_trace("KTH-SP2-1996-2.1-cln.swf.gz")
    real_trace("HPC2N-2002-2.1-cln.swf.gz")


def test_study_sweep_expands_to_every_method_scenario_and_trace() -> None:
    needs_study_traces()
    sweep = load_sweep(SWEEP)
    assert len(sweep.runs) == 128
    points = {
        (r.params["scheduler"], r.params["scenario"], r.params["machine"]) for r in sweep.runs
    }
    assert {p[0] for p in points} == set(BB_SCHEDULERS)
    assert {p[1] for p in points} == {"S1", "S2", "S3", "S4"}
    orders = {r.params["machine"]: r.config["policy"]["window"]["order"] for r in sweep.runs}
    assert orders == {"theta": "wfp", "cori": "fcfs"}
    pressure = load_sweep(SWEEP.with_name("bbsched_pressure.toml"))
    assert len(pressure.runs) == 16
    assert {r.config["workload"]["burst_buffer"]["capacity_gb"] for r in pressure.runs} == {
        9567.0,
        11924.0,
    }


def test_regime_sweeps_expand_to_the_study() -> None:
    needs_study_traces()
    regime = load_sweep(SWEEP.with_name("bbsched_regime.toml"))
    assert len(regime.runs) == 320
    assert {r.seed for r in regime.runs} == {1, 2, 3, 4, 5}
    loads = {
        r.config["platform"]: r.config["workload"]["burst_buffer"]["target_load"]
        for r in regime.runs
    }
    assert loads == {"kth-sp2": 0.9, "hpc2n": 0.95}
    table3 = load_sweep(SWEEP.with_name("bbsched_table3.toml"))
    assert sorted({r.config["policy"]["window"]["size"] for r in table3.runs}) == [10, 50]
    nostarve = load_sweep(SWEEP.with_name("bbsched_nostarve.toml"))
    assert {r.config["policy"]["scheduler"] for r in nostarve.runs} == {"bb-baseline", "bbsched"}
    assert len(table3.runs) == len(nostarve.runs) == 20


def test_regime_point_sizes_the_pool_on_small_data() -> None:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"the study replays real traces and {SHARED_TRACES} is absent")
    spec = next(
        r
        for r in load_sweep(SWEEP.with_name("bbsched_regime.toml")).runs
        if r.params["machine"] == "cori"
        and r.params["scenario"] == "S4"
        and r.params["scheduler"] == "bbsched"
    )
    data = copy.deepcopy(spec.config)
    data["workload"]["first_n"] = 300
    result = simulate(config_from_dict(data))
    report = result.workload_report["burst_buffer"]
    assert result.summary["utilisation_bb"] > 0
    assert 0.6 < report["offered_bb_load"] < 1.3  # 300 jobs: the expectation is 0.9
    assert report["capacity_gb"] < 35773  # smaller than Cori's pool scaled to 240 processors


@pytest.mark.parametrize("machine", ["theta", "cori"])
def test_study_points_run_on_small_data(machine: str) -> None:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"the study replays real traces and {SHARED_TRACES} is absent")
    sweep = load_sweep(SWEEP)
    for scheduler in ("bbsched", "bb-baseline"):
        spec = next(
            r
            for r in sweep.runs
            if r.params["machine"] == machine
            and r.params["scenario"] == "S4"
            and r.params["scheduler"] == scheduler
        )
        data = copy.deepcopy(spec.config)
        data["workload"]["first_n"] = 300
        config = config_from_dict(data)
        platform = with_capacity(load_platform(config.platform), config.workload.burst_buffer)
        jobs, _ = build_workload(config, platform)
        result = simulate(config, jobs)
        assert sum(job.bb > 0 for job in jobs) == round(0.75 * 300)
        assert_schedule_invariants(jobs, result.jobs, platform, segments=result.segments)
        assert result.summary["utilisation_bb"] > 0
