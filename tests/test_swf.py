"""SWF reading and writing: every rule of market_hpc.workload.swf on hand-made files."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.workload import format_trace_info, read_swf, swf, trace_info, write_swf

SHARED_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
HEADER = "; Version: 2.2\n; Computer: test\n"
NOT_ASCII = "is not an ASCII number (digits 0-9, an optional sign, point and exponent)"
TOO_LARGE = (
    "is too large to keep second precision in float64; valid: a finite number in [0, 2^50 "
    "(1.1e15 s)]"
)


def swf_line(
    job_id: object = 1,
    submit: object = 0,
    run: object = 10,
    alloc: object = 4,
    req: object = -1,
    req_time: object = -1,
    user: object = 7,
    queue: object = 2,
) -> str:
    """One SWF job line with the fields the reader uses set, the rest -1."""
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
        user,
        -1,
        -1,
        queue,
        -1,
        -1,
        -1,
    ]
    return " ".join(str(f) for f in fields)


def write(tmp_path: Path, *lines: str, name: str = "t.swf", header: str = HEADER) -> Path:
    path = tmp_path / name
    path.write_text(header + "".join(line + "\n" for line in lines))
    return path


def test_fields_map_to_job(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        swf_line(job_id=42, submit=100, run=30, alloc=4, req=8, req_time=60, user=3, queue=5),
    )
    (job,) = read_swf(path).jobs
    assert job == Job(42, 100.0, 30.0, 60.0, units=8, unit=(1, 0, 0, 0), user=3, queue=5)


@pytest.mark.parametrize(
    ("alloc", "req", "units"), [(4, 8, 8), (4, -1, 4), (4, 0, 4), (-1, 8, 8), (0, 3, 3)]
)
def test_requested_processors_win_when_positive(
    tmp_path: Path, alloc: int, req: int, units: int
) -> None:
    (job,) = read_swf(write(tmp_path, swf_line(alloc=alloc, req=req))).jobs
    assert job.units == units
    assert job.unit == (1, 0, 0, 0)


@pytest.mark.parametrize(("req_time", "estimate"), [(600, 600.0), (-1, 10.0), (0, 10.0), (5, 5.0)])
def test_estimate_is_requested_time_else_run_time(
    tmp_path: Path, req_time: int, estimate: float
) -> None:
    (job,) = read_swf(write(tmp_path, swf_line(run=10, req_time=req_time))).jobs
    assert job.estimate == estimate
    assert job.run_time == 10.0


def test_header_kept_and_comments_blank_lines_ignored(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "",
        "   ",
        swf_line(job_id=1) + " ; trailing note",
        "; late comment",
        swf_line(job_id=2, submit=5),
    )
    workload = read_swf(path)
    assert workload.header == ("; Version: 2.2", "; Computer: test", "; late comment")
    assert [job.job_id for job in workload.jobs] == [1, 2]
    assert workload.source == str(path)
    report = workload.report
    assert (report.lines, report.job_lines, report.jobs_kept, report.skipped) == (7, 2, 2, 0)


def test_same_second_submits_kept_in_job_id_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        swf_line(job_id=3, submit=5),
        swf_line(job_id=2, submit=5),
        swf_line(job_id=1, submit=9),
        swf_line(job_id=4, submit=0),
    )
    assert [(j.job_id, j.submit) for j in read_swf(path).jobs] == [
        (4, 0.0),
        (2, 5.0),
        (3, 5.0),
        (1, 9.0),
    ]


def test_run_time_zero_and_fractional_times_kept(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(job_id=1, run=0), swf_line(job_id=2, submit=1.5, run=2.25))
    jobs = read_swf(path).jobs
    expected = [(0.0, 0.0, 0.0), (1.5, 2.25, 2.25)]
    assert [(j.submit, j.run_time, j.estimate) for j in jobs] == expected


@pytest.mark.parametrize("lenient", [False, True])
def test_unknown_run_time_and_size_skipped_and_reported(tmp_path: Path, lenient: bool) -> None:
    path = write(
        tmp_path,
        swf_line(job_id=1),
        swf_line(job_id=2, run=-1),  # line 4
        swf_line(job_id=3, alloc=-1, req=-1),  # line 5
        swf_line(job_id=4, alloc=0, req=0),  # line 6
        swf_line(job_id=5, run=-1, alloc=-1),  # line 7: counted as run time only
        swf_line(job_id=6, submit=3),
    )
    workload = read_swf(path, lenient=lenient)
    assert [job.job_id for job in workload.jobs] == [1, 6]
    report = workload.report
    assert report.anomalies == {"unknown_run_time": 2, "unknown_size": 2}
    assert report.examples == {"unknown_run_time": (4, 7), "unknown_size": (5, 6)}
    assert (report.job_lines, report.jobs_kept, report.skipped) == (6, 2, 4)


def test_examples_capped_but_counts_complete(tmp_path: Path) -> None:
    lines = [swf_line(job_id=i, run=-1) for i in range(1, 9)] + [swf_line(job_id=99)]
    report = read_swf(write(tmp_path, *lines)).report
    assert report.anomalies == {"unknown_run_time": 8}
    assert report.examples["unknown_run_time"] == (3, 4, 5, 6, 7)


MALFORMED = [
    # (bad line, kind, message after "path:4: ")
    (swf_line(job_id=2) + " -1", "field_count", "expected 18 fields, got 19"),
    ("2 1 -1 10 4", "field_count", "expected 18 fields, got 5"),
    (
        swf_line(job_id=2).replace(" -1 -1 -1", " abc -1 -1", 1),
        "non_numeric",
        f"field 6 (average CPU time): 'abc' {NOT_ASCII}",
    ),
    # Python's float() takes these; an SWF reader must not
    (
        swf_line(job_id="\u0661\u0662"),
        "non_numeric",
        f"field 1 (job id): '\u0661\u0662' {NOT_ASCII}",
    ),
    (swf_line(job_id=2, run="1_0"), "non_numeric", f"field 4 (run time): '1_0' {NOT_ASCII}"),
    (
        swf_line(job_id=0),
        "bad_job_id",
        "field 1 (job id): job id 0 is not positive; valid: an integer in [1, 2^53 - 1]",
    ),
    (
        swf_line(job_id=-1),
        "bad_job_id",
        "field 1 (job id): job id -1 is not positive; valid: an integer in [1, 2^53 - 1]",
    ),
    (
        swf_line(job_id=2, submit="4e18"),
        "time_too_large",
        f"field 2 (submit time): 4e18 s {TOO_LARGE}",
    ),
    (
        swf_line(job_id=2, req_time=2**51),
        "time_too_large",
        f"field 9 (requested time): {2**51} s {TOO_LARGE}",
    ),
    (
        swf_line(job_id=2, submit="nan"),
        "not_finite",
        "field 2 (submit time): 'nan' is not a finite number",
    ),
    (
        swf_line(job_id=2, run="inf"),
        "not_finite",
        "field 4 (run time): 'inf' is not a finite number",
    ),
    (
        swf_line(job_id=2, alloc=2.5),
        "non_integer",
        "field 5 (allocated processors): '2.5' is not an integer",
    ),
    (swf_line(job_id=2.5), "non_integer", "field 1 (job id): '2.5' is not an integer"),
    (
        swf_line(job_id=2, submit=-3),
        "negative_submit",
        "field 2 (submit time): negative submit time -3",
    ),
    (
        swf_line(job_id=2, run=-5),
        "negative_run_time",
        "field 4 (run time): negative run time -5 (only -1, unknown, may be negative)",
    ),
    (
        swf_line(job_id=1, submit=4),
        "duplicate_job_id",
        "field 1 (job id): duplicate job id 1 (first on line 3)",
    ),
]


@pytest.mark.parametrize(("bad", "kind", "message"), MALFORMED, ids=[m[1] for m in MALFORMED])
def test_malformed_line_raises_with_file_line_field(
    tmp_path: Path, bad: str, kind: str, message: str
) -> None:
    path = write(tmp_path, swf_line(job_id=1), bad, swf_line(job_id=3, submit=9))
    with pytest.raises(TraceFormatError) as caught:
        read_swf(path)
    assert str(caught.value) == f"{path}:4: {message}"
    assert caught.value.path == str(path)
    assert caught.value.line == 4


@pytest.mark.parametrize(("bad", "kind", "message"), MALFORMED, ids=[m[1] for m in MALFORMED])
def test_lenient_skips_and_counts_malformed(
    tmp_path: Path, bad: str, kind: str, message: str
) -> None:
    path = write(tmp_path, swf_line(job_id=1), bad, swf_line(job_id=3, submit=9))
    workload = read_swf(path, lenient=True)
    assert [job.job_id for job in workload.jobs] == [1, 3]
    assert workload.report.anomalies == {kind: 1}
    assert workload.report.examples == {kind: (4,)}
    assert workload.report.job_lines == 3


def test_lenient_counts_every_kind_together(tmp_path: Path) -> None:
    lines = [swf_line(job_id=1)] + [bad for bad, _, _ in MALFORMED]
    lines += [swf_line(job_id=50, run=-1), swf_line(job_id=51, alloc=-1), swf_line(job_id=52)]
    report = read_swf(write(tmp_path, *lines), lenient=True).report
    expected = {kind: sum(1 for _, k, _ in MALFORMED if k == kind) for _, kind, _ in MALFORMED}
    expected |= {"unknown_run_time": 1, "unknown_size": 1}
    assert report.anomalies == expected
    assert report.jobs_kept == 2
    assert report.job_lines == len(lines)


def test_field_of_error_is_exposed(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(run=-7))
    with pytest.raises(TraceFormatError) as caught:
        read_swf(path)
    assert caught.value.field == "4 (run time)"


def test_empty_trace_raises_no_jobs(tmp_path: Path) -> None:
    path = write(tmp_path, "", header=HEADER)
    with pytest.raises(TraceFormatError, match=r"no jobs: the file has no job lines"):
        read_swf(path)
    empty = tmp_path / "empty.swf"
    empty.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="no jobs"):
        read_swf(empty)


def test_all_jobs_skipped_raises_no_jobs(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(job_id=1, run=-1), swf_line(job_id=2, alloc=-1))
    with pytest.raises(TraceFormatError) as caught:
        read_swf(path)
    assert str(caught.value) == (
        f"{path}: no jobs: all 2 job lines skipped (unknown_run_time: 1, unknown_size: 1)"
    )


def test_missing_or_unreadable_file_is_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.swf"
    with pytest.raises(ConfigError, match=re.escape(f"cannot read trace {missing}: No such file")):
        read_swf(missing)
    directory = re.escape(f"cannot read trace {tmp_path}: Is a directory")
    with pytest.raises(ConfigError, match=directory):
        read_swf(tmp_path)


def test_gzip_reads_like_plain(tmp_path: Path) -> None:
    plain = write(tmp_path, swf_line(job_id=1), swf_line(job_id=2, submit=3, run=-1))
    packed = tmp_path / "t.swf.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = read_swf(plain), read_swf(packed)
    assert (a.jobs, a.header, a.report) == (b.jobs, b.header, b.report)


def test_corrupt_gzip_is_trace_format_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.swf.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"not really deflate data" * 3)
    with pytest.raises(TraceFormatError, match="corrupt gzip data"):
        read_swf(path)


def test_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "crlf.swf"
    path.write_bytes(f"; head\r\n{swf_line(job_id=1)}\r\n{swf_line(job_id=2, run=-1)}\r\n".encode())
    workload = read_swf(path)
    assert workload.header == ("; head",)
    assert [j.job_id for j in workload.jobs] == [1]
    assert workload.report.examples == {"unknown_run_time": (3,)}


def test_fast_and_slow_paths_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(
        tmp_path,
        swf_line(job_id=5, submit=2, req=8),
        "",
        swf_line(job_id=2, submit=2, run=-1),
        swf_line(job_id=3, submit=1, alloc=-1),
        swf_line(job_id=4, submit=7.5, run=0, req_time=30),
    )
    fast = read_swf(path)
    monkeypatch.setattr(swf, "parse_fast", lambda data: None)
    assert read_swf(path) == fast


def test_write_read_round_trip(tmp_path: Path) -> None:
    jobs = (
        Job(1, 0.0, 10.0, 60.0, units=4, user=3, queue=1),
        Job(2, 0.5, 0.0, 0.0, units=1),
        Job(7, 12.25, 3.5, 3.5, units=128, user=-1, queue=-1),
    )
    for name in ("out.swf", "out.swf.gz"):
        path = tmp_path / name
        write_swf(jobs, path, header=["Version: 2.2", "; Note: x"])
        workload = read_swf(path)
        assert workload.jobs == jobs
        assert workload.header == ("; Version: 2.2", "; Note: x")
    packed = (tmp_path / "out.swf.gz").read_bytes()
    assert gzip.decompress(packed) == (tmp_path / "out.swf").read_bytes()


def test_gzip_output_is_reproducible(tmp_path: Path) -> None:
    jobs = [Job(1, 0.0, 10.0, 60.0, units=4)]
    write_swf(jobs, tmp_path / "a.swf.gz")
    write_swf(jobs, tmp_path / "b.swf.gz")
    assert (tmp_path / "a.swf.gz").read_bytes() == (tmp_path / "b.swf.gz").read_bytes()


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (Job(1, 0.0, 1.0, 1.0, units=2, unit=(4, 1, 0, 0)), "SWF holds processor counts only"),
        (Job(1, 0.0, 1.0, 1.0, bb=5.0), "SWF holds processor counts only"),
        (Job(0, 0.0, 1.0, 1.0), "SWF job ids are positive"),
        (Job(1, 0.0, 5.0, 0.0), "estimate must be > 0 or equal the run time"),
    ],
)
def test_write_rejects_what_swf_cannot_hold(tmp_path: Path, job: Job, message: str) -> None:
    with pytest.raises(ConfigError, match=f"job {job.job_id}: {message}"):
        write_swf([job], tmp_path / "x.swf")


def test_write_rejects_duplicate_ids_and_bad_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="job 1: duplicate job id"):
        write_swf([Job(1, 0.0, 1.0, 1.0), Job(1, 1.0, 1.0, 1.0)], tmp_path / "x.swf")
    with pytest.raises(ConfigError, match="cannot write trace"):
        write_swf([Job(1, 0.0, 1.0, 1.0)], tmp_path / "missing" / "x.swf")


times = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)


@st.composite
def job_lists(draw: st.DrawFn) -> list[Job]:
    n = draw(st.integers(min_value=1, max_value=12))
    ids = draw(st.lists(st.integers(1, 10**9), min_size=n, max_size=n, unique=True))
    jobs = []
    for job_id in ids:
        run = draw(times)
        estimate = draw(st.one_of(st.just(run), st.floats(min_value=1e-3, max_value=1e9)))
        jobs.append(
            Job(
                job_id,
                draw(times),
                run,
                estimate,
                units=draw(st.integers(1, 10**6)),
                user=draw(st.integers(-1, 500)),
                queue=draw(st.integers(-1, 40)),
            )
        )
    return sorted(jobs, key=lambda job: (job.submit, job.job_id))


@settings(max_examples=40, deadline=None)
@given(jobs=job_lists())
def test_round_trip_property(tmp_path_factory: pytest.TempPathFactory, jobs: list[Job]) -> None:
    path = tmp_path_factory.mktemp("rt") / "p.swf"
    write_swf(jobs, path)
    assert read_swf(path).jobs == tuple(jobs)


def test_trace_info_and_format(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        swf_line(job_id=1, submit=0, run=100, alloc=2, req_time=50, user=1),
        swf_line(job_id=2, submit=86400, run=10, alloc=4, req_time=20, user=2, queue=3),
        swf_line(job_id=3, run=-1),
    )
    info = trace_info(read_swf(path))
    assert info["jobs"] == 2 and info["skipped"] == 1
    assert info["span_days"] == 1.0
    assert info["procs"] == {"min": 2.0, "median": 3.0, "mean": 3.0, "max": 4.0}
    assert info["run_exceeds_estimate"] == 1
    assert info["accuracy"]["median"] == 1.25
    assert (info["users"], info["queues"]) == (2, [2, 3])
    assert info["anomalies"] == {"unknown_run_time": 1}
    text = format_trace_info(info)
    assert "unknown_run_time: 1 (e.g. lines 5)" in text
    assert "run > estimate   1 jobs" in text


REAL = [
    ("KTH-SP2-1996-2.1-cln.swf.gz", 27_992, 27_992, {}),
    ("NASA-iPSC-1993-3.1-cln.swf.gz", 18_239, 18_239, {}),
    ("HPC2N-2002-2.1-cln.swf.gz", 202_876, 202_876, {}),
    ("CEA-Curie-2011-2.1-cln.swf.gz", 312_826, 312_807, {"unknown_size": 19}),
]


@pytest.mark.traces
@pytest.mark.parametrize(
    ("name", "job_lines", "kept", "anomalies"), REAL, ids=[r[0].split("-")[0] for r in REAL]
)
def test_real_trace_counts(name: str, job_lines: int, kept: int, anomalies: dict[str, int]) -> None:
    path = SHARED_TRACES / name
    if not path.is_file():
        pytest.skip(f"real trace {path} absent (../shared/traces not available)")
    workload = read_swf(path)
    assert workload.report.job_lines == job_lines
    assert len(workload.jobs) == workload.report.jobs_kept == kept
    assert workload.report.anomalies == anomalies
    assert workload.header and workload.header[0].startswith(";")
    submits = [job.submit for job in workload.jobs]
    assert submits == sorted(submits)
    if name.startswith("HPC2N"):
        assert sum(job.run_time > job.estimate for job in workload.jobs) == 14_817


def test_swf_refuses_a_negative_run_time_other_than_minus_one(tmp_path: Path):
    # Mutation: ``run < 0 and run != -1`` loosened to ``run < -1`` (-0.5 would pass).
    line = "1 0 -1 {run} 4 -1 -1 4 -1 -1 1 7 -1 -1 2 -1 -1 -1\n"
    path = tmp_path / "t.swf"
    path.write_text(line.format(run=10) + line.format(run=-0.5).replace("1 0", "2 0", 1))
    with pytest.raises(
        TraceFormatError, match=r"t\.swf:2: field 4 \(run time\): negative run time -0\.5"
    ):
        read_swf(path)
    assert len(read_swf(path, lenient=True).jobs) == 1
