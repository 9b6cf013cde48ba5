"""The policy conformance suite as library code, for the project's tests and plugins'.

``check_policy`` runs every conformance check on one scheduler (a registered name, or a
factory or class called as ``factory(allocator, **params)``); ``parametrize_with_checks``
makes one pytest case per (policy, check), so a plugin's test file is three lines::

    from market_hpc.testing import parametrize_with_checks

    @parametrize_with_checks(["saf"])
    def test_conformance(policy, check):
        check(policy)

The checks (``CHECKS``, in ``testing.checks``) run the policy on small built-in workloads
chosen from its declared capabilities (``testing.workloads``): core-level and
node-exclusive platforms, GPUs and burst buffer where declared, moldable jobs with value
curves for market policies and policies that mold jobs. A failure is an
``AssertionError`` naming the check, the policy, the workload and what went wrong.
Importing this module does not import pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from market_hpc.testing.checks import CHECKS, MARKET_ONLY, Check, applies
from market_hpc.testing.subject import PolicySpec, PolicyUnderTest, policy_under_test

__all__ = [
    "CHECKS",
    "MARKET_ONLY",
    "PolicyUnderTest",
    "check_policy",
    "checks_for",
    "parametrize_with_checks",
    "policy_under_test",
    "registered_pairs",
]


def checks_for(policy: PolicyUnderTest, names: Iterable[str] | None = None) -> list[Check]:
    """The checks ``policy`` gets, in ``CHECKS`` order (only ``names`` when given).

    Raises:
        ValueError: a name that is not a check (lists the valid ones).
    """
    known = [check.__name__ for check in CHECKS]
    wanted = None if names is None else list(names)
    unknown = sorted(set(wanted or ()) - set(known))
    if unknown:
        raise ValueError(f"unknown checks {unknown}; valid choices: {', '.join(known)}")
    return [
        check
        for check in CHECKS
        if applies(check, policy) and (wanted is None or check.__name__ in wanted)
    ]


def check_policy(scheduler: PolicySpec, allocator: str | None = None, **options: Any) -> list[str]:
    """Run every conformance check that applies to one policy.

    Args:
        scheduler: A registered scheduler name, a ``(scheduler, allocator)`` pair, or a
            factory or class called as ``factory(allocator, **params)``.
        allocator: The allocator name (default: the scheduler's default, ``first-fit``
            for a factory).
        **options: ``checks`` (names of the checks to run, default all that apply), and
            ``params``, ``handles``, ``market`` (see ``policy_under_test``).

    Returns:
        The names of the checks run, in order.

    Raises:
        AssertionError: the first check that fails, naming it, the policy, the workload
            and what went wrong.
        ValueError: an unknown check name.
    """
    names = options.pop("checks", None)
    policy = policy_under_test(scheduler, allocator, **options)
    ran = []
    for check in checks_for(policy, names):
        check(policy)
        ran.append(check.__name__)
    return ran


def parametrize_with_checks(
    policies: Iterable[PolicySpec],
    *,
    expected_failed_checks: Mapping[str, Mapping[str, str]] | None = None,
    **options: Any,
) -> Any:
    """A ``pytest.mark.parametrize`` over ``("policy", "check")``: every policy with every
    check that applies to it, with ids such as ``saf+first-fit-check_same_seed_same_results``.

    Args:
        policies: What ``check_policy`` takes as ``scheduler``: names, ``(scheduler,
            allocator)`` pairs, factories, or ``PolicyUnderTest``s.
        expected_failed_checks: Policy label -> {check name: reason} of known failures
            (as scikit-learn's): those cases are strict ``xfail``s, so a fix shows.
        **options: As for ``check_policy``, applied to each policy.
    """
    import pytest  # only the test suites that call this need pytest

    names = options.pop("checks", None)
    expected = expected_failed_checks or {}
    cases = []
    for spec in policies:
        policy = policy_under_test(spec, **options)
        failing = expected.get(policy.label, {})
        for check in checks_for(policy, names):
            reason = failing.get(check.__name__)
            marks = (
                [pytest.mark.xfail(reason=reason, raises=AssertionError, strict=True)]
                if reason
                else []
            )
            cases.append(
                pytest.param(policy, check, id=f"{policy.label}-{check.__name__}", marks=marks)
            )
    return pytest.mark.parametrize(("policy", "check"), cases)


def registered_pairs(market: bool | None = None) -> list[tuple[str, str]]:
    """Every registered scheduler (installed plugins' included) with every allocator it
    composes with, sorted; only market (``True``) or non-market (``False``) ones if asked."""
    from market_hpc.policies.registry import allocators_for, scheduler_entry, scheduler_names

    return [
        (scheduler, allocator)
        for scheduler in scheduler_names()
        if market is None or scheduler_entry(scheduler).market == market
        for allocator in allocators_for(scheduler)
    ]
