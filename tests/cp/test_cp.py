"""CP-SAT dispatchers (seed 001 PCP'20, PCP'19, HCP'19; seed 000 CPH).

Model size against the node count and the number of running jobs (PCP'20's reduced
system), optimality against an independent brute force on small random instances
(exact and with coarse end levels), load-time rejection of jobs that never fit, and
the summary statistics a run reports. The conformance and invariant suites cover the four
registered schedulers like every other one.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from market_hpc.algorithms.cp.greedy import greedy_plan
from market_hpc.algorithms.cp.instance import (
    CpInstance,
    CpJob,
    CpLimits,
    CpOutcome,
    CpRunning,
    check_instance,
    model_size,
    slowdown_weight,
)
from market_hpc.algorithms.cp.pcp19 import solve_pcp19
from market_hpc.algorithms.cp.pcp20 import Pcp20Model, solve_pcp20
from market_hpc.algorithms.cp.pooled import solve_pooled
from market_hpc.algorithms.cp.reduce import reduce_instance
from market_hpc.domain.job import Job
from market_hpc.domain.platform import NodeType, Platform, parse_inline
from market_hpc.errors import ConfigError
from market_hpc.experiment.config import config_from_dict
from market_hpc.experiment.run import simulate
from market_hpc.policies import make_policy
from market_hpc.workload.kit import kit_like, require_fits

# KIT's two node types (cores, gpus, mem GB) at the three sizes.
THIN, FAT = (20, 0, 64), (48, 4, 1024)
SIZES = (64, 1173, 5544)


def kit_capacity(nodes: int) -> np.ndarray:
    return np.array([THIN] * (nodes - 21) + [FAT] * 21, dtype=np.int64)


def queue_on(nodes: int) -> CpInstance:
    """The same queue and running jobs (on the first nodes) on a platform of ``nodes``."""
    rng = np.random.default_rng(5)
    jobs = []
    for key in range(30):
        units = int(rng.choice([1, 2, 4, 8]))
        unit = (20, 0, int(rng.integers(1, 64))) if key % 5 else (48, int(rng.integers(1, 5)), 512)
        duration = int(rng.integers(60, 7200))
        jobs.append(CpJob(key, units if key % 5 else 1, unit, duration, slowdown_weight(duration)))
    running = tuple(
        CpRunning(int(rng.integers(1, 5000)), ((node, (20, 0, 32)),)) for node in range(40)
    )
    return CpInstance(kit_capacity(nodes), tuple(jobs), running)


def test_pcp20_model_size_does_not_grow_with_the_node_count() -> None:
    sizes = set()
    for nodes in SIZES:
        instance = queue_on(nodes)
        sizes.add(model_size(Pcp20Model(instance, greedy_plan(instance)).model))
    assert len(sizes) == 1, sizes
    variables, constraints = sizes.pop()
    assert variables > 30 and constraints > 30


def loaded_on(nodes: int, busy: int, seed: int) -> CpInstance:
    """``queue_on``'s queue with whole-node jobs (random ends) on the first ``busy`` thin nodes."""
    rng = np.random.default_rng(seed)
    running, node = [], 0
    while node < busy:
        width = min(int(rng.integers(1, 5)), busy - node)
        running.append(
            CpRunning(
                int(rng.integers(1, 40_000)),
                tuple((n, (20, 0, 32)) for n in range(node, node + width)),
            )
        )
        node += width
    return CpInstance(kit_capacity(nodes), queue_on(nodes).jobs, tuple(running))


def test_pcp20_model_size_does_not_grow_with_the_running_jobs() -> None:
    # 1,000 and 5,000 busy nodes (about 400 and 2,000 running jobs, thousands of distinct
    # ends): the reduced system, hence the model, is the same size
    sizes = set()
    for nodes, busy in ((1173, 1000), (5544, 5000)):
        instance = reduce_instance(loaded_on(nodes, busy, seed=busy)).instance
        sizes.add(model_size(Pcp20Model(instance, greedy_plan(instance)).model))
    assert len(sizes) == 1, sizes
    exact = loaded_on(1173, 1000, seed=1000)
    assert model_size(Pcp20Model(exact, greedy_plan(exact)).model)[1] > 2 * sizes.pop()[1]


