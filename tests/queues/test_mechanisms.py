"""Seed 004 mechanisms, each pinned by a hand-checkable case: lower bounds (idle queues
included, and a planned month held to them), SLSQP status, the DP-NLPM decision, epoch
weights, DQR merges (split halves, per-queue degradation), the pool's global stop, the
pool's admission rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from market_hpc.algorithms.queues.fit import (
    NlpProblem,
    epoch_weights,
    fit_cubic,
    settle,
    solve_nlp,
    weighted_waits,
)
from market_hpc.algorithms.queues.search import (
    DqrLog,
    Evaluation,
    History,
    carve_pool,
    dqr,
    utilisation_bounds,
)
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import load_platform
from market_hpc.domain.queues import QueueConfig, QueueSpec
from market_hpc.experiment.config import QueuesConfig
from market_hpc.experiment.queues import plan_period
from market_hpc.policies import make_policy


def _util_evaluate(knees: dict[int, float]):  # type: ignore[no-untyped-def]
    """Utilisation of queue i on p nodes: min(1, knee_i / p); a queue without a knee has no jobs."""

    def evaluate(configs):  # type: ignore[no-untyped-def]
        out = []
        for config in configs:
            utils = tuple(
                min(1.0, knees[i] / p) if i in knees else 0.0
                for i, p in enumerate(config.partitions)
            )
            counts = tuple(10 if i in knees else 0 for i in range(len(config.queues)))
            out.append(Evaluation(tuple(0.0 for _ in utils), counts, utils))
        return out

    return evaluate


def test_lower_bound_is_the_utilisation_knee_and_an_idle_queue_keeps_its_minimum() -> None:
    config = QueueConfig((QueueSpec("a", 1, 4), QueueSpec("idle", 5, 8)), partitions=(10, 10))
    # grid 2..18 in 8 points: {2, 4, 7, 9, 11, 13, 16, 18}; a: util 1, 1, 6/7 = 0.857 < 0.9 -> lb 4
    bounds = utilisation_bounds(config, _util_evaluate({0: 6.0}), [2, 2], 20, points=8, tau=0.9)
    assert bounds == (4, 2)  # the idle queue (utilisation 0 everywhere) stays at its minimum


def test_a_planned_month_keeps_every_partition_at_its_utilisation_knee() -> None:
    """DP-NLPM plans within Eq. 4, P_i >= lb_i, with lb_i from the utilisation sweep.

    16 one-core nodes; Table I scaled to 16 cores: idqueue [1, 1] core <= 2 h, small and
    small72 [1, 1], medium [2, 4], large [5, 16] (reservations). One day of history: every
    hour 10 one-core 1 h jobs (idqueue: 240 node-hours) and 3 four-core 1 h jobs (medium:
    288 node-hours); small and small72 get none (minimum 1 node each).

    idqueue is swept over {1, 4, 7, 10} (up to 16 - 1 - 1 - 4): on 10 nodes nothing waits
    and U = 240 / (10 x 24) = 1; on 7 it is busy until hour 35, U = 240 / (7 x 35) = 0.98;
    on 4 and 1 always busy, U = 1; so lb = 10. medium is swept over {4, 7, 10, 13}: on 4
    and on 7 its jobs run one at a time for 72 h, U = 1 then 4 / 7 = 0.57 < 0.9, so lb = 4.
    The bounds (10, 1, 1, 4) fill the machine, so the only plan is the bounds themselves.
    Planned from the largest requests alone (1 and 4 nodes) the floors would be the
    relaxed Eq. 6 half-shares, ceil(0.5 x 16 x 240 / 528) = 4 and ceil(0.5 x 16 x 288 / 528)
    = 5 nodes, and the NLP would be free to give the idqueue fewer nodes than it keeps busy.
    """
    hour = 3600.0
    requests = [(h * hour, cores) for h in range(24) for cores in [1] * 10 + [4] * 3]
    jobs = [
        Job(i + 1, submit, hour, hour, units=cores) for i, (submit, cores) in enumerate(requests)
    ]
    settings = QueuesConfig(strategy="dpnlpm", samples=10, lb_points=4, period_days=1.0)
    plan = plan_period(
        jobs,
        0.0,
        86400.0,
        load_platform("nodes=16,cores=1"),
        settings,
        seed=1,
        strategies=("dpnlpm",),
    )
    dpnlpm, details = plan.configs["dpnlpm"], plan.details["dpnlpm"]
    assert dpnlpm.names == ("idqueue", "small", "small72", "medium", "large")
    assert dpnlpm.partitions == (10, 1, 1, 4, 0)
    assert details["jobs"] == [240, 0, 0, 72]
    assert details["lower"] == details["floor"] == [10, 1, 1, 4]
    assert all(size >= low for size, low in zip(dpnlpm.partitions, details["lower"]))


def _quadratic() -> tuple[NlpProblem, object]:
    x = np.random.default_rng(0).random((50, 2))
    truth = lambda s: (s[0] / 100 - 0.5) ** 2 + (s[1] / 100 - 0.2) ** 2
    surrogate = fit_cubic(x, (x[:, 0] - 0.5) ** 2 + (x[:, 1] - 0.2) ** 2)
    return NlpProblem(100, (10, 10, 10), (80, 80, 80), (surrogate,), (1.0,)), truth


def test_failed_slsqp_solves_are_retried_then_discarded() -> None:
    problem, _ = _quadratic()
    # one iteration cannot converge: every start fails twice (first try + retry) and is discarded
    solved = solve_nlp(problem, [(10, 10, 80), (80, 10, 10)], max_iter=1)
    assert (solved.solves, solved.failures, solved.retries, solved.discarded) == (4, 4, 2, 2)
    assert solved.sizes is None and sum(solved.messages.values()) == 4
    samples = [(10, 10, 80), (80, 10, 10)]
    sizes, record = settle(
        problem, samples, samples, np.array([3.0, 2.0]), lambda s: 0.0, max_iter=1
    )
    assert sizes == (80, 10, 10) and record["source"] == "fallback"


def test_the_nlp_optimum_is_kept_when_it_simulates_better_than_every_sample() -> None:
    problem, truth = _quadratic()
    samples = [(34, 33, 33), (10, 10, 80)]
    waits = np.array([truth(s) for s in samples])  # 0.0305, 0.17
    sizes, record = settle(problem, samples, samples, waits, truth)
    assert sizes == (50, 20, 30) and record["source"] == "nlp" and record["nlp_sim_h"] == 0.0
    assert record["nlp_gain_pct"] == pytest.approx(100.0)
    # the same optimum simulating worse than the best sample: the sample is kept
    sizes, record = settle(problem, samples, samples, waits, lambda s: 1.0)
    assert sizes == (34, 33, 33) and record["source"] == "sample"


def test_recent_epochs_weigh_more() -> None:
    assert epoch_weights(3) == pytest.approx((1 / 3, 2 / 3, 1.0))
    # A is best in the two oldest epochs, B in the newest: (3 + 6 + 0) / 2 = 4.5 < 10 / 2 = 5
    waits = weighted_waits(
        [np.array([9.0, 0.0]), np.array([9.0, 0.0]), np.array([0.0, 10.0])], epoch_weights(3)
    )
    assert waits.tolist() == [4.5, 5.0]


def _table_evaluate(table):  # type: ignore[no-untyped-def]
    """Waits per queue name from ``table`` (name -> (queue wait, wait per history job))."""

    def evaluate(configs):  # type: ignore[no-untyped-def]
        out = []
        for config in configs:
            waits, counts, job_waits = [], [], np.full(4, np.nan)
            for queue, size in zip(config.queues, config.partitions):
                wait, per_job = table(queue.name, size)
                waits.append(wait)
                counts.append(int(np.isfinite(per_job).sum()))
                job_waits = np.where(np.isfinite(per_job), per_job, job_waits)
            out.append(
                Evaluation(tuple(waits), tuple(counts), tuple(0.5 for _ in waits), job_waits)
            )
        return out

    return evaluate


# history: two jobs of 2 cores (queue a) and two of 6 cores (queue b)
HISTORY = History(np.array([2, 2, 6, 6]), np.array([60.0] * 4), np.array([60.0] * 4))
A_JOBS, B_JOBS = np.array([0, 0, np.nan, np.nan]), np.array([np.nan, np.nan, 0, 0])


def test_a_merge_that_lowers_the_wait_is_applied() -> None:
    def table(name, size):  # type: ignore[no-untyped-def]
        wait = 1000.0 / size
        return wait, {"a": A_JOBS, "b": B_JOBS}.get(name, np.zeros(4)) + wait

    config = QueueConfig((QueueSpec("a", 1, 4), QueueSpec("b", 5, 8)), partitions=(5, 5))
    log = DqrLog()
    found, wait = dqr(config, HISTORY, _table_evaluate(table), cores_per_node=1, log=log)
    assert found.names == ("a+b",) and found.partitions == (10,) and wait == 100.0
    assert (log.merges_tried, log.merges_kept) == (1, 1)


def test_a_merge_may_not_push_one_queues_jobs_past_the_degradation_limit() -> None:
    # before: a's jobs wait 100 s, b's 1000 s (overall 550); merged: a's 200 s, b's 0 (overall 100)
    def table(name, size):  # type: ignore[no-untyped-def]
        if name == "a":
            return 100.0, A_JOBS + 100.0
        if name == "b":
            return 1000.0, B_JOBS + 1000.0
        return 100.0, np.array([200.0, 200.0, 0.0, 0.0])

    config = QueueConfig((QueueSpec("a", 1, 4), QueueSpec("b", 5, 8)), partitions=(5, 5))
    log = DqrLog()
    found, _ = dqr(
        config,
        HISTORY,
        _table_evaluate(table),
        cores_per_node=1,
        degradation=0.30,
        floor=60.0,
        log=log,
    )
    assert found == config and log.merges_over_limit == 1  # 200 > 1.3 x 100
    found, _ = dqr(
        config, HISTORY, _table_evaluate(table), cores_per_node=1, degradation=1.0, floor=60.0
    )
    assert found.names == ("a+b",)  # 200 <= 2 x 100


def test_split_halves_are_never_merged_back_even_through_a_third_queue() -> None:
    # the wait falls with the largest partition: every
    # merge helps, but a.1 and a.2 come from one split
    def table(name, size):  # type: ignore[no-untyped-def]
        return 1000.0 / size, np.full(4, np.nan)

    queues = (
        QueueSpec("a.1", 1, 4, splits=("a",)),
        QueueSpec("a.2", 5, 8, splits=("a",)),
        QueueSpec("b", 9, 12),
    )
    log = DqrLog()
    found, _ = dqr(
        QueueConfig(queues, partitions=(3, 3, 3)),
        HISTORY,
        _biggest(table),
        cores_per_node=1,
        log=log,
    )
    assert found.names == ("a.1", "a.2+b") and found.partitions == (3, 6)
    assert log.merges_kept == 1 and log.merges_split_blocked >= 2


def _biggest(table):  # type: ignore[no-untyped-def]
    """Overall wait = 1000 / the largest partition (one queue, all jobs)."""

    def evaluate(configs):  # type: ignore[no-untyped-def]
        return [Evaluation((1000.0 / max(c.partitions),), (1,), (0.5,)) for c in configs]

    return evaluate


def test_the_global_stop_hands_chunks_back() -> None:
    # a: 100 jobs, wait 70 x (10 - p) s; b: 1 job, wait 10000 / p s. Limits: a 1.3 x max(0, 60) = 78
    # -> p 9; b 1.3 x 1000 -> p 8. Overall at (9, 8): (100 x 70 + 1250) / 101 = 81.7 > 1.3 x
    # max(9.9, 60) = 78: one chunk back from each (a first:
    # same size), (10, 9): 1111 / 101 = 11 -> pool 1.
    def evaluate(configs):  # type: ignore[no-untyped-def]
        return [
            Evaluation(
                (70.0 * (10 - c.partitions[0]), 10000.0 / c.partitions[1]), (100, 1), (0.5, 0.5)
            )
            for c in configs
        ]

    history = History(np.array([1, 2]), np.array([60.0, 60.0]), np.array([60.0, 60.0]))
    config = QueueConfig((QueueSpec("a", 1, 1), QueueSpec("b", 2, 2)), partitions=(10, 10))
    stats: dict[str, int] = {}
    hybrid = carve_pool(config, history, evaluate, cores_per_node=2, chunk=1, stats=stats)
    assert hybrid.partitions == (10, 9) and hybrid.pool == 1
    assert stats == {"pool_chunks": 1, "global_stop_chunks": 2}


# Pool admission: q owns nodes 0-1 (8 cores), o nodes 2-6, the pool node 7 (4 cores).
POOL_QUEUES = (
    QueueSpec("q", 1, 8),
    QueueSpec("o", 9, 16),
    QueueSpec("large", 17, 40, reservation=True),
)
POOL_JOBS = [
    Job(1, 0.0, 100.0, 100.0, units=6),  # A runs at 0 in q
    Job(2, 1.0, 100.0, 100.0, units=8),  # B, q's head, waits for A (until 100)
    Job(3, 2.0, 1000.0, 1000.0, units=2),  # C fits q's 2 free cores, but would delay B
    Job(4, 50.0, 10.0, 10.0, units=9),
]  # D (queue o): a decision at t = 50


def _starts(tau_pf: float) -> dict[int, tuple[float, str]]:
    config = QueueConfig(POOL_QUEUES, mode="hybrid", partitions=(2, 5, 0), pool=1, tau_pf=tau_pf)
    model = HPCModel(
        POOL_JOBS,
        "nodes=8,cores=4",
        policy=make_policy("queues-hybrid", "first-fit", scheduler_params={"config": config}),
        queues=config,
        seed=1,
        record_timeseries=False,
    )
    model.run()
    frame = model.recorder.jobs_frame()
    return {int(r.job_id): (float(r.start_time), str(r.nodes)) for r in frame.itertuples()}


def test_a_job_that_fits_its_partition_is_not_sent_to_the_pool() -> None:
    # tau_pf 0.01: at t = 50 C's factor is 48 / 1000 > 0.01 but C fits q's free cores (EASY holds it
    # for B); at t = 100 B takes all of q, C no longer fits: factor 0.098 -> the pool (node 7)
    starts = _starts(0.01)
    assert starts[3][0] == 100.0 and starts[3][1].startswith("7")
    assert starts[2][0] == 100.0


def test_the_pool_waits_for_the_priority_factor_threshold() -> None:
    # tau_pf 0.2: at t = 100 C's factor is 98 / 1000 < 0.2: no pool; C starts in q when B ends (200)
    starts = _starts(0.2)
    assert starts[3][0] == 200.0 and not starts[3][1].startswith("7")
    assert math.isclose(starts[2][0], 100.0)
