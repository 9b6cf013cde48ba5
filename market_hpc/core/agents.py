"""Thin Mesa agents: nodes, jobs, the queue and the resource manager.

Agents hold state and hand work to pure functions and policies; the model owns time
and validates every decision.
"""

from __future__ import annotations

import math
import time as _time
from array import array
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import mesa
import numpy as np
from sortedcontainers import SortedKeyList

from market_hpc.algorithms.market.bidding import Asks, Bidder, FreeCoresBidder, check_asks
from market_hpc.algorithms.market.columns import MarketColumns
from market_hpc.algorithms.node_runs import NodeRuns
from market_hpc.algorithms.queue_columns import QueueColumns, SmallestRequest
from market_hpc.core.state import SimulationState
from market_hpc.domain.job import Job, JobStatus
from market_hpc.policies.base import Decision, Policy, RunningJob

CPU_SAMPLE_SECONDS = 0.02
"""A decision reads the process CPU clock around ``decide`` when the decisions from the
last one that did on took at least this long (wall time; the first decision reads it too);
the others read only the wall clock. A CPU-clock read is a system call (5.5 us on an idle
machine here, up to a few hundred us of wall time when the machine is loaded, against
0.1 us for ``perf_counter``), so it is paid at most twice per 20 ms of deciding rather
than once per few decisions; ``dispatch_cpu_seconds`` is the decisions' wall time scaled
by the sampled decisions' CPU / wall ratio. Which decisions are sampled depends on the
earlier ones' durations only, not on the sampled one's."""


class NodeAgent(mesa.Agent):  # type: ignore[misc]  # Mesa ships no type hints: mesa.Agent is Any
    """One node: its row of the model's free-resource array and the jobs running on it."""

    def __init__(self, model: SimulationState, index: int, bidder: Bidder) -> None:
        super().__init__(model)
        self.index = index
        self.bidder = bidder

    @property
    def free(self) -> np.ndarray:
        """This node's free resources (read-only row)."""
        row: np.ndarray = self.model.free_readonly[self.index]
        return row

    @property
    def running(self) -> list[RunningJob]:
        """Jobs running on this node, in start order."""
        running: list[RunningJob] = self.model.running_on(self.index)
        return running

    def bid(self) -> float:
        """Price the node's free cores with its bidding strategy (market default: free cores)."""
        row = slice(self.index, self.index + 1)
        model = self.model
        return float(
            self.bidder.bids(
                model.free_readonly[row],
                model.platform.capacity[row],
                np.arange(self.index, self.index + 1),
            )[0]
        )


class JobAgent(mesa.Agent):  # type: ignore[misc]  # Mesa ships no type hints: mesa.Agent is Any
    """A job while it is in the system: created at arrival, removed when it leaves.

    Registration with Mesa is deferred: the model registers the job agents in the system
    (``mesa.Agent.__init__``: unique id, ``model.agents``, ``model.agents_by_type``) the
    first time anything reads its agent registries (see ``HPCModel.agents``), in arrival
    order. A replay that never reads them does not pay Mesa's bookkeeping for every job
    that passes through (a fifth of a KTH-SP2 replay); whoever reads them sees every job
    agent in the system, as if each had registered at arrival.

    Attributes:
        job: The frozen job record.
        status: Current ``JobStatus``.
        progress: Fraction of the work done by finished execution segments.
        hold_count: Times it was held.
        first_start: Start of its first segment (None while never started).
        segment: Number of segments started so far; completion events carry it so a
            completion scheduled before a hold is recognised as stale.
        requeued_at: Time it last returned to the queue after a hold.
    """

    # Initial values as class attributes (immutable): an arriving job sets only its record,
    # every other field is written when it first changes.
    status = JobStatus.QUEUED
    progress = 0.0
    hold_count = 0
    first_start: float | None = None
    segment = 0
    requeued_at: float | None = None
    running: RunningJob | None = None
    last_allocation: tuple[tuple[int, int], ...] | None = None
    seg_duration = 0.0
    seg_full = 0.0
    seg_overhead = 0.0
    runs: NodeRuns | None = None
    nodes: np.ndarray | None = None
    taken: np.ndarray | None = None
    taken_total: tuple[int, ...] = ()
    busy_time = 0.0
    value = 0.0

    registered = False  # with Mesa (``register``)
    unique_id: int | None = None  # Mesa's id, given when registered
    pos = None

    def __init__(
        self, model: SimulationState, job: Job
    ) -> None:  # no super().__init__: see ``register``
        self.model = model
        self.job = job

    def register(self) -> None:
        """Register with Mesa now (``mesa.Agent.__init__``); the model calls it when its
        agent registries are read."""
        if not self.registered:
            mesa.Agent.__init__(self, self.model)
            self.registered = True

    def remove(self) -> None:
        """Leave the model (deregistered from Mesa if registered)."""
        if self.registered:
            super().remove()
            self.registered = False


