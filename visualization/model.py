"""``VizModel``: the ``HPCModel`` the browser app drives, built from the UI's parameters.

Mesa's SolaraViz re-creates the model on Reset as ``VizModel(**parameters)``, so every
control is a keyword argument here. No solara import: the benchmark and tests build it
without a browser.

Decisions:

* The workload is built by the same code as ``market-hpc run`` (``build_workload`` of a
  validated scenario config), so every generator and trace file works here as in a
  scenario. ``auto`` picks task graphs from the bundled HLRS-like library for market
  policies (``scheduler_entry(name).market``) and a Lublin-Feitelson workload otherwise.
  Market policies on any other workload get value curves by the market rule
  (``workload.market``). ``jobs`` is the generated count, or the first N jobs of a trace;
  task-graph sets are scaled to the platform's nodes (``scaled_job_count``: 1,500 on
  32 nodes, 20,000 at most, on Curie) so a large platform is busy.
* Burst-buffer policies (``bb*``) get seed 003's S1 requests (Theta's, scaled to the
  platform) and a pool sized as ``workload.burst_buffer.target_load = 0.75`` sizes it:
  the requests offer 75 % of the pool over the workload's span (at least the largest
  request). Theta's pool scaled to the default platform (146,942 GB) sat at about 4 %
  in the first steps and a median of 21 % over 300 steps; this pool (40,040 GB there)
  at a median of 77 % and up to 100 % (measured, ``bbsched``, seed 1).
* ``load`` is the offered load of task-graph sets and the arrival-rate multiplier
  (``workload.load_factor``) of every other workload.
* ``gpu_share``/``mic_share`` turn that share of the jobs into GPU/MIC jobs with the
  accelerator rule of seed 000 (``workload.accelerators``; 4 cores + 1 accelerator per
  unit). The rule draws users; generated jobs have none, so each job counts as its own
  user and the share is a share of jobs. The Eurora generator already asks for GPUs and
  MICs and is left as it is.
* ``platform = "custom"`` builds ``nodes`` x (``cores``, ``gpus``, ``mics``) nodes; every
  other value is a preset or an inline spec and ignores those four controls.
* With a scenario file, its workload is used instead and the controls override its
  policy, platform, seed, holding penalty and ``workload.load_factor``.
* A workload or policy that cannot be built, or a policy error during a step, stops the
  model and is shown as ``error`` in the page instead of a traceback.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path
from typing import Any

from market_hpc.core.model import HPCModel, make_market_aware_policy
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform, load_platform
from market_hpc.errors import ConfigError, MarketHpcError
from market_hpc.policies.registry import scheduler_entry
from market_hpc.viz import SCENARIO_ENV

DEFAULT_POLICY = "maxvdh"
DEFAULT_PLATFORM = "nodes=32,cores=16"
EXTRA_PLATFORMS = ("nodes=16,cores=16", "nodes=32,cores=16", "nodes=64,cores=32")
CUSTOM = "custom"
AUTO = "auto"
DEFAULT_ALLOCATOR = "default"
TRACE = "trace file"
WORKLOADS = (AUTO, "lublin-feitelson", "taskgraphs", "eurora", TRACE)
# Burst-buffer policies get seed 003's S1 requests (half the jobs ask for burst buffer,
# Theta's requests scaled to the platform) and a pool those requests load to
# BB_TARGET_LOAD, so the pool is under pressure, as in the paper (``with_burst_buffer``).
BURST_BUFFER = {"scenario": "S1", "machine": "theta"}
BB_TARGET_LOAD = 0.75
REFERENCE_NODES = 32  # the default platform's nodes: task-graph job counts scale from it
MAX_SCALED_JOBS = 20_000  # 30,000 on Curie: some steps took minutes (measured, shared machine)
SECONDS = "s"
TIME_UNITS = "time-units"


def platform_spec(platform: str, nodes: int, cores: int, gpus: int, mics: int) -> str:
    """The platform the controls describe: a preset/inline spec, or the custom sliders.

    >>> platform_spec("custom", 8, 16, 2, 0)
    'nodes=8,cores=16,gpus=2,mics=0'
    >>> platform_spec("eurora", 8, 16, 2, 0)
    'eurora'
    """
    if platform == CUSTOM:
        return f"nodes={int(nodes)},cores={int(cores)},gpus={int(gpus)},mics={int(mics)}"
    return platform


def workload_table(policy: str, workload: str, trace: str, n_jobs: int, load: float) -> dict[str, Any]:
    """The scenario ``[workload]`` table of the controls (see the module docstring)."""
    market = scheduler_entry(policy).market
    kind = workload_kind(policy, workload)
    if kind == TRACE:
        if not trace.strip():
            raise ConfigError("workload 'trace file' needs the path of an SWF trace in the "
                              "'trace file' box (e.g. ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz)")
        table: dict[str, Any] = {"trace": trace.strip(), "first_n": int(n_jobs), "lenient": True}
    elif kind in WORKLOADS:
        table = {"generator": kind, "jobs": int(n_jobs)}
    else:
        raise ConfigError(f"workload {workload!r}; valid choices: {', '.join(WORKLOADS)}")
    if kind == "taskgraphs":
        table["load"] = float(load)
    elif float(load) != 1.0:
        table["load_factor"] = float(load)
    if market and kind != "taskgraphs":
        table["market"] = True
    if uses_burst_buffer(policy):
        table["burst_buffer"] = dict(BURST_BUFFER)
    return table


def workload_kind(policy: str, workload: str) -> str:
    """What ``auto`` means for the policy: task graphs for market policies, else a
    Lublin-Feitelson workload; any other choice is itself."""
    if workload != AUTO:
        return workload
    return "taskgraphs" if scheduler_entry(policy).market else "lublin-feitelson"


def scaled_job_count(n_jobs: int, platform: Platform, policy: str, workload: str) -> int:
    """The jobs to generate: the ``jobs`` control, times the platform's nodes over
    ``REFERENCE_NODES`` for task-graph sets, at most ``MAX_SCALED_JOBS``.

    A task-graph job runs on one node and the arrival rate grows with the platform's
    cores, so 1,500 jobs on Curie (5,544 nodes) all arrive within a minute and never
    hold more than 6 % of the cores (measured). With 20,000 jobs, Curie at load 2 had a
    median of 65 % and at most 83 % of its cores busy over the first 40 steps (the run
    lasts 75 simulated seconds), a step taking 11 ms on average and 0.21 s at most. Scaling the count with the nodes keeps the same
    number of jobs per node as the default platform (32 nodes); the cap keeps a Reset
    to a second and a step to tenths of a second. Lublin-Feitelson job sizes
    already grow with the platform (81 % of Curie's cores busy at load 2 with 1,500
    jobs), and traces and scenarios are left as they are.

    >>> scaled_job_count(1500, load_platform("nodes=32,cores=16"), "maxvdh", AUTO)
    1500
    >>> scaled_job_count(100, load_platform("nodes=320,cores=16"), "maxvdh", AUTO)
    1000
    >>> scaled_job_count(1500, load_platform("curie"), "maxvdh", AUTO)
    20000
    >>> scaled_job_count(1500, load_platform("curie"), "easy", AUTO)
    1500
    """
    if workload_kind(policy, workload) != "taskgraphs":
        return int(n_jobs)
    scaled = int(n_jobs) * max(1, round(platform.n_nodes / REFERENCE_NODES))
    return max(int(n_jobs), min(scaled, MAX_SCALED_JOBS))


def uses_burst_buffer(policy: str) -> bool:
    """Whether the policy is one of seed 003's burst-buffer schedulers (``bb*``)."""
    return policy.lower().startswith("bb")


