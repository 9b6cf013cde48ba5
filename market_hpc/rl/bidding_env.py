"""``NodeBiddingEnv``: node agents that choose their offers in the market auctions, as a
PettingZoo ``ParallelEnv`` over the project's own ``HPCModel``.

Each agent is a node (``node_0``, ``node_1``, ...). The model runs a market dispatcher
(SJQ, maxV, maxVD or minVR, Singh et al.) until an instant needs a decision, then pauses
(``HPCModel.next_decision``). Every node then picks one action: a share of its free
cores to offer (``fractions``) and a reserve value per core (``reserves``, in units of
the workload's value scale), ``Discrete(len(fractions) * len(reserves))``; each node agent
gets an ``OfferReserveBidder`` with its choice, the resource manager runs the existing
auction on those offers (``ResourceManagerAgent.dispatch``) and the model resumes
(``HPCModel.resume``). Instants at which no node has a free core are decided without a
step: every offer is then 0 cores and, with no holding, a reserve changes nothing.

Decisions where the issue is silent:

- **Reward**: the value a node earns, counted when a job completes (its value-curve value
  at completion, as ``jobs.csv``), in the step after which it completed. A job's value is
  shared among the nodes it ran on in proportion to its cores on each (its cores-share);
  the cores-only auction places a job on one node, so that node earns it all. Dropped
  jobs earn nothing. The rewards of an episode add up to the value the model records.
- **Holding** rules are not offered: a hold preempts a node's running job, which is not
  the node's offer to choose, and would need its penalty charged to someone.
- **Value scale**: the median over the workload's jobs of ``max_value / c*``, the value
  per core of a job started at once on its best width (``value_scale``).
- **Episode**: a seeded slice of N consecutive jobs (by submit time) on an empty
  machine, as ``HPCDispatchEnv``; it ends (every agent terminated) when every job of the
  slice has left (finished or dropped).

Observation of a node (``OBSERVATION``, each in [0, 1]): its free cores over its cores,
the platform's free cores over its cores, the queue pressure ``q / (1 + q)`` with ``q``
the queued jobs' ``c*`` cores over the platform's cores, the mean and the largest value
per core of the queued jobs if started now on ``c*`` cores, each as ``v / (1 + v)`` with
``v`` that value over the value scale, and the fractions of the slice's jobs that have
arrived and that have left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from market_hpc.algorithms.market.auction import RULES as MARKET_RULES
from market_hpc.algorithms.market.bidding import OfferReserveBidder
from market_hpc.algorithms.market.maths import c_star
from market_hpc.core.model import HPCModel, release_model
from market_hpc.core.recorder import JOB_COLUMNS
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform, load_platform
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.policies.base import Decision, Hold, Start
from market_hpc.rl.env import episode_start, start_indices
from market_hpc.validation import Range, check

RULES = MARKET_RULES
"""The market rules the environment runs (no holding: see the module docstring)."""
FRACTIONS = (0.25, 0.5, 0.75, 1.0)
"""Default shares of its free cores a node may offer."""
RESERVES = (0.0, 0.25, 0.5, 1.0)
"""Default reserve levels, in units of the workload's value scale (``value_scale``)."""
OBSERVATION = (
    "node_free",
    "platform_free",
    "queue_pressure",
    "queue_value_mean",
    "queue_value_max",
    "arrived",
    "left",
)
"""What each entry of a node's observation is (module docstring)."""
_COUNT = Range(1, 10_000_000, integer=True)
_JOB_ID, _STATUS, _VALUE = (JOB_COLUMNS.index(name) for name in ("job_id", "status", "value"))


def value_scale(jobs: Sequence[Job]) -> float:
    """The median over ``jobs`` of ``max_value / c*`` (value per core on the best width).

    >>> from market_hpc.algorithms.valuecurve import StepCurve
    >>> jobs = [Job(i, 0.0, 4.0, 4.0, units=2, profile=(4.0, 2.0),
    ...             payload={"value_curve": StepCurve(v, 10.0)})
    ...         for i, v in ((1, 10.0), (2, 30.0), (3, 50.0))]
    >>> value_scale(jobs)
    15.0
    """
    per_core = []
    for job in jobs:
        curve = job.payload.get("value_curve")
        if curve is None or job.profile is None:
            raise ConfigError(
                f"NodeBiddingEnv needs moldable jobs with value curves; job {job.job_id} has "
                f"{'no value curve' if curve is None else 'no speed-up profile'} "
                "(use a task-graph job set or workload.market = true for traces)"
            )
        per_core.append(float(curve.max_value) / (job.payload.get("c_star") or c_star(job.profile)))
    return float(np.median(per_core))


