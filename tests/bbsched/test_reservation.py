"""BBSched (Fan et al., HPDC'19): the optimiser around a starving job's EASY reservation,
and the Weighted / Constrained baselines on the exact dynamic programme.

A starving job that does not fit holds EASY's reservation; the rest of the window is
still optimised, over jobs that cannot delay it: those ending by the shadow time, and
those running past it only as far as they fit the reservation's extra *together*.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from market_hpc.algorithms.bbsched.exact import dp_pareto
from market_hpc.algorithms.bbsched.selection import (
    Window,
    constrained_pick,
    constrained_select,
    exact_pareto,
    weighted_pick,
    weighted_select,
)
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import make_policy
from market_hpc.policies.bbsched.window import Reservation, greedy_backfill


def _brute(window: Window) -> dict[tuple[int, int], int]:
    """Front point -> the feasible selection nearest the window front, by itertools; the
    jobs from ``long_start`` on may together use only the extra."""
    k, start = window.size, window.long_start
    best: dict[tuple[int, int], int] = {}
    for bits in itertools.product((0, 1), repeat=k):
        n = sum(int(window.nodes[i]) for i in range(k) if bits[i])
        b = sum(int(window.bb[i]) for i in range(k) if bits[i])
        long_n = sum(int(window.nodes[i]) for i in range(start, k) if bits[i])
        long_b = sum(int(window.bb[i]) for i in range(start, k) if bits[i])
        if n > window.free_nodes or b > window.free_bb:
            continue
        if start < k and (long_n > window.extra_nodes or long_b > window.extra_bb):
            continue
        mask = sum(1 << i for i in range(k) if bits[i])
        key = tuple(bits)  # lexicographically larger: earlier jobs kept
        if (n, b) not in best or key > tuple((best[(n, b)] >> i) & 1 for i in range(k)):
            best[(n, b)] = mask
    front = {
        p: m
        for p, m in best.items()
        if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in best)
    }
    return front


# ------------------------------------------------ the DP under a reservation
def test_long_jobs_share_the_extra() -> None:
    """Free 5 nodes; job 0 (1 node) ends by the shadow time, jobs 1 and 2 (2 nodes each)
    run past it with an extra of 2 nodes. Each long job alone fits the extra, both do not:
    the front is one short plus one long job, 3 nodes (without the restriction, or with
    only a per-job check, all three: 5 nodes)."""
    window = Window.of([1, 2, 2], [0, 0, 0], 5, 0, long_from=1, extra_nodes=2)
    front = dp_pareto(window)
    assert front.objectives.tolist() == [[3, 0]] and front.masks.tolist() == [0b011]
    assert exact_pareto(window).masks.tolist() == [0b011]
    free = dp_pareto(Window.of([1, 2, 2], [0, 0, 0], 5, 0))
    assert free.objectives.tolist() == [[5, 0]]


def test_extra_burst_buffer_binds_the_long_jobs() -> None:
    """The extra's burst buffer (30 GB) binds the long jobs' GB: 20 + 20 > 30, so the best
    is the short job (40 GB) plus one long job, 60 GB; the extra nodes (10) do not bind."""
    window = Window.of([1, 1, 1], [40, 20, 20], 10, 100, long_from=1, extra_nodes=10, extra_bb=30)
    assert dp_pareto(window).objectives.tolist() == [[2, 60]]


@pytest.mark.parametrize("seed", range(8))
def test_restricted_dynamic_programme_is_the_exact_front(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    k = int(rng.integers(3, 10))
    nodes = rng.integers(1, 12, k)
    bb = np.where(rng.random(k) < 0.6, rng.integers(1, 40, k), 0)
    long_from = int(rng.integers(0, k + 1))
    window = Window.of(
        nodes,
        bb,
        int(nodes.sum() * 0.6),
        int(bb.sum() * 0.6),
        long_from,
        int(nodes.sum() * 0.3),
        int(bb.sum() * 0.3),
    )
    found = dp_pareto(window)
    assert dict(zip(map(tuple, found.objectives.tolist()), found.masks.tolist())) == _brute(window)
    assert found.masks.tolist() == exact_pareto(window).masks.tolist()


# ------------------------------------ Weighted and Constrained on the exact DP
@pytest.mark.parametrize("seed", range(10))
def test_weighted_and_constrained_picks_equal_brute_force(seed: int) -> None:
    """On random windows (half of them under a reservation) the DP-based picks equal the
    enumeration optimum, masks included (ties to the window front)."""
    rng = np.random.default_rng(200 + seed)
    k = int(rng.integers(2, 12))
    nodes = rng.integers(1, 20, k)
    bb = np.where(rng.random(k) < 0.7, rng.integers(1, 60, k), 0)
    long_from = int(rng.integers(0, k + 1)) if seed % 2 else None
    window = Window.of(
        nodes,
        bb,
        int(nodes.sum() * 0.5),
        int(bb.sum() * 0.5),
        long_from,
        int(nodes.sum() * 0.3),
        int(bb.sum() * 0.3),
    )
    front = dp_pareto(window)
    for weights in ((0.5, 0.5), (0.8, 0.2), (0.2, 0.8)):
        assert weighted_pick(front, k, *weights, 100, 200) == weighted_select(
            window, *weights, 100, 200
        )
    for resource in ("nodes", "bb"):
        assert constrained_pick(front, k, resource) == constrained_select(window, resource)


def test_weighted_pick_weighs_the_whole_front() -> None:
    """Front (100 nodes, 20 GB), (80, 90), (40, 100) of N = B = 100: 80/20 scores 84, 82,
    52 -> the first; 50/50: 60, 85, 70 -> the second; 20/80: 36, 88, 88 -> a tie between
    the second and third, broken to the window front (mask 0b010 keeps job 1)."""
    from market_hpc.algorithms.bbsched.selection import ParetoSet

    front = ParetoSet(np.array([0b001, 0b010, 0b100]), np.array([[100, 20], [80, 90], [40, 100]]))
    assert weighted_pick(front, 3, 0.8, 0.2, 100, 100) == 0b001
    assert weighted_pick(front, 3, 0.5, 0.5, 100, 100) == 0b010
    assert weighted_pick(front, 3, 0.2, 0.8, 100, 100) == 0b010
    assert constrained_pick(front, 3, "bb") == 0b100


@pytest.mark.parametrize("scheduler", ["bb-weighted", "bb-constrained-bb"])
def test_weighted_and_constrained_take_a_window_of_fifty(scheduler: str) -> None:
    """Sixty jobs at t = 0 on 100 nodes and 500 GB: with w = 50 (over the old enumeration
    cap of 22) the optimiser runs on windows of more than 22 fitting jobs."""
    rng = np.random.default_rng(3)
    jobs = [
        Job(i + 1, 0.0, 100.0, 100.0, units=int(rng.integers(1, 6)), bb=float(rng.integers(0, 40)))
        for i in range(60)
    ]
    policy = make_policy(scheduler, "first-fit", scheduler_params={"window": 50})
    model = HPCModel(jobs, "nodes=100,cores=1,bb=500", policy=policy, seed=1)
    model.run()
    assert policy.stats["optimiser_runs"] >= 1
    assert model.recorder.jobs_frame()["start_time"].notna().all()


# --------------------------------------------- the policy under a reservation
RESERVED_JOBS = [
    Job(1, 0.0, 1000.0, 1000.0, units=5),  # runs until t = 1,000
    Job(2, 0.0, 50.0, 50.0, units=5),  # ends at t = 50
    Job(3, 1.0, 100.0, 100.0, units=8),  # starving by t = 50, does not fit 5 free nodes
    Job(4, 2.0, 2000.0, 2000.0, units=2),  # A: runs past the shadow time (t = 1,000)
    Job(5, 3.0, 2000.0, 2000.0, units=2),  # B: likewise
    Job(6, 4.0, 500.0, 500.0, units=1),  # C: ends by the shadow time
    Job(7, 5.0, 500.0, 500.0, units=3),  # D: ends by the shadow time
]


@pytest.mark.parametrize("scheduler", ["bb-constrained-cpu", "bbsched", "bb-weighted-cpu"])
def test_optimiser_runs_around_a_starving_jobs_reservation(scheduler: str) -> None:
    """Bound 1 invocation. At t = 50 five nodes are free; job 3 (8 nodes) is starving and
    does not fit: it holds the reservation, shadow time 1,000, extra 10 - 8 = 2 nodes.
    Of A, B (long, 2 nodes each), C (1) and D (3): the best under the restriction is D + A
    (5 nodes, the long ones within the extra 2). Without the restriction the optimum is
    C + A + B (5 nodes, nearer the front), and EASY then refuses B: C and A start. Without
    the optimiser EASY backfills in window order: A, then C (B exceeds the extra, D no
    longer fits). Then job 3 starts at its shadow time 1,000, B and C at 1,100."""
    policy = make_policy(
        scheduler, "first-fit", scheduler_params={"starvation": 1, "starvation_by": "invocations"}
    )
    model = HPCModel(RESERVED_JOBS, "nodes=10,cores=1,bb=10", policy=policy, seed=1)
    model.run()
    start = model.recorder.jobs_frame().set_index("job_id")["start_time"].to_dict()
    assert start[7] == start[4] == 50.0
    assert start[3] == 1000.0  # the reservation holds
    assert start[5] == start[6] == 1100.0
    # Counts. Invocations at t = 0, 1, ..., 5, 50, 550, 1,000, 1,100. Two or more window jobs
    # fit the free nodes at t = 50 (A-D), 550 (B, C: 3 free) and 1,100 (B, C); they may also
    # start without delaying a reservation at t = 50 and 1,100 (no reservation then): the
    # optimiser ran both times, once under the reservation, and changed the base order's
    # choice once (t = 50; at 1,100 it starts B and C as the base order would). A starving
    # job held the reservation at t = 3, 4, 5, 50, 550 (job 3) and 1,000 (B, behind job 3
    # fixed in).
    stats = policy.stats
    assert stats["fit_two_plus"] == 3 and stats["eligible_two_plus"] == stats["optimiser_runs"] == 2
    assert stats["reserved_runs"] == 1 and stats["changed"] == 1 and stats["forced_blocks"] == 6


def test_baseline_backfills_around_the_reservation_in_window_order() -> None:
    policy = make_policy(
        "bb-baseline",
        "first-fit",
        scheduler_params={"starvation": 1, "starvation_by": "invocations"},
    )
    model = HPCModel(RESERVED_JOBS, "nodes=10,cores=1,bb=10", policy=policy, seed=1)
    model.run()
    start = model.recorder.jobs_frame().set_index("job_id")["start_time"].to_dict()
    assert start[4] == start[6] == 50.0 and start[7] > 50.0 and start[3] == 1000.0
    assert policy.stats["optimiser_runs"] == policy.stats["reserved_runs"] == 0


def test_base_order_under_a_reservation_is_easy_backfilling_in_window_order() -> None:
    """The comparison ``changed`` is counted against: free 5 nodes, shadow 1,000, extra 2.
    A (2 nodes, long) takes the extra, B (2, long) no longer fits it, C (1, short) is
    taken, D (3, short) no longer fits the 2 free nodes."""
    a, b, c, d = (
        Job(i, 0.0, run, run, units=n)
        for i, (run, n) in enumerate([(2000.0, 2), (2000.0, 2), (500.0, 1), (500.0, 3)], start=1)
    )
    reservation = Reservation(50.0, 1000.0, 2, 0)
    assert greedy_backfill([a, b, c, d], 5, 0, reservation) == [a, c]
    assert greedy_backfill([d, a, b, c], 5, 0, reservation) == [d, a]
