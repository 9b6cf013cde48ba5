"""Independent learners for ``NodeBiddingEnv`` and their paired evaluation against the
``free-cores`` auction (the core of ``examples/learn_to_bid.py``).

Each node learns alone (independent learners: the other nodes are part of its world):
tabular Q-learning over a coarse state read from its own observation (``coarse_state``:
its free cores, the queue pressure and the queued jobs' mean value per core, in 3 x 3 x 2
bins), epsilon-greedy while training, greedy when evaluated. Seeded: one
``numpy.random.Generator`` per learner, spawned from one seed.

The evaluation plays held-out slices of the workload twice: once with the learners'
greedy offers, once as a plain ``HPCModel`` run in which every node bids ``free-cores``
(the seed's auction). The same slice (same jobs) is one pair; the paired differences of
the total value get a Student t interval (``experiment.stats.paired_differences``).

Numpy only (no torch).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from market_hpc.core.model import HPCModel, release_model
from market_hpc.errors import ConfigError
from market_hpc.experiment.stats import paired_differences
from market_hpc.rl.bidding_env import OBSERVATION, NodeBiddingEnv

NODE_FREE_BINS = (1 / 3, 2 / 3)
"""Edges of the node's free-core share (3 bins)."""
PRESSURE_BINS = (1 / 3, 2 / 3)
"""Edges of the squashed queue pressure (3 bins: queued c* under half the platform, under
twice, more)."""
VALUE_BINS = (0.5,)
"""Edge of the squashed mean value per core (2 bins: below or above the value scale)."""
STATES = (len(NODE_FREE_BINS) + 1) * (len(PRESSURE_BINS) + 1) * (len(VALUE_BINS) + 1)
_NODE_FREE, _PRESSURE, _VALUE = (
    OBSERVATION.index(name) for name in ("node_free", "queue_pressure", "queue_value_mean")
)


def coarse_state(observation: np.ndarray) -> int:
    """The learner's state of a node's observation: ``free bin * 6 + pressure bin * 2 + value bin``.

    >>> # an idle node, a short queue, rich jobs
    >>> coarse_state(np.array([1.0, 1.0, 0.2, 0.6, 0.7, 0.1, 0.0]))
    13
    """
    free = int(np.searchsorted(NODE_FREE_BINS, observation[_NODE_FREE], side="right"))
    pressure = int(np.searchsorted(PRESSURE_BINS, observation[_PRESSURE], side="right"))
    value = int(np.searchsorted(VALUE_BINS, observation[_VALUE], side="right"))
    return (free * (len(PRESSURE_BINS) + 1) + pressure) * (len(VALUE_BINS) + 1) + value


class QLearner:
    """Tabular Q-learning for one node.

    Args:
        actions: Size of the action space.
        rng: The learner's own random stream (exploration).
        alpha: Learning rate in (0, 1].
        gamma: Discount per decision step in [0, 1].
    """

    def __init__(
        self, actions: int, rng: np.random.Generator, alpha: float = 0.1, gamma: float = 0.9
    ) -> None:
        if not 0 < alpha <= 1 or not 0 <= gamma <= 1:
            raise ConfigError(
                f"QLearner: alpha must be in (0, 1] and gamma in [0, 1], got {alpha!r}, {gamma!r}"
            )
        self.q = np.zeros((STATES, actions))
        self.rng = rng
        self.alpha, self.gamma = alpha, gamma

    def greedy(self, state: int) -> int:
        """The action of largest value in ``state`` (ties: the lowest index)."""
        return int(self.q[state].argmax())

    def act(self, state: int, epsilon: float) -> int:
        """Epsilon-greedy: a uniform action with probability ``epsilon``, else ``greedy``."""
        if epsilon > 0 and self.rng.random() < epsilon:
            return int(self.rng.integers(self.q.shape[1]))
        return self.greedy(state)

    def update(self, state: int, action: int, reward: float, next_state: int | None) -> None:
        """One Q-learning update (``next_state`` ``None``: the episode ended)."""
        future = 0.0 if next_state is None else self.gamma * float(self.q[next_state].max())
        self.q[state, action] += self.alpha * (reward + future - self.q[state, action])


@dataclass(frozen=True)
class Training:
    """What ``train`` did.

    Attributes:
        learners: One learner per node, in ``env.possible_agents`` order.
        episodes: Episodes played.
        steps: Decision steps played.
        seconds: Wall-clock seconds of training.
        returns: Total value earned in each training episode (all nodes).
    """

    learners: list[QLearner]
    episodes: int
    steps: int
    seconds: float
    returns: list[float]


def make_learners(
    env: NodeBiddingEnv, seed: int, alpha: float = 0.1, gamma: float = 0.9
) -> list[QLearner]:
    """One learner per node, each with its own stream spawned from ``seed``."""
    streams = np.random.SeedSequence(seed).spawn(len(env.possible_agents))
    return [
        QLearner(env.action_space(agent).n, np.random.default_rng(stream), alpha, gamma)  # type: ignore[attr-defined]
        for agent, stream in zip(env.possible_agents, streams)
    ]


