"""Seed 004 in the model: partition invariants, pool, reconfiguration, routing errors,
and the fast sampling simulator against the full model."""

from __future__ import annotations

import bisect

import numpy as np
import pytest
from conftest import real_trace
from invariants import assert_schedule_invariants, parse_nodes, random_workload

from market_hpc.algorithms.queues.partitions import layout, route, route_all
from market_hpc.algorithms.queues.sim import QueueJobs, easy_waits
from market_hpc.core.model import HPCModel
from market_hpc.core.queue_agents import RoutedQueueAgent
from market_hpc.domain.job import Job
from market_hpc.domain.platform import load_platform
from market_hpc.domain.queues import QueueConfig, QueueSpec
from market_hpc.errors import ConfigError
from market_hpc.experiment.config import QueuesConfig, config_from_dict
from market_hpc.policies import make_policy

PLATFORM = "nodes=8,cores=4"  # 32 cores
QUEUES = (
    QueueSpec("short", 1, 4, 0, 15),
    QueueSpec("narrow", 1, 4, 16),
    QueueSpec("wide", 5, 12),
    QueueSpec("large", 13, 40, reservation=True),
)
CONFIGS = {
    "partitioned": QueueConfig(QUEUES, partitions=(2, 3, 3, 0), label="p"),
    "hybrid": QueueConfig(
        QUEUES, mode="hybrid", partitions=(1, 2, 3, 0), pool=2, tau_pf=0.2, label="h"
    ),
    "shared": QueueConfig(QUEUES, mode="shared", label="s"),
}


def _run(
    jobs: list[Job],
    config: QueueConfig,
    allocator: str = "first-fit",
    reconfigurations=(),
    exclusive: bool = False,
) -> HPCModel:
    policy = make_policy(f"queues-{config.mode}", allocator, scheduler_params={"config": config})
    model = HPCModel(
        jobs,
        PLATFORM,
        policy=policy,
        queues=config,
        reconfigurations=reconfigurations,
        exclusive=exclusive,
        seed=3,
        record_timeseries=False,
    )
    model.run()
    return model


def assert_partitions_respected(model: HPCModel, jobs: list[Job]) -> None:
    """No job runs outside its partition or the pool (reservation and oversized jobs are
    machine-wide); the pool's cores are never over-committed."""
    agent = model.queue_agent
    assert isinstance(agent, RoutedQueueAgent)
    times = [t for t, _ in agent.history]
    capacity = model.platform.capacity[:, 0]
    by_id = {j.job_id: j for j in jobs}
    pool_events: list[tuple[float, int, int]] = []
    frame = model.recorder.jobs_frame()
    for row in frame[frame.start_time.notna()].itertuples():
        config = agent.history[bisect.bisect_right(times, row.start_time) - 1][1]
        job = by_id[row.job_id]
        ranges, pool = layout(config, model.platform.n_nodes)
        queue = route(config, job.cores, job.estimate)
        lo, hi = ranges[queue]
        nodes = [n for n, _ in parse_nodes(row.nodes)]
        inside = all(lo <= n < hi for n in nodes)
        in_pool = config.mode == "hybrid" and all(pool[0] <= n < pool[1] for n in nodes)
        oversized = capacity[lo:hi].sum() < job.cores
        assert inside or in_pool or config.queues[queue].reservation or oversized, (
            f"job {row.job_id} of {config.queues[queue].name} ran on {nodes}, partition {lo}-{hi}, "
            f"pool {pool}"
        )
        if in_pool and not inside:
            pool_events += [(row.start_time, 1, row.cores), (row.end_time, 0, -row.cores)]
            pool_cores = int(capacity[pool[0] : pool[1]].sum())
    used = 0
    for _, _, delta in sorted(pool_events):
        used += delta
        assert used <= pool_cores, "pool over-committed"


@pytest.mark.parametrize("mode", sorted(CONFIGS))
@pytest.mark.parametrize("allocator", ["first-fit", "best-fit"])
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_modes_keep_partitions_and_invariants(mode: str, allocator: str, seed: int) -> None:
    jobs = random_workload(seed, PLATFORM, [(1, 0, 0, 0)], count=60)
    model = _run(jobs, CONFIGS[mode], allocator)
    assert not model.running
    assert_schedule_invariants(jobs, model.recorder.jobs_frame(), PLATFORM)
    assert_partitions_respected(model, jobs)


