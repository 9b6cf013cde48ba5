"""EASY over long queues: cheap when nothing fits, and unchanged in what it decides.

Archive traces keep thousands of jobs queued for months. The queue agent keeps the
waiting jobs' core counts sorted, so a pass that could start nothing ends at once, and
their cores, burst buffers and estimates as columns, so the backfilling walk visits only
the jobs that may start (``algorithms.queue_columns``); with the columns EASY must make
exactly the decisions of the plain walk.
"""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from invariants import random_workload

from market_hpc.algorithms.queue_columns import BackfillLimits, QueueColumns
from market_hpc.core.model import HPCModel
from market_hpc.core.view import ModelView
from market_hpc.domain.job import Job
from market_hpc.domain.queues import QueueConfig, QueueSpec
from market_hpc.policies import NOTHING, make_policy
from market_hpc.policies.classic import Easy


class CountingQueue(list):  # type: ignore[type-arg]
    """A queue that counts how many jobs a pass pulls from it."""

    pulled = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for job in super().__iter__():
            CountingQueue.pulled += 1
            yield job


def test_pass_with_nothing_that_fits_pulls_only_the_head():
    queue = CountingQueue(Job(i, 0.0, 10.0, 10.0, units=8 + i % 3) for i in range(5000))
    view = SimpleNamespace(
        time=0.0,
        free_total=(4, 0, 0, 0),
        free_bb=0.0,
        exclusive=False,
        platform=SimpleNamespace(burst_buffer=0.0),
        queue=queue,
        queue_min_cores=8,
        running=(),
    )
    CountingQueue.pulled = 0
    assert make_policy("easy", "first-fit").decide(view, np.random.default_rng(0)) is NOTHING
    assert CountingQueue.pulled == 1


def test_queue_agent_tracks_the_smallest_waiting_request():
    jobs = [
        Job(1, 0.0, 100.0, 100.0, units=4),
        Job(2, 0.0, 5.0, 5.0, units=3),
        Job(3, 1.0, 5.0, 5.0, units=2),
        Job(4, 50.0, 5.0, 5.0, units=1),
    ]
    model = HPCModel(jobs, "nodes=4,cores=1", "easy", "first-fit", record_timeseries=False)
    seen = []
    while model.running:
        model.step()
        agent = model.queue_agent
        smallest = min((j.cores for j in agent.jobs.values()), default=0)
        seen.append((model.now, agent.min_cores, smallest))
    assert all(tracked == actual for _, tracked, actual in seen)
    assert seen[0][1:] == (3, 3)  # job 1 runs, job 2 (3 cores) waits
    assert model.queue_agent.min_cores == 0 and not model.queue_agent.cores


# --------------------------------------------------------------- queue columns
def brute_candidates(
    jobs: list[Job],
    after: int,
    free: float,
    now: float,
    shadow: float,
    extra: float,
    free_bb: float,
    extra_bb: float,
) -> list[int]:
    behind = [j for j in jobs[[j.job_id for j in jobs].index(after) + 1 :]]
    return [
        j.job_id
        for j in behind
        if j.cores <= free
        and j.bb <= free_bb
        and (now + j.estimate <= shadow or (j.cores <= extra and j.bb <= extra_bb))
    ]


