"""Scenario configuration: TOML in, frozen validated dataclasses out.

A scenario file::

    name = "kth-easy"
    platform = "kth-sp2"          # preset, inline spec or platform TOML
    seed = 1
    exclusive = false             # whole nodes per job
    timeseries = true

    [workload]
    trace = "kth-sp2"       # catalogue name, file name or path; or: generator = "lublin-feitelson"
    load_factor = 1.0
    first_n = 5000

    [policy]
    scheduler = "easy"
    allocator = "first-fit"

Every key has a dotted path (``policy.scheduler``, ``workload.load_factor``, ``seed``)
used by ``--set`` and by sweeps. Unknown keys and ill-typed values raise
``ConfigError`` naming the path, the value received and what is valid.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from market_hpc.errors import ConfigError, InvalidNumberError, UnknownNameError
from market_hpc.policies.bbsched.schedulers import window_declarations
from market_hpc.tomlfile import read_toml
from market_hpc.validation import (
    COUNT,
    FRACTION,
    NON_NEGATIVE_INT,
    POSITIVE_FACTOR,
    TIME,
    check,
)
from market_hpc.workload.accelerators import AcceleratorRule
from market_hpc.workload.all_families import AllFamiliesRule, check_source
from market_hpc.workload.burst_buffer import BurstBufferRule
from market_hpc.workload.generators import GENERATORS as GENERATOR_ENTRIES
from market_hpc.workload.generators import check_own_parameters, generator_entry
from market_hpc.workload.trace_catalogue import resolve_trace

GENERATORS = tuple(GENERATOR_ENTRIES)  # the names of market_hpc.workload.generators.GENERATORS
CURVE_REGIME_NAMES = ("spec", "steep")


@dataclass(frozen=True)
class WorkloadConfig:
    """Where jobs come from and how they are transformed.

    Attributes:
        trace: SWF file (plain or .gz); relative paths are resolved against the
            scenario file's folder; a catalogue name (``kth-sp2``) or a file name is found
            in the trace cache or the trace folders (``trace_catalogue.resolve_trace``).
        jobset: Task-graph job set JSON (market dispatchers).
        generator: Synthetic generator name when no file is given.
        jobs: Number of jobs to generate.
        max_procs: Largest generated job (default: platform cores).
        load: Offered load of generated task-graph job sets and of the ``kit`` generator
            (arrival rate x mean work / platform cores; > 1 overloads the platform). Unlike
            ``load_factor`` it shapes the generator; ``load_factor`` compresses any workload
            afterwards.
        lenient: Skip malformed trace lines (counted per anomaly) instead of failing.
        load_factor: Compress inter-arrival times by this factor (> 1 = more load).
        first_n: Keep only the first N jobs.
        start: Keep jobs submitted at or after this time (seconds).
        end: Keep jobs submitted before this time.
        curves: Value-curve regime of generated task-graph jobs: ``spec`` (decay over
            1-3 x the serial run time) or ``steep`` (0.2-0.6 x).
        curve_shape: Value-curve shape of generated task-graph jobs: ``linear_decay``,
            ``step`` or ``exponential`` (``workload.taskgraph_jobs.CURVE_SHAPES``).
        market: Give trace jobs speedup profiles and value curves
            (``workload.market_rule``) so market policies can run on them.
        serial_fraction: Amdahl serial fraction of the market rule.
        plateau_slack: Seconds of full value after the fastest completion (market rule).
        month: Month profile of the ``eurora`` generator (``2014-04``, ``2014-08``,
            ``2014-09``, ``2015-04``; none: whole-trace averages), as in Netti et al.
        accelerators: Rule adding GPU/MIC unit requests to the jobs
            (``workload.accelerators``; off unless a partition or user share is set).
        burst_buffer: Burst-buffer pool size and S1-S4 request synthesis
            (``workload.burst_buffer``), BBSched.
        all_families: One workload for every family (``workload.all_families``): value
            curves, profiles, burst-buffer and accelerator requests on a trace; when
            enabled, an unset ``burst_buffer`` becomes the rule's (resolved here, so
            ``config.json`` shows the pool rule in force).
    """

    trace: str | None = None
    jobset: str | None = None
    generator: str | None = None
    jobs: int = 1000
    max_procs: int | None = None
    load: float = 2.0
    lenient: bool = False
    load_factor: float = 1.0
    first_n: int | None = None
    start: float | None = None
    end: float | None = None
    curves: str = "spec"
    curve_shape: str = "linear_decay"
    market: bool = False
    serial_fraction: float = 0.05
    plateau_slack: float = 4 * 3600.0
    month: str | None = None
    accelerators: AcceleratorRule = field(default_factory=AcceleratorRule)
    burst_buffer: BurstBufferRule = field(default_factory=BurstBufferRule)
    all_families: AllFamiliesRule = field(default_factory=AllFamiliesRule)

    def __post_init__(self) -> None:
        sources = [s for s in (self.trace, self.jobset, self.generator) if s is not None]
        if len(sources) != 1:
            raise ConfigError(
                "workload needs exactly one of trace, jobset or generator; got "
                + (
                    ", ".join(
                        f"{k}={v!r}"
                        for k, v in (
                            ("trace", self.trace),
                            ("jobset", self.jobset),
                            ("generator", self.generator),
                        )
                        if v
                    )
                    or "none"
                )
            )
        if self.generator is not None:
            generator_entry(self.generator)  # refuses an unknown name, listing the valid ones
        check(self.load_factor, POSITIVE_FACTOR, "workload.load_factor")
        if self.curves not in CURVE_REGIME_NAMES:
            raise UnknownNameError("workload.curves", self.curves, CURVE_REGIME_NAMES)
        if (
            self.curve_shape != "linear_decay"
        ):  # the default: no import of the task-graph jobs for it
            from market_hpc.workload.taskgraph_jobs import CURVE_SHAPES

            if self.curve_shape not in CURVE_SHAPES:
                raise UnknownNameError("workload.curve_shape", self.curve_shape, CURVE_SHAPES)
        check(self.load, POSITIVE_FACTOR, "workload.load")
        check(self.jobs, COUNT, "workload.jobs")
        for key in ("first_n", "max_procs"):
            if getattr(self, key) is not None:
                check(getattr(self, key), COUNT, f"workload.{key}")
        for key in ("start", "end"):
            if getattr(self, key) is not None:
                check(getattr(self, key), TIME, f"workload.{key}")
        check(self.serial_fraction, FRACTION, "workload.serial_fraction")
        check(self.plateau_slack, TIME, "workload.plateau_slack")
        check_own_parameters(self)  # e.g. workload.month: eurora's only
        if self.all_families.enabled:
            check_source(self.all_families, self.trace)
            if self.market:
                raise ConfigError(
                    "workload: set market = true or all_families.enabled = true, not both (the "
                    "all-families rule includes the market rule)"
                )
            object.__setattr__(
                self,
                "burst_buffer",
                self.all_families.burst_buffer(self.burst_buffer, self.load_factor),
            )


_KINDS = {"int": int, "float": float, "str": str, "bool": bool}  # a declared kind's type


def _check_window(self: Any) -> None:
    """Every setting against its declaration (the class's ``declared``, read once from
    ``window_declarations``), then the one rule between two of them."""
    for key, declared in self.declared.items():
        value = getattr(self, key)
        if declared.accepts(value):
            continue
        if declared.choices:
            raise UnknownNameError(f"policy.window.{key}", value, declared.choices)
        raise InvalidNumberError(f"policy.window.{key}", value, declared.describe())
    if self.starvation_by == "passed-over" and self.starvation_backstop == 0:
        raise ConfigError(
            "policy.window.starvation_backstop must be > 0 seconds with starvation_by = "
            '"passed-over" (a job that never fits is never passed over)'
        )


def _window_config() -> type:
    """``WindowConfig``: a frozen dataclass with one field per declared window setting."""
    declared = window_declarations()
    return dataclasses.make_dataclass(
        "WindowConfig",
        [
            (key, _KINDS[param.kind], field(default=param.default))
            for key, param in declared.items()
        ],
        frozen=True,
        namespace={
            "__module__": __name__,
            "__post_init__": _check_window,
            "__doc__": _WINDOW_DOC,
            "declared": types.MappingProxyType(declared),
        },
    )


_WINDOW_DOC = """Parameters of the BBSched window schedulers (``policy.window``; ``bbsched`` and
``bb-*``, see ``market_hpc.policies.bbsched.schedulers``).

