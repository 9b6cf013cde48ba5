"""Seed 000 PRB and EBF over long queues: with an allocator that neither looks ahead nor
counts failed attempts, the jobs asking for more than is free are left out of the pass
(from the queue's columns on long queues), and every decision stays the same."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from invariants import assert_schedule_invariants, random_workload

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import make_policy
from market_hpc.policies.hetero import schedulers as hetero_schedulers

PLATFORMS = {
    "single-core": ("nodes=12,cores=1", [(1, 0, 0, 0)], False),
    "multi-core": ("nodes=6,cores=4", [(2, 0, 0, 0), (1, 0, 0, 0)], False),
    "gpu": ("nodes=4,cores=8,gpus=2", [(1, 0, 0, 0), (2, 1, 0, 0)], False),
    "exclusive": ("nodes=6,cores=4", [(1, 0, 0, 0), (3, 0, 0, 0)], True),
    "burst-buffer": ("nodes=8,cores=2,bb=100", [(1, 0, 0, 0)], False),
}


def overloaded(seed: int, platform: str, units: list[tuple[int, ...]], bb: bool) -> list[Job]:
    """Jobs arriving four times faster than ``random_workload``'s, in three queues."""
    rng = np.random.default_rng(seed + 500)
    jobs = []
    for job in random_workload(seed, platform, units, count=360):
        extra = {"bb": float(rng.integers(1, 70))} if bb and rng.random() < 0.5 else {}
        jobs.append(
            dataclasses.replace(
                job,
                submit=job.submit / 4,
                run_time=job.run_time * 2,
                estimate=job.estimate * 2,
                queue=int(rng.integers(0, 3)),
                **extra,
            )
        )
    return jobs


def _run(
    scheduler: str, params: dict, jobs: list[Job], platform: str, exclusive: bool
) -> tuple[pd.DataFrame, int]:  # type: ignore[type-arg]
    model = HPCModel(
        jobs,
        platform,
        policy=make_policy(scheduler, "first-fit", scheduler_params=params),
        exclusive=exclusive,
        seed=2,
    )
    longest = 0
    while model.running:
        model.step()
        longest = max(longest, len(model.queue_agent.jobs))
    return model.recorder.jobs_frame(), longest


@pytest.mark.parametrize("scheduler", ["prb", "ebf"])
@pytest.mark.parametrize("name", list(PLATFORMS))
def test_leaving_out_jobs_that_cannot_be_placed_keeps_every_decision(
    scheduler: str, name: str, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    platform, units, exclusive = PLATFORMS[name]
    params = {"expected_wait": {0: 600.0, 1: 3600.0, 2: 7200.0}} if scheduler == "prb" else {}
    calls = []
    original = hetero_schedulers.placeable

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(args[1]))
        return original(*args, **kwargs)

    for seed in (1, 2):
        jobs = overloaded(seed, platform, units, bb=name == "burst-buffer")
        with monkeypatch.context() as patch:
            patch.setattr(hetero_schedulers, "placeable", counted)
            left_out, longest = _run(scheduler, params, jobs, platform, exclusive)
        with monkeypatch.context() as patch:
            patch.setattr(
                hetero_schedulers, "_skips_unplaceable", lambda allocator: False
            )  # every job tried
            every, _ = _run(scheduler, params, jobs, platform, exclusive)
        assert longest > 80, "the queue must outgrow the columns threshold (64)"
        pd.testing.assert_frame_equal(left_out, every, obj=f"{scheduler} {name} seed {seed}")
        assert_schedule_invariants(jobs, left_out, platform, exclusive=exclusive)
    assert (
        calls and max(calls) > 64 and min(calls) <= 64
    )  # both the columns and the plain filter ran


def test_allocators_with_pass_hooks_still_see_every_job() -> None:
    from market_hpc.policies.hetero.allocators import PriorityWeighted, Weighted

    assert not hetero_schedulers._skips_unplaceable(Weighted())
    assert not hetero_schedulers._skips_unplaceable(PriorityWeighted())
    assert hetero_schedulers._skips_unplaceable(make_policy("prb", "first-fit").allocator)
