"""The policy registry: names, composition and the errors for bad names."""

from __future__ import annotations

import re

import pytest

from market_hpc.core.model import HPCModel
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.policies import (
    Policy,
    allocator_names,
    allocators_for,
    make_allocator,
    make_policy,
    scheduler_entry,
    scheduler_names,
)
from market_hpc.policies.registry import register_allocator, register_scheduler

BUILTIN_SCHEDULERS = {"fifo", "sjf", "ljf", "easy"}
BUILTIN_ALLOCATORS = {"first-fit", "best-fit"}
CLASSIC = [name for name in scheduler_names() if not scheduler_entry(name).market]
MARKET = [name for name in scheduler_names() if scheduler_entry(name).market]


def unknown(kind: str, name: str, choices: list[str]) -> str:
    return re.escape(f"unknown {kind} {name!r}; valid choices: {', '.join(choices)}")


def test_names_are_sorted_and_include_the_builtins() -> None:
    assert scheduler_names() == sorted(scheduler_names())
    assert allocator_names() == sorted(allocator_names())
    assert BUILTIN_SCHEDULERS <= set(scheduler_names())
    assert BUILTIN_ALLOCATORS <= set(allocator_names())


def test_unknown_scheduler_lists_every_scheduler() -> None:
    expected = f"^{unknown('scheduler', 'easyy', scheduler_names())}$"
    with pytest.raises(UnknownNameError, match=expected) as err:
        scheduler_entry("easyy")
    assert err.value.kind == "scheduler" and err.value.name == "easyy"
    assert err.value.choices == scheduler_names()
    assert isinstance(err.value, ConfigError)


def test_unknown_scheduler_in_make_policy_and_the_model() -> None:
    expected = f"^{unknown('scheduler', 'Backfill', scheduler_names())}$"
    with pytest.raises(UnknownNameError, match=expected):
        make_policy("Backfill", "first-fit")
    with pytest.raises(UnknownNameError, match=expected):
        HPCModel([], platform="nodes=2,cores=1", scheduler="Backfill")


def test_unknown_allocator_lists_every_allocator() -> None:
    expected = f"^{unknown('allocator', 'worst-fit', allocator_names())}$"
    with pytest.raises(UnknownNameError, match=expected) as err:
        make_allocator("worst-fit")
    assert err.value.choices == allocator_names()
    with pytest.raises(UnknownNameError, match=expected):
        make_policy("easy", "worst-fit")
    with pytest.raises(UnknownNameError, match=expected):
        HPCModel([], platform="nodes=2,cores=1", scheduler="fifo", allocator="worst-fit")


def test_exact_message_for_the_builtin_names() -> None:
    with pytest.raises(UnknownNameError) as err:
        make_allocator("nope")
    expected = "unknown allocator 'nope'; valid choices: " + ", ".join(allocator_names())
    assert str(err.value) == expected
    assert "best-fit, first-fit" in str(err.value)


@pytest.mark.parametrize("scheduler", CLASSIC)
def test_make_policy_composes_scheduler_and_allocator_names(scheduler: str) -> None:
    for allocator in allocators_for(scheduler):
        policy = make_policy(scheduler, allocator)
        assert policy.name == f"{scheduler}+{allocator}"
        assert isinstance(policy, Policy)
    default = scheduler_entry(scheduler).default_allocator
    assert make_policy(scheduler).name == f"{scheduler}+{default}"


def test_easy_best_fit() -> None:
    assert make_policy("easy", "best-fit").name == "easy+best-fit"
    assert make_policy("EASY", "Best-Fit").name == "easy+best-fit"  # names are case-insensitive
    assert make_policy("easy").name == "easy+first-fit"


def test_model_uses_the_composed_policy() -> None:
    model = HPCModel([], platform="nodes=2,cores=1", scheduler="sjf", allocator="best-fit")
    assert model.policy.name == "sjf+best-fit"


def test_classic_schedulers_accept_every_general_allocator() -> None:
    for scheduler in CLASSIC:
        assert BUILTIN_ALLOCATORS <= set(allocators_for(scheduler))
        assert set(allocators_for(scheduler)) <= set(allocator_names())


@pytest.mark.parametrize("scheduler", CLASSIC)
def test_classic_scheduler_with_a_market_only_allocator_fails(scheduler: str) -> None:
    market_only = sorted(set(allocator_names()) - set(allocators_for(scheduler)))
    if not market_only:
        pytest.skip("no market-only allocator registered")
    expected = (
        f"scheduler {scheduler!r} does not work with allocator {market_only[0]!r}; "
        f"valid choices: {', '.join(allocators_for(scheduler))}"
    )
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        make_policy(scheduler, market_only[0])


