"""The recorder's vectorised text against the straightforward definitions.

* ``runs_text`` (every allocation's ``nodes`` text at once, in numpy) against
  ``format_runs`` job by job, on random runs;
* ``csv_text`` (CSV cells formatted by Arrow) against ``DataFrame.to_csv``, on random
  frames of every column kind the results have, and the pandas fallback;
* a whole recorder (buffered rows, flushed in bulk; frame, chunked ``jobs.csv``, rows,
  time series, segments) against a reference that keeps one plainly formatted row per
  job as it leaves: multi-run and multi-resource allocations, jobs held and resumed on
  other nodes (several segments), dropped, rejected, never started (``queued``), and the
  skipped trace lines of a streamed replay.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from market.test_holding import Scripted
from market.test_market import overload_jobs
from market_fixtures import market_job
from test_streaming_replay import synthetic_trace

from market_hpc.algorithms.runs_text import runs_strings, runs_text
from market_hpc.algorithms.valuecurve import StepCurve
from market_hpc.core.job_columns import JobColumns
from market_hpc.core.model import HPCModel
from market_hpc.core.recorder import (
    JOB_COLUMNS,
    TIMESERIES_COLUMNS,
    Recorder,
    format_allocation,
    format_runs,
)
from market_hpc.csv_text import csv_bytes, csv_parts, write_csv
from market_hpc.domain.job import Job, JobStatus
from market_hpc.domain.platform import load_platform
from market_hpc.experiment import config_from_dict, segments_out
from market_hpc.experiment.results_out import write_jobs
from market_hpc.experiment.run import with_reasons
from market_hpc.experiment.streaming import StreamedResult, simulate_streaming
from market_hpc.policies import Drop, Hold, Start


def random_runs(
    rng: np.random.Generator, n_jobs: int, max_digits: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """Flat runs of ``n_jobs`` jobs: none, one or several runs each, node ids of 1 to
    ``max_digits`` digits, units of 1 to 3."""
    runs: list[int] = []
    offsets = [0]
    for _ in range(n_jobs):
        for _ in range(int(rng.choice([0, 1, 1, 2, 5]))):
            runs += [
                int(rng.integers(0, 10 ** rng.integers(1, max_digits + 1))),
                int(rng.integers(1, 6)),
                int(rng.integers(1, 10 ** rng.integers(1, 4))),
            ]
        offsets.append(len(runs))
    return np.array(runs, dtype=np.int32), np.array(offsets, dtype=np.int64)


@pytest.mark.parametrize("long_slice", [0, 64, 10**9])
@pytest.mark.parametrize("seed", range(8))
def test_runs_text_equals_format_runs(
    seed: int, long_slice: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways of copying the slices (one gather; ``bytes.join`` from ``_LONG_SLICE``
    mean bytes per run: 0 always joins, 10^9 never) give ``format_runs``' text."""
    import market_hpc.algorithms.runs_text as module

    monkeypatch.setattr(module, "_LONG_SLICE", long_slice)
    rng = np.random.default_rng(seed)
    runs, offsets = random_runs(rng, int(rng.integers(0, 300)))
    n_jobs = len(offsets) - 1
    rows = (
        rng.integers(0, max(n_jobs, 1), int(rng.integers(0, 2 * n_jobs + 1)))
        if n_jobs
        else np.zeros(0, int)
    )
    expected = [format_runs(runs[offsets[i] : offsets[i + 1]].tolist()) for i in rows]
    assert runs_strings(runs, offsets, rows) == expected


