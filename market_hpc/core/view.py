"""The read-only snapshot policies see (see ``market_hpc.policies.base.View``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, overload

import numpy as np

from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.market.bidding import Asks
from market_hpc.algorithms.market.columns import MarketColumns
from market_hpc.algorithms.queue_columns import QueueColumns
from market_hpc.core.queue_agents import RoutedQueueAgent
from market_hpc.core.state import SimulationState
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.policies.base import JobState, RoutedQueue, RunningJob

if TYPE_CHECKING:
    from market_hpc.policies.base import FastView


class ReadOnlySequence(Sequence):  # type: ignore[type-arg]
    """A sequence facade over a live container; iteration is O(1) to start."""

    __slots__ = ("_items",)

    def __init__(self, items: Sequence | dict) -> None:  # type: ignore[type-arg]
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator:  # type: ignore[type-arg]
        items = self._items
        return iter(items.values()) if isinstance(items, dict) else iter(items)

    @overload
    def __getitem__(self, index: int) -> object: ...
    @overload
    def __getitem__(self, index: slice) -> list: ...  # type: ignore[type-arg]
    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        items = self._items
        if not isinstance(items, dict):
            return items[index] if isinstance(index, int) else list(items[index])
        if isinstance(index, slice):
            return list(items.values())[index]
        if index < 0:
            index += len(items)
        if not 0 <= index < len(items):
            raise IndexError(index)
        return next(islice(items.values(), index, None))


class ModelView:
    """Snapshot of ``model`` at the current instant, valid during one ``decide`` call: a
    :class:`~market_hpc.policies.base.FastView` (the plain ``View`` and every optional
    capability).

    The model's resource manager keeps one view and :meth:`refresh`-es it before each
    decision (the queue and running jobs are live facades, the rest a few fields), so a
    decision does not pay for building a view; ``model.make_view()`` builds a new one.
    """

    __slots__ = (
        "_model",
        "asks",
        "bids",
        "exclusive",
        "free_bb",
        "free_index",
        "free_total",
        "platform",
        "queue",
        "running",
        "time",
    )

    def __init__(self, model: SimulationState) -> None:
        self._model = model
        self.platform: Platform = model.platform
        self.exclusive: bool = model.exclusive
        self.queue: Sequence[Job] = ReadOnlySequence(model.queue_agent.jobs)
        self.running: Sequence[RunningJob] = ReadOnlySequence(model.running_by_end)
        # bids(free) -> one bid per node: the node agents' strategies priced on ``free``
        self.bids: Callable[[np.ndarray], np.ndarray] = model.manager.collect_bids
        # asks(free) -> the node agents' offers (cores, reserve), None when none makes offers
        self.asks: Callable[[np.ndarray], Asks | None] = model.manager.collect_asks
        # Free cores indexed for placement; schedulers try allocations on it only inside
        # ``free_index.scratch()``, which undoes them (see ``policies.scratch``).
        self.free_index: FreeCoreIndex = model.free_index
        self.refresh()

    def refresh(self) -> ModelView:
        """Bring the snapshot to the model's current instant (returns itself)."""
        model = self._model
        self.time: float = model.now
        self.free_total: tuple[int, ...] = model.free_total
        self.free_bb: float = model.free_bb
        jobs = model.queue_agent.jobs
        if self.queue._items is not jobs:  # type: ignore[attr-defined]  # the queue agent was replaced
            self.queue = ReadOnlySequence(jobs)
        return self

    @property
    def running_beyond_cores(self) -> int:
        """Running jobs whose unit asks for more than cores (0: the running jobs hold
        cores only, whatever the platform has)."""
        return self._model.running_by_end.beyond_cores

    @property
    def queue_min_cores(self) -> int:
        """Fewest cores a waiting job asks for: EASY skips a pass in which nothing can fit."""
        return self._model.queue_agent.min_cores

    @property
    def routed_queue(self) -> RoutedQueue | None:
        """Hybrid queues: the model's ``RoutedQueueAgent`` (waiting jobs per configured queue,
        each queue's columns kept in step), or None when the model has no queues."""
        agent = self._model.queue_agent
        return agent if isinstance(agent, RoutedQueueAgent) else None

    def queue_sorted(self, key: Callable[[Job], object]) -> Sequence[Job]:
        """The waiting jobs sorted by ``key`` (a total order, e.g. SJF's), kept sorted
        by the queue agent between decisions."""
        return self._model.queue_agent.sorted_by(key)

    @property
    def queue_columns(self) -> QueueColumns:
        """The waiting jobs as columns in queue order (``view.queue``'s order): backfilling
        passes over long queues find their candidates with it."""
        return self._model.queue_agent.columns

    @property
    def free(self) -> np.ndarray:
        """``(n_nodes, N_RESOURCES)`` free resources, read-only (brought up to date on
        access: schedulers that place from ``free_index`` never pay for it)."""
        return self._model.free_readonly

    @property
    def running_version(self) -> int:
        """Changes whenever a job starts, ends or is held (``running`` then differs)."""
        return self._model.running_by_end.version

    @property
    def market_columns(self) -> MarketColumns:
        """The waiting jobs' value curves, profiles and progress as columns, in queue
        order: market auctions price the whole queue with them at once."""
        return self._model.queue_agent.market_columns

    def expected_end(self, running: RunningJob) -> float:
        """``max(est_end, now)``: a job past its estimate is expected to end now (written
        out: cheaper than ``max`` on this hot path)."""
        return running.est_end if running.est_end > self.time else self.time  # noqa: FURB136

    def state(self, job_id: int) -> JobState:
        """Dynamic state of a queued or running job."""
        agent = self._model.job_agents[job_id]
        return JobState(agent.progress, agent.hold_count, agent.job.submit, agent.requeued_at)

    def running_on(self, node: int) -> Sequence[RunningJob]:
        """Running jobs with units on ``node``, in start order."""
        return ReadOnlySequence(self._model.running_on(node))


if TYPE_CHECKING:

    def _implements_fast_view(view: ModelView) -> FastView:
        return view  # mypy checks that the model's view offers every FastView member


@dataclass
class StaticView:
    """A hand-made view over given arrays, for calling allocators outside a model
    (tests, benchmarks). Only the fields allocators read; ``free_total`` is derived."""

    platform: Platform
    free: np.ndarray
    queue: list[Job]
    time: float = 0.0
    free_bb: float = 0.0
    exclusive: bool = False
    free_total: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.free_total = tuple(self.free.sum(axis=0).tolist())

    def bids(self, free: np.ndarray) -> np.ndarray:
        """The seed's bids: every node's free cores."""
        return free[:, 0]

    def asks(self, free: np.ndarray) -> Asks | None:
        """The seed's offers: every free core, at no reserve (``None``)."""
        return None
