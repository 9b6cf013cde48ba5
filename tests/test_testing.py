"""``market_hpc.testing``, the importable conformance suite: the checks can fail, each
deliberately broken policy is caught by the check named for its fault with its exact
message, ``check_policy`` and ``parametrize_with_checks`` take names and factories, and
importing the module does not import pytest."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from market_hpc.policies import Decision, Start, make_policy
from market_hpc.policies.capabilities import handles
from market_hpc.policies.classic import Fifo
from market_hpc.policies.registry import builtin_capabilities
from market_hpc.testing import (
    CHECKS,
    MARKET_ONLY,
    check_policy,
    checks_for,
    parametrize_with_checks,
    policy_under_test,
)

COMMON = [
    "check_decisions_are_executable",
    "check_decisions_are_executable_exclusive",
    "check_decide_does_not_mutate_the_view",
    "check_decide_does_not_mutate_the_view_exclusive",
    "check_same_seed_same_results",
]


class OverAllocates:
    """Starts the head job on node 0 whatever it needs."""

    name = "over-allocates"

    def __init__(self, allocator: Any) -> None:
        pass

    def decide(self, view: Any, rng: np.random.Generator) -> Decision:
        if not view.queue:
            return Decision()
        job = view.queue[0]
        return Decision((Start(job.job_id, ((0, job.units),)),))


class MutatesTheView(Fifo):
    """FIFO that hands itself a gigabyte of burst buffer through the view's model."""

    label = "mutates-the-view"

    def decide(self, view: Any, rng: np.random.Generator) -> Decision:
        view._model.free_bb += 1.0
        return super().decide(view, rng)


class HiddenState(Fifo):
    """FIFO in its first instance, newest first in its second: the same seed, another run."""

    label = "hidden-state"
    made = 0

    def __init__(self, allocator: Any) -> None:
        super().__init__(allocator)
        if HiddenState.made % 2:
            self.key = lambda job: (-job.submit, -job.job_id)
        HiddenState.made += 1


class StartsTwice(Fifo):
    """FIFO that starts the first job it started again at every later decision."""

    label = "starts-twice"

    def __init__(self, allocator: Any) -> None:
        super().__init__(allocator)
        self.first: Start | None = None

    def decide(self, view: Any, rng: np.random.Generator) -> Decision:
        decision = super().decide(view, rng)
        if self.first is not None:
            return Decision((self.first, *decision.actions))
        starts = [a for a in decision.actions if isinstance(a, Start)]
        self.first = starts[0] if starts else None
        return decision


class LosesHeldWork:
    """maxVH that wipes out the progress of every held job waiting to resume."""

    name = "loses-held-work"
    penalty = 0.2

    def __init__(self, allocator: Any) -> None:
        self.market = make_policy("maxvh", scheduler_params={"penalty": self.penalty})

    def decide(self, view: Any, rng: np.random.Generator) -> Decision:
        for job in view.queue:
            if view.state(job.job_id).hold_count:
                view._model.job_agents[job.job_id].progress = 0.0
        return self.market.decide(view, rng)  # type: ignore[no-any-return]


BROKEN = [
    (
        OverAllocates,
        {},
        "check_decisions_are_executable",
        (
            "check_decisions_are_executable failed for policy 'OverAllocates+first-fit' on "
            "workload 'heterogeneous-seed101' (core-level): PolicyError: policy 'over-allocates' "
            "at t=1: job 16 over-allocates: needs [[26, 0, 0, 0]] on nodes [0] with free "
            "[[4, 0, 0, 0]]"
        ),
    ),
    (
        MutatesTheView,
        {},
        "check_decide_does_not_mutate_the_view",
        (
            "check_decide_does_not_mutate_the_view failed for policy 'MutatesTheView+first-fit' on "
            "workload 'heterogeneous-seed101' (core-level) at t=6: decide() changed the model's "
            "free_bb: 10.0 -> 11.0"
        ),
    ),
    (
        HiddenState,
        {},
        "check_same_seed_same_results",
        (
            "check_same_seed_same_results failed for policy 'HiddenState+first-fit' on workload "
            "'heterogeneous-seed101' (core-level): two runs with seed 7 differ: jobs: job 1 has "
            "start_time 226.0 then 129.0"
        ),
    ),
    (
        StartsTwice,
        {},
        "check_decisions_are_executable",
        (
            "check_decisions_are_executable failed for policy 'StartsTwice+first-fit' on workload "
            "'heterogeneous-seed101' (core-level): PolicyError: policy 'starts-twice+first-fit' at "
            "t=6: cannot start job 16: it is running, not queued"
        ),
    ),
    (
        LosesHeldWork,
        {"handles": builtin_capabilities()["maxvh"]},
        "check_held_jobs_keep_their_work",
        (
            "check_held_jobs_keep_their_work failed for policy 'LosesHeldWork+max-bid' on workload "
            "'market-overload-seed5' (core-level): job 13 resumed at progress 0 after its hold at "
            "progress 0.21875: a held job keeps its work"
        ),
    ),
]


