"""What agents, views and the recorder read from a running simulation.

``HPCModel`` satisfies :class:`SimulationState`; the modules that read it depend on this
protocol, not on ``market_hpc.core.model``, so imports point one way: ``state <- agents,
view, recorder <- model`` (house rule: no import cycles, even under ``TYPE_CHECKING``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.market.bidding import Asks
from market_hpc.algorithms.market.columns import MarketColumns
from market_hpc.algorithms.queue_columns import QueueColumns
from market_hpc.core.running_jobs import RunningJobs
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.policies.base import RunningJob, View

COMPLETION, ARRIVAL, DECISION = 0, 1, 2
"""Event orders of the model's heap: at one instant completions, then arrivals, then
decisions (a decision event may carry a callback, e.g. a hybrid-queue reconfiguration)."""


class QueueState(Protocol):
    """A queue: its waiting jobs by id, in queue order."""

    jobs: dict[int, Job]

    @property
    def min_cores(self) -> int:
        """Fewest cores any waiting job asks for (0 when none waits)."""

    @property
    def columns(self) -> QueueColumns:
        """The waiting jobs as columns, in queue order (long backfilling passes)."""

    def sorted_by(self, key: Callable[[Job], Any]) -> Sequence[Job]:
        """The waiting jobs sorted by ``key``, kept sorted between decisions."""

    @property
    def market_columns(self) -> MarketColumns:
        """The waiting jobs as market columns, in queue order (market auctions)."""


class JobAgentState(Protocol):
    """The dynamic facts of a job in the system that views report."""

    job: Job
    progress: float
    hold_count: int
    requeued_at: float | None


class BidState(Protocol):
    """The resource manager's side of the node auction (Singh et al.)."""

    def collect_bids(self, free: np.ndarray) -> np.ndarray:
        """One bid per node, priced on ``free``."""

    def collect_asks(self, free: np.ndarray) -> Asks | None:
        """The nodes' offers on ``free`` (cores, reserve), ``None`` when none makes offers."""


class SimulationState(Protocol):
    """The read side of a simulation (implemented by ``market_hpc.core.model.HPCModel``)."""

    now: float
    platform: Platform
    exclusive: bool
    free_total: tuple[int, ...]
    free_bb: float
    free_index: FreeCoreIndex
    policy_rng: np.random.Generator
    queue_agent: QueueState
    running_by_end: RunningJobs
    manager: BidState

    @property
    def job_agents(self) -> Mapping[int, JobAgentState]:
        """Jobs in the system (queued, held or running) by id."""

    @property
    def free_readonly(self) -> np.ndarray:
        """``(n_nodes, N_RESOURCES)`` free resources, read-only."""

    def running_on(self, node: int) -> list[RunningJob]:
        """Running jobs with units on ``node``, in start order."""

    def make_view(self) -> View:
        """The read-only snapshot policies decide on."""

    def decision_view(self) -> View:
        """The view of the current decision (one object, refreshed for each decision)."""
