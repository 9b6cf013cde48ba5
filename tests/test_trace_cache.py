"""A sweep's worker reads each trace once (market_hpc/workload/trace_cache.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from market_hpc.errors import ConfigError
from market_hpc.workload import trace_cache
from market_hpc.workload.trace_cache import CACHED_TRACES, read_swf_cached

LINE = "{job} {submit} -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 1 -1 -1 -1\n"


def _trace(path: Path, jobs: int) -> Path:
    path.write_text("".join(LINE.format(job=j + 1, submit=j) for j in range(jobs)))
    return path


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    trace_cache.clear()


def test_the_same_unchanged_file_is_read_once(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.swf", 3)
    first = read_swf_cached(trace)
    assert read_swf_cached(trace) is first
    assert read_swf_cached(str(trace)) is first


def test_a_file_changed_on_disk_is_read_again(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.swf", 3)
    assert len(read_swf_cached(trace).jobs) == 3
    _trace(trace, 5)
    stat = trace.stat()
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert len(read_swf_cached(trace).jobs) == 5


def test_lenient_and_strict_reads_are_kept_apart(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.swf", 2)
    assert read_swf_cached(trace) is not read_swf_cached(trace, lenient=True)


def test_the_cache_keeps_only_the_newest_traces(tmp_path: Path) -> None:
    traces = [_trace(tmp_path / f"t{i}.swf", 1) for i in range(CACHED_TRACES + 1)]
    first = read_swf_cached(traces[0])
    for trace in traces[1:]:
        read_swf_cached(trace)
    assert read_swf_cached(traces[0]) is not first


def test_a_missing_trace_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read trace .*nowhere\.swf"):
        read_swf_cached(tmp_path / "nowhere.swf")