One field per parameter the window schedulers declare (``window_declarations``: ``size``
is their ``window``), of the declared kind, with the constructor's default, checked
against the declared range or choices when built; ``market-hpc policies bbsched`` and the
parameter tables of ``docs/parameters.md`` list them. Declaring a parameter on a window
scheduler adds its field here.
"""

if typing.TYPE_CHECKING:

    class WindowConfig:  # what the type checker sees of the class made below
        __dataclass_fields__: typing.ClassVar[dict[str, Any]]

        def __init__(self, **settings: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...

else:
    WindowConfig = _window_config()


@dataclass(frozen=True)
class PolicyConfig:
    """Which dispatcher runs.

    Attributes:
        scheduler: Registered scheduler name (``market-hpc`` lists them).
        allocator: Registered allocator name (default: the scheduler's default).
        bidder: Registered bidder name: how node agents bid in market auctions (default:
            ``free-cores``, as in the market paper).
        hold_penalty: Fraction of a held job's maximum value charged per hold (market holding).
        predictor: Run-time predictor whose predictions schedulers see
            (``market_hpc.core.predictors``: wall-time, data-driven, real; none: the
            workload's estimates), as in Netti et al.
        resume_seconds: Holding cost: time every resumed segment spends resuming (market paper: 0).
        hold_progress_loss: Holding cost: fraction of a held segment's work lost (market paper: 0).
        every_step: Decide at every integer time step while jobs wait, as the market
            paper's loop (default: only at events; docs/market.md, "Decision timing").
        window: Window scheduler parameters (BBSched).
        params: Keyword parameters of the scheduler (a ``[policy.params]`` table, e.g.
            the CP dispatchers' ``deterministic_time``); checked when the configuration is
            read. A market scheduler's ``penalty`` is not one of them: it is
            ``hold_penalty`` (the Python API's ``make_policy(..., scheduler_params=
            {"penalty": ...})`` keeps the name).
        slurm_conf: A slurm.conf the ``slurm`` scheduler reads (``policies.slurm.conf``;
            ``params`` override its keys); read here, so a bad line fails before the run.
            ``none`` (as unset) lets a sweep give other schedulers none.
    """

    scheduler: str = "fifo"
    allocator: str | None = None
    bidder: str | None = None
    hold_penalty: float = 0.0
    predictor: str | None = None
    resume_seconds: float = 0.0
    hold_progress_loss: float = 0.0
    every_step: bool = False
    window: WindowConfig = field(default_factory=WindowConfig)
    params: dict[str, Any] = field(default_factory=dict)
    slurm_conf: str | None = None

    def __post_init__(self) -> None:
        if self.slurm_conf == "none":  # a sweep's "no slurm.conf" beside paths (TOML has no null)
            object.__setattr__(self, "slurm_conf", None)
        if self.slurm_conf is not None:
            if self.scheduler.lower() != "slurm":
                raise ConfigError(
                    f"policy.slurm_conf: only scheduler 'slurm' reads a slurm.conf; "
                    f"policy.scheduler is {self.scheduler!r}"
                )
            from market_hpc.policies.slurm.conf import read_slurm_conf

            read_slurm_conf(self.slurm_conf)  # a bad line is an error now, naming it
            object.__setattr__(self, "params", {"slurm_conf": self.slurm_conf, **self.params})
        check(self.hold_penalty, FRACTION, "policy.hold_penalty")
        check(self.resume_seconds, TIME, "policy.resume_seconds")
        check(self.hold_progress_loss, FRACTION, "policy.hold_progress_loss")
        if self.predictor is not None:
            from market_hpc.core.predictors import PREDICTORS

            if self.predictor not in PREDICTORS:
                raise UnknownNameError("policy.predictor", self.predictor, PREDICTORS)
        from market_hpc.policies.params import check_params
        from market_hpc.policies.registry import parameters_of

        if "penalty" in self.params and "penalty" in (
            parameters_of("scheduler", self.scheduler) or {}
        ):
            # one scenario key for the market's penalty: the one charged is the one decided with
            raise ConfigError(
                f"policy.params.penalty is not a scenario key (scheduler {self.scheduler!r}); use "
                f"policy.hold_penalty = {self.params['penalty']!r}: it is both the penalty the "
                "policy decides with and the one each hold is charged"
            )
        check_params(
            "scheduler",
            self.scheduler.lower(),
            self.params,
            parameters_of("scheduler", self.scheduler),
        )
        if self.scheduler.lower() == "bbsched":  # the GA's work, policy.window's G and P included
            from market_hpc.policies.params import check_work

            check_work(
                "bbsched",
                {
                    "generations": self.window.generations,
                    "population": self.window.population,
                    **self.params,
                },
                parameters_of("scheduler", "bbsched"),
            )


QUEUE_STRATEGIES = ("static", "proportional", "dpnlpm", "dqr", "hybrid", "nonpartitioned")


@dataclass(frozen=True)
class QueuesConfig:
    """Hybrid-queue runs (Kondameedi & Vadhiyar; ``[queues]``; off unless ``strategy`` is set).

    Attributes:
        strategy: ``static``, ``proportional``, ``dpnlpm``, ``dqr``, ``hybrid`` or
            ``nonpartitioned`` (``market_hpc.experiment.queues``); ``none`` (as unset) lets
            a sweep turn queues off for some points.
        period_days: Reconfiguration period; each period is configured from the previous one.
        epochs: History epochs of the weighted NLP (weights 1/3, 2/3, 1 for 3).
        samples: Partition sets simulated per epoch.
        chunk_cores: Pool carving step (processors, rounded up to whole nodes).
        degradation: Allowed wait degradation while carving the pool (degPercent).
        alpha: Relaxation of Eq. 6 (keep alpha x the Eq. 7 share).
        tau_util: Utilisation share defining the lower bounds (Eq. 4).
        tau_pf: Priority-factor threshold for the pool.
        lb_points: Sizes per queue in the lower-bound sweep.
        max_queues: Most queues DQR splits into.
        open_wall: Lift Table I's longest wall limits (archive traces ask for more).
        catch_all: Queue taking jobs no queue accepts (none: such jobs are an error).
        workers: Local processes for the sampling simulations (1: in this process).
        dask: Dask address for them instead (``local:N`` or ``tcp://...``).
    """

    strategy: str | None = None
    period_days: float = 30.0
    epochs: int = 3
    samples: int = 100
    chunk_cores: int = 5
    degradation: float = 0.30
    alpha: float = 0.5
    tau_util: float = 0.9
    tau_pf: float = 0.5
    lb_points: int = 8
    max_queues: int = 8
    open_wall: bool = True
    catch_all: str | None = None
    workers: int = 1
    dask: str | None = None

    def __post_init__(self) -> None:
        if (
            self.strategy == "none"
        ):  # a sweep's way to say "no queues" beside strategies (TOML has no null)
            object.__setattr__(self, "strategy", None)
        if self.strategy is not None and self.strategy not in QUEUE_STRATEGIES:
            raise UnknownNameError("queues.strategy", self.strategy, QUEUE_STRATEGIES)
        for key in ("period_days", "degradation", "alpha", "tau_util", "tau_pf"):
            check(getattr(self, key), POSITIVE_FACTOR, f"queues.{key}")
        for key in ("epochs", "samples", "chunk_cores", "lb_points", "max_queues", "workers"):
            check(getattr(self, key), COUNT, f"queues.{key}")


@dataclass(frozen=True)
class RunConfig:
    """One simulation run, fully specified."""

    workload: WorkloadConfig
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    name: str = "run"
    platform: str = "kth-sp2"
    seed: int = 0
    exclusive: bool = False
    timeseries: bool = True
    queues: QueuesConfig = field(default_factory=QueuesConfig)

    def __post_init__(self) -> None:
        check(self.seed, NON_NEGATIVE_INT, "seed")

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (the inverse of ``config_from_dict``)."""
        data = dataclasses.asdict(self)
        if not data["policy"]["params"]:  # absent when empty: sweep run ids stay as they were
            del data["policy"]["params"]
        if data["policy"]["bidder"] is None:  # the same for the default bidder
            del data["policy"]["bidder"]
        if data["policy"]["slurm_conf"] is None:  # and without a slurm.conf
            del data["policy"]["slurm_conf"]
        if data["workload"]["all_families"] == dataclasses.asdict(
            AllFamiliesRule()
        ):  # and the rule when off
            del data["workload"]["all_families"]
        return data


def _check_type(path: str, value: Any, annotation: Any) -> Any:
    hint = annotation
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None and type(None) in allowed:
        return None
    for kind in allowed:
        if typing.get_origin(kind) is dict and isinstance(value, dict):
            return dict(value)
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):  # TOML has nan and inf; no key takes them
                raise InvalidNumberError(path, value, "a finite number")
            return float(value)
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind in (str, bool) and isinstance(value, kind):
            return value
    names = " or ".join("none" if k is type(None) else k.__name__ for k in allowed)
    raise ConfigError(f"{path}: expected {names}, got {value!r}")


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints`` once per class (it evaluates every annotation anew: most
    of the time of checking a sweep's points)."""
    return typing.get_type_hints(cls)


def _build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if key not in fields:
            raise UnknownNameError("config key", path, [f"{prefix}{k}" for k in fields])
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: expected a table, got {value!r}")
            kwargs[key] = _build(hint, value, f"{path}.")  # type: ignore[arg-type]
        else:
            kwargs[key] = _check_type(path, value, hint)
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{prefix or 'scenario'}: {exc}") from None


def config_from_dict(data: dict[str, Any], base_dir: Path | None = None) -> RunConfig:
    """Validate a nested dict into a ``RunConfig``.

    Relative ``workload.trace`` / ``workload.jobset`` paths are resolved against
    ``base_dir`` when given; a trace may also be a catalogue name or a trace file name
    (``trace_catalogue.resolve_trace``: the cache ``trace fetch`` fills, then
    ``$MARKET_HPC_TRACES`` or ``../shared/traces``), and is stored as the file found.

    Raises:
        ConfigError: invalid keys or values, or a catalogue trace found nowhere.
    """
    if "workload" not in data:
        raise ConfigError("scenario needs a [workload] table (trace, jobset or generator)")
    policy = data.get("policy")
    if (
        base_dir is not None
        and isinstance(policy, dict)
        and isinstance(policy.get("slurm_conf"), str)
        and policy["slurm_conf"] != "none"
        and not Path(policy["slurm_conf"]).is_absolute()
    ):
        data = {
            **data,
            "policy": {**policy, "slurm_conf": str((base_dir / policy["slurm_conf"]).resolve())},
        }
    config: RunConfig = _build(RunConfig, data, "")
    if base_dir is not None:
        workload = config.workload
        updates: dict[str, Any] = {}
        if workload.trace is not None:
            updates["trace"] = resolve_trace(workload.trace, base_dir)
        if workload.jobset is not None and not Path(workload.jobset).is_absolute():
            updates["jobset"] = str((base_dir / workload.jobset).resolve())
        if updates:
            config = dataclasses.replace(config, workload=dataclasses.replace(workload, **updates))
    return config


def parse_value(raw: str) -> Any:
    """Parse a ``--set`` value as a TOML literal, falling back to a plain string.

    >>> parse_value("0.5"), parse_value("true"), parse_value("easy"), parse_value('"7"')
    (0.5, True, 'easy', '7')
    """
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``data[a][b] = value`` for ``path = "a.b"``, creating tables as needed."""
    *tables, leaf = path.split(".")
    node = data
    for table in tables:
        child = node.setdefault(table, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{path}: {table!r} is not a table")
        node = child
    node[leaf] = value


def load_scenario(path: str | Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Read a scenario TOML file, apply ``overrides`` (dotted paths), validate.

    Raises:
        ConfigError: unreadable file, invalid TOML, unknown keys, bad values.
    """
    file = Path(path)
    data = read_toml(file, "scenario")
    for key, value in (overrides or {}).items():
        set_path(data, key, value)
    return config_from_dict(data, base_dir=file.parent)