def test_runs_text_pieces_and_long_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text split into many pieces (a tiny piece size), runs of thousands of nodes."""
    import market_hpc.algorithms.runs_text as module

    rng = np.random.default_rng(11)
    runs, offsets = random_runs(rng, 400, max_digits=4)
    runs[1::3] = rng.integers(1, 400, len(runs) // 3)  # long runs
    rows = np.arange(len(offsets) - 1)
    whole = runs_text(runs, offsets, rows)
    monkeypatch.setattr(module, "_CHUNK_BYTES", 64)
    pieces = runs_text(runs, offsets, rows)
    assert np.array_equal(whole[0], pieces[0]) and np.array_equal(whole[1], pieces[1])
    expected = [format_runs(runs[offsets[i] : offsets[i + 1]].tolist()) for i in rows]
    assert runs_strings(runs, offsets, rows) == expected
    monkeypatch.setattr(module, "_TABLE_BUDGET", 0)  # every piece job by job
    assert runs_strings(runs, offsets, rows) == expected


def test_runs_text_without_tables_for_huge_node_ids() -> None:
    """Node ids of 9 digits with hundreds of units values: no table of a billion nodes."""
    rng = np.random.default_rng(5)
    runs, offsets = random_runs(rng, 200, max_digits=9)
    rows = np.arange(len(offsets) - 1)
    expected = [format_runs(runs[offsets[i] : offsets[i + 1]].tolist()) for i in rows]
    assert runs_strings(runs, offsets, rows) == expected


def random_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    magnitudes = 10.0 ** rng.integers(-12, 22, n)
    floats = np.where(
        rng.random(n) < 0.5,
        np.round(rng.standard_normal(n) * magnitudes),
        rng.standard_normal(n) * magnitudes,
    )
    special = np.array(
        [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e16, -1e16, 9999999999999998.0, 1e-4, 2.0**63, 5e-324]
    )
    floats[rng.integers(0, n, n // 5)] = rng.choice(special, n // 5)
    texts = np.array(["finished", "0:1;1:1", "", "ü-ß", "rejected", "12:3"], dtype=object)
    reasons = np.array(
        [np.nan, None, "request larger than the platform", "line 3: run time unknown"], dtype=object
    )
    return pd.DataFrame(
        {
            "f": floats,
            "g": rng.integers(0, 10**6, n).astype(float),
            "i": rng.integers(-(2**62), 2**62, n),
            "s": pd.Series(rng.choice(texts, n)).astype(str),
            "o": pd.Series(rng.choice(texts, n), dtype=object),
            "reason": pd.Series(rng.choice(reasons, n), dtype=object),
            "nan": np.full(n, np.nan),
            "whole_last": rng.integers(-99, 99, n).astype(float),  # its ".0" ends the line
        }
    )


@pytest.mark.parametrize("seed", range(6))
def test_csv_bytes_equal_to_csv(seed: int) -> None:
    rng = np.random.default_rng(seed)
    frame = random_frame(rng, int(rng.integers(1, 400)))
    assert csv_parts(frame) is not None  # the fast path, not the fallback
    for header in (True, False):
        assert csv_bytes(frame, header) == frame.to_csv(index=False, header=header).encode()
    assert csv_bytes(frame.iloc[:0]) == frame.iloc[:0].to_csv(index=False).encode()
    handle = io.BytesIO()
    write_csv(frame.iloc[:5], handle)
    write_csv(frame.iloc[5:], handle, header=False)
    assert handle.getvalue() == frame.to_csv(index=False).encode()
    handle = io.BytesIO()
    write_csv(frame, handle, slice_rows=7)  # formatted 7 rows at a time
    assert handle.getvalue() == frame.to_csv(index=False).encode()


def test_csv_falls_back_to_pandas_for_what_it_does_not_format() -> None:
    quoted = pd.DataFrame({"a": ["x,y", 'say "hi"', "two\nlines"], "b": [1, 2, 3]})
    others = pd.DataFrame(
        {
            "flag": [True, False],
            "small": np.array([1.5, 2.25], dtype=np.float32),
            "mixed": pd.Series([1, "a"], dtype=object),
        }
    )
    for frame in (quoted, others, quoted.rename(columns={"a": "a,b"})):
        assert csv_parts(frame) is None
        assert csv_bytes(frame) == frame.to_csv(index=False).encode()


class ReferenceRecorder(Recorder):
    """A recorder that also keeps the straightforward row of every job as it leaves (the
    allocation formatted pair by pair), every sample and every segment as tuples."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.plain_rows: list[tuple] = []
        self.plain_samples: list[tuple] = []
        self.plain_segments: list[tuple] = []
        self.plain_segment_nodes: list[str] = []  # each segment's allocation, as recorded

    def job_left(self, job, status, first_start, end, busy_time, hold_count, value, allocation):  # type: ignore[no-untyped-def]
        super().job_left(job, status, first_start, end, busy_time, hold_count, value, allocation)
        started = first_start is not None
        units = job.units if job.profile is None or not allocation else allocation[0][1]
        start = first_start if started else math.nan
        row = {
            "job_id": job.job_id,
            "submit_time": float(job.submit),
            "start_time": float(start),
            "end_time": float(end)
            if status in (JobStatus.FINISHED, JobStatus.DROPPED)
            else math.nan,
            "wait_time": float(start - job.submit),
            "run_time": float(busy_time) if started else math.nan,
            "status": status.value,
            "cores": units * job.unit[0],
            "gpus": units * job.unit[1],
            "mics": units * job.unit[2],
            "mem": units * job.unit[3],
            "bb": float(job.bb),
            "units": units,
            "estimate": float(job.estimate),
            "user": job.user,
            "queue": job.queue,
            "nodes": ";".join(f"{node}:{count}" for node, count in allocation)
            if allocation
            else "",
            "value": float(value),
            "hold_count": hold_count,
        }
        self.plain_rows.append(tuple(row[name] for name in JOB_COLUMNS))

    def segment(self, *values) -> None:  # type: ignore[no-untyped-def]
        super().segment(*values)
        self.plain_segments.append(values[:6])  # the segments_frame() columns
        self.plain_segment_nodes.append(format_allocation(values[6]))

    def sample(self, model) -> None:  # type: ignore[no-untyped-def]
        before = len(self._samples)
        super().sample(model)
        width = len(TIMESERIES_COLUMNS)
        if len(self._samples) > before:
            self.plain_samples.append(tuple(self._samples.values()[-width:]))


