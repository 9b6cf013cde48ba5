"""Task graphs: validation, hashing, the list-scheduling decoder and the generators."""

from __future__ import annotations

import ast
import itertools
import math
import pathlib
import time
from collections.abc import Mapping
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market_hpc.algorithms import taskgraph
from market_hpc.algorithms.taskgraph import (
    chain,
    critical_path_length,
    fork_join,
    graph_hash,
    layered_random,
    list_schedule,
    lower_bound_profile,
    makespan,
    random_task_graph,
    schedule_context,
    task_times,
    total_work,
    upward_ranks,
    validate_task_graph,
)
from market_hpc.errors import ConfigError, UnknownNameError


def graph(wcets: Mapping[Any, object], edges: list[tuple[Any, Any]] | None = None) -> nx.DiGraph:
    g = nx.DiGraph()
    for task, wcet in wcets.items():
        g.add_node(task, wcet=wcet)
    g.add_edges_from(edges or [])
    return g


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_work_and_critical_path_by_hand() -> None:
    g = graph({"a": 2, "b": 5, "c": 3, "d": 4}, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    assert total_work(g) == 14
    assert critical_path_length(g) == 11
    assert upward_ranks(g) == {"a": 11, "b": 9, "c": 7, "d": 4}
    assert lower_bound_profile(g) == (14.0, 11.0, 11.0, 11.0)


def test_chain_on_two_cores_takes_the_sum_for_every_mapping() -> None:
    g = graph({0: 3, 1: 7, 2: 4, 3: 1}, [(0, 1), (1, 2), (2, 3)])
    for mapping in itertools.product(range(2), repeat=4):
        assert list_schedule(g, list(mapping), n_cores=2) == 15.0


def test_independent_tasks_balance() -> None:
    g = graph({0: 5, 1: 5, 2: 5, 3: 5})
    assert list_schedule(g, [0, 1, 0, 1], n_cores=2) == 10.0
    assert list_schedule(g, [0, 0, 0, 1], n_cores=2) == 15.0
    assert list_schedule(g, [0, 1, 2, 3], n_cores=4) == 5.0
    uneven = graph({0: 8, 1: 3, 2: 3, 3: 2})
    assert list_schedule(uneven, [0, 1, 1, 1], n_cores=2) == 8.0  # ceil(16 / 2)


def test_fork_join_by_hand() -> None:
    g = graph({0: 2, 1: 3, 2: 4, 3: 5, 4: 1}, [(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)])
    assert list_schedule(g, [0] * 5, n_cores=1) == 15.0
    assert list_schedule(g, [0, 0, 1, 2, 0], n_cores=3) == 8.0  # 2 + 5 + 1
    starts, finishes = task_times(schedule_context(g), [0, 0, 1, 2, 0])
    assert starts == [0.0, 2.0, 2.0, 2.0, 7.0]
    assert finishes == [2.0, 5.0, 6.0, 7.0, 8.0]


def test_cores_run_tasks_by_upward_rank_not_by_id() -> None:
    # Task 0 (wcet 2) is independent; task 1 (wcet 1) feeds task 2 (wcet 10) on core 1.
    # Rank order 1, 2, 0 runs task 1 first on core 0, so task 2 starts at 1: makespan 11.
    g = graph({0: 2, 1: 1, 2: 10}, [(1, 2)])
    assert schedule_context(g).order == (1, 2, 0)
    assert list_schedule(g, [0, 0, 1], n_cores=2) == 11.0


def test_communication_delay_only_across_cores() -> None:
    g = graph({0: 3, 1: 4}, [(0, 1)])
    g.edges[0, 1]["data"] = 2.0
    assert list_schedule(g, [0, 0], n_cores=2, comm_cost=1.5) == 7.0
    assert list_schedule(g, [0, 1], n_cores=2, comm_cost=1.5) == 10.0
    assert list_schedule(g, [0, 1], n_cores=2) == 7.0


def test_mapping_by_task_id_equals_mapping_by_index() -> None:
    # Ranks x=7, z=3, y=2: core 1 runs z before y, so it idles until x ends (no insertion).
    g = graph({"x": 4, "y": 2, "z": 3}, [("x", "z")])
    by_id = list_schedule(g, {"z": 1, "x": 0, "y": 1}, n_cores=2)
    assert by_id == list_schedule(g, [0, 1, 1], n_cores=2) == 9.0
    assert list_schedule(g, {"x": 0, "y": 0, "z": 1}, n_cores=2) == 7.0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 10), st.floats(0.0, 3.0))
