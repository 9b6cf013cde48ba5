"""Policy conformance suite: what every registered (non-market) dispatcher must do,
installed plugins' included (the pairs are read from the registry, which loads them).

For every scheduler x allocator pair: its decisions are executable (whole simulations run
on several random workloads and platforms, core-level and node-exclusive, without a
``PolicyError``), it never mutates the view it is given, and the same seed gives the same
results. Then the model's side of the contract: malformed decisions from deliberately bad
policies fail with a ``PolicyError`` naming the policy and the time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from invariants import assert_schedule_invariants, classic_pairs, random_workload, segments_of

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import NodeType, Platform
from market_hpc.errors import PolicyError
from market_hpc.policies import Decision, Drop, Hold, Start, make_policy

PAIRS = classic_pairs()
PAIR_IDS = [f"{s}+{a}" for s, a in PAIRS]
MIXED = Platform("mixed", (NodeType("thin", 3, 4), NodeType("fat", 2, 8, gpus=2)))
# (platform, unit vectors jobs draw from)
STATES = {
    "single-core": ("nodes=5,cores=1", [(1, 0, 0, 0)]),
    "multi-core": ("nodes=4,cores=4", [(2, 0, 0, 0), (1, 0, 0, 0)]),
    "heterogeneous": (MIXED, [(1, 0, 0, 0), (2, 0, 0, 0), (2, 1, 0, 0)]),
}
SEEDS = (101, 102)


def workloads() -> list[tuple[str, Platform | str, list[Job]]]:
    return [
        (f"{name}-seed{seed}", platform, random_workload(seed, platform, units, count=30))
        for name, (platform, units) in sorted(STATES.items())
        for seed in SEEDS
    ]


def snapshot(model: HPCModel) -> tuple[Any, ...]:
    """Everything a policy could corrupt through its view."""
    return (
        model.now,
        model.free.copy(),
        model.free_total,
        model.free_bb,
        [job.job_id for job in model.queue_agent.jobs.values()],
        list(model.running_by_end),
        {job_id: agent.status for job_id, agent in model.job_agents.items()},
    )


def assert_same_state(before: tuple[Any, ...], after: tuple[Any, ...], where: str) -> None:
    labels = ("time", "free", "free_total", "free_bb", "queue", "running", "statuses")
    for label, old, new in zip(labels, before, after):
        same = np.array_equal(old, new) if label == "free" else old == new
        assert same, f"{where}: decide() changed the model's {label}: {old!r} -> {new!r}"


# ------------------------------------------------------------ every policy
@pytest.mark.parametrize("exclusive", [False, True], ids=["core-level", "exclusive"])
@pytest.mark.parametrize(("scheduler", "allocator"), PAIRS, ids=PAIR_IDS)
def test_decisions_are_executable(scheduler: str, allocator: str, exclusive: bool) -> None:
    for label, platform, jobs in workloads():
        model = HPCModel(
            jobs,
            platform=platform,
            scheduler=scheduler,
            allocator=allocator,
            exclusive=exclusive,
            seed=1,
            record_timeseries=False,
        )
        model.run()  # a PolicyError here fails the policy
        assert not model.running, label
        assert_schedule_invariants(
            jobs,
            model.recorder.jobs_frame(),
            platform,
            exclusive=exclusive,
            segments=segments_of(model),
        )


@pytest.mark.parametrize("exclusive", [False, True], ids=["core-level", "exclusive"])
@pytest.mark.parametrize(("scheduler", "allocator"), PAIRS, ids=PAIR_IDS)
def test_decide_does_not_mutate_the_view(scheduler: str, allocator: str, exclusive: bool) -> None:
    probe = make_policy(scheduler, allocator)  # its own instance: the run is not perturbed
    rng = np.random.default_rng(0)
    for label, platform, jobs in workloads():
        model = HPCModel(
            jobs,
            platform=platform,
            scheduler=scheduler,
            allocator=allocator,
            exclusive=exclusive,
            seed=1,
            record_timeseries=False,
        )
        probed = 0
        while model.running:
            model.step()
            if not model.queue_agent.jobs:
                continue
            view = model.make_view()
            assert [j.job_id for j in view.queue] == list(model.queue_agent.jobs)
            ends = [(r.est_end, r.seq) for r in view.running]
            assert ends == sorted(ends), f"{label}: view.running not sorted by (est_end, seq)"
            before = snapshot(model)
            decision = probe.decide(view, rng)
            assert isinstance(decision, Decision), f"{label}: {type(decision).__name__}"
            assert_same_state(before, snapshot(model), f"{label} at t={model.now:g}")
            with pytest.raises(ValueError):
                view.free[0, 0] = 10**6
            with pytest.raises(ValueError):
                view.free += 1
            assert_same_state(before, snapshot(model), f"{label} at t={model.now:g}")
            probed += 1
        assert probed > 0, f"{label}: never had a queue to probe"


@pytest.mark.parametrize(("scheduler", "allocator"), PAIRS, ids=PAIR_IDS)
def test_same_seed_same_results(scheduler: str, allocator: str) -> None:
    for label, platform, jobs in workloads():
        frames = []
        for _ in range(2):
            model = HPCModel(
                jobs, platform=platform, scheduler=scheduler, allocator=allocator, seed=7
            )
            model.run()
            frames.append((model.recorder.jobs_frame(), model.recorder.timeseries_frame()))
        pd.testing.assert_frame_equal(frames[0][0], frames[1][0], obj=f"{label} jobs")
        pd.testing.assert_frame_equal(frames[0][1], frames[1][1], obj=f"{label} timeseries")


# ------------------------------------------------------- the model's checks
class BadPolicy:
    """A policy returning whatever ``make`` builds from the view, once per instant."""

    def __init__(self, name: str, make: Callable[[Any], Any]) -> None:
        self.name = name
        self.make = make

    def decide(self, view: Any, rng: np.random.Generator) -> Any:
        return self.make(view)


def run_bad(
    make: Callable[[Any], Any],
    jobs: list[Job],
    name: str,
    platform: str = "nodes=2,cores=2",
    exclusive: bool = False,
) -> None:
    model = HPCModel(jobs, platform=platform, policy=BadPolicy(name, make), exclusive=exclusive)
    model.run()


def at(time: float, decision: Decision) -> Callable[[Any], Decision]:
    """Return ``decision`` at ``time`` and nothing at other instants."""
    return lambda view: decision if view.time == time else Decision()


ONE = [Job(1, 3.0, 10.0, 10.0, units=1)]
TWO_UNITS = [Job(1, 3.0, 10.0, 10.0, units=2)]
THREE_UNITS = [Job(1, 3.0, 10.0, 10.0, units=3)]
FOLLOWED = [Job(1, 3.0, 10.0, 10.0, units=1), Job(2, 4.0, 1.0, 1.0, units=1)]

BAD_DECISIONS = [
    (
        "over-allocate",
        THREE_UNITS,
        at(3, Decision((Start(1, ((0, 3),)),))),
        "job 1 over-allocates: needs [[3, 0, 0, 0]] on nodes [0] with free [[2, 0, 0, 0]]",
    ),
    (
        "over-allocate-across-starts",
        [Job(1, 3.0, 5.0, 5.0, units=2), Job(2, 3.0, 5.0, 5.0, units=1)],
        at(3, Decision((Start(1, ((0, 2),)), Start(2, ((0, 1),))))),
        "job 2 over-allocates: needs [[1, 0, 0, 0]] on nodes [0] with free [[0, 0, 0, 0]]",
    ),
    (
        "start-twice",
        ONE,
        at(3, Decision((Start(1, ((0, 1),)), Start(1, ((1, 1),))))),
        "cannot start job 1: it is running, not queued",
    ),
    (
        "start-unknown",
        ONE,
        at(3, Decision((Start(99, ((0, 1),)),))),
        "cannot start job 99: it is unknown, not queued",
    ),
    (
        "hold-queued",
        ONE,
        at(3, Decision((Hold(1),))),
        "cannot hold job 1: it is queued, not running",
    ),
    (
        "hold-unknown",
        ONE,
        at(3, Decision((Hold(7),))),
        "cannot hold job 7: it is unknown, not running",
    ),
    (
        "drop-running",
        ONE,
        at(3, Decision((Start(1, ((0, 1),)), Drop(1)))),
        "cannot drop job 1: it is running, not queued",
    ),
    (
        "not-a-decision-list",
        ONE,
        lambda view: [Start(1, ((0, 1),))],
        "decide() must return a Decision, got list",
    ),
    (
        "not-a-decision-none",
        ONE,
        lambda view: None,
        "decide() must return a Decision, got NoneType",
    ),
    (
        "too-few-units",
        TWO_UNITS,
        at(3, Decision((Start(1, ((0, 1),)),))),
        "job 1 needs 2 units, allocation gives 1",
    ),
    (
        "too-many-units",
        ONE,
        at(3, Decision((Start(1, ((0, 1), (1, 1))),))),
        "job 1 needs 1 units, allocation gives 2",
    ),
    (
        "nodes-out-of-order",
        TWO_UNITS,
        at(3, Decision((Start(1, ((1, 1), (0, 1))),))),
        "job 1: allocation ((1, 1), (0, 1)) must list distinct nodes 0..1 in increasing order",
    ),
    (
        "nodes-repeated",
        TWO_UNITS,
        at(3, Decision((Start(1, ((0, 1), (0, 1))),))),
        "job 1: allocation ((0, 1), (0, 1)) must list distinct nodes 0..1 in increasing order",
    ),
    (
        "node-out-of-range",
        ONE,
        at(3, Decision((Start(1, ((2, 1),)),))),
        "job 1: allocation ((2, 1),) must list distinct nodes 0..1 in increasing order",
    ),
    (
        "empty-allocation",
        ONE,
        at(3, Decision((Start(1, ()),))),
        "start of job 1 has an empty allocation",
    ),
    (
        "unknown-action",
        ONE,
        at(3, Decision(("start job 1",))),  # type: ignore[arg-type]
        "unknown action 'start job 1'",
    ),
]


@pytest.mark.parametrize(
    ("name", "jobs", "make", "fragment"), BAD_DECISIONS, ids=[case[0] for case in BAD_DECISIONS]
)
def test_model_rejects_bad_decisions(
    name: str, jobs: list[Job], make: Callable[[Any], Any], fragment: str
) -> None:
    policy_name = f"bad-{name}"
    expected = re.escape(f"policy {policy_name!r} at t=3: {fragment}")
    with pytest.raises(PolicyError, match=expected) as err:
        run_bad(make, jobs, policy_name)
    assert err.value.policy == policy_name and err.value.time == 3.0


def test_model_rejects_a_second_start_of_a_running_job_later() -> None:
    def make(view: Any) -> Decision:
        return Decision((Start(1, ((0, 1),)),))  # again at t=4, when job 2 arrives

    with pytest.raises(
        PolicyError,
        match=re.escape("policy 'restarter' at t=4: cannot start job 1: it is running, not queued"),
    ):
        run_bad(make, FOLLOWED, "restarter")


def test_model_rejects_exclusive_starts_on_busy_nodes() -> None:
    jobs = [Job(1, 3.0, 5.0, 5.0, units=1), Job(2, 3.0, 5.0, 5.0, units=1)]
    make = at(3, Decision((Start(1, ((0, 1),)), Start(2, ((0, 1),)))))
    # Job 1 takes all of node 0, so the model may report either check that fails.
    with pytest.raises(PolicyError, match=re.escape("policy 'sharer' at t=3: job 2")):
        run_bad(make, jobs, "sharer", exclusive=True)


def test_policy_name_falls_back_to_the_class_name() -> None:
    class Nameless:
        def decide(self, view: Any, rng: np.random.Generator) -> Any:
            return "go"

    model = HPCModel(ONE, platform="nodes=2,cores=2", policy=Nameless())  # type: ignore[arg-type]
    with pytest.raises(
        PolicyError,
        match=re.escape("policy 'Nameless' at t=3: decide() must return a Decision, got str"),
    ):
        model.run()
