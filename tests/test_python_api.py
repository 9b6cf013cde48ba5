"""The Python API as a Mesa user meets it: ``from market_hpc import ...`` (lazily), steps
counted on every path, the DataCollector's table equal to the CLI's ``timeseries.csv``,
frames, ``agents_by_type``, and the README's Python example run as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import market_hpc
from market_hpc import HPCModel, lublin_feitelson, read_swf, simulate
from market_hpc.cli import main
from market_hpc.core.agents import JobAgent, NodeAgent, QueueAgent, ResourceManagerAgent
from market_hpc.workload import write_swf

REPO = Path(__file__).resolve().parents[1]
PLATFORM = "nodes=16,cores=1"

pytestmark = pytest.mark.smoke


def _jobs(n: int = 120) -> tuple:
    return lublin_feitelson(n_jobs=n, max_procs=16, seed=4, load_factor=2.0)


def test_import_market_hpc_loads_nothing_heavy_and_every_name_resolves() -> None:
    probe = (
        "import sys, json, market_hpc\n"
        "heavy = sorted(m for m in ('mesa', 'pandas', 'numpy', 'networkx', 'scipy') if m in "
        "sys.modules)\n"
        "print(json.dumps(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert json.loads(done.stdout) == []
    for name in market_hpc.__all__:
        assert getattr(market_hpc, name) is not None, name
    assert set(market_hpc.__all__) <= set(dir(market_hpc))
    assert market_hpc.HPCModel.__module__ == "market_hpc.core.model"
    with pytest.raises(AttributeError, match="no attribute 'HPCModle'"):
        market_hpc.HPCModle  # noqa: B018


def test_generators_take_the_names_users_expect_and_the_old_positional_forms() -> None:
    assert lublin_feitelson(n_jobs=50, max_procs=32, seed=3) == lublin_feitelson(50, 32, 3)
    assert lublin_feitelson(50) == lublin_feitelson(50, max_procs=128, seed=0)
    assert max(job.units for job in lublin_feitelson(200, max_procs=8, seed=1)) <= 8
    jobs = market_hpc.demo_job_set(n_jobs=3, seed=2)
    assert len(jobs) == 3 and jobs == market_hpc.demo_job_set(3, 2)


def test_run_step_and_run_model_count_the_same_steps_and_collect_the_same_rows() -> None:
    jobs = _jobs()
    stepped = HPCModel(jobs, PLATFORM, "easy", seed=1)
    while stepped.running:
        stepped.step()
    ran = HPCModel(jobs, PLATFORM, "easy", seed=1)
    ran.run(until=jobs[40].submit)
    part = ran.steps
    ran.step()
    ran.run()
    mesa_run = HPCModel(jobs, PLATFORM, "easy", seed=1)
    mesa_run.run_model()
    frame = stepped.datacollector.get_model_vars_dataframe()
    assert 0 < part < stepped.steps
    assert stepped.steps == ran.steps == mesa_run.steps == len(frame)
    # one row per instant with events: the clock strictly increases row by row
    assert frame["time"].is_monotonic_increasing and frame["time"].is_unique
    for other in (ran, mesa_run):
        pd.testing.assert_frame_equal(other.datacollector.get_model_vars_dataframe(), frame)
        pd.testing.assert_frame_equal(other.jobs_frame(), stepped.jobs_frame())
    pd.testing.assert_frame_equal(stepped.timeseries_frame(), frame)
    assert len(stepped.jobs_frame()) == len(jobs)
    assert list(stepped.datacollector.model_vars) == list(frame.columns)
    assert stepped.datacollector.model_vars["queue_length"] == frame["queue_length"].tolist()


def test_datacollector_frame_equals_the_timeseries_csv_the_cli_writes(tmp_path: Path) -> None:
    trace = tmp_path / "trace.swf"
    write_swf(_jobs(), trace)
    out = tmp_path / "out"
    assert (
        main(
            ["replay", str(trace), "--platform", PLATFORM, "--scheduler", "easy", "--out", str(out)]
        )
        == 0
    )
    model = HPCModel(read_swf(trace).jobs, PLATFORM, "easy")
    for _ in range(25):
        model.step()
    model.run_model()
    written = pd.read_csv(out / "timeseries.csv")
    assert len(written) == model.steps > 25
    pd.testing.assert_frame_equal(model.datacollector.get_model_vars_dataframe(), written)
    pd.testing.assert_frame_equal(
        model.jobs_frame().drop(columns=["nodes"]),
        pd.read_csv(out / "jobs.csv").drop(columns=["nodes", "reason"], errors="ignore"),
        check_dtype=False,
    )


def test_agents_by_type_lists_nodes_queue_manager_and_the_jobs_in_the_system() -> None:
    model = HPCModel(_jobs(), PLATFORM, "fifo")
    model.run(until=_jobs()[30].submit)
    by_type = model.agents_by_type
    assert len(by_type[NodeAgent]) == 16
    assert len(by_type[QueueAgent]) == 1 and len(by_type[ResourceManagerAgent]) == 1
    assert {agent.job.job_id for agent in by_type[JobAgent]} == set(model.job_agents)
    assert len(model.agents) == 16 + 2 + len(model.job_agents)


def test_mesa_collect_with_agent_reporters_still_runs_step_by_step() -> None:
    from market_hpc.core.collector import TimeSeriesCollector

    model = HPCModel(_jobs(40), PLATFORM, "fifo")
    model.datacollector = TimeSeriesCollector(
        model.recorder, agenttype_reporters={JobAgent: {"status": lambda agent: agent.status.value}}
    )
    model.run_model()  # Mesa's loop of step(): collect() after each step gathers the agents
    per_job = model.datacollector.get_agenttype_vars_dataframe(JobAgent)
    assert len(per_job) > 0 and set(per_job["status"]) <= {"queued", "running"}
    assert len(model.datacollector.get_model_vars_dataframe()) == model.steps


def test_simulate_takes_a_scenario_file(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'platform = "nodes=16,cores=1"\nseed = 2\n'
        '[workload]\ngenerator = "lublin-feitelson"\njobs = 60\n'
        '[policy]\nscheduler = "easy"\n'
    )
    result = simulate(scenario)
    assert result.summary["jobs_completed"] == 60
    same = simulate(market_hpc.load_scenario(scenario))
    pd.testing.assert_frame_equal(result.timeseries, same.timeseries)


def test_the_readme_python_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## From Python") :]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "README.md", "exec"), {"__name__": "readme"})  # noqa: S102  # the README's own code
    lines = capsys.readouterr().out.splitlines()
    fifo, easy = (float(line.split()[1]) for line in lines[-2:])
    assert lines[-2].startswith("fifo") and easy < fifo  # backfilling waits less on this load
