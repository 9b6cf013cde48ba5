"""Run one configured simulation and write its results directory."""

from __future__ import annotations

import dataclasses
import platform as _platform
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.core.metrics import summarize
from market_hpc.core.model import HPCModel, make_market_aware_policy, release_model
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform, load_platform
from market_hpc.experiment.audit_files import market_jobs_frame, segments_frame, write_audit_files
from market_hpc.experiment.config import RunConfig, WorkloadConfig, load_scenario
from market_hpc.experiment.data_warnings import estimate_fallback_entries
from market_hpc.json_text import json_text
from market_hpc.workload import scale_load
from market_hpc.workload.generators import generate
from market_hpc.workload.transform import check_window_keeps_jobs, windowed

PROVENANCE_PACKAGES = (
    "market_hpc",
    "mesa",
    "numpy",
    "pandas",
    "pyarrow",
    "networkx",
    "deap",
    "ortools",
)


@dataclass
class Result:
    """Everything one run produced."""

    config: RunConfig
    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict[str, Any]
    workload_report: dict[str, Any] = field(default_factory=dict)
    segments: pd.DataFrame | None = None  # segments.csv's frame (written when given)
    market_jobs: pd.DataFrame | None = None  # market_jobs.csv's frame (market runs)

    def write(
        self, out: str | Path, overwrite: bool = False, carry: Mapping[str, Path] | None = None
    ) -> Path:
        """Write ``jobs.csv``, ``jobs.parquet``, ``summary.json``, ``timeseries.csv``,
        ``config.json`` into ``out``, whole or not at all (see ``out_dir.staged_out_dir``).

        Args:
            out: The results folder.
            overwrite: Replace an existing, non-empty ``out`` (nothing of it is kept).
            carry: Files to copy in with the results, by name in ``out``.

        Raises:
            OutputError: ``out`` cannot be written, or holds files and not ``overwrite``.
        """
        from market_hpc.experiment.out_dir import naming, staged_out_dir

        with staged_out_dir(out, overwrite, carry) as directory:
            with naming(directory / "jobs.csv"):
                self.jobs.to_csv(directory / "jobs.csv", index=False)
            with naming(directory / "jobs.parquet"):
                self.jobs.to_parquet(directory / "jobs.parquet", index=False)
            with naming(directory / "timeseries.csv"):
                self.timeseries.to_csv(directory / "timeseries.csv", index=False)
            with naming(directory / "segments.csv"):
                write_audit_files(directory, self.segments, self.market_jobs)
            write_json_files(directory, self.summary, provenance(self.config, self.workload_report))
        return Path(out)


def write_json_files(directory: Path, summary: dict[str, Any], config: dict[str, Any]) -> None:
    """Write ``summary.json`` and ``config.json`` (strict JSON: no ``NaN``)."""
    from market_hpc.experiment.out_dir import naming

    for name, content in (("summary.json", summary), ("config.json", config)):
        with naming(directory / name):
            (directory / name).write_text(json_text(content, default=json_default))


def json_default(value: Any) -> Any:
    """Turn numpy scalars into Python numbers for ``json_text(..., default=json_default)``.

    Raises:
        TypeError: Any other value ``json`` cannot write.

    >>> json_default(np.int64(3)), json_default(np.float32(0.5))
    (3, 0.5)
    """
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def package_versions() -> dict[str, str]:
    """Versions of the packages that shape results."""
    versions = {"python": sys.version.split()[0], "platform": _platform.platform()}
    for name in PROVENANCE_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def provenance(config: RunConfig, workload_report: dict[str, Any]) -> dict[str, Any]:
    """The ``config.json`` content: config, seed, versions, workload report."""
    return {
        "config": config.to_dict(),
        "seed": config.seed,
        "versions": package_versions(),
        "workload": workload_report,
    }


