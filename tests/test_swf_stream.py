"""The streaming SWF reader gives what ``read_swf`` gives: jobs, order, report, header,
skipped lines and errors, on real traces and on synthetic files (unsorted, gzip, skipped
and malformed lines)."""

from __future__ import annotations

import gzip
import random
import re
from pathlib import Path

import pytest
from conftest import real_trace
from hypothesis import given, settings
from hypothesis import strategies as st

from market_hpc.errors import ConfigError, MarketHpcError, TraceFormatError
from market_hpc.workload import read_swf
from market_hpc.workload.swf_stream import SwfStream, stream_swf


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


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def outcome(read, path: Path, lenient: bool) -> tuple[object, ...]:
    """What a reader gives: the workload's parts, or the error's type and text."""
    try:
        workload = read(path, lenient=lenient)
    except MarketHpcError as exc:
        return (type(exc).__name__, str(exc))
    return (
        tuple(workload) if isinstance(workload, SwfStream) else workload.jobs,
        workload.header,
        workload.report,
        workload.skipped,
    )


def assert_same(path: Path, lenient: bool = False) -> None:
    expected = outcome(read_swf, path, lenient)
    assert outcome(stream_swf, path, lenient) == expected


@pytest.mark.traces
@pytest.mark.parametrize(
    "name",
    [
        "KTH-SP2-1996-2.1-cln.swf.gz",
        "NASA-iPSC-1993-3.1-cln.swf.gz",
        pytest.param("HPC2N-2002-2.1-cln.swf.gz", marks=pytest.mark.slow),
        pytest.param("CEA-Curie-2011-2.1-cln.swf.gz", marks=pytest.mark.slow),
    ],
)
def test_real_traces_stream_as_read(name: str) -> None:
    path = real_trace(name)
    workload, stream = read_swf(path), stream_swf(path)
    assert stream.sorted  # archive traces are in submit order: nothing is held back
    assert len(stream) == len(workload.jobs)
    assert (stream.header, stream.report, stream.skipped) == (
        workload.header,
        workload.report,
        workload.skipped,
    )
    assert tuple(stream) == workload.jobs
    assert tuple(stream) == workload.jobs  # iterable again (second pass each time)


@pytest.mark.traces
def test_shuffled_real_trace_comes_out_sorted(tmp_path: Path) -> None:
    lines = (
        gzip.decompress(real_trace("KTH-SP2-1996-2.1-cln.swf.gz").read_bytes()).decode().split("\n")
    )
    header = [line for line in lines if line.startswith(";")]
    jobs = [line for line in lines if line.strip() and not line.startswith(";")][:4000]
    random.Random(13).shuffle(jobs)
    path = write(tmp_path, "\n".join(header + jobs) + "\n", "shuffled.swf.gz")
    stream = stream_swf(path)
    assert not stream.sorted
    assert tuple(stream) == read_swf(path).jobs


def test_nearly_sorted_file_holds_back_only_the_disorder(tmp_path: Path) -> None:
    lines = [swf_line(job_id=i, submit=10 * i) for i in range(1, 201)]
    lines[100], lines[101] = lines[101], lines[100]
    path = write(tmp_path, "\n".join(lines) + "\n")
    stream = stream_swf(path)
    assert not stream.sorted
    jobs = iter(stream)
    # the first 100 jobs come out before the swapped pair is even read
    assert [next(jobs).job_id for _ in range(100)] == list(range(1, 101))
    assert [job.job_id for job in jobs] == list(range(101, 201))


SAMPLES = {
    "plain": [swf_line(1, 0), swf_line(2, 5, req=8), swf_line(3, 5, req_time=600)],
    "unsorted with ties": [swf_line(9, 5), swf_line(2, 5), swf_line(4, 1), swf_line(3, 0.5, run=0)],
    "unknown lines": [
        swf_line(1, 0),
        " ".join(["-1"] * 18),
        swf_line(3, -1),
        swf_line(4, 2, alloc=-1),
        swf_line(5, "x", run=-1),
        swf_line(6, 4),
    ],
    "comments and blanks": [
        "",
        "   ",
        swf_line(1, 0) + " ; trailing",
        "\t; indented header",
        "x ; not a header",
        swf_line(2, 1),
    ],
    "crlf": [swf_line(1, 0) + "\r", "; head\r", swf_line(2, 3) + "\r"],
    "malformed": [
        swf_line(1, 0),
        swf_line(2, 1) + " -1",
        swf_line(3, "nan"),
        swf_line(4, 2, alloc=2.5),
        swf_line(5, -3),
        swf_line(6, 4, run=-5),
        swf_line(1, 5),
        swf_line(7, 6),
        swf_line(8, 6).replace(" -1 -1 -1", " abc -1 -1", 1),
    ],
    "duplicates after a decrease": [
        swf_line(5, 0),
        swf_line(3, 1),
        swf_line(5, 2),
        swf_line(3, 3),
        swf_line(9, 4),
    ],
    "all skipped": [" ".join(["-1"] * 18), swf_line(2, 1, run=-1)],
    "no job lines": ["; only a header", ""],
    "latin-1 bytes": [swf_line(1, 0) + " ; caf\xe9", swf_line(2, 1)],
    "non-ASCII and out-of-range numbers": [
        swf_line(0, 0),
        swf_line(-2, 1),
        swf_line("\u0661\u0662", 2),
        swf_line(4, "4e18"),
        swf_line(5, 1, run="1_0"),
        swf_line(6, 3),
    ],
    "bare cr": [swf_line(1, 0), swf_line(2, 1) + "\r" + swf_line(3, 2)],
}


