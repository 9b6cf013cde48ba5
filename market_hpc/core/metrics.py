"""Summary metrics of one run.

Definitions (all over jobs that finished unless stated):

- wait = first start - submit;
- slowdown = (end - submit) / run time, over finished jobs with run time > 0;
- bounded slowdown (tau = 10 s) = max((end - submit) / max(run time, tau), 1);
- utilisation of a resource = resource-seconds used by running segments /
  (platform capacity x (last end - first submit));
- makespan = last end - first submit;
- mean queue length is time-weighted over the run;
- mean queue size (Netti et al.) is the number of waiting jobs *before* the decision,
  averaged over the instants with an arrival or a completion (empty queues included,
  as AccaSim logs every step): at instant t, the jobs submitted at or before t (not
  rejected) that had not started (or been dropped) before t;
- load ratio of a resource (Netti et al.) = used / capacity averaged over the recorded
  instants (after each instant's decision), only with a time series;
- total profit = value of completed jobs - holding penalties (Singh et al.);
- user fairness = Jain's index (sum x)^2 / (n sum x^2) over the users' mean bounded
  slowdowns (finished jobs of known users, user >= 0): 1 when every user is slowed
  down alike, 1/n when one user bears it all (Jain, Chiu & Hawe 1984);
- max queue size = the largest number of waiting jobs at an arrival or completion
  instant (as the mean queue size);
- over every submitted job (``*_all``, every row of the jobs frame: finished, dropped,
  rejected, queued or held): a job that did not finish waits from its submission until
  the run's end, the last event of the jobs frame (the latest submit, first start or end
  time of any job; the time series is left out so that the value does not depend on
  what is sampled); its bounded slowdown is that of a job of its recorded run time (the
  workload's, when the caller passes the run times; else the time it ran, 0 when it never
  ran) ending at wait + run, so a dropped job is never better for the policy than a late one;
- completed core-hours = sum over finished jobs of the cores they ran on (the ``cores``
  column: per-unit cores x units allocated, narrower than asked for a molded market
  job) x their run time (time spent running, holds left out) / 3600; completed share =
  finished jobs / submitted jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.domain.resources import RESOURCES

BOUNDED_SLOWDOWN_TAU = 10.0


def _mean(series: pd.Series) -> float:
    return float(series.mean()) if len(series) else float("nan")


def bounded_slowdown(
    response: pd.Series, run: pd.Series, tau: float = BOUNDED_SLOWDOWN_TAU
) -> pd.Series:
    """``max(response / max(run, tau), 1)`` per job (Feitelson et al. 1997).

    >>> bounded_slowdown(pd.Series([20.0, 4.0, 30.0]), pd.Series([10.0, 2.0, 0.0])).tolist()
    [2.0, 1.0, 3.0]
    """
    return np.maximum(response / np.maximum(run, tau), 1.0)


def slowdowns(jobs: pd.DataFrame, tau: float = BOUNDED_SLOWDOWN_TAU) -> tuple[pd.Series, pd.Series]:
    """Slowdown (jobs with run time > 0) and bounded slowdown of finished jobs.

    >>> frame = pd.DataFrame({"status": ["finished"] * 2, "submit_time": [0, 0],
    ...                       "end_time": [20, 4], "run_time": [10, 2]})
    >>> [s.tolist() for s in slowdowns(frame)]
    [[2.0, 2.0], [2.0, 1.0]]
    """
    done = jobs[jobs["status"] == "finished"]
    response = done["end_time"] - done["submit_time"]
    run = done["run_time"]
    positive = run > 0
    slowdown = response[positive] / run[positive]
    return slowdown, bounded_slowdown(response, run, tau)


def run_end(jobs: pd.DataFrame) -> float:
    """The run's last event in the jobs frame: the latest submit, first start or end time
    of any job (NaN without jobs).

    >>> frame = pd.DataFrame({"submit_time": [0.0, 50.0], "start_time": [0.0, None],
    ...                       "end_time": [40.0, None]})
    >>> run_end(frame)
    50.0
    """
    times = jobs[["submit_time", "start_time", "end_time"]].to_numpy(dtype=float)
    return float(np.nanmax(times)) if np.isfinite(times).any() else float("nan")


def waits_all(
    jobs: pd.DataFrame,
    tau: float = BOUNDED_SLOWDOWN_TAU,
    recorded: Mapping[int, float] | pd.Series | None = None,
) -> tuple[pd.Series, pd.Series]:
    """Wait and bounded slowdown of every submitted job (module docstring: a job that did
    not finish waits until ``run_end``; it ran for its recorded run time, 0 if none).
    ``recorded`` maps job ids to the workload's run times: an unfinished job then takes
    its own (the time a dropped job would have needed), not the time it ran.

    >>> frame = pd.DataFrame({"status": ["finished", "dropped", "queued"],
    ...                       "submit_time": [0.0, 0.0, 10.0],
    ...                       "start_time": [10.0, None, None], "end_time": [30.0, 50.0, None],
    ...                       "wait_time": [10.0, None, None], "run_time": [20.0, None, None]})
    >>> [s.tolist() for s in waits_all(frame)]      # the run ends at 50
    [[10.0, 50.0, 40.0], [1.5, 5.0, 4.0]]
    >>> frame["job_id"] = [1, 2, 3]
    >>> # (50 + 25) / 25, (40 + 5) / 10
    >>> waits_all(frame, recorded={1: 20.0, 2: 25.0, 3: 5.0})[1].tolist()
    [1.5, 3.0, 4.5]
    """
    finished = jobs["status"] == "finished"
    run = jobs["run_time"].fillna(0.0)
    if recorded is not None:
        run = run.where(finished, jobs["job_id"].map(recorded).fillna(run))
    wait = jobs["wait_time"].where(finished, run_end(jobs) - jobs["submit_time"])
    response = (jobs["end_time"] - jobs["submit_time"]).where(finished, wait + run)
    return wait, bounded_slowdown(response, run, tau)


def completed_work(jobs: pd.DataFrame) -> dict[str, float]:
    """``completed_core_hours`` and ``completed_share`` (module docstring); NaN core-hours
    without a ``cores`` column, NaN share without jobs.

    >>> frame = pd.DataFrame({"status": ["finished", "dropped"], "cores": [4, 8],
    ...                       "run_time": [1800.0, 600.0]})
    >>> completed_work(frame)
    {'completed_core_hours': 2.0, 'completed_share': 0.5}
    """
    done = jobs[jobs["status"] == "finished"]
    hours = (
        float((done["cores"] * done["run_time"]).sum() / 3600.0)
        if "cores" in jobs
        else float("nan")
    )
    share = len(done) / len(jobs) if len(jobs) else float("nan")
    return {"completed_core_hours": hours, "completed_share": share}


def time_weighted_mean(times: np.ndarray, values: np.ndarray) -> float:
    """Mean of a step function holding ``values[i]`` on ``[times[i], times[i+1])``.

    >>> time_weighted_mean(np.array([0.0, 10.0, 30.0]), np.array([2.0, 4.0, 0.0]))
    3.3333333333333335
    """
    if len(times) < 2 or times[-1] == times[0]:
        return float(values[0]) if len(values) else float("nan")
    widths = np.diff(times)
    return float((values[:-1] * widths).sum() / widths.sum())


def jain_index(values: np.ndarray | pd.Series) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` (NaN when empty or all zero).

    >>> round(jain_index(np.array([1.0, 2.0, 3.0])), 6)      # 36 / (3 x 14)
    0.857143
    >>> jain_index(np.array([5.0, 5.0])), jain_index(np.array([1.0, 0.0]))
    (1.0, 0.5)
    """
    x = np.asarray(values, dtype=np.float64)
    squares = float((x * x).sum())
    if not x.size or squares == 0:
        return float("nan")
    return float(x.sum()) ** 2 / (x.size * squares)


