"""Held and resumed jobs in `market-hpc export`: SWF partial executions (status 2/3/4,
Preemption: Double) and Batsim rows per execution (ID#n), on a hand-made run folder with
exactly known lines; the SWF round trip keeps the work; the files load as evalys reads them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market_hpc.cli import main
from market_hpc.core.recorder import SEGMENT_COLUMNS
from market_hpc.experiment.config import load_scenario
from market_hpc.experiment.run import simulate
from market_hpc.workload import read_swf
from market_hpc.workload.swf_stream import stream_swf

ROOT = Path(__file__).resolve().parents[1]
JOB_FIELDS = [
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
    "bb",
    "units",
    "estimate",
    "user",
    "queue",
    "nodes",
    "value",
    "hold_count",
]
# 2 nodes x 4 cores. Job 1 runs 0-10 on node 0. Job 2 (submitted at 5) runs 5-15 on 2 cores
# of node 1, is held, resumes 20-35 on all of node 1 (a moldable job: 2 then 4 cores).
# Job 3 runs 10-12 on node 0, is held and dropped at 30 while waiting.
JOBS = [
    (1, 0.0, 0.0, 10.0, 0.0, 10.0, "finished", 4, 0, 0, 0, 0.0, 4, 60.0, 3, 1, "0:4", 0.0, 0),
    (2, 5.0, 5.0, 35.0, 0.0, 25.0, "finished", 4, 0, 0, 0, 0.0, 4, 60.0, 3, 1, "1:4", 0.0, 1),
    (3, 8.0, 10.0, 30.0, 2.0, 2.0, "dropped", 4, 0, 0, 0, 0.0, 4, 40.0, 7, 1, "0:4", 0.0, 1),
]
SEGMENTS = [
    (1, 1, 0.0, 10.0, "0:4", 4, 4, 0, 0, 0, 0.0, 0.0, 1.0, "finished"),
    (2, 1, 5.0, 15.0, "1:2", 2, 2, 0, 0, 0, 0.0, 0.0, 0.4, "held"),
    (2, 2, 20.0, 35.0, "1:4", 4, 4, 0, 0, 0, 0.0, 0.4, 1.0, "finished"),
    (3, 1, 10.0, 12.0, "0:4", 4, 4, 0, 0, 0, 0.0, 0.0, 0.1, "dropped"),
]
SWF_LINES = [
    "1 0 0 10 4 -1 -1 4 60 -1 1 3 -1 -1 1 -1 -1 -1",
    # summary: parts on 2 then 4 cores, so run time = (10 * 2 + 15 * 4) / 4 core-seconds per core
    "2 5 0 20 4 -1 -1 4 60 -1 1 3 -1 -1 1 -1 -1 -1",
    "2 5 0 10 2 -1 -1 4 60 -1 2 3 -1 -1 1 -1 -1 -1",  # part 1: continued later
    "2 5 15 15 4 -1 -1 4 60 -1 3 3 -1 -1 1 -1 -1 -1",  # part 2: last, job completed
    "3 8 2 2 4 -1 -1 4 40 -1 5 7 -1 -1 1 -1 -1 -1",  # dropped: cancelled
    "3 8 2 2 4 -1 -1 4 40 -1 4 7 -1 -1 1 -1 -1 -1",  # its only part: last, not completed
]
BATSIM_LINES = [
    "1,w0,delay_10,0.0,4,60.0,1,COMPLETED_SUCCESSFULLY,0.0,10.0,10.0,0.0,10.0,1.0,0-3,-1.0,",
    "2,w0,delay_25,5.0,2,60.0,0,COMPLETED_KILLED,5.0,10.0,15.0,0.0,10.0,1.0,4-5,-1.0,",
    (
        "2#1,w0,delay_25,15.0,4,60.0,1,COMPLETED_SUCCESSFULLY,20.0,15.0,35.0,5.0,20.0,1.3333333333333333,4-7,-1.0,"
        '"{""parent_job"":""2"",""nb_resubmit"":1}"'
    ),
    "3,w0,delay_2,8.0,4,40.0,0,COMPLETED_KILLED,10.0,2.0,12.0,2.0,4.0,2.0,0-3,-1.0,",
]


def hand_made_run(folder: Path) -> Path:
    folder.mkdir(parents=True)
    pd.DataFrame(JOBS, columns=JOB_FIELDS).to_csv(folder / "jobs.csv", index=False)
    pd.DataFrame(SEGMENTS, columns=list(SEGMENT_COLUMNS)).to_csv(
        folder / "segments.csv", index=False
    )
    config = {
        "config": {
            "name": "hand",
            "platform": "nodes=2,cores=4",
            "policy": {"scheduler": "maxvh"},
            "workload": {},
        }
    }
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture
def exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    run = hand_made_run(tmp_path / "run")
    assert main(["export", str(run)]) == 0
    return run, capsys.readouterr().out


def test_held_jobs_are_swf_partial_executions(exported: tuple[Path, str]) -> None:
    run, printed = exported
    text = (run / "schedule.swf").read_text().splitlines()
    assert [line for line in text if not line.startswith(";")] == SWF_LINES
    header = dict(
        line[2:].split(": ", 1) for line in text if line.startswith("; ") and ": " in line
    )
    assert (header["MaxJobs"], header["MaxRecords"], header["Preemption"]) == ("3", "6", "Double")
    notes = [line for line in text if line.startswith("; Note: ")]
    assert any("2 held and resumed jobs are a summary line" in note for note in notes)
    assert any("1 of them ran their parts on different core counts" in note for note in notes)
    assert (
        "market-hpc replay reads the SWF's summary lines as the jobs and counts the part lines"
        in printed
    )
    workload = read_swf(run / "schedule.swf")  # no --lenient: the part lines are partial executions
    assert [(job.job_id, job.submit, job.run_time, job.units) for job in workload.jobs] == [
        (1, 0.0, 10.0, 4),
        (2, 5.0, 20.0, 4),
        (3, 8.0, 2.0, 4),
    ]  # the summaries (SWF_LINES 1, 2, 5)
    assert workload.report.anomalies == {"partial_execution": 3}
    assert workload.report.examples == {
        "partial_execution": (len(text) - 3, len(text) - 2, len(text))
    }  # parts: job lines 3, 4, 6 of 6


def test_held_jobs_are_batsim_rows_per_execution(exported: tuple[Path, str]) -> None:
    run, printed = exported
    lines = (run / "batsim_jobs.csv").read_text().splitlines()
    assert lines[0].startswith("job_id,workload_name,profile,submission_time")
    assert lines[1:] == BATSIM_LINES
    assert "one row per execution" in printed and "1 resumptions named ID#n" in printed
    workload = json.loads((run / "workload.json").read_text())
    assert [job["id"] for job in workload["jobs"]] == [
        "1",
        "2",
        "3",
    ]  # the input workload: one job each


def test_swf_round_trip_keeps_the_work(tmp_path: Path) -> None:
    """maxVH holds moldable jobs that resume on other core counts; the exported SWF read
    back without --lenient (the summaries; part lines are partial executions) has the run's
    jobs and carries every core-second that ran; replaying it needs no --lenient."""
    run = simulate(load_scenario(ROOT / "scenarios" / "market_taskgraphs.toml")).write(
        tmp_path / "run"
    )
    assert main(["export", str(run)]) == 0
    segments = pd.read_csv(run / "segments.csv")
    work = float(((segments["end"] - segments["start"]) * segments["cores"]).sum())
    assert (
        segments.groupby("job_id")["cores"].nunique().max() > 1
    )  # the case the summaries reweight
    workload = read_swf(run / "schedule.swf")
    assert sum(job.run_time * job.units for job in workload.jobs) == pytest.approx(work, rel=1e-12)
    held = int((segments["segment"] > 1).sum() + (segments.groupby("job_id").size() > 1).sum())
    assert held > 0 and workload.report.anomalies == {
        "partial_execution": held
    }  # every part line, nothing else
    assert tuple(stream_swf(run / "schedule.swf")) == workload.jobs
    # the run's jobs: same ids, submit times and estimates; one job per summary line
    ran = pd.read_csv(run / "jobs.csv").sort_values(["submit_time", "job_id"], kind="stable")
    assert [(job.job_id, job.submit, job.estimate) for job in workload.jobs] == list(
        zip(ran["job_id"], ran["submit_time"], ran["estimate"], strict=True)
    )
    assert (
        workload.jobs == read_swf(run / "schedule.swf", lenient=True).jobs
    )  # what --lenient read before
    assert (
        main(
            [
                "replay",
                str(run / "schedule.swf"),
                "--platform",
                "hlrs-3x9",
                "--scheduler",
                "easy",
                "--out",
                str(tmp_path / "replay"),
                "--no-timeseries",
            ]
        )
        == 0
    )
    replayed = pd.read_csv(tmp_path / "replay" / "jobs.csv")
    assert (
        sorted(replayed["job_id"]) == sorted(ran["job_id"])
        and (replayed["status"] == "finished").all()
    )
    # the part lines alone carry the same work, segment by segment
    rows = np.array(
        [
            line.split()
            for line in (run / "schedule.swf").read_text().splitlines()
            if not line.startswith(";")
        ],
        dtype=float,
    )
    parts = rows[np.isin(rows[:, 10], [2, 3, 4])]
    single = rows[~np.isin(rows[:, 0], parts[:, 0])]
    assert (parts[:, 3] * parts[:, 4]).sum() + (single[:, 3] * single[:, 4]).sum() == pytest.approx(
        work
    )
    assert len(parts) == len(segments[segments["job_id"].isin(parts[:, 0])])
    batsim = pd.read_csv(run / "batsim_jobs.csv", keep_default_na=False, dtype={"job_id": str})
    assert len(batsim) == len(segments)
    assert (
        batsim["execution_time"] * batsim["requested_number_of_resources"]
    ).sum() == pytest.approx(work)


def _intervals(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split():
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def test_files_load_the_way_evalys_reads_them(exported: tuple[Path, str]) -> None:
    """evalys's readers, as evalys 4.0.7 writes them: ``JobSet.from_csv`` is ``read_csv`` with
    string job ids and interval sets; ``Workload.from_csv`` reads whitespace columns after
    ``;`` comments, its first job line as a header, and keeps status <= 1."""
    run, _ = exported
    jobs = pd.read_csv(
        run / "batsim_jobs.csv", converters={"job_id": str, "allocated_resources": _intervals}
    )
    assert jobs["job_id"].tolist() == ["1", "2", "2#1", "3"] and jobs["job_id"].is_unique
    busy = [
        (row.starting_time, row.finish_time, row.allocated_resources) for row in jobs.itertuples()
    ]
    for index, (start, end, cores) in enumerate(busy):  # no core holds two executions at once
        assert all(not (start < e and s < end and cores & c) for s, e, c in busy[index + 1 :])
    columns = [
        "jobID",
        "submission_time",
        "waiting_time",
        "execution_time",
        "proc_alloc",
        "cpu_used",
        "mem_used",
        "proc_req",
        "user_est",
        "mem_req",
        "status",
        "uid",
        "gid",
        "exe_num",
        "queue",
        "partition",
        "prev_jobs",
        "think_time",
    ]
    swf = pd.read_csv(run / "schedule.swf", comment=";", names=columns, header=0, sep=r"\s+")
    kept = swf[swf["status"] <= 1]
    assert kept["jobID"].tolist() == [
        2
    ]  # the first job line is taken as the header; job 3 is status 5
    assert swf["status"].tolist() == [1, 2, 3, 5, 4]


def test_evalys_loads_the_exports(exported: tuple[Path, str]) -> None:
    """The real evalys, when it is installed (it pins pandas < 3: docs/exports.md)."""
    evalys_jobset = pytest.importorskip(
        "evalys.jobset", reason="evalys is not installed in this environment"
    )
    evalys_workload = pytest.importorskip("evalys.workload")
    run, _ = exported
    jobs = evalys_jobset.JobSet.from_csv(str(run / "batsim_jobs.csv"))
    assert sorted(jobs.df["jobID"]) == ["1", "2", "2#1", "3"]
    workload = evalys_workload.Workload.from_csv(str(run / "schedule.swf"))
    assert workload.Preemption == "Double" and workload.MaxRecords == "6"


def test_folder_without_segments_keeps_one_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run folder written before segments were recorded: one line per job, and said so."""
    run = hand_made_run(tmp_path / "run")
    (run / "segments.csv").unlink()
    assert main(["export", str(run)]) == 0
    out = capsys.readouterr().out
    assert "2 held and resumed jobs are one record" in out
    rows = [
        line for line in (run / "schedule.swf").read_text().splitlines() if not line.startswith(";")
    ]
    assert len(rows) == 3 and re.search(
        r"^; Preemption: Yes$", (run / "schedule.swf").read_text(), re.MULTILINE
    )
    assert len((run / "batsim_jobs.csv").read_text().splitlines()) == 4