def test_queue_columns_find_what_a_walk_would_keep_through_pushes_takes_and_compaction() -> None:
    rng = random.Random(11)
    columns = QueueColumns()
    waiting: list[Job] = []
    next_id = 0
    compacted = False
    for step in range(4000):
        if waiting and rng.random() < (
            0.3 if step < 2000 else 0.7
        ):  # grow, then drain (compaction)
            gone = waiting.pop(rng.randrange(len(waiting)))
            size_before = columns._size
            columns.take(gone.job_id)
            compacted |= columns._size < size_before
        else:
            next_id += 1
            job = Job(
                next_id,
                0.0,
                10.0,
                float(rng.randint(1, 500)) / 4,
                units=rng.randint(1, 9),
                unit=rng.choice([(1, 0, 0, 0), (2, 1, 0, 0)]),
                bb=float(rng.choice([0, 0, 5, 40])),
            )
            waiting.append(job)
            columns.push(job)
        assert len(columns) == len(waiting)
        if waiting and step % 5 == 0:
            after = rng.choice(waiting).job_id
            now = float(rng.randint(0, 50))
            args = (
                rng.randint(0, 12),
                now,
                now + rng.randint(0, 130) / 4,
                rng.randint(-2, 6),
                rng.choice([math.inf, 30.0]),
                rng.choice([math.inf, 10.0]),
            )
            free, now, shadow, extra, free_bb, extra_bb = args
            got = [
                j.job_id
                for j in columns.backfill_scan(
                    after, now, shadow, BackfillLimits(free, extra, free_bb, extra_bb)
                )
            ]
            assert got == brute_candidates(waiting, after, *args)
            # A pass that lowers the limits as it goes sees exactly the jobs passing the
            # lowered limits at their turn.
            limits = BackfillLimits(free, extra, free_bb, extra_bb)
            seen = []
            for job in columns.backfill_scan(after, now, shadow, limits):
                assert job.cores <= limits.free_cores and job.bb <= limits.free_bb
                assert now + job.estimate <= shadow or (
                    job.cores <= limits.extra_cores and job.bb <= limits.extra_bb
                )
                seen.append(job.job_id)
                if rng.random() < 0.5:
                    limits.free_cores -= job.cores
                    limits.free_bb -= job.bb
            lowered = set(seen)
            assert all(
                j.job_id in lowered
                for j in waiting
                if j.job_id
                in set(
                    brute_candidates(
                        waiting,
                        after,
                        limits.free_cores,
                        now,
                        shadow,
                        extra,
                        limits.free_bb,
                        extra_bb,
                    )
                )
            )
    assert compacted


PLATFORMS = {
    "single-core": ("nodes=12,cores=1", [(1, 0, 0, 0)], False),
    "multi-core": ("nodes=6,cores=4", [(1, 0, 0, 0), (3, 0, 0, 0)], False),
    "gpu": ("nodes=4,cores=4,gpus=1", [(1, 0, 0, 0), (2, 1, 0, 0)], False),
    "exclusive": ("nodes=6,cores=4", [(1, 0, 0, 0), (2, 0, 0, 0)], True),
    "burst-buffer": ("nodes=8,cores=2,bb=100", [(1, 0, 0, 0)], False),
}


