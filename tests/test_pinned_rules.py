"""Issue 28: one hand-checkable case per core rule that a one-line change used to get past.

Each test names the mutation it catches. The event order at one instant (completions,
then arrivals in job-id order, then one decision) is checked as an invariant over random
workloads under every rigid (non-market) scheduler.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from invariants import classic_pairs, random_workload

from market_hpc.core.metrics import summarize
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.errors import TraceFormatError
from market_hpc.experiment.sweep_store import ResultStore
from market_hpc.policies import make_policy
from market_hpc.workload import read_swf


def starts(model: HPCModel) -> dict[int, float]:
    frame = model.recorder.jobs_frame().set_index("job_id")
    return frame["start_time"].to_dict()


def test_sjf_orders_by_the_estimate_not_the_run_time():
    # Mutation: SJF keyed on job.run_time. One core: job 1 runs 0..10. Jobs 2 (run 1,
    # estimate 100) and 3 (run 50, estimate 2) wait; SJF starts the shorter *estimate*.
    jobs = [Job(1, 0.0, 10.0, 10.0), Job(2, 1.0, 1.0, 100.0), Job(3, 1.0, 50.0, 2.0)]
    model = HPCModel(jobs, "nodes=1,cores=1", "sjf")
    model.run()
    assert starts(model) == {1: 0.0, 2: 60.0, 3: 10.0}


def test_swf_refuses_a_negative_run_time_other_than_minus_one(tmp_path: Path):
    # Mutation: ``run < 0 and run != -1`` loosened to ``run < -1`` (-0.5 would pass).
    line = "1 0 -1 {run} 4 -1 -1 4 -1 -1 1 7 -1 -1 2 -1 -1 -1\n"
    path = tmp_path / "t.swf"
    path.write_text(line.format(run=10) + line.format(run=-0.5).replace("1 0", "2 0", 1))
    with pytest.raises(TraceFormatError, match=r"t\.swf:2: field 4 \(run time\): negative run time -0\.5"):
        read_swf(path)
    assert len(read_swf(path, lenient=True).jobs) == 1


def test_sweep_store_counts_only_ok_runs_as_done(tmp_path: Path):
    # Mutation: ``ok_ids`` (what a resumed sweep skips) ignoring the status.
    with ResultStore(tmp_path) as store:
        store.add({"run_id": "a", "status": "ok", "error": None})
        store.add({"run_id": "b", "status": "error", "error": "boom"})
        assert store.ok_ids() == {"a"}
        store.consolidate(["a", "b"], ["run_id", "status", "error"])
    with ResultStore(tmp_path) as store:  # reloaded from the consolidated table and parts
        assert store.ok_ids() == {"a"}


def test_sweep_store_lets_a_retried_part_replace_a_failed_row(tmp_path: Path):
    # The consolidated table says run b failed; its part was since rewritten by a retry
    # that succeeded (killed before the table was rebuilt): the part wins on reload.
    with ResultStore(tmp_path) as store:
        store.add({"run_id": "b", "status": "error", "error": "boom"})
        store.consolidate(["b"], ["run_id", "status", "error"])
        store.add({"run_id": "b", "status": "ok", "error": None})
    with ResultStore(tmp_path) as store:
        assert store.ok_ids() == {"b"}


def finished_frame(rows: list[tuple[float, float, float]]) -> pd.DataFrame:
    """Finished jobs from ``(submit, start, run)`` triples."""
    submit, start, run = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
    return pd.DataFrame({"job_id": np.arange(1, len(rows) + 1), "status": "finished",
                         "submit_time": submit, "start_time": start, "end_time": start + run,
                         "run_time": run, "wait_time": start - submit})


CAPACITY = np.array([2, 0, 0, 0])


def test_utilisation_spans_first_submit_to_last_end():
    # Mutation: utilisation over [0, last end]. A trace that starts at t=100: two jobs
    # on one of two cores, 100..110 and 105..115: 20 core-seconds / (2 cores x 15 s).
    jobs = finished_frame([(100.0, 100.0, 10.0), (105.0, 105.0, 10.0)])
    summary = summarize(jobs, pd.DataFrame(), CAPACITY, np.array([20.0, 0, 0, 0]))
    assert summary["makespan"] == 15.0
    assert summary["utilisation_cores"] == pytest.approx(20 / 30)


def test_zero_length_jobs_stay_out_of_the_slowdown_mean():
    # Mutation: ``run > 0`` loosened to ``run >= 0`` (a zero-length job makes it inf or nan).
    # Job 1: response 20 on a run of 10 (slowdown 2); job 2 runs 0 s after waiting 5.
    jobs = finished_frame([(0.0, 10.0, 10.0), (0.0, 5.0, 0.0)])
    summary = summarize(jobs, pd.DataFrame(), CAPACITY, np.array([10.0, 0, 0, 0]))
    assert summary["mean_slowdown"] == 2.0
    # bounded slowdown keeps both: max(20/10, 1) = 2 and max(5/10, 1) = 1
    assert summary["mean_bounded_slowdown"] == 1.5


# ------------------------------------------------------ event order at one instant
class DecisionLog:
    """Wraps a real dispatcher and notes, at each decision, the queue and running jobs
    (the dispatcher still decides everything; the model still validates everything)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.decisions: list[tuple[float, list[int], list[int]]] = []

    def decide(self, view: Any, rng: np.random.Generator) -> Any:
        queued = [job.job_id for job in view.queue]
        running = [r.job.job_id for r in view.running]
        self.decisions.append((view.time, queued, running))
        return self.inner.decide(view, rng)


