"""WFP3, UNICEP and F1 (RLScheduler's baselines) as registered schedulers: hand-checked
orders, strict and EASY passes, and the ``learned:PATH`` family's name resolution."""

from __future__ import annotations

import pytest
from invariants import assert_schedule_invariants

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError
from market_hpc.policies import make_policy, scheduler_names
from market_hpc.policies.base import Start
from market_hpc.policies.registry import scheduler_entry
from market_hpc.rl.heuristics import f1, ordered_by, unicep, wfp3
from market_hpc.workload.synthetic import lublin_feitelson

# At t = 1000 on one 4-core node: X (4 cores, alone at t = 0) ends and A, B, C wait.
#   WFP3   A: -(999/100)^3 x 1 = -997    B: -(500/100)^3 x 4 = -500   C: -(100/10)^3 x 2 = -2000
#   UNICEP A: -999/(1e-15 x 100) = -1e16  B: -500/(2 x 100) = -2.5     C: -100/(1 x 10) = -10
#   F1     A: log10(100) x 1 + 870 log10(1) = 2   B: 8 + 870 log10(500) = 2356.1
#          C: 2 + 870 log10(900) = 2572.2
X = Job(1, 0.0, 1000.0, 1000.0, units=4)
A = Job(2, 1.0, 100.0, 100.0, units=1)
B = Job(3, 500.0, 100.0, 100.0, units=4)
C = Job(4, 900.0, 10.0, 10.0, units=2)
ORDERS = {"wfp3": (wfp3, [C, A, B]), "unicep": (unicep, [A, C, B]), "f1": (f1, [A, B, C])}


@pytest.mark.parametrize("name", sorted(ORDERS))
def test_hand_checked_orders(name: str) -> None:
    score, expected = ORDERS[name]
    assert ordered_by(score, [A, B, C], 1000.0) == expected
    assert ordered_by(score, [C, B, A], 1000.0) == expected


def test_hand_checked_scores() -> None:
    assert (
        wfp3(A, 1000.0) == pytest.approx(-(9.99**3))
        and wfp3(B, 1000.0) == -500.0
        and wfp3(C, 1000.0) == -2000.0
    )
    assert unicep(B, 1000.0) == -2.5 and unicep(C, 1000.0) == -10.0 and unicep(A, 1000.0) < -1e15
    assert f1(A, 1000.0) == pytest.approx(2.0)
    assert f1(Job(5, 0.0, 100.0, 0.0), 0.0) == pytest.approx(-1 - 870)  # 0 counts as 0.1
    assert f1(B, 1000.0) == pytest.approx(8 + 870 * 2.698970004)
    # Equal scores fall back to submit time, then job id.
    twin = Job(9, 1.0, 100.0, 100.0, units=1)
    assert ordered_by(wfp3, [twin, A], 1000.0) == [A, twin]


def _decision_at(scheduler: str, when: float) -> list[int]:
    policy = make_policy(scheduler)
    model = HPCModel([X, A, B, C], "nodes=1,cores=4", policy=policy, record_timeseries=False)
    while (view := model.next_decision()) is not None:
        decision = policy.decide(view, model.policy_rng)
        if view.time == when:
            return [action.job_id for action in decision.actions if isinstance(action, Start)]
        model.resume(decision)
    raise AssertionError(f"no decision at {when}")


@pytest.mark.parametrize(
    ("scheduler", "started"),
    [
        ("wfp3", [4, 2]),  # C, A start; B (4 cores) does not fit: stop
        ("wfp3-easy", [4, 2]),  # B is the head; nothing else waits
        ("unicep", [2, 4]),  # A, C
        ("f1", [2]),  # A; B does not fit and blocks C
        ("f1-easy", [2, 4]),  # A; B reserved at A's end (t = 1100); C ends at 1010: backfilled
    ],
)
def test_the_first_decision_after_the_blocker_ends(scheduler: str, started: list[int]) -> None:
    assert _decision_at(scheduler, 1000.0) == started


@pytest.mark.parametrize(
    "scheduler", ["wfp3", "wfp3-easy", "unicep", "unicep-easy", "f1", "f1-easy"]
)
def test_registered_and_feasible(scheduler: str) -> None:
    assert scheduler in scheduler_names()
    entry = scheduler_entry(scheduler)
    assert entry.capabilities.family == "rl baselines"
    jobs = lublin_feitelson(300, 32, seed=9, load_factor=1.4)
    model = HPCModel(
        jobs, "nodes=4,cores=8", scheduler=scheduler, allocator="best-fit", record_timeseries=False
    )
    model.run()
    assert_schedule_invariants(jobs, model.jobs_frame(), "nodes=4,cores=8")
    assert make_policy(scheduler, "best-fit").name == f"{scheduler}+best-fit"


def test_backfilling_never_does_worse_on_wait_here() -> None:
    # Not a theorem; a sanity check on one overloaded workload.
    jobs = lublin_feitelson(400, 64, seed=3, load_factor=1.5)
    waits = {}
    for name in ("f1", "f1-easy"):
        model = HPCModel(jobs, "nodes=8,cores=8", scheduler=name, record_timeseries=False)
        model.run()
        waits[name] = model.jobs_frame()["wait_time"].mean()
    assert waits["f1-easy"] <= waits["f1"]


def test_learned_family_names_resolve_and_refuse_clearly(tmp_path) -> None:  # type: ignore[no-untyped-def]
    entry = scheduler_entry(f"learned:{tmp_path}/Model.zip")
    assert entry.name == f"learned:{tmp_path}/Model.zip"  # the path keeps its case
    assert not any(name.startswith("learned") for name in scheduler_names())
    with pytest.raises(ConfigError, match="Model.zip.json is missing"):
        make_policy(f"learned:{tmp_path}/Model.zip")
    with pytest.raises(ConfigError, match="needs an argument"):
        scheduler_entry("learned:")
    (tmp_path / "bad.zip.json").write_text("{}")
    with pytest.raises(ConfigError, match="not an options file"):
        make_policy(f"learned:{tmp_path}/bad.zip")
