"""SWF partial executions (field 11 status 2, 3, 4; Preemption: Double): a held job's part lines
are skipped and counted as ``partial_execution``, its whole-job line is the job, in any order,
in ``read_swf`` and ``stream_swf`` alike; parts without a whole-job line are refused (strict)
or read as their first part (lenient); archive traces read exactly as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import real_trace
from test_swf_stream import outcome, write

from market_hpc.domain.job import Job
from market_hpc.errors import TraceFormatError
from market_hpc.workload import read_swf
from market_hpc.workload.info import jobs_fingerprint
from market_hpc.workload.swf_stream import stream_swf

# A held job 2 (submitted at 5): its summary (status 1, 40 s on 4 cores), then three parts
# (2: continued, 2: continued, 3: last, completed). Job 1 and 3 ran once.
JOB_1 = "1 0 0 10 4 -1 -1 4 60 -1 1 3 -1 -1 1 -1 -1 -1"
SUMMARY = "2 5 0 40 4 -1 -1 4 90 -1 1 3 -1 -1 1 -1 -1 -1"
PARTS = [
    "2 5 0 10 4 -1 -1 4 90 -1 2 3 -1 -1 1 -1 -1 -1",
    "2 5 15 10 4 -1 -1 4 90 -1 2 3 -1 -1 1 -1 -1 -1",
    "2 5 30 20 4 -1 -1 4 90 -1 3 3 -1 -1 1 -1 -1 -1",
]
JOB_3 = "3 8 2 2 2 -1 -1 2 40 -1 0 7 -1 -1 2 -1 -1 -1"
JOBS = (
    Job(1, 0.0, 10.0, 60.0, 4, user=3, queue=1),
    Job(2, 5.0, 40.0, 90.0, 4, user=3, queue=1),
    Job(3, 8.0, 2.0, 40.0, 2, user=7, queue=2),
)


def read_both(path: Path, lenient: bool = False) -> tuple[object, ...]:
    """What ``read_swf`` gives, checked to be what ``stream_swf`` gives."""
    expected = outcome(read_swf, path, lenient)
    assert outcome(stream_swf, path, lenient) == expected
    return expected


@pytest.mark.parametrize("lenient", [False, True])
def test_held_job_is_its_summary_line(tmp_path: Path, lenient: bool) -> None:
    path = write(
        tmp_path, "; Preemption: Double\n" + "\n".join([JOB_1, SUMMARY, *PARTS, JOB_3]) + "\n"
    )
    jobs, _, report, skipped = read_both(path, lenient)
    assert jobs == JOBS  # job 2 has the summary's run time (40 s), not a part's
    assert report.anomalies == {"partial_execution": 3}
    assert report.examples == {"partial_execution": (4, 5, 6)}
    assert (report.job_lines, report.jobs_kept, report.skipped) == (6, 3, 3)
    assert len(skipped) == 0  # not jobs.csv rows: the job itself ran (docs/exports.md)


@pytest.mark.parametrize(
    ("order", "lines"),
    [
        ("parts first", [JOB_1, *PARTS, SUMMARY, JOB_3]),
        ("summary between parts", [JOB_1, PARTS[0], SUMMARY, PARTS[1], PARTS[2], JOB_3]),
        ("parts after other jobs", [JOB_1, SUMMARY, JOB_3, *PARTS]),
        ("parts out of order", [PARTS[2], JOB_1, PARTS[0], JOB_3, SUMMARY, PARTS[1]]),
    ],
)
def test_line_order_does_not_matter(tmp_path: Path, order: str, lines: list[str]) -> None:
    path = write(tmp_path, "\n".join(lines) + "\n", "t.swf.gz")
    jobs, _, report, _ = read_both(path)
    assert jobs == JOBS, order
    part_lines = tuple(number for number, line in enumerate(lines, start=1) if line in PARTS)
    assert report.anomalies == {"partial_execution": 3} and report.examples == {
        "partial_execution": part_lines
    }


def test_summary_of_unknown_run_time_still_owns_its_parts(tmp_path: Path) -> None:
    """A whole-job line skipped for an unknown field is still the job: its parts are not jobs."""
    unknown = SUMMARY.replace(" 40 4 ", " -1 4 ", 1)
    path = write(tmp_path, "\n".join([JOB_1, unknown, *PARTS]) + "\n")
    jobs, _, report, skipped = read_both(path)
    assert jobs == JOBS[:1]
    assert report.anomalies == {"partial_execution": 3, "unknown_run_time": 1}
    assert skipped.lines.tolist() == [2]


def test_part_of_unknown_run_time_is_still_a_part(tmp_path: Path) -> None:
    """A part is never a job: with its job's whole-job line it counts as a partial execution,
    not as a skipped job (no jobs.csv row that would repeat a job that ran)."""
    unknown_part = PARTS[1].replace(" 10 4 ", " -1 4 ", 1)
    path = write(
        tmp_path, "\n".join([JOB_1, SUMMARY, PARTS[0], unknown_part, PARTS[2], JOB_3]) + "\n"
    )
    jobs, _, report, skipped = read_both(path)
    assert jobs == JOBS
    assert report.anomalies == {"partial_execution": 3} and report.examples == {
        "partial_execution": (3, 4, 5)
    }
    assert len(skipped) == 0


def test_part_of_unknown_run_time_without_a_summary_is_unknown(tmp_path: Path) -> None:
    """Without a whole-job line it is skipped as any line
    of unknown run time, listed in file order."""
    unknown_part = PARTS[1].replace(" 10 4 ", " -1 4 ", 1)
    unknown_job = JOB_3.replace("3 8 2 2 2", "4 9 2 -1 2", 1)
    path = write(tmp_path, f"{JOB_1}\n{unknown_part}\n{JOB_3}\n{unknown_job}\n")
    jobs, _, report, skipped = read_both(path)
    assert jobs == (JOBS[0], JOBS[2])
    assert report.anomalies == {"unknown_run_time": 2} and report.examples == {
        "unknown_run_time": (2, 4)
    }
    assert skipped.lines.tolist() == [2, 4] and skipped.kinds == (
        "unknown_run_time",
        "unknown_run_time",
    )


def test_parts_without_a_summary_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "\n".join([JOB_1, *PARTS, JOB_3]) + "\n")
    message = (
        f"{path}:2: field 11 (status): job 2 has partial-execution lines (status 2, 3 or 4) but no "
        "whole-job line (status 0, 1, 5 or -1): a Preemption: Double log gives each split job a "
        "summary "
        "line; add it, or use --lenient to keep the job's first part as the job"
    )
    assert read_both(path) == ("TraceFormatError", message)
    with pytest.raises(TraceFormatError) as caught:
        read_swf(path)
    assert (caught.value.line, caught.value.field) == (2, "11 (status)")


def test_a_single_part_without_a_summary_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "\n".join([JOB_1, JOB_3, PARTS[2]]) + "\n")
    assert read_both(path)[1].startswith(
        f"{path}:3: field 11 (status): job 2 has partial-execution lines"
    )


def test_first_orphan_in_file_order_is_named(tmp_path: Path) -> None:
    orphan_9 = PARTS[0].replace("2 5 ", "9 6 ", 1)
    path = write(tmp_path, "\n".join([JOB_1, orphan_9, PARTS[1], JOB_3]) + "\n")
    assert read_both(path)[1].startswith(f"{path}:2: field 11 (status): job 9 has")


def test_malformed_line_is_named_before_a_missing_summary(tmp_path: Path) -> None:
    path = write(
        tmp_path, "\n".join([JOB_1, *PARTS, "4 1 0 x 4 -1 -1 4 60 -1 1 3 -1 -1 1 -1 -1 -1"]) + "\n"
    )
    assert read_both(path)[1].startswith(
        f"{path}:5: field 4 (run time): 'x' is not an ASCII number"
    )


def test_lenient_keeps_the_first_part_without_a_summary(tmp_path: Path) -> None:
    path = write(tmp_path, "\n".join([JOB_1, PARTS[1], PARTS[0], PARTS[2], JOB_3]) + "\n")
    jobs, _, report, _ = read_both(path, lenient=True)
    assert jobs == (JOBS[0], Job(2, 5.0, 10.0, 90.0, 4, user=3, queue=1), JOBS[2])  # line 2's part
    assert report.anomalies == {"missing_summary": 2}
    assert report.examples == {"missing_summary": (3, 4)}


def test_lenient_orphans_and_held_jobs_together(tmp_path: Path) -> None:
    orphan = PARTS[2].replace("2 5 ", "4 9 ", 1)
    path = write(tmp_path, "\n".join([orphan, JOB_1, *PARTS, SUMMARY, JOB_3]) + "\n")
    jobs, _, report, _ = read_both(path, lenient=True)
    assert [job.job_id for job in jobs] == [1, 2, 3, 4]
    assert jobs[1] == JOBS[1] and jobs[3] == Job(4, 9.0, 20.0, 90.0, 4, user=3, queue=1)
    assert report.anomalies == {"partial_execution": 3} and report.examples == {
        "partial_execution": (3, 4, 5)
    }


@pytest.mark.parametrize("lenient", [False, True])
def test_two_whole_job_lines_are_still_duplicates(tmp_path: Path, lenient: bool) -> None:
    cancelled = SUMMARY.replace(" 1 3 -1", " 5 3 -1", 1)
    path = write(tmp_path, "\n".join([JOB_1, SUMMARY, *PARTS, cancelled]) + "\n")
    result = read_both(path, lenient)
    if not lenient:
        assert result == (
            "TraceFormatError",
            f"{path}:6: field 1 (job id): duplicate job id 2 (first on line 2)",
        )
        return
    jobs, _, report, _ = result
    assert jobs == JOBS[:2]
    assert report.anomalies == {"duplicate_job_id": 1, "partial_execution": 3}


def test_status_other_than_two_to_four_is_a_whole_job(tmp_path: Path) -> None:
    """Statuses the definition does not name (here 6) and -1 are whole-job lines, as before."""
    path = write(
        tmp_path,
        "\n".join(
            [
                JOB_1.replace(" 1 3 -1", " -1 3 -1", 1),
                SUMMARY.replace(" 1 3 -1", " 6 3 -1", 1),
                JOB_3,
            ]
        )
        + "\n",
    )
    jobs, _, report, _ = read_both(path)
    assert jobs == JOBS and report.anomalies == {}


@pytest.mark.traces
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("KTH-SP2-1996-2.1-cln.swf.gz", "5b866131bec2426c"),
        pytest.param("HPC2N-2002-2.1-cln.swf.gz", "5fa52e2fbfe40530", marks=pytest.mark.slow),
    ],
    ids=["KTH", "HPC2N"],
)
def test_archive_traces_read_as_before(name: str, expected: str) -> None:
    """The jobs read before partial executions were recognised (fingerprint taken then)."""
    path = real_trace(name)
    workload = read_swf(path)
    assert jobs_fingerprint(workload.jobs) == expected
    assert jobs_fingerprint(stream_swf(path)) == expected
    assert "partial_execution" not in workload.report.anomalies
