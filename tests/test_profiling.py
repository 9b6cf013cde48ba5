"""Design-time profiling (Algorithm 1 of the market paper) against CP-SAT and Table II.

The GA of ``algorithms.profiling`` is checked against the exact optimum of
``algorithms.exact_mapping`` (CP-SAT over *every* non-preemptive schedule on exactly c
cores, so a gap mixes GA search misses and decoder restrictions) on a seeded set of
random 5-8-task DAGs, for every c. The issue's acceptance thresholds are asserted as
stated: equal on >= 95 % of (graph, c) pairs and never more than 5 % worse.

Table II rows are reproduced with hand-built graphs (found by exhaustive search over
WCET multisets, each row confirmed by CP-SAT below):

* j1 (9 tasks): independent tasks 15, 15, 14, 12, 7, 6, 6, 6, 5.
* j2 (7 tasks): independent tasks 11, 11, 11, 9, 7, 6, 3.
* j3 (6 tasks): a chain 8 -> 14 (the critical path, 22) beside independent 21, 20, 14, 6.
* j4 (5 tasks): a chain 10 -> 15 (the critical path, 25) beside independent 23, 14, 12.
"""

from __future__ import annotations

import random
from itertools import pairwise

import networkx as nx
import numpy as np
import pytest

from market_hpc.algorithms.exact_mapping import optimal_makespan
from market_hpc.algorithms.profiling import (
    GASettings,
    ProfileCache,
    profile_graph,
    response_time,
)
from market_hpc.algorithms.taskgraph import critical_path_length, makespan, schedule_context
from market_hpc.algorithms.taskgraph import total_work as graph_work
from market_hpc.errors import ConfigError

SHAPES = ("layered", "fork_join", "chain")
TABLE_II = {
    "j1": (86, 43, 29, 23, 19, 17, 15, 15, 15),
    "j2": (58, 29, 20, 17, 13, 11, 11),
    "j3": (83, 42, 28, 22, 22, 22),
    "j4": (74, 37, 26, 25, 25),
}


def random_dag(rng: np.random.Generator, n: int, shape: str, edge_prob: float = 0.3) -> nx.DiGraph:
    """Draw a DAG: WCET ~ U{2..25}, edges i -> j (i < j) with probability ``edge_prob``.

    ``layered``: 2-4 layers, edges between consecutive layers. ``fork_join``: source 0 and
    sink n-1 around the middle tasks, which also get random forward edges. ``chain``:
    2-3 chains (random task assignment) plus cross-chain edges at ``edge_prob / 2``.
    """
    g = nx.DiGraph()
    g.add_nodes_from((task, {"wcet": int(rng.integers(2, 26))}) for task in range(n))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    if shape == "layered":
        n_layers = int(rng.integers(2, min(4, n) + 1))
        extra = rng.integers(0, n_layers, n - n_layers)
        layer = np.sort(np.concatenate([np.arange(n_layers), extra]))
        for u, v in pairs:
            if layer[v] == layer[u] + 1 and rng.random() < edge_prob:
                g.add_edge(u, v)
    elif shape == "fork_join":
        for middle in range(1, n - 1):
            g.add_edges_from([(0, middle), (middle, n - 1)])
        for u, v in pairs:
            if 0 < u and v < n - 1 and rng.random() < edge_prob:
                g.add_edge(u, v)
    else:
        chain_of = rng.integers(0, int(rng.integers(2, 4)), n)
        last: dict[int, int] = {}
        for task in range(n):
            if int(chain_of[task]) in last:
                g.add_edge(last[int(chain_of[task])], task)
            last[int(chain_of[task])] = task
        for u, v in pairs:
            if chain_of[u] != chain_of[v] and rng.random() < edge_prob / 2:
                g.add_edge(u, v)
    return g


def independent(*wcets: int) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from((task, {"wcet": w}) for task, w in enumerate(wcets))
    return g


def chain_beside(chain: tuple[int, int], *others: int) -> nx.DiGraph:
    g = independent(*chain, *others)
    g.add_edge(0, 1)
    return g


TABLE_II_GRAPHS = {
    "j1": lambda: independent(15, 15, 14, 12, 7, 6, 6, 6, 5),
    "j2": lambda: independent(11, 11, 11, 9, 7, 6, 3),
    "j3": lambda: chain_beside((8, 14), 21, 20, 14, 6),
    "j4": lambda: chain_beside((10, 15), 23, 14, 12),
}


@pytest.fixture(scope="module")
def dag_set() -> list[nx.DiGraph]:
    rng = np.random.default_rng(2024)
    graphs = []
    for index in range(60):
        n_tasks = int(rng.integers(5, 9))
        graphs.append(random_dag(rng, n_tasks, SHAPES[index % len(SHAPES)]))
    return graphs


@pytest.fixture(scope="module")
def profiles(dag_set: list[nx.DiGraph]) -> list:
    return [profile_graph(g, seed=index) for index, g in enumerate(dag_set)]


def test_ga_matches_cp_sat_optimum(dag_set, profiles):
    equal, pairs, worst_gap = 0, 0, 0.0
    for g, profile in zip(dag_set, profiles):
        for cores in range(1, g.number_of_nodes() + 1):
            exact = optimal_makespan(g, cores, seed=0)
            assert exact.status == "OPTIMAL"
            found = profile.response_times[cores - 1]
            assert found >= exact.makespan  # the GA's schedules are feasible schedules
            pairs += 1
            equal += found == exact.makespan
            worst_gap = max(worst_gap, found / exact.makespan - 1.0)
    print(f"GA vs CP-SAT: {equal}/{pairs} equal ({equal / pairs:.2%}), worst gap {worst_gap:.2%}")
    assert equal / pairs >= 0.95
    assert worst_gap <= 0.05


