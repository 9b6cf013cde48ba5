"""Every file in scenarios/ runs end to end on small data, with invariants checked."""

from __future__ import annotations

import runpy
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import SHARED_TRACES

from market_hpc.errors import ConfigError
from market_hpc.experiment import load_scenario, simulate
from market_hpc.experiment.audit import audit_run
from market_hpc.workload.trace_catalogue import resolve_trace

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
RUN_FILES = sorted(
    p for p in SCENARIOS.glob("*.toml") if "grid" not in tomllib.loads(p.read_text())
)
SMALL = {"workload.first_n": 400}


def small_overrides(path: Path) -> dict[str, object]:
    data = tomllib.loads(path.read_text())
    workload = data["workload"]
    if "generator" in workload:
        return {"workload.jobs": min(int(workload.get("jobs", 30)), 30)}
    return dict(SMALL)


def check_run(result, out: Path) -> None:  # type: ignore[no-untyped-def]
    """Check the run's frames, and audit the folder it writes (when every job ended)."""
    jobs = result.jobs
    assert jobs.job_id.is_unique
    assert set(jobs.status) <= {"finished", "dropped", "rejected", "queued", "held"}
    started = jobs[jobs.start_time.notna()]
    assert (started.start_time >= started.submit_time).all()
    done = jobs[jobs.status == "finished"]
    assert (done.end_time >= done.start_time).all()
    summary = result.summary
    assert summary["jobs_completed"] + summary["jobs_dropped"] + summary["jobs_rejected"] + summary[
        "jobs_never_started"
    ] == len(jobs)
    if set(jobs.status) <= {"finished", "dropped", "rejected", "skipped"}:
        report = audit_run(result.write(out))
        assert report.ok, report.violation


@pytest.mark.parametrize("path", RUN_FILES, ids=[p.stem for p in RUN_FILES])
def test_scenario_runs_end_to_end(path, tmp_path):
    data = tomllib.loads(path.read_text())
    trace = data["workload"].get("trace")
    if trace:
        try:
            resolve_trace(trace, path.parent)
        except ConfigError:
            pytest.skip(
                f"{path.name} replays the real trace {trace}, neither fetched nor in "
                f"{SHARED_TRACES}"
            )
    config = load_scenario(path, small_overrides(path))
    result = simulate(config)
    check_run(result, tmp_path / "run")
    assert len(result.jobs) > 0


@pytest.mark.parametrize("script", ["fig6_profit_vs_jobs.py", "fig7_sjq_vs_sjqh.py"])
def test_figure_scripts_run(script, tmp_path, monkeypatch, capsys):
    args = ["--out", str(tmp_path)]
    args += (
        ["--seeds", "1", "--sizes", "10", "20"] if script.startswith("fig6") else ["--jobs", "20"]
    )
    monkeypatch.setattr(sys, "argv", [script, *args])
    runpy.run_path(str(SCENARIOS / script), run_name="__main__")
    assert any(p.suffix == ".png" for p in tmp_path.iterdir())
    assert "wrote" in capsys.readouterr().out
