"""The vectorised (block) passes of the streaming SWF reader give what ``read_swf`` gives,
whatever the block size: block boundaries inside headers, between unknown lines, between
duplicate ids; irregular files go to the line-by-line pass; one definition of the request
and estimate rules."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from conftest import real_trace
from hypothesis import given, settings

from market_hpc.errors import MarketHpcError, TraceFormatError
from market_hpc.workload import read_swf
from market_hpc.workload.swf import N_FIELDS, request_and_estimate
from market_hpc.workload.swf_blocks import scan_blocks
from market_hpc.workload.swf_stream import SwfStream
from tests.test_swf_stream import SAMPLES, lines_strategy, swf_line, write

# (pass-1 block, pass-2 block) in bytes: one line per block, a few lines, the defaults.
BLOCKS = [(1, 1), (64, 200), (300, 7), (1 << 22, 1 << 20)]


def outcome(path: Path, lenient: bool, blocks: tuple[int, int] | None) -> tuple[object, ...]:
    try:
        if blocks is None:
            workload = read_swf(path, lenient=lenient)
            return workload.jobs, workload.header, workload.report, workload.skipped
        stream = SwfStream(path, lenient=lenient, block_bytes=blocks)
        return tuple(stream), stream.header, stream.report, stream.skipped
    except MarketHpcError as exc:
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("blocks", BLOCKS)
@pytest.mark.parametrize("lenient", [False, True])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_in_blocks_read_as_read_swf(
    tmp_path: Path, name: str, lenient: bool, blocks: tuple[int, int]
) -> None:
    text = "; Version: 2.2\n; Computer: test\n" + "\n".join(SAMPLES[name]) + "\n"
    for file_name in ("t.swf", "t.swf.gz"):
        path = write(tmp_path, text, file_name)
        assert outcome(path, lenient, blocks) == outcome(path, lenient, None)


@settings(max_examples=60, deadline=None)
@given(lines=lines_strategy())
def test_random_files_in_small_blocks(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = write(tmp_path_factory.mktemp("b"), "\n".join(lines), "r.swf")  # no final newline
    for lenient in (False, True):
        expected = outcome(path, lenient, None)
        for blocks in BLOCKS[:3]:
            assert outcome(path, lenient, blocks) == expected


def regular_file(tmp_path: Path, n: int = 60) -> tuple[Path, list[str]]:
    lines = ["; Version: 2.2", "; Computer: test"]
    for i in range(1, n + 1):
        lines.append(swf_line(i, 10 * i, req=8 if i % 3 else -1, req_time=600 if i % 2 else -1))
        if i % 7 == 0:
            lines += [
                " ".join(["-1"] * 18),
                swf_line(1000 + i, -1),
                "; a header line in the middle",
                "",
            ]
    return write(tmp_path, "\n".join(lines) + "\n", "reg.swf.gz"), lines


@pytest.mark.parametrize("blocks", BLOCKS)
def test_regular_file_takes_the_block_passes(tmp_path: Path, blocks: tuple[int, int]) -> None:
    path, _ = regular_file(tmp_path)
    stream = SwfStream(path, block_bytes=blocks)
    assert stream._dropped is None  # no line-by-line pass
    assert stream.report.anomalies == {"unknown_run_time": 8, "unknown_submit": 8}
    assert outcome(path, False, blocks) == outcome(path, False, None)
    assert tuple(stream) == tuple(stream)  # iterable again


def test_id_repeated_across_blocks_goes_to_the_line_pass(tmp_path: Path) -> None:
    path = write(tmp_path, "\n".join([swf_line(1, 0), swf_line(2, 1), swf_line(1, 2)]) + "\n")
    assert scan_blocks(str(path), 1) is None
    with pytest.raises(TraceFormatError) as error:
        SwfStream(path, block_bytes=(1, 1))
    assert str(error.value) == f"{path}:3: field 1 (job id): duplicate job id 1 (first on line 1)"
    assert outcome(path, True, (1, 1)) == outcome(path, True, None)


def test_unsorted_blocks_come_out_sorted(tmp_path: Path) -> None:
    order = [5, 1, 4, 2, 3, 9, 8, 7, 6]
    path = write(tmp_path, "\n".join(swf_line(i, 10 * i) for i in order) + "\n")
    stream = SwfStream(path, block_bytes=(100, 100))
    assert not stream.sorted and stream._dropped is None
    assert [job.job_id for job in stream] == sorted(order)


def test_short_line_is_an_error_not_an_unknown_line(tmp_path: Path) -> None:
    """A truncated line whose run time reads -1 is malformed (pandas pads short lines with
    NaN, which the vectorised pass now hands to the line-by-line pass)."""
    short = " ".join(["2", "5", "-1", "-1"] + ["4"] * 13)  # 17 fields
    path = write(tmp_path, swf_line(1, 0) + "\n" + short + "\n")
    message = f"{path}:2: expected 18 fields, got 17"
    with pytest.raises(TraceFormatError) as error:
        read_swf(path)
    assert str(error.value) == message
    assert outcome(path, False, (1 << 22, 1 << 20)) == ("TraceFormatError", message)
    assert read_swf(path, lenient=True).report.anomalies == {"field_count": 1}


def test_one_block_file_changed_before_pass_two_is_read_again(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(1, 0) + "\n" + swf_line(2, 1) + "\n")
    stream = SwfStream(path)
    assert stream._rows is not None  # parsed once
    path.write_text(swf_line(1, 0) + "\n" + swf_line(2, 1, run=99) + "\n")
    assert [job.run_time for job in stream] == [10.0, 99.0]


@pytest.mark.traces
def test_kth_in_small_blocks(tmp_path: Path) -> None:
    data = gzip.decompress(real_trace("KTH-SP2-1996-2.1-cln.swf.gz").read_bytes())
    path = tmp_path / "kth.swf"
    path.write_bytes(data[: data.rfind(b"\n", 0, len(data) // 3) + 1])
    stream = SwfStream(path, block_bytes=(50_000, 30_000))
    assert stream._dropped is None and stream._rows is None
    workload = read_swf(path)
    assert (stream.header, stream.report, stream.skipped) == (
        workload.header,
        workload.report,
        workload.skipped,
    )
    assert tuple(stream) == workload.jobs


def test_one_request_rule_for_jobs_and_skipped_lines(tmp_path: Path) -> None:
    rows = np.full((4, N_FIELDS), -1.0)
    rows[:, 3] = 30.0
    rows[:, 4] = [4, 0, 4, np.nan]
    rows[:, 7] = [8, 2, -1, 16]
    rows[:, 8] = [0, 60, np.nan, 90]
    procs, estimates = request_and_estimate(rows)
    assert procs.tolist() == [8, 2, 4, 16] and estimates.tolist() == [30, 60, 30, 90]
    path = write(
        tmp_path, "\n".join([swf_line(1, -1, alloc=4, req=8, req_time=600), swf_line(2, 1)]) + "\n"
    )
    (record,) = read_swf(path).skipped.records()
    assert (record["procs"], record["estimate"]) == (8, 600.0)


def test_numbers_only_python_reads_go_line_by_line(tmp_path: Path) -> None:
    """``float`` reads ``1_0`` (the C reader does not): the batch of pass 2 falls back to
    converting line by line, with the same jobs as ``read_swf``."""
    lines = [swf_line(1, 0, run="1_0"), swf_line(2, 1), swf_line(3, 2, alloc=2.5)]
    path = write(tmp_path, "\n".join(lines) + "\n")
    expected = outcome(path, True, None)
    assert expected[0][0].run_time == 10.0  # type: ignore[index]
    assert outcome(path, True, (1 << 22, 1 << 20)) == expected
