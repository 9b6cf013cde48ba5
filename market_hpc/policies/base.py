"""The one decision protocol: ``decide(view, rng) -> Decision``.

A :class:`View` is a read-only snapshot of the system at one instant. A
:class:`Decision` lists actions the model applies in order (so a ``Hold`` listed before
a ``Start`` frees the resources that start uses) and may ask to be woken at a later time.
The model validates every action and raises :class:`~market_hpc.errors.PolicyError`
naming the policy and the time for anything it cannot execute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Literal,
    NamedTuple,
    Protocol,
    TypeVar,
    cast,
    runtime_checkable,
)

import numpy as np

from market_hpc.algorithms.node_runs import NodeRuns
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.parameters import Param

if TYPE_CHECKING:
    from market_hpc.algorithms.free_index import FreeCoreIndex
    from market_hpc.algorithms.market.bidding import Asks
    from market_hpc.algorithms.market.columns import MarketColumns
    from market_hpc.algorithms.queue_columns import QueueColumns
    from market_hpc.domain.queues import QueueConfig
    from market_hpc.policies.capabilities import Capabilities

Allocation = tuple[tuple[int, int], ...]
"""Where a job runs: ``((node_index, units_on_that_node), ...)`` with node indices increasing.

A :class:`~market_hpc.algorithms.node_runs.NodeRuns` (runs of consecutive nodes with equal
units, read as those pairs) is accepted wherever an allocation is: the indexed first-fit
and best-fit return one, so a wide job costs its runs, not its nodes."""

__all__ = [
    "NOTHING",
    "Action",
    "Allocation",
    "Allocator",
    "Decision",
    "Drop",
    "FailureCountingAllocator",
    "FastMember",
    "FastView",
    "Hold",
    "IndexedAllocator",
    "JobState",
    "NodeRuns",
    "PassAwareAllocator",
    "Policy",
    "PolicyBase",
    "PolicyHooks",
    "QueueAgentView",
    "RoutedQueue",
    "RunningJob",
    "Start",
    "View",
    "failure_counting",
    "fast_view",
    "indexed",
    "iter_units",
    "pass_aware",
]


class Start(NamedTuple):
    """Start (or resume) a queued job on an allocation.

    For a rigid job the units must sum to ``job.units``; a moldable job (one with a
    ``profile``) may start on any 1..len(profile) units of a single node (of several nodes
    when its payload sets ``spans_nodes``, as the market rule's trace jobs do), or on
    ``job.units`` units on any nodes (its requested size).
    """

    job_id: int
    allocation: Allocation | NodeRuns


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

    def asks(self, free: np.ndarray) -> Asks | None:
        """The node agents' offers (cores offered, reserve value per core) on ``free``, or
        ``None`` when every node offers its free cores at no reserve (market auctions;
        ``algorithms.bidding``, "offers with a reserve")."""


@runtime_checkable
class Policy(Protocol):
    """A dispatcher: everything the model asks of a scheduling strategy."""

    name: str

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Return the actions to take at ``view.time``."""


class PolicyBase:
    """The base class of the built-in policies: what the model and the run read of a policy
    beyond ``name`` and ``decide``, each with the default a policy has that does not set it.

    A policy need not derive from it (plugins written as plain classes work unchanged): the
    model reads these members through :class:`PolicyHooks`, which gives a plain class the
    same defaults.

    The class attributes declare its registry entry: ``@register_scheduler`` on the class
    (no arguments) registers it under ``label`` with these, so a built-in policy is declared
    once, on its class (a plugin may still pass them to the decorator instead).

    Attributes:
        label: Its registered name (lower case, e.g. ``easy``); its instances' ``name`` is
            ``label + "+" + allocator`` where it composes with one.
        summary: One line for ``market-hpc policies`` and the docs.
        handles: What it handles (``policies.capabilities``), its family included;
            ``None``: undeclared (assumed as a plugin's).
        allocators: The allocators it composes with; ``None``: every one not market-only.
        default_allocator: The allocator used when the configuration names none.
        market: Whether it is a market dispatcher (chooses nodes by auction).
        parameters: Its declared keyword parameters (``market_hpc.parameters``), a class
            attribute; the registry reads their defaults from ``__init__`` once, when the
            class is registered.
        penalty: The holding penalty it decides with (market policies); ``None``: it decides
            without one (the model refuses a ready policy whose penalty differs from the one
            it charges).
        stats: Counters the run reports in ``summary.json`` as ``policy_<key>`` (e.g. the
            BBSched window schedulers' invocations and solver time); ``None``: none.
        wake_after: ``wake_after(view) -> time | None``, asked after every decision for a
            time to decide again even if nothing happens then (the market's value-curve
            breakpoints); ``None``: never asked (the model's fast path).
    """

    name: str
    label: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    handles: ClassVar[Capabilities | None] = None
    allocators: ClassVar[tuple[str, ...] | None] = None
    default_allocator: ClassVar[str] = "first-fit"
    market: ClassVar[bool] = False
    parameters: ClassVar[Mapping[str, Param]] = MappingProxyType({})
    penalty: float | None = None
    stats: dict[str, Any] | None = None
    wake_after: Callable[[View], float | None] | None = None

    def summary_stats(self) -> dict[str, Any]:
        """Entries the run adds to ``summary.json`` (the CP dispatchers' status counts and
        model sizes); default: none."""
        return {}

    def check_declared(self, **values: Any) -> None:
        """Refuse constructor arguments their declarations (``parameters``) refuse: the
        check a configuration gets when read, for a policy built by ``make_policy`` or by
        hand.

        Raises:
            ConfigError: ``scheduler 'LABEL': NAME = VALUE is invalid; valid: ...``.
        """
        from market_hpc.policies.params import check_value

        for key, value in values.items():
            check_value("scheduler", self.label, key, value, self.parameters[key])

    def configure(self, config: QueueConfig) -> None:
        """Put another queue configuration in force (the hybrid queues' policies, when the
        queues are split or merged); default: nothing to do."""

    def queue_config(self, platform: Platform) -> QueueConfig | None:
        """The queue configuration it schedules by on ``platform`` (the hybrid queues'
        policies; the browser view draws its partitions); default: ``None``, one queue."""
        return None


class PolicyHooks:
    """What the model reads of ``policy`` beyond ``decide``: its :class:`PolicyBase`
    members, or their defaults where a plain class (a plugin's) lacks them. The one adapter
    between the core and policies that do not derive from :class:`PolicyBase`.

    >>> class Plain:
    ...     name = "plain"
    >>> hooks = PolicyHooks(Plain())
    >>> hooks.penalty, hooks.stats, hooks.wake_after, hooks.summary_stats(), hooks.name
    (None, None, None, {}, 'plain')
    """

    def __init__(self, policy: object) -> None:
        self.policy = policy

    @property
    def name(self) -> str:
        """The policy's name (its class's when it has none)."""
        return str(getattr(self.policy, "name", type(self.policy).__name__))

    @property
    def penalty(self) -> float | None:
        """:attr:`PolicyBase.penalty`."""
        return cast("float | None", getattr(self.policy, "penalty", PolicyBase.penalty))

    @property
    def stats(self) -> dict[str, Any] | None:
        """:attr:`PolicyBase.stats` (read when asked: a policy may replace its counters)."""
        return cast("dict[str, Any] | None", getattr(self.policy, "stats", PolicyBase.stats))

    @property
    def wake_after(self) -> Callable[[View], float | None] | None:
        """:attr:`PolicyBase.wake_after`."""
        return cast(
            "Callable[[View], float | None] | None",
            getattr(self.policy, "wake_after", PolicyBase.wake_after),
        )

    def summary_stats(self) -> dict[str, Any]:
        """:meth:`PolicyBase.summary_stats`."""
        method = getattr(self.policy, "summary_stats", None)
        return {} if method is None else cast("dict[str, Any]", method())

    def configure(self, config: QueueConfig) -> None:
        """:meth:`PolicyBase.configure`."""
        method = getattr(self.policy, "configure", None)
        if method is not None:
            method(config)

    def queue_config(self, platform: Platform) -> QueueConfig | None:
        """:meth:`PolicyBase.queue_config`."""
        method = getattr(self.policy, "queue_config", None)
        return None if method is None else cast("QueueConfig | None", method(platform))


class Allocator(Protocol):
    """Chooses where a job goes, given the free-resource array.

    Allocators may keep state (PRIORITY-WEIGHTED's priority counters); ``feedback`` tells them
    whether an allocation they proposed was used.
    """

    name: str

    def allocate(self, job: Job, free: np.ndarray, view: View) -> Allocation | None:
        """Return an allocation that fits ``free`` or ``None``; never mutate ``free``."""


class QueueAgentView(Protocol):
    """One configured queue's waiting jobs, as :attr:`RoutedQueue.queues` lists them."""

    @property
    def jobs(self) -> dict[int, Job]:
        """Waiting jobs by id, in arrival order."""

    @property
    def columns(self) -> QueueColumns:
        """The same jobs as columns (backfilling walks over long queues use them)."""


class RoutedQueue(Protocol):
    """Hybrid queues' waiting jobs split by configured queue (:attr:`FastView.routed_queue`)."""

    @property
    def config(self) -> QueueConfig:
        """The queue configuration the jobs were routed by."""

    @property
    def jobs(self) -> dict[int, Job]:
        """Every waiting job by id, in arrival order."""

    @property
    def queue_of(self) -> Mapping[int, str]:
        """The configured queue of each waiting job, by job id."""

    @property
    def queues(self) -> Mapping[str, QueueAgentView]:
        """Each configured queue's waiting jobs, by queue name."""


class FastView(View, Protocol):
    """What the model's view offers beyond :class:`View`: state it keeps in step between
    decisions, so a pass over a long queue or a large machine costs what it looks at.

    Optional, member by member: a view a test or plug-in builds may offer any of them or
    none. A policy asks for one with ``fast_view(view, "member")``, which returns ``None``
    when the view lacks it, and then computes the same answer from the plain
    :class:`View` (each member's fallback below). Whatever the view offers, the decisions
    are the same; only their cost differs.
    """

    @property
    def queue_min_cores(self) -> int:
        """Fewest cores a waiting job asks for (fallback: run the pass, which starts
        nothing when nothing fits)."""

    @property
    def running_beyond_cores(self) -> int:
        """Running jobs whose unit asks for more than cores; 0 when the running jobs hold
        cores only (fallback: walk ``running``)."""

    @property
    def queue_columns(self) -> QueueColumns:
        """The waiting jobs as columns in ``queue`` order (fallback: walk ``queue``)."""

    @property
    def market_columns(self) -> MarketColumns:
        """The waiting jobs' value curves, profiles and progress as columns in ``queue``
        order (fallback: build ``MarketColumns`` from ``queue`` and ``state``)."""

    @property
    def running_version(self) -> int:
        """Changes whenever a job starts, ends or is held (fallback: assume it changed)."""

    @property
    def routed_queue(self) -> RoutedQueue | None:
        """Hybrid queues: the waiting jobs per configured queue, or ``None`` when the model has
        no queues (fallback: route ``queue`` job by job)."""

    @property
    def free_index(self) -> FreeCoreIndex:
        """Free cores indexed for placement; try allocations on it only through
        ``policies.scratch.PassScratch``, which undoes them (fallback: a copy of ``free``)."""

    def queue_sorted(self, key: Callable[[Job], object]) -> Sequence[Job]:
        """The waiting jobs sorted by ``key`` (a total order), kept sorted between
        decisions (fallback: ``sorted(queue, key=key)``)."""


@runtime_checkable
class IndexedAllocator(Allocator, Protocol):
    """An allocator that also places plain core jobs on the free-core index.

    Optional: ``policies.scratch.PassScratch`` uses it when the view offers
    :attr:`FastView.free_index`, and ``allocate`` otherwise. Both must choose the same
    nodes (the first-fit and best-fit allocators do).
    """

    def allocate_indexed(self, job: Job, index: FreeCoreIndex, view: View) -> NodeRuns | None:
        """Return where ``job`` (cores only) goes on ``index``, or ``None``."""


@runtime_checkable
class PassAwareAllocator(Allocator, Protocol):
    """An allocator that looks ahead along a scheduling pass (WEIGHTED of Netti et al.).

    Optional: a scheduler announces its pass order with ``begin_pass`` before offering
    the jobs in that order; allocators without it are simply not told.
    """

    def begin_pass(self, jobs: Sequence[Job], view: View) -> None:
        """Learn that ``jobs`` will be offered in this order on ``view``."""


@runtime_checkable
class FailureCountingAllocator(Allocator, Protocol):
    """An allocator that counts failed attempts (PRIORITY-WEIGHTED of Netti et al.).

    Optional: a scheduler that knows an attempt must fail and skips ``allocate`` reports
    it with ``note_failed_attempt``, so the counters move as if it had been tried.
    """

    def note_failed_attempt(self, job: Job) -> None:
        """Count an attempt to place ``job`` that failed without ``allocate``."""


_Obj = TypeVar("_Obj")

FastMember = Literal[
    "queue_sorted",
    "queue_min_cores",
    "queue_columns",
    "market_columns",
    "running_beyond_cores",
    "running_version",
    "routed_queue",
    "free_index",
]
"""The name of one :class:`FastView` member (each is optional on its own)."""


def _offering(obj: _Obj, name: str) -> _Obj | None:
    """``obj`` when it has ``name`` (not ``None``), else ``None``, without reading it: a
    property such as ``market_columns`` may build what it returns. The instance's own
    attributes answer first, then its class and its bases in method-resolution order (what
    ``inspect.getattr_static`` finds for plain classes, read live: ``getattr`` on the class
    walks the bases in C and returns a property itself, without calling it).

    >>> class Plain: ...
    >>> class Aware:
    ...     def begin_pass(self): ...
    >>> class Child(Aware): ...
    >>> [_offering(kind(), "begin_pass") is not None for kind in (Plain, Aware, Child)]
    [False, True, True]
    >>> shadowed = Aware(); shadowed.begin_pass = None
    >>> _offering(shadowed, "begin_pass") is None
    True
    >>> class Kept:
    ...     @property
    ...     def queue_min_cores(self): raise AssertionError("not read")
    >>> kept, plain, hidden = Kept(), object(), Kept()
    >>> hidden.__dict__["queue_min_cores"] = None
    >>> [fast_view(v, "queue_min_cores") is v for v in (kept, plain, hidden)]
    [True, False, False]
    """
    own = getattr(obj, "__dict__", None)
    if own is not None and name in own:
        return obj if own[name] is not None else None
    return obj if getattr(type(obj), name, None) is not None else None


fast_view = cast("Callable[[View, FastMember], FastView | None]", _offering)
"""``fast_view(view, member)``: ``view`` typed as a :class:`FastView` when it offers
``member``, else ``None`` (then use the member's fallback). Only ``member`` may be read
from the result. It is :func:`_offering` itself (one Python call per read, none for a
wrapper): it answers without reading the member."""


def indexed(allocator: Allocator) -> IndexedAllocator | None:
    """``allocator`` when it is an :class:`IndexedAllocator`, else ``None``."""
    return cast("IndexedAllocator | None", _offering(allocator, "allocate_indexed"))


def pass_aware(allocator: Allocator) -> PassAwareAllocator | None:
    """``allocator`` when it is a :class:`PassAwareAllocator`, else ``None``."""
    return cast("PassAwareAllocator | None", _offering(allocator, "begin_pass"))


def failure_counting(allocator: Allocator) -> FailureCountingAllocator | None:
    """``allocator`` when it is a :class:`FailureCountingAllocator`, else ``None``."""
    return cast("FailureCountingAllocator | None", _offering(allocator, "note_failed_attempt"))


def iter_units(allocation: Allocation) -> Iterator[int]:
    """Yield one node index per allocated unit (for tests and displays)."""
    for node, units in allocation:
        yield from [node] * units
