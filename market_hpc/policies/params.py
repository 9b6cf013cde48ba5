"""The declared keyword parameters of every built-in scheduler, allocator and bidder.

A scenario's ``[policy.params]`` table goes to the scheduler's factory as keyword
arguments. Each parameter is declared here with its type and valid range, so a bad value
(``nan``, ``inf``, ``1e308``, ``2.5`` for a count, ``true`` for a number, text for a
number) is refused when the configuration is read, before any simulation, naming the
scheduler, the parameter, the value and what is valid; an unknown name lists the valid
ones. The constructors still check what needs more than a type and a range (e.g. a window
size against the scheduler's largest).

Plugins' schedulers declare nothing here: their parameters are checked by their factory.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from market_hpc.errors import ConfigError
from market_hpc.validation import MAX_INT, Range


@dataclass(frozen=True)
class Param:
    """One declared keyword parameter.

    Attributes:
        kind: ``int``, ``float``, ``bool``, ``str``, ``str-list``, ``float-list``,
            ``wait-table`` (queue number to a positive expected wait in seconds) or
            ``number-table`` (a name or id to a number >= 0).
        valid: The range of an ``int``/``float`` (of each item of a ``float-list``).
        choices: The valid values of a ``str`` (of each item of a ``str-list``).
        optional: ``None`` is valid too (the factory's default).
    """

    kind: str
    valid: Range | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False

    def describe(self) -> str:
        """What is valid, in words."""
        if self.kind in ("int", "float"):
            text = (
                self.valid.describe()
                if self.valid
                else f"a finite number{' (integer)' * (self.kind == 'int')}"
            )
        elif self.kind == "bool":
            text = "true or false"
        elif self.kind == "str":
            text = f"one of {', '.join(self.choices)}" if self.choices else "a string"
        elif self.kind == "str-list":
            text = f"a list of {', '.join(self.choices)}" if self.choices else "a list of strings"
        elif self.kind == "float-list":
            text = f"a list of numbers, each {self.valid.describe() if self.valid else 'finite'}"
        elif self.kind == "number-table":
            text = "a table of name = number (>= 0)"
        else:
            text = "a table of queue number = expected wait in seconds (> 0)"
        return text + (" (or absent)" if self.optional else "")

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is of this parameter's type and in its range."""
        if value is None:
            return self.optional
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "int":
            return (
                isinstance(value, int)
                and not isinstance(value, bool)
                and (self.valid is None or self.valid.contains(value))
            )
        if self.kind == "float":
            return _number(value, self.valid)
        if self.kind == "str":
            return isinstance(value, str) and (not self.choices or value in self.choices)
        if self.kind == "str-list":
            return _sequence(value) and all(
                isinstance(item, str) and (not self.choices or item in self.choices)
                for item in value
            )
        if self.kind == "float-list":
            return (
                _sequence(value)
                and len(value) > 0
                and all(_number(item, self.valid) for item in value)
            )
        if self.kind == "number-table":
            return isinstance(value, Mapping) and all(
                _number(number, Range(0.0, 2.0**50)) for number in value.values()
            )
        return isinstance(value, Mapping) and all(
            _integral(key) and _number(wait, POSITIVE) for key, wait in value.items()
        )


def _sequence(value: Any) -> bool:
    """A list, tuple or array (not text, not a table)."""
    return (
        hasattr(value, "__len__")
        and hasattr(value, "__iter__")
        and not isinstance(value, (str, bytes, Mapping))
    )


def _integral(value: Any) -> bool:
    try:
        return float(int(value)) == float(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _number(value: Any, valid: Range | None) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy scalars too
        return False
    return valid.contains(value) if valid else math.isfinite(float(value))


POSITIVE = Range(0.0, math.inf, low_open=True)
FRACTION = Range(0.0, 1.0)
# One CP-SAT solve: the default deterministic limit is 0.002 and the papers' largest wall
# limit 16 s (1 s doubled 4 times); a run solves about once per arrival and completion, so
# 60 s per solve is already hours for a few hundred jobs.
SOLVE_SECONDS = Range(0.0, 60.0, low_open=True)

# Every CP dispatcher (policies/cp.py ``CpScheduler``).
CP_LIMITS = {
    "deterministic_time": Param("float", SOLVE_SECONDS),
    # one CP-SAT thread per worker: past the cores of the largest node they only time-slice
    # (and each holds a copy of the model), and the papers use 1
    "workers": Param("int", Range(1, 64, integer=True)),
    "solver_seed": Param("int", Range(0, 2**31 - 1, integer=True)),
    "wall_seconds": Param("float", SOLVE_SECONDS, optional=True),
    # the authors' q_length is 100; the model and its building grow linearly in it
    "queue_limit": Param("int", Range(1, 10_000, integer=True)),
    "decision_budget": Param("float", Range(0.0, 600.0)),  # 0: none (cp_budget.Budget); <= 10 min
}
PCP20 = {
    **CP_LIMITS,
    # the authors' paper control uses 30; the work of a decision grows with its square
    "max_retries": Param("int", Range(0, 100, integer=True), optional=True),
    "levels": Param("int", Range(0, 64, integer=True)),
    "branching": Param("str"),  # one of cp_pcp20.BRANCHINGS (checked by the constructor)
    "time_control": Param("str", choices=("deterministic", "paper")),
    "hint": Param("str"),  # one of cp_pcp20.HINTS
    "cuts": Param("str-list"),  # names of cp_cuts.CUTS
    "relax": Param("bool"),
    "unit_limit": Param("int", Range(0, 1_000_000_000, integer=True), optional=True),  # 0: no limit
}
WAITS = {
    "expected_wait": Param("wait-table", optional=True),
    "default_wait": Param("float", Range(0.0, 2.0**50, low_open=True)),
}
# The BBSched window schedulers (policies/bbsched_window.py ``WindowScheduler``); their
# ``policy.window`` settings arrive under these names too.
WINDOW = {
    "window": Param("int", Range(1, 1_000_000, integer=True)),
    "order": Param("str"),  # one of bbsched_window.BASE_ORDERS
    "starvation": Param("float", Range(0.0, 2.0**50, low_open=True)),
    "starvation_by": Param("str"),  # one of bbsched_starvation.STARVATION_READINGS
    "starvation_backstop": Param("float", Range(0.0, 2.0**50)),
}
BBSCHED = {
    **WINDOW,
    "solver": Param("str"),  # one of bbsched.SOLVERS
    # with population, bounded together by GA_WORK_LIMIT; alone: 200 x the paper's G = 500
    "generations": Param("int", Range(0, 100_000, integer=True)),
    # 50 x the paper's P = 20: survivor selection grows faster than P (per chromosome and
    # generation about 0.1 ms at P = 1,000, 2.7 ms at P = 20,000: benchmarks/bbsched.py shape)
    "population": Param("int", Range(2, 1_000, integer=True)),
    "mutation": Param("float", FRACTION),
    "rule": Param("str"),  # one of bbsched.RULES
    "exhaustive_up_to": Param(
        "int", Range(0, 22, integer=True)
    ),  # algorithms.bbsched.MAX_EXACT_JOBS
    "exact_budget": Param("int", Range(0, MAX_INT, integer=True)),
}
MARKET = {"penalty": Param("float", FRACTION)}
_INTERVAL = Param(
    "float", Range(0.0, 30 * 86_400.0, low_open=True)
)  # a Slurm interval: up to 30 days
_WEIGHT = Param("int", Range(0, 2**32 - 1, integer=True))
_COUNT = Param("int", Range(0, 1_000_000, integer=True))
# policies/slurm/settings.py ``SlurmSettings`` (a slurm.conf read into the same names).
SLURM = {
    "slurm_conf": Param("str", optional=True),
    "priority_type": Param("str", choices=("basic", "multifactor")),
    "scheduler_type": Param("str", choices=("backfill", "builtin")),
    **{f"weight_{name}": _WEIGHT for name in ("age", "fairshare", "job_size", "partition", "qos")},
    "max_age": _INTERVAL,
    "decay_half_life": Param("float", Range(0.0, 2.0**40)),
    "calc_period": _INTERVAL,
    "favor_small": Param("bool"),
    "fs_dampening": Param("int", Range(1, 2**32 - 1, integer=True)),
    "shares": Param("number-table"),
    "fairshare_account": Param("bool"),
    "account_share": Param("float", Range(0.0, 1.0, low_open=True)),
    "charge_at_end": Param("bool"),
    "qos_priority": Param("number-table"),
    "bf_interval": _INTERVAL,
    "bf_window": _INTERVAL,
    "bf_resolution": _INTERVAL,
    "sched_interval": _INTERVAL,
    "bf_max_job_test": _COUNT,
    "bf_max_job_start": _COUNT,
    "default_queue_depth": _COUNT,
    "bf_continue": Param("bool"),
    "preempt": Param("bool"),
    "preempt_mode": Param("str", choices=("off", "suspend", "requeue")),
}
LOOKAHEAD = {**MARKET, "max_holds": Param("int", Range(0, 1000, integer=True))}

GA_WORK_LIMIT = 1_000_000
"""Most ``generations x population`` of one BBSched GA solve: 100 x the paper's 500 x 20,
which costs about 0.1 s on a 40-job window (about 10 us per chromosome and generation), so
up to about 10 s per solve at the limit; a run solves about once per arrival and completion."""
DECISION_SECONDS_LIMIT = 600.0
"""Most solver time one CP decision may be allowed, all retries counted: the PCP'20 authors'
own control (1 s, +0.5 s per retry, 30 retries) allows 264 s; 10 minutes per decision is
already days for a run of a thousand jobs that all need their retries."""
DOUBLINGS = 4  # PCP'19, HCP'19, CPH: 1, 2, 4, 8, 16 x the initial limit (cp_pooled)

SCHEDULER_PARAMS: dict[str, dict[str, Param]] = {
    **{
        name: {}
        for name in ("wfp3", "wfp3-easy", "unicep", "unicep-easy", "f1", "f1-easy", "sjf-easy")
    },  # market_hpc.rl
    **{
        name: {}
        for name in (
            "fifo",
            "sjf",
            "ljf",
            "easy",
            "saf",
            "queues-partitioned",
            "queues-shared",
            "queues-hybrid",
        )
    },
    "pcp20": PCP20,
    "greedy-plan": PCP20,
    "pcp19": CP_LIMITS,
    "hcp19": CP_LIMITS,
    "cph": {**CP_LIMITS, **WAITS},
    "prb": WAITS,
    "ebf": {"static_reservation": Param("bool")},
    "easy-mold": {"penalty": Param("float", FRACTION)},
    **{
        name: WINDOW
        for name in (
            "bb-baseline",
            "bb-constrained-bb",
            "bb-constrained-cpu",
            "bb-weighted",
            "bb-weighted-bb",
            "bb-weighted-cpu",
        )
    },
    "bb-binpacking": {**WINDOW, "normalise": Param("bool")},
    "bbsched": BBSCHED,
    "slurm": SLURM,
    **{
        rule + suffix: (LOOKAHEAD if suffix == "lh" else MARKET)
        for rule in ("sjq", "maxv", "maxvd", "minvr")
        for suffix in ("", "h", "lh")
    },
}
"""Keyword parameters of each built-in scheduler (``queues-*`` take theirs from
``[queues]``, not ``[policy.params]``)."""
CP_LIMITS_SCHEDULERS = frozenset(
    name for name, table in SCHEDULER_PARAMS.items() if "deterministic_time" in table
)

_CRITICAL = Param("str-list", choices=("cores", "gpus", "mics", "mem"))
_WINDOW_OR_ALL = Param("int", Range(1, MAX_INT, integer=True), optional=True)
ALLOCATOR_PARAMS: dict[str, dict[str, Param]] = {
    "first-fit": {},
    "best-fit": {},
    "max-bid": {},
    "balanced": {"critical": _CRITICAL},
    "weighted": {"window": _WINDOW_OR_ALL, "unit_free": Param("bool")},
    "priority-weighted": {
        "window": _WINDOW_OR_ALL,
        "critical": _CRITICAL,
        "bound": Param("float", POSITIVE),
        "step": Param("float", POSITIVE),
        "unit_free": Param("bool"),
    },
}
"""Keyword parameters of each built-in allocator."""

BIDDER_PARAMS: dict[str, dict[str, Param]] = {
    "free-cores": {},
    "fullest-node": {},
    "energy": {
        "watts_per_core": Param("float-list", POSITIVE),
        "idle_factor": Param("float", FRACTION),
    },
    "locality": {
        "distance": Param("float-list", Range(0.0, math.inf)),
        "weight": Param("float", Range(0.0, math.inf)),
    },
    "offer-reserve": {
        "fraction": Param("float-list", FRACTION),
        "reserve": Param("float-list", Range(0.0, math.inf)),
    },
}
"""Keyword parameters of each built-in bidder (``watts_per_core``, ``fraction`` and ``reserve`` also as one number)."""
_ONE_OR_PER_NODE = {
    "watts_per_core": POSITIVE,
    "fraction": FRACTION,
    "reserve": Range(0.0, math.inf),
}


def check_params(
    kind: str,
    name: str,
    params: Mapping[str, Any],
    table: Mapping[str, Mapping[str, Param]] | None = None,
) -> None:
    """Refuse parameters a built-in policy does not declare, or values out of range.

    Args:
        kind: ``scheduler``, ``allocator`` or ``bidder`` (for the message).
        name: The registered name (lower case); names not declared (plugins) pass.
        params: The keyword parameters.
        table: The declarations (default: by ``kind``).

    Raises:
        ConfigError: An unknown parameter (the valid ones listed) or a value of the wrong
            type or out of range (scheduler, parameter, value and valid range named).

    >>> check_params("scheduler", "pcp20", {"queue_limit": 50})
    >>> check_params("scheduler", "pcp20", {"queue_limit": 2.5})
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: scheduler 'pcp20': policy.params.queue_limit = 2.5 is invalid; ...
    """
    declared = (table or _TABLES[kind]).get(name)
    if declared is None:
        return
    for key, value in params.items():
        spec = declared.get(key)
        if spec is None:
            valid = ", ".join(sorted(declared)) or "none (it takes no parameters)"
            raise ConfigError(
                f"{kind} {name!r}: unknown parameter {key!r}; valid parameters: {valid}"
            )
        if kind == "bidder" and key in _ONE_OR_PER_NODE and _number(value, _ONE_OR_PER_NODE[key]):
            continue
        if not spec.accepts(value):
            source = f"policy.params.{key}" if kind == "scheduler" else key
            raise ConfigError(
                f"{kind} {name!r}: {source} = {value!r} is invalid; valid: {spec.describe()}"
            )
    if kind == "scheduler":
        check_work(name, params)


def check_work(name: str, params: Mapping[str, Any]) -> None:
    """Refuse work-bounding parameters whose product no run finishes: BBSched's
    ``generations x population`` over ``GA_WORK_LIMIT``, a CP dispatcher's solver time per
    decision (every retry counted) over ``DECISION_SECONDS_LIMIT``.

    Args:
        name: The scheduler (lower case).
        params: Its keyword parameters (BBSched's ``policy.window`` ones merged in).

    Raises:
        ConfigError: naming the parameters, their values, the estimate and the limit.

    >>> check_work("bbsched", {"generations": 500, "population": 20})
    >>> check_work("bbsched", {"generations": 100_000, "population": 1000})
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: scheduler 'bbsched': generations x population = ...
    """
    if name == "bbsched":
        generations, population = params.get("generations", 500), params.get("population", 20)
        work = generations * population
        if work > GA_WORK_LIMIT:
            raise ConfigError(
                f"scheduler 'bbsched': generations x population = {generations:,} x "
                f"{population:,} = {work:,} chromosome-generations per GA solve (about "
                f"{work * 1e-5:,.0f} s at 10 us each); at most {GA_WORK_LIMIT:,} "
                "(100 x the paper's 500 x 20)"
            )
        return
    if name not in CP_LIMITS_SCHEDULERS:
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


_TABLES = {"scheduler": SCHEDULER_PARAMS, "allocator": ALLOCATOR_PARAMS, "bidder": BIDDER_PARAMS}
