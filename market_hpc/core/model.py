"""``HPCModel``: the Mesa model that owns time and validates every decision.

Time is a heap of ``(time, order, seq, event)``; at each instant completions are handled
first, then arrivals (in job-id order), then one decision. Arrivals come from the
workload, already sorted by ``(submit, job_id)``, and are merged with the heap rather than
pushed into it, so a 300k-job trace costs nothing before its jobs arrive.
``step()`` advances to the next instant that has events; nothing polls idle time.
"""

from __future__ import annotations

import dataclasses
import gc
import heapq
import math
import operator
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import mesa
import numpy as np
import pandas as pd

from market_hpc.algorithms.allocation import units_fit
from market_hpc.algorithms.bidding import Bidder, FreeCoresBidder
from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.market import remaining_time
from market_hpc.algorithms.node_runs import NodeRuns
from market_hpc.core.agents import JobAgent, NodeAgent, QueueAgent, ResourceManagerAgent
from market_hpc.core.collector import TimeSeriesCollector
from market_hpc.core.free_state import FreeResources, check_runs
from market_hpc.core.recorder import Recorder
from market_hpc.core.running_jobs import RunningJobs
from market_hpc.core.state import COMPLETION, DECISION
from market_hpc.core.view import ModelView
from market_hpc.domain.job import CORE_UNIT, Job, JobStatus
from market_hpc.domain.platform import Platform, load_platform
from market_hpc.errors import ConfigError, PolicyError
from market_hpc.policies.base import Decision, Drop, Hold, Policy, RunningJob, Start
from market_hpc.policies.registry import make_policy, scheduler_entry
from market_hpc.validation import FRACTION, NON_NEGATIVE_INT, TIME, check

_NEVER = math.inf
_new_tuple = tuple.__new__  # builds a NamedTuple without its Python-level __new__
# Enum members read once: ``JobStatus.X`` goes through the enum's metaclass (~0.4 us a read).
_RUNNING, _FINISHED, _REJECTED = JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.REJECTED
_WAITING = (JobStatus.QUEUED, JobStatus.HELD)


def make_market_aware_policy(scheduler: str, allocator: str | None, hold_penalty: float) -> Policy:
    """``make_policy`` that hands the holding penalty to market schedulers."""
    params = {"penalty": hold_penalty} if scheduler_entry(scheduler).market else None
    return make_policy(scheduler, allocator, scheduler_params=params)


class Predictor(Protocol):
    """Predicts run times online (Netti et al.): what schedulers see as ``job.estimate``.

    The model calls ``predict`` when a job arrives (the job the policies see carries the
    prediction as its estimate; the clock still uses the real run time) and ``observe``
    when a job finishes, so predictions only use what was known at submission.
    """

    name: str

    def predict(self, job: Job, now: float) -> float: ...
    def observe(self, job: Job, run_time: float, now: float) -> None: ...