def user_fairness(jobs: pd.DataFrame, tau: float = BOUNDED_SLOWDOWN_TAU) -> float:
    """Jain's index over the users' mean bounded slowdowns (finished jobs, user >= 0).

    >>> frame = pd.DataFrame({"status": ["finished"] * 4, "user": [1, 1, 2, 3],
    ...                       "submit_time": [0.0] * 4, "end_time": [100.0, 300.0, 200.0, 300.0],
    ...                       "run_time": [100.0] * 4})
    >>> round(user_fairness(frame), 6)      # users' means 2, 2, 3: 49 / (3 x 17)
    0.960784
    """
    done = jobs[(jobs["status"] == "finished") & (jobs["user"] >= 0)]
    if not len(done):
        return float("nan")
    bounded = bounded_slowdown(done["end_time"] - done["submit_time"], done["run_time"], tau)
    return jain_index(bounded.groupby(done["user"]).mean().to_numpy())


def queue_sizes(jobs: pd.DataFrame) -> np.ndarray:
    """Jobs waiting before the decision at each arrival or completion instant (see
    ``mean_queue_size``)."""
    if not len(jobs):
        return np.zeros(0)
    status = jobs["status"]
    finished = jobs.loc[status == "finished", "end_time"].to_numpy(dtype=float)
    instants = np.unique(np.concatenate((jobs["submit_time"].to_numpy(dtype=float), finished)))
    waiting = jobs[status != "rejected"]
    leave = waiting["start_time"].to_numpy(dtype=float)
    dropped = (waiting["status"] == "dropped").to_numpy() & np.isnan(leave)
    leave = np.where(dropped, waiting["end_time"].to_numpy(dtype=float), leave)
    leave = np.sort(np.where(np.isnan(leave), np.inf, leave))
    arrived = np.sort(waiting["submit_time"].to_numpy(dtype=float))
    return np.searchsorted(arrived, instants, side="right") - np.searchsorted(
        leave, instants, side="left"
    )


