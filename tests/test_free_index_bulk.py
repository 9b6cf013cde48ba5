"""Bulk updates of the free-core index (one splice per allocation, the fast take of a fresh
first-fit walk, lazy by-value heaps) against the per-run path and a plain array."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from invariants import canonical_runs

from market_hpc.algorithms.allocation import best_fit, first_fit
from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.node_runs import NodeRuns
from market_hpc.algorithms.run_splice import splice


def check(index: FreeCoreIndex, free: list[int]) -> None:
    assert index.runs() == canonical_runs(free)
    assert index.total == sum(free)
    # The by-value order the queries read holds every run exactly once, current.
    assert index._by_value == sorted((v, s) for s, v in index._value.items())
    if index._sorted is not None:
        assert index._sorted == sorted((v, s) for s, _, v in canonical_runs(free) if v > 0)
    else:  # the lazy heaps are bounded (rebuilt when stale entries pile up)
        assert sum(map(len, index._heaps.values())) == index._held <= 2 * len(index._starts) + 64


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[int], list[list[tuple[int, int, int]]]]:
    n = draw(st.integers(1, 24))
    free = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    out = []
    for _ in range(draw(st.integers(1, 12))):
        cuts = sorted(draw(st.sets(st.integers(0, n), min_size=2, max_size=8)))
        pieces = [
            (a, b, draw(st.sampled_from([-3, -2, -1, 1, 2, 3])))
            for a, b in itertools.pairwise(cuts)
            if draw(st.booleans())
        ]
        if pieces:
            out.append(pieces)
    return free, out


@settings(max_examples=300, deadline=None)
@given(batches(), st.booleans())
def test_one_splice_per_batch_equals_one_add_per_run(case, exact: bool) -> None:  # type: ignore[no-untyped-def]
    free, updates = case
    bulk, per_run = FreeCoreIndex(free), FreeCoreIndex(free)
    if exact:  # best-fit asked once: the exact by-value list is kept from then on
        bulk.best_fit(1)
    free = list(free)
    for pieces in updates:
        bulk._apply(pieces)
        for first, end, delta in pieces:
            per_run.add(first, end, delta)
            for node in range(first, end):
                free[node] += delta
        check(bulk, free)
        assert bulk.runs() == per_run.runs()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=30),
    st.lists(st.integers(1, 12), min_size=1, max_size=25),
    st.randoms(use_true_random=False),
)
def test_allocations_move_in_one_call_as_the_array_functions_place(free, sizes, rnd) -> None:  # type: ignore[no-untyped-def]
    """Take and give back whole allocations (first-fit walks, single units, best-fit,
    scratch rollbacks) on the index and on an array: same placements, same runs."""
    index = FreeCoreIndex(free)
    array = np.array(free, dtype=np.int64)
    held: list[NodeRuns] = []
    exact = rnd.random() < 0.5  # best-fit asked at some point: the exact by-value list from then on
    for units in sizes:
        if exact and rnd.random() < 0.3:
            index.best_fit(1)
        placed = index.first_fit(units)
        expected = first_fit(array, units)
        assert (placed is None) == (expected is None)
        if placed is not None:
            assert placed == expected
            if rnd.random() < 0.3:  # tried and rolled back inside a scratch block
                with index.scratch():
                    index.take(placed)
                    assert index.total == int(array.sum()) - units
                assert index.runs() == canonical_runs(array.tolist())
                placed = index.first_fit(units)
            index.move(placed, -1)
            for node, taken in placed:
                array[node] -= taken
            held.append(placed)
        if held and rnd.random() < 0.4:
            gone = held.pop(rnd.randrange(len(held)))
            index.move(gone, 1)
            for node, taken in gone:
                array[node] += taken
        check(index, array.tolist())
        if exact:
            best, expected = index.best_fit(units), best_fit(array, array, units)
            assert (best is None) == (expected is None)
            assert best is None or best == expected


def test_fast_take_of_a_walk_equals_the_per_run_take() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 30))
        free = rng.integers(0, 5, n).tolist()
        units = int(rng.integers(2, 3 + sum(free)))
        fast, slow = FreeCoreIndex(free), FreeCoreIndex(free)
        placed = fast.first_fit(units)
        if placed is None:
            continue
        assert fast._walk is not None and fast._walk[0] is placed  # the fast path applies
        fast.move(placed, -1)
        for first, count, taken in placed.runs:
            slow.add(first, first + count, -taken)
        assert fast.runs() == slow.runs() and fast.total == slow.total
        check(fast, [v for _, c, v in slow.runs() for _ in range(c)])


def test_a_walk_over_a_negative_run_takes_the_general_path() -> None:
    index = FreeCoreIndex([2, -1, 2, 3])
    placed = index.first_fit(4)
    assert placed is not None and placed.runs == ((0, 1, 2), (2, 1, 2)) and index._walk is None
    index.move(placed, -1)
    assert index.runs() == [(0, 1, 0), (1, 1, -1), (2, 1, 0), (3, 1, 3)]


def test_splice_keeps_untouched_runs_between_pieces_as_slices() -> None:
    starts, vals = [0, 1, 2, 3, 4, 5], [0, 1, 0, 1, 0, 1]
    i, j, new_starts, new_vals, kept, added = splice(starts, vals, 6, [(0, 1, 2), (5, 1, 1)], 1)
    assert (i, j, kept, added) == (0, 6, [(2, 5, 2, 5)], 3)  # runs 2..4 copied as one slice
    assert new_starts == [0, 1, 2, 3, 4, 5] and new_vals == [2, 1, 0, 1, 0, 2]


def test_lazy_heaps_answer_single_units_through_many_rebuilds() -> None:
    rng = np.random.default_rng(11)
    n, cap = 20, 4
    array = np.full(n, cap, dtype=np.int64)
    index = FreeCoreIndex(array.tolist())
    rebuilds = 0
    for _ in range(3000):
        held = index._held
        placed = index.first_fit(1)
        expected = first_fit(array, 1)
        assert placed == expected or (placed is None and expected is None)
        if placed is not None and rng.random() < 0.6:
            index.move(placed, -1)
            array[placed.runs[0][0]] -= 1
        else:
            first = int(rng.integers(0, n))
            end = int(rng.integers(first + 1, n + 1))
            give = rng.integers(0, cap - array[first:end] + 1)
            index.give(first, give.tolist())
            array[first:end] += give
        rebuilds += index._held < held - 1
        check(index, array.tolist())
    assert rebuilds > 10  # stale entries were dropped many times, answers stayed exact