def build_workload(config: RunConfig, platform: Platform) -> tuple[list[Job], dict[str, Any]]:
    """Load or generate the configured jobs and apply load scaling and windows."""
    spec = config.workload
    report: dict[str, Any] = {}
    skipped: list[dict[str, Any]] = []
    gpu_requests: dict[int, int] = {}  # the GPUs a Slurm trace recorded, by job id
    if spec.trace is not None:
        from market_hpc.workload.gpu_requests import read_gpu_requests
        from market_hpc.workload.trace_cache import read_swf_cached

        workload = read_swf_cached(
            spec.trace, lenient=spec.lenient
        )  # a sweep's worker reads each trace once
        jobs: list[Job] = list(workload.jobs)
        report = {
            "source": workload.source,
            **dataclasses.asdict(workload.report),
            "trace_lines_skipped": workload.report.skipped,
        }
        skipped = workload.skipped.records()
        gpu_requests = read_gpu_requests(spec.trace, workload.header)
    elif spec.jobset is not None:
        from market_hpc.workload.taskgraph_jobs import read_job_set

        jobs = list(read_job_set(spec.jobset))
        report = {"source": spec.jobset, "jobs_kept": len(jobs)}
    else:
        jobs, report = generate(spec, config.seed, platform)
    if spec.start is not None or spec.end is not None:
        source = spec.trace or spec.jobset or "the generated workload"
        check_window_keeps_jobs([job.submit for job in jobs], spec.start, spec.end, str(source))
    if spec.start is not None or spec.end is not None or spec.first_n is not None:
        jobs = list(
            windowed(jobs, spec.start, spec.end, spec.first_n)
        )  # as a streamed replay draws them
    if skipped:
        last_submit = (
            max((job.submit for job in jobs), default=-np.inf)
            if spec.first_n is not None
            else -np.inf
        )
        report[SKIPPED_KEY] = skipped_in_window(skipped, spec, last_submit)
    if gpu_requests:
        from market_hpc.workload.gpu_requests import apply_gpu_requests

        jobs, report["gpu_requests"] = apply_gpu_requests(
            jobs, gpu_requests, platform, str(spec.trace)
        )
    accelerators = spec.accelerators
    if (
        spec.all_families.enabled
    ):  # the all-families rule adds accelerators where the platform has them
        from market_hpc.workload.all_families import platform_accelerators

        accelerators = platform_accelerators(
            accelerators, platform, config.seed, recorded_gpus=bool(gpu_requests)
        )
    if accelerators.enabled:
        from market_hpc.workload.accelerators import add_accelerators, read_partitions
        from market_hpc.workload.gpu_requests import check_accelerator_rule

        check_accelerator_rule(accelerators, gpu_requests, str(spec.trace))

        partitions = (
            read_partitions(spec.trace) if accelerators.uses_partitions and spec.trace else None
        )
        added, report["accelerators"] = add_accelerators(jobs, accelerators, platform, partitions)
        jobs = list(added)
    if spec.load_factor != 1.0:
        jobs = list(scale_load(jobs, spec.load_factor))
    if spec.burst_buffer.enabled:
        from market_hpc.workload.burst_buffer import offered_loads, synthesize, with_capacity

        jobs, report["burst_buffer"] = synthesize(
            jobs, spec.burst_buffer, platform.total_cores, config.seed
        )
        # a target load sizes the pool from the jobs, at least their largest request
        platform = with_capacity(platform, spec.burst_buffer, jobs)
        report["burst_buffer"].update(
            capacity_gb=platform.burst_buffer,
            **offered_loads(jobs, platform.total_cores, platform.burst_buffer),
        )
    if any(job.bb > 0 for job in jobs):
        from market_hpc.workload.burst_buffer import check_requests

        check_requests(jobs, platform.burst_buffer, spec.trace or spec.jobset or "workload")
    if spec.all_families.enabled:
        from market_hpc.workload.all_families import give_every_family
        from market_hpc.workload.market_rule import MarketRule

        rule = MarketRule(serial_fraction=spec.serial_fraction, plateau_slack=spec.plateau_slack)
        jobs, report["all_families"] = give_every_family(
            jobs, rule, config.policy.scheduler, spec.all_families
        )
    elif spec.market:
        from market_hpc.workload.market_rule import MarketRule, apply_market_rule

        rule = MarketRule(serial_fraction=spec.serial_fraction, plateau_slack=spec.plateau_slack)
        jobs = apply_market_rule(jobs, rule)
        report["market_rule"] = dataclasses.asdict(rule)
    return jobs, report


