"""Seed 000 allocators: hand-checked orderings, priority counters, units never misplaced."""

from __future__ import annotations

import numpy as np
import pytest

from market_hpc.algorithms.hetero.orderings import (
    balanced_order,
    criticality_weights,
    request_mean,
    weighted_order,
)
from market_hpc.core.view import StaticView
from market_hpc.domain.job import Job
from market_hpc.domain.platform import NodeType, Platform
from market_hpc.errors import UnknownNameError
from market_hpc.policies import allocator_names, make_allocator
from market_hpc.policies.hetero.allocators import Balanced, PriorityWeighted, Weighted

HETERO = ("balanced", "weighted", "priority-weighted")
# nodes 0-1: 4 cores + 2 GPUs; nodes 2-3: 4 cores, no accelerator
SMALL = Platform("small", (NodeType("gpu", 2, 4, gpus=2), NodeType("cpu", 2, 4)))


def cpu_job(job_id: int, cores: int = 1, units: int = 1, estimate: float = 9.0) -> Job:
    return Job(job_id, 0.0, estimate, estimate, units=units, unit=(cores, 0, 0, 0))


def gpu_job(job_id: int, units: int = 1, estimate: float = 9.0) -> Job:
    return Job(job_id, 0.0, estimate, estimate, units=units, unit=(1, 1, 0, 0))


def test_the_hetero_allocators_are_registered() -> None:
    assert set(HETERO) <= set(allocator_names())
    assert isinstance(make_allocator("balanced"), Balanced)
    assert isinstance(make_allocator("priority-weighted"), PriorityWeighted)
    with pytest.raises(UnknownNameError, match="unknown critical resource 'tpus'"):
        Balanced(critical=("tpus",))


# ------------------------------------------------------------------ BALANCED
def test_balanced_reproduces_the_spec_worked_example() -> None:
    # n1-n4: GPU nodes with 0, 1, 2, 2 free GPUs; n5-n8: MIC nodes with 2, 2, 2, 1 free MICs
    free = np.array([[16, g, 0, 0] for g in (0, 1, 2, 2)] + [[16, 0, m, 0] for m in (2, 2, 2, 1)])
    order = balanced_order(free, free, np.ones(8, dtype=np.int64))
    assert (order + 1).tolist() == [1, 8, 5, 2, 6, 3, 7, 4]


def test_balanced_leaves_out_nodes_without_free_cores_before_binning() -> None:
    free = np.array([[0, 2, 0, 0], [4, 2, 0, 0], [4, 0, 2, 0], [4, 0, 0, 0]])
    # node 0 is trimmed: bins nul=[3], gpu=[1], mic=[2]; equal sizes -> mic first
    assert balanced_order(free, free, np.ones(4, dtype=np.int64)).tolist() == [3, 2, 1]


def test_balanced_puts_cpu_jobs_on_nodes_without_free_accelerators_first() -> None:
    free = np.array([[4, 2, 0, 0], [2, 1, 0, 0], [4, 0, 0, 0], [1, 0, 0, 0]])
    view = StaticView(SMALL, free, [cpu_job(1, cores=2)])
    # nul bin [2, 3] first (node 3 has 1 core: no room
    # for 2), then GPU nodes, fewest free GPUs first
    assert Balanced().allocate(cpu_job(1, cores=2), free, view) == ((2, 1),)
    assert Balanced().allocate(cpu_job(1, cores=2, units=3), free, view) == ((1, 1), (2, 2))
    # a GPU job only fits GPU nodes: the one with fewer free GPUs first
    assert Balanced().allocate(gpu_job(2), free, view) == ((1, 1),)


# ------------------------------------------------------------------ WEIGHTED
def hand_weights(free: np.ndarray, window: list[Job]) -> np.ndarray:
    """Eq. (1) with AccaSim's smoothing, written out for the SMALL platform (no MIC, no memory)."""
    demand = np.zeros(4)
    length = 0.0
    for job in window:
        demand += job.units * np.asarray(job.unit, dtype=float) * (job.estimate + 1)
        length += job.estimate + 1
    used = SMALL.total - free.sum(axis=0)
    req = (1 + demand) / (1 + length)
    return np.array([req[0] * (used[0] + 1) / 16**2, req[1] * (used[1] + 1) / 4**2, 0.0, 0.0])