@pytest.mark.parametrize(
    ("factory", "options", "check", "message"), BROKEN, ids=[case[0].__name__ for case in BROKEN]
)
def test_a_broken_policy_is_caught_by_the_named_check(
    factory: Any, options: dict[str, Any], check: str, message: str
) -> None:
    HiddenState.made = 0
    with pytest.raises(AssertionError) as failure:
        check_policy(factory, checks=[check], **options)
    assert str(failure.value) == message


def test_every_policy_gets_the_common_checks_and_market_policies_the_market_one() -> None:
    assert [check.__name__ for check in CHECKS] == [*COMMON, "check_held_jobs_keep_their_work"]
    assert MARKET_ONLY == {"check_held_jobs_keep_their_work"}
    assert [c.__name__ for c in checks_for(policy_under_test("fifo"))] == COMMON
    maxvh = policy_under_test("maxvh")
    assert (maxvh.label, maxvh.market, maxvh.hold_penalty) == ("maxvh+max-bid", True, 0.2)
    assert [c.__name__ for c in checks_for(maxvh)] == [*COMMON, "check_held_jobs_keep_their_work"]
    factory = policy_under_test(LosesHeldWork, handles=builtin_capabilities()["maxvh"])
    assert (factory.label, factory.market) == ("LosesHeldWork+max-bid", True)
    assert policy_under_test(("easy", "best-fit")).label == "easy+best-fit"


def test_the_workloads_follow_the_declared_capabilities() -> None:
    rigid = policy_under_test("fifo").workloads()
    assert [w.label for w in rigid] == [
        "heterogeneous-seed101",
        "heterogeneous-seed102",
        "multi-core-seed101",
        "multi-core-seed102",
        "single-core-seed101",
        "single-core-seed102",
    ]
    mixed = rigid[0]
    assert any(job.unit[1] > 0 for job in mixed.jobs) and any(job.bb > 0 for job in mixed.jobs)
    cores_only = policy_under_test(Fifo, handles=handles(("cores",), ("rigid",))).workloads()[0]
    assert not any(job.unit[1] or job.bb for job in cores_only.jobs)
    market = policy_under_test("easy-mold").workloads()  # cores and bb: no GPU jobs
    assert [w.label for w in market] == ["market-overload-seed5", "market-rule-seed103"]
    assert all(job.profile and "value_curve" in job.payload for w in market for job in w.jobs)
    assert not any(job.unit[1] for job in market[1].jobs) and any(job.bb for job in market[1].jobs)


def test_check_policy_runs_the_checks_named_and_refuses_unknown_ones() -> None:
    assert check_policy("fifo", checks=["check_same_seed_same_results"]) == [
        "check_same_seed_same_results"
    ]
    assert check_policy("fifo", checks=["check_held_jobs_keep_their_work"]) == []  # market only
    with pytest.raises(
        ValueError,
        match=r"^unknown checks \['check_nothing'\]; valid choices: "
        r"check_decisions_are_executable, ",
    ):
        check_policy("fifo", checks=["check_nothing"])
    from market_hpc.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="unknown allocator 'nowhere'"):
        check_policy(OverAllocates, "nowhere")


def test_parametrize_with_checks_makes_one_case_per_policy_and_check() -> None:
    mark = parametrize_with_checks(
        ["fifo", ("maxvh", "max-bid")],
        expected_failed_checks={"fifo+first-fit": {"check_same_seed_same_results": "known"}},
    )
    names, cases = mark.args
    assert names == ("policy", "check")
    assert [case.id for case in cases] == [
        *(f"fifo+first-fit-{name}" for name in COMMON),
        *(f"maxvh+max-bid-{name}" for name in [*COMMON, "check_held_jobs_keep_their_work"]),
    ]
    assert [case.values[1].__name__ for case in cases[:5]] == COMMON
    marked = [case.id for case in cases if case.marks]
    assert marked == ["fifo+first-fit-check_same_seed_same_results"]
    (xfail,) = cases[4].marks
    assert xfail.kwargs == {"reason": "known", "raises": AssertionError, "strict": True}


def test_importing_the_suite_does_not_import_pytest() -> None:
    code = "import sys, market_hpc.testing; print('pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "False\n"
