"""Information and molding parity of the all-families workload (issue 45): the market decides
from the same estimates as every other family (``market_knowledge = "estimate"``) while the
clock runs the recorded run times, and runs jobs at their request unless ``molding = true``.
Each case is small enough to check by hand."""

from __future__ import annotations

import pytest

from market_hpc.core.model import HPCModel
from market_hpc.core.predictors import predicted
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, InvalidNumberError, PolicyError, UnknownNameError
from market_hpc.policies.base import Decision, Start
from market_hpc.workload.all_families import AllFamiliesRule, with_value
from market_hpc.workload.market_rule import NARROWER_TIME, MarketRule

FLAT = MarketRule(serial_fraction=0.0)  # perfect speed-up: RT(c) = T1 / c, easy to check by hand


def run(
    jobs: list[Job],
    scheduler: str,
    platform: str = "nodes=1,cores=4",
    allocator: str | None = None,
    **options: object,
) -> dict[int, dict[str, object]]:
    model = HPCModel(
        jobs, platform=platform, scheduler=scheduler, allocator=allocator, seed=1, **options
    )
    model.run()
    frame = model.jobs_frame().set_index("job_id")
    return {int(job_id): row for job_id, row in frame.to_dict("index").items()}


def test_the_told_profile_and_curve_come_from_the_estimate_the_clock_from_the_run_time() -> None:
    job = with_value(Job(1, 0.0, 100.0, 400.0, units=4), FLAT, "estimate", molding=True)
    assert job.profile == (
        1600.0,
        800.0,
        pytest.approx(533.333, abs=1e-3),
        400.0,
    )  # the estimate's Amdahl
    assert job.run_profile == (
        400.0,
        200.0,
        pytest.approx(133.333, abs=1e-3),
        100.0,
    )  # the recorded run time's
    curve = job.payload["value_curve"]
    assert curve.max_value == pytest.approx(4 * 400.0 / 3600.0)  # 4 cores x the requested 400 s
    assert curve.plateau_end == 400.0 + FLAT.plateau_slack
    recorded = with_value(Job(1, 0.0, 100.0, 400.0, units=4), FLAT, "recorded", molding=True)
    assert (
        recorded.profile[-1] == 100.0 and recorded.run_profile is None
    )  # today's design-time profile
    assert recorded.payload["value_curve"].max_value == pytest.approx(4 * 100.0 / 3600.0)


def test_without_molding_every_narrower_width_is_past_the_value_curve() -> None:
    job = with_value(Job(1, 0.0, 100.0, 400.0, units=3), FLAT, "estimate", molding=False)
    assert job.profile == (NARROWER_TIME, NARROWER_TIME, 400.0)
    assert job.run_profile == (NARROWER_TIME, NARROWER_TIME, 100.0)
    assert job.payload["molding"] is False and job.payload["c_star"] == 3
    assert job.payload["value_curve"].value_at(NARROWER_TIME) == 0.0
    # the curve does not depend on molding: the same jobs are worth the same on both tracks
    molded = with_value(Job(1, 0.0, 100.0, 400.0, units=3), FLAT, "estimate", molding=True)
    assert molded.payload["value_curve"] == job.payload["value_curve"]


def test_market_job_runs_recorded_time_is_expected_at_estimate_and_earns_its_real_end() -> None:
    # one 4-core job: run 100 s, estimate 400 s; minVR starts it at 0 on all 4 cores
    job = with_value(Job(1, 0.0, 100.0, 400.0, units=4), FLAT, "estimate", molding=False)
    model = HPCModel([job], platform="nodes=1,cores=4", scheduler="minvr", seed=1)
    model.step()
    running = next(iter(model.running_by_end))
    assert (running.start, running.est_end) == (0.0, 400.0)  # expected at its estimate...
    model.run()
    row = model.jobs_frame().set_index("job_id").loc[1]
    assert (row.start_time, row.end_time) == (0.0, 100.0)  # ...it ends at its recorded run time
    assert row.value == pytest.approx(job.payload["value_curve"].value_at(100.0))


def test_rigid_families_expect_a_moldable_job_at_its_estimate_too() -> None:
    # EASY used to read the profile's (real) end of a running market-rule job; now its estimate
    job = with_value(Job(1, 0.0, 100.0, 400.0, units=2), FLAT, "estimate", molding=False)
    model = HPCModel([job], platform="nodes=1,cores=4", scheduler="easy", seed=1)
    model.step()
    assert next(iter(model.running_by_end)).est_end == 400.0
    model.run()
    assert model.jobs_frame().end_time.tolist() == [100.0]


