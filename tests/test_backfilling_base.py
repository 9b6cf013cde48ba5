"""The public backfilling base (``policies.classic.Backfilling``): a new queue order in a
few lines inherits EASY's reservation over every resource type, burst buffer included.

Hand-checked case on ``nodes=4,cores=1,bb=100`` with *largest job first*:

* t=0: J1 (2 cores, ends 10) and J2 (1 core, 60 GB, ends 20) start; 1 core and 40 GB free.
* t=1: J3 (1 core, 40 GB, estimate 30), J4 (2 cores, 70 GB, estimate 5) and J5 (1 core,
  40 GB, estimate 5) arrive. Largest first makes J4 the head (FIFO would start J3, which
  fits). J4 needs 70 GB: the shadow time is 20 (J2's end; J1's end at 10 frees cores but
  no burst buffer) and the extra is 2 cores and 30 GB. J3 would run past 20 and needs
  40 GB > 30 GB of extra burst buffer: it is not backfilled (on cores alone it would be).
  J5 ends at 6 <= 20: it is backfilled.
* t=20: J4 starts; J3 (40 GB > 30 GB left) waits for J4's end at 25.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import parse_inline
from market_hpc.policies.allocators import FirstFit
from market_hpc.policies.base import RunningJob, Start
from market_hpc.policies.classic import Backfilling, Easy

PLATFORM = "nodes=4,cores=1,bb=100"


class LargestFirst(Backfilling):
    """Largest job first (cores), ties by submit time then job id, with EASY."""

    label = "largest-easy"
    key = staticmethod(lambda job: (-job.cores, job.submit, job.job_id))


def jobs() -> list[Job]:
    return [
        Job(1, 0.0, 10.0, 10.0, units=2),
        Job(2, 0.0, 20.0, 20.0, units=1, bb=60.0),
        Job(3, 1.0, 30.0, 30.0, units=1, bb=40.0),
        Job(4, 1.0, 5.0, 5.0, units=2, bb=70.0),
        Job(5, 1.0, 5.0, 5.0, units=1, bb=40.0),
    ]


def starts(policy: object) -> dict[int, float]:
    model = HPCModel(jobs(), PLATFORM, policy=policy, record_timeseries=False)
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")["start_time"]
    return {int(job_id): float(start) for job_id, start in frame.items()}


def test_largest_first_reserves_burst_buffer_for_its_head_and_backfills_around_it() -> None:
    policy = LargestFirst(FirstFit())
    assert policy.name == "largest-easy+first-fit"
    assert starts(policy) == {1: 0.0, 2: 0.0, 3: 25.0, 4: 20.0, 5: 1.0}


def test_queue_order_backfilling_is_easy() -> None:
    """With no key the base serves the queue in arrival order: it is ``easy``. J3 fits at
    t=1 and starts; the head J4 then waits for J3's 40 GB (shadow 31), and J5 is
    backfilled at t=20 (J2's 60 GB back; ends at 25 <= 31)."""
    assert (
        starts(Backfilling(FirstFit()))
        == starts(Easy(FirstFit()))
        == {1: 0.0, 2: 0.0, 3: 1.0, 4: 31.0, 5: 20.0}
    )


def test_a_plain_view_gets_the_same_decision() -> None:
    """A view built by hand (only the ``View`` protocol, none of ``FastView``) at t=1:
    the base sorts the queue itself and places on a copy of ``free``."""
    platform = parse_inline(PLATFORM)
    running = [
        RunningJob(10.0, 0, jobs()[0], 0.0, ((0, 1), (1, 1)), 2),
        RunningJob(20.0, 1, jobs()[1], 0.0, ((2, 1),), 1),
    ]
    free = np.zeros((4, 4), dtype=np.int64)
    free[3, 0] = 1
    free.flags.writeable = False
    view = SimpleNamespace(
        time=1.0,
        platform=platform,
        free=free,
        free_total=(1, 0, 0, 0),
        free_bb=40.0,
        exclusive=False,
        queue=jobs()[2:],
        running=running,
        expected_end=lambda r: max(r.est_end, 1.0),
    )
    decision = LargestFirst(FirstFit()).decide(view, np.random.default_rng(0))  # type: ignore[arg-type]
    assert decision.actions == (Start(5, ((3, 1),)),)
