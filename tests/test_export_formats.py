"""Exports in the field's formats: the SWF header and fields of the Parallel Workloads
Archive's SWF 2.2, and Batsim's output jobs file with allocated resources numbered like
the Gantt chart."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market_hpc.cli import main
from market_hpc.experiment.gantt import core_allocations, gantt_rectangles

# The header comments SWF 2.2 defines (Parallel Workloads Archive, swf.html)
SWF_HEADER_KEYS = {
    "Version",
    "Computer",
    "Installation",
    "Acknowledge",
    "Information",
    "Conversion",
    "MaxJobs",
    "MaxRecords",
    "Preemption",
    "UnixStartTime",
    "TimeZone",
    "TimeZoneString",
    "StartTime",
    "EndTime",
    "MaxNodes",
    "MaxProcs",
    "MaxRuntime",
    "MaxMemory",
    "AllowOveruse",
    "MaxQueues",
    "Queues",
    "Queue",
    "MaxPartitions",
    "Partitions",
    "Partition",
    "Note",
}
# Batsim's output jobs file (Batsim documentation, "Outputs: jobs"), in order
BATSIM_COLUMNS = [
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
]
BATSIM_STATES = {
    "COMPLETED_SUCCESSFULLY",
    "COMPLETED_FAILED",
    "COMPLETED_WALLTIME_REACHED",
    "COMPLETED_KILLED",
    "REJECTED",
}

# 2 nodes x 4 cores, fifo + first-fit: 1 on node 0 (0-100), 2 on node 1 (0-50); 3 waits
# for node 1 (50-80); 4 waits behind 3, then node 1's first core (80-120).
TRACE = """\
; Version: 2.2
; Computer: test machine
; UnixStartTime: 1000000000
; TimeZoneString: Europe/Stockholm
; Partitions: 1=batch, 2=gpu
1 0 -1 100 4 -1 -1 4 200 -1 1 1 -1 -1 1 1 -1 -1
2 0 -1 50 2 -1 -1 2 100 -1 0 2 -1 -1 1 2 -1 -1
3 10 -1 30 4 -1 -1 4 100 -1 5 1 -1 -1 1 1 -1 -1
4 20 -1 40 1 -1 -1 1 100 -1 1 3 -1 -1 2 -1 -1 -1
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("export")
    (folder / "t.swf").write_text(TRACE)
    assert (
        main(
            [
                "replay",
                str(folder / "t.swf"),
                "--platform",
                "nodes=2,cores=4",
                "--scheduler",
                "fifo",
                "--allocator",
                "first-fit",
                "--out",
                str(folder / "run"),
            ]
        )
        == 0
    )
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["export", str(folder / "run")]) == 0
    return folder / "run", printed.getvalue()


def _swf(run: Path) -> tuple[dict[str, str], list[list[str]]]:
    lines = (run / "schedule.swf").read_text().splitlines()
    header: dict[str, str] = {}
    for line in lines:
        if line.startswith(";"):
            key, _, value = line[1:].strip().partition(":")
            header.setdefault(key, value.strip())
    return header, [line.split() for line in lines if not line.startswith(";")]


def test_swf_header_uses_the_standard_comments(exported: tuple[Path, str]) -> None:
    header, _ = _swf(exported[0])
    assert set(header) <= SWF_HEADER_KEYS
    assert header["Version"] == "2.2"
    assert header["UnixStartTime"] == "1000000000"  # carried from the input trace
    assert header["TimeZoneString"] == "Europe/Stockholm"
    assert header["StartTime"] == "Sun Sep  9 03:46:40 CEST 2001"  # 1e9 s in Stockholm
    assert header["EndTime"] == "Sun Sep  9 03:48:40 CEST 2001"  # + the last end, 120 s
    assert (header["MaxNodes"], header["MaxProcs"], header["MaxJobs"]) == ("2", "8", "4")
    assert header["Partitions"] == "1=batch, 2=gpu" and header["MaxPartitions"] == "2"
    notes = [
        line
        for line in (exported[0] / "schedule.swf").read_text().splitlines()
        if line.startswith("; Note:")
    ]
    assert any("not expressible in SWF: node placement" in note for note in notes)
    assert "not expressible in SWF: node placement" in exported[1]  # printed too


