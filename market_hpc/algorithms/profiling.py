"""Design-time profiling of task-graph jobs (Algorithm 1 of the market paper).

Singh, Indrusiak et al., "Market-inspired Dynamic Resource Allocation in Many-core HPC
Systems", Algorithm 1: for each c = 1..|T| find, by a GA "similarly as in [25]" (Sayuti
& Indrusiak, ISVLSI 2013), the mapping onto exactly c cores (surjective,
c <= |T|) with minimum response time. The paper gives no GA details; chosen here:

* **Decoder.** List scheduling in a topological *task order*: a task starts at
  max(its core free, each predecessor's finish + ``data * comm_cost`` if on another
  core); response time = max finish. In ``taskgraph``'s rank order (descending b-level,
  ties by index) this is ``taskgraph.makespan``.
* **Encoding.** 2|T| integer genes: each task's core (0..c-1), then a key per task
  (0..|T|-1; an optional order part). The task order sorts by (key raised to the
  largest predecessor key, rank position): topological, the rank order when keys are 0,
  and able to express any per-core order. The rank order alone is not enough: there
  even the best mapping is up to 28 % above the CP-SAT optimum on 5-8-task DAGs. Repair
  moves random tasks of multi-task cores to empty cores.
* **Operators.** Tournament (k=3), two-point crossover (cxpb 0.8), uniform integer reset
  (indpb 1/|T|, mutpb 0.2), ``HallOfFame(1)`` elitism; fitness = makespan, memoised.
* **Sizes** (:class:`GASettings`). Runs of population 150 end after 15 generations
  without improvement; tournaments converge fast, so fresh runs (up to 4, the first
  seeded with HEFT and round-robin mappings) beat one long run; restarting stops when a
  third or later run fails to improve the best, and everything at a :func:`_lower_bound`.
* **Monotonicity.** Entry c-1 split (one task of a multi-task core moved to a new
  core) replaces entry c when better, and skips the GA when it meets the bound. With
  comm 0 a split never hurts (the moved task and its old core successors can only start
  earlier), so profiles are non-increasing; with comm > 0 they may not be. c = 1 and
  c = |T| need no search.

DEAP is used only inside :func:`profile_graph`; its operators draw from a private
``random.Random(seed)``, never the global ``random``: same seed, bit-identical result.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

import networkx as nx
from deap import base, creator, tools

from market_hpc.algorithms.taskgraph import graph_hash, schedule_context
from market_hpc.errors import ConfigError

_weighted = attrgetter("fitness.wvalues")  # DEAP's comparison key: larger is fitter
_FITNESS = "MarketHpcMakespanFitness"
_INDIVIDUAL = "MarketHpcMappingOrder"
_Entry = tuple[float, tuple[int, ...], tuple[int, ...]]  # (response time, mapping, order)


@dataclass(frozen=True, slots=True)
class GASettings:
    """Sizes and rates of the profiling GA (the paper gives none).

    Attributes:
        population: Individuals per generation (>= 2).
        max_generations: Cap on generations per run, the initial one included.
        stall_generations: End a run after this many generations without improvement.
        restarts: Most runs per core count; a third or later run that does not beat the
            best so far ends them early (as does reaching the lower bound).
        cxpb: Probability that a pair of offspring is crossed (two-point).
        mutpb: Probability that an offspring is mutated (uniform int).
        tournament_size: Aspirants per tournament.
    """

    population: int = 150
    max_generations: int = 300
    stall_generations: int = 15
    restarts: int = 4
    cxpb: float = 0.8
    mutpb: float = 0.2
    tournament_size: int = 3

    def __post_init__(self) -> None:
        for field in fields(self):
            name, value = field.name, getattr(self, field.name)
            if field.type == "float" and not 0.0 <= value <= 1.0:
                raise ConfigError(f"GASettings.{name} must be in [0, 1], got {value!r}")
            low = 2 if name == "population" else 1
            if field.type == "int" and (type(value) is not int or value < low):
                raise ConfigError(f"GASettings.{name} must be an int >= {low}, got {value!r}")


@dataclass(frozen=True, slots=True)
class Profile:
    """Minimum response time and mapping per number of used cores (Algorithm 1 output).

    Attributes:
        response_times: ``response_times[c - 1]`` = response time on exactly c cores.
        mappings: ``mappings[c - 1][i]`` = core (0..c-1) of task i (sorted node order);
            cores are numbered by first use.
        c_star: Smallest c reaching the minimum response time (saturation).
        graph_hash: ``taskgraph.graph_hash`` of the profiled graph.
        task_orders: Per c, the task order reproducing it in :func:`response_time`.
    """

    response_times: tuple[float, ...]
    mappings: tuple[tuple[int, ...], ...]
    c_star: int
    graph_hash: str
    task_orders: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class _Context:
    """Index-based view of a task graph for the decoder (plain tuples, for speed)."""

    wcet: tuple[float, ...]
    preds: tuple[tuple[tuple[int, float], ...], ...]  # (predecessor, delay across cores)
    order: tuple[int, ...]  # taskgraph's rank order
    heads: tuple[float, ...]  # longest path into each task, ignoring communication
    tails: tuple[float, ...]  # longest path out of each task, ignoring communication


def _build_context(g: nx.DiGraph, comm_cost: float) -> _Context:
    if not 0 <= comm_cost < math.inf:
        raise ConfigError(f"comm_cost must be a finite number >= 0, got {comm_cost!r}")
    shared = schedule_context(g)  # validates the graph
    wcet = tuple(float(w) for w in shared.wcet)
    preds = tuple(
        tuple((pred, data * comm_cost) for pred, data in zip(task_preds, task_data))
        for task_preds, task_data in zip(shared.preds, shared.pred_data)
    )
    heads, tails = [0.0] * len(wcet), [0.0] * len(wcet)
    for task in shared.order:
        heads[task] = max((heads[pred] + wcet[pred] for pred, _ in preds[task]), default=0.0)
    for task in reversed(shared.order):
        for pred, _ in preds[task]:
            tails[pred] = max(tails[pred], tails[task] + wcet[task])
    return _Context(wcet, preds, shared.order, tuple(heads), tuple(tails))


def _lower_bound(ctx: _Context, n_cores: int) -> float:
    """Bound the makespan on ``n_cores`` cores from below, ignoring communication.

    Tasks with head >= a and tail >= b run in [a, makespan - b], in full, at most c at a
    time (covering ceil(work / c) and the critical path); two of the c + 1 longest tasks
    share a core.
    """
    tasks = list(zip(ctx.wcet, ctx.heads, ctx.tails))
    bound = 0.0
    for head in {0.0, *ctx.heads}:
        for tail in {0.0, *ctx.tails}:
            if late := [w for w, h, t in tasks if h >= head and t >= tail]:
                bound = max(bound, head + tail + max(max(late), math.ceil(sum(late) / n_cores)))
    longest = sorted(ctx.wcet, reverse=True) + [0.0]
    return max(bound, longest[n_cores - 1] + longest[n_cores] if n_cores < len(tasks) else 0.0)


def _task_order(ctx: _Context, keys: Sequence[int]) -> tuple[int, ...]:
    """Sort tasks by (key raised to every predecessor's, rank position): topological."""
    effective = [0] * len(keys)
    for task in ctx.order:
        key = keys[task]
        for pred, _ in ctx.preds[task]:
            if effective[pred] > key:  # noqa: PLR1730 -- hot loop, faster than max()
                key = effective[pred]
        effective[task] = key
    return tuple(sorted(ctx.order, key=effective.__getitem__))  # stable: ties keep rank


def _makespan(ctx: _Context, mapping: Sequence[int], order: Sequence[int]) -> float:
    """Decode a mapping by list scheduling in ``order``; return the makespan."""
    wcet, preds, finish = ctx.wcet, ctx.preds, [0.0] * len(ctx.wcet)
    core_free = [0.0] * len(wcet)  # cores are numbered below |T|
    for task in order:
        core = mapping[task]
        start = core_free[core]
        for pred, delay in preds[task]:
            ready = finish[pred] + delay if mapping[pred] != core else finish[pred]
            if ready > start:  # noqa: PLR1730 -- hot loop, faster than max()
                start = ready
        finish[task] = core_free[core] = start + wcet[task]
    return max(finish)


def response_time(
    g: nx.DiGraph, mapping: Sequence[int], order: Sequence[int] | None = None, comm_cost: float = 0
) -> float:
    """Return the response time of ``mapping`` under the profiling decoder.

    Args:
        g: Task graph (``wcet`` on nodes, optional ``data`` on edges).
        mapping: Core of each task (sorted node order), cores in 0..|T|-1.
        order: Topological order of task indices (``Profile.task_orders``); rank order if None.
        comm_cost: Delay per unit of edge ``data`` between tasks on different cores.

    Raises:
        ConfigError: Bad graph, mapping or task order.

    >>> g = nx.DiGraph(); g.add_nodes_from([(0, {"wcet": 5}), (1, {"wcet": 3})])
    >>> response_time(g, (0, 0)), response_time(g, (0, 1))
    (8.0, 5.0)
    """
    ctx = _build_context(g, comm_cost)
    n = len(ctx.wcet)
    order = ctx.order if order is None else tuple(order)
    if len(mapping) != n or any(not 0 <= core < n for core in mapping):
        raise ConfigError(f"mapping needs a core in 0..{n - 1} per task ({n}), got {mapping!r}")
    positions = [order.index(task) for task in range(n)] if sorted(order) == [*range(n)] else []
    if not positions or _task_order(ctx, positions) != order:  # unchanged iff topological
        raise ConfigError(f"order must be a topological order of 0..{n - 1}, got {order!r}")
    return _makespan(ctx, mapping, order)


def _canonical(mapping: Sequence[int]) -> tuple[int, ...]:
    """Renumber cores by first use so equal partitions give equal tuples."""
    labels: dict[int, int] = {}
    return tuple(labels.setdefault(core, len(labels)) for core in mapping)


def _repair(genes: list[int], n_tasks: int, n_cores: int, rng: random.Random) -> None:
    """Make the core genes surjective onto 0..n_cores-1 in place (no empty core)."""
    counts = [genes[:n_tasks].count(core) for core in range(n_cores)]
    for empty in [core for core in range(n_cores) if counts[core] == 0]:
        task = rng.choice([task for task in range(n_tasks) if counts[genes[task]] > 1])
        counts[genes[task]] -= 1
        genes[task], counts[empty] = empty, 1


def _heft_mapping(ctx: _Context, n_cores: int) -> list[int]:
    """Assign tasks in rank order to the core giving the earliest finish (HEFT)."""
    mapping, finish, free = [0] * len(ctx.wcet), [0.0] * len(ctx.wcet), [0.0] * n_cores
    for task in ctx.order:
        preds = [(finish[p], d, mapping[p]) for p, d in ctx.preds[task]]
        starts = [max([at] + [f + d * (c != k) for f, d, c in preds]) for k, at in enumerate(free)]
        core = starts.index(min(starts))
        mapping[task], finish[task] = core, starts[core] + ctx.wcet[task]
        free[core] = finish[task]
    return mapping


def _toolbox(ctx: _Context, n_cores: int, rng: random.Random, settings: GASettings) -> Any:
    """Register the GA's operators, all drawing from ``rng``, in a DEAP toolbox."""
    if not hasattr(creator, _INDIVIDUAL):  # DEAP's creator is global: create once, guarded
        creator.create(_FITNESS, base.Fitness, weights=(-1.0,))
        creator.create(_INDIVIDUAL, list, fitness=getattr(creator, _FITNESS))
    individual = getattr(creator, _INDIVIDUAL)
    n = len(ctx.wcet)
    memo: dict[tuple[int, ...], float] = {}

    def evaluate(ind: list[int]) -> tuple[float]:
        genes = tuple(ind)
        if genes not in memo:
            memo[genes] = _makespan(ctx, genes, _task_order(ctx, genes[n:]))
        return (memo[genes],)

    def clone(ind: Any) -> Any:
        twin = individual(ind)
        twin.fitness.wvalues = ind.fitness.wvalues
        return twin

    def select(population: list[Any], k: int) -> list[Any]:  # DEAP's selTournament
        draws = rng.choices(population, k=k * settings.tournament_size)
        size = settings.tournament_size
        return [max(draws[i : i + size], key=_weighted) for i in range(0, len(draws), size)]

    def mate(a: list[int], b: list[int]) -> None:  # DEAP's cxTwoPoint
        cut1, cut2 = rng.randint(1, 2 * n), rng.randint(1, 2 * n - 1)
        cut1, cut2 = (cut1, cut2 + 1) if cut2 >= cut1 else (cut2, cut1)
        a[cut1:cut2], b[cut1:cut2] = b[cut1:cut2], a[cut1:cut2]

    def mutate(ind: list[int]) -> None:  # DEAP's mutUniformInt, bounds per gene part
        for i in range(2 * n):
            if rng.random() < 1.0 / n:
                ind[i] = int(rng.random() * (n_cores if i < n else n))  # uniform, fast

    toolbox = base.Toolbox()
    toolbox.register("individual", individual)
    for operator in (evaluate, clone, select, mate, mutate):
        toolbox.register(operator.__name__, operator)
    return toolbox


def _evolve(
    ctx: _Context, n_cores: int, lower_bound: float, rng: random.Random, settings: GASettings
) -> _Entry:
    """Return the best entry of the GA runs for 1 < n_cores < |T| (see the module doc)."""
    toolbox, n = _toolbox(ctx, n_cores, rng, settings), len(ctx.wcet)
    round_robin = [ctx.order.index(task) % n_cores for task in range(n)]
    overall = tools.HallOfFame(1)
    for run in range(settings.restarts):
        seeds = [_heft_mapping(ctx, n_cores) + [0] * n, round_robin + [0] * n] if run == 0 else []
        while len(seeds) < settings.population:
            seeds.append([int(rng.random() * (n_cores if i < n else n)) for i in range(2 * n)])
        population = [toolbox.individual(genes) for genes in seeds[: settings.population]]
        hall, stall = tools.HallOfFame(1), 0
        for _ in range(settings.max_generations):
            for ind in (ind for ind in population if not ind.fitness.valid):
                _repair(ind, n, n_cores, rng)
                ind.fitness.values = toolbox.evaluate(ind)
            before = hall[0].fitness.values[0] if len(hall) else math.inf
            hall.update(population)
            stall = 0 if hall[0].fitness.values[0] < before else stall + 1
            if hall[0].fitness.values[0] <= lower_bound or stall >= settings.stall_generations:
                break
            population = list(map(toolbox.clone, toolbox.select(population, len(population) - 1)))
            for first, second in zip(population[::2], population[1::2]):
                if rng.random() < settings.cxpb:
                    toolbox.mate(first, second)
                    del first.fitness.values, second.fitness.values
            for ind in population:
                if rng.random() < settings.mutpb:
                    toolbox.mutate(ind)
                    del ind.fitness.values
            population.append(toolbox.clone(hall[0]))  # elitism: the run's best survives
        improved = run < 2 or hall[0].fitness > overall[0].fitness
        overall.update(hall)
        if overall[0].fitness.values[0] <= lower_bound or not improved:
            break  # optimal, or a third (or later) run did not beat the best
    best = overall[0]
    return best.fitness.values[0], _canonical(best[:n]), _task_order(ctx, best[n:])


def _best_split(ctx: _Context, entry: _Entry, n_cores: int) -> _Entry:
    """Best entry on ``n_cores`` made by moving one task of ``entry`` to a new core."""
    _, mapping, order = entry
    counts = [mapping.count(core) for core in range(n_cores - 1)]
    best: _Entry = (math.inf, mapping, order)
    for task, core in enumerate(mapping):
        if counts[core] > 1:
            moved = mapping[:task] + (n_cores - 1,) + mapping[task + 1 :]
            value = _makespan(ctx, moved, order)
            if value < best[0]:
                best = (value, _canonical(moved), order)
    return best


def profile_graph(
    g: nx.DiGraph, *, seed: int, comm_cost: float = 0.0, settings: GASettings | None = None
) -> Profile:
    """Profile a task graph on 1..|T| cores (Algorithm 1 of the paper, GA as in [25]).

    Args:
        g: Task graph: node attribute ``wcet`` (positive int), edge ``data`` (default 0).
        seed: Seed of the private ``random.Random`` driving the GA.
        comm_cost: Delay per unit of edge ``data`` across cores (0 fits Table II).
        settings: GA sizes and rates; ``GASettings()`` when omitted.

    Returns:
        The frozen :class:`Profile`; entry c uses exactly c cores.

    Raises:
        ConfigError: The graph is not a valid task graph, or ``comm_cost`` is negative.

    >>> g = nx.DiGraph(); g.add_nodes_from([(0, {"wcet": 5}), (1, {"wcet": 3}), (2, {"wcet": 4})])
    >>> g.add_edge(0, 1)
    >>> profile = profile_graph(g, seed=1)
    >>> profile.response_times, profile.mappings[1], profile.c_star
    ((12.0, 8.0, 8.0), (0, 1, 1), 2)
    """
    settings, ctx, rng = settings or GASettings(), _build_context(g, comm_cost), random.Random(seed)
    n = len(ctx.wcet)
    entries: list[_Entry] = [(_makespan(ctx, (0,) * n, ctx.order), (0,) * n, ctx.order)]
    for n_cores in range(2, n + 1):
        split, lower_bound = _best_split(ctx, entries[-1], n_cores), _lower_bound(ctx, n_cores)
        if n_cores == n:  # one task per core: the order cannot matter
            found = (_makespan(ctx, tuple(range(n)), ctx.order), tuple(range(n)), ctx.order)
        elif split[0] <= lower_bound:  # the split is optimal already
            found = split
        else:
            found = _evolve(ctx, n_cores, lower_bound, rng, settings)
        entries.append(min(found, split, key=lambda entry: entry[0]))
    times, mappings, orders = (tuple(part) for part in zip(*entries))
    c_star = next(c for c, rt in enumerate(times, 1) if math.isclose(rt, min(times), abs_tol=1e-9))
    return Profile(times, mappings, c_star, graph_hash(g), orders)


class ProfileCache:
    """Profiles keyed by (graph hash, seed), so repeated graphs of a workload run the GA once.

    Use one profiling seed per run; keying on the seed keeps results order-independent.

    Args:
        comm_cost: ``comm_cost`` of every :func:`profile_graph` call of this cache.
        settings: GA settings of every call.
    """

    def __init__(self, *, comm_cost: float = 0.0, settings: GASettings | None = None) -> None:
        self.comm_cost, self.settings = comm_cost, settings or GASettings()
        self.hits = self.misses = 0
        self._profiles: dict[tuple[str, int], Profile] = {}

    def get_or_profile(self, g: nx.DiGraph, seed: int) -> Profile:
        """Return the cached profile of ``g`` for ``seed``, profiling it on a miss."""
        key = (graph_hash(g), seed)
        if key in self._profiles:
            self.hits += 1
        else:
            self.misses += 1
            self._profiles[key] = profile_graph(
                g, seed=seed, comm_cost=self.comm_cost, settings=self.settings
            )
        return self._profiles[key]