def mean_queue_size(jobs: pd.DataFrame) -> float:
    """Mean number of jobs waiting before the decision, over arrival and completion instants.

    A job waits at instant t when it was submitted at or before t and had not left the
    queue (first start, or drop) before t; rejected jobs never wait. Jobs held and
    requeued (market holding) count only until their first start.

    >>> frame = pd.DataFrame({"status": ["finished", "finished", "rejected"],
    ...                       "submit_time": [0.0, 0.0, 5.0], "start_time": [0.0, 10.0, None],
    ...                       "end_time": [10.0, 20.0, None]})
    >>> mean_queue_size(frame)          # instants 0, 5, 10, 20: 2, 1, 1, 0 waiting
    1.0
    """
    if not len(jobs):
        return float("nan")
    return float(queue_sizes(jobs).mean())


def summarize(
    jobs: pd.DataFrame,
    timeseries: pd.DataFrame,
    capacity_total: np.ndarray,
    busy_resource_seconds: np.ndarray,
    extra: dict[str, Any] | None = None,
    burst_buffer: float = 0.0,
    recorded_run_times: Mapping[int, float] | pd.Series | None = None,
) -> dict[str, Any]:
    """Compute the summary dictionary written to ``summary.json``.

    ``recorded_run_times`` (job id -> the workload's run time) gives the ``*_all`` metrics
    each unfinished job's own run time (``waits_all``).

    With a burst-buffer pool (GB) it adds ``utilisation_bb`` (GB-seconds held by running
    jobs, from the jobs' requests and busy times, over pool x makespan) and, with a time
    series, ``load_ratio_bb``.
    """
    status = jobs["status"]
    done = jobs[status == "finished"]
    slowdown, bounded = slowdowns(jobs)
    first_submit = float(jobs["submit_time"].min()) if len(jobs) else 0.0
    last_end = float(done["end_time"].max()) if len(done) else first_submit
    span = last_end - first_submit
    summary: dict[str, Any] = {
        "jobs_total": len(jobs),
        "jobs_completed": len(done),
        "jobs_dropped": int((status == "dropped").sum()),
        "jobs_rejected": int((status == "rejected").sum()),
        "jobs_never_started": int(status.isin(["queued", "held"]).sum()),
        "mean_wait": _mean(done["wait_time"]),
        "median_wait": float(done["wait_time"].median()) if len(done) else float("nan"),
        "max_wait": float(done["wait_time"].max()) if len(done) else float("nan"),
        "mean_slowdown": _mean(slowdown),
        "std_wait": float(done["wait_time"].std(ddof=0)) if len(done) else float("nan"),
        "std_slowdown": float(slowdown.std(ddof=0)) if len(slowdown) else float("nan"),
        "mean_bounded_slowdown": _mean(bounded),
        "makespan": span,
    }
    wait_all, bounded_all = waits_all(jobs, recorded=recorded_run_times)
    summary["mean_wait_all"] = _mean(wait_all)
    summary["mean_bounded_slowdown_all"] = _mean(bounded_all)
    summary.update(completed_work(jobs))
    for index, resource in enumerate(RESOURCES):
        if capacity_total[index] > 0:
            summary[f"utilisation_{resource}"] = (
                float(busy_resource_seconds[index] / (capacity_total[index] * span))
                if span > 0
                else 0.0
            )
    if len(timeseries):
        times = timeseries["time"].to_numpy(dtype=float)
        queue = timeseries["queue_length"].to_numpy(dtype=float)
        summary["mean_queue_length"] = time_weighted_mean(times, queue)
        summary["max_queue_length"] = int(queue.max())
        for index, resource in enumerate(RESOURCES):
            column = f"used_{resource}"
            if capacity_total[index] > 0 and column in timeseries:
                summary[f"load_ratio_{resource}"] = float(
                    timeseries[column].mean() / capacity_total[index]
                )
    if burst_buffer > 0:
        held = (jobs["bb"] * jobs["run_time"].fillna(0.0)).sum() if len(jobs) else 0.0
        summary["utilisation_bb"] = float(held / (burst_buffer * span)) if span > 0 else 0.0
        if "used_bb" in timeseries and len(timeseries):
            summary["load_ratio_bb"] = float(timeseries["used_bb"].mean() / burst_buffer)
    sizes = queue_sizes(jobs)
    summary["mean_queue_size"] = float(sizes.mean()) if sizes.size else float("nan")
    summary["max_queue_size"] = int(sizes.max()) if sizes.size else 0
    summary["user_fairness"] = user_fairness(jobs) if "user" in jobs else float("nan")
    summary.update(extra or {})
    return summary