def test_makespan_respects_bounds(seed: int, n_cores: int, comm_cost: float) -> None:
    generator = rng(seed)
    g = random_task_graph(generator)
    ctx = schedule_context(g)
    for edge in g.edges:
        g.edges[edge]["data"] = float(generator.integers(0, 5))
    ctx_with_data = schedule_context(g)
    mapping = [int(c) for c in generator.integers(0, n_cores, size=len(ctx.tasks))]
    plain = makespan(ctx, mapping)
    used = len(set(mapping))
    assert max(critical_path_length(g), math.ceil(total_work(g) / used)) <= plain
    assert plain <= total_work(g)
    assert makespan(ctx_with_data, mapping, comm_cost) >= plain
    starts, finishes = task_times(ctx_with_data, mapping, comm_cost)
    for u, v in g.edges:
        i, j = ctx.tasks.index(u), ctx.tasks.index(v)
        assert starts[j] >= finishes[i]


def test_makespan_is_fast_for_ten_tasks() -> None:
    g = layered_random(10, rng(3))
    ctx = schedule_context(g)
    mapping = [i % 4 for i in range(10)]
    began = time.perf_counter()
    for _ in range(5000):
        makespan(ctx, mapping)
    assert (time.perf_counter() - began) / 5000 < 100e-6


