"""The configuration check of declared keyword parameters, and the limits they share.

A scenario's ``[policy.params]`` table goes to the scheduler's factory as keyword
arguments. Each built-in scheduler, allocator and bidder declares its parameters on its
class (``parameters``, ``market_hpc.parameters``), so a bad value (``nan``, ``inf``,
``1e308``, ``2.5`` for a count, ``true`` for a number, text for a number) is refused when
the configuration is read, before any simulation, naming the scheduler, the parameter, the
value and what is valid; an unknown name lists the valid ones. The constructors still check
what needs more than a type and a range (e.g. a window size against the scheduler's largest).

Plugins' schedulers declare nothing unless their class does: their parameters are checked
by their factory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from market_hpc.errors import ConfigError
from market_hpc.parameters import FRACTION, POSITIVE, Param
from market_hpc.validation import Range

__all__ = [
    "DECISION_SECONDS_LIMIT",
    "FRACTION",
    "GA_WORK_LIMIT",
    "POSITIVE",
    "SOLVE_SECONDS",
    "Param",
    "check_params",
    "check_value",
    "check_work",
    "decision_seconds",
]

# One CP-SAT solve: the default deterministic limit is 0.002 and the papers' largest wall
# limit 16 s (1 s doubled 4 times); a run solves about once per arrival and completion, so
# 60 s per solve is already hours for a few hundred jobs.
SOLVE_SECONDS = Range(0.0, 60.0, low_open=True)

GA_WORK_LIMIT = 1_000_000
"""Most ``generations x population`` of one BBSched GA solve: 100 x the paper's 500 x 20,
which costs about 0.1 s on a 40-job window (about 10 us per chromosome and generation), so
up to about 10 s per solve at the limit; a run solves about once per arrival and completion."""
DECISION_SECONDS_LIMIT = 600.0
"""Most solver time one CP decision may be allowed, all retries counted: the PCP'20 authors'
own control (1 s, +0.5 s per retry, 30 retries) allows 264 s; 10 minutes per decision is
already days for a run of a thousand jobs that all need their retries."""
DOUBLINGS = 4  # PCP'19, HCP'19, CPH: 1, 2, 4, 8, 16 x the initial limit (cp_pooled)


def check_params(
    kind: str,
    name: str,
    params: Mapping[str, Any],
    declared: Mapping[str, Param] | None,
) -> None:
    """Refuse parameters a built-in policy does not declare, or values out of range.

    Args:
        kind: ``scheduler``, ``allocator`` or ``bidder`` (for the message).
        name: The registered name (lower case); names not declared (plugins) pass.
        params: The keyword parameters.
        declared: Its declared parameters (``registry.parameters_of``); ``None`` (a
            plugin's, undeclared): everything passes.

    Raises:
        ConfigError: An unknown parameter (the valid ones listed) or a value of the wrong
            type or out of range (scheduler, parameter, value and valid range named).

    >>> from market_hpc.policies.registry import parameters_of
    >>> pcp20 = parameters_of("scheduler", "pcp20")
    >>> check_params("scheduler", "pcp20", {"queue_limit": 50}, pcp20)
    >>> check_params("scheduler", "pcp20", {"queue_limit": 2.5}, pcp20)
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: scheduler 'pcp20': policy.params.queue_limit = 2.5 is
        invalid; ...
    """
    if declared is None:
        return
    for key, value in params.items():
        spec = declared.get(key)
        if spec is None:
            valid = ", ".join(sorted(declared)) or "none (it takes no parameters)"
            raise ConfigError(
                f"{kind} {name!r}: unknown parameter {key!r}; valid parameters: {valid}"
            )
        check_value(kind, name, f"policy.params.{key}" if kind == "scheduler" else key, value, spec)
    if kind == "scheduler":
        check_work(name, params, declared)


def check_value(kind: str, name: str, source: str, value: Any, spec: Param) -> None:
    """Refuse ``value`` when its declaration ``spec`` does not accept it.

    Raises:
        ConfigError: ``KIND 'NAME': SOURCE = VALUE is invalid; valid: ...``.

    >>> check_value("scheduler", "pcp20", "branching", "random",
    ...             Param("str", choices=("priority", "auto")))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: scheduler 'pcp20': branching = 'random' is invalid;
        valid: one of priority, auto
    """
    if not spec.accepts(value):
        raise ConfigError(
            f"{kind} {name!r}: {source} = {value!r} is invalid; valid: {spec.describe()}"
        )


def check_work(name: str, params: Mapping[str, Any], declared: Mapping[str, Param] | None) -> None:
    """Refuse work-bounding parameters whose product no run finishes: BBSched's
    ``generations x population`` over ``GA_WORK_LIMIT``, a CP dispatcher's solver time per
    decision (every retry counted) over ``DECISION_SECONDS_LIMIT``.

    Args:
        name: The scheduler (lower case).
        params: Its keyword parameters (BBSched's ``policy.window`` ones merged in).
        declared: Its declared parameters (their defaults are the unset ones').

    Raises:
        ConfigError: naming the parameters, their values, the estimate and the limit.

    >>> from market_hpc.policies.registry import parameters_of
    >>> bbsched = parameters_of("scheduler", "bbsched")
    >>> check_work("bbsched", {"generations": 500, "population": 20}, bbsched)
    >>> check_work("bbsched", {"generations": 100_000, "population": 1000}, bbsched)
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: scheduler 'bbsched': generations x population = ...
    """
    declared = declared or {}
    if name == "bbsched":
        generations = params.get("generations", declared["generations"].default)
        population = params.get("population", declared["population"].default)
        work = generations * population
        if work > GA_WORK_LIMIT:
            raise ConfigError(
                f"scheduler 'bbsched': generations x population = {generations:,} x "
                f"{population:,} = {work:,} chromosome-generations per GA solve (about "
                f"{work * 1e-5:,.0f} s at 10 us each); at most {GA_WORK_LIMIT:,} "
                "(100 x the paper's 500 x 20)"
            )
        return
    if "deterministic_time" not in declared:  # not a CP dispatcher
        return
    seconds, how = decision_seconds(name, params)
    budget = params.get("decision_budget")
    if budget:  # every solve of a decision stops at the budget (cp_budget.Budget)
        seconds, how = min(seconds, budget), f"decision_budget {budget:g}"
    if seconds > DECISION_SECONDS_LIMIT:
        raise ConfigError(
            f"scheduler {name!r}: policy.params allow up to {seconds:,.0f} s of solver time "
            f"per decision ({how}); at most {DECISION_SECONDS_LIMIT:,.0f} s (lower "
            "deterministic_time, wall_seconds or max_retries, or set decision_budget)"
        )


def decision_seconds(name: str, params: Mapping[str, Any]) -> tuple[float, str]:
    """Worst-case solver seconds of one CP decision and how they add up (every retry taken).

    >>> decision_seconds("pcp19", {"deterministic_time": 2.0})
    (62.0, '2 s x (1 + 2 + 4 + 8 + 16)')
    >>> decision_seconds("pcp20", {"time_control": "paper"})
    (263.5, '30 retries of 1 s + 0.5 s per retry')
    """
    limit = params.get("wall_seconds") or params.get("deterministic_time", 0.002)
    if name in ("pcp20", "greedy-plan"):
        paper = params.get("time_control") == "paper"
        retries = params.get("max_retries")
        retries = (30 if paper else 4) if retries is None else retries
        if paper:  # a wall clock of 1 s + 0.5 s per retry, whatever the limits
            return (retries + 1) * (1 + retries / 4), f"{retries} retries of 1 s + 0.5 s per retry"
        how = f"{retries} retries of {limit:g} s + 50% per retry"
        return limit * (retries + 1) * (1 + retries / 4), how
    return limit * (2 ** (DOUBLINGS + 1) - 1), f"{limit:g} s x (1 + 2 + 4 + 8 + 16)"
