"""The order in which a dispatcher sees and serves jobs: at one instant completions come
first, then every arrival in job-id order, then one decision (checked as an invariant over
random workloads under every rigid scheduler); SJF orders by the estimate schedulers see."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from invariants import classic_pairs, random_workload

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import make_policy


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


@pytest.mark.parametrize(
    ("scheduler", "allocator"), classic_pairs(), ids=[f"{s}+{a}" for s, a in classic_pairs()]
)
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
            checked_ties += int(
                len(arrived) > 1 or bool(arrived and (kept["end_time"] == time).any())
            )
        # a decision at every arrival instant (the arrival waits in the queue)
        assert set(kept["submit_time"]) <= set(by_time)
        # and at every completion instant at which a job was waiting
        waiting = kept[kept["start_time"] > kept["submit_time"]]
        for time in set(kept["end_time"]):
            if ((waiting["submit_time"] <= time) & (waiting["start_time"] >= time)).any():
                assert time in by_time, f"no decision at completion instant {time}"
    assert checked_ties > 0  # the workloads do put several events at one instant
