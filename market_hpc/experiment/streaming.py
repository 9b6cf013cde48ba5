"""Replay a trace in bounded memory: the trace streamed in, the results streamed out.

``market-hpc replay`` and ``market-hpc run`` go through :func:`simulate_streaming`. For a
plain trace replay (an SWF trace, optionally windowed with ``start``/``end``/``first_n``
and scaled with ``load_factor``; no accelerators, recorded GPU requests, burst buffers,
market rule or queues)
it gives the same results as :func:`~market_hpc.experiment.run.simulate`, bit for bit,
while

* the trace is read by :func:`~market_hpc.workload.swf_stream.stream_swf` (checked in a
  first pass, jobs built as the model asks for them: no list of jobs);
* the summary is computed by the same ``metrics.summarize`` on a frame of only the nine
  columns it reads (``results_out.summary_frame`` and the allocated ``cores``; no
  allocation text);
* ``jobs.csv`` and ``jobs.parquet`` are written ``chunk_rows`` rows at a time from the
  recorder's columns, with the ``reason`` column and the skipped trace lines merged in by
  job id, as the whole frame would give them (:mod:`market_hpc.experiment.results_out`).

Every other configuration falls back to ``simulate``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import math
import time
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.core.metrics import summarize
from market_hpc.core.model import release_model
from market_hpc.core.recorder import Recorder
from market_hpc.domain.job import Job
from market_hpc.domain.platform import load_platform
from market_hpc.experiment.config import RunConfig, WorkloadConfig
from market_hpc.experiment.out_dir import staged_out_dir
from market_hpc.experiment.results_out import summary_frame, summary_series, write_results
from market_hpc.experiment.run import (
    SKIPPED_KEY,
    Result,
    run_model,
    simulate,
    skipped_in_window,
    summary_extra,
    with_reasons,
)
from market_hpc.workload.burst_buffer import load_over_span, with_capacity
from market_hpc.workload.gpu_requests import read_gpu_requests
from market_hpc.workload.swf_stream import stream_swf
from market_hpc.workload.transform import check_window_keeps_jobs, scaled, windowed


def can_stream(config: RunConfig) -> bool:
    """Whether ``config`` is a plain trace replay that :func:`simulate_streaming` streams.

    A scheduler that does not run rigid jobs (the market auctions, ``easy-mold``) is not
    streamed: ``simulate`` reads the whole workload first and refuses it before the run,
    counting the jobs it cannot run. Nor is a trace whose side file records GPU requests
    (:mod:`market_hpc.workload.gpu_requests`): ``simulate`` gives the jobs their GPUs.
    """
    from market_hpc.policies.registry import scheduler_entry

    spec = config.workload
    return (
        spec.trace is not None
        and config.queues.strategy is None
        and not spec.accelerators.enabled
        and not spec.burst_buffer.enabled
        and not spec.market
        and scheduler_entry(config.policy.scheduler).capabilities.handles("rigid")
        and not read_gpu_requests(spec.trace)
    )


class TraceJobs:
    """The configured part of a streamed trace, in ``(submit, job_id)`` order.

    Applies ``build_workload``'s transforms in its order (time window, ``first_n``, load
    factor) to a :class:`~market_hpc.workload.swf_stream.SwfStream` as jobs are drawn,
    and remembers the largest submit time handed out before scaling (what
    ``skipped_in_window`` needs for ``first_n``).
    """

    def __init__(self, stream: Any, spec: WorkloadConfig) -> None:
        self.stream = stream
        self.spec = spec
        self.count = 0
        self.last_submit = -math.inf
        self.work = array("d")  # cores x run time of each job handed out (after scaling)
        self.submits = [math.inf, -math.inf]  # first and last submit handed out (after scaling)
        # each job's id and recorded run time, as handed out (the every-job metrics; 16 B a job)
        self.ids = array("q")
        self.run_times = array("d")

    def expected(self) -> int | None:
        """Jobs the iteration yields, when known without reading the trace again."""
        if self.spec.start is not None or self.spec.end is not None:
            return None
        n = len(self.stream)
        return n if self.spec.first_n is None else min(n, self.spec.first_n)

    def __iter__(self) -> Iterator[Job]:
        spec = self.spec
        jobs = windowed(self.stream, spec.start, spec.end, spec.first_n, by_submit=True)
        if spec.load_factor != 1.0:
            return self._measured(_scaled(self._counted(jobs), spec.load_factor), False)
        return self._measured(jobs, True)  # (counted and measured in one pass)

    def _measured(self, jobs: Iterator[Job], count: bool) -> Iterator[Job]:
        """``jobs``, each one's work, submit, id and run time kept (and, with ``count``,
        counted as :meth:`_counted` does: one generator per job instead of two)."""
        add_work, add_id, add_run_time = self.work.append, self.ids.append, self.run_times.append
        submits = self.submits
        for job in jobs:
            submit, run_time = job.submit, job.run_time
            if count:
                self.count += 1
                self.last_submit = submit
            add_work(job.units * job.unit[0] * run_time)  # job.cores x run time
            add_id(job.job_id)
            add_run_time(run_time)
            if submit < submits[0]:  # (min without the call)  # noqa: PLR1730
                submits[0] = submit
            if submit > submits[1]:  # noqa: PLR1730
                submits[1] = submit
            yield job

    def offered_load(self, total_cores: int) -> dict[str, float]:
        """``run.offered_load`` of the jobs handed out, bit for bit (``math.fsum`` is exact,
        so it needs the products, not their order; a streamed run has no burst buffer)."""
        span = self.submits[1] - self.submits[0] if self.work else 0.0
        return {"offered_load_cores": load_over_span(self.work, total_cores, span)}

    def _counted(self, jobs: Iterator[Job]) -> Iterator[Job]:
        for job in jobs:
            self.count += 1
            self.last_submit = job.submit
            yield job


class CheckedJobs:
    """An iterator of jobs its producer has checked: sorted by ``(submit, job_id)``, ids
    unique (``stream_swf`` checks both, and the windows and load scaling of
    :class:`TraceJobs` keep them). ``HPCModel`` then keeps no set of every id it saw."""

    presorted_unique = True

    def __init__(self, jobs: Iterator[Job]) -> None:
        self._jobs = jobs

    def __iter__(self) -> CheckedJobs:
        return self

    def __next__(self) -> Job:
        return next(self._jobs)

    @property
    def unwrapped(self) -> Iterator[Job]:
        """The checked iterator itself (the model reads it directly once it has seen the
        flag: no wrapper call per job)."""
        return self._jobs


def _scaled(jobs: Iterator[Job], factor: float) -> Iterator[Job]:
    """``scale_load`` as a stream (``transform.scaled``: the first job's submit is the
    origin, the jobs come sorted), jobs whose scaled submit times collapse onto one value
    coming out by job id, as the model's sort of the scaled list orders them.

    >>> jobs = [Job(2, 10.0, 1.0, 1.0), Job(1, 10.5, 1.0, 1.0), Job(3, 12.0, 1.0, 1.0)]
    >>> [(job.job_id, job.submit) for job in _scaled(iter(jobs), 1e17)]
    [(1, 10.0), (2, 10.0), (3, 10.0)]
    """
    group: list[Job] = []
    for job in scaled(jobs, factor):
        if group and job.submit != group[0].submit:
            yield from sorted(group, key=lambda j: j.job_id)
            group.clear()
        group.append(job)
    yield from sorted(group, key=lambda j: j.job_id)


def _return_freed_memory() -> None:
    """Hand the memory the run freed back to the system (glibc's ``malloc_trim``; a no-op
    elsewhere), so the summary and the files start from the live data, not from the
    run's high-water mark of small objects."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@dataclass
