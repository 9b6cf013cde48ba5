"""The one EASY pass (``algorithms.easy.easy_pass``) that ``easy``, every ``Backfilling``
order and each hybrid-queue partition run: hand-checked passes on a pool of cores, the
machine-wide reservation a partition's pass honours, the free amounts recounted after
node-exclusive starts, and the cores-only reservation walk against the general one."""

from __future__ import annotations

import random

from invariants import random_workload

from market_hpc.algorithms import easy
from market_hpc.algorithms.easy import (
    NO_RESERVATION,
    Reservation,
    easy_pass,
    shadow_and_extra,
    shadow_and_extra_cores,
)
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job


class Pool:
    """A machine of ``cores`` interchangeable cores: a job fits when its cores are free."""

    def __init__(self, cores: int) -> None:
        self.free = cores
        self.started: list[int] = []

    def place(self, job: Job) -> int | None:
        return job.cores if job.cores <= self.free else None

    def start(self, job: Job, cores: int) -> None:
        self.free -= cores
        self.started.append(job.job_id)


def job(job_id: int, cores: int, estimate: float) -> Job:
    return Job(job_id, 0.0, estimate, estimate, units=cores)


# Four free cores; a running job releases two more at t=10.
RUNNING = [(10.0, (2, 0, 0, 0))]
QUEUE = [job(1, 3, 50.0), job(2, 4, 50.0), job(3, 1, 10.0), job(4, 1, 30.0), job(5, 1, 30.0)]


def run_pass(**options: object) -> tuple[Pool, Reservation]:
    pool = Pool(4)
    left = easy_pass(QUEUE, 0.0, (4, 0, 0, 0), pool.place, pool.start, lambda: RUNNING, **options)  # type: ignore[arg-type]
    return pool, left


def test_head_reservation_and_backfilling_by_hand() -> None:
    # 1 starts (1 core left). 2 needs 4: 1 + 2 at t=10 is 3, + 3 when 1 ends at t=50: shadow
    # 50, extra 6 - 4 = 2. 3 ends by the shadow; it and 4 leave no core for 5.
    pool, left = run_pass()
    assert pool.started == [1, 3]
    assert left == NO_RESERVATION
    pool = Pool(5)
    easy_pass(QUEUE, 0.0, (5, 0, 0, 0), pool.place, pool.start, lambda: RUNNING)
    # 5 cores: 1 starts, 2 heads with shadow 10 (2 + 2 = 4 cores), extra 0: only 3 (ends
    # at 10) may run; 4 and 5 would hold a core past the shadow.
    assert pool.started == [1, 3]


def test_jobs_past_the_shadow_use_the_extra() -> None:
    pool = Pool(5)
    queue = [job(1, 2, 50.0), job(2, 4, 50.0), job(3, 1, 30.0), job(4, 1, 30.0), job(5, 1, 30.0)]
    easy_pass(queue, 0.0, (5, 0, 0, 0), pool.place, pool.start, lambda: RUNNING)
    # 1 starts (3 left). 2: 3 + 2 at t=10 = 5 >= 4: shadow 10, extra 1. 3 takes the extra;
    # 4 and 5 would delay 2.
    assert pool.started == [1, 3]


def test_a_partition_pass_honours_the_outer_reservation() -> None:
    # A machine-wide reservation at t=20 with one spare core: job 1 (ends at 50) may take
    # only that core, so it becomes the head; 3 ends by 20, 4 and 5 (end 30) need the spare
    # core, which 1 never took: 4 takes it, 5 finds none left.
    outer = Reservation(20.0, (1, 0, 0, 0))
    pool, left = run_pass(outer=outer)
    assert pool.started == [3, 4]
    assert left == Reservation(20.0, (0, 0, 0, 0))


def test_recount_replaces_free_minus_needs_after_the_in_order_starts() -> None:
    # Free minus job 1's needs leaves one core (3 backfills, as above); a node-exclusive
    # start that took a whole node may leave none: the recount says so, nothing backfills.
    pool, _ = run_pass(recount=lambda: (0, 0, 0, 0))
    assert pool.started == [1]


def test_cores_only_reservation_equals_the_general_one() -> None:
    rng = random.Random(7)
    for _ in range(500):
        ends = sorted(float(rng.randint(0, 20)) for _ in range(rng.randint(0, 8)))
        releases = [(end, rng.randint(1, 5)) for end in ends]
        free, need = rng.randint(0, 6), rng.randint(1, 25)
        general = shadow_and_extra(
            (free, 0, 0, 0), [(e, (a, 0, 0, 0)) for e, a in releases], (need, 0, 0, 0)
        )
        shadow, extra = shadow_and_extra_cores(free, releases, need)
        assert (shadow, (extra, 0, 0, 0)) == general


def test_cores_only_reservation_on_a_multi_resource_platform_equals_the_general_one(
    monkeypatch,
) -> None:  # type: ignore[no-untyped-def]
    """On a platform with GPUs, EASY walks cores alone while the head, the running jobs and
    the pass's starts hold cores only: every reservation equals the general walk's."""
    reservation = easy.reservation
    fast_paths = []

    def both(free, releases, need, started=(), cores_releases=None):  # type: ignore[no-untyped-def]
        fast = reservation(free, releases, need, started, cores_releases)
        general = reservation(free, releases, need, started)
        fast_paths.append(
            cores_releases is not None
            and not any(need[1:])
            and all(not any(a[1:]) for _, a in started)
            and cores_releases() is not None
        )
        assert fast == general
        return fast

    monkeypatch.setattr(easy, "reservation", both)
    for exclusive in (False, True):
        for seed in range(3):
            jobs = random_workload(
                seed, "nodes=6,cores=4,gpus=1", [(1, 0, 0, 0)] * 4 + [(2, 1, 0, 0)], count=300
            )
            HPCModel(
                jobs, "nodes=6,cores=4,gpus=1", "easy", "first-fit", exclusive=exclusive, seed=1
            ).run()
    assert sum(fast_paths) > 50 and not all(fast_paths)  # both walks were needed
