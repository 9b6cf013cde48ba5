"""Slurm's multifactor priority: each factor on hand-checkable numbers, then the order the
``slurm`` scheduler serves (priority_multifactor.c, job_scheduler.c sort_job_queue2)."""

from __future__ import annotations

import math

import pytest

from market_hpc.algorithms.slurm.priority import (
    FairShareUsage,
    Weights,
    age_factor,
    decay_factor,
    effective_usage,
    fairshare_factor,
    job_size_factor,
    weighted_priority,
)
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import make_policy


def starts(jobs, platform="nodes=1,cores=4", **params):
    policy = make_policy("slurm", "first-fit", scheduler_params=params)
    model = HPCModel(jobs, platform=platform, policy=policy, record_timeseries=False)
    model.run()
    frame = model.recorder.jobs_frame()
    return dict(zip(frame["job_id"].tolist(), frame["start_time"].tolist())), model


@pytest.mark.parametrize(
    ("age", "max_age", "expected"),
    [(0.0, 600.0, 0.0), (150.0, 600.0, 0.25), (600.0, 600.0, 1.0), (9000.0, 600.0, 1.0)],
)
def test_age_factor_grows_linearly_to_max_age(age, max_age, expected):
    assert age_factor(age, max_age) == expected


@pytest.mark.parametrize(
    ("cpus", "nodes", "cluster", "small", "expected"),
    [
        (8, 1, 32, False, (1 / 1 + 8 / 32) / 2),  # favour large: node term 1 on one node
        (32, 1, 32, False, 1.0),
        (8, 1, 32, True, (0 + 24 / 32) / 2),  # favour small: node term 0 on one node
        (1, 10, 100, True, (9 / 10 + 99 / 100) / 2),
        (50, 10, 100, False, (1 / 10 + 50 / 100) / 2),
    ],
)
def test_job_size_factor(cpus, nodes, cluster, small, expected):
    assert job_size_factor(cpus, 1, nodes, cluster, small) == pytest.approx(expected)


def test_fair_share_factor_halves_when_usage_equals_shares():
    assert fairshare_factor(0.25, 0.25) == 0.5
    assert fairshare_factor(0.5, 0.25) == 0.25
    assert fairshare_factor(0.5, 0.25, dampening=2) == 0.5
    assert fairshare_factor(0.1, 0.0) == 0.0


def test_classic_effective_usage_under_one_account():
    # two users of the only account, 3:1 usage, equal shares
    assert effective_usage(0.75, 1.0, 1.0, 2.0) == 0.875
    usage = FairShareUsage(half_life=0.0, shares={1: 1.0, 2: 1.0}, account=True)
    usage.add(1, cpus=3, run_delta=100.0)
    usage.add(2, cpus=1, run_delta=100.0)
    assert usage.factor(1) == pytest.approx(2 ** -(0.875 / 0.5))  # 0.2973
    assert usage.factor(2) == pytest.approx(2 ** -(0.625 / 0.5))  # 0.4204
    flat = FairShareUsage(half_life=0.0, shares={1: 1.0, 2: 1.0}, account=False)
    flat.add(1, cpus=3, run_delta=100.0)
    flat.add(2, cpus=1, run_delta=100.0)
    assert flat.factor(1) == pytest.approx(2 ** -(0.75 / 0.5))


def test_usage_decays_by_half_over_the_half_life():
    assert decay_factor(600.0) == 1 - 0.693 / 600
    usage = FairShareUsage(half_life=600.0, shares={1: 1.0})
    usage.add(1, cpus=1, run_delta=1.0)
    before = usage.raw[1]
    usage.decay(600.0)
    assert usage.raw[1] / before == pytest.approx(0.5, abs=1e-3)
    assert math.isclose(decay_factor(0.0), 1.0)


def test_priority_is_the_truncated_weighted_sum_at_least_one():
    weights = Weights(age=1000, fairshare=10000, job_size=100, partition=10, qos=7)
    assert weighted_priority(weights, 0.25, 0.5, 0.625, 1.0, 0.0) == 250 + 5000 + 62 + 10
    assert weighted_priority(Weights(), 1, 1, 1, 1, 1) == 1


