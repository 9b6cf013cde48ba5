"""Seed 004 experiments: periodic reconfiguration end to end, executors, study tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import real_trace
from invariants import assert_schedule_invariants

from market_hpc.domain.platform import load_platform
from market_hpc.experiment import load_scenario, simulate
from market_hpc.experiment.config import QueuesConfig
from market_hpc.experiment.queues import plan_period
from market_hpc.experiment.queues_report import compare
from market_hpc.experiment.sweep_exec import make_executor
from market_hpc.workload import read_swf, time_slice

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "queues.toml"
SMALL = {
    "workload.end": 15_552_000.0 + 6 * 86400,
    "queues.period_days": 2.0,
    "queues.samples": 8,
    "queues.lb_points": 3,
}


@pytest.mark.parametrize("strategy", ["hybrid", "nonpartitioned"])
def test_periodic_reconfiguration_end_to_end(strategy: str) -> None:
    real_trace("HPC2N-2002-2.1-cln.swf.gz")
    config = load_scenario(SCENARIO, {**SMALL, "queues.strategy": strategy})
    result = simulate(config)
    summary = result.summary
    periods = summary["queue_periods"]
    assert [p["period"] for p in periods] == [0, 1, 2]
    assert sum(p["jobs"] for p in periods) == len(result.jobs) == summary["jobs_completed"]
    configs = summary["queue_configs"]
    assert len(configs) == (3 if strategy == "hybrid" else 1)
    if strategy == "hybrid":
        assert "hybrid (hybrid)" in configs[1]["config"] and summary["planning_simulations"] > 0
    from market_hpc.experiment.run import build_workload

    jobs, _ = build_workload(config, load_platform(config.platform))
    assert_schedule_invariants(jobs, result.jobs, config.platform, segments=result.segments)


def test_sampling_simulations_give_the_same_plan_in_local_processes() -> None:
    trace = real_trace("HPC2N-2002-2.1-cln.swf.gz")
    jobs = list(time_slice(read_swf(trace).jobs, 180 * 86400.0, 182 * 86400.0))
    settings = QueuesConfig(strategy="hybrid", samples=6, lb_points=2, period_days=2.0)
    platform = load_platform("hpc2n")
    plans = []
    for workers in (1, 2):
        with make_executor(workers) as executor:
            plans.append(
                plan_period(
                    jobs, jobs[0].submit, 2 * 86400.0, platform, settings, 1, executor=executor
                )
            )
    assert plans[0].configs == plans[1].configs and plans[0].simulations == plans[1].simulations


def test_compare_reports_the_papers_comparisons() -> None:
    rows = []
    for period, (static, hybrid) in enumerate([(10.0, 10.0), (10.0, 5.0), (20.0, 8.0)]):
        for strategy, wait in (("static", static), ("hybrid", hybrid)):
            rows.append(
                {
                    "study": "x",
                    "strategy": strategy,
                    "period": period,
                    "mean_wait_h": wait,
                    "max_wait_h": wait,
                    "bsld": 1.0,
                    "utilisation": 0.5,
                }
            )
    table = compare(pd.DataFrame(rows)).set_index(["comparison", "metric"])
    row = table.loc[("hybrid vs static", "mean_wait_h")]
    assert (
        row["mean_change_pct"] == -55.0
        and row["best_change_pct"] == -60.0
        and row["periods_better"] == "2/2"
    )


def test_the_study_runs_as_a_sweep_with_per_period_rows_and_resumes(tmp_path: Path) -> None:
    from market_hpc.experiment.report import write_report
    from market_hpc.experiment.sweep import run_sweep

    real_trace("HPC2N-2002-2.1-cln.swf.gz")
    sweep = tmp_path / "queues_sweep.toml"
    sweep.write_text(f'''base = "{SCENARIO}"
seeds = [1]
[workload]
end = {15_552_000.0 + 4 * 86400}
[queues]
period_days = 2.0
samples = 8
lb_points = 3
[grid]
"queues.strategy" = ["static", "hybrid"]
''')
    out = tmp_path / "out"
    first = run_sweep(sweep, out, progress=False)
    assert (first.total, first.done, first.failed) == (2, 2, 0)
    again = run_sweep(sweep, out, progress=False)  # resume: nothing left to run
    assert (again.done, again.skipped) == (0, 2)
    write_report(out, progress=False)
    periods = pd.read_csv(out / "report" / "queue_periods.csv")
    assert sorted(zip(periods.strategy, periods.period)) == [
        ("hybrid", 0),
        ("hybrid", 1),
        ("static", 0),
        ("static", 1),
    ]
    hybrid = periods[(periods.strategy == "hybrid") & (periods.period == 1)].iloc[0]
    assert hybrid.plan_source in ("nlp", "sample") and hybrid.queues >= 1 and hybrid.jobs > 0
    assert set(periods[periods.strategy == "static"].plan_source) == {"eq7"}
    claims = pd.read_csv(out / "report" / "queue_claims.csv")
    assert "hybrid vs static" in set(claims.comparison)
    assert "the paper&#x27;s comparisons" in (out / "report" / "report.html").read_text()