@pytest.mark.parametrize("scheduler", MARKET or ["(none)"])
def test_market_scheduler_with_a_classic_allocator_fails(scheduler: str) -> None:
    if not MARKET:
        pytest.skip("no market scheduler registered")
    entry = scheduler_entry(scheduler)
    assert entry.allocators is not None and "first-fit" not in entry.allocators
    expected = (
        f"scheduler {scheduler!r} does not work with allocator 'first-fit'; "
        f"valid choices: {', '.join(sorted(entry.allocators))}"
    )
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        make_policy(scheduler, "first-fit")
    assert make_policy(scheduler).name  # its default allocator composes


def test_bad_scheduler_parameters_are_a_config_error() -> None:
    expected = re.escape("scheduler 'easy': bad parameters {'depth': 2}")
    with pytest.raises(ConfigError, match=expected):
        make_policy("easy", "first-fit", scheduler_params={"depth": 2})


def test_bad_allocator_parameters_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="first-fit"):
        make_policy("easy", "first-fit", allocator_params={"depth": 2})


def test_registering_a_name_twice_fails_and_keeps_the_first() -> None:
    first = scheduler_entry("easy").factory
    with pytest.raises(
        ConfigError,
        match=re.escape(
            "scheduler 'easy' is already registered (its factory: market_hpc.policies.classic.Easy)"
        ),
    ):
        register_scheduler("easy", "again")(lambda allocator: None)  # type: ignore[arg-type]
    assert scheduler_entry("easy").factory is first
    with pytest.raises(ConfigError, match=re.escape("allocator 'first-fit' is already registered")):
        register_allocator("first-fit", "again")(object)  # type: ignore[arg-type]
    assert make_policy("easy", "first-fit").name == "easy+first-fit"


@pytest.mark.parametrize(
    ("scheduler", "allocator", "key", "value", "valid"),
    [
        ("pcp20", "best-fit", "decision_budget", 700.0, "a finite number in [0, 600]"),
        ("hcp19", "best-fit", "decision_budget", -1.0, "a finite number in [0, 600]"),
        ("pcp20", "best-fit", "queue_limit", 0, "an integer in [1, 10000]"),
        ("bbsched", "first-fit", "rule", "x", "one of paper, code"),
        ("bbsched", "first-fit", "solver", "y", "one of auto, exact, ga"),
        ("bbsched", "first-fit", "exhaustive_up_to", 99, "an integer in [0, 22]"),
        ("bbsched", "first-fit", "exact_budget", -1, "an integer in [0, 2^53 - 1]"),
    ],
)
def test_a_constructor_refuses_what_its_declarations_refuse(
    scheduler: str, allocator: str, key: str, value: object, valid: str
) -> None:
    # built by hand or from a configuration: one check (the declaration's), one message
    from market_hpc.policies.registry import make_allocator, scheduler_entry

    message = f"scheduler {scheduler!r}: {key} = {value!r} is invalid; valid: {valid}"
    with pytest.raises(ConfigError) as refused:
        scheduler_entry(scheduler).factory(make_allocator(allocator), **{key: value})
    assert str(refused.value) == message
    with pytest.raises(ConfigError) as configured:
        make_policy(scheduler, allocator, scheduler_params={key: value})
    assert str(configured.value) == message


def test_every_built_in_scheduler_is_a_policy_base() -> None:
    """What the core reads of a policy is declared once, on ``PolicyBase``: every built-in
    scheduler (classes and factories alike) makes one, so none answers by ``PolicyHooks``'
    fallbacks (a plain class is a plugin's)."""
    from market_hpc.policies.base import PolicyBase

    built_in = [
        name
        for name in scheduler_names()
        if scheduler_entry(name).factory.__module__.startswith("market_hpc.")
    ]
    assert {"fifo", "easy", "slurm", "maxvh", "queues-hybrid", "bbsched"} <= set(built_in)
    plain = [name for name in built_in if not isinstance(make_policy(name), PolicyBase)]
    assert plain == []


def test_a_market_policys_penalty_is_its_holding_rules() -> None:
    policy = make_policy("maxvh", scheduler_params={"penalty": 0.2})
    assert policy.penalty == policy.holding_rule.penalty == 0.2  # type: ignore[attr-defined]
    policy.penalty = 0.3  # type: ignore[attr-defined]
    assert policy.holding_rule.penalty == 0.3  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"holding penalty must be in \[0, 1\], got 1.5"):
        policy.penalty = 1.5  # type: ignore[attr-defined]
