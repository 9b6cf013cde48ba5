"""One workload for all five families: a seeded rule that gives any trace's jobs what every
family reads (``[workload.all_families]``).

The families read different things: the market auctions need value curves and speed-up
profiles, BBSched needs burst-buffer requests, the heterogeneity-aware allocators need
GPU/MIC units, the hybrid queues need queue definitions, and every rigid policy needs a
processor request and an estimate. With ``enabled = true`` one trace (SWF, or a Slurm
``sacct`` export converted by ``market-hpc trace convert``) becomes one job set carrying all
of them, so every policy runs on the same jobs:

1. **Burst buffer (BBSched's S1-S4).** Unless ``[workload.burst_buffer]`` names a
   scenario itself, every job set gets ``bb_scenario`` (S4: 75 % of the jobs request more
   than 20 TB at Theta's scale) with the pool sized so that the slice *at its recorded
   load* offers ``bb_load`` (0.9) of the pool: ``target_load = bb_load x load_factor``,
   as the pool is sized from the load-scaled jobs. A compressed slice then overloads the
   burst buffer by the same factor as the processors. Requests come from the run seed
   (``workload.burst_buffer``).
2. **Accelerators, where the platform has them.** On a platform with GPU (MIC) nodes and
   no ``[workload.accelerators]`` rule of its own, a share of users equal to the
   platform's share of GPU (MIC) nodes run GPU (MIC) jobs of 4 cores + 1 accelerator per
   unit (``workload.accelerators``: a user's jobs all or none, drawn by a stable hash
   of the run seed and the user). On a CPU-only platform nothing is added.
3. **Value curves and speed-up profiles (the market rule).** Every job gets the market
   rule's Amdahl profile over its units and its value curve (one unit per core-hour,
   ``workload.market_rule``), whatever its unit shape, so value earned is measured for
   every policy on the same curves. What they are built from is ``market_knowledge``:
   ``"estimate"`` (the default) scales the told profile (``Job.profile``, what the
   auctions read) and the curve to the wall-time request, the estimate every other family
   sees, while the clock runs ``Job.run_profile``, the same shape scaled to the recorded
   run time; ``"recorded"`` builds both from the recorded run time (the market paper's
   design-time profiles, an advantage a report on it must name). With ``molding = false``
   (the default) a job runs only at its request: every narrower width takes
   ``NARROWER_TIME``, past the end of its curve, so no auction prices it (and the core
   refuses it); the curve is the same either way.
4. **Zero-length jobs** (run time 0) run 1 s in every family, as the market's response
   times must be > 0 (the market rule's flat 1 s profile, minimum value, best width one
   unit): one job, one duration, whoever schedules it.
5. **Queue definitions from history.** Nothing is added to the jobs: the hybrid-queue
   planner (``[queues]``) defines the queues of each period from the previous period of
   the same job set (the study uses two periods per slice).
6. **What each family is given.** Rigid policies run each job at its requested size (its
   recorded run time); a scheduler that declares it runs no moldable jobs (a plugin; none
   of the built-ins) gets each job without its profile, the rigid job it would run anyway;
   value curves stay.

Every family sees the trace's estimates (wall-time requests), not real run times, unless
``policy.predictor`` names a predictor, which rescales the told profiles too
(``core.predictors.predicted``); a running moldable job is expected to end at its told
profile's time, by every family alike. Deterministic: the same trace, seed and options give the
same jobs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.validation import POSITIVE_FACTOR, check
from market_hpc.workload.accelerators import AcceleratorRule
from market_hpc.workload.burst_buffer import SCENARIOS, BurstBufferRule
from market_hpc.workload.market_rule import ZERO_LENGTH_RUN_TIME, MarketRule

ACCELERATOR_CORES_PER_UNIT = 4  # Curie's hybrid node: 8 cores, 2 GPUs -> 2 units of 4 + 1
KNOWLEDGE = ("estimate", "recorded")


@dataclass(frozen=True)
class AllFamiliesRule:
    """Options of the all-families rule (module docstring).

    Attributes:
        enabled: Apply the rule.
        bb_scenario: BBSched scenario of the burst-buffer requests (S1..S4) when
            ``[workload.burst_buffer]`` sets none.
        bb_load: Offered burst-buffer load of the slice at its recorded load (pool size).
        market_knowledge: What the market's profiles and the value curves are built from:
            ``"estimate"`` (the wall-time request every other family sees; the clock still
            runs the recorded run time) or ``"recorded"`` (the recorded run time: the
            market paper's design-time profiles, an advantage every report names).
        molding: Whether the market may run a job on fewer units than it asked for
            (``false``: the auctions still decide which job runs where, at its request).
    """

    enabled: bool = False
    bb_scenario: str = "S4"
    bb_load: float = 0.9
    market_knowledge: str = "estimate"
    molding: bool = False

    def __post_init__(self) -> None:
        if self.market_knowledge not in KNOWLEDGE:
            raise UnknownNameError(
                "workload.all_families.market_knowledge", self.market_knowledge, KNOWLEDGE
            )
        if type(self.molding) is not bool:
            raise ConfigError(
                f"workload.all_families.molding must be true or false, got {self.molding!r}"
            )
        if self.bb_scenario not in SCENARIOS:
            raise UnknownNameError("workload.all_families.bb_scenario", self.bb_scenario, SCENARIOS)
        check(self.bb_load, POSITIVE_FACTOR, "workload.all_families.bb_load")

    def burst_buffer(self, given: BurstBufferRule, load_factor: float) -> BurstBufferRule:
        """The burst-buffer rule in force: ``given`` when it names a scenario, else
        ``bb_scenario`` with the pool sized for ``bb_load`` at the recorded load.

        >>> rule = AllFamiliesRule(enabled=True).burst_buffer(BurstBufferRule(), 2.0)
        >>> rule.scenario, rule.target_load, rule.target_scenario
        ('S4', 1.8, 'S4')
        >>> rule = AllFamiliesRule(enabled=True).burst_buffer(BurstBufferRule("S1"), 2.0)
        >>> rule.target_load is None
        True
        """
        if given.enabled or given.capacity_gb is not None:
            return given
        return BurstBufferRule(
            self.bb_scenario,
            given.machine,
            target_load=self.bb_load * load_factor,
            target_scenario=self.bb_scenario,
        )


def check_source(rule: AllFamiliesRule, trace: str | None) -> None:
    """Refuse the rule on a workload that is not a trace.

    >>> check_source(AllFamiliesRule(enabled=True), None)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: workload.all_families needs workload.trace (an SWF file, or sacct
    output converted by market-hpc trace convert); generated and task-graph workloads carry their
    own value curves
    """
    if rule.enabled and trace is None:
        raise ConfigError(
            "workload.all_families needs workload.trace (an SWF file, or sacct output converted by "
            "market-hpc trace convert); generated and task-graph workloads carry their own value "
            "curves"
        )


def platform_accelerators(
    given: AcceleratorRule, platform: Platform, seed: int, recorded_gpus: bool = False
) -> AcceleratorRule:
    """The accelerator rule in force: ``given`` when enabled, else user shares equal to
    the platform's shares of GPU and MIC nodes (nothing on a CPU-only platform).

    On a trace that records GPU requests (``recorded_gpus``: a Slurm export's
    ``gres/gpu``, :mod:`market_hpc.workload.gpu_requests`) no GPU users are drawn: the
    trace says who used GPUs. MIC users still are, as no trace records MICs.

    >>> from market_hpc.domain.platform import load_platform
    >>> platform_accelerators(AcceleratorRule(), load_platform("eurora"), 3).gpu_users
    0.5
    >>> eurora = load_platform("eurora")
    >>> platform_accelerators(AcceleratorRule(), eurora, 3, recorded_gpus=True).gpu_users
    0.0
    >>> platform_accelerators(AcceleratorRule(), load_platform("kth-sp2"), 3).enabled
    False
    """
    if given.enabled:
        return given
    capacity = platform.capacity
    nodes = len(capacity)
    gpu_nodes = 0 if recorded_gpus else int((capacity[:, 1] > 0).sum())
    mic_nodes = int((capacity[:, 2] > 0).sum())
    return AcceleratorRule(
        gpu_users=gpu_nodes / nodes,
        mic_users=mic_nodes / nodes,
        cores_per_unit=ACCELERATOR_CORES_PER_UNIT,
        seed=seed,
    )


def with_value(
    job: Job, rule: MarketRule, knowledge: str = "recorded", molding: bool = True
) -> Job:
    """``job`` with the market rule's profile over its units, its value curve and
    ``spans_nodes`` (what ``MarketRule.apply`` gives any unit shape).

    ``knowledge`` names what the profile (what dispatchers are told) and the value curve
    are built from: ``"recorded"``, the recorded run time; ``"estimate"``, the wall-time
    request, with the recorded run time's profile as ``run_profile`` (the clock). Without
    ``molding`` the job runs only at its request (``MarketRule.rigid_profile``, payload
    ``molding = False``); the curve is the same either way. A zero-length job runs
    ``ZERO_LENGTH_RUN_TIME`` seconds (its estimate at least that).

    >>> linear = MarketRule(serial_fraction=0.0)
    >>> job = with_value(Job(1, 0.0, 3600.0, 7200.0, units=2, unit=(4, 1, 0, 0)), linear)
    >>> job.profile, job.payload["value_curve"].max_value, job.payload["c_star"], job.run_profile
    ((7200.0, 3600.0), 8.0, 2, None)
    >>> told = with_value(Job(1, 0.0, 3600.0, 7200.0, units=2), linear, "estimate")
    >>> told.profile, told.run_profile, told.payload["value_curve"].max_value
    ((14400.0, 7200.0), (7200.0, 3600.0), 4.0)
    >>> plain = Job(1, 0.0, 3600.0, 7200.0, units=2)
    >>> rigid = with_value(plain, MarketRule(), "estimate", molding=False)
    >>> rigid.profile, rigid.run_profile, rigid.payload["molding"]
    ((1099511627776.0, 7200.0), (1099511627776.0, 3600.0), False)
    >>> with_value(Job(2, 0.0, 0.0, 0.0, units=3), MarketRule()).run_time
    1.0
    """
    real = job.run_time
    told = real if knowledge == "recorded" else (job.estimate if job.estimate > 0 else real)
    amdahl = rule.profile(told, job.units)  # flat at 1 s for a zero-length job
    curve = rule.curve(told, job.cores, amdahl[0])
    payload = {
        **job.payload,
        "value_curve": curve,
        "c_star": job.units if told > 0 or not molding else 1,
        # as MarketRule.apply: the market auctions may place the job across nodes (spans_nodes)
        "spans_nodes": True,
    }
    if molding:
        profile, clock = amdahl, (amdahl if told == real else rule.profile(real, job.units))
    else:
        payload["molding"] = False
        profile, clock = rule.rigid_profile(told, job.units), rule.rigid_profile(real, job.units)
    if job.run_time <= 0:
        job = dataclasses.replace(
            job, run_time=ZERO_LENGTH_RUN_TIME, estimate=max(job.estimate, ZERO_LENGTH_RUN_TIME)
        )
    return dataclasses.replace(
        job, profile=profile, payload=payload, run_profile=None if clock == profile else clock
    )


def runs_moldable(scheduler: str) -> bool:
    """Whether ``scheduler`` runs moldable jobs (its declared capabilities).

    >>> runs_moldable("easy"), runs_moldable("queues-hybrid")
    (True, True)
    """
    from market_hpc.policies.registry import scheduler_entry

    return "moldable" in scheduler_entry(scheduler).capabilities.kinds


def rigid_view(jobs: Sequence[Job]) -> list[Job]:
    """The jobs without their profiles: what a scheduler that runs no moldable jobs gets
    (requests, run times, estimates and value curves unchanged).

    >>> rigid_view([with_value(Job(1, 0.0, 10.0, 20.0, units=2), MarketRule())])[0].profile is None
    True
    """
    return [dataclasses.replace(job, profile=None, run_profile=None) for job in jobs]


def give_every_family(
    jobs: Sequence[Job], rule: MarketRule, scheduler: str, options: AllFamiliesRule | None = None
) -> tuple[list[Job], dict[str, Any]]:
    """Steps 3, 4 and 6 of the rule (the burst buffer and accelerators are applied
    before, by their own rules): value curves and profiles for every job, built from what
    ``options.market_knowledge`` names, zero-length jobs at 1 s, and the rigid view for a
    scheduler that runs no moldable jobs."""
    chosen = options or AllFamiliesRule(enabled=True)
    valued = [with_value(job, rule, chosen.market_knowledge, chosen.molding) for job in jobs]
    moldable = runs_moldable(scheduler)
    report = {
        "market_rule": dataclasses.asdict(rule),
        "zero_length_jobs": sum(1 for j in jobs if j.run_time <= 0),
        "moldable": moldable,
        "market_knowledge": chosen.market_knowledge,
        "molding": chosen.molding,
    }
    return (valued if moldable else rigid_view(valued)), report


def parity_counts(jobs: Sequence[Job], frame: Any) -> dict[str, int]:
    """How often the parity rules acted in one run (``summary.json``): ``jobs_molded``, the
    finished jobs that ran on fewer units than they asked for (0 unless ``molding = true``
    lets a market policy or ``easy-mold`` mold), and ``jobs_past_estimate``, the finished
    jobs whose recorded run time outlived their estimate (each expected to end "now" once past
    it, by every family). ``frame`` is the run's ``jobs.csv`` frame.

    >>> import pandas as pd
    >>> frame = pd.DataFrame(
    ...     {"job_id": [1, 2], "status": ["finished", "finished"], "units": [2, 4]}
    ... )
    >>> parity_counts([Job(1, 0.0, 20.0, 10.0, units=4), Job(2, 0.0, 5.0, 10.0, units=4)], frame)
    {'jobs_molded': 1, 'jobs_past_estimate': 1}
    """
    finished = frame[frame["status"] == "finished"]
    asked = {job.job_id: job for job in jobs}
    molded = past = 0
    for job_id, units in zip(finished["job_id"].tolist(), finished["units"].tolist(), strict=True):
        job = asked.get(int(job_id))
        if job is None:
            continue
        molded += int(units) < job.units
        past += job.run_time > job.estimate
    return {"jobs_molded": molded, "jobs_past_estimate": past}
