"""Export a run's simulated schedule: an SWF trace, a Batsim JSON workload and Batsim's
output jobs file.

Backs ``market-hpc export RUN_DIR``. The SWF carries the simulation's waits and run
times, so replaying it with the same platform and policy reproduces the schedule (the
round trip in ``tests/test_schedule_export.py``). What each job status becomes:

* ``finished``: field 3 wait = start - submit, field 4 run time, field 5 = field 8 =
  its cores, field 9 its estimate (``-1`` when 0), field 11 the input trace's status
  of the job (1 completed, 0 failed, 5 cancelled) when it carried one, else 1.
* ``rejected`` (larger than the platform), ``dropped`` (market), or never started
  before the run ended: wait ``-1`` and, when the run did not record it, run time
  ``-1`` (a replay of the export then skips them as "run time unknown"); status 0 for
  rejected, 5 (cancelled) for dropped, -1 otherwise.
* ``skipped`` trace lines: written with run time ``-1`` (skipped again on replay).

Field 15 is the job's queue and field 16 the input trace's partition (``-1`` when it
had none); :mod:`~market_hpc.experiment.swf_export_header` reads both back from the
input trace and writes the standard header. SWF holds processors only: GPUs, MICs,
memory and burst-buffer requests are dropped, and what SWF cannot express is listed
in ``Note:`` header lines and in the notes printed.

A job that was held and resumed is a summary line followed by one line per execution
segment (SWF's partial executions, status 2, 3 or 4; header ``Preemption: Double``), and
in Batsim's output jobs file one row per segment (:mod:`~market_hpc.experiment.export_segments`
gives the rules and what each format loses).

Batsim's output jobs file (``batsim_jobs.csv``, :mod:`~market_hpc.experiment.batsim_jobs`)
lists every execution that ran with its cores as an interval set numbered like the
Gantt chart, so evalys draws the same schedule.

The Batsim workload (``nb_res``, ``jobs``, ``profiles``) has one resource per core
(``nb_res`` = the platform's cores), one job per job that has a run time, ``res`` = its
cores, ``walltime`` = its estimate (omitted when 0), and a ``delay`` profile of its run
time (jobs with equal run times share a profile). Jobs larger than the platform are
left out (Batsim cannot run them) and counted; jobs that ran past their estimate are
counted too, since Batsim kills a job at its walltime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.atomic_file import write_files
from market_hpc.domain.platform import load_platform
from market_hpc.errors import ConfigError
from market_hpc.experiment.batsim_jobs import batsim_jobs
from market_hpc.experiment.export_segments import held_segments, read_segments, swf_with_parts
from market_hpc.experiment.run_folder import read_config, read_jobs, read_summary
from market_hpc.experiment.swf_export_header import OriginalTrace, read_original, swf_header
from market_hpc.json_text import json_text
from market_hpc.workload.swf import trace_bytes
from market_hpc.workload.swf_format import N_FIELDS, format_number
from market_hpc.workload.swf_rows import swf_text

_STATUS = {"finished": 1, "rejected": 0, "dropped": 5}
_OTHER_RESOURCES = ("gpus", "mics", "mem", "bb")


@dataclass(frozen=True)
class RunSchedule:
    """A run folder's jobs and platform size."""

    directory: Path
    jobs: pd.DataFrame
    total_cores: int
    config: dict[str, Any] = field(default_factory=dict)


def read_run(directory: str | Path) -> RunSchedule:
    """Read ``config.json`` and ``jobs.parquet`` (else ``jobs.csv``) of a run folder, every
    value the commands use checked (:mod:`~market_hpc.experiment.run_folder`).

    Raises:
        ConfigError: Not a run folder (names what is missing), or a file that cannot be read
            or holds a bad value (names the file, line or key, and what is valid).
    """
    folder = Path(directory)
    sources = [folder / "jobs.parquet", folder / "jobs.csv"]
    source = next((path for path in sources if path.is_file()), None)
    if source is None or not (folder / "config.json").is_file():
        raise ConfigError(
            f"{folder} is not a run folder: it needs jobs.csv (or jobs.parquet) "
            "and config.json, as written by market-hpc run/replay --out DIR"
        )
    config = read_config(folder)
    platform = config["config"]["platform"]
    try:
        loaded = load_platform(platform)
    except ConfigError as exc:
        raise ConfigError(f"{folder / 'config.json'}: key config.platform: {exc}") from None
    jobs = read_jobs(source, len(loaded.capacity), read_summary(folder))
    return RunSchedule(folder, jobs, loaded.total_cores, config)


