"""Every archive trace loads: lines of unknown run time, size or submit time are skipped
before any other check, counted, and listed in jobs.csv with their reason."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from market_hpc.cli import main
from market_hpc.errors import TraceFormatError
from market_hpc.workload import read_swf

HEADER = "; Version: 2.2\n; Computer: test\n"
ALL_UNKNOWN = " ".join(["-1"] * 18)  # LLNL-Thunder has such lines


def line(
    job_id: object = 1,
    submit: object = 0,
    run: object = 10,
    alloc: object = 4,
    req: object = -1,
    req_time: object = -1,
) -> str:
    fields = [
        job_id,
        submit,
        -1,
        run,
        alloc,
        -1,
        -1,
        req,
        req_time,
        -1,
        1,
        7,
        -1,
        -1,
        2,
        -1,
        -1,
        -1,
    ]
    return " ".join(str(f) for f in fields)


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "t.swf"
    path.write_text(HEADER + "".join(text + "\n" for text in lines))
    return path


@pytest.mark.smoke
def test_unknown_submit_lines_are_skipped_not_errors(tmp_path: Path) -> None:
    path = write(tmp_path, line(1), ALL_UNKNOWN, line(3, submit=-1), line(4, submit=5))
    workload = read_swf(path)  # strict mode: no error
    assert [job.job_id for job in workload.jobs] == [1, 4]
    assert workload.report.anomalies == {"unknown_run_time": 1, "unknown_submit": 1}
    assert workload.report.examples == {"unknown_run_time": (4,), "unknown_submit": (5,)}
    assert workload.skipped.lines.tolist() == [4, 5]
    assert workload.skipped.kinds == ("unknown_run_time", "unknown_submit")


@pytest.mark.parametrize("other", ["job_id=2.5", "alloc=2.5", "submit=nan", "run=inf"])
def test_unknown_fields_decide_before_any_other_check(tmp_path: Path, other: str) -> None:
    key, value = other.split("=")
    fields = {"job_id": 2, "run": -1, key: value}
    if key == "run":
        fields = {"job_id": 2, "submit": -1, "run": value}
    workload = read_swf(write(tmp_path, line(1), line(**fields), line(3, submit=9)))
    assert [job.job_id for job in workload.jobs] == [1, 3]
    assert workload.report.skipped == 1


def test_unknown_line_ids_do_not_count_as_duplicates(tmp_path: Path) -> None:
    workload = read_swf(
        write(tmp_path, line(1, run=-1), line(1, submit=3), ALL_UNKNOWN, ALL_UNKNOWN)
    )
    assert [job.job_id for job in workload.jobs] == [1]
    assert workload.report.anomalies == {"unknown_run_time": 3}


def test_fast_and_slow_paths_list_the_same_skipped_lines(tmp_path: Path) -> None:
    lines = [line(1), ALL_UNKNOWN, line(3, submit=-1), line(4, alloc=0), line(5, submit=8)]
    fast = read_swf(write(tmp_path, *lines))
    slow = read_swf(
        write(tmp_path, *lines, "9 1 -1 10 4 abc -1 -1 -1 -1 1 7 -1 -1 2 -1 -1 -1"), lenient=True
    )  # a non-numeric field forces the line-by-line pass
    assert slow.skipped == fast.skipped
    assert slow.report.anomalies == {**fast.report.anomalies, "non_numeric": 1}


def test_garbled_line_still_names_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, line(1), line(2, alloc="4x"), "3 0 -1 10")
    with pytest.raises(TraceFormatError) as caught:
        read_swf(path)
    assert str(caught.value) == (
        f"{path}:4: field 5 (allocated processors): '4x' is not an ASCII "
        "number (digits 0-9, an optional sign, point and exponent)"
    )
    truncated = write(tmp_path, line(1), "3 0 -1 10")
    with pytest.raises(TraceFormatError, match=r":4: expected 18 fields, got 4"):
        read_swf(truncated)


def test_replay_lists_skipped_jobs_with_reason(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        line(1),
        line(2, run=-1, req_time=60),
        ALL_UNKNOWN,
        line(4, submit=-1, req=8),
        line(5, alloc=-1, req=-1, submit=2),
        line(6, submit=3),
        line(7, alloc=500, submit=4),
    )
    out = tmp_path / "out"
    assert main(["replay", str(path), "--platform", "nodes=10,cores=1", "--out", str(out)]) == 0
    jobs = pd.read_csv(out / "jobs.csv")
    assert len(jobs) == 7
    assert (
        pd.read_parquet(out / "jobs.parquet")["reason"].fillna("").tolist()
        == jobs["reason"].fillna("").tolist()
    )
    by_status = jobs.groupby("status")["job_id"].apply(list).to_dict()
    assert by_status == {"finished": [1, 6], "rejected": [7], "skipped": [-1, 2, 4, 5]}
    reasons = dict(zip(jobs["job_id"], jobs["reason"]))
    assert reasons[2] == "line 4: run time unknown (field 4 is -1)"
    assert reasons[-1] == "line 5: run time unknown (field 4 is -1)"
    assert reasons[4] == "line 6: submit time unknown (field 2 is -1)"
    assert reasons[5] == "line 7: processor count unknown (fields 5 and 8 not positive)"
    assert reasons[7] == "request larger than the platform"
    assert pd.isna(reasons[1])
    row = jobs.set_index("job_id").loc[4]
    assert (row["cores"], row["estimate"], pd.isna(row["submit_time"])) == (8, 10.0, True)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_skipped"] == 4
    assert summary["trace_lines_skipped_by_reason"] == {
        "unknown_run_time": 2,
        "unknown_submit": 1,
        "unknown_size": 1,
    }
    config = json.loads((out / "config.json").read_text())
    assert "_skipped_jobs" not in config["workload"]


def test_window_lists_only_skipped_lines_inside_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        line(1),
        line(2, run=-1, submit=1),
        line(3, submit=2),
        line(4, run=-1, submit=50),
        ALL_UNKNOWN,
        line(6, submit=60),
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "replay",
                str(path),
                "--platform",
                "nodes=10,cores=1",
                "--first-n",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    jobs = pd.read_csv(out / "jobs.csv")
    assert jobs["job_id"].tolist() == [1, 2, 3]
    assert jobs["status"].tolist() == ["finished", "skipped", "finished"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_skipped"] == 1 and summary["trace_lines_skipped"] == 3


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("window", "listed"),
    [
        ({}, [2, -1, 4]),  # no window: every skipped line, unknown submit too
        ({"first_n": 2}, [2]),  # jobs 1 and 3: up to submit 2
        ({"start": 1.0}, [2, 4]),  # from submit 1 on
        ({"end": 50.0}, [2]),  # before submit 50
        ({"start": 2.0, "end": 61.0}, [4]),
        ({"first_n": 3, "start": 1.0}, [2, 4]),  # jobs 3, 6 and 7: up to submit 70
    ],
)
def test_jobs_skipped_is_the_skipped_rows_of_jobs_csv(
    tmp_path: Path, window: dict, listed: list, streamed: bool
) -> None:
    # jobs_skipped once counted the whole trace while jobs.csv listed the window.
    from market_hpc.experiment import config_from_dict, simulate
    from market_hpc.experiment.streaming import simulate_streaming

    path = write(
        tmp_path,
        line(1),
        line(2, run=-1, submit=1),
        line(3, submit=2),
        line(4, run=-1, submit=50),
        ALL_UNKNOWN,
        line(6, submit=60),
        line(7, submit=70),
    )
    config = config_from_dict(
        {
            "workload": {"trace": str(path), **window},
            "platform": "nodes=10,cores=1",
            "timeseries": False,
        }
    )
    result = (simulate_streaming if streamed else simulate)(config)
    rows = result.jobs[result.jobs["status"] == "skipped"]
    assert rows["job_id"].tolist() == sorted(listed)
    assert result.summary["jobs_skipped"] == len(rows)
    assert result.summary["trace_lines_skipped"] == 3
    assert result.summary["trace_lines_skipped_by_reason"] == {"unknown_run_time": 3}
