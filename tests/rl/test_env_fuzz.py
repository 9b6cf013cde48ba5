"""Seeded fuzz of ``HPCDispatchEnv``'s arguments, ``reset`` and ``step``: whatever is passed,
the only exception that escapes is a ``ConfigError`` (one line, naming the argument)."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="gymnasium is not installed (the dev or rl extra)")

from market_hpc.errors import ConfigError
from market_hpc.rl.env import HPCDispatchEnv
from market_hpc.workload.market_rule import apply_market_rule
from market_hpc.workload.synthetic import lublin_feitelson

JOBS = list(lublin_feitelson(40, 64, seed=2, load_factor=1.6))
SEED = 20240611
VALUES = [
    None,
    "",
    "x",
    "bsld",
    "wrap",
    "first-fit",
    "nodes=8,cores=8",
    "kth-sp2",
    0,
    1,
    -1,
    3,
    3.0,
    1.5,
    2**70,
    float("nan"),
    float("inf"),
    True,
    False,
    np.int64(4),
    np.float64(2.0),
    np.bool_(True),
    np.array([1, 2]),
    [],
    [1],
    (0.2,),
    (0.1, 0.9),
    (0.9, 0.1),
    ("a", "b"),
    {},
    {"start": 0},
    b"jobs",
    object(),
    JOBS[:3],
    [*JOBS[:2], "job"],
    apply_market_rule(JOBS[:3]),
]
ARGUMENTS = (
    "jobs",
    "platform",
    "episode_jobs",
    "window",
    "backfill",
    "allocator",
    "reward",
    "reward_timing",
    "start_range",
    "exclusive",
    "invalid_action",
)
CASES = 400


def _only_config_errors(call) -> str:  # type: ignore[no-untyped-def]
    try:
        call()
    except ConfigError as exc:
        text = str(exc)
        assert "\n" not in text and text, text
        return "refused"
    return "accepted"


def test_constructor_arguments_fuzz() -> None:
    rng = random.Random(SEED)
    outcomes = {"refused": 0, "accepted": 0}
    for _ in range(CASES):
        arguments: dict[str, object] = {
            "jobs": JOBS,
            "platform": "nodes=8,cores=8",
            "episode_jobs": 10,
            "window": 4,
        }
        for name in rng.sample(ARGUMENTS, rng.randint(1, 3)):
            arguments[name] = rng.choice(VALUES)

        def build(arguments: dict[str, object] = arguments) -> None:
            env = HPCDispatchEnv(**arguments)  # type: ignore[arg-type]
            env.reset(seed=0)
            env.step(0)

        outcomes[_only_config_errors(build)] += 1
    assert outcomes["refused"] > CASES // 2 and outcomes["accepted"] > 0, outcomes


def test_reset_and_step_fuzz() -> None:
    rng = random.Random(SEED + 1)
    env = HPCDispatchEnv(JOBS, "nodes=8,cores=8", episode_jobs=10, window=4)
    refused = 0
    for _ in range(CASES):
        seed, options, action = rng.choice(VALUES), rng.choice(VALUES), rng.choice(VALUES)
        refused += _only_config_errors(lambda: env.reset(seed=seed, options=options)) == "refused"  # type: ignore[arg-type]  # noqa: B023
        env.reset(seed=0)
        refused += _only_config_errors(lambda: env.step(action)) == "refused"  # noqa: B023
    assert refused > CASES // 2


def test_reward_and_observation_arguments_fuzz() -> None:
    rng = random.Random(SEED + 2)
    names = ("reward", "reward_params", "observation", "observation_params")
    outcomes = {"refused": 0, "accepted": 0}
    for _ in range(CASES // 4):
        arguments: dict[str, object] = {"episode_jobs": 10, "window": 4}
        for name in rng.sample(names, rng.randint(1, 2)):
            arguments[name] = rng.choice([*VALUES, "default", "wait"])

        def build(arguments: dict[str, object] = arguments) -> None:
            env = HPCDispatchEnv(JOBS, "nodes=8,cores=8", **arguments)  # type: ignore[arg-type]
            env.reset(seed=0)
            env.step(0)

        outcomes[_only_config_errors(build)] += 1
    assert outcomes["refused"] > CASES // 8 and outcomes["accepted"] > 0, outcomes
