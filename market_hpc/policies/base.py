"""The one decision protocol: ``decide(view, rng) -> Decision``.

A :class:`View` is a read-only snapshot of the system at one instant. A
:class:`Decision` lists actions the model applies in order (so a ``Hold`` listed before
a ``Start`` frees the resources that start uses) and may ask to be woken at a later time.
The model validates every action and raises :class:`~market_hpc.errors.PolicyError`
naming the policy and the time for anything it cannot execute.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from market_hpc.algorithms.node_runs import NodeRuns
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform

Allocation = tuple[tuple[int, int], ...]
"""Where a job runs: ``((node_index, units_on_that_node), ...)`` with node indices increasing.

A :class:`~market_hpc.algorithms.node_runs.NodeRuns` (runs of consecutive nodes with equal
units, read as those pairs) is accepted wherever an allocation is: the indexed first-fit
and best-fit return one, so a wide job costs its runs, not its nodes."""

__all__ = [
    "NOTHING", "Action", "Allocation", "Allocator", "Decision", "Drop", "Hold", "JobState",
    "NodeRuns", "Policy", "RunningJob", "Start", "View", "iter_units",
]


class Start(NamedTuple):
    """Start (or resume) a queued job on an allocation.

    For a rigid job the units must sum to ``job.units``; a moldable job (one with a
    ``profile``) may start on any 1..len(profile) cores of a single node.
    """

    job_id: int
    allocation: Allocation


class Hold(NamedTuple):
    """Suspend a running job; it returns to the queue keeping the work done (the market holding)."""

    job_id: int


class Drop(NamedTuple):
    """Remove a queued job that can no longer earn anything."""

    job_id: int
    reason: str = "no value left"


Action = Start | Hold | Drop


class Decision(NamedTuple):
    """What a policy wants done now.

    Attributes:
        actions: Applied in order.
        wake_at: Ask for another decision at this time even if nothing else happens then
            (e.g. when a queued job's value reaches zero). Ignored when not in the future.
    """

    actions: tuple[Action, ...] = ()
    wake_at: float | None = None


NOTHING = Decision()


class RunningJob(NamedTuple):
    """A running job as policies see it.

    Fields are ordered so that tuples sort by ``(est_end, seq)``.

    Attributes:
        est_end: When the job is expected to end, from its estimate (rigid jobs) or
            profile (moldable jobs). Use :meth:`View.expected_end`, which never returns
            a time in the past.
        seq: Start order; later starts have larger ``seq`` (unique).
        job: The job record.
        start: Start of the current execution segment (the last resume for a held job).
        allocation: Where it runs.
        units: Units (cores for moldable jobs) held by this segment.
    """

    est_end: float
    seq: int
    job: Job
    start: float
    allocation: Allocation
    units: int


class JobState(NamedTuple):
    """Dynamic facts about a queued or running job.

    Attributes:
        progress: Fraction of the job's work done, in [0, 1).
        hold_count: How many times it has been held.
        arrived: Arrival time (the job's submit time).
        requeued_at: When it last went back to the queue after a hold (None if never).
    """

    progress: float
    hold_count: int
    arrived: float
    requeued_at: float | None


class View(Protocol):
    """Read-only snapshot handed to a policy. Mutating anything in it is a bug the
    conformance suite catches (arrays are flagged non-writeable)."""

    @property
    def time(self) -> float: ...
    @property
    def platform(self) -> Platform: ...
    @property
    def free(self) -> np.ndarray:
        """``(n_nodes, N_RESOURCES)`` free resources, read-only."""
    @property
    def free_total(self) -> tuple[int, ...]:
        """Free amount per resource summed over nodes."""
    @property
    def free_bb(self) -> float:
        """Free burst-buffer capacity of the shared pool."""
    @property
    def exclusive(self) -> bool:
        """Whether nodes are allocated exclusively (whole nodes per job)."""
    @property
    def queue(self) -> Sequence[Job]:
        """Waiting jobs in queue order."""
    @property
    def running(self) -> Sequence[RunningJob]:
        """Running jobs sorted by (est_end, seq)."""
    def expected_end(self, running: RunningJob) -> float:
        """``max(running.est_end, time)``: a job past its estimate is expected to end now."""
    def state(self, job_id: int) -> JobState:
        """Dynamic state of a queued or running job."""
    def running_on(self, node: int) -> Sequence[RunningJob]:
        """Running jobs with units on ``node``, in start order."""
    def bids(self, free: np.ndarray) -> np.ndarray:
        """The node agents' bids (one per node) priced on ``free`` (market auctions)."""


@runtime_checkable
class Policy(Protocol):
    """A dispatcher: everything the model asks of a scheduling strategy."""

    name: str

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Return the actions to take at ``view.time``."""


class Allocator(Protocol):
    """Chooses where a job goes, given the free-resource array.

    Allocators may keep state (PRIORITY-WEIGHTED's priority counters); ``feedback`` tells them
    whether an allocation they proposed was used.
    """

    name: str

    def allocate(self, job: Job, free: np.ndarray, view: View) -> Allocation | None:
        """Return an allocation that fits ``free`` or ``None``; never mutate ``free``."""


def iter_units(allocation: Allocation) -> Iterator[int]:
    """Yield one node index per allocated unit (for tests and displays)."""
    for node, units in allocation:
        yield from [node] * units
