"""The independent learners of ``examples/learn_to_bid.py`` and its paired evaluation:
Q-learning moves its greedy action to the action that pays, training learns to accept
jobs when a reserve would refuse them all, and the evaluation pairs the same job sets."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="pettingzoo is not installed (the dev or rl extra)")

from market_fixtures import market_job

from market_hpc.algorithms.valuecurve import StepCurve
from market_hpc.experiment.config import load_scenario
from market_hpc.rl.bid_learning import (
    STATES,
    QLearner,
    coarse_state,
    evaluate,
    evaluation_starts,
    fixed_policy,
    free_cores_value,
    make_learners,
    play_greedy,
    train,
)
from market_hpc.rl.bidding_env import NodeBiddingEnv

REPO = Path(__file__).resolve().parents[2]


def scenario_env(jobs: int = 300, episode_jobs: int = 20) -> NodeBiddingEnv:
    config = load_scenario(REPO / "scenarios" / "market_taskgraphs.toml")
    config = dataclasses.replace(config, workload=dataclasses.replace(config.workload, jobs=jobs))
    return NodeBiddingEnv.from_config(config, rule="maxv", episode_jobs=episode_jobs)


def test_the_greedy_action_moves_to_the_action_whose_reward_is_clearly_higher():
    learner = QLearner(4, np.random.default_rng(0), alpha=0.5, gamma=0.0)
    assert learner.greedy(3) == 0  # nothing learned: the lowest index
    for _ in range(5):
        learner.update(3, 2, 10.0, None)
    assert learner.greedy(3) == 2 and learner.q[3, 2] == pytest.approx(10.0 * (1 - 0.5**5))
    for _ in range(5):
        learner.update(3, 1, 40.0, None)
        learner.update(3, 2, 10.0, None)
    assert learner.greedy(3) == 1
    assert learner.greedy(4) == 0  # other states are untouched
    # the discount carries the next state's best value back
    chained = QLearner(2, np.random.default_rng(0), alpha=1.0, gamma=0.5)
    chained.q[5] = (0.0, 8.0)
    chained.update(4, 0, 1.0, 5)
    assert chained.q[4, 0] == 1.0 + 0.5 * 8.0


def test_exploration_is_seeded_and_greedy_at_epsilon_0():
    explore = QLearner(16, np.random.default_rng(3))
    again = QLearner(16, np.random.default_rng(3))
    picks = [explore.act(0, 1.0) for _ in range(20)]
    assert picks == [again.act(0, 1.0) for _ in range(20)]
    assert len(set(picks)) > 5
    explore.q[0, 9] = 1.0
    assert [explore.act(0, 0.0) for _ in range(5)] == [9] * 5


def test_coarse_states_cover_the_table():
    observations = np.array(
        [
            [free, 1.0, pressure, value, 0.0, 0.0, 0.0]
            for free in (0.0, 0.5, 1.0)
            for pressure in (0.0, 0.5, 0.9)
            for value in (0.1, 0.9)
        ]
    )
    assert sorted(coarse_state(o) for o in observations) == list(range(STATES))


def test_training_learns_to_accept_jobs_a_reserve_would_refuse():
    # Action 0 (reserve ten times the value scale) refuses every job, action 1 (reserve 0)
    # earns them: untrained learners (every value 0, ties to action 0) earn nothing
    jobs = [market_job(i, 10.0 * i, (40.0, 20.0), StepCurve(100.0, 100_000.0)) for i in range(1, 9)]
    env = NodeBiddingEnv(
        jobs, "nodes=2,cores=2", episode_jobs=8, fractions=(1.0,), reserves=(10.0, 0.0)
    )
    untrained, chosen = play_greedy(env, make_learners(env, seed=1), start=0)
    assert untrained == 0.0 and chosen[1] == 0
    trained = train(env, episodes=30, seed=1)
    assert trained.episodes == 30 and len(trained.returns) == 30 and trained.steps > 30
    total, chosen = play_greedy(env, trained.learners, start=0)
    assert total == free_cores_value(env, 0) == 800.0 and chosen[1] > chosen[0]
    again = train(env, episodes=30, seed=1)
    assert again.returns == trained.returns  # same seed, same training
    assert all(np.array_equal(a.q, b.q) for a, b in zip(again.learners, trained.learners))


def test_the_evaluation_pairs_the_same_job_sets():
    env = scenario_env()
    starts = evaluation_starts(env, 0.7)
    assert starts[0] >= 0.7 * len(env.jobs) and np.all(np.diff(starts) == env.episode_jobs)
    assert starts[-1] + env.episode_jobs <= len(env.jobs)
    # learners whose greedy action is the full offer everywhere play the free-cores auction:
    # on the same job sets every paired difference is exactly 0
    full = [QLearner(16, np.random.default_rng(0)) for _ in env.possible_agents]
    for learner in full:
        learner.q[:, env.full_offer()] = 1.0
    frame, table = evaluate(env, full, starts[:3])
    assert list(frame.slice) == [s for s in starts[:3] for _ in range(2)]
    wide = frame.pivot(index="slice", columns="policy", values="total_value")
    assert (wide["learned"] == wide["free-cores"]).all() and (wide["learned"] > 0).all()
    assert (
        int(table.iloc[0].seeds) == 3
        and table.iloc[0].mean_diff == 0
        and table.iloc[0].verdict == "equal"
    )
    assert evaluate(env, fixed_policy(env.full_offer()), starts[:3])[0].equals(frame)
    # a learner that offers a quarter of its free cores earns less on the same slices
    quarter = [QLearner(16, np.random.default_rng(0)) for _ in env.possible_agents]
    for learner in quarter:
        learner.q[:, 0] = 1.0
    _, table = evaluate(env, quarter, starts[:3])
    assert table.iloc[0].mean_diff < 0


def test_the_example_runs_on_a_tiny_setting(capsys):
    spec = importlib.util.spec_from_file_location(
        "learn_to_bid", REPO / "examples" / "learn_to_bid.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert (
        example.main(
            [
                "--scenario",
                str(REPO / "scenarios" / "market_taskgraphs.toml"),
                "--jobs",
                "200",
                "--episode-jobs",
                "20",
                "--episodes",
                "4",
                "--eval",
                "3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "3 held-out slices" in out and "learned - free-cores:" in out and "95% CI" in out