def train(
    env: NodeBiddingEnv,
    episodes: int,
    seed: int,
    *,
    epsilon: tuple[float, float] = (1.0, 0.05),
    alpha: float = 0.1,
    gamma: float = 0.9,
    learners: list[QLearner] | None = None,
) -> Training:
    """Train independent learners for ``episodes`` episodes (epsilon decays linearly from
    ``epsilon[0]`` to ``epsilon[1]``); episode ``k`` is ``env.reset(seed=seed * 1_000_003 + k)``."""
    if episodes < 1:
        raise ConfigError(f"train: episodes must be >= 1, got {episodes!r}")
    learners = learners if learners is not None else make_learners(env, seed, alpha, gamma)
    agents = env.possible_agents
    began, steps, returns = time.perf_counter(), 0, []
    for episode in range(episodes):
        eps = epsilon[0] + (epsilon[1] - epsilon[0]) * episode / max(1, episodes - 1)
        observations, _ = env.reset(seed=seed * 1_000_003 + episode)
        states = [coarse_state(observations[agent]) for agent in agents]
        total = 0.0
        while env.agents:
            actions = [learner.act(state, eps) for learner, state in zip(learners, states)]
            observations, rewards, terminations, _, _ = env.step(dict(zip(agents, actions)))
            following = [coarse_state(observations[agent]) for agent in agents]
            for i, agent in enumerate(agents):
                learners[i].update(
                    states[i],
                    actions[i],
                    rewards[agent],
                    None if terminations[agent] else following[i],
                )
                total += rewards[agent]
            states = following
            steps += 1
        returns.append(total)
    return Training(learners, episodes, steps, time.perf_counter() - began, returns)


def play(
    env: NodeBiddingEnv, policy: Callable[[int, np.ndarray], int], start: int
) -> tuple[float, np.ndarray]:
    """One episode on the slice at ``start``, node ``i`` acting ``policy(i, its observation)``:
    the total value earned (the model's own sum, as a plain run's; the rewards add up to
    it) and how often each action was chosen."""
    observations, _ = env.reset(options={"start": start})
    agents = env.possible_agents
    chosen = np.zeros(len(env.bidders), dtype=np.int64)
    while env.agents:
        actions = {agent: policy(i, observations[agent]) for i, agent in enumerate(agents)}
        np.add.at(chosen, list(actions.values()), 1)
        observations, _, _, _, _ = env.step(actions)
    assert env.model is not None
    return float(env.model.recorder.value_earned), chosen


def greedy_policy(learners: Sequence[QLearner]) -> Callable[[int, np.ndarray], int]:
    """Node ``i`` plays ``learners[i]``'s greedy action in its coarse state."""
    return lambda node, observation: learners[node].greedy(coarse_state(observation))


def fixed_policy(action: int) -> Callable[[int, np.ndarray], int]:
    """Every node plays ``action`` at every decision."""
    return lambda node, observation: action


def play_greedy(
    env: NodeBiddingEnv, learners: Sequence[QLearner], start: int
) -> tuple[float, np.ndarray]:
    """``play`` with the learners' greedy offers."""
    return play(env, greedy_policy(learners), start)


def free_cores_value(env: NodeBiddingEnv, start: int) -> float:
    """Total value of the slice at ``start`` in a plain run where every node bids ``free-cores``."""
    model = HPCModel(
        env.jobs[start : start + env.episode_jobs], env.platform, env.rule, record_timeseries=False
    )
    model.run()
    value = float(model.recorder.value_earned)
    release_model(model)
    return value


def evaluation_starts(env: NodeBiddingEnv, low: float, count: int | None = None) -> list[int]:
    """Disjoint slices of ``env.episode_jobs`` jobs from the fraction ``low`` of the
    workload to its end (at most ``count``): the held-out job sets."""
    n, size = len(env.jobs), env.episode_jobs
    starts = list(range(int(np.ceil(low * n)), n - size + 1, size))
    if not starts:
        raise ConfigError(
            f"evaluation_starts: no slice of {size} jobs after {low:g} of a {n}-job workload"
        )
    return starts[:count] if count is not None else starts


def evaluate(
    env: NodeBiddingEnv,
    learners: Sequence[QLearner] | Callable[[int, np.ndarray], int],
    starts: Sequence[int],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The learners' greedy offers (or any ``policy(node, observation)``) and the
    free-cores auction on every held-out slice: one row per (slice, policy) with its total
    value, and the paired difference ``learned - free-cores`` with its 95% interval."""
    policy = learners if callable(learners) else greedy_policy(learners)
    rows = []
    for start in starts:
        learned, _ = play(env, policy, start)
        rows.append({"slice": start, "policy": "learned", "total_value": learned})
        rows.append(
            {"slice": start, "policy": "free-cores", "total_value": free_cores_value(env, start)}
        )
    frame = pd.DataFrame(rows)
    return frame, paired_differences(frame, "policy", "total_value", "slice", "free-cores")
