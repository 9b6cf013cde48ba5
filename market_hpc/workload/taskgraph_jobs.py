"""HLRS-like job sets of task-graph jobs with value curves (the HLRS trace is not public).

Singh, Dziurzanski & Indrusiak (HPCS 2015) replay jobs of 5-10 tasks from the HLRS
trace, which is not public. This module draws synthetic sets calibrated to the paper's
Table II, profiles every job before the simulation and attaches a value curve.

Decisions where the paper is silent:

* Graphs: ``algorithms.taskgraph.random_task_graph`` (5-10 tasks, WCET ~ U{2..25}).
* Profiles come from the ``profiler`` argument (the GA of ``algorithms.profiling`` in
  production, a bound or exhaustive search in tests); one call per distinct
  ``graph_hash``. A profile must have one positive entry per task and ``RT(1)`` equal to
  the total work; it need not be monotone.
* Value curves: ``V^max ~ U[100, 1000]``, ``plateau_end = alpha * RT(c*)`` with
  ``RT(c*) = min(profile)`` (the saturation point), ``alpha ~ U[1, 1.5]``, and the value
  reaches 0 at ``plateau_end + beta * RT(1)``, ``beta ~ U[1, 3]``. The ``step`` variant
  puts its deadline half-way, the ``exponential`` one decays to 1 % at the same zero
  time, so the three shapes share their maximum value and support.
* Arrivals are integer time-units. ``poisson``: the epochs of a Poisson process of
  rate ``load * platform_cores / mean(RT(1))``, shifted so the first job arrives at 0,
  then floored (so several jobs may share a step). ``burst``: U{0..burst_window-1}.
* Job ids are ``first_job_id, ...`` in arrival order; a job asks for
  ``units = |T|`` single cores, ``run_time = estimate = RT(1)``.
* Randomness: three independent streams (graphs, values, arrivals) from
  ``SeedSequence(seed).spawn(3)``; the same seed gives the same set, bit for bit.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import networkx as nx
import numpy as np

from market_hpc.algorithms.market.maths import c_star
from market_hpc.algorithms.taskgraph import (
    DEFAULT_SHAPES,
    WCET_RANGE,
    graph_hash,
    random_task_graph,
    total_work,
    validate_task_graph,
)
from market_hpc.algorithms.valuecurve import (
    ExponentialCurve,
    LinearDecayCurve,
    StepCurve,
    ValueCurve,
    curve_from_dict,
)
from market_hpc.domain.job import CORE_UNIT, Job
from market_hpc.errors import ConfigError, TraceFormatError, UnknownNameError
from market_hpc.json_text import json_text

JobSet: TypeAlias = tuple[Job, ...]
Profiler: TypeAlias = Callable[[nx.DiGraph], Sequence[float]]
ARRIVALS = ("burst", "poisson")
CURVE_SHAPES = ("exponential", "linear_decay", "step")
FILE_FORMAT = "market_hpc.taskgraph_jobs"
FILE_VERSION = 1


def _check_range(name: str, bounds: tuple[float, float], low_min: float, strict: bool) -> None:
    low, high = bounds
    ok = (low > low_min if strict else low >= low_min) and low <= high < math.inf
    if not ok:
        sign = ">" if strict else ">="
        valid = f"(low, high) with low {sign} {low_min} and low <= high"
        raise ConfigError(f"{name} must be {valid}, got {bounds!r}")


def value_curve_for(
    shape: str, max_value: float, rt_fastest: float, rt_serial: float, alpha: float, beta: float
) -> ValueCurve:
    """Build a job's value curve from its profile (the paper gives no shape).

    Args:
        shape: ``linear_decay`` (the spec's default), ``step`` or ``exponential``.
        max_value: Maximum value.
        rt_fastest: ``RT(c*)``; the plateau lasts ``alpha * rt_fastest``.
        rt_serial: ``RT(1)``; the value is 0 from ``beta * rt_serial`` after the plateau.
        alpha: Plateau stretch.
        beta: Decay length in units of ``RT(1)``.

    Raises:
        ConfigError: on an unknown shape (listing the valid ones).

    >>> value_curve_for("linear_decay", 500.0, 15.0, 86.0, 1.0, 1.0)
    LinearDecayCurve(max_value=500.0, plateau_end=15.0, zero_time=101.0)
    >>> value_curve_for("step", 500.0, 15.0, 86.0, 1.0, 1.0)
    StepCurve(max_value=500.0, deadline=58.0)
    """
    plateau_end = alpha * rt_fastest
    decay = beta * rt_serial
    if shape == "linear_decay":
        return LinearDecayCurve(max_value, plateau_end, plateau_end + decay)
    if shape == "step":
        return StepCurve(max_value, plateau_end + decay / 2.0)
    if shape == "exponential":
        return ExponentialCurve(max_value, plateau_end, tau=decay / math.log(100.0), floor=0.01)
    raise UnknownNameError("value curve shape", shape, CURVE_SHAPES)


def _checked_profile(g: nx.DiGraph, raw: Sequence[float], job_id: int) -> tuple[float, ...]:
    try:
        profile = tuple(float(rt) for rt in raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"job {job_id}: profiler returned {raw!r}, not numbers") from exc
    n_tasks, work = g.number_of_nodes(), total_work(g)
    if len(profile) != n_tasks:
        raise ConfigError(
            f"job {job_id}: profiler returned {len(profile)} response times for {n_tasks} tasks"
        )
    for cores, rt in enumerate(profile, start=1):
        if not 0 < rt < math.inf:
            raise ConfigError(f"job {job_id}: profiler returned RT({cores})={rt!r}; must be > 0")
    if abs(profile[0] - work) > 1e-9 * work:
        got = f"profiler returned RT(1)={profile[0]!r}"
        raise ConfigError(f"job {job_id}: {got}; must equal the total work {work}")
    return profile


def _arrivals(
    rng: np.random.Generator, n_jobs: int, arrival: str, rate: float, burst_window: int
) -> list[int]:
    if arrival == "poisson":
        epochs = np.cumsum(rng.exponential(1.0 / rate, size=n_jobs))
        return [int(t) for t in np.floor(epochs - epochs[0])]
    return sorted(int(t) for t in rng.integers(0, burst_window, size=n_jobs))


def generate_job_set(
    n_jobs: int,
    seed: int,
    *,
    profiler: Profiler,
    load: float = 1.5,
    arrival: str = "poisson",
    platform_cores: int = 27,
    burst_window: int = 10,
    n_tasks: tuple[int, int] = (5, 10),
    shapes: Mapping[str, float] = DEFAULT_SHAPES,
    edge_prob: float = 0.3,
    wcet_range: tuple[int, int] = WCET_RANGE,
    max_value_range: tuple[float, float] = (100.0, 1000.0),
    alpha_range: tuple[float, float] = (1.0, 1.5),
    beta_range: tuple[float, float] = (1.0, 3.0),
    curve_shape: str = "linear_decay",
    first_job_id: int = 1,
    graph_pool: Sequence[nx.DiGraph] | None = None,
) -> JobSet:
    """Draw ``n_jobs`` profiled task-graph jobs with value curves.

    Args:
        n_jobs: Number of jobs (>= 1).
        seed: The one seed of this set.
        profiler: Response times for ``c = 1..|T|`` cores of a graph (Alg. 1).
        load: Offered load ``rho`` of the Poisson process (> 0); ignored for bursts.
        arrival: ``poisson`` or ``burst``.
        platform_cores: Cores of the platform, for the arrival rate (3 x 9 in the paper).
        burst_window: Bursts arrive uniformly over ``0..burst_window-1``.
        n_tasks: Inclusive range of tasks per job.
        shapes: Graph shape weights, see ``random_task_graph``.
        edge_prob: Edge probability of layered graphs.
        wcet_range: Inclusive range of the integer WCETs.
        max_value_range: Range of ``V^max``.
        alpha_range: Range of the plateau stretch.
        beta_range: Range of the decay length in units of ``RT(1)``.
        curve_shape: ``linear_decay``, ``step`` or ``exponential``.
        first_job_id: Id of the first job.
        graph_pool: Applications to draw jobs from (uniformly, from the graph stream)
            instead of drawing a fresh graph per job; a centre's workload repeats its
            applications, so a pool is profiled once.

    Returns:
        Jobs sorted by arrival, each with payload ``value_curve``, ``task_graph`` and
        ``graph_hash``.

    Raises:
        ConfigError: on an invalid parameter or a malformed profile.
    """
    ints = {"n_jobs": (n_jobs, 1), "seed": (seed, 0), "platform_cores": (platform_cores, 1)}
    for name, (value, least) in {**ints, "burst_window": (burst_window, 1)}.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ConfigError(f"{name} must be an int >= {least}, got {value!r}")
    if arrival not in ARRIVALS:
        raise UnknownNameError("arrival process", arrival, ARRIVALS)
    if curve_shape not in CURVE_SHAPES:
        raise UnknownNameError("value curve shape", curve_shape, CURVE_SHAPES)
    if not 0 < load < math.inf:
        raise ConfigError(f"load must be a finite number > 0, got {load!r}")
    _check_range("max_value_range", max_value_range, 0.0, strict=True)
    _check_range("alpha_range", alpha_range, 0.0, strict=False)
    _check_range("beta_range", beta_range, 0.0, strict=True)
    graph_rng, value_rng, arrival_rng = (
        np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(3)
    )
    if graph_pool is not None:
        if not graph_pool:
            raise ConfigError("graph_pool must hold at least one task graph")
        picks = graph_rng.integers(0, len(graph_pool), size=n_jobs)
        graphs = [graph_pool[int(i)] for i in picks]
    else:
        graphs = [
            random_task_graph(
                graph_rng,
                n_tasks=n_tasks,
                shapes=shapes,
                edge_prob=edge_prob,
                wcet_range=wcet_range,
            )
            for _ in range(n_jobs)
        ]
    hashes = [graph_hash(g) for g in graphs]
    cache: dict[str, tuple[float, ...]] = {}
    for index, (g, key) in enumerate(zip(graphs, hashes)):
        if key not in cache:
            cache[key] = _checked_profile(g, profiler(g), first_job_id + index)
    rate = load * platform_cores / float(np.mean([total_work(g) for g in graphs]))
    arrivals = _arrivals(arrival_rng, n_jobs, arrival, rate, burst_window)
    jobs = []
    for index, (g, key, submit) in enumerate(zip(graphs, hashes, arrivals)):
        profile = cache[key]
        max_value = float(value_rng.uniform(*max_value_range))
        alpha = float(value_rng.uniform(*alpha_range))
        beta = float(value_rng.uniform(*beta_range))
        curve = value_curve_for(curve_shape, max_value, min(profile), profile[0], alpha, beta)
        jobs.append(
            Job(
                job_id=first_job_id + index,
                submit=float(submit),
                run_time=profile[0],
                estimate=profile[0],
                units=g.number_of_nodes(),
                unit=CORE_UNIT,
                profile=profile,
                payload={
                    "value_curve": curve,
                    "task_graph": g,
                    "graph_hash": key,
                    "c_star": c_star(profile),
                },
            )
        )
    return tuple(jobs)


def demo_job_set(n_jobs: int, seed: int = 0, **options: Any) -> JobSet:
    """Draw a job set profiled by the GA of ``algorithms.profiling`` (Alg. 1).

    The GA's seed comes from a fourth ``SeedSequence(seed)`` child, independent of the
    three streams of ``generate_job_set``; ``options`` go to ``generate_job_set``.

    Raises:
        ConfigError: as ``generate_job_set``.
    """
    from market_hpc.algorithms.profiling import profile_graph  # DEAP only when needed

    ga_seed = int(np.random.SeedSequence(seed).spawn(4)[3].generate_state(1)[0])

    def profiler(g: nx.DiGraph) -> tuple[float, ...]:
        return tuple(profile_graph(g, seed=ga_seed).response_times)

    return generate_job_set(n_jobs, seed, profiler=profiler, **options)


def _graph_to_dict(g: nx.DiGraph, job_id: int) -> dict[str, Any]:
    """Node-link layout, as ``nx.node_link_data(g, edges="edges")`` writes it."""
    for task in g.nodes:
        if not isinstance(task, (int, str)) or isinstance(task, bool):
            raise ConfigError(f"job {job_id}: task id {task!r} must be an int or str for JSON")
    return {
        "directed": True,
        "multigraph": False,
        "graph": dict(g.graph),
        "nodes": [{"id": task, **attrs} for task, attrs in g.nodes(data=True)],
        "edges": [{"source": u, "target": v, **attrs} for u, v, attrs in g.edges(data=True)],
    }


def write_job_set(jobs: Sequence[Job], path: str | os.PathLike[str]) -> None:
    """Write task-graph jobs to a JSON file that ``read_job_set`` reads back.

    Raises:
        ConfigError: if a job lacks a profile, or a task graph or value curve in its payload.
    """
    records = []
    for job in jobs:
        for key in ("task_graph", "value_curve"):
            if key not in job.payload:
                raise ConfigError(f"job {job.job_id}: payload has no {key!r}; cannot write it")
        if job.profile is None:
            raise ConfigError(f"job {job.job_id}: has no profile; cannot write it")
        g = job.payload["task_graph"]
        records.append(
            {
                "job_id": job.job_id,
                "submit": job.submit,
                "run_time": job.run_time,
                "estimate": job.estimate,
                "units": job.units,
                "unit": list(job.unit),
                "bb": job.bb,
                "user": job.user,
                "queue": job.queue,
                "profile": list(job.profile),
                "graph_hash": graph_hash(g),
                "value_curve": job.payload["value_curve"].to_dict(),
                "task_graph": _graph_to_dict(g, job.job_id),
            }
        )
    document = {"format": FILE_FORMAT, "version": FILE_VERSION, "jobs": records}
    Path(path).write_text(json_text(document, indent=1), encoding="utf-8")


class _Reader:
    """Field access that names the file and the key of anything missing or malformed."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, field: str, message: str) -> TraceFormatError:
        return TraceFormatError(self.path, None, message, field=field)

    def get(self, record: Any, key: str, where: str, kinds: type | tuple[type, ...]) -> Any:
        if not isinstance(record, dict) or key not in record:
            raise self.fail(f"{where}.{key}" if where else key, "missing")
        value = record[key]
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise self.fail(f"{where}.{key}" if where else key, f"unexpected value {value!r}")
        return value

    def graph(self, data: Any, where: str) -> nx.DiGraph:
        g = nx.DiGraph(**self.get(data, "graph", where, dict))
        for index, node in enumerate(self.get(data, "nodes", where, list)):
            task = self.get(node, "id", f"{where}.nodes[{index}]", (int, str))
            g.add_node(task, **{k: v for k, v in node.items() if k != "id"})
        for index, edge in enumerate(self.get(data, "edges", where, list)):
            at = f"{where}.edges[{index}]"
            source = self.get(edge, "source", at, (int, str))
            target = self.get(edge, "target", at, (int, str))
            attrs = {k: v for k, v in edge.items() if k not in ("source", "target")}
            g.add_edge(source, target, **attrs)
        try:
            validate_task_graph(g)
        except ConfigError as exc:
            raise self.fail(where, str(exc)) from exc
        return g

    def job(self, record: Any, where: str) -> Job:
        g = self.graph(self.get(record, "task_graph", where, dict), f"{where}.task_graph")
        stored = self.get(record, "graph_hash", where, str)
        if stored != graph_hash(g):
            actual = graph_hash(g)
            raise self.fail(f"{where}.graph_hash", f"{stored} does not match the graph ({actual})")
        try:
            curve = curve_from_dict(self.get(record, "value_curve", where, dict))
        except ConfigError as exc:
            raise self.fail(f"{where}.value_curve", str(exc)) from exc
        profile = self.get(record, "profile", where, list)
        ok = all(isinstance(rt, (int, float)) and 0 < rt < math.inf for rt in profile)
        if not ok or len(profile) != g.number_of_nodes():
            need = f"need {g.number_of_nodes()} response times > 0 (one per task)"
            raise self.fail(f"{where}.profile", f"{need}, got {profile!r}")
        number = (int, float)
        try:
            return Job(
                job_id=self.get(record, "job_id", where, int),
                submit=self.get(record, "submit", where, number),
                run_time=self.get(record, "run_time", where, number),
                estimate=self.get(record, "estimate", where, number),
                units=self.get(record, "units", where, int),
                unit=tuple(self.get(record, "unit", where, list)),
                bb=self.get(record, "bb", where, number),
                user=self.get(record, "user", where, int),
                queue=self.get(record, "queue", where, int),
                profile=tuple(float(rt) for rt in profile),
                payload={"value_curve": curve, "task_graph": g, "graph_hash": stored},
            )
        except (TypeError, ValueError) as exc:
            raise self.fail(where, str(exc)) from exc


def read_job_set(path: str | os.PathLike[str]) -> JobSet:
    """Read jobs written by ``write_job_set``, in file order, checking every field.

    Raises:
        ConfigError: if the file does not exist.
        TraceFormatError: naming the file and the key at fault (``jobs[3].profile``).
    """
    name = os.fspath(path)
    try:
        text = Path(name).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"job set file {name} does not exist") from exc
    reader = _Reader(name)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(name, exc.lineno, f"invalid JSON: {exc.msg}") from exc
    if reader.get(document, "format", "", str) != FILE_FORMAT:
        raise reader.fail("format", f"expected {FILE_FORMAT!r}, got {document['format']!r}")
    if reader.get(document, "version", "", int) != FILE_VERSION:
        raise reader.fail("version", f"expected {FILE_VERSION}, got {document['version']!r}")
    records = reader.get(document, "jobs", "", list)
    jobs = tuple(reader.job(record, f"jobs[{index}]") for index, record in enumerate(records))
    ids = [job.job_id for job in jobs]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise reader.fail("jobs", f"duplicate job_id {duplicate}")
    return jobs