def test_the_reduced_system_keeps_what_can_start_now_and_maps_back_to_real_nodes() -> None:
    instance = loaded_on(1173, 1000, seed=3)
    reduced = reduce_instance(instance)
    free = instance.capacity - instance.used
    small = reduced.instance
    assert len(small.capacity) < len(instance.capacity)
    # every reduced node is a real node with the same capacity and the same use now
    assert (small.capacity == instance.capacity[reduced.nodes]).all()
    now = small.used
    blocked = free[reduced.nodes, 0] == 0
    assert (now[~blocked] == instance.used[reduced.nodes][~blocked]).all()
    assert (now[blocked] == small.capacity[blocked]).all()  # saturated: no unit fits there now
    outcome = solve_pcp20(instance, CpLimits())
    for key, allocation in outcome.placements.items():
        job = next(j for j in instance.jobs if j.key == key)
        for node, units in allocation:
            assert (np.asarray(job.unit) * units <= free[node]).all(), (key, node)
            free[node] -= np.asarray(job.unit) * units


def test_pcp19_model_grows_with_the_node_count() -> None:
    small, large = (
        solve_pcp19(CpInstance(kit_capacity(n), queue_on(n).jobs[:3], ()), CpLimits())
        for n in (64, 1173)
    )
    # every job starts now on an empty platform: no model is built at all
    assert small.variables == large.variables == 0
    busy = [
        CpRunning(
            100, tuple((node, tuple(row)) for node, row in enumerate(kit_capacity(n).tolist()))
        )
        for n in (64, 1173)
    ]
    quick = CpLimits(deterministic_time=0.001)
    small, large = (
        solve_pcp19(CpInstance(kit_capacity(n), queue_on(n).jobs[:3], (run,)), quick, 0)
        for n, run in zip((64, 1173), busy)
    )
    assert large.variables > 10 * small.variables > 0