class StreamedResult:
    """What a streamed run produced: ``Result``'s interface, frames built on demand.

    ``jobs`` and ``timeseries`` build the same frames as ``Result`` holds (costly for
    10^6 jobs: use them for small runs and tests); :meth:`write` never builds them.
    """

    config: RunConfig
    recorder: Recorder
    summary: dict[str, Any]
    workload_report: dict[str, Any] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    chunk_rows: int = 10_000

    @property
    def jobs(self) -> pd.DataFrame:
        """The ``jobs.csv`` frame (as ``Result.jobs``)."""
        return with_reasons(self.recorder.jobs_frame(), self.skipped)

    @property
    def timeseries(self) -> pd.DataFrame:
        """The ``timeseries.csv`` frame (as ``Result.timeseries``)."""
        return self.recorder.timeseries_frame()

    def write(
        self, out: str | Path, overwrite: bool = False, carry: Mapping[str, Path] | None = None
    ) -> Path:
        """Write the results folder (same files and text as ``Result.write``), whole or
        not at all (see ``out_dir.staged_out_dir``).

        Args:
            out: The results folder.
            overwrite: Replace an existing, non-empty ``out`` (nothing of it is kept).
            carry: Files to copy in with the results, by name in ``out``.

        Raises:
            OutputError: ``out`` cannot be written, or holds files and not ``overwrite``.
        """
        with staged_out_dir(out, overwrite, carry) as directory:
            write_results(
                directory,
                self.config,
                self.recorder,
                self.summary,
                self.workload_report,
                self.skipped,
                self.chunk_rows,
            )
        return Path(out)


