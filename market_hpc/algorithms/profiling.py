"""Design-time profiling of task-graph jobs (Algorithm 1 of the market paper).

Singh, Indrusiak et al., "Market-inspired Dynamic Resource Allocation in Many-core HPC
Systems", Algorithm 1: for each c = 1..|T| find, by a GA "similarly as in [25]" (Sayuti
& Indrusiak, ISVLSI 2013), the mapping of tasks onto exactly c cores with minimum
response time. The paper gives no GA details; this follows spec A17-A20:

* **Profile (A17).** Entry c uses *exactly* c cores (surjective mappings), c <= |T|.
* **Decoder (A19).** Non-preemptive list scheduling: tasks (sorted node order) are taken
  in a topological *task order*; each starts at max(its core free, every predecessor's
  finish plus ``data * comm_cost`` if that ran on another core); response time = max
  finish. In ``taskgraph``'s rank order (descending b-level, ties by index) this is
  exactly ``taskgraph.makespan``.
* **Encoding (A20 with its optional order part).** 2|T| integer genes: each task's core
  (0..c-1), then a key per task (0..|T|-1). The task order sorts tasks by (key raised to
  the largest key of any predecessor, rank position): always topological, the rank order
  when all keys are 0, and able to express any per-core order. Rank order alone is not
  enough: there even the best mapping is up to 28 % slower than the CP-SAT optimum on
  5-8-task DAGs (a long independent task is ranked before a short one feeding another
  core). Repair moves random tasks of multi-task cores to empty cores.
* **Operators.** Tournament (k=3), two-point crossover (cxpb 0.8), uniform integer reset
  per gene (indpb 1/|T|, mutpb 0.2), elitism by re-inserting the ``HallOfFame(1)`` best;
  fitness = decoded makespan (weights ``(-1.0,)``), memoised.
* **Sizes** (:class:`GASettings`). Population 150 (at 40-60 the GA converged early and
  missed packed optima by 6-8 %); stop at the bound max(critical path, ceil(work / c)),
  after 60 generations without improvement, or after 300. Seeds: a HEFT (earliest
  finish) and a round-robin mapping in rank order. c = 1 and c = |T| are direct.
* **Monotonicity (A17).** Entry c becomes the best split of entry c-1 (one task of a
  multi-task core moved to the new core) when that is strictly better. With comm 0 a
  split never increases the makespan (the moved task and its old core successors can
  only start earlier), so profiles are non-increasing; with comm > 0 they may not be.

Randomness: DEAP is used only inside :func:`profile_graph`, with operators drawing from a
private ``random.Random(seed)``, never the global ``random``: the same seed gives a
bit-identical :class:`Profile` whatever other code does with ``random``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
from deap import base, creator, tools

from market_hpc.algorithms.taskgraph import graph_hash, schedule_context
from market_hpc.errors import ConfigError

_FITNESS = "MarketHpcMakespanFitness"
_INDIVIDUAL = "MarketHpcMappingOrder"
_Entry = tuple[float, tuple[int, ...], tuple[int, ...]]  # (response time, mapping, order)


@dataclass(frozen=True, slots=True)
class GASettings:
    """Sizes and rates of the profiling GA (spec A20; the paper gives none).

    Attributes:
        population: Individuals per generation (>= 2).
        max_generations: Hard cap on generations per core count.
        stall_generations: Stop after this many generations without improvement.
        cxpb: Probability that a pair of offspring undergoes two-point crossover.
        mutpb: Probability that an offspring undergoes uniform-int mutation.
        tournament_size: Aspirants per tournament.
    """

    population: int = 150
    max_generations: int = 300
    stall_generations: int = 60
    cxpb: float = 0.8
    mutpb: float = 0.2
    tournament_size: int = 3

    def __post_init__(self) -> None:
        for name in ("population", "max_generations", "stall_generations", "tournament_size"):
            value, low = getattr(self, name), 2 if name == "population" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"GASettings.{name} must be an int >= {low}, got {value!r}")
        for name in ("cxpb", "mutpb"):
            if not 0.0 <= (value := getattr(self, name)) <= 1.0:
                raise ConfigError(f"GASettings.{name} must be in [0, 1], got {value!r}")


@dataclass(frozen=True, slots=True)
class Profile:
    """Minimum response time and mapping per number of used cores (Algorithm 1 output).

    Attributes:
        response_times: ``response_times[c - 1]`` = response time on exactly c cores.
        mappings: ``mappings[c - 1][i]`` = core (0..c-1) of task i (sorted node order);
            cores are numbered by first use.
        c_star: Smallest c reaching the minimum response time (spec A4).
        graph_hash: ``taskgraph.graph_hash`` of the profiled graph.
        task_orders: ``task_orders[c - 1]`` = the task order that reproduces
            ``response_times[c - 1]`` with the mapping (see :func:`response_time`).
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
    total_work: float
    critical_path: float  # ignoring communication: a lower bound for every c


