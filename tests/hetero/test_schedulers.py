"""Seed 000 schedulers: EBF (AccaSim EASY with allocator-placed reservations) and PRB.

Every registered scheduler x allocator pair, these included, also runs through the
conformance suite (``test_conformance.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import allocators_for, make_policy
from market_hpc.policies.hetero.allocators import Weighted
from market_hpc.policies.hetero.schedulers import Ebf, Prb

HETERO = {"balanced", "weighted", "priority-weighted"}


def core_job(
    job_id: int, submit: float, cores: int, run: float, estimate: float | None = None
) -> Job:
    return Job(job_id, submit, run, run if estimate is None else estimate, units=cores)


def run(
    jobs: list[Job], platform: str, scheduler: str, allocator: str = "first-fit", **params: object
) -> pd.DataFrame:
    policy = make_policy(scheduler, allocator, scheduler_params=params or None)
    model = HPCModel(jobs, platform, policy=policy)
    model.run()
    return model.recorder.jobs_frame().set_index("job_id")


def test_every_scheduler_composes_with_the_hetero_allocators() -> None:
    for scheduler in ("fifo", "sjf", "easy", "ebf", "prb"):
        assert HETERO <= set(allocators_for(scheduler))


# ------------------------------------------------------------------------ EBF
# On 4 nodes x 4 cores, A (8 cores) runs 4 s but is expected to run 10; B (12 cores) is
# blocked at t = 1 and reserved on nodes 0-2 at t = 10; C ends by then and may use a
# reserved node; D (expected 20 s) may not.
EBF_JOBS = [
    core_job(1, 0, 8, 4, 10),
    core_job(2, 1, 12, 5),
    core_job(3, 1, 1, 5),
    core_job(4, 1, 1, 20),
]


def test_ebf_reserves_the_nodes_the_allocator_picks_and_backfills_around_them() -> None:
    policy = make_policy("ebf", "first-fit")
    model = HPCModel(EBF_JOBS, "nodes=4,cores=4", policy=policy)
    model.run(until=1.0)
    assert isinstance(policy, Ebf)
    assert (policy.blocked, policy.reserved_at, policy.reserved_nodes.tolist()) == (
        2,
        10.0,
        [0, 1, 2],
    )
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")
    assert frame.loc[3, "nodes"] == "2:1"  # ends by the reservation: a reserved node is fine
    assert frame.loc[4, "nodes"] == "3:1"  # runs past it: only the unreserved node
    # static reservation (AccaSim): A ends at 4, but B waits for its reservation time
    # (no event at t = 10: the scheduler's wake-up request starts it)
    assert frame.loc[2, "start_time"] == 10.0
    assert frame.loc[2, "nodes"] == "0:4;1:4;2:4"


def test_ebf_without_static_reservation_tries_the_head_at_every_decision() -> None:
    frame = run(EBF_JOBS, "nodes=4,cores=4", "ebf", static_reservation=False)
    assert frame.loc[2, "start_time"] == 4.0
    assert frame.loc[4, "nodes"] == "3:1"


def test_ebf_reservation_search_counts_jobs_started_in_the_same_decision() -> None:
    # at t = 0: A (4 cores, 10 s) starts, B (12 cores) is blocked until A is expected to end
    jobs = [core_job(1, 0, 4, 10), core_job(2, 0, 12, 5), core_job(3, 0, 4, 30)]
    frame = run(jobs, "nodes=3,cores=4", "ebf")
    assert frame.loc[2, "start_time"] == 10.0
    assert frame.loc[3, "start_time"] == 15.0  # would delay B: waits


def test_ebf_matches_fcfs_when_nothing_can_be_backfilled() -> None:
    jobs = [core_job(i, float(i), 4, 10) for i in range(1, 6)]
    assert run(jobs, "nodes=1,cores=4", "ebf")["start_time"].tolist() == [1, 11, 21, 31, 41]


# ------------------------------------------------------------------------ PRB
def test_prb_orders_by_relative_wait_then_demand() -> None:
    prb = Prb(Weighted(), expected_wait={1: 100.0})
    jobs = [
        Job(1, 0.0, 5.0, 50.0, units=1, queue=0),  # waited 11 s, queue expects 1800: 11 * 18
        Job(2, 8.0, 5.0, 10.0, units=1, queue=1),  # waited 3 s, queue expects 100: 3 * 18 * 18
        Job(3, 0.0, 5.0, 10.0, units=1, queue=0),  # as job 1 with a smaller demand
    ]
    assert [j.job_id for j in prb.order(jobs, now=10.0)] == [2, 3, 1]
    plain = Prb(Weighted())  # no data: longest waiting first
    assert [j.job_id for j in plain.order(jobs, now=10.0)] == [3, 1, 2]


def test_prb_skips_jobs_that_do_not_fit() -> None:
    jobs = [core_job(1, 0, 3, 10), core_job(2, 1, 2, 5), core_job(3, 2, 1, 5)]
    frame = run(jobs, "nodes=1,cores=4", "prb")
    assert frame.loc[3, "start_time"] == 2.0  # job 2 waits, job 3 goes around it
    assert frame.loc[2, "start_time"] == 10.0
    blocking = run(jobs, "nodes=1,cores=4", "fifo")
    assert blocking.loc[3, "start_time"] == 10.0


def test_prb_rejects_non_positive_expected_waits() -> None:
    from market_hpc.errors import ConfigError

    with pytest.raises(ConfigError, match="expected waits must be > 0"):
        make_policy("prb", "first-fit", scheduler_params={"expected_wait": {0: 0.0}})


# ------------------------------------------------------------ pass order (SJF)
class SpyWeighted(Weighted):
    def __init__(self) -> None:
        super().__init__()
        self.passes: list[list[int]] = []

    def begin_pass(self, jobs, view) -> None:  # type: ignore[no-untyped-def]
        self.passes.append([j.job_id for j in jobs])
        super().begin_pass(jobs, view)


@pytest.mark.parametrize(
    ("scheduler", "expected"), [("sjf", [3, 2, 1]), ("fifo", [1, 2, 3]), ("prb", [3, 2, 1])]
)
def test_schedulers_announce_their_pass_order(scheduler: str, expected: list[int]) -> None:
    from market_hpc.policies.registry import scheduler_entry

    spy = SpyWeighted()
    policy = scheduler_entry(scheduler).factory(spy)
    # job 9 leaves one core free; the others wait (PRB: equal waits, smallest demand first)
    jobs = [
        core_job(9, 0, 3, 100),
        core_job(1, 1, 4, 30),
        core_job(2, 1, 4, 20),
        core_job(3, 1, 4, 10),
    ]
    model = HPCModel(jobs, "nodes=1,cores=4", policy=policy)
    model.run(until=1.0)
    assert spy.passes[-1] == expected


def test_same_seed_same_results_with_stateful_allocators() -> None:
    from market_hpc.workload.eurora import eurora_like

    jobs = list(eurora_like(400, seed=3, month="2014-09"))
    frames = [run(jobs, "eurora", "ebf", "priority-weighted") for _ in range(2)]
    pd.testing.assert_frame_equal(*frames)
    assert np.isfinite(frames[0]["end_time"]).all()


def test_a_scheduler_asks_a_new_allocator_whether_it_looks_ahead() -> None:
    # fifo/sjf ask pass_aware once per allocator object, not per decision: an allocator set
    # after the first decision is asked again (its passes announced), the old one no more
    from market_hpc.policies.allocators import FirstFit
    from market_hpc.policies.registry import scheduler_entry

    policy = scheduler_entry("fifo").factory(FirstFit())
    jobs = [core_job(9, 0, 3, 100), core_job(1, 1, 4, 30), core_job(2, 2, 4, 20)]
    model = HPCModel(jobs, "nodes=1,cores=4", policy=policy)
    model.run(until=1.0)  # decided with first-fit: no pass to announce
    first, second = SpyWeighted(), SpyWeighted()
    policy.allocator = first
    model.run(until=2.0)
    assert first.passes == [[1, 2]]
    policy.allocator = second
    model.run(until=200.0)
    assert first.passes == [[1, 2]] and second.passes and second.passes[0][0] in (1, 2)