@pytest.mark.parametrize("name", PLATFORMS)
def test_easy_with_queue_columns_decides_exactly_as_the_plain_walk(name: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    platform, units, exclusive = PLATFORMS[name]
    rng = np.random.default_rng(4)
    for seed in range(3):
        jobs = random_workload(seed, platform, units, count=700)  # overloaded: queues of hundreds
        if "bb=" in platform:
            jobs = [
                Job(
                    j.job_id,
                    j.submit,
                    j.run_time,
                    j.estimate,
                    j.units,
                    j.unit,
                    float(rng.integers(1, 60)) if rng.random() < 0.5 else 0.0,
                )
                for j in jobs
            ]
        frames, longest = [], 0
        for columns_from in (10**9, 0):
            monkeypatch.setattr(Easy, "columns_from", columns_from)
            model = HPCModel(jobs, platform, "easy", "first-fit", exclusive=exclusive, seed=1)
            model.run()
            frames.append(model.recorder.jobs_frame())
            longest = max(longest, int(model.recorder.timeseries_frame()["queue_length"].max()))
        assert longest > 100, f"{name}: the workload should build a long queue, got {longest}"
        pd.testing.assert_frame_equal(frames[0], frames[1], obj=f"{name} seed {seed}")


@pytest.mark.parametrize("scheduler", ["sjf", "ljf"])
@pytest.mark.parametrize("name", ["single-core", "gpu", "exclusive"])
def test_sorted_queue_kept_between_decisions_gives_the_same_schedule(
    scheduler: str, name: str, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    platform, units, exclusive = PLATFORMS[name]
    for seed in range(2):
        jobs = random_workload(seed, platform, units, count=500)
        model = HPCModel(jobs, platform, scheduler, "first-fit", exclusive=exclusive, seed=1)
        model.run()
        kept = model.recorder.jobs_frame()
        assert len(model.queue_agent._sorted) == 1 and not model.queue_agent.jobs
        with monkeypatch.context() as patch:
            patch.delattr(ModelView, "queue_sorted")  # every decision sorts the whole queue
            model = HPCModel(jobs, platform, scheduler, "first-fit", exclusive=exclusive, seed=1)
            model.run()
        assert not model.queue_agent._sorted
        pd.testing.assert_frame_equal(
            kept, model.recorder.jobs_frame(), obj=f"{scheduler} {name} seed {seed}"
        )


@pytest.mark.parametrize("mode", ["partitioned", "hybrid", "shared"])
def test_queue_dispatcher_skipping_passes_where_nothing_fits_keeps_its_schedule(
    mode: str, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    queues = (
        QueueSpec("short", 1, 12, 0, 20),
        QueueSpec("narrow", 1, 4, 20),
        QueueSpec("wide", 5, 12, 20),
    )
    config = QueueConfig(
        queues,
        mode=mode,
        partitions=(2, 2, 2) if mode == "partitioned" else (1, 2, 2),
        **({"pool": 1, "tau_pf": 0.2} if mode == "hybrid" else {}),
    )
    jobs = [
        j for j in random_workload(5, "nodes=6,cores=2", [(1, 0, 0, 0)], count=400) if j.cores <= 12
    ]

    def run() -> pd.DataFrame:
        policy = make_policy(f"queues-{mode}", "first-fit", scheduler_params={"config": config})
        model = HPCModel(jobs, "nodes=6,cores=2", policy=policy, queues=config, seed=3)
        model.run()
        assert int(model.recorder.timeseries_frame()["queue_length"].max()) > 50
        return model.recorder.jobs_frame()

    skipping = run()
    with monkeypatch.context() as patch:
        patch.delattr(ModelView, "queue_min_cores")  # every decision runs the whole pass
        pd.testing.assert_frame_equal(skipping, run())


@pytest.mark.parametrize("mode", ["partitioned", "hybrid"])
def test_queue_dispatcher_caches_stay_bounded_and_pruning_keeps_the_schedule(
    mode: str, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.policies.queues.dispatchers import QueueDispatcher

    queues = (
        QueueSpec("short", 1, 12, 0, 20),
        QueueSpec("narrow", 1, 4, 20),
        QueueSpec("wide", 5, 12, 20),
    )
    config = QueueConfig(
        queues,
        mode=mode,
        partitions=(2, 2, 2) if mode == "partitioned" else (1, 2, 2),
        **({"pool": 1, "tau_pf": 0.2} if mode == "hybrid" else {}),
    )
    jobs = [
        j
        for j in random_workload(11, "nodes=6,cores=2", [(1, 0, 0, 0)], count=500)
        if j.cores <= 12
    ]

    def run() -> tuple[pd.DataFrame, int]:
        policy = make_policy(f"queues-{mode}", "first-fit", scheduler_params={"config": config})
        model = HPCModel(jobs, "nodes=6,cores=2", policy=policy, queues=config, seed=3)
        largest = 0
        while model.running:
            model.step()
            largest = max(
                largest, len(policy.home) - 2 * len(model.queue_agent.jobs), len(policy.releases_of)
            )
        return model.recorder.jobs_frame(), largest

    kept, _ = run()
    with monkeypatch.context() as patch:
        patch.setattr(
            QueueDispatcher, "prune_from", 0
        )  # forget every job that left, at every decision
        pruned, largest = run()
    pd.testing.assert_frame_equal(kept, pruned)
    assert largest <= 12  # at most one decision's new entries beyond twice the jobs in the system


def test_smallest_request_tracks_the_minimum_through_adds_removals_and_rebuilds() -> None:
    from market_hpc.algorithms.queue_columns import SmallestRequest

    rng = np.random.default_rng(9)
    smallest, held = SmallestRequest(), []
    for _ in range(6000):
        if held and rng.random() < 0.5:
            value = held.pop(int(rng.integers(len(held))))
            smallest.remove(value)
        else:  # values that come and go above the minimum make stale heap entries pile up
            value = int(rng.integers(1, 40))
            held.append(value)
            smallest.add(value)
        assert smallest.min() == min(held, default=0) and len(smallest) == len(held)
    with pytest.raises(KeyError):
        smallest.remove(10**6)