def with_burst_buffer(policy: str, platform: Platform, jobs: list[Job]) -> Platform:
    """The platform with a pool for a burst-buffer policy, unchanged otherwise: sized as
    ``workload.burst_buffer.target_load = BB_TARGET_LOAD`` sizes it (the jobs' S1
    requests offer that load: ``BurstBufferRule.target_capacity``), and never smaller
    than the largest request, so every job can run."""
    if not uses_burst_buffer(policy) or platform.burst_buffer > 0:
        return platform
    from market_hpc.workload.burst_buffer import BurstBufferRule

    rule = BurstBufferRule(**BURST_BUFFER, target_load=BB_TARGET_LOAD,  # type: ignore[arg-type]
                           target_scenario=BURST_BUFFER["scenario"])
    pool = rule.target_capacity(jobs, platform.total_cores)
    return dataclasses.replace(platform, burst_buffer=max(pool, max((job.bb for job in jobs), default=0.0)))


def with_accelerators(jobs: list[Job], platform: Platform, gpu_share: float, mic_share: float,
                      seed: int) -> list[Job]:
    """Turn a share of CPU-only jobs into GPU/MIC jobs (seed 000's accelerator rule)."""
    if gpu_share <= 0 and mic_share <= 0:
        return jobs
    from market_hpc.workload.accelerators import AcceleratorRule, add_accelerators

    rule = AcceleratorRule(gpu_users=float(gpu_share), mic_users=float(mic_share), seed=int(seed))
    users = [job if job.user >= 0 else dataclasses.replace(job, user=job.job_id) for job in jobs]
    converted, _ = add_accelerators(users, rule, platform)
    return list(converted)


