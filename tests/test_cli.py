"""The command line end to end: replay, run, trace info, demo, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from market_hpc.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "traces" / "lf-kth-like-2000.swf"
SAMPLE_GZ = REPO / "traces" / "lf-240p-5000.swf.gz"


@pytest.mark.smoke
def test_replay_writes_the_results_contract(tmp_path, capsys):
    out = tmp_path / "r"
    assert (
        main(
            [
                "replay",
                str(SAMPLE),
                "--platform",
                "kth-sp2",
                "--scheduler",
                "easy",
                "--allocator",
                "best-fit",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "jobs.csv",
        "jobs.parquet",
        "segments.csv",
        "segments.parquet",
        "summary.json",
        "timeseries.csv",
    ]
    jobs = pd.read_csv(out / "jobs.csv")
    for column in (
        "job_id",
        "submit_time",
        "start_time",
        "end_time",
        "wait_time",
        "run_time",
        "status",
        "cores",
        "gpus",
        "mics",
        "mem",
        "nodes",
        "value",
        "hold_count",
    ):
        assert column in jobs.columns
    assert len(jobs) == 2000
    pd.testing.assert_frame_equal(jobs, pd.read_parquet(out / "jobs.parquet"), check_dtype=False)
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "mean_wait",
        "mean_slowdown",
        "mean_bounded_slowdown",
        "utilisation_cores",
        "makespan",
        "total_profit",
        "jobs_completed",
        "jobs_dropped",
        "jobs_rejected",
        "mean_dispatch_ms",
        "mean_queue_length",
    ):
        assert key in summary
    config = json.loads((out / "config.json").read_text())
    assert config["config"]["policy"]["scheduler"] == "easy"
    assert config["versions"]["mesa"].startswith("3.")
    series = pd.read_csv(out / "timeseries.csv")
    assert list(series.columns[:3]) == ["time", "queue_length", "running_jobs"]
    assert "easy+best-fit" in capsys.readouterr().out


def test_same_config_and_seed_give_identical_results(tmp_path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        main(
            [
                "replay",
                str(SAMPLE_GZ),
                "--platform",
                "hpc2n",
                "--scheduler",
                "easy",
                "--load-factor",
                "1.5",
                "--out",
                str(out),
            ]
        )
        outs.append(out)
    for name in ("jobs.csv", "timeseries.csv"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


def test_jobs_larger_than_the_platform_are_rejected_and_counted(tmp_path, capsys):
    trace = tmp_path / "big.swf"
    trace.write_text(
        "1 0 -1 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 5 -1 10 64 -1 -1 64 20 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    out = tmp_path / "o"
    assert main(["replay", str(trace), "--platform", "nodes=8,cores=1", "--out", str(out)]) == 0
    jobs = pd.read_csv(out / "jobs.csv").set_index("job_id")
    assert jobs.loc[2, "status"] == "rejected" and jobs.loc[1, "status"] == "finished"
    assert json.loads((out / "summary.json").read_text())["jobs_rejected"] == 1


REPLAY_SAMPLE = ["replay", str(SAMPLE), "--platform", "kth-sp2"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay", "nope.swf", "--platform", "kth-sp2"], "cannot read"),
        (
            ["replay", str(SAMPLE), "--platform", "kth"],
            "unknown platform preset 'kth'; valid choices:",
        ),
        (
            ["replay", str(SAMPLE), "--platform", "kth-sp2", "--scheduler", "fcfs"],
            "unknown scheduler 'fcfs'; valid choices: ",
        ),
        (
            ["replay", str(SAMPLE), "--platform", "kth-sp2", "--allocator", "worst-fit"],
            "unknown allocator 'worst-fit'; valid choices: ",
        ),
        (
            [*REPLAY_SAMPLE, "--load-factor", "-1"],
            "--load-factor: got '-1'; valid: a finite number > 0",
        ),
        # nan once exited 0 with an empty jobs.csv; inf and 1e-300 ran too
        (
            [*REPLAY_SAMPLE, "--load-factor", "nan"],
            "--load-factor: got 'nan'; valid: a finite number > 0",
        ),
        (
            [*REPLAY_SAMPLE, "--load-factor", "inf"],
            "--load-factor: got 'inf'; valid: a finite number > 0",
        ),
        (
            [*REPLAY_SAMPLE, "--load-factor", "1e-300"],
            "load factor: got 1e-300; valid: a factor keeping submit times in [0, 2^50 (1.1e15 s)]",
        ),
        (
            [*REPLAY_SAMPLE, "--first-n", "0"],
            "--first-n: got '0'; valid: an integer in [1, 2^53 - 1]",
        ),
        (
            [*REPLAY_SAMPLE, "--first-n", "1_0"],
            "--first-n: got '1_0'; valid: an integer in [1, 2^53 - 1]",
        ),
        ([*REPLAY_SAMPLE, "--seed", "-1"], "--seed: got '-1'; valid: an integer in [0, 2^53 - 1]"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("market-hpc: error: ")
    assert message in err
    if message.startswith(("unknown scheduler", "unknown allocator")):
        from market_hpc.policies import allocator_names, scheduler_names

        names = scheduler_names() if "scheduler" in message else allocator_names()
        assert err.rstrip().endswith(", ".join(names))


def test_malformed_trace_names_file_line_and_field_unless_lenient(tmp_path, capsys):
    trace = tmp_path / "bad.swf"
    trace.write_text(
        "1 0 -1 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 5 -1 NaN 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    assert main(["replay", str(trace), "--platform", "nodes=8,cores=1"]) == 2
    err = capsys.readouterr().err
    assert f"{trace}:2: field 4 (run time)" in err
    assert main(["replay", str(trace), "--platform", "nodes=8,cores=1", "--lenient"]) == 0
    assert main(["trace", "info", str(trace), "--lenient"]) == 0
    assert "not_finite" in capsys.readouterr().out


def test_empty_trace_fails(tmp_path, capsys):
    trace = tmp_path / "empty.swf"
    trace.write_text("; only a header\n")
    assert main(["replay", str(trace), "--platform", "kth-sp2"]) == 2
    assert "no jobs" in capsys.readouterr().err


def test_run_scenario_with_set_overrides(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        f'platform = "kth-sp2"\n[workload]\ntrace = "{SAMPLE}"\nfirst_n = 300\n'
        '[policy]\nscheduler = "fifo"\n'
    )
    out = tmp_path / "o"
    assert main(["run", str(scenario), "--set", "policy.scheduler=sjf", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["policy"]["scheduler"] == "sjf"
    assert len(pd.read_csv(out / "jobs.csv")) == 300
    assert main(["run", str(scenario), "--set", "policy"]) == 2
    assert "--set expects key=value" in capsys.readouterr().err


@pytest.mark.smoke
def test_demo_quick(tmp_path, capsys):
    assert main(["demo", "--quick", "--seeds", "1", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "comparison.csv")
    assert list(table.columns[:2]) == ["policy", "seed"]
    for column in ("total_profit", "jobs_completed", "jobs_dropped", "holds"):
        assert column in table.columns
    assert set(table.policy) == {
        "sjq",
        "maxv",
        "maxvd",
        "minvr",
        "sjqh",
        "maxvh",
        "maxvdh",
        "minvrh",
        "sjqlh",
        "maxvlh",
        "maxvdlh",
        "minvrlh",
    }
    assert (tmp_path / "profit_vs_jobs.png").stat().st_size > 10_000
    assert "maxVH vs maxV" in capsys.readouterr().out


@pytest.mark.smoke
def test_python_dash_m_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "market_hpc", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("market-hpc ")
