"""Seed 004 pure algorithms: routing, Eq. 7, surrogate fit, NLP, split/merge, pool carving."""

from __future__ import annotations

import math

import numpy as np
import pytest

from market_hpc.algorithms.queues.fit import (
    NlpProblem,
    fit_cubic,
    monomial_exponents,
    share_floor,
    solve_nlp,
)
from market_hpc.algorithms.queues.partitions import (
    apportion,
    cpu_hours,
    layout,
    proportional_partitions,
    route,
    scaled_table1,
)
from market_hpc.algorithms.queues.search import (
    Evaluation,
    History,
    can_merge,
    carve_pool,
    dqr,
    merge_queues,
    sample_partitions,
    split_queue,
)
from market_hpc.algorithms.queues.sim import QueueJobs, easy_waits
from market_hpc.domain.queues import QueueConfig, QueueSpec
from market_hpc.errors import ConfigError

H = 3600.0


def test_table1_routing_prefers_the_most_specific_queue() -> None:
    config = QueueConfig(scaled_table1(35232, open_wall=False), partitions=(10, 10, 10, 10, 0))
    names = config.names
    assert names[route(config, 100, 1 * H)] == "idqueue"  # inside idqueue and small
    assert names[route(config, 100, 3 * H)] == "small"
    assert names[route(config, 500, 48 * H)] == "small72"
    assert names[route(config, 5000, 10 * H)] == "medium"
    assert names[route(config, 20000, 10 * H)] == "large"
    assert route(config, 5000, 48 * H) == -1  # Table I has no long medium queue
    catch = QueueConfig(config.queues, partitions=config.partitions, catch_all="small72")
    assert catch.names[route(catch, 5000, 48 * H)] == "small72"


def test_eq7_worked_example() -> None:
    # Three queues with CPU hours 570 : 220 : 210 on 100 nodes -> the paper's Jan'16 shares.
    cores = np.array([57, 22, 21, 1])
    runs = np.array([10 * H, 10 * H, 10 * H, 0.0])
    queue_of = np.array([0, 1, 2, 0])
    hours = cpu_hours(cores, runs, queue_of, 3)
    assert hours.tolist() == [570.0, 220.0, 210.0]
    config = QueueConfig(
        (
            QueueSpec("medium", 1, 9),
            QueueSpec("small", 1, 9),
            QueueSpec("small72", 1, 9),
            QueueSpec("large", 10, 99, reservation=True),
        ),
        partitions=(1, 1, 1, 0),
    )
    assert proportional_partitions(config, 100, [*hours.tolist(), 5000.0], [1, 1, 1, 0]) == (
        57,
        22,
        21,
        0,
    )
    # a minimum above the proportional share is pinned and the rest renormalised (spec A3)
    assert proportional_partitions(config, 100, [*hours.tolist(), 0.0], [1, 30, 1, 0]) == (
        51,
        30,
        19,
        0,
    )  # 70 x 570/780, 70 x 210/780
    with pytest.raises(ConfigError, match="exceed"):
        apportion(10, [1, 1], [6, 6])


def test_layout_is_disjoint_and_covers_pool() -> None:
    config = QueueConfig(scaled_table1(240), mode="hybrid", partitions=(5, 20, 30, 50, 0), pool=15)
    ranges, pool = layout(config, 120)
    owned = [r for q, r in zip(config.queues, ranges) if not q.reservation]
    assert owned == [(0, 5), (5, 25), (25, 55), (55, 105)] and pool == (105, 120)
    with pytest.raises(ConfigError, match="needs 121 nodes"):
        layout(config.with_partitions((5, 20, 30, 50, 0), 16), 120)


def test_surrogate_recovers_a_known_cubic() -> None:
    rng = np.random.default_rng(4)
    x = rng.random((100, 3))
    exponents = monomial_exponents(3)
    truth = rng.normal(size=len(exponents))
    y = np.stack([np.prod(x ** np.array(e), axis=1) for e in exponents], axis=1) @ truth
    model = fit_cubic(x, y)
    assert np.allclose(model.coef, truth, atol=1e-5)
    assert model.r2 == pytest.approx(1.0)
    point = np.array([0.2, 0.3, 0.4])
    step = 1e-6
    numeric = [
        (model(point + step * np.eye(3)[i])[0] - model(point - step * np.eye(3)[i])[0]) / (2 * step)
        for i in range(3)
    ]
    assert np.allclose(model.gradient(point), numeric, atol=1e-5)


def test_nlp_finds_the_constrained_minimum() -> None:
    # f = (x0 - 0.5)^2 + (x1 - 0.2)^2 on shares of 100 nodes: optimum (50, 20, 30).
    x = np.random.default_rng(0).random((50, 2))
    surrogate = fit_cubic(x, (x[:, 0] - 0.5) ** 2 + (x[:, 1] - 0.2) ** 2)
    problem = NlpProblem(100, (10, 10, 10), (80, 80, 80), (surrogate,), (1.0,))
    assert solve_nlp(problem, [(34, 33, 33), (10, 10, 80)]).sizes == (50, 20, 30)
    # SLSQP itself gets there from a far start (not the one-node local search after it)
    solved = solve_nlp(problem, [(10, 10, 80)])
    assert solved.slsqp_sizes == (50, 20, 30) and solved.failures == 0 and solved.solves == 1
    # the relaxed Eq. 6 with equal CPU hours and alpha = 0.9 keeps every queue >= 30 nodes
    floor = share_floor(100, (10, 10, 10), (1.0, 1.0, 1.0), 0.9)
    assert floor == (30, 30, 30)
    tight = NlpProblem(100, floor, (80, 80, 80), (surrogate,), (1.0,))
    assert solve_nlp(tight, [(34, 33, 33)]).sizes == (40, 30, 30)
    # alpha = 1 gives the proportional partition back
    assert share_floor(100, (1, 1, 1), (57.0, 22.0, 21.0), 1.0) == (57, 22, 21)