def test_exclusive_mode_keeps_invariants() -> None:
    jobs = random_workload(5, PLATFORM, [(1, 0, 0, 0)], count=60)
    model = _run(jobs, CONFIGS["hybrid"], exclusive=True)
    assert_schedule_invariants(jobs, model.recorder.jobs_frame(), PLATFORM, exclusive=True)
    assert_partitions_respected(model, jobs)


def test_hybrid_pool_is_used() -> None:
    jobs = [
        Job(i, float(i), 100.0, 100.0, units=4) for i in range(1, 9)
    ]  # all "narrow": 3 nodes of 4
    model = _run(jobs, CONFIGS["hybrid"])
    frame = model.recorder.jobs_frame()
    pool_nodes = {6, 7}
    on_pool = [
        r.job_id for r in frame.itertuples() if {n for n, _ in parse_nodes(r.nodes)} <= pool_nodes
    ]
    assert on_pool, "no waiting job ever reached the pool"
    assert_partitions_respected(model, jobs)


def test_reconfiguration_loses_no_job() -> None:
    jobs = random_workload(21, PLATFORM, [(1, 0, 0, 0)], count=80)
    schedule = [
        (30.0, CONFIGS["hybrid"]),
        (60.0, CONFIGS["shared"]),
        (90.0, CONFIGS["partitioned"]),
    ]
    policy = make_policy(
        "queues-partitioned", "first-fit", scheduler_params={"config": CONFIGS["partitioned"]}
    )
    model = HPCModel(
        jobs,
        PLATFORM,
        policy=policy,
        queues=CONFIGS["partitioned"],
        reconfigurations=schedule,
        seed=3,
        record_timeseries=False,
    )
    agent = model.queue_agent
    while model.running:
        model.step()
        assert sum(len(q.jobs) for q in agent.queues.values()) == len(agent.jobs)
        assert all(
            agent.config.names[route(agent.config, j.cores, j.estimate)] == agent.queue_of[j.job_id]
            for j in agent.jobs.values()
        )
    assert [t for t, _ in agent.history] == [0.0, 30.0, 60.0, 90.0]
    assert [c.label for _, c in agent.history] == ["p", "h", "s", "p"]
    frame = model.recorder.jobs_frame()
    assert len(frame) == len(jobs) and set(frame.status) <= {"finished", "rejected"}
    assert_schedule_invariants(jobs, frame, PLATFORM)
    assert_partitions_respected(model, jobs)


def test_unroutable_job_fails_at_load_unless_catch_all() -> None:
    queues = (QueueSpec("short", 1, 32, 0, 10),)
    config = QueueConfig(queues, partitions=(8,))
    jobs = [Job(1, 0.0, 5.0, 5.0, units=2), Job(7, 1.0, 50.0, 50.0, units=2)]
    with pytest.raises(ConfigError, match=r"job 7 \(2 cores, estimate .*short\[cores 1-32"):
        _run(jobs, config)
    model = _run(jobs, QueueConfig(queues, partitions=(8,), catch_all="short"))
    assert set(model.recorder.jobs_frame().status) == {"finished"}


