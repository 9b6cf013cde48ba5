"""The burst buffer as a scheduled resource (seed 003): capacity invariants on every run,
multi-resource EASY, starvation, holds releasing the pool, synthesis and configuration."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from invariants import assert_schedule_invariants, random_workload

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, MarketHpcError, UnknownNameError
from market_hpc.experiment import config_from_dict, simulate
from market_hpc.policies import Decision, Hold, Start, make_policy
from market_hpc.policies.bbsched.schedulers import BB_SCHEDULERS
from market_hpc.policies.registry import allocators_for, scheduler_names
from market_hpc.workload.burst_buffer import BurstBufferRule, synthesize

BB_PLATFORMS = {
    "single-core": ("nodes=8,cores=1,bb=100", [(1, 0, 0, 0)]),
    "multi-core": ("nodes=6,cores=4,bb=100", [(2, 0, 0, 0), (1, 0, 0, 0)]),
}
CHECKED = (*BB_SCHEDULERS, "easy", "fifo", "sjf")


def bb_workload(seed: int, platform: str, units: list[tuple[int, ...]]) -> list[Job]:
    """``random_workload`` with burst-buffer requests: 60 % of jobs, some over the pool."""
    rng = np.random.default_rng(seed + 1000)
    jobs = []
    for job in random_workload(seed, platform, units, count=40):
        bb = float(rng.integers(1, 80)) if rng.random() < 0.6 else 0.0
        if rng.random() < 0.03:
            bb = 150.0  # larger than the pool: rejected on arrival
        jobs.append(
            Job(job.job_id, job.submit, job.run_time, job.estimate, job.units, job.unit, bb)
        )
    return jobs


@pytest.mark.parametrize("exclusive", [False, True], ids=["core-level", "exclusive"])
@pytest.mark.parametrize("scheduler", CHECKED)
def test_bb_capacity_invariants(scheduler: str, exclusive: bool) -> None:
    for name, (platform, units) in BB_PLATFORMS.items():
        for seed in (1, 2):
            jobs = bb_workload(seed, platform, units)
            frames = []
            for _ in range(2):
                policy = make_policy(
                    scheduler,
                    "first-fit",
                    scheduler_params={"generations": 60} if scheduler == "bbsched" else None,
                )
                model = HPCModel(jobs, platform, policy=policy, exclusive=exclusive, seed=5)
                model.run()
                assert model.free_bb == model.platform.burst_buffer, f"{name}: pool not returned"
                frames.append(model.recorder.jobs_frame())
            assert_schedule_invariants(jobs, frames[0], platform, exclusive=exclusive)
            pd.testing.assert_frame_equal(
                frames[0], frames[1], obj=f"{scheduler} {name} seed {seed}"
            )


def test_easy_reserves_burst_buffer_for_the_head() -> None:
    """The head needs BB held by a running job: a long backfill candidate that would take
    that BB past the shadow time must wait, a short one may go."""
    jobs = [
        Job(1, 0.0, 100.0, 100.0, units=2, bb=80.0),  # holds 80 of 100 GB until t=100
        Job(2, 1.0, 50.0, 50.0, units=2, bb=90.0),  # head: needs 90 GB -> shadow t=100, extra 10
        Job(3, 1.0, 500.0, 500.0, units=1, bb=20.0),  # fits now, runs past the shadow, takes BB
        Job(4, 1.0, 50.0, 50.0, units=1, bb=20.0),  # fits now, ends before the shadow
    ]
    for scheduler in ("easy", "bb-baseline"):
        model = HPCModel(jobs, "nodes=8,cores=1,bb=100", scheduler=scheduler, seed=1)
        model.run()
        start = model.recorder.jobs_frame().set_index("job_id")["start_time"]
        assert start[2] == 100.0, scheduler
        assert start[4] == 1.0, scheduler
        assert start[3] >= 100.0, scheduler  # would have delayed the head in BB


STARVING_JOBS = [
    Job(1, 0.0, 100.0, 100.0, units=6),
    Job(2, 0.0, 100.0, 100.0, units=5),
    Job(3, 0.0, 100.0, 100.0, units=5),
    Job(4, 50.0, 100.0, 100.0, units=5),
    Job(5, 50.0, 100.0, 100.0, units=5),
]


def _starts(scheduler: str, **params: object) -> tuple[dict[int, float], dict[str, float]]:
    policy = make_policy(scheduler, "first-fit", scheduler_params=params)
    model = HPCModel(STARVING_JOBS, "nodes=10,cores=1,bb=10", policy=policy, seed=1)
    model.run()
    return model.recorder.jobs_frame().set_index("job_id")["start_time"].to_dict(), policy.stats


@pytest.mark.parametrize(("bound", "by"), [(1, "invocations"), (60.0, "seconds")])
def test_starving_job_is_forced_into_the_selection(bound: float, by: str) -> None:
    """Constrained_CPU prefers two 5-node jobs to the 6-node job 1. Invocations: t=0
    (J2+J3 start, J1 passed over: 1 invocation in the window), t=50 (J4, J5 arrive,
    nothing fits: 2 invocations), t=100 (J2, J3 end). With a bound of 1 invocation (or
    60 s since J1 first entered a window) J1 is starving at t=100 and is fixed in,
    although the unforced choice, J4+J5 (10 nodes), leaves it out: one forced start."""
    forced, stats = _starts("bb-constrained-cpu", starvation=bound, starvation_by=by)
    assert forced[2] == forced[3] == 0.0
    assert forced[1] == 100.0 and forced[4] == forced[5] == 200.0
    # J4 and J5 are starving too at t=200, but would start then anyway: not counted
    assert stats["forced_starts"] == 1 and stats["forced_jobs"] == 3 and stats["forced_blocks"] == 0
    free, stats = _starts("bb-constrained-cpu", starvation=2, starvation_by="invocations")
    assert free[1] == 200.0 and free[4] == free[5] == 100.0  # J1 had 2 invocations: not > 2
    assert stats["forced_starts"] == 0  # forced at t=200 (3 > 2) when it starts anyway


def test_forcing_that_changes_nothing_is_not_counted() -> None:
    """Under the baseline J1 starts at t=0; J2 and J3 wait two invocations and are starving
    at t=100 with a bound of 1, but the base order starts them then anyway (as J4 and J5
    at t=200)."""
    starts, stats = _starts("bb-baseline", starvation=1, starvation_by="invocations")
    assert starts[1] == 0.0 and starts[2] == starts[3] == 100.0
    assert (
        stats["forced_jobs"] == 4 and stats["forced_starts"] == 0
    )  # J2, J3 at t=100; J4, J5 at t=200


def test_starving_job_that_does_not_fit_blocks_the_optimisation() -> None:
    """t=0: Constrained_CPU starts J2+J3 (10 nodes) over J1 (6). t=1: J4 arrives, nothing
    fits. t=100: J2 ends, 5 nodes free; J1 (2 invocations > 1) is starving and does not
    fit, so no selection runs: J1 heads the queue and J4 (ending at 600, past J1's shadow
    time 400, and 5 nodes > the 4 extra) may not backfill. Unbounded, J4 starts at 100
    and J1 waits for it until 600."""
    jobs = [
        Job(1, 0.0, 100.0, 100.0, units=6),
        Job(2, 0.0, 100.0, 100.0, units=5),
        Job(3, 0.0, 400.0, 400.0, units=5),
        Job(4, 1.0, 500.0, 500.0, units=5),
    ]
    starts = {}
    for bound in (1, 1000):
        policy = make_policy(
            "bb-constrained-cpu",
            "first-fit",
            scheduler_params={"starvation": bound, "starvation_by": "invocations"},
        )
        model = HPCModel(jobs, "nodes=10,cores=1,bb=10", policy=policy, seed=1)
        model.run()
        starts[bound] = model.recorder.jobs_frame().set_index("job_id")["start_time"].to_dict()
        assert starts[bound][2] == starts[bound][3] == 0.0
        assert (policy.stats["forced_blocks"] >= 1) == (bound == 1)
    assert starts[1][1] == 400.0 and starts[1][4] == 500.0
    assert starts[1000][4] == 100.0 and starts[1000][1] == 600.0


class _StartThenHold:
    name = "start-then-hold"

    def decide(self, view, rng):  # type: ignore[no-untyped-def]
        if view.running:
            return Decision((Hold(view.running[0].job.job_id),))
        job = view.queue[0]
        return Decision((Start(job.job_id, ((0, job.units),)),))


def test_held_job_releases_its_burst_buffer() -> None:
    jobs = [Job(1, 0.0, 100.0, 100.0, units=1, bb=70.0), Job(2, 5.0, 1.0, 1.0, units=1)]
    model = HPCModel(jobs, "nodes=1,cores=1,bb=100", policy=_StartThenHold(), seed=1)
    model.step()
    assert model.free_bb == 30.0
    model.step()  # t=5: job 2 arrives, job 1 is held
    assert model.free_bb == 100.0 and not model.running_by_end


# ---------------------------------------------------------------- synthesis
def test_synthesis_shares_ranges_and_determinism() -> None:
    jobs = [Job(i, float(i), 10.0, 10.0, units=2) for i in range(1, 401)]
    for scenario, share, low in (
        ("S1", 0.5, 5000),
        ("S2", 0.75, 5000),
        ("S3", 0.5, 20000),
        ("S4", 0.75, 20000),
    ):
        rule = BurstBufferRule(scenario, "cori")
        out, report = synthesize(jobs, rule, 120, seed=3)
        requests = np.array([j.bb for j in out])
        assert (requests > 0).sum() == round(share * len(jobs)) == report["requesting"]
        scale = 120 / 12076
        positive = requests[requests > 0]
        assert positive.min() >= np.floor(low * scale) and positive.max() <= np.ceil(65000 * scale)
        again, _ = synthesize(jobs, rule, 120, seed=3)
        assert [j.bb for j in again] == requests.tolist()
    other, _ = synthesize(jobs, BurstBufferRule("S1", "cori"), 120, seed=4)
    first, _ = synthesize(jobs, BurstBufferRule("S1", "cori"), 120, seed=3)
    assert [j.bb for j in other] != [j.bb for j in first]


def test_rule_validation() -> None:
    with pytest.raises(UnknownNameError, match="S5"):
        BurstBufferRule("S5")
    with pytest.raises(UnknownNameError, match="theta"):
        BurstBufferRule("S1", "summit")
    with pytest.raises(ConfigError, match="share"):
        BurstBufferRule("S1", share=1.5)


def _scenario(trace: str, **policy: object) -> dict:  # type: ignore[type-arg]
    return {
        "platform": "nodes=64,cores=1",
        "seed": 2,
        "workload": {
            "trace": trace,
            "first_n": 150,
            "burst_buffer": {"scenario": "S2", "machine": "theta"},
        },
        "policy": {
            "scheduler": "bbsched",
            "window": {"size": 12, "order": "wfp", "generations": 50},
            **policy,
        },
    }


@pytest.fixture
def small_trace(tmp_path):  # type: ignore[no-untyped-def]
    from market_hpc.workload.swf import write_swf

    rng = np.random.default_rng(0)
    jobs = [
        Job(i, float(i * 30), float(rng.integers(10, 2000)), 2000.0, units=int(rng.integers(1, 40)))
        for i in range(1, 201)
    ]
    path = tmp_path / "small.swf"
    write_swf(jobs, path)
    return str(path)


def test_scenario_runs_with_bb_and_reports_its_utilisation(small_trace: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = config_from_dict(_scenario(small_trace))
    result = simulate(config)
    summary = result.summary
    assert 0 < summary["utilisation_bb"] <= 1 and 0 < summary["load_ratio_bb"] <= 1
    assert summary["policy"] == "bbsched+first-fit" and summary["policy_invocations"] > 0
    assert (result.jobs["bb"] > 0).sum() == round(0.75 * 150)
    assert result.timeseries["used_bb"].max() <= 64 * 1_260_498 / 4392 + 1
    assert result.workload_report["burst_buffer"]["capacity_gb"] == round(
        1_800_000 * 913.5 / 1304.5 * 64 / 4392
    )
    out = result.write(tmp_path / "out")
    assert "utilisation_bb" in json.loads((out / "summary.json").read_text())
    again = simulate(config)
    pd.testing.assert_frame_equal(result.jobs, again.jobs)


def test_bb_request_larger_than_the_pool_is_rejected_at_load(small_trace: str) -> None:
    data = _scenario(small_trace)
    data["workload"]["burst_buffer"]["capacity_gb"] = 100.0
    with pytest.raises(
        ConfigError,
        match=r"job \d+ requests \d+ GB of burst buffer, but the platform's pool holds 100",
    ):
        simulate(config_from_dict(data))


def test_window_parameters_are_validated(small_trace: str) -> None:
    with pytest.raises(ConfigError, match="order"):
        simulate(config_from_dict(_scenario(small_trace, window={"order": "sjf"})))
    with pytest.raises(ConfigError, match="policy.window.sizes"):
        config_from_dict(_scenario(small_trace, window={"sizes": 3}))
    with pytest.raises(ConfigError, match="window must be in 1..62"):
        make_policy("bb-weighted", "first-fit", scheduler_params={"window": 63})
    assert (
        make_policy("bb-constrained-bb", "first-fit", scheduler_params={"window": 50}).window == 50
    )


RIGID = [name for name in scheduler_names() if "first-fit" in allocators_for(name)]


@pytest.mark.parametrize("scheduler", [name for name in RIGID if name not in CHECKED])
def test_every_rigid_scheduler_keeps_the_burst_buffer_pool(scheduler: str) -> None:
    """Schedulers that start several jobs in one pass must count the burst buffer those
    starts take (PRB, EBF and the queue dispatchers once asked the allocator with the
    pool as it was before the pass, and the model rejected the second start)."""
    allocators = [name for name in ("first-fit", "balanced") if name in allocators_for(scheduler)]
    for allocator in allocators:
        for name, (platform, units) in BB_PLATFORMS.items():
            jobs = bb_workload(3, platform, units)
            model = HPCModel(jobs, platform, policy=make_policy(scheduler, allocator), seed=5)
            model.run()
            assert model.free_bb == model.platform.burst_buffer, f"{name}: pool not returned"
            assert_schedule_invariants(jobs, model.recorder.jobs_frame(), platform, exclusive=False)


@pytest.mark.parametrize("scheduler", ["prb", "ebf", "queues-shared"])
def test_two_jobs_that_each_fit_the_pool_but_not_together_start_one_after_the_other(
    scheduler: str,
) -> None:
    jobs = [
        Job(1, 0.0, 100.0, 100.0, units=1, bb=60.0),
        Job(2, 0.0, 100.0, 100.0, units=1, bb=60.0),
        Job(3, 0.0, 10.0, 10.0, units=1, bb=30.0),
    ]
    model = HPCModel(
        jobs, "nodes=8,cores=1,bb=100", policy=make_policy(scheduler, "first-fit"), seed=1
    )
    model.run()
    start = model.recorder.jobs_frame().set_index("job_id")["start_time"].to_dict()
    assert start[1] == 0.0
    assert start[2] == 100.0  # waits for job 1's 60 GB
    assert start[3] in (0.0, 100.0)


# ------------------------------------------------------------- target load
def test_target_load_sizes_the_pool_for_the_offered_bb_load() -> None:
    """4,000 jobs of 100 s submitted over 40,000 s on a 100-processor system: S4 on the
    Theta-like range offers, in expectation, 0.75 x E[request] x 400,000 / (pool x
    40,000); the pool sized for 0.9 gives a realised S4 load near 0.9, S2 (smaller
    requests, same pool) less, and the node load is 4,000 x 2 x 100 / (100 x 39,990)."""
    from market_hpc.workload.burst_buffer import offered_loads

    jobs = [Job(i + 1, i * 10.0, 100.0, 100.0, units=2) for i in range(4000)]
    rule = BurstBufferRule("S4", "theta", target_load=0.9)
    pool = rule.target_capacity(jobs, 100)
    s4, _ = synthesize(jobs, rule, 100, seed=2)
    loads = offered_loads(s4, 100, pool)
    assert loads["offered_bb_load"] == pytest.approx(0.9, rel=0.05)
    assert loads["offered_node_load"] == pytest.approx(4000 * 2 * 100 / (100 * 39990))
    s2, _ = synthesize(jobs, BurstBufferRule("S2", "theta", target_load=0.9), 100, seed=2)
    assert (
        BurstBufferRule("S2", "theta", target_load=0.9).target_capacity(jobs, 100) == pool
    )  # one pool
    assert offered_loads(s2, 100, pool)["offered_bb_load"] < 0.75


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"scenario": "none", "target_load": 0.9}, "needs a scenario"),
        ({"scenario": "S4", "target_load": 0.9, "capacity_gb": 10.0}, "not both"),
        (
            {"scenario": "S4", "target_load": 0.0},
            "workload.burst_buffer.target_load: got 0.0; valid: a finite number > 0",
        ),
        ({"scenario": "S4", "target_load": 0.9, "target_scenario": "S9"}, "valid"),
    ],
)
def test_target_load_validation(params: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(MarketHpcError, match=message):
        BurstBufferRule(**params)