def test_weighted_ranks_nodes_by_weighted_leftover() -> None:
    free = np.array([[4, 2, 0, 0], [2, 1, 0, 0], [4, 0, 0, 0], [1, 0, 0, 0]])
    job, nxt = cpu_job(1, cores=2), gpu_job(2)
    view = StaticView(SMALL, free, [job, nxt])
    allocator = Weighted()
    weights = allocator.weights(job, view)
    # window = [job 2]: req = (1 + 10) / (1 + 10) = 1 for cores and GPUs; used = 5 cores, 1 GPU
    assert weights == pytest.approx([6 / 256, 2 / 16, 0.0, 0.0])
    assert weights == pytest.approx(hand_weights(free, [nxt]))
    # leftover after one unit: node 0 (2, 2) -> 0.297;
    # node 1 (0, 1) -> 0.125; node 2 (2, 0) -> 0.047
    fits = np.array([2, 1, 2, 0])
    assert weighted_order(free, fits, np.array(job.unit), 1, weights).tolist() == [2, 1, 0]
    assert allocator.allocate(job, free, view) == ((2, 1),)
    # unit-free ablation: leftovers as fractions of capacity (cores / 16, GPUs / 4)
    assert Weighted(unit_free=True).allocate(cpu_job(1, cores=2, units=2), free, view) == ((2, 2),)
    assert make_allocator("first-fit").allocate(job, free, view) == ((0, 1),)
    assert make_allocator("best-fit").allocate(job, free, view) == ((1, 1),)


def test_weighted_looks_ahead_along_the_announced_pass_order() -> None:
    free = SMALL.capacity.copy()
    first, second, third = cpu_job(1), gpu_job(2, units=3, estimate=99.0), cpu_job(3, cores=4)
    allocator = Weighted(window=1)
    view = StaticView(SMALL, free, [first, second, third])
    allocator.begin_pass([first, third, second], view)  # e.g. SJF order
    assert allocator.weights(first, view) == pytest.approx(hand_weights(free, [third]))
    assert allocator.weights(third, view) == pytest.approx(hand_weights(free, [second]))
    assert allocator.weights(second, view) == pytest.approx(hand_weights(free, []))
    # without an announcement for this view: queue order
    other = StaticView(SMALL, free, [first, second, third])
    assert allocator.weights(first, other) == pytest.approx(hand_weights(free, [second]))
    # window=None: the whole queue, the current job included
    assert Weighted(window=None).weights(first, other) == pytest.approx(
        hand_weights(free, [first, second, third])
    )


def test_weighted_formula_pieces() -> None:
    assert request_mean(np.array([10.0, 0.0]), 4.0).tolist() == [2.2, 0.2]
    weights = criticality_weights(
        np.array([2.0, 1.0, 1.0]),
        np.array([3.0, 1.0, 0.0]),
        np.array([4.0, 2.0, 0.0]),
        np.array([1.0, 10.0, 10.0]),
    )
    assert weights.tolist() == [0.5, 5.0, 0.0]


# --------------------------------------------------------- PRIORITY-WEIGHTED
def flip_state() -> tuple[np.ndarray, list[Job]]:
    """A state where WEIGHTED sends a 1-core job to a GPU node and P-W, with p_gpu = 10, does not.

    Window: one 4-core CPU job (estimate 9): req = (41/11, 1/11); used 7 cores, 2 GPUs:
    w_core = 41/11 * 8/256 = 0.1165, w_gpu = 1/11 * 3/16 = 0.0170 (x10 = 0.170).
    Leftovers after one unit: node 0 (3, 1), node 1 (1, 1), node 2 (2, 0); node 3 is full.
    WEIGHTED: 0.366, 0.134, 0.233 -> node 1. P-W: 0.520, 0.287, 0.233 -> node 2.
    """
    free = np.array([[4, 1, 0, 0], [2, 1, 0, 0], [3, 0, 0, 0], [0, 0, 0, 0]])
    return free, [cpu_job(1), cpu_job(2, cores=4)]