def generated_jobs(policy: str, platform: Platform, n_jobs: int, load: float, seed: int,
                   workload: str = AUTO, trace: str = "") -> list[Job]:
    """The workload the controls describe, built as ``market-hpc run`` builds it."""
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import build_workload

    config = config_from_dict({"platform": "nodes=1,cores=1", "seed": int(seed),
                               "workload": workload_table(policy, workload, trace, n_jobs, load),
                               "policy": {"scheduler": policy}}, base_dir=Path.cwd())
    jobs, _ = build_workload(config, platform)
    return jobs


def scenario_defaults(path: str) -> dict[str, object]:
    """The control values a scenario file starts the app with.

    Raises:
        ConfigError: for an unreadable or invalid scenario.
    """
    from market_hpc.experiment.config import load_scenario

    config = load_scenario(path)
    return {"policy": config.policy.scheduler, "platform": config.platform, "seed": config.seed,
            "hold_penalty": config.policy.hold_penalty, "load": config.workload.load_factor,
            "allocator": config.policy.allocator or DEFAULT_ALLOCATOR}


def scenario_workload(path: str, policy: str, platform: str, load: float, seed: int,
                      hold_penalty: float) -> tuple[list[Job], str | None]:
    """The scenario's jobs with the controls applied as overrides, and its allocator
    (kept only while the policy is the scenario's own scheduler)."""
    from market_hpc.experiment.config import load_scenario
    from market_hpc.experiment.run import build_workload

    overrides: dict[str, object] = {"platform": platform, "seed": seed,
                                    "policy.hold_penalty": hold_penalty, "workload.load_factor": load}
    config = load_scenario(path, overrides)
    allocator = config.policy.allocator if config.policy.scheduler == policy.lower() else None
    jobs, _ = build_workload(config, load_platform(config.platform))
    return jobs, allocator


