"""EASY over a long queue in which nothing fits looks at the head only.

Archive traces keep thousands of jobs queued for months; the queue agent keeps the
waiting jobs' core counts sorted so a pass that could start nothing ends at once.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.model import HPCModel
from market_hpc.policies import NOTHING, make_policy


class CountingQueue(list):  # type: ignore[type-arg]
    """A queue that counts how many jobs a pass pulls from it."""

    pulled = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for job in super().__iter__():
            CountingQueue.pulled += 1
            yield job


def test_pass_with_nothing_that_fits_pulls_only_the_head():
    queue = CountingQueue(Job(i, 0.0, 10.0, 10.0, units=8 + i % 3) for i in range(5000))
    view = SimpleNamespace(time=0.0, free_total=(4, 0, 0, 0), free_bb=0.0, exclusive=False,
                           platform=SimpleNamespace(burst_buffer=0.0), queue=queue,
                           queue_min_cores=8, running=())
    CountingQueue.pulled = 0
    assert make_policy("easy", "first-fit").decide(view, np.random.default_rng(0)) is NOTHING
    assert CountingQueue.pulled == 1


def test_queue_agent_tracks_the_smallest_waiting_request():
    jobs = [Job(1, 0.0, 100.0, 100.0, units=4), Job(2, 0.0, 5.0, 5.0, units=3),
            Job(3, 1.0, 5.0, 5.0, units=2), Job(4, 50.0, 5.0, 5.0, units=1)]
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
