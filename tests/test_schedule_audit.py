"""The sweep line that finds a schedule's first over-allocation, against hand-made cases and
a direct instant-by-instant count."""

from __future__ import annotations

import numpy as np
import pytest

from market_hpc.algorithms.schedule_audit import OverAllocation, first_over_allocation


def audit(
    rows: list[tuple[int, float, float, int, tuple[int, ...]]], capacity: list[list[int]]
) -> OverAllocation | None:
    job, start, end, node, amounts = zip(*rows, strict=True)
    return first_over_allocation(
        np.array(job),
        np.array(start),
        np.array(end),
        np.array(node),
        np.array(amounts),
        np.array(capacity),
    )


def test_an_end_frees_before_a_start_at_the_same_time() -> None:
    # job 1 ends at 10 as job 2 starts at 10 on the same 4-core node: never 6 cores at once
    assert audit([(1, 0, 10, 0, (4,)), (2, 10, 20, 0, (2,))], [[4]]) is None


def test_the_first_violation_names_time_node_resource_amounts_and_jobs() -> None:
    rows = [(1, 0, 10, 0, (2, 0)), (2, 3, 8, 1, (4, 1)), (3, 5, 9, 1, (0, 1)), (4, 6, 7, 0, (3, 0))]
    # node 1 has 1 GPU: jobs 2 and 3 both hold it from t=5; node 0's cores overflow later, at 6
    assert audit(rows, [[4, 0], [4, 1]]) == OverAllocation(5.0, 1, 1, 2.0, 1.0, (2, 3))


def test_nodes_are_swept_apart() -> None:
    # the same times on two nodes: each within its own capacity
    assert audit([(1, 0, 10, 0, (4,)), (2, 0, 10, 1, (4,))], [[4], [4]]) is None
    assert audit([(1, 0, 10, 0, (4,)), (2, 0, 10, 0, (1,))], [[4], [4]]).jobs == (1, 2)


def test_an_instant_segment_is_checked_alone() -> None:
    assert audit([(1, 5, 5, 0, (4,)), (2, 0, 10, 0, (4,))], [[4]]) is None  # not ordered against 2
    assert audit([(1, 5, 5, 0, (5,))], [[4]]) == OverAllocation(5.0, 0, 0, 5.0, 4.0, (1,))


def test_a_float_pool_with_a_tolerance() -> None:
    job, start, end = np.array([1, 2, 3]), np.array([0.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])
    amounts = np.array([[0.1], [0.2], [0.7]])
    assert (
        first_over_allocation(
            job, start, end, np.zeros(3, np.int64), amounts, np.array([[1.0]]), tolerance=1e-9
        )
        is None
    )


@pytest.mark.parametrize("seed", range(30))
def test_agrees_with_counting_every_instant(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, nodes = 40, 3
    start = rng.integers(0, 30, n).astype(float)
    end = start + rng.integers(1, 10, n)
    node = rng.integers(0, nodes, n)
    amounts = rng.integers(0, 3, (n, 2))
    capacity = rng.integers(2, 7, (nodes, 2))
    job = np.arange(1, n + 1)
    found = first_over_allocation(job, start, end, node, amounts, capacity)
    expected = None
    for time in sorted(set(start.tolist())):  # use only grows at a start
        for at in range(nodes):
            on = (node == at) & (start <= time) & (end > time)
            used = amounts[on].sum(axis=0)
            bad = np.flatnonzero(used > capacity[at])
            if len(bad) and expected is None:
                expected = (
                    time,
                    at,
                    int(bad[0]),
                    float(used[bad[0]]),
                    tuple(job[on & (amounts[:, bad[0]] > 0)].tolist()),
                )
        if expected is not None:
            break
    got = (
        None if found is None else (found.time, found.node, found.resource, found.used, found.jobs)
    )
    assert got == expected
