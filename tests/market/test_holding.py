"""The recent-arrival rule, exact resume, holding costs, look-ahead holding."""

from __future__ import annotations

import math

import pytest
from market_fixtures import fig5_jobs, market_job

from market.test_market import overload_jobs
from market_hpc.algorithms.valuecurve import StepCurve
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import NOTHING, Decision, Hold, Start


def test_only_jobs_arriving_now_trigger_holding():
    # Fig. 5: j8 arrives at t=7 and holds j5 and j2, which go back to the queue. At t=8 a
    # worthless job arrives (and is dropped), so the policy decides again with j2 and j5
    # queued and no core free. j2 alone could hold j7 profitably (120 on 3 cores against
    # j7's 60), but held jobs are not recent arrivals (spec A12/A13): no further hold.
    worthless = market_job(9, 8, (5.0,), StepCurve(1.0, 0.0))
    model = HPCModel([*fig5_jobs(), worthless], "hlrs-3x9", "maxvh")
    model.run(until=8)
    assert model.recorder.holds == 2
    assert {r.job.job_id for r in model.running_by_end} == {1, 3, 4, 6, 7, 8}
    assert model.recorder.drops == 1


class Scripted:
    """Applies given actions at given times (a test double of a dispatcher, not of the
    model: the model validates and executes every action for real)."""

    name = "scripted"

    def __init__(self, script: dict[float, tuple]) -> None:
        self.script = script

    def decide(self, view, rng) -> Decision:
        later = [t for t in self.script if t > view.time]
        actions = self.script.get(view.time, ())
        if not actions and not later:
            return NOTHING
        return Decision(tuple(actions), wake_at=min(later) if later else None)


PROFILE = (120.0, 60.0, 40.0, 30.0, 24.0)
SCRIPT = {
    0.0: (Start(1, ((0, 4),)),),  # RT(4) = 30
    10.0: (Hold(1),),  # 10/30 of the work done
    20.0: (Start(1, ((0, 2),)),),  # RT(2) = 60
    30.0: (Hold(1),),  # + 10/60: half done
    40.0: (Start(1, ((1, 5),)),),  # RT(5) = 24: ceil(0.5 x 24) = 12 left
    100.0: (Start(2, ((2, 1),)),),  # job 2 waits meanwhile so the model keeps deciding
}


def scripted_run(**costs: float):
    job = market_job(1, 0, PROFILE, StepCurve(100.0, 1_000.0))
    filler = market_job(2, 0, (1.0,), StepCurve(1.0, 1_000.0))
    model = HPCModel([job, filler], "hlrs-3x9", policy=Scripted(SCRIPT), **costs)
    model.run()
    segments = model.recorder.segments_frame()
    return segments[segments.job_id == 1], model.recorder.jobs_frame().set_index("job_id").loc[1]


def test_resume_keeps_exactly_the_work_done():
    segments, job = scripted_run()
    assert segments.progress_before.tolist() == pytest.approx([0.0, 1 / 3, 0.5])
    assert segments.progress_after.tolist() == pytest.approx([1 / 3, 0.5, 1.0])
    assert job.end_time == 52 and job.hold_count == 2 and job.status == "finished"


def test_holding_costs_delay_resumes_and_lose_work():
    _, job = scripted_run(resume_seconds=3.0)
    # the second segment runs 7 of its 10 time units after a 3-unit resume: 1/3 + 7/60
    left = 1 - (1 / 3 + 7 / 60)
    assert job.end_time == 40 + 3 + math.ceil(left * 24 - 1e-9)
    segments, job = scripted_run(hold_progress_loss=0.5)
    assert segments.progress_after.tolist()[:2] == pytest.approx([1 / 6, 1 / 6 + 1 / 12])
    assert job.end_time == 40 + 18


def test_lookahead_holds_when_the_arrival_cannot_wait():
    # In Fig. 5 every running job runs for hundreds of time units: j8 earns nothing by
    # waiting, so the look-ahead holds exactly what the seed's rule holds.
    model = HPCModel(fig5_jobs(), "hlrs-3x9", "maxvlh")
    model.run(until=7)
    assert model.recorder.holds == 2
    assert {r.job.job_id: r.allocation for r in model.running_by_end}[8] == ((1, 6),)