def test_basic_priority_serves_submit_order():
    jobs = [
        Job(1, 0.0, 10.0, 10.0, units=4),
        Job(2, 1.0, 10.0, 10.0, units=1),
        Job(3, 2.0, 10.0, 10.0, units=4),
    ]
    started, _ = starts(jobs)
    assert started == {1: 0.0, 2: 10.0, 3: 20.0}  # 3 cannot pass 2 (FIFO), 2 waits for 1


def test_job_size_weight_serves_the_largest_first():
    jobs = [
        Job(1, 0.0, 10.0, 10.0, units=4),
        Job(2, 1.0, 10.0, 10.0, units=1),
        Job(3, 2.0, 10.0, 10.0, units=4),
    ]
    started, _ = starts(
        jobs, priority_type="multifactor", weight_job_size=1000, scheduler_type="builtin"
    )
    # job 3: (1 + 4/4) / 2 * 1000 = 1000, job 2: (1 + 1/4) / 2 * 1000 = 625
    assert started == {1: 0.0, 3: 10.0, 2: 20.0}
    started, _ = starts(
        jobs,
        priority_type="multifactor",
        weight_job_size=1000,
        favor_small=True,
        scheduler_type="builtin",
    )
    # favouring small: job 2: (0 + 3/4) / 2 * 1000 = 375, job 3: (0 + 0) / 2 = 0 (priority 1)
    assert started == {1: 0.0, 2: 10.0, 3: 20.0}


def test_fair_share_serves_the_user_who_used_less():
    # user 1 runs first; both users then queue a full-machine job; user 2 goes first
    jobs = [
        Job(1, 0.0, 100.0, 100.0, units=4, user=1),
        Job(2, 1.0, 10.0, 10.0, units=4, user=1),
        Job(3, 2.0, 10.0, 10.0, units=4, user=2),
    ]
    started, _ = starts(
        jobs,
        priority_type="multifactor",
        weight_fairshare=10000,
        calc_period=50.0,
        scheduler_type="builtin",
        decay_half_life=0.0,
    )
    assert started == {1: 0.0, 3: 100.0, 2: 110.0}
    started, _ = starts(jobs, scheduler_type="builtin")  # basic: submit order
    assert started == {1: 0.0, 2: 100.0, 3: 110.0}


def test_age_weight_lets_an_old_job_overtake():
    jobs = [
        Job(1, 0.0, 100.0, 100.0, units=4),
        Job(2, 1.0, 10.0, 10.0, units=1),
        Job(3, 50.0, 10.0, 10.0, units=4),
    ]
    started, _ = starts(
        jobs,
        priority_type="multifactor",
        weight_age=1000,
        weight_job_size=600,
        max_age=100.0,
        calc_period=10.0,
        scheduler_type="builtin",
    )
    # at t=100: job 2 age 99 -> 990 + 600*(1+1/4)/2 = 1365; job 3 age 50 -> 500 + 600 = 1100
    assert started == {1: 0.0, 2: 100.0, 3: 110.0}


def test_the_factor_matches_sshare_of_the_real_slurm():
    # sshare -a -l of the validation's Slurm 22.05 (one account beside the root user, its
    # four users and root at 1 share each): mhu1 NormUsage 0.042829 -> EffectvUsage
    # 0.234264, NormShares 0.1, FairShare 0.197150
    assert effective_usage(0.042829, 1.0, 1.0, 5.0) == pytest.approx(0.234263, abs=1e-6)
    assert fairshare_factor(0.234264, 0.5 * 1 / 5) == pytest.approx(0.197150, abs=1e-6)
    usage = FairShareUsage(half_life=0.0, shares={1: 1, 2: 1, 3: 1, 4: 1, -2: 1}, account_share=0.5)
    usage.add(1, cpus=1, run_delta=0.042829)
    usage.add(3, cpus=1, run_delta=1 - 0.042829)
    assert usage.factor(1) == pytest.approx(0.197150, abs=1e-5)
