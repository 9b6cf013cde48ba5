"""``HPCModel``: the Mesa model that owns time and validates every decision.

Applying a decision (starts, holds, drops, each validated) is :mod:`market_hpc.core.decisions`.

Time is a heap of ``(time, order, seq, event)``; at each instant completions are handled
first, then arrivals (in job-id order), then one decision. Arrivals come from the
workload, already sorted by ``(submit, job_id)``, and are merged with the heap rather than
pushed into it, so a 300k-job trace costs nothing before its jobs arrive.
``step()`` advances to the next instant that has events; nothing polls idle time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator
from typing import Any, Protocol, cast

import mesa
import numpy as np
import pandas as pd

from market_hpc.algorithms.allocation import units_fit
from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.market.bidding import Bidder, FreeCoresBidder, asks_refusal
from market_hpc.core.agents import JobAgent, NodeAgent, QueueAgent, ResourceManagerAgent
from market_hpc.core.collector import TimeSeriesCollector
from market_hpc.core.decisions import apply_decision, leave, release
from market_hpc.core.free_state import FreeResources
from market_hpc.core.predictors import predicted
from market_hpc.core.recorder import Recorder
from market_hpc.core.running_jobs import RunningJobs
from market_hpc.core.state import COMPLETION, DECISION
from market_hpc.core.view import ModelView
from market_hpc.domain.job import Job, JobStatus
from market_hpc.domain.platform import Platform, load_platform
from market_hpc.errors import ConfigError
from market_hpc.gc_pause import gc_paused
from market_hpc.policies.base import Decision, Policy, PolicyHooks, RunningJob
from market_hpc.policies.registry import make_policy, scheduler_entry
from market_hpc.validation import FRACTION, NON_NEGATIVE_INT, TIME, check

_NEVER = math.inf
CAUSES = ("completion", "arrival", "reconfiguration", "wake-up", "every-step")
"""Why a decision happened, in the order that names an instant with several causes."""
_TICK = "every-step"  # the heap event of the every-step loop's next time step
# Enum members read once: ``JobStatus.X`` goes through the enum's metaclass (~0.4 us a read).
_RUNNING, _FINISHED, _REJECTED = JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.REJECTED


def make_market_aware_policy(scheduler: str, allocator: str | None, hold_penalty: float) -> Policy:
    """``make_policy`` that hands the holding penalty to market schedulers."""
    params = {"penalty": hold_penalty} if scheduler_entry(scheduler).market else None
    return make_policy(scheduler, allocator, scheduler_params=params)


def release_model(model: mesa.Model | None) -> None:
    """Let a finished model be collected: Mesa 3.3 keeps every model that made agents as a
    key of the class attribute ``mesa.Agent._ids`` (per-model id counters; mesa/mesa#3179),
    so a process running many models (a sweep worker, training episodes, a streamed
    replay dropping its model) would keep them all. Mesa 3.5 has no such attribute: then
    this does nothing. Call it when no agent will be added."""
    ids = getattr(mesa.Agent, "_ids", None)
    if model is not None and isinstance(ids, dict):
        ids.pop(model, None)


def _is_market(policy: Policy) -> bool:
    """Whether ``policy`` runs the market auctions (where node offers apply)."""
    from market_hpc.policies.market.dispatchers import MarketPolicy

    return isinstance(policy, MarketPolicy)


def _check_penalty(policy: Policy, hold_penalty: float) -> None:
    """Refuse a ready policy that would decide with another holding penalty than the
    model charges (a market policy made without ``penalty`` decides with 0)."""
    hooks = PolicyHooks(policy)
    penalty = hooks.penalty
    if penalty is not None and penalty != hold_penalty:
        name = hooks.name
        raise ConfigError(
            f"HPCModel(hold_penalty={hold_penalty}) charges that penalty, but policy {name!r} "
            f"decides with penalty {penalty}; make the policy with make_policy({name!r}, "
            f"scheduler_params={{'penalty': {hold_penalty}}}) or pass scheduler={name!r} "
            "instead of policy="
        )


class Predictor(Protocol):
    """Predicts run times online (Netti et al.): what schedulers see as ``job.estimate``.

    The model calls ``predict`` when a job arrives (the job the policies see carries the
    prediction as its estimate; the clock still uses the real run time) and ``observe``
    when a job finishes, so predictions only use what was known at submission.
    """

    name: str

    def predict(self, job: Job, now: float) -> float: ...
    def observe(self, job: Job, run_time: float, now: float) -> None: ...


class HPCModel(mesa.Model):  # type: ignore[misc]  # Mesa ships no type hints: mesa.Model is Any
    """Event-driven simulation of one platform, one workload, one dispatcher.

    Args:
        jobs: The workload: a collection in any order (sorted here by submit time, then
            job id) or an iterator already in that order, consumed as jobs arrive.
        platform: A ``Platform``, preset name, inline spec or TOML path.
        scheduler: Scheduler name (ignored when ``policy`` is given).
        allocator: Allocator name (ignored when ``policy`` is given).
        policy: A ready dispatcher; overrides ``scheduler``/``allocator``.
        exclusive: Allocate whole nodes per job instead of individual cores.
        hold_penalty: Fraction of a held job's maximum value charged per hold (market holding).
        seed: One seed per run; the policy gets its own independent stream.
        record_timeseries: Record queue length, utilisation and profit per instant.
        predictor: Online run-time predictor whose predictions replace the estimates
            schedulers see (``None``: the workload's estimates).
        bidder: Bidding strategy of every node agent in market auctions (default: free
            cores, as in the market paper); set ``node_agents[i].bidder`` for per-node strategies.
        resume_seconds: Holding cost: time added to every resumed segment (suspend and
            resume overhead); 0 in the market paper.
        hold_progress_loss: Holding cost: fraction of a held segment's work that is lost
            (e.g. since the last checkpoint), in [0, 1]; 0 in the market paper.
        queues: Hybrid-queue ``QueueConfig``: one queue agent per queue, jobs routed at
            arrival (``market_hpc.core.queue_agents``); ``None``: the single queue.
        reconfigurations: ``(time, QueueConfig)`` pairs put in force at those times.
        every_step: Also decide at every integer time step while jobs wait, as the market
            paper's loop does (docs/market.md, "Decision timing"); default: decide only
            at events (completions, arrivals, reconfigurations, the latest decision's wake-up).

    Decision timing: a decision's wake-up request (``Decision.wake_at``, or a policy's
    ``wake_after(view)`` read on the state after the decision is applied) lives until the
    next decision: each decision supersedes every earlier wake-up, so a stale one triggers
    nothing. ``decision_causes`` counts the decisions by cause (``CAUSES``).

    Raises:
        ConfigError: on duplicate job ids, a ``policy`` whose holding penalty is not
            ``hold_penalty`` (it would decide with another penalty than the one charged),
            or invalid parameters (``InvalidNumberError``
            naming the argument for a number out of range; each ``Job`` checked its own
            numbers when it was made).
    """

    def __init__(
        self,
        jobs: Iterable[Job] = (),
        platform: Platform | str = "kth-sp2",
        scheduler: str = "fifo",
        allocator: str | None = None,
        *,
        policy: Policy | None = None,
        exclusive: bool = False,
        hold_penalty: float = 0.0,
        seed: int = 0,
        record_timeseries: bool = True,
        predictor: Predictor | None = None,
        bidder: Bidder | None = None,
        resume_seconds: float = 0.0,
        hold_progress_loss: float = 0.0,
        queues: Any = None,
        reconfigurations: Any = (),
        every_step: bool = False,
    ) -> None:
        check(seed, NON_NEGATIVE_INT, "HPCModel(seed=...)")
        check(hold_penalty, FRACTION, "HPCModel(hold_penalty=...)")
        check(resume_seconds, TIME, "HPCModel(resume_seconds=...)")
        check(hold_progress_loss, FRACTION, "HPCModel(hold_progress_loss=...)")
        super().__init__(rng=seed)  # Mesa 3.3 deprecates seed= in favour of rng=
        self.seed_value = seed
        self.policy_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        self.platform = load_platform(platform)
        self.exclusive = exclusive
        self.hold_penalty = hold_penalty
        self.resume_seconds = resume_seconds
        self.hold_progress_loss = hold_progress_loss
        if policy is None and not isinstance(
            jobs, Iterator
        ):  # by name: refuse what it lacks before the run
            from market_hpc.policies.registry import check_composition

            jobs = list(jobs)
            check_composition(scheduler, jobs, self.platform)
        if policy is not None:
            _check_penalty(policy, hold_penalty)
        self.policy = (
            policy
            if policy is not None
            else make_market_aware_policy(scheduler, allocator, hold_penalty)
        )
        if bidder is not None and not isinstance(jobs, Iterator) and _is_market(self.policy):
            jobs = list(
                jobs
            )  # offers apply to the cores-only auction: refuse other workloads before the run
            refused = asks_refusal(bidder, jobs, self.platform.n_nodes, exclusive)
            if refused is not None:
                raise ConfigError(refused)
        self.every_step = bool(every_step)
        self.policy_hooks = PolicyHooks(self.policy)  # what else the model reads of it
        self._wake_after = self.policy_hooks.wake_after
        self._generation = 0  # decisions so far: a wake-up event carries the one that asked for it
        self._tick_at = -_NEVER  # the every-step loop's pending time step
        # next_decision(): None (off), "" (armed) or the cause of the paused decision
        self._paused: str | None = None
        self.decision_causes: dict[str, int] = dict.fromkeys(CAUSES, 0)
        self.now: float = 0.0
        self._free = FreeResources(self.platform.capacity)
        self.free_bb = float(self.platform.burst_buffer)
        self._bidder: Bidder = bidder if bidder is not None else FreeCoresBidder()
        self.free_index: FreeCoreIndex = self._free.index
        self._node_agents: list[NodeAgent] | None = None
        self._view: ModelView | None = None
        self.queue_agent = QueueAgent(self)
        self.manager = ResourceManagerAgent(self, self.policy)
        self.job_agents: dict[int, JobAgent] = {}
        self.running_by_end: RunningJobs = RunningJobs()  # sorted by (est_end, seq) once read
        self.free_total: tuple[int, ...] = tuple(self.platform.total.tolist())
        self._stream_ids: set[int] | None = None
        if queues is not None and isinstance(jobs, Iterator):
            jobs = list(jobs)  # hybrid queues check at load that every job has a queue
        ordered: list[Job] = []
        if isinstance(jobs, Iterator):
            # A stream already sorted by (submit, job_id): consumed as jobs arrive, so a
            # 10^6-job trace never sits in memory; order and ids are checked on arrival.
            self._arrivals: Iterator[Job] = jobs
            # ``presorted_unique``: its producer checked order and ids (no id set, to save memory).
            checked = getattr(jobs, "presorted_unique", False)
            self._stream_ids = None if checked else set()
            if checked and hasattr(jobs, "unwrapped"):
                self._arrivals = jobs.unwrapped  # (the stream itself: no wrapper call per job)
        else:
            ordered = sorted(jobs, key=lambda j: (j.submit, j.job_id))
            if len({j.job_id for j in ordered}) != len(ordered):
                raise ConfigError("workload has duplicate job ids")
            self._arrivals = iter(ordered)
        self._upcoming: Job | None = next(self._arrivals, None)
        self._next_arrival = 0
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        self._start_seq = 0
        self.recorder = Recorder(self.platform, record_timeseries)
        self._unit_limits: dict[tuple[int, ...], tuple[int, int]] = {}
        self.predictor = predictor
        self.running = self._upcoming is not None
        self.datacollector: mesa.DataCollector = TimeSeriesCollector(self.recorder)
        if queues is not None:  # hybrid queues: a QueueAgent per queue, reconfiguration events
            from market_hpc.core.queue_agents import install_queues

            install_queues(self, queues, reconfigurations, ordered)

    @property
    def node_agents(self) -> list[NodeAgent]:
        """One ``NodeAgent`` per node, created on first use (a 10^5-node platform's
        agents cost a second to register with Mesa; replays never read them)."""
        if self._node_agents is None:
            self._node_agents = [
                NodeAgent(self, i, self._bidder) for i in range(self.platform.n_nodes)
            ]
        return self._node_agents

    # ------------------------------------------------------ Mesa registries
    # Job agents register with Mesa when these are read (``JobAgent.register``), and node
    # agents are created then: every reader sees every node and every job agent in the
    # system, and a replay that never reads them does not pay Mesa's per-agent bookkeeping.
    @property
    def agents(self) -> mesa.agent.AgentSet:
        """Mesa's set of all agents (node agents and the job agents in the system
        registered first)."""
        self.register_job_agents()
        return super().agents

    @agents.setter
    def agents(self, agents: Any) -> None:
        mesa.Model.agents.fset(self, agents)  # Mesa's error

    @property
    def agents_by_type(self) -> dict[type, mesa.agent.AgentSet]:
        """Mesa's agent sets per agent class (node agents and the job agents in the
        system registered first)."""
        self.register_job_agents()
        return cast(dict[type, mesa.agent.AgentSet], super().agents_by_type)

    @property
    def agent_types(self) -> list[type]:
        """Agent classes registered with Mesa (node agents and the job agents in the
        system registered first)."""
        self.register_job_agents()
        return cast(list[type], super().agent_types)

    def register_job_agents(self) -> None:
        """Register with Mesa, in arrival order, the job agents in the system that are not
        yet (those that arrived since the last read: a suffix of ``job_agents``), and
        create the node agents if they are not yet."""
        _ = self.node_agents
        pending = []
        for agent in reversed(self.job_agents.values()):
            if agent.registered:
                break
            pending.append(agent)
        for agent in reversed(pending):
            agent.register()

    # ------------------------------------------------------- free resources
    @property
    def free(self) -> np.ndarray:
        """``(n_nodes, N_RESOURCES)`` free resources (the model's own, writeable array,
        brought up to date on access; see ``market_hpc.core.free_state``)."""
        return self._free.array

    @property
    def free_readonly(self) -> np.ndarray:
        """``free`` as a read-only array (what views hand to policies)."""
        return self._free.readonly

    # ----------------------------------------------------------------- time
    def _push(self, when: float, order: int, event: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, order, self._seq, event))

    def next_time(self) -> float:
        """Time of the next instant with events (``inf`` when none is left): the earlier of
        the heap's top and the next arrival."""
        heap = self._heap
        upcoming = heap[0][0] if heap else _NEVER
        arrival = self._upcoming
        if arrival is not None and arrival.submit < upcoming:
            return arrival.submit
        return upcoming

    def step(self) -> None:
        """Advance to the next instant with events and handle all of them.

        One step is one instant: Mesa counts it in ``steps`` and the recorder samples it
        (a row of ``datacollector.get_model_vars_dataframe()``). This is the path Mesa's
        tools drive (SolaraViz, ``mesa.batch_run``); ``run()`` is the same loop without
        Mesa's per-step bookkeeping.
        """
        if not self._advance() or self.next_time() == _NEVER:
            self.finalize()
        self.datacollector.collect(self)

    def run_model(self) -> None:
        """Run to the end (Mesa's entry point): ``run()``, or Mesa's loop of ``step()``
        when a replaced ``datacollector`` collects after every step."""
        collector = self.datacollector
        if isinstance(collector, TimeSeriesCollector) and not collector.collects_per_step:
            self.run()
        else:
            super().run_model()

    def run(self, until: float = _NEVER, progress: Any = None) -> None:
        """Run until no event is left or the next one is after ``until``.

        Each instant handled counts as one Mesa step (``steps``), as ``step()`` does.

        Args:
            until: Stop before handling any instant later than this.
            progress: Optional callable ``progress(arrived_jobs)`` called every 1,000
                instants (used for the terminal progress bar).
        """
        advance = self._advance
        # One definition of the next instant: calling next_time() costs ~60 ns an instant
        # more than an inline copy of it did (3 ms of a >= 1.3 s KTH-SP2 replay, 54,725
        # instants: 0.2 %), too little to keep two copies.
        next_time = self.next_time
        instants = 0
        # The loop allocates many short-lived, acyclic objects; cyclic GC passes over the
        # growing result lists cost ~10% and reclaim nothing, so pause it while running.
        with gc_paused():
            try:
                while True:
                    upcoming = next_time()
                    if upcoming == _NEVER or upcoming > until:
                        break
                    advance(upcoming)
                    instants += 1
                    if progress is not None and instants % 1000 == 0:
                        progress(self._next_arrival)
            finally:
                self.steps += instants
        if self.next_time() == _NEVER:
            self.finalize()

    # ------------------------------------------------------------- results
    def jobs_frame(self) -> pd.DataFrame:
        """One row per job that left the system, by job id (the CLI's ``jobs.csv``)."""
        return self.recorder.jobs_frame()

    def timeseries_frame(self) -> pd.DataFrame:
        """One row per step (the CLI's ``timeseries.csv``; empty with
        ``record_timeseries=False``)."""
        return self.recorder.timeseries_frame()

    def _next_job(self, previous: Job) -> Job | None:
        job = next(self._arrivals, None)
        seen = self._stream_ids
        if seen is not None and job is not None:
            if (job.submit, job.job_id) <= (previous.submit, previous.job_id):
                raise ConfigError(
                    f"job stream not sorted by (submit, job_id): job {job.job_id} "
                    f"(submit {job.submit}) after job {previous.job_id} (submit {previous.submit})"
                )
            if not seen:
                seen.add(previous.job_id)
            if job.job_id in seen:
                raise ConfigError(f"workload has duplicate job ids: {job.job_id}")
            seen.add(job.job_id)
        return job

    def finalize(self) -> None:
        """End the run: jobs still waiting when no event is left can never start (for
        example a head job no allocator can place); record them as ``queued`` so nothing
        disappears from the results. Idempotent."""
        self.running = False
        if self.next_time() != _NEVER:
            return
        for agent in list(self.job_agents.values()):
            self.queue_agent.take(agent.job.job_id)
            self.recorder.starved += 1
            leave(self, agent)

    def _advance(self, now: float | None = None) -> bool:
        if now is None:
            now = self.next_time()
        if now == _NEVER:
            return False
        if now < self.now:
            raise AssertionError(f"time went backwards: {now} < {self.now}")
        self.now = now
        self._free.rest()  # no pass under way: a long log of core changes may be dropped
        heap = self._heap
        cause = None
        while heap and heap[0][0] == now and heap[0][1] == COMPLETION:
            _, _, _, (job_id, segment) = heapq.heappop(heap)
            agent = self.job_agents.get(job_id)
            if agent is not None and agent.segment == segment and agent.status is _RUNNING:
                self._finish(agent)
                cause = cause or "completion"
        upcoming = self._upcoming
        while upcoming is not None and upcoming.submit == now:
            self._arrive(upcoming)
            self._next_arrival += 1
            if self._stream_ids is None:  # a sorted, checked collection
                upcoming = self._upcoming = next(self._arrivals, None)
            else:
                upcoming = self._upcoming = self._next_job(upcoming)
            cause = cause or "arrival"
        while heap and heap[0][0] == now:
            event = heapq.heappop(heap)[3]
            if event is _TICK:
                cause = cause or _TICK
            elif callable(event):
                event(self)  # hybrid queues: a reconfiguration
                cause = "reconfiguration" if cause in (None, "wake-up", _TICK) else cause
            elif event == self._generation:  # the latest decision's wake-up (older ones are stale)
                cause = "wake-up" if cause in (None, _TICK) else cause
        if cause is not None and self.queue_agent.jobs:
            if (
                self._paused is not None
            ):  # next_decision(): stop before deciding; resume() ends the instant
                self._paused = cause
                return True
            self._decide(cause)
        self._end_instant(now)
        return True

    def _end_instant(self, now: float) -> None:
        """What follows an instant's decision: the every-step tick, stale wake-ups, the sample."""
        heap = self._heap
        if (
            self.every_step
            and self.queue_agent.jobs
            and self._tick_at <= now
            and (heap or len(self.running_by_end) or self._upcoming is not None)
        ):
            # (with nothing running or to come no step would change anything: end, not spin)
            self._tick_at = math.floor(now) + 1.0
            self._push(self._tick_at, DECISION, _TICK)
        while (
            heap
            and heap[0][1] == DECISION
            and type(heap[0][3]) is int
            and heap[0][3] != self._generation
        ):
            heapq.heappop(heap)  # a superseded wake-up: no instant, no decision
        if self.recorder.record_timeseries:
            self.recorder.sample(self)

    # ------------------------------------------------- decisions made outside
    def next_decision(self, until: float = _NEVER) -> ModelView | None:
        """Run to the next instant that needs a decision and pause there, before the policy
        is asked; return that decision's view (``None``: no such instant is left by
        ``until``; with no event left the run is finalized, as ``run()`` does).

        This is how a caller that is not a ``Policy`` (a learning environment,
        ``market_hpc.rl``) decides: everything of the instant before the decision has
        happened (completions, arrivals, events), and nothing after it; ``resume(decision)``
        applies the caller's decision exactly as the policy's would be (validated, counted
        in ``decision_causes``, its wake-up kept) and ends the instant. ``run()``, ``step()``
        and this loop handle instants the same way; mixing them is allowed between
        decisions, never while one is pending.

        Raises:
            RuntimeError: a decision is already pending (call ``resume`` first).
        """
        if self._paused is not None:
            raise RuntimeError(
                f"a decision is pending at time {self.now}: call resume(decision) first"
            )
        self._paused = ""  # armed: _advance stores the instant's cause here and returns
        try:
            while True:
                upcoming = self.next_time()
                if upcoming == _NEVER or upcoming > until:
                    break
                self._advance(upcoming)
                self.steps += 1
                if self._paused:
                    self.manager._shared = False  # as dispatch() does before asking the policy
                    return self.decision_view()
        finally:
            if not self._paused:
                self._paused = None
        if self.next_time() == _NEVER:
            self.finalize()
        return None

    @property
    def decision_pending(self) -> bool:
        """Whether ``next_decision()`` paused at a decision that ``resume`` has not applied."""
        return bool(self._paused)

    def resume(self, decision: Decision) -> None:
        """Apply ``decision`` at the instant ``next_decision()`` paused at, and end that instant.

        Raises:
            RuntimeError: no decision is pending.
            PolicyError: an action the model refuses (as for a policy's decision).
        """
        cause = self._paused
        if not cause:
            raise RuntimeError("no decision is pending: call next_decision() first")
        self._paused = None
        self._decide(cause, decision)
        self._end_instant(self.now)

    # ------------------------------------------------------------ lifecycle
    def _arrive(self, job: Job) -> None:
        if not self._can_ever_run(job):
            self.recorder.job_left(job, _REJECTED, None, self.now, 0.0, 0, 0.0, None)
            return
        if self.predictor is not None:
            job = predicted(job, float(self.predictor.predict(job, self.now)))
        agent = JobAgent(self, job)
        self.job_agents[job.job_id] = agent
        self.queue_agent.push(job)

    def _can_ever_run(self, job: Job) -> bool:
        if job.bb > self.platform.burst_buffer:
            return False
        limits = self._unit_limits.get(job.unit)
        if limits is None:
            fits = units_fit(self.platform.capacity, job.unit)
            limits = self._unit_limits[job.unit] = (int(fits.sum()), int(fits.max()))
        if job.profile is not None:  # moldable
            return limits[1] >= 1
        return limits[0] >= job.units

    def _finish(self, agent: JobAgent) -> None:
        release(self, agent, 1.0)
        agent.progress = 1.0
        agent.status = _FINISHED
        curve = agent.job.payload.get("value_curve")
        if curve is not None:
            agent.value = float(curve.value_at(self.now - agent.job.submit))
        if self.predictor is not None:
            self.predictor.observe(agent.job, agent.busy_time, self.now)
        leave(self, agent)

    # ------------------------------------------------------------- decisions
    def _decide(self, cause: str, decision: Decision | None = None) -> None:
        """One decision (its cause counted), the policy's or ``decision`` when given; its
        wake-up, if any, supersedes earlier ones."""
        self._generation += 1
        self.decision_causes[cause] += 1
        apply_decision(self, self.manager.dispatch() if decision is None else decision)
        if self._wake_after is not None:
            wake = self._wake_after(self.decision_view())
            if wake is not None and wake > self.now:
                self._push(wake, DECISION, self._generation)

    def make_view(self) -> ModelView:
        """The read-only snapshot policies decide on."""
        return ModelView(self)

    def decision_view(self) -> ModelView:
        """The view of the current decision: one per model, refreshed for each decision."""
        view = self._view
        if view is None:
            view = self._view = ModelView(self)
            return view
        return view.refresh()

    def running_on(self, node: int) -> list[RunningJob]:
        """Running jobs with units on ``node``, in start order."""
        found = [r for r in self.running_by_end if any(n == node for n, _ in r.allocation)]
        found.sort(key=lambda r: r.seq)
        return found