def run_with_reference(jobs, platform, policy, **kwargs) -> HPCModel:  # type: ignore[no-untyped-def]
    if isinstance(policy, str):
        model = HPCModel(jobs, platform, policy, **kwargs)
    else:
        model = HPCModel(jobs, platform, policy=policy, **kwargs)
    model.recorder = ReferenceRecorder(model.platform, model.recorder.record_timeseries)
    model.run()
    return model


def check_against_reference(recorder: ReferenceRecorder, tmp_path: Path) -> pd.DataFrame:
    expected = pd.DataFrame.from_records(recorder.plain_rows, columns=list(JOB_COLUMNS))
    expected = expected.sort_values("job_id", kind="stable").reset_index(drop=True)
    frame = recorder.jobs_frame()
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)
    for row, plain in zip(recorder.rows, recorder.plain_rows, strict=True):
        assert all(
            a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))
            for a, b in zip(row, plain, strict=True)
        ), (row, plain)
    for chunk_rows in (3, 100_000):
        recorder.write_jobs_csv(tmp_path / "jobs.csv", chunk_rows=chunk_rows)
        assert (tmp_path / "jobs.csv").read_bytes() == expected.to_csv(index=False).encode()
    segments = pd.DataFrame.from_records(
        recorder.plain_segments, columns=list(recorder.segments_frame().columns)
    )
    pd.testing.assert_frame_equal(
        recorder.segments_frame(), segments.astype({"job_id": np.int64, "units": np.int64})
    )
    # a finished segment's nodes read from its job's row, a held one's from its own runs
    assert list(recorder.segment_table()["nodes"]) == recorder.plain_segment_nodes
    check_segment_files(recorder, tmp_path)
    if recorder.plain_samples:
        samples = np.array(recorder.plain_samples, dtype=np.float64)
        assert np.array_equal(recorder.samples, samples)
    return frame


def check_segment_files(recorder: ReferenceRecorder, tmp_path: Path) -> None:
    """``segments.csv`` and ``.parquet`` written beside ``jobs.csv`` (a finished segment's
    ``nodes`` text taken from its job's chunk) and on their own are ``segments_frame``'s,
    whatever the chunks; every finished segment took its text from its job's."""
    frame = segments_out.segments_frame(recorder)
    finished = int((frame["ended"] == "finished").sum())
    for chunk_rows in (1, 3, 100_000):
        beside, alone = tmp_path / f"beside{chunk_rows}", tmp_path / f"alone{chunk_rows}"
        beside.mkdir(exist_ok=True)
        alone.mkdir(exist_ok=True)
        with segments_out.SegmentFiles(beside, recorder, chunk_rows) as files:
            write_jobs(beside, recorder, [], chunk_rows, files)
        assert files.shared == finished
        assert segments_out.write_segments(alone, recorder, chunk_rows) == len(frame)
        for folder in (beside, alone):
            assert (folder / "segments.csv").read_bytes() == frame.to_csv(index=False).encode()
            read = pd.read_parquet(folder / "segments.parquet")
            pd.testing.assert_frame_equal(read.astype(frame.dtypes.to_dict()), frame)