# ------------------------------------------------------------ brute force
def brute_force(instance: CpInstance) -> int:
    """Minimum ``sum weight * start`` by enumeration: every start on the grid 0..horizon and
    every split of a job's unit-size units over the nodes, checked per node and time step.
    With units of height 1 per-node counts are exact (interval graphs colour with their
    clique size), so this is the PCP'20 optimum."""
    capacity = instance.capacity[:, 0]
    horizon = instance.horizon
    load = np.zeros((len(capacity), horizon + 1), dtype=np.int64)
    for job in instance.running:
        for node, amounts in job.usage:
            load[node, : job.remaining] += amounts[0]
    splits = {}
    for job in instance.jobs:
        splits[job.key] = [
            split
            for split in itertools.product(
                *(range(min(job.units, c // job.unit[0]) + 1) for c in capacity)
            )
            if sum(split) == job.units
        ]
    best = [float("inf")]

    def search(index: int, cost: int) -> None:
        if cost >= best[0]:
            return
        if index == len(instance.jobs):
            best[0] = cost
            return
        job = instance.jobs[index]
        for start in range(horizon - job.duration + 1):
            if cost + job.weight * start >= best[0]:
                break
            window = slice(start, start + job.duration)
            for split in splits[job.key]:
                need = np.array(split) * job.unit[0]
                if (load[:, window] + need[:, None] <= capacity[:, None]).all():
                    load[:, window] += need[:, None]
                    search(index + 1, cost + job.weight * start)
                    load[:, window] -= need[:, None]

    search(0, 0)
    return int(best[0])


def random_instance(seed: int) -> CpInstance:
    rng = np.random.default_rng(seed)
    capacity = rng.integers(1, 4, size=(int(rng.integers(1, 4)), 1))
    jobs = []
    for key in range(int(rng.integers(2, 7))):
        per = 1  # unit heights 1: per-node counts are exact, so the brute force is too
        fits = int(capacity[:, 0].sum())
        units = int(rng.integers(1, min(fits, 3) + 1))
        duration = int(rng.integers(1, 3))
        jobs.append(CpJob(key, units, (per,), duration, int(rng.integers(1, 4))))
    running = []
    for node in range(len(capacity)):
        if rng.random() < 0.5:
            running.append(
                CpRunning(
                    int(rng.integers(1, 4)),
                    ((node, (int(rng.integers(1, capacity[node, 0] + 1)),)),),
                )
            )
    return CpInstance(capacity, tuple(jobs), tuple(running))


@pytest.mark.parametrize("seed", range(30))
def test_pcp20_optimum_equals_brute_force(seed: int) -> None:
    instance = random_instance(seed)
    outcome = solve_pcp20(instance, CpLimits(deterministic_time=10.0))
    assert outcome.status == "OPTIMAL", outcome
    assert outcome.objective == brute_force(instance)
    pooled = solve_pooled(instance, CpLimits(deterministic_time=10.0))
    assert pooled.objective <= outcome.objective  # the pooled relaxation is a lower bound


@pytest.mark.parametrize("seed", range(15))
def test_coarse_end_levels_are_conservative(seed: int) -> None:
    # one level: every running job ends with the last one; the plan stays feasible (what
    # starts now fits the real free resources) and can only cost optimality
    instance = random_instance(200 + seed)
    outcome = solve_pcp20(instance, CpLimits(deterministic_time=10.0), levels=1)
    assert outcome.status == "OPTIMAL", outcome
    assert outcome.objective >= brute_force(instance)
    free = instance.capacity[:, 0] - instance.used[:, 0]
    for key, allocation in outcome.placements.items():
        job = next(j for j in instance.jobs if j.key == key)
        for node, units in allocation:
            free[node] -= job.unit[0] * units
    assert (free >= 0).all()
    exact = solve_pcp20(instance, CpLimits(deterministic_time=10.0), levels=None)
    assert exact.objective == brute_force(instance)


def test_pcp19_and_pcp20_agree_on_small_instances() -> None:
    for seed in range(10):
        instance = random_instance(100 + seed)
        limits = CpLimits(deterministic_time=10.0)
        assert solve_pcp19(instance, limits).objective == solve_pcp20(instance, limits).objective


# ------------------------------------------------------------ rejection
def test_a_job_that_never_fits_is_rejected_naming_job_and_resource() -> None:
    instance = CpInstance(np.array([[4, 0], [4, 2]]), (CpJob(9, 2, (2, 2), 5, 1),))
    with pytest.raises(
        ValueError,
        match=r"job 9 can never run: needs 2 units of \(cores=2, gpus=2\) "
        r"but the empty platform holds 1 \(gpus: 2 in total\)",
    ):
        check_instance(instance, ("cores", "gpus"))
    small = Platform("small-kit", (NodeType("thin", 4, 20),))
    with pytest.raises(ConfigError, match=r"job \d+ can never run on 'small-kit': .*cores"):
        kit_like(200, seed=3, platform=small)
    with pytest.raises(
        ConfigError, match=r"x: job 4 can never run on 'nodes=2,cores=4': a unit needs mics=1"
    ):
        require_fits(
            [Job(4, 0.0, 1.0, 1.0, unit=(1, 0, 1, 0))], parse_inline("nodes=2,cores=4"), "x"
        )


# ------------------------------------------------------------ policies
def test_cp_runs_report_status_model_size_and_dispatch_percentiles() -> None:
    config = config_from_dict(
        {
            "platform": "eurora",
            "seed": 2,
            "timeseries": False,
            "workload": {"generator": "eurora", "jobs": 120, "month": "2014-09"},
            "policy": {
                "scheduler": "pcp20",
                "params": {"deterministic_time": 0.01, "queue_limit": 20},
            },
        }
    )
    summary = simulate(config).summary
    assert summary["jobs_completed"] == 120
    assert summary["cp_decisions"] > 0
    assert set(summary["cp_status_counts"]) <= {
        "OPTIMAL",
        "FEASIBLE",
        "FALLBACK",
        "TRIVIAL",
        "LIVENESS",
        "BUDGET",
    }
    assert 0.0 <= summary["cp_optimal_share"] <= 1.0
    assert 0.0 < summary["mean_dispatch_ms"] <= summary["max_dispatch_ms"]
    assert summary["p99_dispatch_ms"] <= summary["max_dispatch_ms"]


def test_every_cp_run_reports_status_counts_changed_share_and_model_size() -> None:
    config = {
        "platform": "eurora",
        "seed": 2,
        "timeseries": False,
        "workload": {"generator": "eurora", "jobs": 300, "load_factor": 4.0},
        "policy": {"scheduler": "pcp20", "predictor": "real"},
    }
    summaries = {}
    for scheduler in ("pcp20", "greedy-plan", "hcp19"):
        config["policy"]["scheduler"] = scheduler
        summaries[scheduler] = simulate(config_from_dict(config)).summary
    for summary in summaries.values():
        assert {"OPTIMAL", "FEASIBLE", "FALLBACK", "TRIVIAL"} <= set(summary["cp_status_counts"])
        assert 0.0 <= summary["cp_changed_share"] <= 1.0
    pcp20, greedy = summaries["pcp20"], summaries["greedy-plan"]
    # greedy-plan: no model, the plan decides (GREEDY) wherever PCP'20 builds a model
    assert greedy["cp_models"] == 0 and greedy["cp_mean_variables"] == 0
    assert greedy["cp_status_counts"].get("GREEDY", 0) > 0 and greedy["cp_changed_share"] == 0.0
    assert (
        pcp20["cp_models"] > 0
        and pcp20["cp_mean_variables"] > 0
        and pcp20["cp_mean_constraints"] > 0
    )
    assert "GREEDY" not in pcp20["cp_status_counts"]


def test_greedy_plan_is_pcp20s_hint_without_the_search() -> None:
    # job 1 (2 units of 2 cores, long) has the higher priority; the greedy plan starts it
    # now on node 1 and puts the short job 2 after it; the search starts job 2 now on
    # both nodes' free core and job 1 at 1: the objective 10,000 * 1 beats 100,000 * 10
    instance = CpInstance(
        np.array([[2], [2]]),
        (CpJob(1, 1, (2,), 10, 10_000), CpJob(2, 2, (1,), 1, 100_000)),
        (CpRunning(4, ((0, (1,)),)),),
    )
    greedy = solve_pcp20(instance, CpLimits(), search=False)
    searched = solve_pcp20(instance, CpLimits())
    assert (greedy.status, greedy.starts, greedy.placements, greedy.changed) == (
        "GREEDY",
        {1: 0, 2: 10},
        {1: ((1, 1),)},
        None,
    )
    assert (searched.status, searched.starts, searched.changed) == ("OPTIMAL", {1: 1, 2: 0}, True)
    policy = make_policy("greedy-plan")
    assert policy.name == "greedy-plan+best-fit" and policy.search is False


def test_pcp20_above_its_unit_limit_takes_the_greedy_plan_without_a_model() -> None:
    # the instance of the test above: 3 job units modelled; the search changes the plan
    instance = CpInstance(
        np.array([[2], [2]]),
        (CpJob(1, 1, (2,), 10, 10_000), CpJob(2, 2, (1,), 1, 100_000)),
        (CpRunning(4, ((0, (1,)),)),),
    )
    limited = solve_pcp20(instance, CpLimits(), unit_limit=2)
    assert (limited.status, limited.starts, limited.placements, limited.variables) == (
        "UNIT_LIMITED",
        {1: 0, 2: 10},
        {1: ((1, 1),)},
        0,
    )
    assert solve_pcp20(instance, CpLimits(), unit_limit=3).status == "OPTIMAL"
    assert solve_pcp20(instance, CpLimits(), unit_limit=None).status == "OPTIMAL"
    assert make_policy("pcp20").unit_limit == 8192
    assert make_policy("pcp20", scheduler_params={"unit_limit": 0}).unit_limit is None
    with pytest.raises(
        ConfigError,
        match=r"scheduler 'pcp20': unit_limit must be an integer >= 0 \(0: no limit\), "
        r"got -1",
    ):
        make_policy("pcp20", scheduler_params={"unit_limit": -1})


def test_pcp20_counts_its_unit_limited_decisions_and_keeps_its_queue_length_after_one() -> None:
    config = {
        "platform": "eurora",
        "seed": 2,
        "timeseries": False,
        "workload": {"generator": "eurora", "jobs": 300, "load_factor": 4.0},
        "policy": {"scheduler": "pcp20", "predictor": "real", "params": {"unit_limit": 4}},
    }
    limited = simulate(config_from_dict(config)).summary
    config["policy"]["params"] = {"unit_limit": 0}
    whole = simulate(config_from_dict(config)).summary
    assert (
        limited["cp_status_counts"]["UNIT_LIMITED"] > 0
        and "GREEDY" not in limited["cp_status_counts"]
    )
    assert "UNIT_LIMITED" not in whole["cp_status_counts"]
    assert 0 < limited["cp_models"] < whole["cp_models"]
    # a model too large to build keeps the queue length (halving would model the head job
    # alone); a decision whose solver found nothing halves it
    policy = make_policy("pcp20", scheduler_params={"queue_limit": 40})
    policy.adapt_queue_length(CpOutcome({}, {}, "UNIT_LIMITED"), 40)
    assert policy.q_length == 40
    policy.adapt_queue_length(CpOutcome({}, {}, "FALLBACK"), 40)
    assert policy.q_length == 20


def test_bad_scheduler_parameters_fail_with_the_scheduler_name() -> None:
    with pytest.raises(ConfigError, match="scheduler 'pcp20'"):
        make_policy("pcp20", scheduler_params={"deterministic_time": -1})
    with pytest.raises(ConfigError, match="scheduler 'pcp20': levels must be >= 0"):
        make_policy("pcp20", scheduler_params={"levels": -1})
    with pytest.raises(
        ConfigError,
        match=r"^scheduler 'pcp20': branching = 'random' is invalid; valid: one of priority, "
        r"earliest, auto$",
    ):
        make_policy("pcp20", scheduler_params={"branching": "random"})
    with pytest.raises(
        ConfigError, match="scheduler 'pcp20': relax must be true or false, got 'yes'"
    ):
        make_policy("pcp20", scheduler_params={"relax": "yes"})
    with pytest.raises(ConfigError, match="scheduler 'greedy-plan': time_control must be one of"):
        make_policy("greedy-plan", scheduler_params={"time_control": "fast"})
    with pytest.raises(ConfigError, match="scheduler 'cph'"):
        make_policy("cph", "balanced", scheduler_params={"no_such_parameter": 1})


def test_cph_composes_with_every_allocator() -> None:
    for allocator in ("first-fit", "best-fit", "balanced", "weighted", "priority-weighted"):
        assert make_policy("cph", allocator).name == f"cph+{allocator}"


def test_the_cp_study_sweep_runs_end_to_end_on_small_data() -> None:
    import copy
    from pathlib import Path

    from invariants import assert_schedule_invariants

    from market_hpc.domain.platform import load_platform
    from market_hpc.experiment.run import build_workload
    from market_hpc.experiment.sweep import load_sweep

    scenarios = Path(__file__).resolve().parents[2] / "scenarios"
    sweep = load_sweep(scenarios / "cp_dispatch.toml")
    pcp19 = load_sweep(scenarios / "cp_dispatch_pcp19.toml")
    assert len(sweep.runs) == 10 and len(pcp19.runs) == 1
    for run in sweep.runs + pcp19.runs:
        data = copy.deepcopy(run.config)
        data["workload"]["jobs"] = 40
        config = config_from_dict(data)
        jobs, _ = build_workload(config, load_platform(config.platform))
        result = simulate(config, jobs=jobs)
        assert_schedule_invariants(jobs, result.jobs, config.platform, segments=result.segments)
        assert result.summary["jobs_completed"] == len(jobs), run.params


def _reference_usage(
    capacity: np.ndarray, columns: list[tuple[int, int]], running: list[Any]
) -> list[tuple[Any, ...]]:
    """The running jobs' model usage as first written: node by node, each clipped to what
    the jobs before it left."""
    room = capacity.tolist()
    out: list[tuple[Any, ...]] = []
    for run in running:
        usage = []
        for node, units in run.allocation:
            amounts = [-(-run.job.unit[c] * units // k) for c, k in columns]
            taken = tuple(min(a, r) for a, r in zip(amounts, room[node]))
            room[node] = [r - t for r, t in zip(room[node], taken)]
            usage.append((node, taken))
        out.append(tuple(usage))
    return out


def test_the_instance_clips_running_usage_only_where_a_node_is_over_full() -> None:
    # 2 nodes of 16 cores and 4 GB; a job's memory on a node is rounded up to whole GB
    platform = SimpleNamespace(capacity=np.array([[16, 0, 0, 4096], [16, 0, 0, 4096]]))

    def run(job_id: int, unit: tuple[int, ...], allocation: tuple[tuple[int, int], ...]) -> Any:
        return SimpleNamespace(job=SimpleNamespace(job_id=job_id, unit=unit), allocation=allocation)

    def view(running: list[Any]) -> Any:
        return SimpleNamespace(
            platform=platform,
            running=running,
            exclusive=False,
            time=0.0,
            expected_end=lambda r: 10.0 * r.job.job_id,
        )

    policy: Any = make_policy("pcp20")
    columns = [(0, 1), (3, 1024)]
    capacity = np.array([[16, 4], [16, 4]])
    fits = [run(1, (2, 0, 0, 1500), ((0, 1), (1, 1))), run(2, (1, 0, 0, 1024), ((1, 2),))]
    over = [run(3, (1, 0, 0, 1500), ((0, 2),)), run(4, (1, 0, 0, 1500), ((0, 1), (1, 1)))]
    for running in (fits, over, fits + over, over[::-1]):
        instance = policy.instance((), (), view(running))
        usage = [job.usage for job in instance.running]
        assert usage == _reference_usage(capacity, columns, running)
        assert [job.remaining for job in instance.running] == [10 * r.job.job_id for r in running]
        computed = CpInstance(instance.capacity, (), instance.running).usage_rows
        assert all((a == b).all() for a, b in zip(instance.usage_rows, computed))
    # job 3 takes 3 GB (2 x 1,500 MiB) of node 0's 4; job 4's 2 GB there are clipped to 1
    assert policy.instance((), (), view(over)).running[1].usage == ((0, (1, 1)), (1, (1, 2)))
    # a job kept in the cache under its id is re-read when its allocation changes
    moved = [run(1, (2, 0, 0, 1500), ((1, 2),))]
    assert policy.instance((), (), view(moved)).running[0].usage == ((1, (4, 3)),)