def test_samples_are_distinct_and_feasible() -> None:
    sets = sample_partitions(
        np.random.default_rng(2), 100, [5, 10, 3, 20], 120, include=[[30, 30, 30, 30]]
    )
    assert sets[0] == (30, 30, 30, 30) and len(set(sets)) == 100
    assert all(sum(s) == 120 and min(np.subtract(s, [5, 10, 3, 20])) >= 0 for s in sets)


def test_easy_waits_backfill_and_reservation() -> None:
    # capacity 4: A(3 cores, 10 s) runs; B(4) waits for
    # A; C(1, est 5) backfills; D(1, est 50) must not
    jobs = QueueJobs(
        np.array([0.0, 1.0, 2.0, 2.0]),
        np.array([10.0, 5.0, 5.0, 50.0]),
        np.array([10.0, 5.0, 5.0, 50.0]),
        np.array([3, 4, 1, 1]),
    )
    assert easy_waits(jobs, 4).tolist() == [0.0, 9.0, 0.0, 13.0]
    assert math.isinf(easy_waits(jobs, 3)[1])  # never fits


def _history() -> History:
    rng = np.random.default_rng(3)
    n = 200
    return History(
        rng.integers(1, 8, n), rng.choice([600.0, 3600.0, 30000.0], n), rng.uniform(60, 20000, n)
    )


def test_splits_keep_ranges_contiguous_and_nodes() -> None:
    config = QueueConfig((QueueSpec("q", 1, 8, 0, 40000.0),), partitions=(20,))
    history = _history()
    for method in ("runtime", "cpu_hours", "jobs"):
        split = split_queue(config, 0, history, 1, method)
        assert split is not None, method
        first, second = split.queues
        assert first.splits == second.splits == ("q",) and sum(split.partitions) == 20
        if method == "runtime":
            assert first.max_wall + 1 == second.min_wall and first.max_cores == second.max_cores
        else:
            assert first.max_cores + 1 == second.min_cores and first.min_wall == second.min_wall
        assert not can_merge(first, second)  # siblings never merge
    assert can_merge(QueueSpec("a", 1, 4), QueueSpec("b", 5, 8))
    assert not can_merge(QueueSpec("a", 1, 4), QueueSpec("b", 6, 8))
    merged = merge_queues(
        QueueConfig((QueueSpec("a", 1, 4), QueueSpec("b", 5, 8)), partitions=(3, 4)), 0, 1
    )
    assert (
        merged.queues[0].min_cores == 1
        and merged.queues[0].max_cores == 8
        and merged.partitions == (7,)
    )


def _toy_evaluate(configs):  # type: ignore[no-untyped-def]
    """Wait of a queue falls with its nodes: 1000 / nodes per queue (a known convex model)."""
    out = []
    for config in configs:
        waits = tuple(
            1000.0 / p if not q.reservation else math.nan
            for q, p in zip(config.queues, config.partitions)
        )
        out.append(Evaluation(waits, tuple(10 for _ in waits), tuple(0.5 for _ in waits)))
    return out


def test_carve_pool_respects_degradation_and_requests() -> None:
    history = History(np.array([2, 3]), np.array([60.0, 60.0]), np.array([60.0, 60.0]))
    config = QueueConfig((QueueSpec("a", 1, 2), QueueSpec("b", 3, 4)), partitions=(10, 10))
    hybrid = carve_pool(
        config, history, _toy_evaluate, cores_per_node=1, chunk=1, degradation=0.30, floor=0.0
    )
    # 1000/p <= 1.3 * 100 -> p >= 7.7: each queue keeps 8 nodes, the pool gets 4
    assert hybrid.mode == "hybrid" and hybrid.partitions == (8, 8) and hybrid.pool == 4


def test_dqr_keeps_a_split_only_when_the_wait_falls() -> None:
    config = QueueConfig((QueueSpec("q", 1, 8, 0, 40000.0),), partitions=(20,))
    found, wait = dqr(config, _history(), _toy_evaluate, cores_per_node=1)
    assert found == config and wait == pytest.approx(50.0)  # splitting halves nodes: worse


def test_doctests() -> None:
    import doctest

    from market_hpc.algorithms.queues import fit as queues_fit
    from market_hpc.algorithms.queues import partitions as queues
    from market_hpc.algorithms.queues import search as queues_search
    from market_hpc.algorithms.queues import sim as queues_sim
    from market_hpc.domain import queues as domain_queues

    for module in (queues, queues_fit, queues_search, queues_sim, domain_queues):
        failures, _ = doctest.testmod(module)
        assert failures == 0, module.__name__
