"""``VizModel``: the ``HPCModel`` the browser app drives, built from the UI's parameters.

Mesa's SolaraViz re-creates the model on Reset as ``VizModel(**parameters)``, so every
control is a keyword argument here. No solara import: the benchmark and tests build it
without a browser.

Decisions:

* Market policies (``scheduler_entry(name).market``) get a task-graph job set drawn from
  the bundled HLRS-like library (``library_job_set``) whose arrival rate is sized for the
  chosen platform's total cores and the load factor; classic policies get a
  Lublin-Feitelson workload as large as the platform with its arrival rate multiplied by
  the load factor.
* With a scenario file, its workload is used instead and the controls override its
  policy, platform, seed, holding penalty and ``workload.load_factor``.
* A workload or policy that cannot be built, or a policy error during a step, stops the
  model and is shown as ``error`` in the page instead of a traceback.
"""

from __future__ import annotations

import os

from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform, load_platform
from market_hpc.errors import MarketHpcError
from market_hpc.model import HPCModel
from market_hpc.policies.registry import scheduler_entry
from market_hpc.viz import SCENARIO_ENV

DEFAULT_POLICY = "maxvdh"
DEFAULT_PLATFORM = "nodes=32,cores=16"
EXTRA_PLATFORMS = ("nodes=16,cores=16", "nodes=32,cores=16", "nodes=64,cores=32")
SECONDS = "s"
TIME_UNITS = "time-units"


def generated_jobs(policy: str, platform: Platform, n_jobs: int, load: float, seed: int) -> list[Job]:
    """The workload the controls describe: task graphs for market policies, else LF."""
    if scheduler_entry(policy).market:
        from market_hpc.workload.applications import library_job_set

        return list(library_job_set(n_jobs, seed, load=load, platform_cores=platform.total_cores))
    from market_hpc.workload.synthetic import lublin_feitelson

    return list(lublin_feitelson(n_jobs, platform.total_cores, seed, load_factor=load))


def scenario_defaults(path: str) -> dict[str, object]:
    """The control values a scenario file starts the app with.

    Raises:
        ConfigError: for an unreadable or invalid scenario.
    """
    from market_hpc.experiment.config import load_scenario

    config = load_scenario(path)
    return {"policy": config.policy.scheduler, "platform": config.platform, "seed": config.seed,
            "hold_penalty": config.policy.hold_penalty, "load": config.workload.load_factor}


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
        policy: Registered scheduler name (its default allocator is used).
        platform: Preset name or inline spec.
        jobs: Jobs to generate (ignored with a scenario).
        load: Load factor: offered load of task-graph sets, arrival-rate multiplier of LF
            workloads, ``workload.load_factor`` of a scenario.
        hold_penalty: Fraction of a held job's maximum value charged per hold.
        seed: The run's one seed.
        scenario: Scenario TOML file whose workload to use ("" for generated jobs;
            defaults to ``$MARKET_HPC_VIZ_SCENARIO``, set by ``market-hpc viz SCENARIO``).
    """

    def __init__(
        self,
        policy: str = DEFAULT_POLICY,
        platform: str = DEFAULT_PLATFORM,
        jobs: int = 1500,
        load: float = 2.0,
        hold_penalty: float = 0.1,
        seed: int = 1,
        scenario: str | None = None,
    ) -> None:
        scenario = os.environ.get(SCENARIO_ENV, "") if scenario is None else scenario
        self.error: str | None = None
        self.scenario = scenario
        try:
            resolved = load_platform(platform)
            allocator = None
            if scenario:
                workload, allocator = scenario_workload(scenario, policy, platform, float(load),
                                                        int(seed), float(hold_penalty))
            else:
                workload = generated_jobs(policy, resolved, int(jobs), float(load), int(seed))
            super().__init__(workload, resolved, policy, allocator,
                             hold_penalty=float(hold_penalty), seed=int(seed))
        except MarketHpcError as exc:
            workload = []
            super().__init__((), "nodes=1,cores=1", "fifo", seed=int(seed))
            self.error = f"{type(exc).__name__}: {exc}"
        self.policy_name = policy
        self.n_jobs = len(workload)
        self.time_unit = TIME_UNITS if any("task_graph" in j.payload for j in workload[:1]) else SECONDS
        self.market = any("value_curve" in j.payload for j in workload[:1])

    def step(self) -> None:
        """Advance one instant; a policy error stops the run and is kept in ``error``."""
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
