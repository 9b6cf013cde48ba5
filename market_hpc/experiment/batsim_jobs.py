"""A run's schedule as Batsim's *output* jobs file (``<prefix>_jobs.csv``), which evalys's
``JobSet.from_csv`` and other Batsim tools read.

Columns, in Batsim's order (Batsim documentation, "Outputs: jobs"): ``job_id``,
``workload_name``, ``profile``, ``submission_time``, ``requested_number_of_resources``,
``requested_time``, ``success``, ``final_state``, ``starting_time``, ``execution_time``,
``finish_time``, ``waiting_time``, ``turnaround_time``, ``stretch``,
``allocated_resources``, ``consumed_energy``, ``metadata``.

Decisions:
    * One resource per core, numbered like the Gantt chart of ``market-hpc plot``: node
      ``n``'s core slot ``s`` is resource ``(cores of nodes 0..n-1) + s``, slots taken
      lowest-free-first (:mod:`market_hpc.experiment.gantt`). ``allocated_resources`` is
      an interval set, e.g. ``0-3 8``.
    * Only jobs that ran are rows (Batsim lists executed jobs); rejected, dropped-before-
      start and never-started jobs are counted in the export's notes.
    * ``workload_name`` is ``w0`` and ``profile`` the delay profile of the exported
      ``workload.json`` (``delay_<run time>``); ``requested_time`` is the estimate, ``-1``
      when unknown; ``consumed_energy`` is ``-1`` (no energy model); ``metadata`` empty.
    * ``final_state``/``success`` come from the job's original SWF status when the
      input trace carried one (1 -> ``COMPLETED_SUCCESSFULLY``/1, 0 ->
      ``COMPLETED_FAILED``/0, 5 -> ``COMPLETED_KILLED``/0), else
      ``COMPLETED_SUCCESSFULLY``/1; a market job dropped while running is
      ``COMPLETED_KILLED``. The simulator never kills a job at its walltime, so
      ``COMPLETED_WALLTIME_REACHED`` does not occur.
    * ``stretch`` = turnaround / execution time (``inf`` for a 0 s execution).
    * A held and resumed job is one row per execution segment, as Batsim writes a job the
      scheduler killed and resubmitted: ``<id>``, ``<id>#1``, ... (pybatsim's naming),
      each resumption submitted when the job was held and carrying the metadata
      ``{"parent_job": "<id>", "nb_resubmit": n}``; segments that ended by a hold are
      ``COMPLETED_KILLED``, the last one has the job's final state
      (:mod:`~market_hpc.experiment.export_segments`). Without a segments file (a run
      folder from before segments were recorded) a held job is one row from its first
      start to its end on its last allocation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from market_hpc.experiment.export_segments import execution_attempts
from market_hpc.experiment.gantt import core_allocations, core_slots, resource_ids
from market_hpc.json_text import json_text

BATSIM_JOB_COLUMNS = (
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
)
WORKLOAD_NAME = "w0"
_FINAL_STATE = {
    1: ("COMPLETED_SUCCESSFULLY", 1),
    0: ("COMPLETED_FAILED", 0),
    5: ("COMPLETED_KILLED", 0),
}


def batsim_jobs(
    jobs: pd.DataFrame,
    node_cores: Sequence[int],
    profile: Callable[[float], str],
    original_status: dict[int, int] | None = None,
    segments: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Batsim's output jobs table of the jobs that ran (see the module docstring).

    Args:
        jobs: A run's ``jobs.csv`` frame.
        node_cores: Cores of every node, in node order.
        profile: The workload's profile name of a run time.
        original_status: SWF status (field 11) by job id, from the input trace.
        segments: The run's segments (``export_segments.read_segments``): a held job is
            then one row per execution.

    >>> frame = pd.DataFrame({"job_id": [1, 2], "submit_time": [0.0, 5.0],
    ...     "start_time": [0.0, 10.0], "end_time": [10.0, 30.0], "run_time": [10.0, 20.0],
    ...     "status": ["finished"] * 2, "cores": [4, 1], "units": [4, 1], "estimate": [60.0, 0.0],
    ...     "nodes": ["0:4", "1:1"]})
    >>> table = batsim_jobs(frame, [4, 4], lambda run: f"delay_{run:g}", {2: 0})
    >>> columns = ["job_id", "allocated_resources", "final_state", "success", "waiting_time"]
    >>> table[columns].values.tolist()
    [['1', '0-3', 'COMPLETED_SUCCESSFULLY', 1, 0.0], ['2', '4', 'COMPLETED_FAILED', 0, 5.0]]
    >>> table.requested_time.tolist(), table.stretch.tolist(), table.profile.tolist()
    ([60.0, -1.0], [1.0, 1.25], ['delay_10', 'delay_20'])
    """
    ran = jobs[jobs["start_time"].notna() & jobs["end_time"].notna()]
    runs = execution_attempts(ran, segments)
    allocations = core_allocations(
        runs["nodes"].tolist(), runs["cores"].tolist(), runs["units"].tolist()
    )
    # slots are assigned over the whole schedule in the
    # Gantt chart's order, then listed per execution
    held = core_slots(
        runs["job_id"].tolist(),
        runs["start_time"].tolist(),
        runs["end_time"].tolist(),
        allocations,
        list(node_cores),
    )
    statuses = original_status or {}
    submit = runs["submission_time"].to_numpy(float)
    start, finish = runs["start_time"].to_numpy(float), runs["end_time"].to_numpy(float)
    execution, turnaround = finish - start, finish - submit
    with np.errstate(divide="ignore", invalid="ignore"):
        stretch = np.where(
            execution > 0, turnaround / np.where(execution > 0, execution, 1.0), np.inf
        )
    states = [
        ("COMPLETED_KILLED", 0)
        if status == "dropped" or not last
        else _FINAL_STATE.get(statuses.get(int(job), 1), ("COMPLETED_SUCCESSFULLY", 1))
        for job, status, last in zip(runs["job_id"], runs["status"], runs["last"], strict=True)
    ]
    estimate = runs["estimate"].to_numpy(float)
    metadata = [
        ""
        if attempt == 0
        else json_text(
            {"parent_job": str(int(job)), "nb_resubmit": int(attempt)},
            indent=None,
            separators=(",", ":"),
        ).rstrip()
        for job, attempt in zip(runs["job_id"], runs["attempt"], strict=True)
    ]
    return pd.DataFrame(
        {
            "job_id": runs["batsim_id"].to_numpy(dtype=object),
            "workload_name": WORKLOAD_NAME,
            "profile": [profile(r) for r in runs["run_time"].to_numpy(float)],
            "submission_time": submit,
            "requested_number_of_resources": runs["cores"].astype(int).to_numpy(),
            "requested_time": np.where(estimate > 0, estimate, -1.0),
            "success": [success for _, success in states],
            "final_state": [state for state, _ in states],
            "starting_time": start,
            "execution_time": execution,
            "finish_time": finish,
            "waiting_time": start - submit,
            "turnaround_time": turnaround,
            "stretch": stretch,
            "allocated_resources": [resource_ids(slots, node_cores) for slots in held],
            "consumed_energy": -1.0,
            "metadata": metadata,
        },
        columns=list(BATSIM_JOB_COLUMNS),
    )