def _build_context(g: nx.DiGraph, comm_cost: float) -> _Context:
    if not 0 <= comm_cost < math.inf:
        raise ConfigError(f"comm_cost must be a finite number >= 0, got {comm_cost!r}")
    shared = schedule_context(g)  # validates the graph
    wcet = tuple(float(w) for w in shared.wcet)
    preds = tuple(
        tuple((pred, data * comm_cost) for pred, data in zip(task_preds, task_data))
        for task_preds, task_data in zip(shared.preds, shared.pred_data)
    )
    earliest_finish = [0.0] * len(wcet)
    for task in shared.order:
        ready = max((earliest_finish[pred] for pred, _ in preds[task]), default=0.0)
        earliest_finish[task] = ready + wcet[task]
    return _Context(wcet, preds, shared.order, sum(wcet), max(earliest_finish))


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
    """Decode a mapping by list scheduling in ``order`` (spec A19); return the makespan."""
    core_free = [0.0] * len(ctx.wcet)  # cores are numbered below |T|
    finish = [0.0] * len(ctx.wcet)
    wcet, preds = ctx.wcet, ctx.preds
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
    g: nx.DiGraph,
    mapping: Sequence[int],
    *,
    task_order: Sequence[int] | None = None,
    comm_cost: float = 0.0,
) -> float:
    """Return the response time of ``mapping`` under the profiling decoder.

    Args:
        g: Task graph (``wcet`` on nodes, optional ``data`` on edges).
        mapping: Core of each task (sorted node order), cores in 0..|T|-1.
        task_order: Topological order of task indices; the rank order if omitted.
        comm_cost: Delay per unit of edge ``data`` between tasks on different cores.

    Raises:
        ConfigError: Bad graph, mapping or task order.

    >>> g = nx.DiGraph(); g.add_nodes_from([(0, {"wcet": 5}), (1, {"wcet": 3})])
    >>> response_time(g, (0, 0)), response_time(g, (0, 1))
    (8.0, 5.0)
    """
    ctx = _build_context(g, comm_cost)
    n = len(ctx.wcet)
    order = ctx.order if task_order is None else tuple(task_order)
    where = {task: i for i, task in enumerate(order)}
    if len(mapping) != n or any(not 0 <= core < n for core in mapping):
        raise ConfigError(f"mapping needs a core in 0..{n - 1} per task ({n}), got {mapping!r}")
    if sorted(order) != list(range(n)) or any(where[p] > where[t] for t, p in _edges(ctx)):
        raise ConfigError(f"task_order must be topological over 0..{n - 1}, got {task_order!r}")
    return _makespan(ctx, mapping, order)


def _edges(ctx: _Context) -> list[tuple[int, int]]:
    return [(task, pred) for task in range(len(ctx.wcet)) for pred, _ in ctx.preds[task]]


def _canonical(mapping: Sequence[int]) -> tuple[int, ...]:
    """Renumber cores by first use so equal partitions give equal tuples."""
    labels: dict[int, int] = {}
    return tuple(labels.setdefault(core, len(labels)) for core in mapping)


def _repair(genes: list[int], n_tasks: int, n_cores: int, rng: random.Random) -> None:
    """Make the core genes surjective onto 0..n_cores-1 in place (no empty core)."""
    counts = [0] * n_cores
    for core in genes[:n_tasks]:
        counts[core] += 1
    for empty in [core for core in range(n_cores) if counts[core] == 0]:
        movable = [task for task in range(n_tasks) if counts[genes[task]] > 1]
        task = movable[rng.randrange(len(movable))]
        counts[genes[task]] -= 1
        genes[task], counts[empty] = empty, 1


