"""One table of the run metrics a report can plot: label, unit and which way is better.

The sweep file's ``[report] metrics`` is checked against this table before any run
starts, and every axis label of a report comes from it. A metric added to
``metrics.summarize`` or ``run.collect`` that should be plotted by name belongs here.
"""

from __future__ import annotations

from dataclasses import dataclass

from market_hpc.domain.resources import RESOURCES


@dataclass(frozen=True)
class Metric:
    """How a summary metric is shown.

    Attributes:
        name: Column of ``summary.json`` / ``results.parquet``.
        label: Axis label without the unit.
        unit: Unit ("" for counts and pure ratios shown as such).
        better: ``lower``, ``higher`` or ``""`` (neither).
    """

    name: str
    label: str
    unit: str = ""
    better: str = ""

    @property
    def axis_label(self) -> str:
        """``label (unit)``, or the label alone for unitless metrics."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


_RESOURCE_UNITS = {"cores": "cores", "gpus": "GPUs", "mics": "MICs", "mem": "memory"}

METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("jobs_total", "jobs in the workload", ""),
        Metric("jobs_completed", "jobs completed", "", "higher"),
        Metric("jobs_dropped", "jobs dropped", "", "lower"),
        Metric("jobs_molded", "jobs run narrower than requested", "", ""),
        Metric("jobs_past_estimate", "jobs that outlived their estimate", "", ""),
        Metric("jobs_rejected", "jobs rejected (larger than the platform)", "", "lower"),
        Metric("jobs_never_started", "jobs never started", "", "lower"),
        # jobs_skipped: the jobs.csv rows of status skipped (trace lines of unknown size, run
        # or submit time inside the replayed window); trace_lines_skipped: every job line of
        # the whole trace not made a job (those, partial-execution lines of held jobs, and
        # malformed lines under --lenient).
        Metric("jobs_skipped", "skipped trace jobs in the replayed part", ""),
        Metric("trace_lines_skipped", "job lines of the trace skipped", ""),
        # the trace's jobs without a wall-time request: told their run time (data_warnings)
        Metric("estimate_fallback_jobs", "trace jobs without a wall-time request", ""),
        Metric(
            "estimate_fallback_share",
            "share of trace jobs without a wall-time request",
            "fraction",
            "",
        ),
        Metric("mean_wait", "mean wait", "s", "lower"),
        Metric("median_wait", "median wait", "s", "lower"),
        Metric("max_wait", "maximum wait", "s", "lower"),
        Metric("std_wait", "standard deviation of wait", "s", ""),
        Metric("mean_slowdown", "mean slowdown", "x", "lower"),
        Metric("std_slowdown", "standard deviation of slowdown", "x", ""),
        Metric("mean_bounded_slowdown", "mean bounded slowdown (10 s)", "x", "lower"),
        # *_all: every submitted job, one that did not finish waiting until the run's end
        # (metrics.waits_all); completed work: finished jobs' allocated cores x run time.
        Metric("mean_wait_all", "mean wait, every job (unfinished: to the end)", "s", "lower"),
        Metric(
            "mean_bounded_slowdown_all", "mean bounded slowdown (10 s), every job", "x", "lower"
        ),
        Metric("completed_core_hours", "core-hours completed", "core-h", "higher"),
        Metric("completed_share", "share of jobs completed", "fraction", "higher"),
        Metric("makespan", "makespan", "s", "lower"),
        Metric("mean_queue_length", "time-weighted mean queue length", "jobs", "lower"),
        Metric("max_queue_length", "maximum queue length", "jobs", "lower"),
        Metric("mean_queue_size", "mean queue size seen by arrivals", "jobs", "lower"),
        Metric("total_profit", "total profit", "value units", "higher"),
        Metric("value_earned", "value earned", "value units", "higher"),
        Metric("penalties", "hold penalties", "value units", "lower"),
        Metric("holds", "holds (hold/resume events)"),
        Metric("decisions", "dispatcher decisions"),
        Metric("dispatch_seconds", "dispatcher time", "s", "lower"),
        Metric("mean_dispatch_ms", "mean dispatcher time per decision", "ms", "lower"),
        Metric("p99_dispatch_ms", "99th percentile dispatcher time per decision", "ms", "lower"),
        Metric("max_dispatch_ms", "maximum dispatcher time per decision", "ms", "lower"),
        Metric("simulation_seconds", "simulation wall time", "s", "lower"),
        Metric("dispatch_cpu_seconds", "dispatcher CPU time", "s", "lower"),
        Metric("cpu_per_decision_ms", "dispatcher CPU time per decision", "ms", "lower"),
        Metric(
            "run_cpu_seconds", "CPU time of the run (planning, simulation, summary)", "s", "lower"
        ),
        Metric("max_queue_size", "maximum queue size at arrivals and completions", "jobs", "lower"),
        Metric("user_fairness", "Jain's index over users' mean bounded slowdowns", "", "higher"),
        Metric("offered_load_cores", "offered load of cores", "fraction", ""),
        Metric("offered_load_bb", "offered load of the burst buffer", "fraction", ""),
        Metric("duration_s", "run wall time", "s", "lower"),
        *(
            Metric(f"utilisation_{r}", f"utilisation of {_RESOURCE_UNITS[r]}", "fraction", "higher")
            for r in RESOURCES
        ),
        *(
            Metric(f"load_ratio_{r}", f"mean load of {_RESOURCE_UNITS[r]}", "fraction", "")
            for r in RESOURCES
        ),
        Metric("utilisation_bb", "utilisation of the burst buffer", "fraction", "higher"),
        Metric("cp_decisions", "CP-SAT decisions"),
        Metric(
            "cp_optimal_share", "share of CP-SAT decisions OPTIMAL or TRIVIAL", "fraction", "higher"
        ),
        Metric(
            "cp_models", "CP-SAT decisions that went to a model (built, or not needed, or refused)"
        ),
        Metric(
            "cp_model_optimal_share",
            "share of CP-SAT models solved to OPTIMAL",
            "fraction",
            "higher",
        ),
        Metric(
            "cp_changed_share",
            "share of solved CP-SAT decisions that differ from the greedy plan",
            "fraction",
            "",
        ),
        Metric(
            "cp_fallback_share",
            "share of CP-SAT decisions that fell back to greedy",
            "fraction",
            "lower",
        ),
        Metric("cp_mean_variables", "mean CP-SAT variables per model", ""),
        Metric("cp_max_variables", "maximum CP-SAT variables per model", ""),
        Metric("cp_mean_constraints", "mean CP-SAT constraints per model", ""),
        Metric("cp_max_constraints", "maximum CP-SAT constraints per model", ""),
        Metric("load_ratio_bb", "mean load of the burst buffer", "fraction", ""),
    )
}


def metric(name: str) -> Metric:
    """The table entry of ``name``; a column not in the table is labelled by its name.

    >>> metric("mean_wait").axis_label
    'mean wait (s)'
    >>> metric("some_new_column").axis_label
    'some_new_column'
    """
    return METRICS.get(name) or Metric(name, name)


def metric_names() -> list[str]:
    """Every metric of the table, in table order."""
    return list(METRICS)
