"""The free-core index places exactly as the array functions, whatever the updates."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from market_hpc.algorithms.allocation import best_fit, first_fit
from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.node_runs import NodeRuns, as_runs


def check_runs(index: FreeCoreIndex, free: np.ndarray) -> None:
    runs = index.runs()
    rebuilt = np.concatenate([np.full(count, value) for _, count, value in runs])
    assert rebuilt.tolist() == free.tolist()
    values = [value for _, _, value in runs]
    assert all(a != b for a, b in itertools.pairwise(values)), (
        f"adjacent runs share a count: {runs}"
    )
    assert index.total == int(free.sum())


@pytest.mark.parametrize("seed", range(12))
def test_index_matches_first_fit_and_best_fit_under_random_updates(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    cap = int(rng.integers(1, 5))
    free = np.full(n, cap, dtype=np.int64)
    index = FreeCoreIndex(free.tolist())
    for _ in range(300):
        units = int(rng.integers(1, max(2, n * cap // 3)))
        expected_first = first_fit(free, units)
        got_first = index.first_fit(units)
        assert (got_first is None) == (expected_first is None)
        if got_first is not None:
            assert got_first == expected_first
        expected_best = best_fit(free, free, units)
        got_best = index.best_fit(units)
        assert (got_best is None) == (expected_best is None)
        if got_best is not None:
            assert got_best == expected_best
        chosen = got_best if rng.random() < 0.5 else got_first
        if chosen is not None and rng.random() < 0.6:
            for node, taken in chosen:
                free[node] -= taken
            index.take(chosen)
        elif (free < cap).any():  # release a random node range by a random amount
            first = int(rng.integers(0, n))
            end = int(rng.integers(first + 1, n + 1))
            room = cap - free[first:end]
            give = rng.integers(0, room + 1)
            free[first:end] += give
            index.give(first, give.tolist())
        check_runs(index, free)


def test_scratch_rolls_back_every_update_and_nests() -> None:
    index = FreeCoreIndex([4, 4, 1, 0, 3])
    before = index.runs()
    with index.scratch():
        index.take(index.first_fit(6))
        with index.scratch():
            index.clear(0, 5)
            assert index.total == 0
        assert index.total == 6
        index.take(NodeRuns(((4, 1, 3),)), whole_nodes=True)
    assert index.runs() == before and index.total == 12


def test_single_unit_first_fit_takes_the_node_with_most_free_cores() -> None:
    index = FreeCoreIndex([1, 3, 3, 2])
    assert index.first_fit(1) == ((1, 1),)
    assert first_fit(np.array([1, 3, 3, 2]), 1) == ((1, 1),)


def test_node_runs_read_as_pairs() -> None:
    pairs = ((0, 1), (1, 1), (2, 1), (7, 4))
    runs = as_runs(pairs)
    assert runs.runs == ((0, 3, 1), (7, 1, 4))
    assert runs == pairs and list(runs) == list(pairs) and len(runs) == 4 and runs[3] == (7, 4)
    assert runs.total_units == 7 and runs.format() == "0:1;1:1;2:1;7:4"
    assert as_runs(runs) is runs and hash(runs) == hash(pairs)


def test_subclass_overriding_allocate_keeps_its_own_placement() -> None:
    from market_hpc.core.model import HPCModel
    from market_hpc.domain.job import Job
    from market_hpc.policies.allocators import FirstFit
    from market_hpc.policies.classic import Fifo

    class LastNode(FirstFit):
        name = "last-node"

        def allocate(self, job, free, view):  # type: ignore[no-untyped-def]
            node = int(np.flatnonzero(free[:, 0] >= job.units)[-1])
            return ((node, job.units),)

    model = HPCModel([Job(1, 0.0, 5.0, 5.0, units=2)], "nodes=4,cores=2", policy=Fifo(LastNode()))
    model.run(until=0)
    assert [r.allocation for r in model.running_by_end] == [((3, 2),)]


def test_indexed_allocators_match_array_allocators_in_a_model() -> None:
    from market_hpc.core.model import HPCModel
    from market_hpc.domain.job import Job
    from market_hpc.policies.allocators import BestFit, FirstFit
    from market_hpc.policies.classic import Easy, Fifo

    class DenseFirstFit(FirstFit):  # same placement, array path only
        allocate_indexed = None  # type: ignore[assignment]

    class DenseBestFit(BestFit):
        allocate_indexed = None  # type: ignore[assignment]

    rng = np.random.default_rng(5)
    jobs = [
        Job(
            i,
            float(rng.integers(0, 400)),
            float(rng.integers(1, 60)),
            float(rng.integers(1, 90)),
            units=int(rng.integers(1, 9)),
        )
        for i in range(1, 300)
    ]
    for exclusive in (False, True):
        for scheduler in (Fifo, Easy):
            for fast, dense in ((FirstFit, DenseFirstFit), (BestFit, DenseBestFit)):
                frames = []
                for allocator in (fast(), dense()):
                    model = HPCModel(
                        jobs,
                        "nodes=6,cores=3",
                        policy=scheduler(allocator),
                        exclusive=exclusive,
                        record_timeseries=False,
                    )
                    model.run()
                    frames.append(model.recorder.jobs_frame())
                assert frames[0].equals(frames[1]), (exclusive, scheduler, fast)


def test_proposals_are_claimed_in_order_and_the_rest_settled() -> None:
    index = FreeCoreIndex([2, 2, 2])
    proposals = []
    for job_id in (1, 2):
        runs = index.first_fit(2)
        outer = index.begin_journal()
        index.take(runs)
        proposals.append((job_id, runs, index.end_journal(outer)))
    index.propose(proposals)
    assert index.claim(1, proposals[0][1])  # node 0 now belongs to job 1
    assert not index.claim(3, proposals[1][1])  # out of order: job 2's placement is undone
    assert index.runs() == [(0, 1, 0), (1, 2, 2)] and index.total == 4
    runs = index.first_fit(2)
    outer = index.begin_journal()
    index.take(runs)
    index.propose([(4, runs, index.end_journal(outer))])
    assert index.first_fit(2) == runs and index.total == 4  # a query settles it first
