"""Decision timing: causes, wake-ups that never outlive their decision, the every-step
loop, and the same market model from ``policy=`` and ``scheduler=``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from market_hpc.algorithms.valuecurve import PiecewiseLinearCurve
from market_hpc.core.model import CAUSES, HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import load_platform
from market_hpc.errors import ConfigError
from market_hpc.experiment.config import config_from_dict
from market_hpc.experiment.run import build_workload
from market_hpc.policies import make_policy
from market_hpc.policies.base import NOTHING, Decision
from tests.market_fixtures import fig5_jobs, market_job, rigid_profile


def fig5_with_fading_j5() -> list[Job]:
    """Fig. 5 of Singh et al., j5's value fading: 80 when done within 500 time-units of its
    arrival (t=6), then linearly to 0 at 503.

    At t=7 maxVH holds {j5, j2} for j8 (the paper's best set); j5 has done 1 of its 500
    time-units, so its fastest completion started at t takes 499: its value is
    80 * (503 - (t + 499 - 6)) / 3, positive at t=9 (26.7), 0 at t=10. No core frees up
    before j8 ends at t=17, so j5 must be dropped at t=10, its first worthless step.
    """
    jobs = [job for job in fig5_jobs() if job.job_id != 5]
    fading = PiecewiseLinearCurve(((0, 80), (500, 80), (503, 0)))
    return sorted([*jobs, market_job(5, 6, rigid_profile(2), fading)], key=lambda j: j.job_id)


class Recording:
    """A policy wrapper that records when it decides (and may force every-step wake-ups)."""

    def __init__(self, policy, every_step_wakes: bool = False):  # type: ignore[no-untyped-def]
        self.inner, self.name, self.times = policy, policy.name, []
        self.every_step_wakes = every_step_wakes
        if not every_step_wakes:
            self.wake_after = policy.wake_after

    def decide(self, view, rng):  # type: ignore[no-untyped-def]
        self.times.append(view.time)
        decision = self.inner.decide(view, rng)
        if self.every_step_wakes:  # the paper's loop spelt with wake-ups: one at every next step
            return Decision(decision.actions, wake_at=math.floor(view.time) + 1.0)
        return decision


def test_held_job_dropped_at_its_first_worthless_step():
    model = HPCModel(fig5_with_fading_j5(), "hlrs-3x9", "maxvh")
    model.run()
    jobs = model.jobs_frame().set_index("job_id")
    assert jobs.loc[5, "status"] == "dropped" and jobs.loc[5, "end_time"] == 10
    assert jobs.loc[5, "hold_count"] == 1 and jobs.loc[2, "hold_count"] == 1
    assert model.decision_causes["wake-up"] >= 1


def test_every_decision_has_a_cause():
    model = HPCModel(fig5_with_fading_j5(), "hlrs-3x9", "maxvh")
    model.run()
    assert set(model.decision_causes) == set(CAUSES)
    assert sum(model.decision_causes.values()) == model.manager.decisions


class Scripted:
    """Starts nothing; asks for a wake-up at each arrival time listed in ``wakes``."""

    name = "scripted"

    def __init__(self, wakes: dict[float, float]) -> None:
        self.wakes, self.times = wakes, []

    def decide(self, view, rng):  # type: ignore[no-untyped-def]
        self.times.append(view.time)
        wake = self.wakes.get(view.time)
        return NOTHING if wake is None else Decision((), wake_at=wake)


@pytest.mark.parametrize(
    "wakes, decided",
    [
        ({0.0: 5.0}, [0.0, 3.0]),  # the decision at 3 supersedes the wake-up at 5
        ({0.0: 5.0, 3.0: 8.0}, [0.0, 3.0, 8.0]),
        ({0.0: 2.0}, [0.0, 2.0, 3.0]),
    ],
)
def test_a_stale_wake_up_triggers_nothing(wakes, decided):
    jobs = [Job(1, 0, 10, 10, units=1), Job(2, 3, 10, 10, units=1)]
    policy = Scripted(wakes)
    model = HPCModel(jobs, "hlrs-3x9", policy=policy)
    model.run()
    assert policy.times == decided
    assert model.steps == len(decided)  # no instant for a superseded wake-up
    assert model.decision_causes["arrival"] == 2
    assert model.decision_causes["wake-up"] == len(decided) - 2


def test_every_step_decides_at_each_time_step_as_the_papers_loop():
    every = Recording(make_policy("maxvh"))
    model = HPCModel(fig5_with_fading_j5(), "hlrs-3x9", policy=every, every_step=True)
    model.run()
    # Jobs wait from j8's arrival at t=7 (j2 until it resumes; j5 until its drop at 10)...
    waiting_until = max(model.jobs_frame()["start_time"].max(), 10)
    assert set(range(7, int(waiting_until) + 1)) <= set(every.times)
    assert model.decision_causes["every-step"] >= 3
    jobs = model.jobs_frame().set_index("job_id")
    assert jobs.loc[5, "end_time"] == 10
    # ...and the same loop spelt as a wake-up at every next step decides alike.
    spelt = Recording(make_policy("maxvh"), every_step_wakes=True)
    reference = HPCModel(fig5_with_fading_j5(), "hlrs-3x9", policy=spelt)
    reference.run()
    assert every.times == spelt.times
    assert model.jobs_frame().equals(reference.jobs_frame())


def demo_jobs(size: int = 25, seed: int = 1) -> list[Job]:
    config = config_from_dict(
        {
            "name": "t",
            "platform": "hlrs-3x9",
            "seed": seed,
            "timeseries": False,
            "workload": {"generator": "taskgraphs", "jobs": size, "load": 2.0},
            "policy": {"scheduler": "maxvh"},
        }
    )
    jobs, _ = build_workload(config, load_platform("hlrs-3x9"))
    return jobs


def test_every_step_from_config_matches_the_model_flag():
    from market_hpc.experiment.run import simulate

    base = {
        "name": "t",
        "platform": "hlrs-3x9",
        "seed": 1,
        "timeseries": False,
        "workload": {"generator": "taskgraphs", "jobs": 10, "load": 2.0},
    }
    result = simulate(
        config_from_dict({**base, "policy": {"scheduler": "minvrh", "every_step": True}})
    )
    model = HPCModel(demo_jobs(10), "hlrs-3x9", "minvrh", every_step=True)
    model.run()
    assert result.jobs.drop(columns="reason").equals(model.jobs_frame())
    assert result.summary["decisions_every_step"] == model.decision_causes["every-step"] > 0


def test_policy_and_scheduler_give_the_same_model():
    jobs = demo_jobs()
    by_name = HPCModel(jobs, "hlrs-3x9", "maxvh", hold_penalty=0.3)
    made = make_policy("maxvh", scheduler_params={"penalty": 0.3})
    by_policy = HPCModel(jobs, "hlrs-3x9", policy=made, hold_penalty=0.3)
    for model in (by_name, by_policy):
        model.run()
    assert by_name.recorder.holds > 0
    assert by_name.jobs_frame().equals(by_policy.jobs_frame())
    summary = [
        (
            m.recorder.profit,
            m.recorder.holds,
            m.recorder.penalties,
            m.manager.decisions,
            m.decision_causes,
        )
        for m in (by_name, by_policy)
    ]
    assert summary[0] == summary[1]


def test_a_policy_deciding_with_another_penalty_is_refused():
    with pytest.raises(ConfigError, match="penalty 0.0.*scheduler_params"):
        HPCModel([], "hlrs-3x9", policy=make_policy("maxvh"), hold_penalty=0.3)
    with pytest.raises(ConfigError, match="penalty 0.5"):
        HPCModel([], "hlrs-3x9", policy=make_policy("maxvh", scheduler_params={"penalty": 0.5}))
    assert np.isfinite(
        HPCModel([], "hlrs-3x9", policy=make_policy("fifo"), hold_penalty=0.3).hold_penalty
    )


def test_event_timing_decides_as_the_every_step_loop():
    """A run where a decision holds jobs and leaves cores free: the held jobs resume at the
    next step in both loops (event timing asks for that step)."""
    config = config_from_dict(
        {
            "name": "t",
            "platform": "hlrs-3x9",
            "seed": 1,
            "timeseries": False,
            "workload": {"generator": "taskgraphs", "jobs": 100, "load": 2.0, "curves": "steep"},
            "policy": {"scheduler": "minvrlh"},
        }
    )
    jobs, _ = build_workload(config, load_platform("hlrs-3x9"))
    event, every = (
        HPCModel(jobs, "hlrs-3x9", "minvrlh", every_step=flag) for flag in (False, True)
    )
    for model in (event, every):
        model.run()
    assert event.jobs_frame().equals(every.jobs_frame())
    assert event.recorder.profit == every.recorder.profit
    assert event.manager.decisions < every.manager.decisions


def test_every_step_ends_when_no_step_can_change_anything():
    jobs = [Job(1, 0, 10, 10, units=1), Job(2, 3, 10, 10, units=1)]
    policy = Scripted({})  # starts nothing: after the last arrival nothing can change
    model = HPCModel(jobs, "hlrs-3x9", policy=policy, every_step=True)
    model.run()
    assert policy.times == [0.0, 1.0, 2.0, 3.0]
    assert model.decision_causes["every-step"] == 2
    assert (model.jobs_frame()["status"] == "queued").all()
