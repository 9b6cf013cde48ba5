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
    * A held and resumed job is one row from its first start to its end on its last
      allocation (the hold gaps are not expressible).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from market_hpc.experiment.gantt import core_allocations, core_slots, resource_ids

BATSIM_JOB_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
    "requested_time", "success", "final_state", "starting_time", "execution_time",
    "finish_time", "waiting_time", "turnaround_time", "stretch", "allocated_resources",
    "consumed_energy", "metadata",
)
WORKLOAD_NAME = "w0"
_FINAL_STATE = {1: ("COMPLETED_SUCCESSFULLY", 1), 0: ("COMPLETED_FAILED", 0),
                5: ("COMPLETED_KILLED", 0)}


def batsim_jobs(jobs: pd.DataFrame, node_cores: Sequence[int], profile: Callable[[float], str],
                original_status: dict[int, int] | None = None) -> pd.DataFrame:
    """Batsim's output jobs table of the jobs that ran (see the module docstring).

    Args:
        jobs: A run's ``jobs.csv`` frame.
        node_cores: Cores of every node, in node order.
        profile: The workload's profile name of a run time.
        original_status: SWF status (field 11) by job id, from the input trace.

    >>> frame = pd.DataFrame({"job_id": [1, 2], "submit_time": [0.0, 5.0],
    ...     "start_time": [0.0, 10.0], "end_time": [10.0, 30.0], "run_time": [10.0, 20.0],
    ...     "status": ["finished"] * 2, "cores": [4, 1], "units": [4, 1], "estimate": [60.0, 0.0],
    ...     "nodes": ["0:4", "1:1"]})
    >>> table = batsim_jobs(frame, [4, 4], lambda run: f"delay_{run:g}", {2: 0})
    >>> table[["job_id", "allocated_resources", "final_state", "success", "waiting_time"]].values.tolist()
    [[1, '0-3', 'COMPLETED_SUCCESSFULLY', 1, 0.0], [2, '4', 'COMPLETED_FAILED', 0, 5.0]]
    >>> table.requested_time.tolist(), table.stretch.tolist(), table.profile.tolist()
    ([60.0, -1.0], [1.0, 1.25], ['delay_10', 'delay_20'])
    """
    ran = jobs[jobs["start_time"].notna() & jobs["end_time"].notna()]
    ran = ran.sort_values(["submit_time", "job_id"], kind="stable")
    allocations = core_allocations(ran["nodes"].tolist(), ran["cores"].tolist(),
                                   ran["units"].tolist())
    # slots are assigned over the whole schedule in the Gantt chart's order, then listed per job
    held = core_slots(ran["job_id"].tolist(), ran["start_time"].tolist(), ran["end_time"].tolist(),
                      allocations, list(node_cores))
    statuses = original_status or {}
    submit = ran["submit_time"].to_numpy(float)
    start, finish = ran["start_time"].to_numpy(float), ran["end_time"].to_numpy(float)
    execution, turnaround = finish - start, finish - submit
    with np.errstate(divide="ignore", invalid="ignore"):
        stretch = np.where(execution > 0, turnaround / np.where(execution > 0, execution, 1.0), np.inf)
    states = [("COMPLETED_KILLED", 0) if status == "dropped" else
              _FINAL_STATE.get(statuses.get(int(job), 1), ("COMPLETED_SUCCESSFULLY", 1))
              for job, status in zip(ran["job_id"], ran["status"], strict=True)]
    estimate = ran["estimate"].to_numpy(float)
    return pd.DataFrame({
        "job_id": ran["job_id"].astype(int).to_numpy(),
        "workload_name": WORKLOAD_NAME,
        "profile": [profile(r) for r in ran["run_time"].to_numpy(float)],
        "submission_time": submit,
        "requested_number_of_resources": ran["cores"].astype(int).to_numpy(),
        "requested_time": np.where(estimate > 0, estimate, -1.0),
        "success": [success for _, success in states],
        "final_state": [state for state, _ in states],
        "starting_time": start, "execution_time": execution, "finish_time": finish,
        "waiting_time": start - submit, "turnaround_time": turnaround, "stretch": stretch,
        "allocated_resources": [resource_ids(slots, node_cores) for slots in held],
        "consumed_energy": -1.0, "metadata": "",
    }, columns=list(BATSIM_JOB_COLUMNS))
