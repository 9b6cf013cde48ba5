"""Jobs that were held and resumed, in a schedule export: each format's way of showing
several executions of one job (the run folder's ``segments.csv``).

**SWF** (Parallel Workloads Archive, SWF 2.2): field 11 "Status -- 1 if the job was
completed, 0 if it failed, and 5 if cancelled. If information about checkpointing or
swapping is included, other values are also possible"; the codes are 2 "this partial
execution will be continued", 3 "this is the last partial execution, job completed", 4
"this is the last partial execution, job failed". The ``Preemption`` header comment says
how a log shows them: ``Double`` means "jobs may be split, and their information appears
twice in the file: once as a one-line summary, and again as a sequence of lines
representing the parts"; ``MaxRecords`` counts lines, ``MaxJobs`` jobs. The export
writes ``Double``:

* the summary line first (the job's line of
  :func:`~market_hpc.experiment.schedule_export.schedule_rows`, status 0, 1 or 5), then one line per
  execution segment, with the same job number, submit time, requested processors, estimate, user,
  queue and partition;
* a part's wait (field 3) is from the job's submit time to the part's start (so field 2 +
  field 3 is when the part started), its run time (field 4) the part's length and its
  allocated processors (field 5) the part's cores;
* status 2 for every part but the last; the last is 3 when the summary says completed
  (1), else 4 (SWF has no "last part, cancelled": a market job dropped after a hold ends
  with 4 under a summary of 5);
* the summary's run time is the parts' total length (``jobs.csv``'s ``run_time``), or,
  when the parts ran on different core counts (moldable market jobs), their core-seconds
  divided by the summary's processors (the last part's cores): a tool that reads one line
  per job then sees the work that ran, which no single wall-clock length on one core
  count can give.

Readers that keep one line per job number keep the summary, the first; evalys's
``Workload`` drops lines whose status is above 1, and so reads the summaries too, and
:func:`~market_hpc.workload.swf.read_swf` skips the part lines as ``partial_execution``
(:mod:`market_hpc.workload.swf_partial`).

**Batsim's output jobs file** has one row per Batsim job with one ``allocated_resources``
and ``execution_time = finish_time - starting_time`` (Batsim documentation, "Outputs:
jobs"), and job ids are unique. Batsim shows a preemption as the scheduler killing the
job and registering a new one (KILL_JOB, then REGISTER_JOB: "job id duplication is
forbidden"); pybatsim's ``resubmit_job`` names the new job ``<id>#<n>`` and gives it the
metadata ``parent_job`` and ``nb_resubmit``. The export writes each execution segment as
such a row: the first keeps the job id, the ``n``-th resumption is ``<id>#<n>``,
submitted when the job was held (the previous segment's end), with that metadata; a
segment that ended by a hold is ``COMPLETED_KILLED``; the last has the job's final
state. The link between the rows is their ids and metadata; the job's own wait and
turnaround across its holds are in ``jobs.csv`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from market_hpc.errors import ConfigError

PARTIAL_CONTINUED, PARTIAL_LAST_COMPLETED, PARTIAL_LAST_FAILED = 2.0, 3.0, 4.0
ATTEMPT_SEPARATOR = "#"  # pybatsim's Batsim.ATTEMPT_JOB_SEPARATOR
_STATUS, _RUN, _WAIT, _ALLOC, _SUBMIT = 10, 3, 2, 4, 1  # 0-based SWF fields 11, 4, 3, 5, 2
_SEGMENT_FIELDS = ["job_id", "segment", "start", "end", "nodes", "cores", "units", "ended"]


def read_segments(
    directory: str | Path, n_nodes: int | None = None, job_ids: np.ndarray | None = None
) -> pd.DataFrame | None:
    """A run folder's ``segments.parquet`` (else ``segments.csv``), checked
    (:func:`~market_hpc.experiment.run_folder.read_segments_file`) and sorted by job and
    segment; ``None`` when it has neither (a folder written before segments were recorded).

    Args:
        directory: The run folder.
        n_nodes: Nodes of the platform (allocations name nodes below it), if known.
        job_ids: The ids of ``jobs.csv`` (every segment's job is one of them), if known.

    Raises:
        ConfigError: The file cannot be read, lacks a column the export needs or holds a
            bad value (named with its line and column).
    """
    from market_hpc.experiment.run_folder import read_segments_file

    folder = Path(directory)
    parquet, csv = folder / "segments.parquet", folder / "segments.csv"
    source = parquet if parquet.is_file() else csv if csv.is_file() else None
    if source is None:
        return None
    frame = read_segments_file(source, n_nodes, job_ids)
    return (
        frame[_SEGMENT_FIELDS]
        .sort_values(["job_id", "segment"], kind="stable")
        .reset_index(drop=True)
    )


def held_segments(segments: pd.DataFrame | None) -> pd.DataFrame:
    """The segments of the jobs that were held: more than one segment, or one that did not
    end ``finished`` (held, then dropped while waiting)."""
    if segments is None or not len(segments):
        return pd.DataFrame(columns=_SEGMENT_FIELDS)
    ids = segments["job_id"].to_numpy()
    held = segments.loc[segments["ended"] != "finished", "job_id"].unique()
    counts = segments.groupby("job_id")["segment"].transform("size").to_numpy()
    return segments[(counts > 1) | np.isin(ids, held)].reset_index(drop=True)


@dataclass(frozen=True)
class SwfParts:
    """What :func:`swf_with_parts` did.

    Attributes:
        rows: Every SWF line (summaries with their parts after them).
        held_jobs: Jobs written as a summary and parts.
        reweighted: Of those, the jobs whose parts used different core counts (their
            summary's run time is core-seconds over the summary's processors).
    """

    rows: np.ndarray
    held_jobs: int
    reweighted: int


def swf_with_parts(rows: np.ndarray, segments: pd.DataFrame | None) -> SwfParts:
    """Insert the part lines of every held job after its summary line (module docstring).

    Args:
        rows: ``(n, 18)`` summary lines, one per job (``schedule_rows``).
        segments: The run's segments (:func:`read_segments`), or ``None``.

    >>> rows = np.full((1, 18), -1.0)
    >>> rows[0, :11] = [9, 18, 0, 51, 4, -1, -1, 4, 60, -1, 1]
    >>> segments = pd.DataFrame({"job_id": [9, 9], "segment": [1, 2], "start": [18.0, 24.0],
    ...     "end": [19.0, 74.0], "nodes": ["2:1", "0:4"], "cores": [1, 4], "units": [1, 4],
    ...     "ended": ["held", "finished"]})
    >>> out = swf_with_parts(rows, segments)
    >>> out.rows[:, [0, 1, 2, 3, 4, 10]].tolist()  # doctest: +NORMALIZE_WHITESPACE
    [[9.0, 18.0, 0.0, 50.25, 4.0, 1.0], [9.0, 18.0, 0.0, 1.0, 1.0, 2.0],
     [9.0, 18.0, 6.0, 50.0, 4.0, 3.0]]
    >>> out.held_jobs, out.reweighted
    (1, 1)
    """
    parts = held_segments(segments)
    if not len(parts):
        return SwfParts(rows, 0, 0)
    summary_ids = rows[:, 0].astype(np.int64)
    sorter = np.argsort(summary_ids, kind="stable")
    job_ids = parts["job_id"].to_numpy(np.int64)
    where = np.searchsorted(summary_ids[sorter], job_ids)
    if (where >= len(sorter)).any() or (
        summary_ids[sorter[np.minimum(where, len(sorter) - 1)]] != job_ids
    ).any():
        raise ConfigError("the segments file names jobs that jobs.csv does not list")
    owner = sorter[where]  # each part's summary row
    start, end = parts["start"].to_numpy(float), parts["end"].to_numpy(float)
    cores = parts["cores"].to_numpy(float)
    last = np.ones(len(parts), dtype=bool)
    last[:-1] = job_ids[1:] != job_ids[:-1]
    summary = rows.copy()
    lines = summary[owner].copy()
    lines[:, _WAIT] = start - summary[owner, _SUBMIT]
    lines[:, _RUN] = end - start
    lines[:, _ALLOC] = cores
    completed = summary[owner, _STATUS] == 1
    lines[:, _STATUS] = np.where(
        last, np.where(completed, PARTIAL_LAST_COMPLETED, PARTIAL_LAST_FAILED), PARTIAL_CONTINUED
    )
    reweighted = _reweight(summary, parts, owner, (end - start) * cores)
    merged = np.vstack([summary, lines])
    position = np.concatenate([np.arange(len(summary)), owner])
    rank = np.concatenate(
        [np.zeros(len(summary), dtype=np.int64), parts["segment"].to_numpy(np.int64)]
    )
    order = np.lexsort((rank, position))
    return SwfParts(merged[order], int(np.unique(job_ids).size), reweighted)


def _reweight(
    summary: np.ndarray, parts: pd.DataFrame, owner: np.ndarray, core_seconds: np.ndarray
) -> int:
    """Give the summaries of jobs whose parts used different core counts their core-seconds
    over the summary's processors as run time (in place); return how many."""
    grouped = pd.DataFrame(
        {"owner": owner, "cores": parts["cores"].to_numpy(), "work": core_seconds}
    )
    per_job = grouped.groupby("owner").agg(
        low=("cores", "min"), high=("cores", "max"), work=("work", "sum")
    )
    varied = per_job[(per_job["low"] != per_job["high"])]
    index = varied.index.to_numpy(np.int64)
    processors = summary[index, _ALLOC]
    usable = processors > 0
    summary[index[usable], _RUN] = varied["work"].to_numpy(float)[usable] / processors[usable]
    return int(usable.sum())


def execution_attempts(ran: pd.DataFrame, segments: pd.DataFrame | None) -> pd.DataFrame:
    """The rows of Batsim's output jobs file before formatting: one per execution (module
    docstring), with ``batsim_id``, ``attempt`` (0 for the first), ``last``, the
    execution's ``start_time``, ``end_time``, ``nodes``, ``cores``, ``units`` and
    ``submission_time``, and the job's other columns; ordered by the job's submit time,
    job id and attempt.

    Args:
        ran: The ``jobs.csv`` rows of the jobs that ran (start and end known).
        segments: The run's segments, or ``None`` (then each job is one execution).
    """
    ran = ran.sort_values(["submit_time", "job_id"], kind="stable")
    if segments is None:
        attempts = ran.assign(attempt=0, last=True, submission_time=ran["submit_time"])
    else:
        pieces = segments.rename(columns={"start": "start_time", "end": "end_time"})
        pieces = pieces[["job_id", "segment", "start_time", "end_time", "nodes", "cores", "units"]]
        rest = ran.drop(
            columns=[c for c in ("start_time", "end_time", "nodes", "cores", "units") if c in ran]
        )
        rest = rest.assign(order=np.arange(len(rest)))
        attempts = pieces.merge(rest, on="job_id", how="inner", validate="many_to_one")
        attempts = attempts.sort_values(["order", "segment"], kind="stable").reset_index(drop=True)
        ids = attempts["job_id"].to_numpy()
        last = np.ones(len(attempts), dtype=bool)
        last[:-1] = ids[1:] != ids[:-1]
        first = np.ones(len(attempts), dtype=bool)
        first[1:] = ids[1:] != ids[:-1]
        previous_end = np.concatenate([[np.nan], attempts["end_time"].to_numpy(float)[:-1]])
        attempts["attempt"] = attempts["segment"].to_numpy(np.int64) - 1
        attempts["last"] = last
        attempts["submission_time"] = np.where(
            first, attempts["submit_time"].to_numpy(float), previous_end
        )
        attempts = attempts.drop(columns=["segment", "order"])
    names = [
        str(int(job)) if k == 0 else f"{int(job)}{ATTEMPT_SEPARATOR}{k}"
        for job, k in zip(attempts["job_id"].tolist(), attempts["attempt"].tolist(), strict=True)
    ]
    return attempts.assign(batsim_id=names).reset_index(drop=True)
