"""A streamed replay (trace streamed in, results written in chunks) writes what the list
path writes: the same jobs.csv, segments.csv, timeseries.csv and config.json bytes, the same
summary.json apart from wall-clock timings, and a jobs.parquet that reads back equal."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest
from conftest import real_trace

from market_hpc.cli import main
from market_hpc.experiment import config_from_dict
from market_hpc.experiment.run import Result, simulate
from market_hpc.experiment.streaming import StreamedResult, can_stream, simulate_streaming

TIMINGS = (
    "dispatch_seconds",
    "mean_dispatch_ms",
    "p99_dispatch_ms",
    "max_dispatch_ms",
    "simulation_seconds",
    "dispatch_cpu_seconds",
    "cpu_per_decision_ms",
    "run_cpu_seconds",
)


def swf_line(
    job_id: int, submit: float, run: float = 10, procs: int = 4, req_time: float = -1
) -> str:
    fields = [
        job_id,
        submit,
        -1,
        run,
        procs,
        -1,
        -1,
        procs,
        req_time,
        -1,
        1,
        3,
        -1,
        -1,
        1,
        -1,
        -1,
        -1,
    ]
    return " ".join(str(f) for f in fields)


def synthetic_trace(path: Path, n: int = 400, shuffle: bool = True) -> Path:
    """Jobs with ties, a few too large for 16 cores (rejected), skipped lines (unknown
    run time, size, submit; one sharing a kept job's id) and, shuffled, out of order."""
    rng = random.Random(7)
    lines = []
    for job_id in range(1, n + 1):
        submit = float(rng.randrange(0, 4 * n, 3))
        procs = 64 if job_id % 97 == 0 else rng.choice([1, 2, 4, 8, 16])
        lines.append(
            swf_line(job_id, submit, rng.choice([0, 5, 60, 600]), procs, rng.choice([-1, 700]))
        )
    lines += [
        swf_line(n + 1, 5, run=-1),
        swf_line(n + 2, -1),
        swf_line(7, 30, procs=-1),
        " ".join(["-1"] * 18),
    ]
    if shuffle:
        rng.shuffle(lines)
    else:
        lines.sort(key=lambda text: float(text.split()[1]))
    path.write_text("; synthetic\n" + "\n".join(lines) + "\n")
    return path


def compare(
    config: dict, tmp_path: Path, chunk_rows: int | None = None
) -> tuple[Result, StreamedResult]:
    run_config = config_from_dict(config)
    assert can_stream(run_config)
    whole = simulate(run_config)
    streamed = simulate_streaming(run_config)
    assert isinstance(streamed, StreamedResult)
    if chunk_rows is not None:
        streamed.chunk_rows = chunk_rows
    whole.write(tmp_path / "whole")
    streamed.write(tmp_path / "streamed")
    for name in ("jobs.csv", "segments.csv", "timeseries.csv", "config.json"):
        assert (tmp_path / "streamed" / name).read_bytes() == (
            tmp_path / "whole" / name
        ).read_bytes(), name
    summaries = [
        json.loads((tmp_path / folder / "summary.json").read_text())
        for folder in ("whole", "streamed")
    ]
    for summary in summaries:
        for key in TIMINGS:
            summary.pop(key)
    assert summaries[0] == summaries[1]
    assert list(summaries[0]) == list(summaries[1])
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "streamed" / "jobs.parquet"),
        pd.read_parquet(tmp_path / "whole" / "jobs.parquet"),
    )
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "streamed" / "segments.parquet"),
        pd.read_parquet(tmp_path / "whole" / "segments.parquet"),
    )
    pd.testing.assert_frame_equal(streamed.jobs, whole.jobs)
    pd.testing.assert_frame_equal(streamed.timeseries, whole.timeseries)
    return whole, streamed


@pytest.mark.traces
@pytest.mark.parametrize(
    ("scheduler", "first_n"), [pytest.param("easy", None, marks=pytest.mark.slow), ("fifo", 6000)]
)
def test_kth_replay_identical(tmp_path: Path, scheduler: str, first_n: int | None) -> None:
    trace = str(real_trace("KTH-SP2-1996-2.1-cln.swf.gz"))
    window = {} if first_n is None else {"first_n": first_n}
    compare(
        {
            "name": "kth",
            "platform": "nodes=100,cores=1",
            "workload": {"trace": trace, **window},
            "policy": {"scheduler": scheduler, "allocator": "first-fit"},
        },
        tmp_path,
        chunk_rows=5000,
    )