def test_profiles_are_monotone_and_saturate_at_critical_path(dag_set, profiles):
    for g, profile in zip(dag_set, profiles):
        times = profile.response_times
        assert len(times) == g.number_of_nodes()
        assert all(later <= earlier for earlier, later in pairwise(times))
        assert times[-1] == critical_path_length(g)
        assert times[profile.c_star - 1] == min(times)
        assert all(value > min(times) for value in times[: profile.c_star - 1])


def test_one_core_takes_the_total_work(dag_set, profiles):
    for g, profile in zip(dag_set, profiles):
        assert profile.response_times[0] == graph_work(g)


def test_mappings_use_exactly_c_cores_and_reproduce_the_response_time(dag_set, profiles):
    for g, profile in zip(dag_set, profiles):
        for cores, (mapping, order) in enumerate(zip(profile.mappings, profile.task_orders), 1):
            assert sorted(set(mapping)) == list(range(cores))
            assert response_time(g, mapping, order) == profile.response_times[cores - 1]


def test_rank_order_decoder_is_taskgraph_makespan(dag_set):
    rng = np.random.default_rng(5)
    for g in dag_set[:20]:
        mapping = [int(core) for core in rng.integers(0, 3, g.number_of_nodes())]
        assert response_time(g, mapping) == makespan(schedule_context(g), mapping)


def test_moving_a_task_to_a_new_core_never_hurts_without_communication(dag_set, profiles):
    """The monotonicity repair's premise (spec A17): with comm 0 a split never hurts."""
    for g, profile in zip(dag_set, profiles):
        for cores in range(1, g.number_of_nodes()):
            mapping, order = profile.mappings[cores - 1], profile.task_orders[cores - 1]
            for task in range(len(mapping)):
                moved = mapping[:task] + (cores,) + mapping[task + 1 :]
                assert response_time(g, moved, order) <= profile.response_times[cores - 1]


@pytest.mark.parametrize("job", sorted(TABLE_II))
def test_table_ii_rows_are_reproduced(job):
    g = TABLE_II_GRAPHS[job]()
    profile = profile_graph(g, seed=7)
    assert profile.response_times == TABLE_II[job]
    assert profile.c_star == {"j1": 7, "j2": 6, "j3": 4, "j4": 4}[job]
    exact = tuple(optimal_makespan(g, c).makespan for c in range(1, g.number_of_nodes() + 1))
    assert exact == TABLE_II[job]  # the construction is right: these are the optima


def test_same_seed_same_profile_whatever_the_global_random_state(dag_set):
    g = dag_set[3]
    random.seed(1)
    first = profile_graph(g, seed=11)
    random.seed(99)
    random.random()
    state = random.getstate()
    second = profile_graph(g, seed=11)
    assert first == second
    assert random.getstate() == state  # the global stream is left untouched


def test_cache_profiles_each_graph_and_seed_once(dag_set):
    cache = ProfileCache()
    first = cache.get_or_profile(dag_set[0], seed=1)
    relabelled = nx.DiGraph()
    relabelled.add_nodes_from(sorted(dag_set[0].nodes(data=True), reverse=True))
    relabelled.add_edges_from(dag_set[0].edges(data=True))
    assert cache.get_or_profile(relabelled, seed=1) is first
    assert (cache.hits, cache.misses) == (1, 1)
    cache.get_or_profile(dag_set[1], seed=1)
    cache.get_or_profile(dag_set[0], seed=2)
    assert (cache.hits, cache.misses) == (1, 3)
    assert first.graph_hash != cache.get_or_profile(dag_set[1], seed=1).graph_hash
    assert (cache.hits, cache.misses) == (2, 3)


def test_communication_cost_is_charged_across_cores_only():
    g = chain_beside((6, 4), 5)
    g.edges[0, 1]["data"] = 2
    profile = profile_graph(g, seed=0, comm_cost=1.5)
    assert profile.response_times[-1] == 6 + 3 + 4  # every task on its own core
    assert profile.response_times[1] == 10  # keep the chain together
    for cores in (1, 2, 3):
        exact = optimal_makespan(g, cores, comm_cost=1.5)
        assert (exact.status, exact.makespan) == ("OPTIMAL", profile.response_times[cores - 1])


def test_bad_input_fails_loudly():
    cyclic = independent(3, 4)
    cyclic.add_edges_from([(0, 1), (1, 0)])
    with pytest.raises(ConfigError, match="acyclic"):
        profile_graph(cyclic, seed=0)
    with pytest.raises(ConfigError, match="comm_cost"):
        profile_graph(independent(3), seed=0, comm_cost=-1.0)
    with pytest.raises(ConfigError, match="n_cores"):
        optimal_makespan(independent(3, 4), 3)
    with pytest.raises(ConfigError, match="population"):
        GASettings(population=1)
    with pytest.raises(ConfigError, match="topological"):
        response_time(chain_beside((2, 3)), (0, 1), order=(1, 0))


@pytest.mark.slow
def test_bundled_application_library_is_what_the_ga_gives_today():
    """The stored design-time profiles (demo, taskgraphs generator) are never stale."""
    from market_hpc.workload.applications import build_library, bundled_library, library_to_dict

    assert library_to_dict(build_library()) == library_to_dict(list(bundled_library()))