class HPCModel(mesa.Model):
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

    Raises:
        ConfigError: on duplicate job ids or invalid parameters (``InvalidNumberError``
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
        if policy is None and not isinstance(jobs, Iterator):  # by name: refuse what it lacks before the run
            from market_hpc.policies.registry import check_composition

            jobs = list(jobs)
            check_composition(scheduler, jobs, self.platform)
        self.policy = policy if policy is not None else make_market_aware_policy(scheduler, allocator, hold_penalty)
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
            self._stream_ids = None if getattr(jobs, "presorted_unique", False) else set()
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
        self._wake_pending: set[float] = set()
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
            self._node_agents = [NodeAgent(self, i, self._bidder) for i in range(self.platform.n_nodes)]
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
        mesa.Model.agents.fset(self, agents)  # type: ignore[attr-defined]  # Mesa's error

    @property
    def agents_by_type(self) -> dict[type, mesa.agent.AgentSet]:
        """Mesa's agent sets per agent class (node agents and the job agents in the
        system registered first)."""
        self.register_job_agents()
        return super().agents_by_type

    @property
    def agent_types(self) -> list[type]:
        """Agent classes registered with Mesa (node agents and the job agents in the
        system registered first)."""
        self.register_job_agents()
        return super().agent_types

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
        """Time of the next instant with events (``inf`` when none is left)."""
        heap_time = self._heap[0][0] if self._heap else _NEVER
        if self._upcoming is not None:
            return min(heap_time, self._upcoming.submit)
        return heap_time

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
        instants = 0
        heap = self._heap
        # The loop allocates many short-lived, acyclic objects; cyclic GC passes over the
        # growing result lists cost ~10% and reclaim nothing, so pause it while running.
        collecting = gc.isenabled()
        gc.disable()
        try:
            while True:  # next_time(), inline: the earlier of the heap's top and the next arrival
                upcoming = heap[0][0] if heap else _NEVER
                arrival = self._upcoming
                if arrival is not None and arrival.submit < upcoming:
                    upcoming = arrival.submit
                if upcoming == _NEVER or upcoming > until:
                    break
                advance(upcoming)
                instants += 1
                if progress is not None and instants % 1000 == 0:
                    progress(self._next_arrival)
        finally:
            self.steps += instants
            if collecting:
                gc.enable()
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
                raise ConfigError(f"job stream not sorted by (submit, job_id): job {job.job_id} "
                                  f"(submit {job.submit}) after job {previous.job_id} (submit {previous.submit})")
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
            self._leave(agent)

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
        changed = False
        while heap and heap[0][0] == now and heap[0][1] == COMPLETION:
            _, _, _, (job_id, segment) = heapq.heappop(heap)
            agent = self.job_agents.get(job_id)
            if agent is not None and agent.segment == segment and agent.status is _RUNNING:
                self._finish(agent)
                changed = True
        upcoming = self._upcoming
        while upcoming is not None and upcoming.submit == now:
            self._arrive(upcoming)
            self._next_arrival += 1
            if self._stream_ids is None:  # a sorted, checked collection
                upcoming = self._upcoming = next(self._arrivals, None)
            else:
                upcoming = self._upcoming = self._next_job(upcoming)
            changed = True
        while heap and heap[0][0] == now:
            event = heapq.heappop(heap)[3]  # wake-up request: forces a decision
            if event is not None:
                event(self)  # hybrid queues: a reconfiguration
            changed = True
        if self._wake_pending:
            self._wake_pending.discard(now)
        if changed and self.queue_agent.jobs:
            self._apply(self.manager.dispatch())
        if self.recorder.record_timeseries:
            self.recorder.sample(self)
        return True

    # ------------------------------------------------------------ lifecycle
    def _arrive(self, job: Job) -> None:
        if not self._can_ever_run(job):
            self.recorder.job_left(job, _REJECTED, None, self.now, 0.0, 0, 0.0, None)
            return
        if self.predictor is not None:
            job = dataclasses.replace(job, estimate=float(self.predictor.predict(job, self.now)))
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
        self._release(agent)
        assert agent.running is not None
        self.recorder.segment(agent.job.job_id, agent.running.start, self.now, agent.running.units,
                              agent.progress, 1.0)
        agent.progress = 1.0
        agent.status = _FINISHED
        curve = agent.job.payload.get("value_curve")
        if curve is not None:
            agent.value = float(curve.value_at(self.now - agent.job.submit))
        if self.predictor is not None:
            self.predictor.observe(agent.job, agent.busy_time, self.now)
        self._leave(agent)

    def _leave(self, agent: JobAgent) -> None:
        job = agent.job
        last = agent.running.allocation if agent.running is not None else agent.last_allocation
        self.recorder.job_left(
            job, agent.status, agent.first_start, self.now, agent.busy_time, agent.hold_count,
            agent.value, last,
        )
        del self.job_agents[job.job_id]
        agent.remove()

    def _release(self, agent: JobAgent) -> None:
        running = agent.running
        assert running is not None and agent.runs is not None
        if agent.taken is None:  # plain cores, core-level: run by run
            self._free.move_cores(agent.runs, 1)
            free_total = self.free_total
            self.free_total = (free_total[0] + agent.taken_total[0], *free_total[1:])
        else:
            self.free[agent.nodes] += agent.taken
            self._free.index_rows(agent.runs, agent.taken[:, 0])
            self._adjust_free_total(agent.taken_total, 1)
        self.free_bb += agent.job.bb
        self.running_by_end.remove(running)
        elapsed = self.now - running.start
        agent.busy_time += elapsed
        self.recorder.busy(agent.taken_total, elapsed)

    # ------------------------------------------------------------- decisions
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

    def _fail(self, message: str) -> PolicyError:
        return PolicyError(getattr(self.policy, "name", type(self.policy).__name__), self.now, message)

    def _apply(self, decision: Decision) -> None:
        if not isinstance(decision, Decision):
            raise self._fail(f"decide() must return a Decision, got {type(decision).__name__}")
        for action in decision.actions:
            if isinstance(action, Start):
                self._start(action)
            elif isinstance(action, Hold):
                self._hold(action)
            elif isinstance(action, Drop):
                self._drop(action)
            else:
                raise self._fail(f"unknown action {action!r}")
        self.free_index.settle()
        wake = decision.wake_at
        if wake is not None and wake > self.now and wake not in self._wake_pending:
            self._wake_pending.add(wake)
            self._push(wake, DECISION, None)

    def _queued_agent(self, job_id: int, verb: str) -> JobAgent:
        agent = self.job_agents.get(job_id)
        if agent is None or agent.status not in _WAITING:
            state = "unknown" if agent is None else agent.status.value
            raise self._fail(f"cannot {verb} job {job_id}: it is {state}, not queued")
        return agent

    def _start(self, action: Start) -> None:
        agent = self.job_agents.get(action.job_id)
        if agent is None or agent.status not in _WAITING:
            agent = self._queued_agent(action.job_id, "start")  # raises, naming the state
        job = agent.job
        allocation = action.allocation
        index = self.free_index
        if type(allocation) is NodeRuns and allocation.runs:
            runs = allocation
            fresh = runs is index.fresh  # the index placed it on its current state: valid runs that fit
        elif not allocation:
            raise self._fail(f"start of job {job.job_id} has an empty allocation")
        else:
            runs, fresh = self._runs_of(job, allocation), False
        if not fresh and not check_runs(runs, self.platform.n_nodes):
            raise self._fail(f"job {job.job_id}: allocation {runs!r} must list distinct nodes "
                             f"0..{self.platform.n_nodes - 1} in increasing order with positive unit counts")
        total_units = runs.total_units
        if job.profile is not None:  # moldable: molded on one node, or rigid at its requested size
            assert job.profile is not None
            if (len(allocation) != 1 or not 1 <= total_units <= len(job.profile)) and not (
                    total_units == job.units <= len(job.profile)):
                raise self._fail(f"moldable job {job.job_id} must run on 1..{len(job.profile)} cores "
                                 f"of one node, got {allocation}")
        elif total_units != job.units:
            raise self._fail(f"job {job.job_id} needs {job.units} units, allocation gives {total_units}")
        if job.bb > self.free_bb:
            raise self._fail(f"job {job.job_id} needs {job.bb} GB of burst buffer, {self.free_bb} free")
        if job.unit == CORE_UNIT and not self.exclusive:
            # Plain processor requests touch only the cores column, run by run.
            claimed = index.claim(job.job_id, runs)  # the pass took it already
            if not claimed and not (fresh and runs is index.fresh) and not self._free.has_cores(runs):
                pairs = np.array(runs.pairs(), dtype=np.int64)
                self._take_rows(job, allocation, pairs[:, 0], pairs[:, 1], agent)  # raises with the vectors
            self._free.move_cores(runs, -1, indexed=claimed)
            taken = nodes = None
            agent.taken_total = (total_units, 0, 0, 0)
            free_total = self.free_total
            self.free_total = (free_total[0] - total_units, *free_total[1:])
        else:
            pairs = np.array(runs.pairs(), dtype=np.int64)
            nodes = pairs[:, 0]
            taken = self._take_rows(job, allocation, nodes, pairs[:, 1], agent)
            self._free.index_rows(runs, -taken[:, 0])
            self._adjust_free_total(agent.taken_total, -1)
        self.free_bb -= job.bb
        self.queue_agent.take(job.job_id)
        if agent.progress == 0.0 and job.profile is None and not agent.hold_count:
            agent.seg_full = duration = job.run_time  # a first, rigid segment (overhead stays 0)
            estimate = job.estimate
        else:
            duration, estimate = self._segment_times(agent, total_units)
        self._start_seq += 1
        now = self.now
        running = _new_tuple(RunningJob, (now + estimate, self._start_seq, job, now, allocation, total_units))
        agent.running = running
        agent.runs, agent.nodes, agent.taken = runs, nodes, taken
        agent.status = _RUNNING
        agent.segment += 1
        if agent.first_start is None:
            agent.first_start = now
        self.running_by_end.add(running)
        self._seq += 1
        heapq.heappush(self._heap, (now + duration, COMPLETION, self._seq, (job.job_id, agent.segment)))

    def _runs_of(self, job: Job, allocation: Any) -> NodeRuns:
        """Validate a plain ``((node, units), ...)`` allocation and group it into runs."""
        n_nodes = self.platform.n_nodes
        previous = -1
        try:
            for node, units in allocation:
                if not previous < node < n_nodes or units <= 0:
                    raise self._fail(f"job {job.job_id}: allocation {allocation} must list distinct nodes "
                                     f"0..{n_nodes - 1} in increasing order with positive unit counts")
                previous = node
        except (TypeError, ValueError):
            raise self._fail(f"job {job.job_id}: allocation {allocation!r} is not ((node, units), ...)") from None
        return NodeRuns.from_pairs(allocation)

    def _take_rows(self, job: Job, allocation: Any, nodes: np.ndarray, counts: np.ndarray,
                   agent: JobAgent) -> np.ndarray:
        """Validate and take a multi-resource (or node-exclusive) allocation; return what
        was taken per node row."""
        need = np.outer(counts, job.unit)
        free_rows = self.free[nodes]
        if self.exclusive and (free_rows != self.platform.capacity[nodes]).any():
            raise self._fail(f"job {job.job_id}: exclusive allocation on busy nodes {allocation}")
        if (need > free_rows).any():
            raise self._fail(f"job {job.job_id} over-allocates: needs {need.tolist()} on nodes "
                             f"{nodes.tolist()} with free {free_rows.tolist()}")
        taken = free_rows if self.exclusive else need
        self.free[nodes] = free_rows - taken
        agent.taken_total = tuple(taken.sum(axis=0).tolist())
        return taken

    def _adjust_free_total(self, amounts: tuple[int, ...], sign: int) -> None:
        combine = operator.add if sign > 0 else operator.sub
        self.free_total = tuple(map(combine, self.free_total, amounts))

    def running_on(self, node: int) -> list[RunningJob]:
        """Running jobs with units on ``node``, in start order."""
        found = [r for r in self.running_by_end if any(n == node for n, _ in r.allocation)]
        found.sort(key=lambda r: r.seq)
        return found

    def _segment_times(self, agent: JobAgent, cores: int) -> tuple[float, float]:
        """Real and estimated duration of the next segment on ``cores`` cores/units.

        Remaining work maps onto a new core count proportionally (the market paper is silent): a
        job on c cores progresses at 1/RT(c) per time unit; a resumed moldable job runs
        ``ceil((1 - progress) * RT(c))`` so segments stay on the integer time grid.
        """
        job = agent.job
        left = 1.0 - agent.progress
        # A resume (market holds) first pays the holding cost; the segment's work rate
        # stays 1/RT(c), so progress counts from the end of that overhead.
        overhead = self.resume_seconds if agent.hold_count else 0.0
        agent.seg_overhead = overhead
        if job.profile is not None:  # moldable
            assert job.profile is not None
            agent.seg_full = job.profile[cores - 1]
            duration = remaining_time(job.profile, cores, agent.progress) + overhead
            return duration, duration
        agent.seg_full = job.run_time
        # No early return at progress 0: a job held at the instant it started (or that lost
        # all its work, hold_progress_loss = 1) still pays the resume.
        return left * job.run_time + overhead, left * job.estimate + overhead

    def _hold(self, action: Hold) -> None:
        agent = self.job_agents.get(action.job_id)
        if agent is None or agent.status is not JobStatus.RUNNING:
            state = "unknown" if agent is None else agent.status.value
            raise self._fail(f"cannot hold job {action.job_id}: it is {state}, not running")
        assert agent.running is not None
        done = max(self.now - agent.running.start - agent.seg_overhead, 0.0)
        self._release(agent)
        before = agent.progress
        if agent.seg_full > 0:
            kept = done * (1.0 - self.hold_progress_loss)
            agent.progress = min(agent.progress + kept / agent.seg_full, 1.0)
        self.recorder.segment(agent.job.job_id, agent.running.start, self.now, agent.running.units,
                              before, agent.progress)
        agent.last_allocation = agent.running.allocation
        agent.running = None
        agent.status = JobStatus.HELD
        agent.hold_count += 1
        agent.requeued_at = self.now
        curve = agent.job.payload.get("value_curve")
        if curve is not None:
            self.recorder.penalty(self.hold_penalty * curve.max_value)
        self.recorder.holds += 1
        self.queue_agent.push(agent.job)

    def _drop(self, action: Drop) -> None:
        agent = self._queued_agent(action.job_id, "drop")
        self.queue_agent.take(agent.job.job_id)
        agent.status = JobStatus.DROPPED
        self._leave(agent)
