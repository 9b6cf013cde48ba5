"""The per-job fast paths of the simulation core against their general versions:
free-index updates, the dense array rebuilt from the index, fresh placements and
lazily sorted running jobs (EASY's cores-only reservation: ``test_easy_reservation.py``)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from invariants import canonical_runs
from sortedcontainers import SortedList

from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.node_runs import NodeRuns
from market_hpc.core.model import HPCModel
from market_hpc.core.running_jobs import RunningJobs
from market_hpc.domain.job import Job
from market_hpc.errors import PolicyError
from market_hpc.policies.base import Decision, RunningJob, Start


def test_index_updates_match_a_plain_array() -> None:
    rng = random.Random(1)
    for _ in range(400):
        n = rng.randint(1, 12)
        free = [rng.randint(0, 3) for _ in range(n)]
        index = FreeCoreIndex(free)
        for _ in range(30):
            first = rng.randrange(n)
            end = rng.randint(first + 1, n)
            delta = rng.choice([-3, -2, -1, 1, 2, 3])
            index.add(first, end, delta)
            for node in range(first, end):
                free[node] += delta
            assert index.runs() == canonical_runs(free)
            assert index.total == sum(free)
            assert index._by_value == sorted((v, s) for s, v in index._value.items())


def test_fresh_placement_is_forgotten_on_any_update() -> None:
    index = FreeCoreIndex([2, 2, 0, 1])
    placed = index.first_fit(3)
    assert placed is not None and index.fresh is placed
    index.add(3, 4, -1)
    assert index.fresh is None


def random_jobs(rng: random.Random, n: int) -> list[Job]:
    return [
        Job(
            i,
            float(rng.randint(0, 3000)),
            float(rng.randint(1, 400)),
            float(rng.randint(1, 800)),
            units=rng.choice([1, 1, 2, 3, 5, 8, 13]),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("scheduler", ["fifo", "easy"])
def test_dense_cores_follow_the_index_when_the_log_is_dropped(scheduler: str) -> None:
    rng = random.Random(3)
    jobs = random_jobs(rng, 600)
    model = HPCModel(jobs, "nodes=16,cores=2", scheduler, "first-fit", record_timeseries=False)
    model._free._log_limit = 3  # drop the log between most instants
    step = 0
    while model.running:
        model.step()
        step += 1
        if step % 7 == 0:
            runs = model.free_index.runs()
            cores = np.repeat([free for _, _, free in runs], [count for _, count, _ in runs])
            assert (model.free[:, 0] == cores).all()
    assert (model.free == model.platform.capacity).all()


class ReuseOnce:
    """Places the head with the index, then starts the next job on the same runs."""

    name = "reuse-once"

    def decide(self, view, rng) -> Decision:  # type: ignore[no-untyped-def]
        jobs = list(view.queue)[:2]
        placed = view.free_index.first_fit(jobs[0].units)
        if len(jobs) < 2 or placed is None:
            return Decision()
        return Decision((Start(jobs[0].job_id, placed), Start(jobs[1].job_id, placed)))


def test_a_fresh_placement_used_twice_is_still_checked() -> None:
    jobs = [Job(1, 0.0, 10.0, 10.0, units=2), Job(2, 0.0, 10.0, 10.0, units=2)]
    with pytest.raises(PolicyError, match="over-allocates"):
        HPCModel(jobs, "nodes=2,cores=1", policy=ReuseOnce()).run()


def test_running_jobs_read_in_est_end_order_before_and_after_sorting() -> None:
    rng = random.Random(5)
    lazy, reference = RunningJobs(), SortedList()
    alive: list[RunningJob] = []
    for seq in range(300):
        if alive and rng.random() < 0.4:
            gone = alive.pop(rng.randrange(len(alive)))
            lazy.remove(gone)
            reference.remove(gone)
        else:
            running = RunningJob(
                float(rng.randint(0, 50)), seq, Job(seq, 0.0, 1.0, 1.0), 0.0, ((0, 1),), 1
            )
            alive.append(running)
            lazy.add(running)
            reference.add(running)
        assert len(lazy) == len(reference)
        if seq == 150:
            assert list(lazy) == list(reference)  # sorts from here on
    assert list(lazy) == list(reference) and (lazy[0] == reference[0] if reference else True)
    with pytest.raises(ValueError):
        lazy.remove(RunningJob(0.0, 10_000, Job(1, 0.0, 1.0, 1.0), 0.0, ((0, 1),), 1))


def test_index_placed_allocations_are_not_rechecked_but_plain_ones_are() -> None:
    jobs = [Job(1, 0.0, 10.0, 10.0, units=3)]
    model = HPCModel(jobs, "nodes=4,cores=1", "fifo", "first-fit", record_timeseries=False)
    model.run()
    frame = model.recorder.jobs_frame()
    assert frame.loc[0, "nodes"] == "0:1;1:1;2:1"
    bad = NodeRuns(((0, 5, 1),))  # nodes 0..4 on a 4-node platform
    with pytest.raises(PolicyError, match="distinct nodes"):
        HPCModel(
            jobs,
            "nodes=4,cores=1",
            policy=type(
                "Bad",
                (),
                {"name": "bad", "decide": lambda self, view, rng: Decision((Start(1, bad),))},
            )(),
        ).run()