@pytest.mark.parametrize(("scheduler", "allocator"), classic_pairs(),
                         ids=[f"{s}+{a}" for s, a in classic_pairs()])
def test_completions_then_arrivals_then_one_decision(scheduler: str, allocator: str):
    platform = "nodes=6,cores=4"
    units_from = [(1, 0, 0, 0), (2, 0, 0, 0)]
    checked_ties = 0
    for seed in (21,):
        jobs = random_workload(seed, platform, units_from, count=30)
        log = DecisionLog(make_policy(scheduler, allocator))
        model = HPCModel(jobs, platform, policy=log, seed=3, record_timeseries=False)
        model.run()
        frame = model.recorder.jobs_frame().set_index("job_id")
        times = [time for time, _, _ in log.decisions]
        assert times == sorted(times)
        kept = frame[frame["status"] != "rejected"]
        by_time: dict[float, tuple[list[int], list[int]]] = {}
        for time, queued, running in log.decisions:
            if time in by_time:
                # One decision per instant; a zero-length job it started ends at this same
                # instant, and that completion alone is handled (then decided on) next.
                zero_now = kept.index[(kept["start_time"] == time) & (kept["end_time"] == time)]
                assert len(zero_now), f"t={time}: a second decision with no zero-length job"
                continue
            by_time[time] = (queued, running)
            # completions first: nothing that ends now is still running at the decision
            ends = kept.loc[running, "end_time"]
            assert (ends > time).all(), f"t={time}: jobs {list(ends[ends <= time].index)} ended"
            # arrivals next, all of them, in job-id order, before the one decision
            arrived = sorted(kept.index[kept["submit_time"] == time])
            assert [job for job in queued if job in set(arrived)] == arrived, f"t={time}"
            checked_ties += int(len(arrived) > 1 or bool(arrived and (kept["end_time"] == time).any()))
        # a decision at every arrival instant (the arrival waits in the queue)
        assert set(kept["submit_time"]) <= set(by_time)
        # and at every completion instant at which a job was waiting
        waiting = kept[kept["start_time"] > kept["submit_time"]]
        for time in set(kept["end_time"]):
            if ((waiting["submit_time"] <= time) & (waiting["start_time"] >= time)).any():
                assert time in by_time, f"no decision at completion instant {time}"
    assert checked_ties > 0  # the workloads do put several events at one instant