def test_easy_backfills_on_the_estimate_not_the_recorded_end() -> None:
    # 4 cores. Job 1: 2 cores, run 100 s, estimate 1,000 s, from 0. Job 2 (4 cores) arrives at
    # 1 and reserves from job 1's expected end. Job 3 (2 cores, estimate 200 s) arrives at 2:
    # told the estimate (1,000) it backfills (2 + 200 <= 1,000); knowing the recorded end
    # (100, today's "recorded" profiles) it does not (202 > 100, no extra cores).
    def jobs(knowledge: str) -> list[Job]:
        return [
            with_value(Job(1, 0.0, 100.0, 1000.0, units=2), FLAT, knowledge, molding=False),
            with_value(Job(2, 1.0, 50.0, 60.0, units=4), FLAT, knowledge, molding=False),
            with_value(Job(3, 2.0, 150.0, 200.0, units=2), FLAT, knowledge, molding=False),
        ]

    told = run(jobs("estimate"), "easy")
    assert [told[i]["start_time"] for i in (1, 2, 3)] == [0.0, 152.0, 2.0]
    recorded = run(jobs("recorded"), "easy")
    assert [recorded[i]["start_time"] for i in (1, 2, 3)] == [0.0, 100.0, 150.0]


def test_without_molding_the_market_waits_for_the_requested_size() -> None:
    # 4 cores. Job 1 (2 cores, 100 s) starts at 0. Job 2 asks for 4 cores (400 s on 4) at 1:
    # molding lets minVR start it on the 2 free cores at 1 (800 s); without, it waits until 100.
    def jobs(molding: bool) -> list[Job]:
        return [
            with_value(Job(1, 0.0, 100.0, 100.0, units=2), FLAT, "estimate", molding),
            with_value(Job(2, 1.0, 400.0, 400.0, units=4), FLAT, "estimate", molding),
        ]

    molded = run(jobs(True), "minvr")
    assert (molded[2]["start_time"], molded[2]["units"], molded[2]["end_time"]) == (1.0, 2, 801.0)
    rigid = run(jobs(False), "minvr")
    assert (rigid[2]["start_time"], rigid[2]["units"], rigid[2]["end_time"]) == (100.0, 4, 500.0)


def test_the_core_refuses_a_narrower_start_of_a_job_that_may_not_mold() -> None:
    job = with_value(Job(1, 0.0, 100.0, 100.0, units=4), FLAT, "estimate", molding=False)

    class Narrow:
        name = "narrow"

        def decide(self, view, rng):  # type: ignore[no-untyped-def]
            queued = list(view.queue)
            return Decision(tuple(Start(j.job_id, ((0, 2),)) for j in queued))

    model = HPCModel([job], platform="nodes=1,cores=4", scheduler="easy", seed=1)
    model.manager.policy = Narrow()  # type: ignore[assignment]
    with pytest.raises(
        PolicyError, match=r"job 1 runs at its requested size \(molding = false\): needs 4 units"
    ):
        model.run()


def test_a_predictor_tells_the_market_a_profile_scaled_to_its_prediction() -> None:
    job = with_value(Job(1, 0.0, 100.0, 400.0, units=2), FLAT, "estimate", molding=True)
    real = predicted(job, 100.0)  # policy.predictor = "real"
    assert real.profile == job.run_profile and real.estimate == 100.0
    assert (
        real.payload["value_curve"] == job.payload["value_curve"]
    )  # the user's declared value stays
    rigid = predicted(
        with_value(Job(1, 0.0, 100.0, 400.0, units=2), FLAT, "estimate", molding=False), 100.0
    )
    assert rigid.profile == (NARROWER_TIME, 100.0)


def test_options_are_checked() -> None:
    with pytest.raises(
        UnknownNameError,
        match="workload.all_families.market_knowledge 'oracle'.*estimate, recorded",
    ):
        AllFamiliesRule(enabled=True, market_knowledge="oracle")
    with pytest.raises(ConfigError, match="workload.all_families.molding must be true or false"):
        AllFamiliesRule(enabled=True, molding="no")  # type: ignore[arg-type]
    with pytest.raises(InvalidNumberError, match="job 1: run_profile"):
        Job(1, 0.0, 1.0, 1.0, units=2, profile=(2.0, 1.0), run_profile=(1.0,))