def test_fast_simulator_matches_the_model() -> None:
    rng = np.random.default_rng(8)
    n = 300
    submits = np.sort(rng.integers(0, 4000, n)).astype(float)
    runs = rng.integers(1, 300, n).astype(float)
    estimates = np.where(
        rng.random(n) < 0.3, np.maximum(1, runs // 2), runs + rng.integers(0, 200, n)
    )
    cores = rng.integers(1, 10, n)
    jobs = [
        Job(i + 1, s, r, float(e), units=int(c))
        for i, (s, r, e, c) in enumerate(zip(submits, runs, estimates, cores))
    ]
    config = QueueConfig(QUEUES[:3], partitions=(2, 3, 3), label="no-large")
    jobs = [j for j in jobs if route(config, j.cores, j.estimate) >= 0]
    model = _run(jobs, config)
    frame = model.recorder.jobs_frame().set_index("job_id")
    queue_of = route_all(
        config, np.array([j.cores for j in jobs]), np.array([j.estimate for j in jobs])
    )
    compared = 0
    for index, size in enumerate(config.partitions):
        mine = [j for j, q in zip(jobs, queue_of) if q == index and j.cores <= 4 * size]
        columns = QueueJobs(
            np.array([j.submit for j in mine]),
            np.array([j.run_time for j in mine]),
            np.array([j.estimate for j in mine]),
            np.array([j.cores for j in mine]),
        )
        if len({j.job_id for j in mine}) != sum(1 for j, q in zip(jobs, queue_of) if q == index):
            continue  # a job too big for the partition runs machine-wide in the model
        fast = easy_waits(columns, 4 * size)
        assert np.array_equal(fast, frame.loc[[j.job_id for j in mine], "wait_time"].to_numpy()), (
            index
        )
        compared += len(mine)
    assert compared > 100


def test_queues_section_validates() -> None:
    with pytest.raises(ConfigError, match="queues.strategy"):
        config_from_dict(
            {"workload": {"generator": "lublin-feitelson"}, "queues": {"strategy": "magic"}}
        )
    with pytest.raises(ConfigError, match="queues.samples"):
        QueuesConfig(strategy="dpnlpm", samples=0)


def test_hpc2n_month_is_planned_and_replayed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.experiment.queues import plan_period
    from market_hpc.workload import read_swf, time_slice

    trace = real_trace("HPC2N-2002-2.1-cln.swf.gz")
    jobs = list(time_slice(read_swf(trace).jobs, 180 * 86400.0, 185 * 86400.0))
    platform = load_platform("hpc2n")
    settings = QueuesConfig(strategy="hybrid", samples=10, lb_points=3, period_days=5.0)
    plan = plan_period(jobs, jobs[0].submit, 5 * 86400.0, platform, settings, seed=1)
    for name, config in plan.configs.items():
        assert config.mode == "shared" or config.used_nodes == platform.n_nodes, name
    # jobs per queue as the docs' HPC2N ranges say (idqueue 1-2 cores <= 2 h, small 1-7 <= 24 h,
    # small72 1-7 > 24 h, medium 8-56), counted without the router
    cores = np.array([j.cores for j in jobs])
    est = np.array([j.estimate for j in jobs])
    idq = (cores <= 2) & (est <= 2 * 3600)
    small = (cores <= 7) & (est <= 24 * 3600) & ~idq
    expected = [
        int(idq.sum()),
        int(small.sum()),
        int(((cores <= 7) & (est > 24 * 3600)).sum()),
        int(((cores >= 8) & (cores <= 56)).sum()),
    ]
    assert plan.details["dpnlpm"]["jobs"] == expected
    nlp = plan.details["dpnlpm"]
    assert (
        nlp["source"] in ("nlp", "sample") and len(nlp["r2"]) == 3 and nlp["solves"] >= 11
    )  # 1 + 10 best
    # every partition holds the largest request routed to it (2 cores per node)
    hybrid = plan.configs["hybrid"]
    queue_of = route_all(hybrid, cores, est)
    for index, queue in enumerate(hybrid.queues):
        if not queue.reservation and (queue_of == index).any():
            assert 2 * hybrid.partitions[index] >= cores[queue_of == index].max(), queue.name
    model = HPCModel(
        jobs,
        platform,
        policy=make_policy("queues-hybrid", "first-fit", scheduler_params={"config": hybrid}),
        queues=hybrid,
        seed=1,
        record_timeseries=False,
    )
    model.run()
    frame = model.recorder.jobs_frame()
    assert set(frame.status) == {"finished"}
    assert_schedule_invariants(jobs, frame, platform)
    assert_partitions_respected(model, jobs)


def test_a_queue_without_history_jobs_gets_exactly_its_minimum() -> None:
    """The Curie period-2 bug: an empty queue's utilisation is 0 at every size, so its lower
    bound ran to the top of the grid and the bounds summed to the whole machine."""
    from market_hpc.experiment.queues import plan_period

    # 8 nodes of 4 cores: Table I scaled to 32 cores is
    # idqueue/small/small72 [1, 1] core, medium [2, 7]
    rng = np.random.default_rng(5)
    jobs = [
        Job(
            i + 1,
            float(i * 600),
            float(rng.integers(600, 5000)),
            7000.0 if i % 2 else 3600.0,
            units=1 if i % 2 == 0 else int(rng.integers(2, 8)),
        )
        for i in range(120)
    ]
    settings = QueuesConfig(strategy="hybrid", samples=10, lb_points=4, period_days=1.0)
    plan = plan_period(jobs, 0.0, 86400.0, load_platform(PLATFORM), settings, seed=1)
    dpnlpm = plan.configs["dpnlpm"]
    sizes = dict(zip(dpnlpm.names, dpnlpm.partitions))
    assert plan.details["dpnlpm"]["jobs"] == [60, 0, 0, 60]
    assert sizes["small"] == sizes["small72"] == 1 and sizes["idqueue"] + sizes["medium"] == 6


@pytest.mark.parametrize("seed", [31, 32])
def test_shared_mode_is_plain_easy(seed: int) -> None:
    """Non-partitioned queues schedule exactly as EASY over the whole machine."""
    jobs = random_workload(seed, PLATFORM, [(1, 0, 0, 0)], count=80)
    shared = _run(jobs, CONFIGS["shared"]).recorder.jobs_frame()
    easy = HPCModel(jobs, PLATFORM, "easy", "first-fit", seed=3, record_timeseries=False)
    easy.run()
    assert shared.equals(easy.recorder.jobs_frame())


@pytest.mark.parametrize("mode", ["partitioned", "hybrid"])
@pytest.mark.parametrize("allocator", ["first-fit", "best-fit"])
def test_per_queue_passes_schedule_exactly_like_the_walk_over_every_job(
    mode: str, allocator: str, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The dispatcher's per-queue path (routed queue agent's lists and columns) against
    the walk over every waiting job, on an overloaded workload with reconfigurations."""
    from market_hpc.policies.queues.dispatchers import QueueDispatcher

    jobs = random_workload(41, PLATFORM, [(1, 0, 0, 0)], count=400)
    jobs = [
        Job(j.job_id, j.submit / 8, j.run_time, j.estimate, units=j.units) for j in jobs
    ]  # 8x the load
    schedule = [(200.0, CONFIGS["partitioned"]), (500.0, CONFIGS[mode])]
    frames = []
    monkeypatch.setattr(QueueDispatcher, "columns_from", 0)  # the columns' scan from the first job
    for per_queue in (True, False):
        monkeypatch.setattr(QueueDispatcher, "per_queue", per_queue)
        frames.append(
            _run(jobs, CONFIGS[mode], allocator, reconfigurations=schedule).recorder.jobs_frame()
        )
    assert frames[0].equals(frames[1])
    assert frames[0]["wait_time"].max() > 0


@pytest.mark.parametrize("mode", ["partitioned", "hybrid"])
def test_a_moldable_job_runs_at_its_requested_size_machine_wide_when_its_partition_is_smaller(
    mode: str,
) -> None:
    # The wide queue's partition has 2 nodes (8 cores); a moldable job asking for 12 cores is
    # routed there, cannot run in it at its requested size, and runs machine-wide instead
    # (as a rigid job of 12 cores would), taking profile[12 - 1] = 10 s. A 4-core moldable
    # job of the narrow queue runs in its own partition.
    config = QueueConfig(
        QUEUES, mode=mode, partitions=(2, 2, 2, 0), pool=2 if mode == "hybrid" else 0
    )
    profile = tuple(120.0 / width for width in range(1, 13))
    jobs = [
        Job(1, 0.0, 120.0, 120.0, units=12, profile=profile),
        Job(2, 0.0, 120.0, 120.0, units=4, profile=profile[:4] + (200.0,) * 8),
    ]
    model = _run(jobs, config)
    frame = model.recorder.jobs_frame().set_index("job_id")
    assert list(frame["status"]) == ["finished", "finished"]
    held = {
        job_id: sum(units for _, units in parse_nodes(frame.loc[job_id, "nodes"]))
        for job_id in (1, 2)
    }
    assert held == {1: 12, 2: 4}
    assert list(frame["run_time"]) == [10.0, 30.0]
    lo, hi = layout(config, 8)[0][1]  # the narrow queue's nodes
    assert all(lo <= node < hi for node, _ in parse_nodes(frame.loc[2, "nodes"]))