@pytest.mark.parametrize("chunk_rows", [5, 50_000])
@pytest.mark.parametrize("shuffle", [False, True])
def test_skipped_and_rejected_rows_merge_across_chunks(
    tmp_path: Path, shuffle: bool, chunk_rows: int
) -> None:
    trace = synthetic_trace(tmp_path / "s.swf", shuffle=shuffle)
    whole, _ = compare(
        {
            "name": "s",
            "platform": "nodes=4,cores=4",
            "workload": {"trace": str(trace)},
            "policy": {"scheduler": "easy"},
        },
        tmp_path,
        chunk_rows,
    )
    jobs = whole.jobs
    assert set(jobs["status"]) == {"finished", "rejected", "skipped"}
    assert (jobs["job_id"] == 7).sum() == 2


@pytest.mark.parametrize(
    "workload",
    [
        {"first_n": 150},
        {"start": 300.0, "end": 900.0},
        {"start": 300.0, "first_n": 40},
        {"load_factor": 1.7},
        {"load_factor": 1e17, "first_n": 30},
        {"end": 600.0, "load_factor": 0.5},
    ],
)
def test_windows_and_load_factor_identical(tmp_path: Path, workload: dict) -> None:
    trace = synthetic_trace(tmp_path / "s.swf")
    compare(
        {
            "name": "s",
            "platform": "nodes=4,cores=4",
            "timeseries": False,
            "workload": {"trace": str(trace), **workload},
            "policy": {"scheduler": "fifo"},
        },
        tmp_path,
        64,
    )


def test_rejected_reason_without_skipped_lines(tmp_path: Path) -> None:
    trace = tmp_path / "r.swf"
    trace.write_text("\n".join([swf_line(1, 0), swf_line(2, 1, procs=99), swf_line(3, 2)]) + "\n")
    whole, _ = compare(
        {"name": "r", "platform": "nodes=2,cores=2", "workload": {"trace": str(trace)}},
        tmp_path,
        chunk_rows=1,
    )
    assert whole.jobs["reason"].dtype == object


def test_replay_command_streams(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = synthetic_trace(tmp_path / "s.swf")
    out = tmp_path / "out"
    assert (
        main(
            [
                "replay",
                str(trace),
                "--platform",
                "nodes=4,cores=4",
                "--scheduler",
                "easy",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "jobs_skipped           4" in capsys.readouterr().out
    config = config_from_dict(
        {
            "name": "s.swf",
            "platform": "nodes=4,cores=4",
            "workload": {"trace": str(trace)},
            "policy": {"scheduler": "easy"},
        }
    )
    simulate(config).write(tmp_path / "whole")
    assert (out / "jobs.csv").read_bytes() == (tmp_path / "whole" / "jobs.csv").read_bytes()


def test_other_workloads_fall_back_to_simulate() -> None:
    config = config_from_dict(
        {
            "name": "g",
            "platform": "nodes=4,cores=4",
            "workload": {"generator": "lublin-feitelson", "jobs": 20},
        }
    )
    assert not can_stream(config)
    assert isinstance(simulate_streaming(config), Result)


def test_checked_stream_needs_no_id_set(tmp_path: Path) -> None:
    from market_hpc.core.model import HPCModel
    from market_hpc.experiment.streaming import CheckedJobs, TraceJobs
    from market_hpc.workload.swf_stream import stream_swf

    trace = synthetic_trace(tmp_path / "s.swf", shuffle=False)
    spec = config_from_dict(
        {"name": "s", "platform": "nodes=4,cores=4", "workload": {"trace": str(trace)}}
    ).workload
    checked = HPCModel(
        CheckedJobs(iter(TraceJobs(stream_swf(trace), spec))), "nodes=4,cores=4", "fifo"
    )
    plain = HPCModel(iter(stream_swf(trace)), "nodes=4,cores=4", "fifo")
    assert checked._stream_ids is None and plain._stream_ids == set()
    checked.run()
    plain.run()
    pd.testing.assert_frame_equal(checked.recorder.jobs_frame(), plain.recorder.jobs_frame())