def test_held_resumed_dropped_queued_rejected_multi_resource(tmp_path: Path) -> None:
    """A scripted run: job 1 (4 units of 2 cores + 1 GPU) starts on three nodes, is held,
    resumes elsewhere, is held again and finishes (three segments); job 2 is dropped from
    the queue; job 3 never starts (``queued`` at the end); job 4 is larger than the
    platform (rejected); job 5 runs on one node with two units."""
    gpu = (2, 1, 0, 0)
    jobs = [
        Job(1, 0.0, 90.0, 100.0, units=4, unit=gpu, user=7, queue=2),
        Job(2, 1.0, 10.0, 10.0, units=2),
        Job(3, 2.0, 10.0, 10.0, units=3),
        Job(4, 3.0, 10.0, 10.0, units=99),
        Job(5, 4.0, 20.0, 30.0, units=2, unit=gpu),
    ]
    script = {
        0.0: (Start(1, ((0, 2), (1, 1), (3, 1))),),
        10.0: (Hold(1),),
        20.0: (Start(1, ((4, 2), (5, 2))), Start(5, ((0, 2),))),
        30.0: (Hold(1), Drop(2)),
        40.0: (Start(1, ((1, 1), (2, 1), (3, 1), (5, 1))),),
    }
    model = run_with_reference(jobs, "nodes=6,cores=4,gpus=2", Scripted(script))
    frame = check_against_reference(model.recorder, tmp_path).set_index("job_id")
    assert frame.loc[1, "nodes"] == "1:1;2:1;3:1;5:1" and frame.loc[1, "hold_count"] == 2
    assert frame.loc[1, "gpus"] == 4 and frame.loc[1, "cores"] == 8
    assert list(frame["status"]) == ["finished", "dropped", "queued", "rejected", "finished"]
    assert (model.recorder.segments_frame()["job_id"] == 1).sum() == 3