def test_lookahead_waits_when_cores_free_up_soon_enough():
    # One 4-core node. A (worth 300) runs from t=2 to t=6; B (worth 400 if done within 40)
    # arrives at t=5. The seed's rule holds A (400 > 300). Waiting one time unit costs B
    # nothing, so the look-ahead does not hold: B starts at 6, and both earn their value.
    running = market_job(1, 2, (16.0, 8.0, 6.0, 4.0), StepCurve(300.0, 4.0))
    arrival = market_job(2, 5, (40.0, 20.0, 14.0, 10.0), StepCurve(400.0, 40.0))
    seed = HPCModel([running, arrival], "nodes=1,cores=4", "maxvh")
    seed.run()
    assert seed.recorder.holds == 1 and seed.recorder.profit == 400
    ahead = HPCModel([running, arrival], "nodes=1,cores=4", "maxvlh")
    ahead.run()
    frame = ahead.recorder.jobs_frame().set_index("job_id")
    assert ahead.recorder.holds == 0 and ahead.recorder.profit == 700
    assert frame.loc[2, "start_time"] == 6


@pytest.mark.parametrize("policy", ["sjqlh", "maxvlh", "maxvdlh", "minvrlh"])
def test_lookahead_holds_a_job_at_most_twice(policy):
    seed_policy = policy.replace("lh", "h")
    repeated = 0
    for seed in range(1, 9):
        jobs = overload_jobs(seed=seed, n=60)
        base = HPCModel(jobs, "hlrs-3x9", seed_policy)
        base.run()
        repeated += int((base.recorder.jobs_frame().hold_count > 2).sum())
        model = HPCModel(jobs, "hlrs-3x9", policy)
        model.run()
        frame = model.recorder.jobs_frame()
        assert frame.hold_count.max() <= 2
        assert model.recorder.holds == frame.hold_count.sum()
    assert repeated > 0  # the seed's rule does hold jobs three times and more on these workloads


def rigid_resume_end(script: dict[float, tuple], run_time: float, **costs: float) -> float:
    """End time of one rigid 2-core job driven by ``script`` on one 4-core node (job 2,
    never started, keeps the queue non-empty so the model decides at every scripted time)."""
    job = Job(1, 0.0, run_time, run_time + 10.0, units=2)
    waiting = Job(2, 0.0, 1.0, 1.0, units=4)
    model = HPCModel([job, waiting], "nodes=1,cores=4", policy=Scripted(script), **costs)
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")
    assert frame.loc[1, "status"] == "finished" and frame.loc[1, "hold_count"] == 1
    return float(frame.loc[1, "end_time"])


def test_resume_cost_paid_at_progress_zero():
    # Held at the instant it started (progress 0), resumed at 10: the resume
    # still costs 3 before the 40 of work (the overhead used to come after an early return).
    held_at_start = {0.0: (Start(1, ((0, 2),)), Hold(1)), 10.0: (Start(1, ((0, 2),)),)}
    assert rigid_resume_end(held_at_start, 40.0) == 10 + 40
    assert rigid_resume_end(held_at_start, 40.0, resume_seconds=3.0) == 10 + 3 + 40
    # All work lost at the hold (hold_progress_loss = 1): progress is 0 again, still paid.
    lost = {0.0: (Start(1, ((0, 2),)),), 5.0: (Hold(1),), 10.0: (Start(1, ((0, 2),)),)}
    assert rigid_resume_end(lost, 40.0, hold_progress_loss=1.0) == 10 + 40
    assert rigid_resume_end(lost, 40.0, resume_seconds=3.0, hold_progress_loss=1.0) == 10 + 3 + 40


def test_resume_cost_paid_at_progress_one_minus_epsilon():
    # Held 2^-20 before its end: progress 1 - 2^-26 (exact in binary), 2^-20 of work left.
    tiny = 2.0**-20
    almost = {0.0: (Start(1, ((0, 2),)),), 64.0 - tiny: (Hold(1),), 100.0: (Start(1, ((0, 2),)),)}
    assert rigid_resume_end(almost, 64.0) == 100 + tiny
    assert rigid_resume_end(almost, 64.0, resume_seconds=3.0) == 100 + 3 + tiny
