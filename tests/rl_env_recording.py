"""Seeded ``HPCDispatchEnv`` episodes recorded step by step (observations, masks, rewards,
actions and the starts), for tests/rl/test_env_recorded.py: the environment's hot path
may change, what it gives an agent may not. ``tests/data/rl_env_recorded.npz`` holds the
episodes as the implementation before the step was optimised gave them; re-record only
for an intended change of the observation or reward (``python tests/rl_env_recording.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.rl.env import HPCDispatchEnv
from market_hpc.workload.market_rule import apply_market_rule
from market_hpc.workload.synthetic import lublin_feitelson

RECORDED = Path(__file__).resolve().parent / "data" / "rl_env_recorded.npz"


def _multi_resource() -> list[Job]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from invariants import random_workload

    jobs = [
        job
        for seed in (31, 32, 33, 34)
        for job in random_workload(seed, "nodes=4,cores=4,gpus=1", [(1, 0, 0, 0), (2, 1, 0, 0)])
    ]
    return [
        Job(i + 1, job.submit + 150.0 * (i // 40), job.run_time, job.estimate, job.units, job.unit)
        for i, job in enumerate(jobs)
    ]


CASES: dict[str, Any] = {
    "backfill-step": lambda: (
        HPCDispatchEnv(
            lublin_feitelson(600, 64, seed=2, load_factor=1.6),
            "nodes=8,cores=8",
            episode_jobs=200,
            window=16,
            backfill=True,
            reward_timing="step",
        ),
        3,
    ),
    "market-gpus-value": lambda: (
        HPCDispatchEnv(
            apply_market_rule(_multi_resource()),
            "nodes=4,cores=4,gpus=1",
            episode_jobs=120,
            window=8,
            reward="value",
            reward_timing="step",
            exclusive=True,
        ),
        5,
    ),
    "wide-window-episode": lambda: (
        HPCDispatchEnv(
            lublin_feitelson(400, 64, seed=4, load_factor=1.9),
            "nodes=16,cores=4",
            episode_jobs=250,
            window=128,
            reward="wait",
        ),
        7,
    ),
}


def play(name: str) -> dict[str, np.ndarray]:
    """One seeded episode of case ``name`` with a seeded random masked agent."""
    env, seed = CASES[name]()
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    observations, masks, rewards, actions = [obs], [], [], []
    done = False
    while not done:
        mask = env.action_masks()
        action = int(rng.choice(np.flatnonzero(mask)))
        obs, reward, done, _, _ = env.step(action)
        observations.append(obs)
        masks.append(mask)
        rewards.append(reward)
        actions.append(action)
    assert env.model is not None
    frame = env.model.jobs_frame()
    return {
        "observations": np.stack(observations),
        "masks": np.stack(masks),
        "rewards": np.array(rewards),
        "actions": np.array(actions),
        "start_time": frame["start_time"].to_numpy(dtype=float),
    }


if __name__ == "__main__":
    np.savez_compressed(
        RECORDED,
        **{f"{name}/{key}": value for name in CASES for key, value in play(name).items()},
    )
    print(f"wrote {RECORDED}")
