"""HLRS-like task-graph job sets: generation, profiles, value curves, JSON files."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from market_hpc.algorithms.taskgraph import (
    critical_path_length,
    graph_hash,
    lower_bound_profile,
    makespan,
    schedule_context,
    total_work,
)
from market_hpc.algorithms.valuecurve import ExponentialCurve, LinearDecayCurve, StepCurve
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, TraceFormatError, UnknownNameError
from market_hpc.workload.taskgraph_jobs import (
    demo_job_set,
    generate_job_set,
    read_job_set,
    value_curve_for,
    write_job_set,
)


def partitions(n_tasks: int, n_cores: int) -> Iterator[list[int]]:
    """Mappings of ``n_tasks`` onto exactly ``n_cores`` cores, up to core relabelling."""

    def grow(prefix: list[int], used: int) -> Iterator[list[int]]:
        if len(prefix) == n_tasks:
            if used == n_cores:
                yield prefix
            return
        if n_cores - used > n_tasks - len(prefix):
            return
        for core in range(min(used + 1, n_cores)):
            yield from grow([*prefix, core], max(used, core + 1))

    yield from grow([], 0)


def exact_profile(g: nx.DiGraph) -> tuple[float, ...]:
    """Best list-schedule makespan over every surjective mapping (tiny graphs only)."""
    ctx = schedule_context(g)
    n = len(ctx.tasks)
    return tuple(min(makespan(ctx, m) for m in partitions(n, c)) for c in range(1, n + 1))


def test_exact_profiler_on_a_hand_graph() -> None:
    g = nx.DiGraph()
    for task, wcet in enumerate([2, 3, 4, 5, 1]):
        g.add_node(task, wcet=wcet)
    g.add_edges_from([(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)])
    assert sum(1 for _ in partitions(5, 2)) == 15  # Stirling number S(5, 2)
    assert exact_profile(g) == (15.0, 10.0, 8.0, 8.0, 8.0)  # 2 + max(3 + 4, 5) + 1


def test_job_records_follow_the_contract() -> None:
    jobs = generate_job_set(30, seed=5, profiler=lower_bound_profile)
    assert [job.job_id for job in jobs] == list(range(1, 31))
    submits = [job.submit for job in jobs]
    assert submits == sorted(submits) and submits[0] == 0.0
    assert all(float(s).is_integer() for s in submits)
    for job in jobs:
        g = job.payload["task_graph"]
        assert job.units == g.number_of_nodes() and 5 <= job.units <= 10
        assert job.unit == (1, 0, 0, 0) and job.moldable
        assert job.profile == lower_bound_profile(g)
        assert job.run_time == job.estimate == job.profile[0] == total_work(g)
        assert job.payload["graph_hash"] == graph_hash(g)
        curve = job.payload["value_curve"]
        assert isinstance(curve, LinearDecayCurve)
        assert 100.0 <= curve.max_value <= 1000.0
        assert 1.0 <= curve.plateau_end / min(job.profile) <= 1.5
        assert 1.0 <= (curve.zero_time - curve.plateau_end) / job.profile[0] <= 3.0
        # Completing at the fastest profiled time always earns the full value.
        assert curve.value_at(min(job.profile)) == curve.max_value


def test_same_seed_same_set_bit_for_bit() -> None:
    first = generate_job_set(12, seed=9, profiler=lower_bound_profile)
    again = generate_job_set(12, seed=9, profiler=lower_bound_profile)
    other = generate_job_set(12, seed=10, profiler=lower_bound_profile)
    assert first == again
    for a, b in zip(first, again):
        assert a.payload["value_curve"] == b.payload["value_curve"]
        assert a.payload["graph_hash"] == b.payload["graph_hash"]
    assert [j.payload["graph_hash"] for j in first] != [j.payload["graph_hash"] for j in other]


def test_exact_profiles_on_small_jobs() -> None:
    jobs = generate_job_set(6, seed=2, profiler=exact_profile, n_tasks=(5, 6))
    for job in jobs:
        g, profile = job.payload["task_graph"], job.profile
        assert profile is not None
        assert all(rt >= lb for rt, lb in zip(profile, lower_bound_profile(g)))
        assert profile[1] >= math.ceil(total_work(g) / 2)
        assert profile[-1] == critical_path_length(g)  # one task per core


def test_profiler_runs_once_per_distinct_graph() -> None:
    calls: list[str] = []

    def counting(g: nx.DiGraph) -> tuple[float, ...]:
        calls.append(graph_hash(g))
        return lower_bound_profile(g)

    jobs = generate_job_set(40, seed=1, profiler=counting, shapes={"fork_join": 1.0})
    assert len(calls) == len(set(calls)) == len({j.payload["graph_hash"] for j in jobs})
    calls.clear()
    same = generate_job_set(
        5, seed=1, profiler=counting, shapes={"fork_join": 1.0}, n_tasks=(5, 5), wcet_range=(2, 2)
    )
    assert calls == [same[0].payload["graph_hash"]]  # five identical graphs, one profile


def test_poisson_rate_matches_the_offered_load() -> None:
    jobs = generate_job_set(600, seed=3, profiler=lower_bound_profile, load=2.0)
    mean_work = float(np.mean([job.run_time for job in jobs]))
    span = jobs[-1].submit - jobs[0].submit
    rate = (len(jobs) - 1) / span
    assert rate == pytest.approx(2.0 * 27 / mean_work, rel=0.1)


def test_burst_arrivals_fall_in_the_window() -> None:
    jobs = generate_job_set(20, seed=3, profiler=lower_bound_profile, arrival="burst")
    assert all(0 <= job.submit < 10 for job in jobs)
    assert len({job.submit for job in jobs}) < 20  # several jobs share a step


def test_curve_shapes_share_maximum_and_support() -> None:
    curves = {
        shape: value_curve_for(shape, 500.0, 15.0, 86.0, 1.2, 2.0)
        for shape in ("linear_decay", "step", "exponential")
    }
    assert isinstance(curves["step"], StepCurve)
    assert isinstance(curves["exponential"], ExponentialCurve)
    assert curves["linear_decay"].zero_time == pytest.approx(18.0 + 172.0)
    assert curves["exponential"].zero_time == pytest.approx(curves["linear_decay"].zero_time)
    assert curves["step"].remaining_value(0.0) == pytest.approx(
        curves["linear_decay"].remaining_value(0.0)
    )
    jobs = generate_job_set(5, seed=4, profiler=lower_bound_profile, curve_shape="step")
    assert all(isinstance(job.payload["value_curve"], StepCurve) for job in jobs)


@pytest.mark.parametrize(
    ("profiler", "message"),
    [
        (lambda g: (1.0,), "job 1: profiler returned 1 response times for 9 tasks"),
        (
            lambda g: (float(total_work(g)),) + (0.0,) * (g.number_of_nodes() - 1),
            "job 1: profiler returned RT(2)=0.0; must be > 0",
        ),
        (
            lambda g: tuple(rt + 1 for rt in lower_bound_profile(g)),
            "job 1: profiler returned RT(1)=148.0; must equal the total work 147",
        ),
    ],
)
def test_bad_profiles_are_named(profiler: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        generate_job_set(3, seed=0, profiler=profiler)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_bad_parameters_are_named() -> None:
    with pytest.raises(UnknownNameError) as unknown:
        generate_job_set(3, 0, profiler=lower_bound_profile, arrival="uniform")
    assert str(unknown.value) == "unknown arrival process 'uniform'; valid choices: burst, poisson"
    with pytest.raises(UnknownNameError) as unknown:
        generate_job_set(3, 0, profiler=lower_bound_profile, curve_shape="sigmoid")
    assert str(unknown.value) == (
        "unknown value curve shape 'sigmoid'; valid choices: exponential, linear_decay, step"
    )
    with pytest.raises(ConfigError) as info:
        generate_job_set(3, 0, profiler=lower_bound_profile, beta_range=(0.0, 1.0))
    assert str(info.value) == (
        "beta_range must be (low, high) with low > 0.0 and low <= high, got (0.0, 1.0)"
    )
    with pytest.raises(ConfigError) as info:
        generate_job_set(0, 0, profiler=lower_bound_profile)
    assert str(info.value) == "n_jobs must be an int >= 1, got 0"
    with pytest.raises(ConfigError) as info:
        generate_job_set(3, None, profiler=lower_bound_profile)  # type: ignore[arg-type]
    assert str(info.value) == "seed must be an int >= 0, got None"
    with pytest.raises(ConfigError) as info:
        generate_job_set(3, 0, profiler=lower_bound_profile, load=0)
    assert str(info.value) == "load must be a finite number > 0, got 0"


def test_json_round_trip(tmp_path: Path) -> None:
    jobs = generate_job_set(15, seed=8, profiler=lower_bound_profile, curve_shape="exponential")
    path = tmp_path / "jobs.json"
    write_job_set(jobs, path)
    again = read_job_set(path)
    assert again == jobs
    for job, copy in zip(jobs, again):
        assert copy.profile == job.profile
        assert copy.payload["value_curve"] == job.payload["value_curve"]
        assert copy.payload["graph_hash"] == job.payload["graph_hash"]
        g, h = job.payload["task_graph"], copy.payload["task_graph"]
        assert dict(g.nodes(data=True)) == dict(h.nodes(data=True))
        assert sorted(g.edges(data=True)) == sorted(h.edges(data=True))
        assert g.graph == h.graph
    if tuple(int(part) for part in nx.__version__.split(".")[:2]) >= (3, 4):
        document = json.loads(path.read_text())  # the file's graphs are networkx node-link data
        loaded = nx.node_link_graph(document["jobs"][0]["task_graph"], edges="edges")
        assert graph_hash(loaded) == jobs[0].payload["graph_hash"]


def test_bad_files_name_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "jobs.json"
    jobs = generate_job_set(2, seed=1, profiler=lower_bound_profile)
    write_job_set(jobs, path)
    document = json.loads(path.read_text())
    name = str(path)

    def expect(edit: object, message: str) -> None:
        data = json.loads(json.dumps(document))
        edit(data)  # type: ignore[operator]
        path.write_text(json.dumps(data))
        with pytest.raises(TraceFormatError) as info:
            read_job_set(path)
        assert str(info.value) == f"{name}: {message}"

    expect(lambda d: d["jobs"][1].pop("profile"), "field jobs[1].profile: missing")
    expect(
        lambda d: d["jobs"][0].__setitem__("profile", [1.0]),
        f"field jobs[0].profile: need {len(document['jobs'][0]['profile'])} response times > 0 "
        "(one per task), got [1.0]",
    )
    expect(
        lambda d: d["jobs"][0]["value_curve"].__setitem__("kind", "sigmoid"),
        "field jobs[0].value_curve: unknown value curve kind 'sigmoid'; valid choices: "
        "exponential, linear_decay, piecewise_linear, step",
    )
    stored = document["jobs"][0]["graph_hash"]
    tampered = jobs[0].payload["task_graph"].copy()
    first = next(iter(tampered.nodes))
    tampered.nodes[first]["wcet"] += 1

    def heavier(d: dict[str, Any]) -> None:
        d["jobs"][0]["task_graph"]["nodes"][0]["wcet"] += 1

    actual = graph_hash(tampered)
    expect(heavier, f"field jobs[0].graph_hash: {stored} does not match the graph ({actual})")
    expect(
        lambda d: d["jobs"][0]["task_graph"]["nodes"][0].__setitem__("wcet", 0),
        "field jobs[0].task_graph: task 0: wcet must be a positive int, got 0",
    )
    expect(
        lambda d: d["jobs"][0]["task_graph"]["edges"][0].pop("target"),
        "field jobs[0].task_graph.edges[0].target: missing",
    )
    expect(
        lambda d: d.__setitem__("format", "swf"),
        "field format: expected 'market_hpc.taskgraph_jobs', got 'swf'",
    )
    expect(
        lambda d: d["jobs"][1].__setitem__("job_id", d["jobs"][0]["job_id"]),
        "field jobs: duplicate job_id 1",
    )
    expect(
        lambda d: d["jobs"][0].__setitem__("submit", "soon"),
        "field jobs[0].submit: unexpected value 'soon'",
    )

    path.write_text('{"format": \n oops}')
    with pytest.raises(TraceFormatError) as info:
        read_job_set(path)
    assert str(info.value) == f"{name}:2: invalid JSON: Expecting value"
    with pytest.raises(ConfigError) as missing:
        read_job_set(tmp_path / "missing.json")
    assert str(missing.value) == f"job set file {tmp_path / 'missing.json'} does not exist"


def test_write_needs_graph_curve_and_profile(tmp_path: Path) -> None:
    bare = Job(job_id=4, submit=0.0, run_time=1.0, estimate=1.0)
    with pytest.raises(ConfigError) as info:
        write_job_set([bare], tmp_path / "x.json")
    assert str(info.value) == "job 4: payload has no 'task_graph'; cannot write it"
    job = generate_job_set(1, seed=0, profiler=lower_bound_profile)[0]
    rigid = Job(job_id=5, submit=0.0, run_time=1.0, estimate=1.0, payload=job.payload)
    with pytest.raises(ConfigError) as info:
        write_job_set([rigid], tmp_path / "x.json")
    assert str(info.value) == "job 5: has no profile; cannot write it"
    assert not (tmp_path / "x.json").exists()


def test_demo_job_set_uses_the_ga_profiles_deterministically() -> None:
    jobs = demo_job_set(4, seed=3)
    assert jobs == demo_job_set(4, seed=3)
    for job in jobs:
        g, profile = job.payload["task_graph"], job.profile
        assert profile is not None and profile[0] == total_work(g)
        assert all(rt >= lb for rt, lb in zip(profile, lower_bound_profile(g)))
        assert profile[-1] == critical_path_length(g)
