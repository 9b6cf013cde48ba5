"""What a run's summary says about the honesty of its trace, and the warnings the run
commands print about it.

* ``estimate_fallback_jobs`` / ``estimate_fallback_share``: jobs of the trace without a
  wall-time request (SWF field 9 ``-1`` or 0; a Slurm ``UNLIMITED`` time limit), whose
  estimate is their run time (:func:`~market_hpc.workload.swf_format.request_and_estimate`):
  every policy is told those run times exactly. Counted over the trace's kept jobs, as
  ``trace_lines_skipped`` counts the whole trace, so a windowed run reports the trace's
  numbers. Above :data:`ESTIMATE_FALLBACK_WARN_SHARE` the run commands warn.
* GPU requests a Slurm trace recorded that the platform cannot hold
  (``workload.gpu_requests.kept_cpu_too_large``, e.g. on a CPU-only platform): those
  jobs run on their processors only, and the run commands warn.

Library code returns the messages; only the command line prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ESTIMATE_FALLBACK_WARN_SHARE = 0.01
"""Share of a trace's jobs without a wall-time request above which a run warns (1 %)."""


def estimate_fallback_entries(report: Mapping[str, Any]) -> dict[str, Any]:
    """The summary entries of a workload report (a trace's ``TraceReport`` fields; 0 for
    generated and task-graph workloads, whose estimates are their own).

    >>> estimate_fallback_entries({"jobs_kept": 100, "estimate_fallback_jobs": 3})
    {'estimate_fallback_jobs': 3, 'estimate_fallback_share': 0.03}
    >>> estimate_fallback_entries({})
    {'estimate_fallback_jobs': 0, 'estimate_fallback_share': 0.0}
    """
    jobs = int(report.get("estimate_fallback_jobs", 0))
    kept = int(report.get("jobs_kept", 0))
    return {"estimate_fallback_jobs": jobs, "estimate_fallback_share": jobs / kept if kept else 0.0}


def run_warnings(
    summary: Mapping[str, Any], workload_report: Mapping[str, Any], trace: str | None
) -> list[str]:
    """The warnings a finished run prints (module docstring), without a prefix.

    Args:
        summary: The run's ``summary.json`` content.
        workload_report: The run's workload report (``config.json``'s ``workload``).
        trace: The trace file the run read (``None`` for other workloads).

    >>> report = {"estimate_fallback_jobs": 3, "estimate_fallback_share": 0.03}
    >>> run_warnings(report, {}, "t.swf")[0][:61]
    '3 jobs (3.0% of the trace) in t.swf have no wall-time request'
    >>> run_warnings({"estimate_fallback_jobs": 1, "estimate_fallback_share": 0.01}, {}, "t.swf")
    []
    """
    out: list[str] = []
    share = float(summary.get("estimate_fallback_share", 0.0))
    if trace is not None and share > ESTIMATE_FALLBACK_WARN_SHARE:
        jobs = int(summary.get("estimate_fallback_jobs", 0))
        out.append(
            f"{jobs:,} jobs ({share:.1%} of the trace) in {trace} have no wall-time request (SWF "
            "field 9 is -1 or 0): their estimate is their run time, so every policy is told it "
            "exactly (summary.json: estimate_fallback_jobs, estimate_fallback_share)"
        )
    gpus = workload_report.get("gpu_requests") or {}
    kept = int(gpus.get("kept_cpu_too_large", 0))
    if kept:
        out.append(
            f"{kept:,} of the {int(gpus.get('recorded_gpu_jobs', 0)):,} jobs with recorded GPU "
            "requests "
            f"({gpus.get('side_file')}) do not fit the platform even when it is empty: they run on "
            "their processors only (config.json: workload.gpu_requests)"
        )
    return out