def test_priority_counters_rise_on_failures_fall_on_successes_and_stay_in_bounds() -> None:
    free, queue = flip_state()
    view = StaticView(SMALL, free, queue)
    allocator = PriorityWeighted()
    too_big = gpu_job(9, units=5)
    history = []
    for _ in range(12):
        assert allocator.allocate(too_big, free, view) is None
        history.append(allocator.priority[1])
    assert history == [2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10]
    assert allocator.priority.tolist() == [1, 10, 1, 1]  # only the requested critical kind moves
    assert allocator.allocate(queue[0], free, view) == ((2, 1),)  # CPU job: counters unchanged
    assert allocator.priority[1] == 10
    assert Weighted().allocate(queue[0], free, view) == ((1, 1),)
    assert allocator.allocate(gpu_job(3), free, view) is not None
    assert allocator.priority[1] == 9
    for _ in range(20):
        allocator.allocate(gpu_job(3), free, view)
    assert allocator.priority.tolist() == [1, 1, 1, 1]
    allocator.note_failed_attempt(too_big)  # an attempt a scheduler knew would fail
    assert allocator.priority[1] == 2


def test_priority_counters_persist_across_decisions_of_a_run() -> None:
    from market_hpc.core.model import HPCModel

    jobs = [
        Job(1, 0.0, 50.0, 50.0, units=4, unit=(1, 1, 0, 0)),
        Job(2, 1.0, 5.0, 5.0, units=1, unit=(1, 1, 0, 0)),
        Job(3, 2.0, 5.0, 5.0, units=1, unit=(1, 1, 0, 0)),
    ]
    model = HPCModel(jobs, SMALL, "fifo", "priority-weighted")
    model.run(until=2.0)
    # job 1 took every GPU (success: stays at 1); the blocked head, job 2, failed at t = 1 and 2
    assert model.policy.allocator.priority[1] == 3  # type: ignore[attr-defined]
    model.run()
    assert model.recorder.jobs_frame()["status"].eq("finished").all()


# --------------------------------------------------- units never misplaced
MIXED = Platform(
    "mixed",
    (
        NodeType("gpu", 3, 8, gpus=2, mem=16384),
        NodeType("mic", 3, 8, mics=2, mem=16384),
        NodeType("cpu", 2, 16, mem=32768),
    ),
)


@pytest.mark.parametrize("name", [*HETERO, "first-fit", "best-fit"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_units_never_land_on_a_node_lacking_what_they_need(name: str, exclusive: bool) -> None:
    rng = np.random.default_rng(5)
    units_from = [(2, 1, 0, 2048), (1, 0, 1, 1024), (4, 0, 0, 4096), (1, 2, 0, 0), (8, 0, 0, 0)]
    allocator = make_allocator(name)
    placed = 0
    for _ in range(300):
        free = (MIXED.capacity * rng.uniform(0, 1.2, MIXED.capacity.shape)).astype(np.int64)
        free = np.minimum(free, MIXED.capacity)
        if exclusive:
            idle = rng.random(MIXED.n_nodes) < 0.5
            free = np.where(idle[:, None], MIXED.capacity, free)
        unit = units_from[int(rng.integers(len(units_from)))]
        job = Job(1, 0.0, 5.0, 5.0, units=int(rng.integers(1, 6)), unit=unit)
        view = StaticView(MIXED, free, [job])
        view.exclusive = exclusive
        allocation = allocator.allocate(job, free, view)
        need = np.asarray(unit)
        if allocation is None:
            if not exclusive:
                room = sum(
                    min(row[k] // need[k] for k in range(4) if need[k]) for row in free.tolist()
                )
                assert room < job.units, f"{name} refused a job that fits: {free.tolist()} {job}"
            continue
        placed += 1
        assert sum(u for _, u in allocation) == job.units
        for node, units in allocation:
            assert (units * need <= free[node]).all(), (
                f"{name}: {units} x {unit} on node {node} {free[node]}"
            )
            if exclusive:
                assert (free[node] == MIXED.capacity[node]).all()
    assert placed > 50
