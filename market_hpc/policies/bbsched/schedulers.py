"""BBSched (Fan et al., HPDC'19) and its seven baselines, all windowed and under EASY.

Every method runs the same invocation (``market_hpc.policies.bbsched.window``: base order
``fcfs`` or ``wfp``, window, the paper's starvation bound, the method's selection,
multi-resource EASY) and differs only in how it selects from the window.

"Nodes" are the processors a job requests (SWF traces count processors; on one-core-
per-node presets such as ``kth-sp2`` they are nodes) and the burst buffer is the shared
pool ``view.free_bb`` in GB.

Methods: ``bb-baseline`` (Slurm-like: no window optimisation), ``bb-weighted`` (50/50),
``bb-weighted-cpu`` (80/20), ``bb-weighted-bb`` (20/80), ``bb-constrained-cpu``,
``bb-constrained-bb``, ``bb-binpacking`` (Tetris-like alignment) and ``bbsched`` (the
paper's Pareto set and decision rule). The weighted and constrained optima are exact,
read off the window's exact Pareto set (``algorithms.bbsched_exact.dp_pareto``), for
windows of up to 62 jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from market_hpc.algorithms.bbsched.exact import EXACT_BUDGET, dp_cost, dp_pareto
from market_hpc.algorithms.bbsched.ga import ga_pareto
from market_hpc.algorithms.bbsched.ga_common import GaSettings
from market_hpc.algorithms.bbsched.selection import (
    MAX_EXACT_JOBS,
    RULES,
    ParetoSet,
    Window,
    bin_packing_select,
    choose,
    constrained_pick,
    exact_pareto,
    weighted_pick,
)
from market_hpc.errors import ConfigError
from market_hpc.parameters import FRACTION, Param, declared_parameters
from market_hpc.policies.base import Allocator, View
from market_hpc.policies.bbsched.window import (
    BASE_ORDERS,
    DEFAULT_STARVATION,
    WindowScheduler,
    wfp_order,
)
from market_hpc.policies.registry import register_scheduler, scheduler_entry
from market_hpc.validation import MAX_INT, Range

__all__ = [
    "ALLOCATORS",
    "BASE_ORDERS",
    "BB_SCHEDULERS",
    "DEFAULT_STARVATION",
    "WINDOW_SCHEDULERS",
    "WindowScheduler",
    "wfp_order",
    "window_declarations",
    "window_params",
]

ALLOCATORS = WindowScheduler.allocators
"""The allocators every window scheduler composes with (declared on ``WindowScheduler``)."""
SOLVERS = ("auto", "exact", "ga")


def _totals(view: View) -> tuple[float, float]:
    return float(view.platform.total[0]), float(view.platform.burst_buffer)


@register_scheduler
class BbBaseline(WindowScheduler):
    """The naive method (Slurm-like): serve the base order while jobs fit, then EASY."""

    label = "bb-baseline"
    summary = "BBSched Baseline: base order (fcfs/wfp) under EASY over nodes and burst buffer"


class _Weighted(WindowScheduler):
    weights = (0.5, 0.5)
    max_window = 62

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        return weighted_pick(dp_pareto(window), window.size, *self.weights, *_totals(view))


@register_scheduler
class BbWeighted(_Weighted):
    label = "bb-weighted"
    summary = "BBSched Weighted: max 0.5 node + 0.5 burst-buffer utilisation of the window"


@register_scheduler
class BbWeightedCpu(_Weighted):
    label = "bb-weighted-cpu"
    summary = "BBSched Weighted_CPU: max 0.8 node + 0.2 burst-buffer utilisation"
    weights = (0.8, 0.2)


@register_scheduler
class BbWeightedBb(_Weighted):
    label = "bb-weighted-bb"
    summary = "BBSched Weighted_BB: max 0.2 node + 0.8 burst-buffer utilisation"
    weights = (0.2, 0.8)


class _Constrained(WindowScheduler):
    resource = "nodes"
    max_window = 62

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        return constrained_pick(dp_pareto(window), window.size, self.resource)


@register_scheduler
class BbConstrainedCpu(_Constrained):
    label = "bb-constrained-cpu"
    summary = "BBSched Constrained_CPU: max nodes used, burst buffer as a constraint"


@register_scheduler
class BbConstrainedBb(_Constrained):
    label = "bb-constrained-bb"
    summary = "BBSched Constrained_BB: max burst buffer used, nodes as a constraint"
    resource = "bb"


@register_scheduler
class BbBinPacking(WindowScheduler):
    """Bin_Packing; ``normalise=False``: raw units as the reference code (default: by capacity)."""

    label = "bb-binpacking"
    summary = "BBSched Bin_Packing: Tetris-like alignment score over the window"
    parameters: ClassVar[Mapping[str, Param]] = {
        **WindowScheduler.parameters,
        "normalise": Param("bool"),
    }

    def __init__(self, allocator: Allocator, normalise: bool = True, **params: Any) -> None:
        super().__init__(allocator, **params)
        self.normalise = normalise

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        return bin_packing_select(window, *_totals(view), normalise=self.normalise)


@register_scheduler
class BbSched(WindowScheduler):
    """BBSched (Fan et al. 2019): the window's Pareto set, then the paper's decision rule.

    Args:
        allocator: Where jobs go.
        solver: How the Pareto set is found. ``auto`` (default): exactly by dynamic
            programming (``algorithms.bbsched_exact``) when that costs at most
            ``exact_budget`` machine words (``dp_cost``), else the paper's GA; ``exact``:
            always exactly; ``ga``: the paper's GA, except that windows of at most
            ``exhaustive_up_to`` fitting jobs are enumerated (the reference code's 10).
        generations: G (500). population: P (20). mutation: p_m (0.0005).
        rule: Decision rule, ``paper`` (2x) or ``code`` (the reference implementation's).
        exhaustive_up_to: See ``solver = "ga"`` (0: the GA always runs).
        exact_budget: See ``solver = "auto"``; the default is where the exact solver
            costs about what the GA (G = 500, P = 20) costs (``benchmarks/bbsched.py``).
        **params: ``window``, ``order``, ``starvation``, ``starvation_by``, ``starvation_backstop``.
    """

    label = "bbsched"
    summary = "BBSched: GA Pareto set of (nodes, burst buffer) + the paper's decision rule"
    max_window = 62
    parameters: ClassVar[Mapping[str, Param]] = {
        **WindowScheduler.parameters,
        "solver": Param("str", choices=SOLVERS),
        # with population, bounded together by params.GA_WORK_LIMIT; alone: 200 x the
        # paper's G = 500
        "generations": Param("int", Range(0, 100_000, integer=True)),
        # 50 x the paper's P = 20: survivor selection grows faster than P (per chromosome
        # and generation about 0.1 ms at P = 1,000, 2.7 ms at P = 20,000:
        # benchmarks/bbsched.py shape)
        "population": Param("int", Range(2, 1_000, integer=True)),
        "mutation": Param("float", FRACTION),
        "rule": Param("str", choices=RULES),
        "exhaustive_up_to": Param("int", Range(0, MAX_EXACT_JOBS, integer=True)),
        "exact_budget": Param("int", Range(0, MAX_INT, integer=True)),
    }

    def __init__(
        self,
        allocator: Allocator,
        solver: str = "auto",
        generations: int = 500,
        population: int = 20,
        mutation: float = 0.0005,
        rule: str = "paper",
        exhaustive_up_to: int = 10,
        exact_budget: int = EXACT_BUDGET,
        **params: Any,
    ) -> None:
        super().__init__(allocator, **params)
        # (the choices and ranges of ``parameters``, as a configuration is checked)
        self.check_declared(
            rule=rule, solver=solver, exhaustive_up_to=exhaustive_up_to, exact_budget=exact_budget
        )
        try:
            self.settings = GaSettings(generations, population, mutation)
        except ValueError as exc:
            raise ConfigError(f"bbsched: {exc}") from None
        self.solver = solver
        self.rule = rule
        self.exhaustive_up_to = exhaustive_up_to
        self.exact_budget = exact_budget
        self.stats["ga_runs"] = 0
        self.stats["exact_runs"] = 0

    def pareto(self, window: Window, rng: np.random.Generator) -> ParetoSet:
        """The window's Pareto set by the configured solver (counted in ``stats``)."""
        if window.long_start < window.size:
            use_ga = False  # under a reservation: the GA kernels know only the free capacities
        elif self.solver == "ga":
            use_ga = window.size > self.exhaustive_up_to
        else:
            use_ga = self.solver == "auto" and dp_cost(window) > self.exact_budget
        if self.recording:
            self.stats["ga_runs" if use_ga else "exact_runs"] += 1
        if not use_ga:
            enumerate_it = self.solver == "ga" and window.size <= self.exhaustive_up_to
            return exact_pareto(window) if enumerate_it else dp_pareto(window)
        return ga_pareto(window, self.settings, int(rng.integers(2**63)))

    def select(self, window: Window, view: View, rng: np.random.Generator) -> int | None:
        front = self.pareto(window, rng)
        total_nodes, total_bb = _totals(view)
        used_bb = total_bb - view.free_bb
        return choose(
            front,
            window.size,
            total_nodes,
            total_bb,
            self.rule,
            total_nodes - view.free_total[0],
            used_bb,
        )


WINDOW_SCHEDULERS: tuple[type[WindowScheduler], ...] = (
    BbSched,
    BbBaseline,
    BbWeighted,
    BbWeightedCpu,
    BbWeightedBb,
    BbConstrainedCpu,
    BbConstrainedBb,
    BbBinPacking,
)
"""The window scheduler classes: ``policy.window`` is the union of their parameters."""
BB_SCHEDULERS = tuple(cls.label for cls in WINDOW_SCHEDULERS)
"""Their registered names."""

_SETTING = {"window": "size"}  # a declared parameter's policy.window key, where it differs


def window_params(scheduler: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """Constructor parameters of a window scheduler from ``policy.window`` settings
    (``None`` for other schedulers, which take none of them).

    >>> window_params("bb-weighted",
    ...               {"size": 10, "order": "wfp", "starvation": 60.0, "rule": "code"})
    {'window': 10, 'order': 'wfp', 'starvation': 60.0}
    >>> window_params("easy", {"size": 10}) is None
    True
    """
    if scheduler not in BB_SCHEDULERS:
        return None
    declared = scheduler_entry(scheduler).parameters or {}
    keys = ((name, _SETTING.get(name, name)) for name in declared)
    return {name: settings[key] for name, key in keys if key in settings}


def window_declarations() -> dict[str, Param]:
    """Every ``policy.window`` setting as the window schedulers declare it (kind, range or
    choices, and the constructor's default), by setting name (``size`` for ``window``); the
    first scheduler of ``WINDOW_SCHEDULERS`` declaring a name gives it.
    ``experiment.config.WindowConfig`` is made of these.

    >>> declared = window_declarations()
    >>> declared["size"].default, declared["rule"].default, declared["exact_budget"].default
    (20, 'paper', 4000000)
    >>> declared["normalise"].kind, declared["population"].describe()
    ('bool', 'an integer in [2, 1000]')
    """
    found: dict[str, Param] = {}
    for cls in WINDOW_SCHEDULERS:
        for name, param in (declared_parameters("scheduler", cls.label, cls) or {}).items():
            found.setdefault(_SETTING.get(name, name), param)
    return found