def _heft_mapping(ctx: _Context, n_cores: int) -> list[int]:
    """Assign tasks in rank order to the core giving the earliest finish (HEFT)."""
    mapping, finish, core_free = [0] * len(ctx.wcet), [0.0] * len(ctx.wcet), [0.0] * n_cores
    for task in ctx.order:
        best_core, best_end = 0, math.inf
        for core in range(n_cores):
            start = core_free[core]
            for pred, delay in ctx.preds[task]:
                start = max(start, finish[pred] + (delay if mapping[pred] != core else 0.0))
            if start + ctx.wcet[task] < best_end:
                best_core, best_end = core, start + ctx.wcet[task]
        mapping[task], finish[task], core_free[best_core] = best_core, best_end, best_end
    return mapping


def _individual_class() -> Any:
    """Create the DEAP fitness and individual classes once, under guarded names."""
    if not hasattr(creator, _FITNESS):
        creator.create(_FITNESS, base.Fitness, weights=(-1.0,))
    if not hasattr(creator, _INDIVIDUAL):
        creator.create(_INDIVIDUAL, list, fitness=getattr(creator, _FITNESS))
    return getattr(creator, _INDIVIDUAL)


def _evolve(ctx: _Context, n_cores: int, rng: random.Random, settings: GASettings) -> _Entry:
    """Run the GA for one core count (1 < n_cores < |T|); return its best entry."""
    individual = _individual_class()
    n = len(ctx.wcet)
    lower_bound = max(ctx.critical_path, float(math.ceil(ctx.total_work / n_cores)))
    memo: dict[tuple[int, ...], float] = {}

    def evaluate(ind: list[int]) -> tuple[float]:
        genes = tuple(ind)
        if genes not in memo:
            memo[genes] = _makespan(ctx, genes, _task_order(ctx, genes[n:]))
        return (memo[genes],)

    def clone(ind: Any) -> Any:
        twin = individual(ind)
        twin.fitness.values = ind.fitness.values
        return twin

    def select(population: list[Any], k: int) -> list[Any]:  # DEAP's selTournament
        size, aspirants = len(population), range(settings.tournament_size)
        draws = ([population[rng.randrange(size)] for _ in aspirants] for _ in range(k))
        return [max(draw, key=lambda ind: ind.fitness) for draw in draws]

    def mate(a: list[int], b: list[int]) -> None:  # DEAP's cxTwoPoint
        cut1, cut2 = rng.randint(1, 2 * n), rng.randint(1, 2 * n - 1)
        cut1, cut2 = (cut1, cut2 + 1) if cut2 >= cut1 else (cut2, cut1)
        a[cut1:cut2], b[cut1:cut2] = b[cut1:cut2], a[cut1:cut2]

    def mutate(ind: list[int]) -> None:  # DEAP's mutUniformInt, bounds per gene part
        for i in range(2 * n):
            if rng.random() < 1.0 / n:
                ind[i] = rng.randint(0, n_cores - 1 if i < n else n - 1)

    toolbox = base.Toolbox()
    toolbox.register("evaluate", evaluate)
    toolbox.register("clone", clone)
    toolbox.register("select", select)
    toolbox.register("mate", mate)
    toolbox.register("mutate", mutate)
    round_robin = [0] * n
    for position, task in enumerate(ctx.order):
        round_robin[task] = position % n_cores
    seeds = [_heft_mapping(ctx, n_cores) + [0] * n, round_robin + [0] * n]
    while len(seeds) < settings.population:
        seeds.append([rng.randrange(n_cores if i < n else n) for i in range(2 * n)])
    population = []
    for genes in seeds[: settings.population]:
        _repair(genes, n, n_cores, rng)
        population.append(individual(genes))
        population[-1].fitness.values = toolbox.evaluate(genes)
    hall = tools.HallOfFame(1)
    hall.update(population)
    best, stall = hall[0].fitness.values[0], 0
    for _ in range(settings.max_generations):
        if best <= lower_bound or stall >= settings.stall_generations:
            break
        offspring = [toolbox.clone(ind) for ind in toolbox.select(population, len(population))]
        changed = [False] * len(offspring)
        for i in range(1, len(offspring), 2):
            if rng.random() < settings.cxpb:
                toolbox.mate(offspring[i - 1], offspring[i])
                changed[i - 1] = changed[i] = True
        for i, ind in enumerate(offspring):
            if rng.random() < settings.mutpb:
                toolbox.mutate(ind)
                changed[i] = True
        for ind in (ind for ind, was_changed in zip(offspring, changed) if was_changed):
            _repair(ind, n, n_cores, rng)
            ind.fitness.values = toolbox.evaluate(ind)
        worst = max(range(len(offspring)), key=lambda i: offspring[i].fitness.values[0])
        offspring[worst] = toolbox.clone(hall[0])
        population = offspring
        hall.update(population)
        stall = 0 if hall[0].fitness.values[0] < best else stall + 1
        best = hall[0].fitness.values[0]
    return best, _canonical(hall[0][:n]), _task_order(ctx, hall[0][n:])


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
        g: Task graph; node attribute ``wcet`` (positive int), edge attribute ``data``
            (default 0).
        seed: Seed of the private ``random.Random`` driving the GA.
        comm_cost: Delay per unit of edge ``data`` between tasks on different cores
            (spec A18; 0 matches Table II).
        settings: GA sizes and rates; ``GASettings()`` when omitted.

    Returns:
        The frozen :class:`Profile`; entry c uses exactly c cores.

    Raises:
        ConfigError: The graph is not a valid task graph, or ``comm_cost`` is negative.

    >>> g = nx.DiGraph(); g.add_nodes_from([(0, {"wcet": 5}), (1, {"wcet": 3}), (2, {"wcet": 4})])
    >>> g.add_edge(0, 1)
    >>> profile = profile_graph(g, seed=1)
    >>> profile.response_times, profile.mappings[1], profile.c_star
    ((12.0, 8.0, 8.0), (0, 0, 1), 2)
    """
    settings = settings or GASettings()
    ctx = _build_context(g, comm_cost)
    n = len(ctx.wcet)
    rng = random.Random(seed)
    entries: list[_Entry] = [(_makespan(ctx, (0,) * n, ctx.order), (0,) * n, ctx.order)]
    for n_cores in range(2, n + 1):
        if n_cores == n:  # one task per core: the order cannot matter
            found = (_makespan(ctx, tuple(range(n)), ctx.order), tuple(range(n)), ctx.order)
        else:
            found = _evolve(ctx, n_cores, rng, settings)
        split = _best_split(ctx, entries[-1], n_cores)
        entries.append(split if split[0] < found[0] else found)
    times = tuple(value for value, _, _ in entries)
    c_star = next(
        c for c, value in enumerate(times, 1) if math.isclose(value, min(times), abs_tol=1e-9)
    )
    return Profile(
        response_times=times,
        mappings=tuple(mapping for _, mapping, _ in entries),
        c_star=c_star,
        graph_hash=graph_hash(g),
        task_orders=tuple(order for _, _, order in entries),
    )


class ProfileCache:
    """Profiles keyed by (graph hash, seed), so a workload's repeated jobs run the GA once.

    Use one profiling seed per run so repeated graphs hit; keying on the seed too keeps
    results independent of which job came first.

    Args:
        comm_cost: ``comm_cost`` of every :func:`profile_graph` call of this cache.
        settings: GA settings of every call.

    >>> g = nx.DiGraph(); g.add_node("a", wcet=2)
    >>> cache = ProfileCache()
    >>> cache.get_or_profile(g, seed=0) is cache.get_or_profile(nx.DiGraph(g), seed=0)
    True
    >>> (cache.hits, cache.misses)
    (1, 1)
    """

    def __init__(self, *, comm_cost: float = 0.0, settings: GASettings | None = None) -> None:
        self.comm_cost, self.settings = comm_cost, settings or GASettings()
        self.hits = self.misses = 0
        self._profiles: dict[tuple[str, int], Profile] = {}

    def __len__(self) -> int:
        return len(self._profiles)

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
