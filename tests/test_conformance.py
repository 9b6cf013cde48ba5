"""Policy conformance suite: what every registered dispatcher must do, market policies and
installed plugins' included (the pairs are read from the registry, which loads them).

Every scheduler x allocator pair runs every check of ``market_hpc.testing`` (the suite as
library code, which plugins run on their own policies): its decisions are executable on
core-level and node-exclusive platforms (whole simulations on small random workloads,
without a ``PolicyError``, keeping the schedule invariants), it never mutates the view it
is given, the same seed gives the same results, and (market policies) a held job keeps
its work. Then the model's side of the contract: malformed decisions from deliberately
bad policies fail with a ``PolicyError`` naming the policy and the time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.errors import PolicyError
from market_hpc.policies import Decision, Drop, Hold, Start
from market_hpc.testing import PolicyUnderTest, parametrize_with_checks, registered_pairs
from market_hpc.testing.checks import Check

PAIRS = registered_pairs()


# ------------------------------------------------------------ every policy
@parametrize_with_checks(PAIRS)
def test_policy_conforms(policy: PolicyUnderTest, check: Check) -> None:
    check(policy)


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