class QueueAgent(mesa.Agent):  # type: ignore[misc]  # Mesa ships no type hints: mesa.Agent is Any
    """The waiting jobs of one queue, in queue order (insertion-ordered by job id)."""

    def __init__(self, model: SimulationState, name: str = "default") -> None:
        super().__init__(model)
        self.name = name
        # An OrderedDict, not a dict: a dict used as a FIFO keeps the holes its removals
        # leave at the front until it resizes, so finding the head costs O(queue) on long
        # queues (16 us per decision on a 50,000-job queue); the linked order is O(1).
        self.jobs: dict[int, Job] = OrderedDict()
        # Cores of every waiting job: the smallest tells a backfilling pass in O(1) that
        # nothing can fit (archive traces keep thousands of jobs queued for months).
        # Built on first use (FIFO never asks), kept in step from then on.
        self._cores: SmallestRequest | None = None
        # The waiting jobs' requests as columns, for backfilling passes over long queues
        # (``algorithms.queue_columns``); built on first use, kept in step from then on.
        self._columns: QueueColumns | None = None
        # The waiting jobs sorted by a scheduler's key (SJF, LJF), one list per key asked
        # for, built on first use and kept in step from then on.
        self._sorted: dict[Callable[[Job], Any], SortedKeyList] = {}
        # The waiting jobs' value curves, profiles and progress as columns, for the market
        # auctions (``algorithms.market_columns``); built on first use, kept in step.
        self._market: MarketColumns | None = None

    def push(self, job: Job) -> None:
        """Append a job at the tail."""
        self.jobs[job.job_id] = job
        if self._cores is not None:
            self._cores.add(job.cores)
        if self._columns is not None:
            self._columns.push(job)
        for ordered in self._sorted.values():
            ordered.add(job)
        if self._market is not None:
            self._market.push(job, *self._progress(job.job_id))

    def take(self, job_id: int) -> None:
        """Take a job out of the queue (started, dropped)."""
        job = self.jobs.pop(job_id)
        if self._cores is not None:
            self._cores.remove(job.cores)
        if self._columns is not None:
            self._columns.take(job_id)
        for ordered in self._sorted.values():
            ordered.remove(job)
        if self._market is not None:
            self._market.take(job_id)

    def sorted_by(self, key: Callable[[Job], Any]) -> SortedKeyList:
        """The waiting jobs sorted by ``key`` (which must order them totally)."""
        ordered = self._sorted.get(key)
        if ordered is None:
            ordered = self._sorted[key] = SortedKeyList(self.jobs.values(), key=key)
        return ordered

    @property
    def columns(self) -> QueueColumns:
        """The waiting jobs as columns, in queue order."""
        if self._columns is None:
            self._columns = QueueColumns(self.jobs.values())
        return self._columns

    @property
    def market_columns(self) -> MarketColumns:
        """The waiting jobs as market columns (value curves, profiles, progress), in queue order."""
        if self._market is None:
            self._market = MarketColumns(
                (job, *self._progress(job.job_id)) for job in self.jobs.values()
            )
        return self._market

    def _progress(self, job_id: int) -> tuple[float, int]:
        """A waiting job's progress and hold count (set before it is queued)."""
        agent = self.model.job_agents.get(job_id)
        return (agent.progress, agent.hold_count) if agent is not None else (0.0, 0)

    @property
    def cores(self) -> SmallestRequest:
        """Cores of every waiting job (the smallest is ``min_cores``)."""
        if self._cores is None:
            self._cores = SmallestRequest(job.cores for job in self.jobs.values())
        return self._cores

    @property
    def min_cores(self) -> int:
        """Fewest cores any waiting job asks for (0 when the queue is empty)."""
        return self.cores.min()


