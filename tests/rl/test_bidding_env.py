"""``NodeBiddingEnv``: PettingZoo's API and seed checkers, determinism, rewards that add
up to the value the model records, the full offer as the free-cores auction, and a
hand-checked reward split."""

from __future__ import annotations

import dataclasses
import gc
import warnings
import weakref

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="pettingzoo is not installed (the dev or rl extra)")

from market_fixtures import market_job, rigid_profile
from pettingzoo.test import parallel_api_test, parallel_seed_test

from market_hpc.algorithms.valuecurve import StepCurve
from market_hpc.core.model import HPCModel
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.experiment.config import load_scenario
from market_hpc.rl.bidding_env import OBSERVATION, NodeBiddingEnv


def scenario(jobs: int = 200):  # type: ignore[no-untyped-def]
    """The market task-graph scenario (hlrs-3x9, load 2) with ``jobs`` jobs."""
    config = load_scenario("scenarios/market_taskgraphs.toml")
    return dataclasses.replace(config, workload=dataclasses.replace(config.workload, jobs=jobs))


def small_env() -> NodeBiddingEnv:
    return NodeBiddingEnv.from_config(scenario(), rule="maxv", episode_jobs=20)


def play(env: NodeBiddingEnv, actions, seed=None, start=None):  # type: ignore[no-untyped-def]
    """One episode with ``actions(step, agent)``; the rewards of every step."""
    env.reset(seed=seed, options=None if start is None else {"start": start})
    rewards, step = [], 0
    while env.agents:
        _, reward, _, truncated, _ = env.step({agent: actions(step, agent) for agent in env.agents})
        assert not any(truncated.values())
        rewards.append(reward)
        step += 1
    return rewards


def test_the_pettingzoo_api_and_seed_checkers_pass():
    env = small_env()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker warns about what it does not assert
        parallel_api_test(env, num_cycles=1000)
    parallel_seed_test(small_env, num_cycles=200)
    assert env.possible_agents == ["node_0", "node_1", "node_2"]
    assert env.observation_space("node_1").shape == (len(OBSERVATION),)
    assert env.action_space("node_1").n == 16


def test_same_seed_and_same_actions_give_the_same_rewards():
    def scripted(seed):  # type: ignore[no-untyped-def]
        rng = np.random.default_rng(seed)
        return lambda step, agent: int(rng.integers(16))

    first = play(small_env(), scripted(7), seed=3)
    again = play(small_env(), scripted(7), seed=3)
    other = play(small_env(), scripted(8), seed=3)
    assert first == again
    assert first != other


def test_every_node_offering_all_free_cores_is_the_free_cores_auction():
    env = small_env()
    full = env.full_offer()
    assert env.offer(full) == (1.0, 0.0)
    for start in (0, 57, 180):
        rewards = play(env, lambda step, agent: full, start=start)
        plain = HPCModel(
            env.jobs[start : start + 20], env.platform, "maxv", record_timeseries=False
        )
        plain.run()
        assert env.model is not None and env.model.jobs_frame().equals(plain.jobs_frame())
        total = sum(sum(step.values()) for step in rewards)
        assert total == pytest.approx(plain.jobs_frame()["value"].sum(), rel=1e-12)
        assert total > 0


def test_a_node_with_a_high_reserve_earns_nothing_and_its_peer_earns_the_value():
    # Two 4-core jobs worth 100 and 200 on two 4-core nodes: value scale 37.5 per core.
    jobs = [
        market_job(i, 0, rigid_profile(4), StepCurve(v, 100_000.0))
        for i, v in ((1, 100.0), (2, 200.0))
    ]
    env = NodeBiddingEnv(
        jobs, "nodes=2,cores=4", episode_jobs=2, fractions=(1.0,), reserves=(0.0, 2.0)
    )
    assert env.scale == 37.5 and env.offer(1) == (1.0, 75.0)
    # maxV: node 0 wins the tie and takes job 2, node 1 job 1; each earns its job's value
    rewards = play(env, lambda step, agent: 0)
    assert sum(r["node_0"] for r in rewards) == 200.0 and sum(r["node_1"] for r in rewards) == 100.0
    # at 75 per core node 0 turns both down (50 and 25
    # per core): node 1 runs both, one after the other
    rewards = play(env, lambda step, agent: 1 if agent == "node_0" else 0)
    assert sum(r["node_0"] for r in rewards) == 0.0 and sum(r["node_1"] for r in rewards) == 300.0
    assert [r["node_1"] for r in rewards if r["node_1"]] == [
        200.0,
        100.0,
    ]  # each when its job completed


def test_bad_options_and_actions_fail_naming_what_is_valid():
    with pytest.raises(UnknownNameError, match="maxv"):
        NodeBiddingEnv.from_config(scenario(), rule="maxvh")
    with pytest.raises(ConfigError, match="not one of sjq"):
        NodeBiddingEnv.from_config(scenario())  # the scenario runs maxvh
    with pytest.raises(ConfigError, match="fractions"):
        NodeBiddingEnv.from_config(scenario(), rule="maxv", fractions=(0.0, 1.0))
    env = small_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="no action for node_2"):
        env.step({"node_0": 0, "node_1": 0})
    with pytest.raises(ValueError, match="0..15"):
        env.step({"node_0": 0, "node_1": 0, "node_2": 16})
    play(env, lambda step, agent: 0, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})


def test_a_finished_episodes_model_is_released():
    env = small_env()
    play(env, lambda step, agent: 0, seed=0)
    finished = weakref.ref(env.model)
    env.reset(seed=1)
    gc.collect()
    assert finished() is None