SKIPPED_KEY = "_skipped_jobs"
"""Report key of the skipped trace lines listed in ``jobs.csv`` (not written to config.json)."""


def skipped_in_window(
    skipped: list[dict[str, Any]], spec: WorkloadConfig, last_submit: float
) -> list[dict[str, Any]]:
    """The skipped lines that belong to the replayed part of the trace.

    Without a window (``start``/``end``/``first_n``) every skipped line is listed. With
    one, a line is listed when its submit time is known and inside the window (for
    ``first_n``: not after the last kept job's submit); lines of unknown submit time
    then only count in the summary, since they belong to no window.

    Args:
        skipped: ``SkippedJobs.records()`` of the trace.
        spec: The workload configuration.
        last_submit: The largest submit time of the kept jobs, before load scaling
            (``-inf`` when none was kept); read only with ``first_n``.
    """
    if spec.start is None and spec.end is None and spec.first_n is None:
        return skipped
    low = spec.start if spec.start is not None else -np.inf
    high = spec.end if spec.end is not None else np.inf
    if spec.first_n is not None:
        high = min(high, np.nextafter(last_submit, np.inf))
    return [row for row in skipped if low <= row["submit"] < high]


def skipped_jobs_frame(skipped: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """``jobs.csv`` rows (status ``skipped``, with the reason) of skipped trace lines."""
    frame = pd.DataFrame(
        {
            "job_id": [row["job_id"] for row in skipped],
            "submit_time": [row["submit"] for row in skipped],
            "status": "skipped",
            "cores": [row["procs"] for row in skipped],
            "units": [row["procs"] for row in skipped],
            "estimate": [row["estimate"] for row in skipped],
            "user": [row["user"] for row in skipped],
            "queue": [row["queue"] for row in skipped],
            "reason": [row["reason"] for row in skipped],
        }
    )
    for name in ("start_time", "end_time", "wait_time", "run_time"):
        frame[name] = np.nan
    for name in ("gpus", "mics", "mem", "bb", "value", "hold_count"):
        frame[name] = 0
    frame["nodes"] = ""
    return frame[columns]


def simulate(
    config: RunConfig | str | Path, jobs: list[Job] | None = None, progress: bool = False
) -> Result:
    """Run one configured simulation in this process.

    Args:
        config: The validated run configuration, or a scenario file (``load_scenario``).
        jobs: Pre-loaded jobs (skips building the workload from ``config``).
        progress: Show a progress bar on stderr (only when it is a terminal).
    """
    if not isinstance(config, RunConfig):
        config = load_scenario(config)
    platform = load_platform(config.platform)
    from market_hpc.workload.burst_buffer import with_capacity

    platform = with_capacity(platform, config.workload.burst_buffer)
    report: dict[str, Any] = {}
    if jobs is None:
        jobs, report = build_workload(config, platform)
    platform = with_capacity(platform, config.workload.burst_buffer, jobs)
    from market_hpc.policies.registry import check_composition

    check_composition(
        config.policy.scheduler, jobs, platform
    )  # refuse what it lacks before the run
    cpu_began = time.process_time()  # the policy's cost: queue planning, the run, the summary
    if config.queues.strategy is not None:  # hybrid-queue runs (Kondameedi & Vadhiyar)
        from market_hpc.experiment.queues import queue_run, queue_summary

        run = queue_run(config, jobs, platform)
        began = time.perf_counter()
        run.model.run()
        result = collect(run.model, config, report, time.perf_counter() - began, jobs)
        queue_summary(result.summary, result.jobs, run, jobs, config)
        release_model(run.model)
    else:
        model, elapsed = run_model(config, platform, jobs, len(jobs), progress)
        result = collect(model, config, report, elapsed, jobs)
        result.market_jobs = market_jobs_frame(jobs, result.jobs, config.policy.hold_penalty)
        release_model(model)  # a sweep worker runs many: Mesa 3.3 would keep each one
    result.summary["run_cpu_seconds"] = time.process_time() - cpu_began
    result.summary.update(offered_load(jobs, platform))
    if config.workload.all_families.enabled:  # how often the parity rules acted
        from market_hpc.workload.all_families import parity_counts

        result.summary.update(parity_counts(jobs, result.jobs))
    return result


def offered_load(jobs: list[Job], platform: Platform) -> dict[str, float]:
    """The workload's offered load of cores (and of the burst buffer when there is a pool):
    sum(request x run time) / (capacity x submit span), ``burst_buffer.offered_loads``."""
    from market_hpc.workload.burst_buffer import offered_loads

    loads = offered_loads(jobs, platform.total_cores, platform.burst_buffer)
    result = {"offered_load_cores": loads["offered_node_load"]}
    if platform.burst_buffer > 0:
        result["offered_load_bb"] = loads["offered_bb_load"]
    return result


def run_model(
    config: RunConfig, platform: Platform, jobs: Any, total: int | None, progress: bool = False
) -> tuple[HPCModel, float]:
    """Build the configured model on ``jobs`` (a collection, or an iterator already sorted
    by ``(submit, job_id)``) and run it; returns the model and the seconds it ran.

    Args:
        total: Jobs expected, for the progress bar (``None`` when unknown).
    """
    policy = _make_policy(config)
    predictor = bidder = None
    if config.policy.predictor is not None:
        from market_hpc.core.predictors import make_predictor

        predictor = make_predictor(config.policy.predictor)
    if config.policy.bidder is not None:
        from market_hpc.policies.registry import make_bidder

        bidder = make_bidder(config.policy.bidder)
    model = HPCModel(
        jobs,
        platform,
        policy=policy,
        exclusive=config.exclusive,
        hold_penalty=config.policy.hold_penalty,
        seed=config.seed,
        record_timeseries=config.timeseries,
        predictor=predictor,
        bidder=bidder,
        resume_seconds=config.policy.resume_seconds,
        hold_progress_loss=config.policy.hold_progress_loss,
        every_step=config.policy.every_step,
    )
    began = time.perf_counter()
    bar = _progress_bar(total) if progress else None
    if bar is None:
        model.run()
    else:
        model.run(progress=lambda arrived: bar.update(arrived - bar.n))
        if total is not None:
            bar.update(total - bar.n)
        bar.close()
    return model, time.perf_counter() - began


def _make_policy(config: RunConfig) -> Any:
    """The configured dispatcher: BBSched window schedulers get ``policy.window``, and
    ``[policy.params]`` (e.g. the CP dispatchers' limits) goes to the scheduler."""
    from market_hpc.policies import make_policy
    from market_hpc.policies.bbsched.schedulers import window_params
    from market_hpc.policies.registry import scheduler_entry

    params = window_params(
        config.policy.scheduler.lower(), dataclasses.asdict(config.policy.window)
    )
    if params is not None or config.policy.params:
        params = {**(params or {}), **config.policy.params}
        if scheduler_entry(
            config.policy.scheduler
        ).market:  # policy.hold_penalty, unless params name one
            params = {"penalty": config.policy.hold_penalty, **params}
        return make_policy(
            config.policy.scheduler, config.policy.allocator, scheduler_params=params
        )
    return make_market_aware_policy(
        config.policy.scheduler, config.policy.allocator, config.policy.hold_penalty
    )


def collect(
    model: HPCModel,
    config: RunConfig,
    report: dict[str, Any],
    elapsed: float,
    jobs: list[Job] | None = None,
) -> Result:
    """Turn a finished model into a ``Result`` (``jobs``, the run's workload, gives the
    every-job metrics the run times of the jobs that did not finish)."""
    recorder = model.recorder
    jobs_frame = recorder.jobs_frame()
    series = recorder.timeseries_frame()
    recorded = None if jobs is None else {job.job_id: job.run_time for job in jobs}
    summary = summarize(
        jobs_frame,
        series,
        model.platform.total,
        recorder.busy_resource_seconds,
        summary_extra(model, config, report, elapsed),
        burst_buffer=model.platform.burst_buffer,
        recorded_run_times=recorded,
    )
    summary["trace_lines_skipped_by_reason"] = {
        k: v for k, v in report.get("anomalies", {}).items()
    }
    report = dict(report)
    skipped = report.pop(SKIPPED_KEY, [])
    summary["jobs_skipped"] = len(skipped)  # the jobs.csv rows of status skipped
    return Result(
        config, with_reasons(jobs_frame, skipped), series, summary, report, segments_frame(recorder)
    )


def summary_extra(
    model: HPCModel, config: RunConfig, report: dict[str, Any], elapsed: float
) -> dict[str, Any]:
    """The run-level entries of ``summary.json`` beside the job metrics."""
    recorder = model.recorder
    manager = model.manager
    extra = {
        "total_profit": recorder.profit,
        "value_earned": recorder.value_earned,
        "penalties": recorder.penalties,
        "holds": recorder.holds,
        "decisions": manager.decisions,
        **{f"decisions_{cause.replace('-', '_')}": n for cause, n in model.decision_causes.items()},
        "dispatch_seconds": manager.decide_seconds,
        "mean_dispatch_ms": 1e3 * manager.decide_seconds / manager.decisions
        if manager.decisions
        else 0.0,
        **dispatch_percentiles(manager.decide_times),
        "simulation_seconds": elapsed,
        "dispatch_cpu_seconds": manager.decide_cpu_seconds,
        "cpu_per_decision_ms": 1e3 * manager.decide_cpu_seconds / manager.decisions
        if manager.decisions
        else 0.0,
        # jobs_skipped: the skipped trace lines listed in jobs.csv (inside the window; set
        # by the caller); trace_lines_skipped: every job line of the trace not made a job.
        "jobs_skipped": 0,
        "trace_lines_skipped": int(report.get("trace_lines_skipped", 0)),
        **estimate_fallback_entries(report),  # (the trace's jobs without a wall-time request)
        "scheduler": config.policy.scheduler,
        "allocator": allocator_used(config),
        "policy": model.policy_hooks.name,
        "seed": config.seed,
    }
    policy_stats = model.policy_hooks.stats
    if isinstance(policy_stats, dict):  # BBSched window schedulers: invocations, solver time
        extra.update({f"policy_{key}": value for key, value in policy_stats.items()})
    extra.update(model.policy_hooks.summary_stats())  # e.g. the CP dispatchers' status counts
    return extra


def allocator_used(config: RunConfig) -> str:
    """The allocator the run composes: the configured one, else the scheduler's default."""
    from market_hpc.policies.registry import scheduler_entry

    return (
        config.policy.allocator or scheduler_entry(config.policy.scheduler).default_allocator
    ).lower()


def with_reasons(jobs_frame: pd.DataFrame, skipped: list[dict[str, Any]]) -> pd.DataFrame:
    """``jobs.csv``'s frame: the ``reason`` column and the skipped trace lines, by job id."""
    # Missing reasons are NaN (not None) so jobs.csv and jobs.parquet read back equal.
    rejected = (jobs_frame["status"] == "rejected").to_numpy()
    jobs_frame["reason"] = np.nan
    if rejected.any():
        jobs_frame["reason"] = jobs_frame["reason"].astype(object)
        jobs_frame.loc[rejected, "reason"] = REJECTED_REASON
    if skipped:
        rows = skipped_jobs_frame(skipped, list(jobs_frame.columns))
        jobs_frame = pd.concat([jobs_frame, rows], ignore_index=True)
        jobs_frame = jobs_frame.sort_values("job_id", kind="stable").reset_index(drop=True)
    return jobs_frame


REJECTED_REASON = "request larger than the platform"


def dispatch_percentiles(seconds: Any) -> dict[str, float]:
    """p99 and max of the per-decision dispatch times, in ms.

    >>> dispatch_percentiles([0.001] * 99 + [0.5])
    {'p99_dispatch_ms': 5.99, 'max_dispatch_ms': 500.0}
    """
    times = np.asarray(seconds, dtype=np.float64)
    if not times.size:
        return {"p99_dispatch_ms": 0.0, "max_dispatch_ms": 0.0}
    return {
        "p99_dispatch_ms": round(float(np.percentile(times, 99)) * 1e3, 6),
        "max_dispatch_ms": float(times.max()) * 1e3,
    }


def _progress_bar(total: int | None) -> Any:
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="job", desc="simulating", file=sys.stderr, leave=False)