def test_graph_hash_ignores_insertion_order_and_mem() -> None:
    g = random_task_graph(rng(7))
    nodes = list(g.nodes(data=True))
    edges = list(g.edges(data=True))
    shuffled = nx.DiGraph()
    for index in rng(1).permutation(len(nodes)):
        task, attrs = nodes[index]
        shuffled.add_node(task, **attrs, mem=123)
    for index in rng(2).permutation(len(edges)):
        u, v, attrs = edges[index]
        shuffled.add_edge(u, v, **attrs)
    assert graph_hash(shuffled) == graph_hash(g)
    assert len(graph_hash(g)) == 16
    heavier = g.copy()
    heavier.nodes[0]["wcet"] += 1
    assert graph_hash(heavier) != graph_hash(g)
    more_data = g.copy()
    u, v = next(iter(g.edges))
    more_data.edges[u, v]["data"] = 5.0
    assert graph_hash(more_data) != graph_hash(g)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: nx.DiGraph(), "task graph has no tasks"),
        (lambda: nx.MultiDiGraph(), "task graph must be a networkx DiGraph, got MultiDiGraph"),
        (lambda: graph({0: 3, 1: 2.5}), "task 1: wcet must be a positive int, got 2.5"),
        (lambda: graph({"a": True}), "task 'a': wcet must be a positive int, got True"),
        (lambda: nx.DiGraph([(0, 1)]), "task 0: wcet must be a positive int, got None"),
        (
            lambda: graph({0: 1, 1: 1, 2: 1}, [(0, 1), (1, 2), (2, 0)]),
            "task graph must be acyclic, found cycle 0 -> 1 -> 2 -> 0",
        ),
        (lambda: graph({0: 1}, [(0, 0)]), "task graph must be acyclic, found cycle 0 -> 0"),
        (lambda: graph({0: 1, "a": 1}), "task ids must be mutually orderable, got [0, 'a']"),
    ],
)
def test_validate_names_the_fault(build: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_task_graph(build())  # type: ignore[operator]
    assert str(info.value) == message


def test_validate_checks_mem_and_data() -> None:
    g = graph({0: 1, 1: 1}, [(0, 1)])
    g.nodes[1]["mem"] = -4
    with pytest.raises(ConfigError) as info:
        validate_task_graph(g)
    assert str(info.value) == "task 1: mem must be a finite number >= 0, got -4"
    g.nodes[1]["mem"] = 4
    g.edges[0, 1]["data"] = -1.0
    with pytest.raises(ConfigError) as info:
        validate_task_graph(g)
    assert str(info.value) == "edge 0->1: data must be a finite number >= 0, got -1.0"


def test_list_schedule_rejects_bad_mappings() -> None:
    g = graph({0: 1, 1: 1})
    cases: list[tuple[tuple[Any, int], str]] = [
        (([0], 2), "mapping has 1 entries, the graph has 2 tasks"),
        (([0, 2], 2), "task 1: core must be an int in 0..1, got 2"),
        (([0, 0], 0), "n_cores must be an int >= 1, got 0"),
        (({0: 0}, 2), "mapping has no core for task 1"),
    ]
    for (mapping, n_cores), message in cases:
        with pytest.raises(ConfigError) as info:
            list_schedule(g, mapping, n_cores)
        assert str(info.value) == message


@pytest.mark.parametrize("seed", range(25))
def test_generators_make_connected_valid_dags(seed: int) -> None:
    for n in range(5, 11):
        for g in (chain(n, rng(seed)), fork_join(n, rng(seed)), layered_random(n, rng(seed))):
            validate_task_graph(g)
            assert sorted(g.nodes) == list(range(n))
            assert nx.is_weakly_connected(g)
            assert all(2 <= w <= 25 and type(w) is int for _, w in g.nodes(data="wcet"))
            assert all(d == 0.0 for _, _, d in g.edges(data="data"))
    g = random_task_graph(rng(seed))
    assert 5 <= g.number_of_nodes() <= 10 and nx.is_weakly_connected(g)
    assert g.graph["shape"] in ("layered", "fork_join")


def test_generator_shapes() -> None:
    assert list(chain(4, rng()).edges) == [(0, 1), (1, 2), (2, 3)]
    fj = fork_join(5, rng())
    assert sorted(fj.successors(0)) == [1, 2, 3] and sorted(fj.predecessors(4)) == [1, 2, 3]
    deep = layered_random(9, rng(), n_layers=9)
    assert nx.dag_longest_path_length(deep, weight=None) == 8  # one task per layer
    dense = layered_random(6, rng(), edge_prob=1.0, n_layers=2)
    sources = [t for t in dense if dense.in_degree(t) == 0]
    sinks = [t for t in dense if t not in sources]
    assert set(dense.edges) == set(itertools.product(sources, sinks))
    assert random_task_graph(rng(), shapes={"chain": 1.0}).graph["shape"] == "chain"


def test_generators_are_deterministic_per_seed() -> None:
    hashes = [graph_hash(random_task_graph(rng(11))) for _ in range(3)]
    assert len(set(hashes)) == 1
    assert graph_hash(random_task_graph(rng(12))) != hashes[0]


def test_generator_errors() -> None:
    with pytest.raises(UnknownNameError) as unknown:
        random_task_graph(rng(), shapes={"star": 1.0})
    assert str(unknown.value) == (
        "unknown task graph shape 'star'; valid choices: chain, fork_join, layered"
    )
    with pytest.raises(ConfigError) as info:
        fork_join(2, rng())
    assert str(info.value) == "fork_join: number of tasks must be an int >= 3, got 2"
    with pytest.raises(ConfigError) as info:
        layered_random(5, rng(), edge_prob=1.5)
    assert str(info.value) == "layered: edge_prob must be in [0, 1], got 1.5"
    with pytest.raises(ConfigError) as info:
        chain(3, rng(), wcet_range=(0, 4))
    assert str(info.value) == "wcet_range must satisfy 1 <= low <= high, got (0, 4)"


def test_algorithms_do_not_import_mesa() -> None:
    for module in ("valuecurve", "taskgraph"):
        path = pathlib.Path(taskgraph.__file__).with_name(f"{module}.py")
        tree = ast.parse(path.read_text())
        names = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
        assert not [n for n in names if n.split(".")[0] == "mesa" or n == "market_hpc.core.model"]
