"""sched/backfill as the ``slurm`` scheduler runs it, on cases checked by hand
(backfill.c _attempt_backfill), the node-space map, and preemption by partition tier."""

from __future__ import annotations

import numpy as np

from market_hpc.algorithms.slurm.backfill import NodeSpace, slot
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import make_policy

# One node of 4 cores. Job 1 holds 2 cores until 100; job 2 (4 cores) must wait for it
# and gets a reservation at 100; job 3 (2 cores, 50 s) fits before it; job 4 (2 cores,
# 200 s) would overlap the reservation.
CASE = [
    Job(1, 0.0, 100.0, 100.0, units=2),
    Job(2, 1.0, 50.0, 50.0, units=4),
    Job(3, 2.0, 50.0, 50.0, units=2),
    Job(4, 3.0, 200.0, 200.0, units=2),
]


def run(jobs, platform="nodes=1,cores=4", **params):
    policy = make_policy("slurm", "first-fit", scheduler_params=params)
    model = HPCModel(jobs, platform=platform, policy=policy, record_timeseries=False)
    model.run()
    frame = model.recorder.jobs_frame()
    return dict(zip(frame["job_id"].tolist(), frame["start_time"].tolist())), model, frame


def test_backfill_starts_a_job_before_the_reservation_on_the_next_interval():
    started, model, _ = run(CASE, bf_interval=30.0, bf_resolution=1.0)
    # passes at 0, 30, 60, ... from the first decision: job 3 backfilled at 30 (ends 80 <= 100)
    assert started == {1: 0.0, 3: 30.0, 2: 100.0, 4: 150.0}
    assert model.policy.stats["slurm_backfill_starts"] == 1


def test_the_main_scheduler_alone_blocks_behind_the_first_waiting_job():
    started, _, _ = run(CASE, scheduler_type="builtin")
    assert started == {1: 0.0, 2: 100.0, 3: 150.0, 4: 150.0}


def test_resolution_widens_the_reserved_slot():
    # bf_resolution 60: job 2's slot is [60, 180), which job 3's [30, 80) overlaps
    started, _, _ = run(CASE, bf_interval=30.0, bf_resolution=60.0)
    assert started == {1: 0.0, 2: 100.0, 3: 150.0, 4: 150.0}


def test_no_reservation_beyond_the_window():
    # without job 3: at 30 job 2's start (100) is beyond 30 + 60 s, so it has no reservation
    # and job 4 (200 s) backfills, delaying job 2 to 230; a day's window reserves job 2
    jobs = [job for job in CASE if job.job_id != 3]
    started, _, _ = run(jobs, bf_interval=30.0, bf_resolution=1.0, bf_window=60.0)
    assert started == {1: 0.0, 4: 30.0, 2: 230.0}
    started, _, _ = run(jobs, bf_interval=30.0, bf_resolution=1.0)
    assert started == {1: 0.0, 2: 100.0, 4: 150.0}


def test_bf_max_job_test_limits_the_jobs_a_pass_looks_at():
    started, _, _ = run(CASE, bf_interval=30.0, bf_resolution=1.0, bf_max_job_test=1)
    assert started == {1: 0.0, 2: 100.0, 3: 150.0, 4: 150.0}  # only job 2 tested


def test_bf_max_job_start_limits_the_starts_of_a_pass():
    jobs = [
        Job(1, 0.0, 100.0, 100.0, units=2),
        Job(2, 1.0, 50.0, 50.0, units=4),
        Job(3, 2.0, 20.0, 20.0, units=1),
        Job(4, 2.0, 20.0, 20.0, units=1),
    ]
    started, _, _ = run(jobs, bf_interval=30.0, bf_resolution=1.0, bf_max_job_start=1)
    assert started == {1: 0.0, 3: 30.0, 4: 60.0, 2: 100.0}  # one start per pass
    started, _, _ = run(jobs, bf_interval=30.0, bf_resolution=1.0)
    assert started == {1: 0.0, 3: 30.0, 4: 30.0, 2: 100.0}


def test_a_job_above_the_partition_max_time_is_dropped(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n1 CPUs=4\nPartitionName=short Nodes=n1 MaxTime=1 Default=YES\n")
    _, model, frame = run([Job(1, 0.0, 30.0, 30.0), Job(2, 0.0, 90.0, 90.0)], slurm_conf=str(conf))
    assert frame.set_index("job_id")["status"].to_dict() == {1: "finished", 2: "dropped"}
    assert model.policy.stats["slurm_dropped"] == 1


def test_a_higher_tier_partition_preempts_with_suspend(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "NodeName=n1 CPUs=4\nPartitionName=low Nodes=n1 PriorityTier=1 Default=YES\n"
        "PartitionName=high Nodes=n1 PriorityTier=2\n"
        "PreemptType=preempt/partition_prio\nPreemptMode=SUSPEND\n"
    )
    jobs = [Job(1, 0.0, 100.0, 100.0, units=4, queue=0), Job(2, 10.0, 20.0, 20.0, units=4, queue=1)]
    _, model, frame = run(jobs, slurm_conf=str(conf))
    rows = frame.set_index("job_id")
    assert rows.loc[2, "start_time"] == 10.0 and rows.loc[2, "end_time"] == 30.0
    assert rows.loc[1, "hold_count"] == 1 and rows.loc[1, "end_time"] == 120.0  # 90 s left after 30
    assert model.policy.stats["slurm_preemptions"] == 1


def test_node_space_reserves_whole_nodes():
    capacity = np.array([[4], [4]])
    space = NodeSpace(capacity, np.array([[4], [4]]))
    every = np.ones(2, dtype=bool)
    space.reserve(*slot(10.0, 20.0, 1.0), ((0, 1),))  # one core of node 0 reserved at 10-30
    assert space.place_at(0.0, (1,), 4, 20.0, every) == ((1, 4),)  # node 0 is out for [0, 20)
    assert space.place_at(0.0, (1,), 5, 5.0, every) == ((0, 4), (1, 1))  # ends before 10
    assert space.earliest(0.0, (1,), 8, 20.0, every, 100.0) == (30.0, ((0, 4), (1, 4)))


def test_usage_is_charged_at_decay_passes_only_unless_charge_at_end():
    # user 1's job ends between passes (at 30, passes every 50 s): Slurm 22.05 charges it
    # nothing, so user 1 keeps the higher fair-share factor; charge_at_end charges 4 x 30
    jobs = [
        Job(1, 0.0, 30.0, 30.0, units=4, user=1),
        Job(2, 1.0, 60.0, 60.0, units=4, user=2),
        Job(3, 2.0, 200.0, 200.0, units=4, user=2),
        Job(4, 60.0, 10.0, 10.0, units=4, user=1),
        Job(5, 61.0, 10.0, 10.0, units=4, user=2),
    ]
    params = {
        "priority_type": "multifactor",
        "weight_fairshare": 10000,
        "calc_period": 50.0,
        "decay_half_life": 0.0,
        "scheduler_type": "builtin",
    }
    started, model, _ = run(jobs, **params)
    # user 2's job 2 runs 30-90 and is charged at the pass at 50; user 1's jobs end between
    # passes and are never charged, so at 90 user 1's job 4 outranks user 2's 3 and 5
    assert model.policy.usage.raw.get(1, 0.0) == 0.0
    assert started[4] == 90.0 and started[4] < started[3] and started[4] < started[5]
    _, charged, _ = run(jobs, charge_at_end=True, **params)
    assert charged.policy.usage.raw[1] == 4 * 30 + 4 * 10  # jobs 1 and 4, charged at their end