def schedule_rows(jobs: pd.DataFrame, original: OriginalTrace | None = None) -> np.ndarray:
    """The 18 SWF fields of a ``jobs.csv`` frame (see the module docstring), in job order;
    ``original`` gives the input trace's statuses and partitions.

    >>> frame = pd.DataFrame({"job_id": [1], "submit_time": [0.0], "start_time": [5.0],
    ...     "wait_time": [5.0], "run_time": [60.0], "status": ["finished"], "cores": [4],
    ...     "estimate": [120.0], "user": [2], "queue": [1]})
    >>> schedule_rows(frame)[0, :11].tolist()
    [1.0, 0.0, 5.0, 60.0, 4.0, -1.0, -1.0, 4.0, 120.0, -1.0, 1.0]
    """
    frame = jobs.sort_values(["submit_time", "job_id"], kind="stable")
    rows = np.full((len(frame), N_FIELDS), -1.0)
    started = frame["start_time"].notna().to_numpy()
    run = frame["run_time"].to_numpy(dtype=float)
    estimate = frame["estimate"].to_numpy(dtype=float)
    cores = frame["cores"].to_numpy(dtype=float)
    rows[:, 0] = frame["job_id"].to_numpy()
    rows[:, 1] = frame["submit_time"].to_numpy()
    wait = frame["wait_time"].to_numpy(dtype=float)
    rows[:, 2] = np.where(started & np.isfinite(wait), wait, -1.0)
    rows[:, 3] = np.where(np.isfinite(run), run, -1.0)
    rows[:, 4] = np.where(started, cores, -1.0)
    rows[:, 7] = cores
    rows[:, 8] = np.where(estimate > 0, estimate, -1.0)
    rows[:, 10] = frame["status"].map(_STATUS).fillna(-1).to_numpy()
    ids = frame["job_id"].astype(int).tolist()
    if original is not None:
        finished = (frame["status"] == "finished").to_numpy()
        kept = np.array([original.status.get(job, 1) for job in ids], dtype=float)
        rows[:, 10] = np.where(finished, kept, rows[:, 10])
        rows[:, 15] = [original.partition.get(job, -1) for job in ids]
    rows[:, 11] = frame["user"].to_numpy()
    rows[:, 14] = frame["queue"].to_numpy()
    return rows


def batsim_workload(jobs: pd.DataFrame, total_cores: int) -> tuple[dict[str, Any], int]:
    """A Batsim JSON workload of the jobs, and how many were left out as too large."""
    frame = jobs.sort_values(["submit_time", "job_id"], kind="stable")
    frame = frame[np.isfinite(frame["run_time"].to_numpy(dtype=float))]
    fits = frame["cores"].to_numpy() <= total_cores
    profiles: dict[str, dict[str, Any]] = {}
    entries: list[dict[str, Any]] = []
    for job in frame[fits].itertuples(index=False):
        name = _profile(job.run_time)
        profiles.setdefault(name, {"type": "delay", "delay": float(job.run_time)})
        entry: dict[str, Any] = {
            "id": str(job.job_id),
            "subtime": float(job.submit_time),
            "res": int(job.cores),
            "profile": name,
        }
        if job.estimate > 0:
            entry["walltime"] = float(job.estimate)
        entries.append(entry)
    workload = {
        "description": "exported by market-hpc export",
        "nb_res": int(total_cores),
        "jobs": entries,
        "profiles": profiles,
    }
    return workload, int((~fits).sum())


def _profile(run_time: float) -> str:
    return f"delay_{format_number(run_time)}"


def export_schedule(
    directory: str | Path,
    swf: str | Path | None = None,
    batsim: str | Path | None = None,
    batsim_jobs_file: str | Path | None = None,
) -> list[str]:
    """Write a run's schedule as SWF, as a Batsim workload and as Batsim's output jobs
    file; return notes to print.

    Args:
        directory: A run folder (``run``/``replay --out``).
        swf: SWF file to write (default ``RUN_DIR/schedule.swf``).
        batsim: Batsim JSON file to write (default ``RUN_DIR/workload.json``).
        batsim_jobs_file: Batsim output jobs CSV to write (default
            ``RUN_DIR/batsim_jobs.csv``).
    """
    run = read_run(directory)
    jobs = run.jobs
    swf_path = Path(swf) if swf else run.directory / "schedule.swf"
    batsim_path = Path(batsim) if batsim else run.directory / "workload.json"
    jobs_path = Path(batsim_jobs_file) if batsim_jobs_file else run.directory / "batsim_jobs.csv"
    config = run.config["config"]
    original = read_original(config["workload"].get("trace"))
    node_cores = [int(c) for c in load_platform(config["platform"]).capacity[:, 0]]
    segments = read_segments(run.directory, len(node_cores), jobs["job_id"].to_numpy())
    swf_rows = swf_with_parts(schedule_rows(jobs, original), segments)
    held = int((jobs["hold_count"] > 0).sum())
    cannot = _cannot_express(jobs, original, swf_rows.held_jobs, swf_rows.reweighted, held)
    header = swf_header(
        name=config["name"],
        policy=str(config["policy"].get("scheduler")),
        platform=str(config["platform"]),
        directory=str(run.directory),
        n_jobs=len(jobs),
        n_records=len(swf_rows.rows),
        n_nodes=len(node_cores),
        n_procs=run.total_cores,
        last_end=float(np.nanmax(jobs["end_time"].to_numpy(float), initial=0.0)),
        queues=int(jobs["queue"].where(jobs["queue"] >= 0).nunique()),
        original=original,
        preemption="Double" if swf_rows.held_jobs else "Yes" if held else "No",
        notes=cannot,
    )
    workload, too_large = batsim_workload(jobs, run.total_cores)
    table = batsim_jobs(jobs, node_cores, _profile, original.status if original else None, segments)
    # the three files written all or none (a full disk leaves the previous ones)
    write_files(
        {
            swf_path: trace_bytes(swf_text(swf_rows.rows, header), swf_path),
            batsim_path: json_text(workload, indent=1),
            jobs_path: table.to_csv(index=False),
        }
    )
    parts = len(swf_rows.rows) - len(jobs)
    notes = [
        f"SWF schedule ({len(jobs):,} jobs"
        + (f", {parts:,} partial-execution lines" if parts else "")
        + f"): {swf_path}",
        (
            f"Batsim workload ({len(workload['jobs']):,} jobs, "
            f"nb_res={run.total_cores} cores): {batsim_path}"
        ),
        (
            f"Batsim output jobs file ({len(table):,} executions that ran; resources 0..."
            f"{run.total_cores - 1} = cores, numbered like the Gantt chart): {jobs_path}"
        ),
    ]
    notes += [f"SWF header note: {text}" for text in cannot]
    if swf_rows.held_jobs:
        notes += _held_notes(swf_rows.held_jobs, held_segments(segments))
    unrun = int(jobs["run_time"].isna().sum())
    if unrun:
        notes.append(
            f"note: {unrun:,} jobs have no recorded run time (rejected, dropped, "
            "skipped or never started): run time -1 in the SWF, left out of Batsim"
        )
    if too_large:
        notes.append(f"note: {too_large:,} jobs larger than the platform left out of Batsim")
    overrun = int((jobs["run_time"] > jobs["estimate"].where(jobs["estimate"] > 0)).sum())
    if overrun:
        notes.append(
            f"note: {overrun:,} jobs ran longer than their estimate; Batsim kills a job at "
            "its walltime, so they end early there (the SWF keeps their run times)"
        )
    return notes