@pytest.mark.parametrize("seed", range(3))
def test_random_multi_resource_runs(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    jobs = []
    for job_id in range(1, 151):
        unit = (2, 1, 0, 0) if rng.random() < 0.3 else (1, 0, 0, 0)
        units = int(rng.integers(1, 9)) if rng.random() > 0.03 else 500  # a few too large
        run = float(rng.integers(0, 40))
        jobs.append(
            Job(
                job_id,
                float(rng.integers(0, 300)),
                run,
                run + float(rng.integers(0, 20)),
                units=units,
                unit=unit,
                user=int(rng.integers(0, 5)),
            )
        )
    for scheduler, allocator in (("easy", "best-fit"), ("fifo", "first-fit")):
        model = run_with_reference(jobs, "nodes=5,cores=4,gpus=1", scheduler, allocator=allocator)
        frame = check_against_reference(model.recorder, tmp_path)
        assert {"finished", "rejected"} <= set(frame["status"])
        assert frame["nodes"].str.count(";").max() >= 2  # multi-node allocations


def test_market_holds_and_drops(tmp_path: Path) -> None:
    model = run_with_reference(overload_jobs(seed=1, n=60), "hlrs-3x9", "maxvh", hold_penalty=0.2)
    frame = check_against_reference(model.recorder, tmp_path)
    assert model.recorder.holds > 0 and (frame["status"] == "dropped").any()
    assert (frame["hold_count"] > 0).any()


def test_flushes_in_bulk_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows moved into the arrays every 7 jobs (and read in between) give the same results."""
    monkeypatch.setattr(JobColumns, "FLUSH_JOBS", 7)
    jobs = [
        market_job(i, float(i), (30.0, 16.0, 11.0), StepCurve(50.0, 500.0)) for i in range(1, 40)
    ]
    model = HPCModel(jobs, "hlrs-3x9", "maxvh")
    model.recorder = ReferenceRecorder(model.platform, True)
    for until in (10, 20, 35):
        model.run(until=until)
        assert len(model.recorder.jobs) == len(model.recorder.plain_rows)
        assert len(model.recorder.jobs_frame()) == len(model.recorder.plain_rows)
    model.run()
    check_against_reference(model.recorder, tmp_path)


def test_streamed_results_with_skipped_lines_equal_the_plain_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``replay``'s chunked writer (skipped lines and rejected jobs merged in by job id)
    against the reference rows through ``with_reasons`` and ``to_csv``."""
    monkeypatch.setattr("market_hpc.core.model.Recorder", ReferenceRecorder)
    trace = synthetic_trace(tmp_path / "s.swf")
    config = config_from_dict(
        {
            "name": "s",
            "platform": "nodes=4,cores=4",
            "workload": {"trace": str(trace)},
            "policy": {"scheduler": "easy"},
        }
    )
    streamed = simulate_streaming(config)
    assert isinstance(streamed, StreamedResult) and isinstance(streamed.recorder, ReferenceRecorder)
    plain = pd.DataFrame.from_records(streamed.recorder.plain_rows, columns=list(JOB_COLUMNS))
    expected = with_reasons(
        plain.sort_values("job_id", kind="stable").reset_index(drop=True), streamed.skipped
    )
    series = pd.DataFrame(
        np.array(streamed.recorder.plain_samples), columns=list(TIMESERIES_COLUMNS)
    )
    series = series.astype(
        {name: np.int64 for name in TIMESERIES_COLUMNS if name not in ("time", "profit")}
    )
    for chunk_rows in (5, 10_000):
        streamed.chunk_rows = chunk_rows
        out = streamed.write(tmp_path / f"out{chunk_rows}")
        assert (out / "jobs.csv").read_bytes() == expected.to_csv(index=False).encode()
        assert (out / "timeseries.csv").read_bytes() == series.to_csv(index=False).encode()
    assert set(expected["status"]) == {"finished", "rejected", "skipped"}


def test_a_finished_segments_job_leaves_next_on_its_allocation() -> None:
    """A finished segment takes its ``nodes`` from its job's row: the recorder refuses a
    job that leaves on another allocation, or a second finished segment before it."""
    platform = load_platform("nodes=2,cores=1")
    job = Job(1, 0.0, 5.0, 5.0)
    recorder = Recorder(platform, False)
    recorder.segment(1, 0.0, 5.0, 1, 0.0, 1.0, ((0, 1),), (1, 0, 0, 0))
    with pytest.raises(RuntimeError, match="segment of job 2 finished before"):
        recorder.segment(2, 0.0, 5.0, 1, 0.0, 1.0, ((1, 1),), (1, 0, 0, 0))
    recorder = Recorder(platform, False)
    recorder.segment(1, 0.0, 5.0, 1, 0.0, 1.0, ((0, 1),), (1, 0, 0, 0))
    with pytest.raises(RuntimeError, match="job 1 left on another allocation"):
        recorder.job_left(job, JobStatus.FINISHED, 0.0, 5.0, 5.0, 0, 0.0, ((1, 1),))
    recorder = Recorder(platform, False)
    held, final = ((1, 1),), ((0, 1),)
    recorder.segment(1, 0.0, 2.0, 1, 0.0, 0.4, held, (1, 0, 0, 0), held=True)
    recorder.segment(1, 3.0, 6.0, 1, 0.4, 1.0, final, (1, 0, 0, 0))
    assert list(recorder.segment_table()["nodes"]) == ["1:1", "0:1"]  # read before it left
    recorder.job_left(job, JobStatus.FINISHED, 0.0, 6.0, 5.0, 1, 0.0, final)
    assert list(recorder.segment_table()["nodes"]) == ["1:1", "0:1"]
    assert recorder.busy_resource_seconds.tolist() == [5.0, 0.0, 0.0, 0.0]


def test_segment_files_take_no_text_from_another_job_of_the_same_id(tmp_path: Path) -> None:
    """The model refuses duplicate job ids, but a recorder fed by hand may hold two jobs with
    one id in different ``jobs.csv`` chunks: each finished segment keeps its own job's text."""
    platform = load_platform("nodes=3,cores=1")
    recorder = Recorder(platform, False)
    for row, (job_id, node) in enumerate(((1, 0), (2, 1), (1, 2))):
        allocation = ((node, 1),)
        recorder.segment(job_id, 0.0, 5.0, 1, 0.0, 1.0, allocation, (1, 0, 0, 0))
        recorder.job_left(
            Job(job_id, float(row), 5.0, 5.0), JobStatus.FINISHED, 0.0, 5.0, 5.0, 0, 0.0, allocation
        )
    frame = segments_out.segments_frame(recorder)
    assert list(frame["nodes"]) == ["0:1", "2:1", "1:1"]  # by job id, then recording order
    with segments_out.SegmentFiles(tmp_path, recorder, 1) as files:
        write_jobs(tmp_path, recorder, [], 1, files)
    assert (tmp_path / "segments.csv").read_bytes() == frame.to_csv(index=False).encode()
    assert files.shared == 2  # the second job 1's segment was not in the first chunk