def test_easy_mold_spans_nodes_where_the_jobs_do_and_keeps_rigid_jobs_at_their_size() -> None:
    # 4 nodes x 1 core (KTH-like). Job 1: 3 units, 1,000 s. Job 2 at 1: 2 units, 100 s on 2.
    def jobs(molding: bool) -> list[Job]:
        return [
            with_value(Job(1, 0.0, 1000.0, 1000.0, units=3), FLAT, "estimate", molding),
            with_value(Job(2, 1.0, 100.0, 100.0, units=2), FLAT, "estimate", molding),
        ]

    molded = run(jobs(True), "easy-mold", platform="nodes=4,cores=1")
    assert (molded[1]["start_time"], molded[1]["units"]) == (
        0.0,
        3,
    )  # across 3 nodes, not on 1 core
    # job 2 on the one free core ends at 1 + 200 = 201, before its reservation would (1,000 + 100)
    assert (molded[2]["start_time"], molded[2]["units"], molded[2]["end_time"]) == (1.0, 1, 201.0)
    rigid = run(jobs(False), "easy-mold", platform="nodes=4,cores=1")
    assert [(rigid[i]["start_time"], rigid[i]["units"]) for i in (1, 2)] == [(0.0, 3), (1000.0, 2)]


def test_the_summary_counts_molded_jobs_and_jobs_past_their_estimate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate

    # 4 cores: job 1 (2 cores, run 100 > estimate 50), job 2 at 1 asking for 4 cores
    trace = tmp_path / "t.swf"
    trace.write_text(
        "1 0 -1 100 2 -1 -1 2 50 -1 1 1 -1 -1 1 -1 -1 -1\n"
        "2 1 -1 400 4 -1 -1 4 400 -1 1 1 -1 -1 1 -1 -1 -1\n"
    )

    def summary(molding: bool, scheduler: str = "minvr") -> dict[str, object]:
        run = config_from_dict(
            {
                "platform": "nodes=1,cores=4",
                "seed": 1,
                "timeseries": False,
                "workload": {
                    "trace": str(trace),
                    "all_families": {"enabled": True, "molding": molding, "bb_load": 0.5},
                },
                "policy": {"scheduler": scheduler, "allocator": "max-bid"},
            }
        )
        return simulate(run).summary

    molded = summary(True)
    assert (molded["jobs_molded"], molded["jobs_past_estimate"]) == (1, 1)
    rigid = summary(False)
    assert (rigid["jobs_molded"], rigid["jobs_past_estimate"]) == (0, 1)


def test_a_dropped_job_counts_with_its_recorded_run_time_until_the_runs_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate

    # 1 core. Job 1 runs 200,000 s from 0; job 2 (run 3,600 s) arrives at 1 and its value
    # ends (plateau 3,600 + 4 h, then a day) before job 1 does: minVR drops it. The run ends
    # at 200,000; job 2 counts as waiting 199,999 s, then running its 3,600 s.
    trace = tmp_path / "t.swf"
    trace.write_text(
        "1 0 -1 200000 1 -1 -1 1 200000 -1 1 1 -1 -1 1 -1 -1 -1\n"
        "2 1 -1 3600 1 -1 -1 1 3600 -1 1 2 -1 -1 1 -1 -1 -1\n"
    )
    run = config_from_dict(
        {
            "platform": "nodes=1,cores=1",
            "seed": 1,
            "timeseries": False,
            "workload": {"trace": str(trace), "all_families": {"enabled": True, "bb_load": 0.5}},
            "policy": {"scheduler": "minvr", "allocator": "max-bid"},
        }
    )
    result = simulate(run)
    assert result.jobs.set_index("job_id").status.to_dict() == {1: "finished", 2: "dropped"}
    summary = result.summary
    assert summary["mean_wait_all"] == pytest.approx((0.0 + 199_999.0) / 2)
    assert summary["mean_bounded_slowdown_all"] == pytest.approx(
        (1.0 + (199_999.0 + 3600.0) / 3600.0) / 2
    )
    assert summary["mean_bounded_slowdown"] == 1.0 and summary["completed_share"] == 0.5


def test_easy_mold_starts_a_job_only_when_its_burst_buffer_request_fits() -> None:
    # 4 cores, a 100 GB pool. Job 1 (1 core, 80 GB, 100 s) from 0; job 2 (1 core, 50 GB) at 1
    # has cores but not the pool: it waits until job 1 ends; job 3 (1 core, 10 GB) backfills.
    jobs = [
        with_value(Job(1, 0.0, 100.0, 100.0, units=1, bb=80.0), FLAT, "estimate", molding=True),
        with_value(Job(2, 1.0, 100.0, 100.0, units=1, bb=50.0), FLAT, "estimate", molding=True),
        with_value(Job(3, 2.0, 10.0, 10.0, units=1, bb=10.0), FLAT, "estimate", molding=True),
    ]
    rows = run(jobs, "easy-mold", platform="nodes=4,cores=1,bb=100")
    assert [rows[i]["start_time"] for i in (1, 2, 3)] == [0.0, 100.0, 2.0]
