"""``HPCModel.next_decision`` / ``resume``: a decision made outside the model (a learning
environment) is the policy's decision at the same instant, handled the same way."""

from __future__ import annotations

import pytest
from invariants import random_workload

from market_hpc.core.model import HPCModel
from market_hpc.errors import PolicyError
from market_hpc.policies import make_policy
from market_hpc.policies.base import Decision, Start
from market_hpc.workload.synthetic import lublin_feitelson


def _outside(jobs, scheduler: str, **kw) -> HPCModel:  # type: ignore[no-untyped-def]
    """Run ``scheduler`` through next_decision/resume instead of run()."""
    policy = make_policy(scheduler)
    model = HPCModel(jobs, "nodes=8,cores=8", policy=policy, **kw)
    while (view := model.next_decision()) is not None:
        assert model.decision_pending
        model.resume(policy.decide(view, model.policy_rng))
        assert not model.decision_pending
    return model


@pytest.mark.parametrize("scheduler", ["fifo", "sjf", "easy"])
@pytest.mark.parametrize("every_step", [False, True])
def test_outside_decisions_equal_the_policy_run(scheduler: str, every_step: bool) -> None:
    if every_step:  # short jobs: a tick a second while jobs wait
        jobs = random_workload(
            3, "nodes=8,cores=8", [(1, 0, 0, 0), (4, 0, 0, 0), (8, 0, 0, 0)], count=120
        )
    else:
        jobs = list(lublin_feitelson(300, 64, seed=3, load_factor=1.5))
    inside = HPCModel(jobs, "nodes=8,cores=8", scheduler=scheduler, every_step=every_step)
    inside.run()
    outside = _outside(jobs, scheduler, every_step=every_step)
    assert outside.jobs_frame().equals(inside.jobs_frame())
    assert outside.timeseries_frame().equals(inside.timeseries_frame())
    assert outside.decision_causes == inside.decision_causes
    assert (
        inside.decision_causes["every-step"] > 0
        if every_step
        else inside.decision_causes["every-step"] == 0
    )
    assert outside.steps == inside.steps
    assert not outside.running and not inside.running


def test_next_decision_until_and_mixing_with_run() -> None:
    jobs = lublin_feitelson(200, 64, seed=4)
    reference = HPCModel(jobs, "nodes=8,cores=8", scheduler="easy")
    reference.run()
    model = HPCModel(jobs, "nodes=8,cores=8", scheduler="easy")
    middle = jobs[100].submit
    while (view := model.next_decision(until=middle)) is not None:
        assert view.time <= middle
        model.resume(model.policy.decide(view, model.policy_rng))
    assert model.next_time() > middle and model.running
    model.run()  # the rest inside the model
    assert model.jobs_frame().equals(reference.jobs_frame())


def test_misuse_is_refused() -> None:
    jobs = lublin_feitelson(20, 64, seed=5)
    model = HPCModel(jobs, "nodes=8,cores=8", scheduler="fifo")
    with pytest.raises(RuntimeError, match="no decision is pending"):
        model.resume(Decision())
    view = model.next_decision()
    assert view is not None
    with pytest.raises(RuntimeError, match="a decision is pending"):
        model.next_decision()
    job = view.queue[0]
    with pytest.raises(PolicyError, match="needs"):
        model.resume(Decision((Start(job.job_id, ((0, job.units + 100),)),)))


def test_an_empty_decision_leaves_jobs_waiting_until_the_next_event() -> None:
    jobs = lublin_feitelson(30, 64, seed=6)
    model = HPCModel(jobs, "nodes=8,cores=8", scheduler="fifo")
    view = model.next_decision()
    assert view is not None
    first = view.time
    model.resume(Decision())  # start nothing
    view = model.next_decision()
    assert view is not None and view.time > first  # the next arrival
    assert len(view.queue) >= 2