class VizModel(HPCModel):
    """An ``HPCModel`` whose constructor takes the browser controls.

    Args:
        policy: Registered scheduler name.
        allocator: Registered allocator name, or ``default`` (the scheduler's own).
        platform: Preset name, inline spec, or ``custom`` (the next four controls).
        nodes: Nodes of a custom platform.
        cores: Cores per node of a custom platform.
        gpus: GPUs per node of a custom platform.
        mics: MICs per node of a custom platform.
        workload: ``auto``, a generator name or ``trace file``.
        trace: SWF trace path (with ``workload = "trace file"``).
        jobs: Jobs to generate, or the first N jobs of the trace (ignored with a scenario).
        load: Offered load of task-graph sets, arrival-rate multiplier otherwise.
        gpu_share: Share of jobs made GPU jobs (accelerator rule).
        mic_share: Share of jobs made MIC jobs.
        hold_penalty: Fraction of a held job's maximum value charged per hold.
        seed: The run's one seed.
        scenario_file: Scenario TOML file whose workload to use ("" for the controls';
            defaults to ``$MARKET_HPC_VIZ_SCENARIO``, set by ``market-hpc viz SCENARIO``).
            Not ``scenario``: Mesa >= 3.4 owns ``Model.scenario`` (a
            ``mesa.experimental.scenarios.Scenario``), and Mesa 3.5's Reset passes a fresh
            ``Scenario`` object as ``scenario=`` to every model whose constructor takes one.
    """

    def __init__(
        self,
        policy: str = DEFAULT_POLICY,
        allocator: str = DEFAULT_ALLOCATOR,
        platform: str = DEFAULT_PLATFORM,
        nodes: int = 32,
        cores: int = 16,
        gpus: int = 0,
        mics: int = 0,
        workload: str = AUTO,
        trace: str = "",
        jobs: int = 1500,
        load: float = 2.0,
        gpu_share: float = 0.0,
        mic_share: float = 0.0,
        hold_penalty: float = 0.1,
        seed: int = 1,
        scenario_file: str | None = None,
    ) -> None:
        scenario = os.environ.get(SCENARIO_ENV, "") if scenario_file is None else scenario_file
        self.lock = threading.RLock()  # held while stepping; the tiles read under it (pacing.py)
        self.error: str | None = None
        self.scenario_file = scenario  # not .scenario: Mesa >= 3.4 owns that attribute
        spec = platform_spec(platform, nodes, cores, gpus, mics)
        chosen = None if allocator in ("", DEFAULT_ALLOCATOR) else allocator
        try:
            resolved = load_platform(spec)
            policy_object = None
            if not scenario:  # built first: a failure here must not half-construct the model
                policy_object = make_market_aware_policy(policy, chosen, float(hold_penalty))
            if scenario:
                workload_jobs, scenario_allocator = scenario_workload(
                    scenario, policy, spec, float(load), int(seed), float(hold_penalty))
                chosen = chosen or scenario_allocator
            else:
                count = int(jobs) if workload == TRACE else scaled_job_count(int(jobs), resolved, policy, workload)
                workload_jobs = generated_jobs(policy, resolved, count, float(load), int(seed),
                                               workload, trace)
                if workload != "eurora":
                    workload_jobs = with_accelerators(workload_jobs, resolved, gpu_share, mic_share, seed)
                resolved = with_burst_buffer(policy, resolved, workload_jobs)
            super().__init__(workload_jobs, resolved, policy, chosen, policy=policy_object,
                             hold_penalty=float(hold_penalty), seed=int(seed))
        except MarketHpcError as exc:
            workload_jobs = []
            super().__init__((), "nodes=1,cores=1", "fifo", seed=int(seed))
            self.error = f"{type(exc).__name__}: {exc}"
        self.policy_name = policy if chosen is None else f"{policy} + {chosen}"
        source = "scenario " + os.path.basename(scenario) if scenario else (
            f"trace {os.path.basename(trace)}" if workload == TRACE else workload)
        shares = "".join(f", {100 * share:.0f} % {name} jobs" for share, name in
                         ((gpu_share, "GPU"), (mic_share, "MIC")) if share > 0 and not scenario)
        self.settings_text = (f"workload {source}{shares}, load {float(load):g}, "
                              f"holding penalty {float(hold_penalty):g}, seed {int(seed)}")
        self.n_jobs = len(workload_jobs)
        self.time_unit = TIME_UNITS if any("task_graph" in j.payload for j in workload_jobs[:1]) else SECONDS
        self.market = any("value_curve" in j.payload for j in workload_jobs[:1])

    def step(self) -> None:
        """Advance one instant; a policy error stops the run and is kept in ``error``.

        Under ``lock``: Mesa's Play steps in a thread while a click's render reads the model."""
        with self.lock:
            if self.error is not None:
                self.running = False
                return
            try:
                super().step()
            except MarketHpcError as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                self.running = False


def format_clock(seconds: float, unit: str = SECONDS) -> str:
    """The simulated clock for people: ``1 d 02:03:04`` for seconds, a count otherwise.

    Task-graph job sets (seed 002) count abstract integer time-units, which have no
    wall-clock length, so they are shown as such.

    >>> format_clock(93784.0)
    '1 d 02:03:04'
    >>> format_clock(59.5)
    '00:00:59'
    >>> format_clock(154.0, TIME_UNITS)
    '154 time-units'
    """
    if unit != SECONDS:
        return f"{seconds:,.0f} {unit}"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days} d {clock}" if days else clock
