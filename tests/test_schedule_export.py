"""Schedule export: SWF with the simulated waits and Batsim JSON; the SWF round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from market_hpc.cli import main
from market_hpc.errors import ConfigError
from market_hpc.workload import read_swf

TRACE = Path(__file__).resolve().parents[1] / "traces" / "lf-kth-like-2000.swf"


def replay(trace: Path, out: Path, scheduler: str) -> pd.DataFrame:
    assert (
        main(
            [
                "replay",
                str(trace),
                "--platform",
                "nodes=25,cores=4",
                "--scheduler",
                scheduler,
                "--first-n",
                "400",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return pd.read_csv(out / "jobs.csv")


@pytest.mark.parametrize("scheduler", ["easy", "fifo"])
def test_round_trip_reproduces_the_schedule(tmp_path: Path, scheduler: str) -> None:
    first = replay(TRACE, tmp_path / "a", scheduler)
    assert main(["export", str(tmp_path / "a")]) == 0
    exported = tmp_path / "a" / "schedule.swf"
    second = replay(exported, tmp_path / "b", scheduler)
    columns = ["job_id", "submit_time", "start_time", "end_time", "cores", "estimate", "nodes"]
    pd.testing.assert_frame_equal(first[columns], second[columns])
    assert first["wait_time"].sum() > 0  # a schedule with queueing, not a trivial one
    # field 3 carries the simulated wait, field 4 the run time
    jobs = {job.job_id: job for job in read_swf(exported).jobs}
    rows = [line.split() for line in exported.read_text().splitlines() if not line.startswith(";")]
    for row, (_, expected) in zip(rows, first.iterrows(), strict=True):
        assert float(row[2]) == expected["wait_time"] and float(row[3]) == expected["run_time"]
        assert jobs[int(row[0])].estimate == expected["estimate"]


def test_unrun_jobs_and_batsim_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(
        "1 0 -1 100 4 -1 -1 4 200 -1 1 1 -1 -1 1 -1 -1 -1\n"
        "2 5 -1 100 400 -1 -1 400 200 -1 1 1 -1 -1 1 -1 -1 -1\n"
        "3 6 -1 -1 4 -1 -1 4 200 -1 1 1 -1 -1 1 -1 -1 -1\n"
        "4 7 -1 50 8 -1 -1 8 -1 -1 1 1 -1 -1 1 -1 -1 -1\n"
    )
    assert (
        main(
            ["replay", str(trace), "--platform", "nodes=2,cores=4", "--out", str(tmp_path / "run")]
        )
        == 0
    )
    assert (
        main(
            [
                "export",
                str(tmp_path / "run"),
                "--swf",
                str(tmp_path / "s.swf"),
                "--batsim",
                str(tmp_path / "w.json"),
            ]
        )
        == 0
    )
    assert "2 jobs have no recorded run time" in capsys.readouterr().out
    rows = [
        line.split()[:11]
        for line in (tmp_path / "s.swf").read_text().splitlines()
        if not line.startswith(";")
    ]
    assert rows[1] == ["2", "5", "-1", "-1", "-1", "-1", "-1", "400", "200", "-1", "0"]
    assert rows[3] == ["4", "7", "93", "50", "8", "-1", "-1", "8", "50", "-1", "1"]
    workload = json.loads((tmp_path / "w.json").read_text())
    assert workload["nb_res"] == 8
    assert workload["jobs"] == [
        {"id": "1", "subtime": 0.0, "res": 4, "profile": "delay_100", "walltime": 200.0},
        {"id": "4", "subtime": 7.0, "res": 8, "profile": "delay_50", "walltime": 50.0},
    ]
    assert workload["profiles"] == {
        "delay_100": {"type": "delay", "delay": 100.0},
        "delay_50": {"type": "delay", "delay": 50.0},
    }


def test_not_a_run_folder(tmp_path: Path) -> None:
    from market_hpc.experiment.schedule_export import export_schedule

    with pytest.raises(ConfigError, match="is not a run folder: it needs jobs.csv"):
        export_schedule(tmp_path)


def test_jobs_past_their_estimate_are_counted_for_batsim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(
        "1 0 -1 100 4 -1 -1 4 50 -1 1 1 -1 -1 1 -1 -1 -1\n"
        "2 0 -1 10 4 -1 -1 4 50 -1 1 1 -1 -1 1 -1 -1 -1\n"
    )
    assert (
        main(
            ["replay", str(trace), "--platform", "nodes=1,cores=8", "--out", str(tmp_path / "run")]
        )
        == 0
    )
    assert main(["export", str(tmp_path / "run")]) == 0
    assert "1 jobs ran longer than their estimate" in capsys.readouterr().out
