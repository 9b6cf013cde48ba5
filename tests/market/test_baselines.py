"""The fair EASY baseline molds jobs like the market."""

from __future__ import annotations

import pytest
from market_fixtures import market_job

from market.test_market import overload_jobs
from market_hpc.algorithms.valuecurve import StepCurve
from market_hpc.core.model import HPCModel
from market_hpc.errors import ConfigError

CURVE = StepCurve(100.0, 10_000.0)


def starts(blocker_end: float) -> dict[int, tuple[float, str]]:
    # A holds 3 of 4 cores until ``blocker_end``; B asks for 4 cores (10 on 4, 40 on 1).
    blocker = market_job(1, 0, (3 * blocker_end, 1.5 * blocker_end, blocker_end), CURVE)
    wide = market_job(2, 0, (40.0, 20.0, 14.0, 10.0), CURVE)
    model = HPCModel([blocker, wide], "nodes=1,cores=4", "easy-mold")
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")
    return {j: (frame.loc[j, "start_time"], frame.loc[j, "nodes"]) for j in (1, 2)}


def test_head_starts_narrow_when_that_finishes_before_its_reservation():
    # reservation at t=100 would end at 110; one core now ends at 40
    assert starts(100.0)[2] == (0.0, "0:1")


def test_head_keeps_its_reservation_when_waiting_finishes_sooner():
    # reservation at t=5 ends at 15; one core now would end at 40
    assert starts(5.0)[2] == (5.0, "0:4")


def test_easy_mold_runs_every_job_to_completion_without_holds():
    for seed in (1, 2, 3):
        model = HPCModel(overload_jobs(seed, n=50), "hlrs-3x9", "easy-mold")
        model.run()
        frame = model.recorder.jobs_frame()
        assert (frame.status == "finished").all() and model.recorder.holds == 0


def test_easy_mold_needs_moldable_jobs():
    from market_hpc.domain.job import Job

    with pytest.raises(
        ConfigError,
        match=r"scheduler 'easy-mold' cannot run this workload: it does not run "
        r"rigid jobs \(no speedup profile\): 1 job \(e\.g\. job 1\)",
    ):
        HPCModel([Job(1, 0, 10, 10)], "hlrs-3x9", "easy-mold")  # by name: refused before the run
    from market_hpc.policies import make_policy

    with pytest.raises(
        ConfigError, match="easy-mold needs moldable jobs"
    ):  # the policy's own guard
        HPCModel([Job(1, 0, 10, 10)], "hlrs-3x9", policy=make_policy("easy-mold")).run()


def test_easy_mold_counts_units_of_several_cores():
    # 2 nodes x 4 cores; job 1 asks for 3 units of 2 cores (6 cores, spread over nodes) and
    # job 2 for 2 units of 2 cores: after job 1 only 2 cores (one unit) are free, so job 2
    # starts molded to 1 unit (profile: 30 s on 1 unit, 20 s on 2) and nothing over-allocates
    import dataclasses

    first = dataclasses.replace(
        market_job(1, 0, (30.0, 20.0, 10.0), CURVE),
        unit=(2, 0, 0, 0),
        payload={"value_curve": CURVE, "spans_nodes": True},
    )
    second = dataclasses.replace(market_job(2, 0, (30.0, 20.0), CURVE), unit=(2, 0, 0, 0))
    model = HPCModel([first, second], "nodes=2,cores=4", "easy-mold")
    model.run()
    frame = model.recorder.jobs_frame().set_index("job_id")
    assert frame.loc[1, "units"] == 3 and frame.loc[1, "start_time"] == 0.0
    assert frame.loc[2, "units"] == 1 and frame.loc[2, "start_time"] == 0.0
    assert frame.loc[2, "end_time"] == 30.0