class ResourceManagerAgent(mesa.Agent):  # type: ignore[misc]  # Mesa ships no type hints: mesa.Agent is Any
    """Builds the view, calls the policy, times the call, returns the decision."""

    def __init__(self, model: SimulationState, policy: Policy) -> None:
        super().__init__(model)
        self.policy = policy
        self.decide_times = array("d")  # seconds of each decision (their count, total, p99)
        self._sampled_cpu = 0.0  # process CPU of the sampled decisions (CPU_SAMPLE_SECONDS)
        self._sampled_wall = 0.0  # their wall time
        self._unsampled = math.inf  # wall time of the decisions from the last sampled one on
        self._nodes = np.arange(model.platform.n_nodes)
        self._shared: Bidder | None | bool = False  # False: not checked in this decision

    def _shared_bidder(self) -> Bidder | None:
        """The strategy every node agent shares in this decision (``None``: they differ)."""
        shared = self._shared
        if shared is False:
            agents = self.model.node_agents
            first = agents[0].bidder
            shared = self._shared = (
                first if all(agent.bidder is first for agent in agents) else None
            )
        return shared  # type: ignore[return-value]

    def collect_bids(self, free: np.ndarray) -> np.ndarray:
        """Every node agent's bid on ``free`` (the current or a hypothetical free array):
        one vectorised call when all nodes share a strategy (the usual case)."""
        shared = self._shared_bidder()
        if type(shared) is FreeCoresBidder:
            return free[:, 0]  # the default strategy, without a call per auction round
        capacity = self.model.platform.capacity
        if shared is not None:
            return shared.bids(free, capacity, self._nodes)
        agents = self.model.node_agents
        return np.concatenate(
            [
                a.bidder.bids(
                    free[a.index : a.index + 1],
                    capacity[a.index : a.index + 1],
                    self._nodes[a.index : a.index + 1],
                )
                for a in agents
            ]
        )

    def collect_asks(self, free: np.ndarray) -> Asks | None:
        """Every node agent's offer on ``free`` (``algorithms.bidding.Asks``, checked), or
        ``None`` when no node agent's strategy makes offers (``asks``): then every node
        offers all its free cores at no reserve, the seed's auction. A node whose strategy
        has no ``asks`` offers its free cores at reserve 0 beside nodes whose strategy has."""
        shared = self._shared_bidder()
        if type(shared) is FreeCoresBidder:
            return None
        capacity, nodes = self.model.platform.capacity, self._nodes
        if shared is not None:
            asks = getattr(shared, "asks", None)
            return (
                None
                if asks is None
                else check_asks(asks(free, capacity, nodes), free[:, 0], shared.name)
            )
        agents = self.model.node_agents
        if not any(hasattr(agent.bidder, "asks") for agent in agents):
            return None
        cores, reserve = free[:, 0].astype(np.int64), np.zeros(len(agents))
        for agent in agents:
            asks = getattr(agent.bidder, "asks", None)
            if asks is not None:
                row = slice(agent.index, agent.index + 1)
                got = check_asks(
                    asks(free[row], capacity[row], nodes[row]), free[row, 0], agent.bidder.name
                )
                cores[row], reserve[row] = got.cores, got.reserve
        return Asks(cores, reserve)

    @property
    def decide_cpu_seconds(self) -> float:
        """Process CPU time of all decisions: their wall time scaled by the CPU / wall
        ratio of the sampled ones (``CPU_SAMPLE_SECONDS``, the first included)."""
        if self._sampled_wall <= 0.0:
            return self._sampled_cpu
        return self.decide_seconds * self._sampled_cpu / self._sampled_wall

    def dispatch(self) -> Decision:
        """Ask the policy what to do now (its wall time kept; its CPU time read once per
        ``CPU_SAMPLE_SECONDS`` of deciding: a CPU-clock read is a system call)."""
        model = self.model
        self._shared = False  # node agents may have changed strategy since the last decision
        view = model.decision_view()
        sampled = self._unsampled >= CPU_SAMPLE_SECONDS
        cpu = _time.process_time() if sampled else 0.0
        began = _time.perf_counter()
        decision = self.policy.decide(view, model.policy_rng)
        took = _time.perf_counter() - began
        if sampled:
            self._sampled_cpu += _time.process_time() - cpu
            self._sampled_wall += took
            self._unsampled = took
        else:
            self._unsampled += took
        self.decide_times.append(took)
        return decision

    @property
    def decisions(self) -> int:
        """Decisions the policy was asked for."""
        return len(self.decide_times)

    @property
    def decide_seconds(self) -> float:
        """Wall time of all decisions."""
        return math.fsum(self.decide_times)
