"""Task graphs of seed-002 jobs and the list-scheduling decoder behind their profiles.

Singh, Dziurzanski & Indrusiak, HPCS 2015, Sec. III-A: a job is a DAG ``TG = (T, E)``;
each task has a fixed worst-case execution time (WCET) and a memory need, each edge
carries data between dependent tasks, and each task occupies one core.

Representation: a ``networkx.DiGraph`` with node attribute ``wcet`` (positive int),
optional ``mem`` (stored, never enforced, as in the paper) and edge attribute ``data`` (volume,
default 0). Tasks are indexed by their sorted ids, so a *mapping* is a sequence whose
``i``-th entry is the core of the ``i``-th task in ``sorted(g.nodes)``.

Decisions where the paper is silent:

* A mapping is decoded by non-preemptive list scheduling. Every task has a
  priority, its upward rank (b-level: its WCET plus the largest rank of a successor;
  communication is not counted), ties broken by task index; each core runs its tasks in
  that order. Positive WCETs make the order topological, so one pass suffices: a task
  starts at ``max(core free, max over preds (finish + delay))``, where ``delay =
  data * comm_cost`` across cores and 0 on the same core (default ``comm_cost=0``,
  which reproduces Table II's ``RT(2) = ceil(RT(1) / 2)``). The job starts at 0.
* Generated graphs are connected, have integer WCETs ~ U{2..25} and edge data 0.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from numbers import Integral, Real

import networkx as nx
import numpy as np

from market_hpc.errors import ConfigError, UnknownNameError

WCET_RANGE = (2, 25)
DEFAULT_SHAPES: Mapping[str, float] = {"layered": 0.8, "fork_join": 0.2}


def validate_task_graph(g: nx.DiGraph) -> None:
    """Check that ``g`` is a well-formed task graph.

    Raises:
        ConfigError: naming the task or edge at fault, or a cycle.

    >>> g = nx.DiGraph([(0, 1)])
    >>> g.add_node(0, wcet=3); g.add_node(1, wcet=0)
    >>> validate_task_graph(g)
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: task 1: wcet must be a positive int, got 0
    """
    if not isinstance(g, nx.DiGraph) or g.is_multigraph():
        raise ConfigError(f"task graph must be a networkx DiGraph, got {type(g).__name__}")
    if g.number_of_nodes() == 0:
        raise ConfigError("task graph has no tasks")
    _task_order(g)
    for task, attrs in g.nodes(data=True):
        wcet = attrs.get("wcet")
        if not isinstance(wcet, Integral) or isinstance(wcet, bool) or wcet <= 0:
            raise ConfigError(f"task {task!r}: wcet must be a positive int, got {wcet!r}")
        mem = attrs.get("mem", 0)
        if not isinstance(mem, Real) or not 0 <= float(mem) < math.inf:
            raise ConfigError(f"task {task!r}: mem must be a finite number >= 0, got {mem!r}")
    for source, target, data in g.edges(data="data", default=0):
        if not isinstance(data, Real) or not 0 <= float(data) < math.inf:
            raise ConfigError(
                f"edge {source!r}->{target!r}: data must be a finite number >= 0, got {data!r}"
            )
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return
    path = " -> ".join(repr(edge[0]) for edge in cycle) + f" -> {cycle[0][0]!r}"
    raise ConfigError(f"task graph must be acyclic, found cycle {path}")


def _task_order(g: nx.DiGraph) -> list[Hashable]:
    try:
        return sorted(g.nodes)
    except TypeError as exc:
        raise ConfigError(f"task ids must be mutually orderable, got {list(g.nodes)!r}") from exc


def total_work(g: nx.DiGraph) -> int:
    """Sum of WCETs, the 1-core response time ``RT(1)``.

    >>> total_work(chain(3, np.random.default_rng(0), wcet_range=(4, 4)))
    12
    """
    return sum(int(w) for _, w in g.nodes(data="wcet"))


def critical_path_length(g: nx.DiGraph) -> int:
    """Longest path by WCET (communication ignored), the saturation level of ``RT(c)``.

    >>> g = nx.DiGraph([("a", "b"), ("a", "c")])
    >>> nx.set_node_attributes(g, {"a": 2, "b": 5, "c": 3}, "wcet")
    >>> critical_path_length(g)
    7
    """
    return max(upward_ranks(g).values())


def upward_ranks(g: nx.DiGraph) -> dict[Hashable, int]:
    """Upward rank (b-level) of every task: its WCET plus the largest successor rank."""
    ranks: dict[Hashable, int] = {}
    for task in reversed(list(nx.topological_sort(g))):
        tail = max((ranks[succ] for succ in g.successors(task)), default=0)
        ranks[task] = int(g.nodes[task]["wcet"]) + tail
    return ranks


def lower_bound_profile(g: nx.DiGraph) -> tuple[float, ...]:
    """``max(CP, ceil(W / c))`` for ``c = 1..|T|``: a bound no mapping beats (checks the GA).

    Used as a cheap stand-in profiler; it is exact for independent tasks only when the
    work splits evenly, so it is a bound, not a schedule.

    >>> g = fork_join(4, np.random.default_rng(0), wcet_range=(5, 5))
    >>> lower_bound_profile(g)
    (20.0, 15.0, 15.0, 15.0)
    """
    work, path = total_work(g), critical_path_length(g)
    return tuple(float(max(path, -(-work // c))) for c in range(1, g.number_of_nodes() + 1))


def graph_hash(g: nx.DiGraph) -> str:
    """Stable 16-hex-digit hash of task ids, edges, WCETs and edge data.

    Independent of insertion order and of ``mem`` and graph attributes, which do not
    change a schedule, so it keys a profile cache.

    >>> a = nx.DiGraph(); a.add_node(1, wcet=4); a.add_node(0, wcet=3); a.add_edge(0, 1)
    >>> b = nx.DiGraph(); b.add_node(0, wcet=3); b.add_node(1, wcet=4); b.add_edge(0, 1)
    >>> graph_hash(a) == graph_hash(b)
    True
    """
    tasks = _task_order(g)
    index = {task: i for i, task in enumerate(tasks)}
    nodes = [[task, int(g.nodes[task]["wcet"])] for task in tasks]
    edges = sorted(
        ([u, v, float(d)] for u, v, d in g.edges(data="data", default=0)),
        key=lambda edge: (index[edge[0]], index[edge[1]]),
    )
    text = json.dumps({"nodes": nodes, "edges": edges}, default=repr, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class ScheduleContext:
    """Per-graph data the decoder needs, as plain tuples indexed by task index.

    Attributes:
        tasks: Task ids; index ``i`` is ``sorted(g.nodes)[i]``.
        wcet: WCET per task.
        preds: Predecessor indices per task.
        pred_data: Edge data volume per entry of ``preds``.
        order: Task indices by decreasing upward rank, ties by index (topological).
    """

    tasks: tuple[Hashable, ...]
    wcet: tuple[int, ...]
    preds: tuple[tuple[int, ...], ...]
    pred_data: tuple[tuple[float, ...], ...]
    order: tuple[int, ...]


def schedule_context(g: nx.DiGraph) -> ScheduleContext:
    """Validate ``g`` and precompute what ``makespan`` needs (once per graph).

    Raises:
        ConfigError: if ``g`` is not a valid task graph.
    """
    validate_task_graph(g)
    tasks = _task_order(g)
    index = {task: i for i, task in enumerate(tasks)}
    ranks = upward_ranks(g)
    preds = [sorted(index[p] for p in g.predecessors(task)) for task in tasks]
    data = [
        tuple(float(g.edges[tasks[p], task].get("data", 0)) for p in preds[i])
        for i, task in enumerate(tasks)
    ]
    order = sorted(range(len(tasks)), key=lambda i: (-ranks[tasks[i]], i))
    return ScheduleContext(
        tasks=tuple(tasks),
        wcet=tuple(int(g.nodes[task]["wcet"]) for task in tasks),
        preds=tuple(tuple(p) for p in preds),
        pred_data=tuple(data),
        order=tuple(order),
    )


def task_times(
    ctx: ScheduleContext, mapping: Sequence[int], comm_cost: float = 0.0
) -> tuple[list[float], list[float]]:
    """Start and finish time of every task (by index) under the list schedule.

    ``mapping`` is not checked here; ``list_schedule`` is the checked entry point.
    """
    n_tasks = len(ctx.wcet)
    start: list[float] = [0.0] * n_tasks
    finish: list[float] = [0.0] * n_tasks
    core_free: dict[int, float] = {}
    for task in ctx.order:
        core = mapping[task]
        begin = core_free.get(core, 0.0)
        for pred, data in zip(ctx.preds[task], ctx.pred_data[task]):
            ready = finish[pred]
            if comm_cost and mapping[pred] != core:
                ready += data * comm_cost
            begin = max(begin, ready)
        start[task] = begin
        finish[task] = core_free[core] = begin + ctx.wcet[task]
    return start, finish


def makespan(ctx: ScheduleContext, mapping: Sequence[int], comm_cost: float = 0.0) -> float:
    """Response time of one mapping: the GA's fitness (fast, unchecked).

    >>> g = nx.DiGraph(); g.add_nodes_from(range(4), wcet=5)
    >>> ctx = schedule_context(g)
    >>> makespan(ctx, [0, 1, 0, 1]), makespan(ctx, [0, 0, 0, 1])
    (10.0, 15.0)
    """
    return float(max(task_times(ctx, mapping, comm_cost)[1]))


def list_schedule(
    g: nx.DiGraph,
    mapping: Sequence[int] | Mapping[Hashable, int],
    n_cores: int,
    comm_cost: float = 0.0,
) -> float:
    """Makespan of ``g`` when each task runs on the core ``mapping`` gives it (checked).

    Args:
        g: The task graph.
        mapping: Core per task, by task index or as ``{task: core}``.
        n_cores: Cores available; every core must be in ``0..n_cores-1``.
        comm_cost: Time per unit of edge data between different cores.

    Raises:
        ConfigError: on an invalid graph, a mapping of the wrong size or a bad core.

    A chain on 2 cores takes the sum of its WCETs, whatever the mapping:

    >>> g = chain(3, np.random.default_rng(0), wcet_range=(4, 4))
    >>> list_schedule(g, [0, 1, 0], n_cores=2)
    12.0
    >>> list_schedule(g, [0, 1, 0], n_cores=2, comm_cost=1.0)
    12.0
    """
    ctx = schedule_context(g)
    if isinstance(mapping, Mapping):
        missing = [task for task in ctx.tasks if task not in mapping]
        if missing:
            raise ConfigError(f"mapping has no core for task {missing[0]!r}")
        mapping = [mapping[task] for task in ctx.tasks]
    if len(mapping) != len(ctx.tasks):
        size = len(ctx.tasks)
        raise ConfigError(f"mapping has {len(mapping)} entries, the graph has {size} tasks")
    if not isinstance(n_cores, Integral) or n_cores < 1:
        raise ConfigError(f"n_cores must be an int >= 1, got {n_cores!r}")
    if not 0 <= comm_cost < math.inf:
        raise ConfigError(f"comm_cost must be a finite number >= 0, got {comm_cost!r}")
    for task, core in zip(ctx.tasks, mapping):
        if not isinstance(core, Integral) or not 0 <= core < n_cores:
            valid = f"an int in 0..{n_cores - 1}"
            raise ConfigError(f"task {task!r}: core must be {valid}, got {core!r}")
    return makespan(ctx, [int(core) for core in mapping], comm_cost)


def _new_graph(
    n: int, rng: np.random.Generator, wcet_range: tuple[int, int], shape: str, minimum: int
) -> nx.DiGraph:
    if not isinstance(n, Integral) or n < minimum:
        raise ConfigError(f"{shape}: number of tasks must be an int >= {minimum}, got {n!r}")
    low, high = wcet_range
    if not 1 <= low <= high:
        raise ConfigError(f"wcet_range must satisfy 1 <= low <= high, got {wcet_range!r}")
    g = nx.DiGraph(shape=shape)
    for task, wcet in enumerate(rng.integers(low, high + 1, size=n)):
        g.add_node(task, wcet=int(wcet))
    return g


def chain(
    n: int, rng: np.random.Generator, *, wcet_range: tuple[int, int] = WCET_RANGE
) -> nx.DiGraph:
    """``n`` tasks in sequence, ``0 -> 1 -> ... -> n-1`` (no parallelism)."""
    g = _new_graph(n, rng, wcet_range, "chain", 1)
    g.add_edges_from(((i, i + 1) for i in range(n - 1)), data=0.0)
    return g


def fork_join(
    n: int, rng: np.random.Generator, *, wcet_range: tuple[int, int] = WCET_RANGE
) -> nx.DiGraph:
    """Source ``0``, ``n - 2`` parallel tasks, sink ``n - 1``."""
    g = _new_graph(n, rng, wcet_range, "fork_join", 3)
    for middle in range(1, n - 1):
        g.add_edge(0, middle, data=0.0)
        g.add_edge(middle, n - 1, data=0.0)
    return g


def layered_random(
    n: int,
    rng: np.random.Generator,
    edge_prob: float = 0.3,
    *,
    n_layers: int | None = None,
    wcet_range: tuple[int, int] = WCET_RANGE,
) -> nx.DiGraph:
    """Connected random DAG whose edges join consecutive layers (TGFF-like stand-ins).

    Tasks are numbered layer by layer. Each pair of tasks in consecutive layers is joined
    with probability ``edge_prob``; then every task gets at least one predecessor (but
    the first layer) and one successor (but the last), and weak components are joined,
    so the job is one connected graph.

    Args:
        n: Number of tasks (>= 2).
        rng: Random stream.
        edge_prob: Probability of each edge between consecutive layers, in [0, 1].
        n_layers: Number of layers in ``2..n``; default U{2..max(2, n // 3)}, shallow
            like Table II's jobs (critical paths of one to two tasks).
        wcet_range: Inclusive range of the integer WCETs.
    """
    if not isinstance(n, Integral) or n < 2:
        raise ConfigError(f"layered: number of tasks must be an int >= 2, got {n!r}")
    if not 0.0 <= edge_prob <= 1.0:
        raise ConfigError(f"layered: edge_prob must be in [0, 1], got {edge_prob!r}")
    if n_layers is None:
        n_layers = int(rng.integers(2, max(2, n // 3) + 1))
    if not 2 <= n_layers <= n:
        raise ConfigError(f"layered: n_layers must be in 2..{n}, got {n_layers!r}")
    g = _new_graph(n, rng, wcet_range, "layered", 2)
    cuts = np.sort(rng.choice(np.arange(1, n), size=n_layers - 1, replace=False))
    layers = [list(range(lo, hi)) for lo, hi in zip([0, *cuts], [*cuts, n])]
    for upper, lower in pairwise(layers):
        hits = rng.random((len(upper), len(lower))) < edge_prob
        g.add_edges_from(((upper[i], lower[j]) for i, j in zip(*np.nonzero(hits))), data=0.0)
        for task in lower:
            if g.in_degree(task) == 0:
                g.add_edge(upper[int(rng.integers(len(upper)))], task, data=0.0)
        for task in upper:
            if g.out_degree(task) == 0:
                g.add_edge(task, lower[int(rng.integers(len(lower)))], data=0.0)
    # Every component spans all layers, so joining layer 0 to layer 1 keeps it a DAG.
    components = sorted(nx.weakly_connected_components(g), key=min)
    for first, second in pairwise(components):
        source = min(t for t in first if t in layers[0])
        target = min(t for t in second if t in layers[1])
        g.add_edge(source, target, data=0.0)
    return g


def random_task_graph(
    rng: np.random.Generator,
    *,
    n_tasks: tuple[int, int] = (5, 10),
    shapes: Mapping[str, float] = DEFAULT_SHAPES,
    edge_prob: float = 0.3,
    wcet_range: tuple[int, int] = WCET_RANGE,
) -> nx.DiGraph:
    """Draw a job's task graph: size ~ U{n_tasks}, shape by weight.

    Chains are available (``shapes={"chain": 1}``) but not in the default mix: a chain
    cannot use a second core, which is unlike every job in the paper's Table II.

    Raises:
        ConfigError: on an unknown shape (listing the valid ones) or bad weights.

    >>> g = random_task_graph(np.random.default_rng(1))
    >>> 5 <= g.number_of_nodes() <= 10 and nx.is_weakly_connected(g)
    True
    """
    builders = {"chain": chain, "fork_join": fork_join, "layered": layered_random}
    for name in shapes:
        if name not in builders:
            raise UnknownNameError("task graph shape", name, builders)
    names = sorted(shapes)
    weights = np.array([shapes[name] for name in names], dtype=float)
    if not (weights >= 0).all() or not weights.sum() > 0:
        raise ConfigError(f"shape weights must be >= 0 with a positive sum, got {dict(shapes)}")
    low, high = n_tasks
    if not 3 <= low <= high:
        raise ConfigError(f"n_tasks must satisfy 3 <= low <= high, got {n_tasks!r}")
    n = int(rng.integers(low, high + 1))
    name = names[int(rng.choice(len(names), p=weights / weights.sum()))]
    if name == "layered":
        return layered_random(n, rng, edge_prob, wcet_range=wcet_range)
    return builders[name](n, rng, wcet_range=wcet_range)
