"""Seed 003 window schedulers over long FCFS queues: the window taken from the queue's
front (O(window) per invocation) arranges jobs exactly as the pass over the whole queue."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from invariants import assert_schedule_invariants, random_workload

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import make_policy
from market_hpc.policies.bbsched.schedulers import BB_SCHEDULERS, WindowScheduler

PLATFORMS = {
    "single-core": ("nodes=8,cores=1,bb=100", [(1, 0, 0, 0)]),
    "multi-core": ("nodes=6,cores=4,bb=100", [(2, 0, 0, 0), (1, 0, 0, 0)]),
}


def overloaded(
    seed: int, platform: str, units: list[tuple[int, ...]], count: int = 260
) -> list[Job]:
    """Burst-buffer jobs arriving faster than they run: queues of tens to hundreds."""
    rng = np.random.default_rng(seed + 77)
    jobs = []
    for job in random_workload(seed, platform, units, count=count):
        bb = float(rng.integers(1, 80)) if rng.random() < 0.6 else 0.0
        jobs.append(
            Job(
                job.job_id,
                job.submit / 4,
                job.run_time * 3,
                job.estimate * 3,
                job.units,
                job.unit,
                bb,
            )
        )
    return jobs


def _run(
    scheduler: str, params: dict, jobs: list[Job], platform: str
) -> tuple[pd.DataFrame, dict, int]:  # type: ignore[type-arg]
    """Jobs frame, the policy's stats and the longest queue of one run."""
    policy = make_policy(scheduler, "first-fit", scheduler_params=params)
    model = HPCModel(jobs, platform, policy=policy, seed=4)
    longest = 0
    while model.running:
        model.step()
        longest = max(longest, len(model.queue_agent.jobs))
    return model.recorder.jobs_frame(), dict(policy.stats), longest


READINGS = {
    "invocations": {"starvation_by": "invocations"},
    "optimised": {"starvation_by": "optimised"},
    "passed-over": {"starvation_by": "passed-over", "starvation_backstop": 600.0},
}


@pytest.mark.parametrize("reading", READINGS)
@pytest.mark.parametrize("scheduler", BB_SCHEDULERS)
def test_front_window_arranges_the_queue_as_the_whole_queue_pass(
    scheduler: str, reading: str, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    fast_paths = []
    forced = 0
    original = WindowScheduler._arrange_front

    def counted(self, front, view, rng):  # type: ignore[no-untyped-def]
        arranged = original(self, front, view, rng)
        fast_paths.append(arranged is not None)
        return arranged

    for name, (platform, units) in PLATFORMS.items():
        for seed in (1, 2):
            jobs = overloaded(seed, platform, units)
            params = {
                "window": 5,
                "starvation": 3,
                **READINGS[reading],
            }  # short: starving jobs are forced often
            with monkeypatch.context() as patch:
                patch.setattr(WindowScheduler, "_arrange_front", counted)
                fast, fast_stats, longest = _run(scheduler, params, jobs, platform)
            with monkeypatch.context() as patch:
                patch.setattr(
                    WindowScheduler, "_arrange_front", lambda *args: None
                )  # always the whole queue
                whole, whole_stats, _ = _run(scheduler, params, jobs, platform)
            assert longest > 30, "the workload must queue well beyond the window"
            pd.testing.assert_frame_equal(fast, whole, obj=f"{scheduler} {name} seed {seed}")
            fast_stats.pop("solver_seconds")
            whole_stats.pop("solver_seconds")
            assert fast_stats == whole_stats
            forced += fast_stats["forced_jobs"]
            assert_schedule_invariants(jobs, fast, platform, exclusive=False)
    assert all(fast_paths) and len(fast_paths) > 100  # FCFS invocations all took the front
    assert forced > 0  # starving jobs were forced in (the path that reorders the front)


@pytest.mark.parametrize("scheduler", ["bb-baseline", "bbsched"])
def test_vectorised_wfp_order_gives_the_same_schedule(scheduler: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import market_hpc.policies.bbsched.window as window_module

    platform, units = PLATFORMS["single-core"]
    jobs = overloaded(1, platform, units)
    params = {"window": 5, "order": "wfp", "starvation": 3, "starvation_by": "invocations"}
    fast, fast_stats, longest = _run(scheduler, params, jobs, platform)
    with monkeypatch.context() as patch:
        patch.setattr(
            window_module, "wfp_order_fast", lambda queue, now: window_module.wfp_order(queue, now)
        )
        plain, plain_stats, _ = _run(scheduler, params, jobs, platform)
    assert longest > 48, "the queue must be long enough for the numpy path"
    pd.testing.assert_frame_equal(fast, plain)
    fast_stats.pop("solver_seconds")
    plain_stats.pop("solver_seconds")
    assert fast_stats == plain_stats