class NodeBiddingEnv(ParallelEnv):  # type: ignore[misc]  # pettingzoo ships no type hints
    """Node agents choosing their offers in the market auctions (module docstring).

    Args:
        jobs: The workload (sorted here by submit time, then job id): moldable jobs with
            value curves.
        platform: A ``Platform``, preset, inline spec or TOML path.
        rule: The market rule (``RULES``).
        episode_jobs: N, the jobs of an episode.
        fractions: Shares of its free cores a node may offer, each in (0, 1].
        reserves: Reserve levels in units of the value scale, each >= 0.
        start_range: Fractions ``[low, high)`` of the workload from which an episode's
            first job is drawn (e.g. ``(0, 0.7)`` to train, ``(0.7, 1)`` to evaluate).

    Raises:
        ConfigError: an option out of range or unknown, naming it and what is valid.
    """

    metadata: dict[str, Any] = {"name": "node_bidding_v0", "render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        jobs: Sequence[Job],
        platform: Platform | str = "hlrs-3x9",
        *,
        rule: str = "maxv",
        episode_jobs: int = 60,
        fractions: Sequence[float] = FRACTIONS,
        reserves: Sequence[float] = RESERVES,
        start_range: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        if rule not in RULES:
            raise UnknownNameError("NodeBiddingEnv rule", rule, RULES)
        check(episode_jobs, _COUNT, "episode_jobs")
        self.fractions = _levels(fractions, "fractions", low_open=True, high=1.0)
        self.reserves = _levels(reserves, "reserves", low_open=False, high=math.inf)
        self.platform = load_platform(platform)
        self.jobs = sorted(jobs, key=lambda j: (j.submit, j.job_id))
        if len({j.job_id for j in self.jobs}) != len(self.jobs):
            raise ConfigError("workload has duplicate job ids")
        self.rule, self.episode_jobs = rule, episode_jobs
        self.scale = value_scale(self.jobs)
        self._first, self._last = start_indices(start_range, len(self.jobs), episode_jobs)
        self.possible_agents = [f"node_{i}" for i in range(self.platform.n_nodes)]
        self.agents: list[str] = []
        box = spaces.Box(0.0, 1.0, shape=(len(OBSERVATION),), dtype=np.float32)
        actions = len(self.fractions) * len(self.reserves)
        self.observation_spaces = {agent: box for agent in self.possible_agents}
        self.action_spaces = {agent: spaces.Discrete(actions) for agent in self.possible_agents}
        # One bidder per action, shared by the nodes choosing it (the auction prices a shared
        # strategy in one call).
        self.bidders = [
            OfferReserveBidder(fraction=f, reserve=r * self.scale)
            for f in self.fractions
            for r in self.reserves
        ]
        self.model: HPCModel | None = None
        self.start_index = -1
        self._rng = np.random.default_rng()
        self._placed: dict[int, tuple[tuple[int, int], ...]] = {}
        self._seen = 0
        self._earned = np.zeros(self.platform.n_nodes)
        self._submits = np.zeros(0)

    @classmethod
    def from_config(cls, config: Any, **options: Any) -> NodeBiddingEnv:
        """The environment over the workload and platform of ``config`` (a ``RunConfig`` or
        scenario path); its market rule when it is one of ``RULES`` (else pass ``rule``).
        ``options`` are the other arguments of the constructor."""
        from pathlib import Path

        from market_hpc.experiment.config import RunConfig, load_scenario
        from market_hpc.experiment.run import build_workload

        if not isinstance(config, RunConfig):
            config = load_scenario(Path(config))
        platform = load_platform(config.platform)
        jobs, _ = build_workload(config, platform)
        if "rule" not in options and config.policy.scheduler not in RULES:
            raise ConfigError(
                f"NodeBiddingEnv.from_config: the scenario's scheduler {config.policy.scheduler!r} "
                f"is not one of {', '.join(RULES)}; pass rule=..."
            )
        options.setdefault("rule", config.policy.scheduler)
        return cls(jobs, platform, **options)

    def offer(self, action: int) -> tuple[float, float]:
        """``(fraction, reserve value per core)`` of an action.

        Raises:
            ValueError: an action outside the action space.
        """
        count = len(self.bidders)
        if not isinstance(action, (int, np.integer)) or not 0 <= action < count:
            raise ValueError(f"action {action!r} is not one of 0..{count - 1}")
        fraction, reserve = divmod(int(action), len(self.reserves))
        return self.fractions[fraction], self.reserves[reserve] * self.scale

    def full_offer(self) -> int:
        """The action offering every free core at no reserve (the ``free-cores`` auction), or -1."""
        for action, bidder in enumerate(self.bidders):
            if bidder.fraction[0] == 1.0 and bidder.reserve[0] == 0.0:
                return action
        return -1

    # ------------------------------------------------------------- pettingzoo
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        """The same ``Box`` object for every call with ``agent``."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        """The same ``Discrete`` object for every call with ``agent``."""
        return self.action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start an episode: a seeded slice of N jobs (``options={"start": i}``: the slice
        beginning at the i-th job; other option keys are ignored)."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.start_index = episode_start(
            self._rng, options, self._first, self._last, len(self.jobs) - self.episode_jobs
        )
        release_model(self.model)
        slice_ = self.jobs[self.start_index : self.start_index + self.episode_jobs]
        self._submits = np.array([job.submit for job in slice_])
        self.model = HPCModel(slice_, self.platform, self.rule, record_timeseries=False)
        self.agents = list(self.possible_agents)
        self._placed, self._seen = {}, 0
        self._earned = np.zeros(self.platform.n_nodes)
        self._advance()
        return self._observations(), self._infos()

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Every live node's action (an index of its ``Discrete`` space) for this decision.

        Raises:
            RuntimeError: the episode is over (call ``reset``).
            ValueError: an agent without an action, or an action out of range.
        """
        model = self.model
        if model is None or not self.agents:
            raise RuntimeError("the episode is over: call reset()")
        missing = [agent for agent in self.agents if agent not in actions]
        if missing:
            raise ValueError(
                f"no action for {', '.join(missing)}; every live agent acts: "
                f"{', '.join(self.agents)}"
            )
        for index, agent in enumerate(self.possible_agents):
            self.offer(actions[agent])  # checks the action
            model.node_agents[index].bidder = self.bidders[int(actions[agent])]
        self._decide()
        self._earned[:] = 0.0
        self._advance()
        rewards = {agent: float(self._earned[i]) for i, agent in enumerate(self.possible_agents)}
        observations, infos = self._observations(), self._infos()
        done = self.model is None or not self.model.decision_pending
        terminations = dict.fromkeys(self.agents, done)
        truncations = dict.fromkeys(self.agents, False)
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def close(self) -> None:
        """Nothing to release."""

    # ------------------------------------------------------------- internals
    def _decide(self) -> None:
        """The manager runs the auction on the node agents' offers; the model applies it."""
        model = self.model
        assert model is not None
        decision: Decision = model.manager.dispatch()
        for action in decision.actions:
            if type(action) is Start:
                self._placed[action.job_id] = tuple((int(n), int(c)) for n, c in action.allocation)
            elif type(action) is Hold:  # pragma: no cover - the rules offered never hold
                raise RuntimeError("NodeBiddingEnv runs rules without holding")
        model.resume(decision)

    def _advance(self) -> None:
        """Run to the next decision at which some node has a free core (deciding the others
        without a step), or to the episode's end; count the value of the jobs that left."""
        model = self.model
        assert model is not None
        while True:
            view = model.next_decision()
            self._count_left()
            if view is None or view.free[:, 0].any():
                return
            self._decide()

    def _count_left(self) -> None:
        """Add the value of the jobs that finished since the last count to their nodes, by
        cores-share."""
        model = self.model
        assert model is not None
        rows = model.recorder.rows
        for job_id, status, value in (
            (row[_JOB_ID], row[_STATUS], row[_VALUE]) for row in rows[self._seen :]
        ):
            if status == "finished" and value:
                allocation = self._placed[job_id]
                cores = sum(units for _, units in allocation)
                for node, units in allocation:
                    self._earned[node] += value * units / cores
        self._seen = len(rows)

    def _observations(self) -> dict[str, np.ndarray]:
        model = self.model
        assert model is not None
        if not model.decision_pending:
            zero = np.zeros(len(OBSERVATION), dtype=np.float32)
            return {agent: zero.copy() for agent in self.possible_agents}
        shared = self._shared_features()
        capacity = self.platform.capacity[:, 0]
        node_free = model.free_readonly[:, 0] / capacity
        return {
            agent: np.array((node_free[i], *shared), dtype=np.float32)
            for i, agent in enumerate(self.possible_agents)
        }

    def _shared_features(self) -> tuple[float, ...]:
        """The observation's entries every node shares (after ``node_free``)."""
        model = self.model
        assert model is not None
        view = model.decision_view()
        columns = view.market_columns
        total = float(self.platform.capacity[:, 0].sum())
        free = float(model.free_readonly[:, 0].sum()) / total
        if len(columns):
            best = columns.best.astype(float)
            per_core = (
                columns.values((model.now + columns.fastest) - columns.arrival) / best / self.scale
            )
            pressure = float(best.sum()) / total
            mean, top = float(per_core.mean()), float(per_core.max())
        else:
            pressure = mean = top = 0.0
        arrived = float(np.searchsorted(self._submits, model.now, side="right")) / self.episode_jobs
        left = self._seen / self.episode_jobs
        return free, _squash(pressure), _squash(mean), _squash(top), arrived, left

    def _infos(self) -> dict[str, dict[str, Any]]:
        model = self.model
        info = {"time": 0.0 if model is None else float(model.now), "start_index": self.start_index}
        return {agent: dict(info) for agent in self.possible_agents}


def _squash(value: float) -> float:
    """``v / (1 + v)`` for ``v >= 0``: [0, inf) onto [0, 1)."""
    return value / (1.0 + value) if value > 0 else 0.0


def _levels(
    values: Sequence[float], name: str, *, low_open: bool, high: float
) -> tuple[float, ...]:
    """``values`` as a non-empty tuple of distinct floats in ``(0 or [0, high]``."""
    try:
        levels = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        levels = ()
    valid = f"a non-empty list of distinct numbers in {'(0' if low_open else '[0'}, {high:g}]"
    if (
        not levels
        or len(set(levels)) != len(levels)
        or any(
            not (0 < v if low_open else 0 <= v) or not v <= high or not math.isfinite(v)
            for v in levels
        )
    ):
        raise ConfigError(f"{name}: got {values!r}; valid: {valid}")
    return levels