@pytest.mark.parametrize("lenient", [False, True])
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_synthetic_files_stream_as_read(tmp_path: Path, name: str, gz: bool, lenient: bool) -> None:
    text = "; Version: 2.2\n; Computer: test\n" + "\n".join(SAMPLES[name]) + "\n"
    assert_same(write(tmp_path, text, "t.swf.gz" if gz else "t.swf"), lenient)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("\ufeff", None),  # a UTF-8 byte-order mark is skipped
        ("\ufeff\ufeff", "field 1 (job id): '\\ufeff1' is not an ASCII number"),  # only one is
    ],
)
def test_byte_order_mark_read_as_streamed(
    tmp_path: Path, gz: bool, start: str, expected: str | None
) -> None:
    path = write(
        tmp_path,
        start + swf_line(1, 0) + "\n" + swf_line(2, 1) + "\n",
        "t.swf.gz" if gz else "t.swf",
    )
    assert_same(path)
    if expected is None:
        assert [job.job_id for job in read_swf(path).jobs] == [1, 2]
    else:
        with pytest.raises(TraceFormatError, match=re.escape(f"{path}:1: {expected}")):
            read_swf(path)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_wide_text_is_named(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "t.swf"
    path.write_bytes(("; h\n" + swf_line(1, 0) + "\n").encode(encoding))
    name = encoding.upper()
    for read in (read_swf, stream_swf):
        with pytest.raises(
            TraceFormatError, match=f"t.swf:1: the file is {name} text .*SWF is ASCII"
        ):
            read(path)


@pytest.mark.parametrize("gz", [False, True])
def test_bare_cr_line_ends_are_named(tmp_path: Path, gz: bool) -> None:
    # Old Mac text: every line ends in a bare CR; read as one line it had "no job lines".
    text = "; h\r" + swf_line(1, 0) + "\r" + swf_line(2, 1) + "\r"
    path = write(tmp_path, text, "t.swf.gz" if gz else "t.swf")
    for read in (read_swf, stream_swf):
        with pytest.raises(TraceFormatError, match=r"t\.swf(\.gz)?:1: bare CR line end .*tr"):
            read(path)
    # a bare CR after a thousand good CRLF lines is named on its own line
    lines = "".join(swf_line(i, i) + "\r\n" for i in range(1, 1001))
    path = write(
        tmp_path, lines + swf_line(1001, 1001) + "\r" + swf_line(1002, 1002) + "\n", "u.swf"
    )
    for read in (read_swf, stream_swf):
        with pytest.raises(TraceFormatError, match=r"u\.swf:1001: bare CR"):
            read(path)


def test_error_names_file_line_and_field_before_any_job(tmp_path: Path) -> None:
    path = write(tmp_path, "; h\n" + swf_line(1, 0) + "\n" + swf_line(2, 1, alloc=2.5) + "\n")
    with pytest.raises(TraceFormatError) as error:
        stream_swf(path)
    assert str(error.value) == f"{path}:3: field 5 (allocated processors): '2.5' is not an integer"
    assert (error.value.line, error.value.field) == (3, "5 (allocated processors)")


def test_gzip_corruption_reported_as_read_swf_does(tmp_path: Path) -> None:
    good = gzip.compress(("\n".join(swf_line(i, i) for i in range(1, 2000)) + "\n").encode())
    bad_line = gzip.compress(
        ("x\n" + "\n".join(swf_line(i, i) for i in range(1, 2000)) + "\n").encode()
    )
    for index, data in enumerate(
        (b"\x1f\x8b\x08\x00" + b"not deflate" * 3, good[:-40], bad_line[:-40])
    ):
        path = tmp_path / f"bad{index}.swf.gz"
        path.write_bytes(data)
        expected = outcome(read_swf, path, False)
        assert expected[0] == "TraceFormatError" and "corrupt gzip data" in expected[1]
        assert outcome(stream_swf, path, False) == expected


def test_missing_file_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read trace"):
        stream_swf(tmp_path / "absent.swf")


def test_file_changed_between_passes_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(1, 0) + "\n" + swf_line(2, 1) + "\n")
    stream = stream_swf(path)
    path.write_text(swf_line(1, 0) + "\n")
    with pytest.raises(TraceFormatError, match="file changed while it was read"):
        list(stream)


def lines_strategy() -> st.SearchStrategy[list[str]]:
    ids = st.integers(1, 12)
    submits = st.sampled_from([0, 1, 1, 2, 3.5, 7, 100, -1, -3, "nan"])
    runs = st.sampled_from([0, 5, 10, -1, -5, "inf"])
    allocs = st.sampled_from([1, 4, -1, 0, 2.5])
    job = st.builds(
        swf_line,
        ids,
        submits,
        runs,
        allocs,
        st.sampled_from([-1, 8, 0]),
        st.sampled_from([-1, 0, 600]),
    )
    other = st.sampled_from(
        ["", "; comment", "1 2 3", " ".join(["-1"] * 18), swf_line(3, 1) + " 9"]
    )
    return st.lists(st.one_of(job, job, job, other), max_size=14)


@settings(max_examples=60, deadline=None)
@given(lines=lines_strategy(), lenient=st.booleans(), gz=st.booleans())
def test_random_files_stream_as_read(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], lenient: bool, gz: bool
) -> None:
    path = write(
        tmp_path_factory.mktemp("r"), "\n".join(lines) + "\n", "r.swf.gz" if gz else "r.swf"
    )
    assert_same(path, lenient)