def simulate_streaming(config: RunConfig, progress: bool = False) -> Result | StreamedResult:
    """``simulate(config)``, streamed when :func:`can_stream` says so.

    Args:
        config: The validated run configuration.
        progress: Show a progress bar on stderr (only when it is a terminal).
    """
    if not can_stream(config):
        return simulate(config, progress=progress)
    cpu_began = time.process_time()
    spec = config.workload
    platform = with_capacity(load_platform(config.platform), spec.burst_buffer)
    stream = stream_swf(spec.trace, lenient=spec.lenient)  # type: ignore[arg-type]
    read_gpu_requests(
        stream.source, stream.header
    )  # (none, as can_stream found; a missing side file raises)
    report: dict[str, Any] = {
        "source": stream.source,
        **dataclasses.asdict(stream.report),
        "trace_lines_skipped": stream.report.skipped,
    }
    skipped = stream.skipped.records()
    check_window_keeps_jobs(stream.submits, spec.start, spec.end, stream.source)
    jobs = TraceJobs(stream, spec)
    ids, run_times = jobs.ids, jobs.run_times  # the every-job metrics' recorded run times
    model, elapsed = run_model(
        config,
        platform,
        CheckedJobs(iter(jobs)),
        jobs.expected(),
        progress,
    )
    recorder, platform = model.recorder, model.platform
    extra = summary_extra(model, config, report, elapsed)
    release_model(model)
    del model  # (with its Mesa agents; collected before the summary's frames are built)
    gc.collect()
    _return_freed_memory()
    order = recorder.job_order()
    frame = summary_frame(recorder).assign(
        cores=recorder.jobs.field("cores", order), job_id=recorder.jobs.field("job_id", order)
    )
    recorded = pd.Series(
        np.frombuffer(run_times, dtype=np.float64), index=np.frombuffer(ids, dtype=np.int64)
    )
    summary = summarize(
        frame,
        summary_series(recorder, platform.total, platform.burst_buffer),
        platform.total,
        recorder.busy_resource_seconds,
        extra,
        burst_buffer=platform.burst_buffer,
        recorded_run_times=recorded,
    )
    summary["trace_lines_skipped_by_reason"] = dict(report.get("anomalies", {}))
    if skipped:
        skipped = skipped_in_window(skipped, spec, jobs.last_submit)
    summary["jobs_skipped"] = len(skipped)  # the jobs.csv rows of status skipped
    summary["run_cpu_seconds"] = time.process_time() - cpu_began
    summary.update(jobs.offered_load(platform.total_cores))
    return StreamedResult(config, recorder, summary, report, skipped)


__all__ = [
    "SKIPPED_KEY",
    "StreamedResult",
    "TraceJobs",
    "can_stream",
    "simulate_streaming",
    "skipped_in_window",
]