def test_swf_keeps_the_original_status_and_partition(exported: tuple[Path, str]) -> None:
    _, rows = _swf(exported[0])
    assert all(len(row) == 18 for row in rows)
    # field 11 status: completed, failed, cancelled, completed; field 16 partition
    assert [(row[0], row[10], row[15]) for row in rows] == [
        ("1", "1", "1"),
        ("2", "0", "2"),
        ("3", "5", "1"),
        ("4", "1", "-1"),
    ]
    assert [(row[2], row[3]) for row in rows] == [
        ("0", "100"),
        ("0", "50"),
        ("40", "30"),
        ("60", "40"),
    ]


def test_batsim_jobs_file_has_the_documented_columns(exported: tuple[Path, str]) -> None:
    table = pd.read_csv(
        exported[0] / "batsim_jobs.csv", keep_default_na=False, dtype={"allocated_resources": str}
    )
    assert list(table.columns) == BATSIM_COLUMNS
    assert set(table.final_state) <= BATSIM_STATES
    assert table[["job_id", "allocated_resources", "final_state", "success"]].values.tolist() == [
        [1, "0-3", "COMPLETED_SUCCESSFULLY", 1],
        [2, "4-5", "COMPLETED_FAILED", 0],
        [3, "4-7", "COMPLETED_KILLED", 0],
        [4, "4", "COMPLETED_SUCCESSFULLY", 1],
    ]
    assert table.starting_time.tolist() == [0.0, 0.0, 50.0, 80.0]
    assert np.allclose(table.execution_time, table.finish_time - table.starting_time)
    assert np.allclose(table.waiting_time, table.starting_time - table.submission_time)
    assert np.allclose(table.turnaround_time, table.finish_time - table.submission_time)
    assert np.allclose(table.stretch, table.turnaround_time / table.execution_time)
    assert table.profile.tolist() == ["delay_100", "delay_50", "delay_30", "delay_40"]
    assert all(
        re.fullmatch(r"\d+(-\d+)?( \d+(-\d+)?)*", text) for text in table.allocated_resources
    )


def _ids(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split():
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def test_batsim_resources_are_the_gantt_charts_core_slots(tmp_path: Path) -> None:
    trace = Path(__file__).resolve().parents[1] / "traces" / "lf-kth-like-2000.swf"
    assert (
        main(
            [
                "replay",
                str(trace),
                "--platform",
                "nodes=6,cores=4",
                "--scheduler",
                "easy",
                "--first-n",
                "150",
                "--out",
                str(tmp_path / "run"),
            ]
        )
        == 0
    )
    assert main(["export", str(tmp_path / "run")]) == 0
    jobs = pd.read_csv(tmp_path / "run" / "jobs.csv")
    table = pd.read_csv(
        tmp_path / "run" / "batsim_jobs.csv",
        keep_default_na=False,
        dtype={"allocated_resources": str},
    ).set_index("job_id")
    ran = jobs[jobs.start_time.notna()]
    rects = gantt_rectangles(
        ran.job_id.tolist(),
        ran.start_time.tolist(),
        ran.end_time.tolist(),
        core_allocations(ran.nodes.tolist(), ran.cores.tolist(), ran.units.tolist()),
        [4] * 6,
    )
    drawn: dict[int, set[int]] = {}
    for job, y, height in zip(
        rects.job.tolist(), rects.y.tolist(), rects.height.tolist(), strict=True
    ):
        first = round(y * 4)
        drawn.setdefault(job, set()).update(range(first, first + round(height * 4)))
    assert drawn and all(
        _ids(table.allocated_resources[job]) == cores for job, cores in drawn.items()
    )
    # no core holds two jobs at once, and every job holds as many cores as it asked for
    busy = [
        (row.starting_time, row.finish_time, _ids(row.allocated_resources))
        for row in table.itertuples()
        if row.execution_time > 0
    ]
    assert all(
        len(ids) == n
        for (_, _, ids), n in zip(
            busy, table.requested_number_of_resources[table.execution_time > 0], strict=True
        )
    )
    for index, (start, end, ids) in enumerate(busy):
        for other_start, other_end, other in busy[index + 1 :]:
            assert not (start < other_end and other_start < end and ids & other)


def test_export_of_a_generated_workload_says_what_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'platform = "nodes=2,cores=4"\nworkload = { generator = "lublin-feitelson", '
        'jobs = 10 }\npolicy = { scheduler = "fifo" }\n'
    )
    assert main(["run", str(scenario), "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "original status and partition" in out and "no UnixStartTime" in out
    header, _ = _swf(tmp_path / "run")
    assert "UnixStartTime" not in header and set(header) <= SWF_HEADER_KEYS
