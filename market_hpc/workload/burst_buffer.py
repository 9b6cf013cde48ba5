"""Burst-buffer requests for any trace: the S1-S4 synthesis of BBSched (Fan et al., HPDC'19).

SWF has no burst-buffer field, and the paper's own request data (Cori's Slurm log,
Theta's Darshan log) is not public, so BB requests are synthesised as the paper builds
its S1-S4 workloads (§4.1; details the paper leaves open chosen as below):

* **Which jobs.** Exactly ``round(share * jobs)`` jobs, drawn uniformly without
  replacement: 50 % (S1, S3) or 75 % (S2, S4). The others request nothing.
* **How much.** Each drawn job's request is sampled (with replacement) from the
  machine's request distribution restricted to requests strictly above the threshold:
  5 TB (S1, S2) or 20 TB (S3, S4). The original request logs being unavailable, the
  distribution is log-uniform on ``(threshold, max_request]`` with the paper's reported
  maxima: Theta 285 TB, Cori 65 TB ("besides few extremely large requests (165TB), the
  burst buffer requests are in the range of [1GB, 65TB]").
* **Scaled to the system.** A trace's system is far smaller than Theta (4,392 nodes,
  1.26 PB: 1.8 PB x 913.5 / 1,304.5 TB of memory, Table 2, not the prose's 2.16 PB) or Cori (12,076
  nodes, 1.8 PB). Capacity *and* requests are multiplied by ``system / machine nodes``
  (processors of the trace's platform, the unit jobs request), so each request keeps its
  share of the pool and the pool its share per node. Amounts are whole GB (>= 1).
* **Or sized for a target load** (``target_load``): the paper's S4 workloads are
  burst-buffer bound (BB usage 84-95 %, Table 3), which the scaled pools are not (S4
  offers 25-50 % on HPC2N and KTH-SP2). With ``target_load = L`` the pool is sized so
  that the *reference* scenario (``target_scenario``, S4 by default) offers an expected
  BB load of ``L``: offered load = sum(request x run time) / (pool x span), span = the
  workload's submit span, its expectation share x E[request] x sum(run time) (requests
  are independent of the jobs; E of the log-uniform request in closed form). One pool
  per trace slice, whatever the scenario run, as one machine has one pool: S1-S3 offer
  less. Requests keep their scaled sizes. ``offered_load`` reports the realised value.

Deterministic from the run seed (its own stream, independent of the scheduler's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.validation import POSITIVE_FACTOR, check

GB_PER_TB = 1000  # decimal units: 1 TB = 1,000 GB


@dataclass(frozen=True)
class Machine:
    """A reference machine of the paper (Table 2)."""

    nodes: int
    capacity_gb: float
    max_request_gb: float


MACHINES = {
    "theta": Machine(4392, 1_800_000 * 913.5 / 1304.5, 285 * GB_PER_TB),
    "cori": Machine(12076, 1_800_000, 65 * GB_PER_TB),
}
SCENARIOS = {
    "S1": (0.50, 5 * GB_PER_TB),
    "S2": (0.75, 5 * GB_PER_TB),
    "S3": (0.50, 20 * GB_PER_TB),
    "S4": (0.75, 20 * GB_PER_TB),
}
_STREAM = 3003  # keeps the synthesis stream apart from the model's


@dataclass(frozen=True)
class BurstBufferRule:
    """Burst-buffer capacity and S1-S4 request synthesis (``workload.burst_buffer``).

    Attributes:
        scenario: ``S1``..``S4``, or ``none`` (no synthesis; the platform's pool and the
            jobs' requests stay as they are).
        machine: ``theta`` or ``cori``: whose capacity and request distribution to scale.
        capacity_gb: Pool size in GB; default the machine's scaled to the platform.
        share: Fraction of jobs requesting (default: the scenario's).
        threshold_gb: Requests are drawn above this, in machine GB (default: scenario's).
        max_request_gb: Largest request, in machine GB (default: the machine's).
        target_load: Size the pool for this expected offered BB load of
            ``target_scenario`` (module docstring); ``None``: scale the machine's pool.
        target_scenario: The scenario ``target_load`` refers to (S4).
    """

    scenario: str = "none"
    machine: str = "theta"
    capacity_gb: float | None = None
    share: float | None = None
    threshold_gb: float | None = None
    max_request_gb: float | None = None
    target_load: float | None = None
    target_scenario: str = "S4"

    def __post_init__(self) -> None:
        if self.scenario != "none" and self.scenario not in SCENARIOS:
            raise UnknownNameError(
                "workload.burst_buffer.scenario", self.scenario, ("none", *SCENARIOS)
            )
        if self.machine not in MACHINES:
            raise UnknownNameError("workload.burst_buffer.machine", self.machine, MACHINES)
        if self.share is not None and not 0.0 <= self.share <= 1.0:
            raise ConfigError(f"workload.burst_buffer.share must be in [0, 1], got {self.share}")
        for name in ("capacity_gb", "threshold_gb", "max_request_gb"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"workload.burst_buffer.{name} must be >= 0, got {value}")
        if self.target_scenario not in SCENARIOS:
            raise UnknownNameError(
                "workload.burst_buffer.target_scenario", self.target_scenario, SCENARIOS
            )
        if self.target_load is not None:
            if not self.enabled:
                raise ConfigError(
                    "workload.burst_buffer.target_load needs a scenario (S1..S4), got scenario = "
                    "none"
                )
            if self.capacity_gb is not None:
                raise ConfigError("workload.burst_buffer: set capacity_gb or target_load, not both")
            check(self.target_load, POSITIVE_FACTOR, "workload.burst_buffer.target_load")
        if self.enabled and self.upper <= self.lower:
            raise ConfigError(
                f"workload.burst_buffer: max_request_gb {self.upper} must exceed the "
                f"threshold {self.lower}"
            )

    @property
    def enabled(self) -> bool:
        """Whether requests are synthesised."""
        return self.scenario != "none"

    @property
    def lower(self) -> float:
        """Requests are strictly above this (machine GB)."""
        if self.threshold_gb is not None:
            return self.threshold_gb
        return SCENARIOS[self.scenario][1] if self.enabled else 0.0

    @property
    def upper(self) -> float:
        """Largest request (machine GB)."""
        return (
            self.max_request_gb
            if self.max_request_gb is not None
            else MACHINES[self.machine].max_request_gb
        )

    def scale(self, system_nodes: int) -> float:
        """Factor from the machine to a system of ``system_nodes`` nodes (processors)."""
        return system_nodes / MACHINES[self.machine].nodes

    def capacity(self, system_nodes: int) -> float:
        """Pool size in whole GB for a system of ``system_nodes`` nodes.

        >>> BurstBufferRule("S1", "theta").capacity(100)          # 1,260.5 TB x 100 / 4,392
        28700.0
        """
        if self.capacity_gb is not None:
            return float(self.capacity_gb)
        return float(round(MACHINES[self.machine].capacity_gb * self.scale(system_nodes)))

    def target_capacity(self, jobs: Sequence[Job], system_nodes: int) -> float:
        """Pool in whole GB giving ``target_scenario`` the expected offered BB load
        ``target_load`` over ``jobs`` (their run times and submit span only).

        >>> jobs = [Job(1, 0.0, 50.0, 50.0), Job(2, 100.0, 50.0, 50.0)]
        >>> rule = BurstBufferRule("S4", "theta", target_load=1.0)
        >>> mean = (6490 - 455) / math.log(6490 / 455)   # log-uniform on (455, 6,490] GB
        >>> rule.target_capacity(jobs, 100) == round(0.75 * mean * 100 / 100)
        True
        """
        if self.target_load is None:
            raise ValueError("target_capacity needs target_load")
        share, threshold = SCENARIOS[self.target_scenario]
        scale = self.scale(system_nodes)
        low, high = threshold * scale, self.upper * scale
        mean = (high - low) / math.log(high / low)
        work = math.fsum(job.run_time for job in jobs)
        span = max(job.submit for job in jobs) - min(job.submit for job in jobs) if jobs else 0.0
        if span <= 0 or work <= 0:
            raise ConfigError(
                "workload.burst_buffer.target_load needs jobs spanning a time > 0 with run time"
            )
        return float(max(round(share * mean * work / (self.target_load * span)), 1))


def offered_loads(jobs: Sequence[Job], system_nodes: int, capacity_gb: float) -> dict[str, float]:
    """Offered node and BB load: sum(request x run time) / (capacity x submit span).

    >>> jobs = [Job(1, 0.0, 50.0, 50.0, units=2, bb=10.0), Job(2, 100.0, 50.0, 50.0)]
    >>> offered_loads(jobs, 4, 10.0)
    {'offered_node_load': 0.375, 'offered_bb_load': 0.5}
    """
    span = max(job.submit for job in jobs) - min(job.submit for job in jobs) if jobs else 0.0
    if span <= 0:
        return {"offered_node_load": float("nan"), "offered_bb_load": float("nan")}
    nodes = load_over_span((job.cores * job.run_time for job in jobs), system_nodes, span)
    bb = (
        load_over_span((job.bb * job.run_time for job in jobs), capacity_gb, span)
        if capacity_gb > 0
        else 0.0
    )
    return {"offered_node_load": nodes, "offered_bb_load": bb}


def load_over_span(work: Iterable[float], capacity: float, span: float) -> float:
    """Offered load: the exact sum of ``work`` (request x run time, ``math.fsum``: the same
    in any order) over ``capacity x span``; NaN when the span is not positive.

    >>> load_over_span([50.0, 100.0], 4, 100.0), load_over_span([1.0], 4, 0.0)
    (0.375, nan)
    """
    return math.fsum(work) / (capacity * span) if span > 0 else float("nan")


def synthesize(
    jobs: Sequence[Job], rule: BurstBufferRule, system_nodes: int, seed: int
) -> tuple[list[Job], dict[str, Any]]:
    """Give jobs burst-buffer requests by ``rule`` (module docstring).

    Returns:
        The jobs (same order) and a report: scenario, capacity, counts, volumes.

    >>> jobs = [Job(i, float(i), 10.0, 10.0, units=4) for i in range(1, 9)]
    >>> out, report = synthesize(jobs, BurstBufferRule("S2", "theta"), 100, seed=1)
    >>> report["requesting"], sum(1 for j in out if j.bb > 0)
    (6, 6)
    >>> all(114 <= j.bb <= 6490 for j in out if j.bb)       # (5 TB, 285 TB] x 100 / 4,392
    True
    """
    if not rule.enabled:
        return list(jobs), {"scenario": "none"}
    share = rule.share if rule.share is not None else SCENARIOS[rule.scenario][0]
    rng = np.random.default_rng(np.random.SeedSequence([seed, _STREAM]))
    count = round(share * len(jobs))
    chosen = (
        rng.choice(len(jobs), size=count, replace=False) if count else np.zeros(0, dtype=np.int64)
    )
    low, high = math.log(rule.lower if rule.lower > 0 else 1.0), math.log(rule.upper)
    # uniform on (low, high]: 1 - U with U in [0, 1) keeps the threshold itself out
    machine_gb = np.exp(low + (1.0 - rng.random(count)) * (high - low))
    scaled = np.maximum(np.rint(machine_gb * rule.scale(system_nodes)), 1.0)
    requests = np.zeros(len(jobs))
    requests[chosen] = scaled
    out = [
        replace(job, bb=float(amount)) if amount else job
        for job, amount in zip(jobs, requests.tolist())
    ]
    return out, {
        "scenario": rule.scenario,
        "machine": rule.machine,
        "share": share,
        "threshold_machine_gb": rule.lower,
        "max_request_machine_gb": rule.upper,
        "scale": rule.scale(system_nodes),
        "capacity_gb": rule.capacity(system_nodes),
        "requesting": int(count),
        "requested_gb_total": float(scaled.sum()),
        "request_gb_mean": float(scaled.mean()) if count else 0.0,
    }


def check_requests(jobs: Sequence[Job], capacity_gb: float, source: str = "workload") -> None:
    """Fail on the first job whose burst-buffer request exceeds the pool.

    Raises:
        ConfigError: naming the job, its request and the pool size.

    >>> check_requests([Job(7, 0.0, 1.0, 1.0, bb=50.0)], 40.0)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: workload: job 7 requests 50 GB of burst buffer, but the
    platform's pool holds 40 GB
    """
    for job in jobs:
        if job.bb > capacity_gb:
            raise ConfigError(
                f"{source}: job {job.job_id} requests {job.bb:g} GB of burst buffer, but the "
                f"platform's pool holds {capacity_gb:g} GB"
            )


def with_capacity(
    platform: Platform, rule: BurstBufferRule, jobs: Sequence[Job] | None = None
) -> Platform:
    """``platform`` with the pool the rule sizes (unchanged when the rule is off and
    sets no ``capacity_gb``, or sizes for a target load and no ``jobs`` are given).

    A pool sized for a target load holds at least the largest request of ``jobs``: on a
    trace of many short jobs (NASA-iPSC) the load target alone gives a pool smaller than
    one request, a job no policy could ever run; its offered BB load is then below the
    target (``offered_load_bb`` in the summary says by how much).

    >>> from market_hpc.domain.platform import load_platform
    >>> rule = BurstBufferRule("S4", "theta", target_load=1.0)
    >>> jobs = [Job(1, 0.0, 5.0, 5.0), Job(2, 100.0, 5.0, 5.0, bb=900.0)]
    >>> with_capacity(load_platform("nodes=100,cores=1"), rule, jobs).burst_buffer
    900.0
    """
    if not rule.enabled and rule.capacity_gb is None:
        return platform
    if rule.target_load is not None:
        if jobs is None:
            return platform
        largest = max((job.bb for job in jobs), default=0.0)
        return replace(
            platform, burst_buffer=max(rule.target_capacity(jobs, platform.total_cores), largest)
        )
    return replace(platform, burst_buffer=rule.capacity(platform.total_cores))