def _held_notes(held_jobs: int, parts: pd.DataFrame) -> list[str]:
    """What the printed notes say about held jobs beyond the SWF header's notes."""
    resumptions = int((parts["segment"] > 1).sum())
    return [
        (
            "note: market-hpc replay reads the SWF's summary lines as the jobs and counts the part "
            "lines (status 2, 3, 4) as partial_execution; evalys's Workload also reads the "
            "summaries "
            "(it drops status above 1)"
        ),
        (
            f"note: Batsim output jobs file: the {held_jobs:,} held jobs are one row per "
            "execution, as "
            f"Batsim writes a job the scheduler killed and resubmitted ({resumptions:,} "
            "resumptions named "
            "ID#n, submitted when held, metadata parent_job and nb_resubmit; killed executions "
            "COMPLETED_KILLED). Lost there: each job's own wait and turnaround across its holds "
            "(jobs.csv has them)"
        ),
        (
            f"note: Batsim workload: the {held_jobs:,} held jobs are one job each with their total "
            "run "
            "time (the holds are the scheduler's decisions, not part of a workload)"
        ),
    ]


def _cannot_express(
    jobs: pd.DataFrame, original: OriginalTrace | None, held_jobs: int, reweighted: int, held: int
) -> list[str]:
    """What the SWF export loses, for its ``Note:`` header lines and the notes printed.

    Args:
        jobs: The run's ``jobs.csv`` frame.
        original: What the input trace carried.
        held_jobs: Jobs written as a summary line and partial executions.
        reweighted: Of those, jobs whose summary run time is core-seconds over processors.
        held: Jobs held at least once (``hold_count``).
    """
    lost = ["node placement (no SWF field; batsim_jobs.csv has it)"]
    extra = [column for column in _OTHER_RESOURCES if column in jobs and (jobs[column] > 0).any()]
    if extra:
        lost.append(f"{', '.join(extra)} requests (SWF and the Batsim files hold cores only)")
    notes = [f"not expressible in SWF: {text}" for text in lost]
    if held_jobs:
        notes.append(
            f"{held_jobs:,} held and resumed jobs are a summary line (status 0, 1 or 5) followed "
            "by one line per execution (status 2: continued later; 3: last part, job completed; "
            "4: last part, job did not complete), Preemption: Double; a part's wait is from the "
            "job's submit time to the part's start. Not expressible in SWF: where each part ran "
            "(batsim_jobs.csv has it) and the progress a hold cost"
        )
    if reweighted:
        notes.append(
            f"{reweighted:,} of them ran their parts on different core counts: their summary's run "
            "time is the parts' core-seconds over the summary's processors (the last part's), "
            "not a wall-clock time"
        )
    if held and not held_jobs:
        notes.append(
            f"not expressible from this run folder: {held:,} held and resumed jobs are one record "
            "from first start to end (no segments file: the run was written before segments "
            "were recorded)"
        )
    if original is None:
        notes.append(
            "not expressible in SWF: original status and partition (the input was not an SWF "
            "trace, or it has moved): finished jobs get status 1, partition -1"
        )
    return notes
