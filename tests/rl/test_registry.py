"""Rewards and observations by name (``market_hpc.rl.registry``): the registry's refusals,
a custom reward and observation in ``HPCDispatchEnv`` (``check_env``, a hand-checked 3-job
episode), the spec saved beside a model, and ``learned:PATH`` rebuilding the observation
or refusing one that is not registered. The last test trains (the rl extra; skipped
without torch and sb3-contrib)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import rl_custom_features  # registers test-wait-in and test-waits
from rl_custom_features import Waits

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError
from market_hpc.policies import make_allocator
from market_hpc.rl.dispatch import DispatchOptions
from market_hpc.rl.learned import DispatchingPolicy, load_options, load_spec, save_learned
from market_hpc.rl.registry import (
    OBSERVATIONS,
    REWARDS,
    ModelSpec,
    make_observation,
    make_reward,
    register_observation,
    register_reward,
)
from market_hpc.workload.synthetic import lublin_feitelson

PLATFORM = "nodes=8,cores=8"
JOBS = lublin_feitelson(300, 64, seed=5, load_factor=1.6)
# Hand-checked: J1 (4 cores, 100 s) and J2 (2 cores) arrive at 0 on 4 cores, J3 (2 cores) at 10.
THREE = [
    Job(1, 0.0, 100.0, 100.0, units=4),
    Job(2, 0.0, 50.0, 50.0, units=2),
    Job(3, 10.0, 20.0, 20.0, units=2),
]


@pytest.fixture
def scratch_names():  # type: ignore[no-untyped-def]
    """Names a test registers, removed again afterwards (the registry is per process)."""
    names: list[str] = []
    yield names
    for name in names:
        REWARDS.pop(name, None)
        OBSERVATIONS.pop(name, None)


# ------------------------------------------------------------------ the registry
def test_built_ins_are_registered_in_order_with_their_signs() -> None:
    assert list(REWARDS)[:3] == ["bsld", "wait", "value"]
    assert [REWARDS[n].negate for n in ("bsld", "wait", "value")] == [True, True, False]
    assert "default" in OBSERVATIONS
    assert rl_custom_features.wait_in(THREE[2], 100.0) == 1.5


def test_a_taken_name_is_refused(scratch_names) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as caught:
        register_reward("bsld")(lambda job, start: 0.0)
    assert str(caught.value) == (
        "reward 'bsld' is already registered (by market_hpc.rl.registry.bounded_slowdown)"
    )
    with pytest.raises(ConfigError) as caught:
        register_observation("test-waits")(Waits)
    assert str(caught.value) == (
        "observation 'test-waits' is already registered (by rl_custom_features.Waits)"
    )
    with pytest.raises(ConfigError) as caught:
        register_reward("test-one-argument")(lambda job: 0.0)
    assert str(caught.value) == (
        f"reward 'test-one-argument': {__name__}.test_a_taken_name_is_refused.<locals>."
        "<lambda> takes 1 positional argument(s); a reward takes 2 (job, start), then "
        "keyword parameters"
    )
    assert "test-one-argument" not in REWARDS


def test_unknown_names_and_parameters_name_the_valid_ones() -> None:
    rewards = ", ".join(REWARDS)
    with pytest.raises(ConfigError) as caught:
        make_reward("profit")
    assert str(caught.value) == f"reward: got 'profit'; valid: {rewards}"
    assert rewards.startswith("bsld, wait, value") and "test-wait-in" in rewards
    with pytest.raises(ConfigError) as caught:
        make_observation("pixels", 8)
    assert str(caught.value) == f"observation: got 'pixels'; valid: {', '.join(OBSERVATIONS)}"
    with pytest.raises(ConfigError) as caught:
        make_reward("test-wait-in", {"scael": 10.0})
    assert str(caught.value) == (
        "reward_params: reward 'test-wait-in' has no parameter 'scael'; valid: scale"
    )
    with pytest.raises(ConfigError) as caught:
        make_observation("default", 8, {"scale": 2.0})
    assert str(caught.value) == (
        "observation_params: observation 'default' has no parameter 'scale'; valid: none"
    )
    with pytest.raises(ConfigError, match=r"^reward_params: got .*valid: JSON values"):
        make_reward("test-wait-in", {"scale": object()})


def test_an_observation_must_have_a_size_and_bounds_holding_zero(scratch_names) -> None:  # type: ignore[no-untyped-def]
    class Positive(Waits):
        low = 0.5

    register_observation("test-positive")(Positive)
    scratch_names.append("test-positive")
    with pytest.raises(ConfigError) as caught:
        make_observation("test-positive", 4)
    assert str(caught.value) == (
        "observation 'test-positive': bounds low=0.5, high=1.0; valid: numbers with "
        "low <= 0 <= high (the terminal observation is all zeros)"
    )


# ------------------------------------------------------------------ the environment
def test_the_environment_with_a_custom_reward_and_observation_passes_check_env() -> None:
    pytest.importorskip("gymnasium", reason="gymnasium is not installed")
    from gymnasium.utils.env_checker import check_env

    from market_hpc.rl.env import HPCDispatchEnv

    for timing in ("step", "episode"):
        env = HPCDispatchEnv(
            list(JOBS),
            PLATFORM,
            episode_jobs=64,
            window=16,
            reward="test-wait-in",
            reward_params={"scale": 30.0},
            reward_timing=timing,
            observation="test-waits",
            backfill=True,
        )
        assert env.observation_space.shape == (17,)
        check_env(env, skip_render_check=True)


def test_a_custom_reward_and_observation_on_three_jobs() -> None:
    pytest.importorskip("gymnasium", reason="gymnasium is not installed")
    from market_hpc.rl.env import HPCDispatchEnv

    env = HPCDispatchEnv(
        THREE,
        "nodes=1,cores=4",
        episode_jobs=3,
        window=4,
        reward="test-wait-in",
        reward_params={"scale": 10.0},
        reward_timing="step",
        observation="test-waits",
    )
    obs, info = env.reset(options={"start": 0})
    assert info["time"] == 0.0
    assert obs.tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]  # J1, J2 waited 0; 4 of 4 cores free
    # J1 starts at 0 (wait 0); J2 no longer fits, the model runs to J1's end at 100.
    obs, reward, done, _, info = env.step(0)
    assert (reward, done, info["time"]) == (0.0, False, 100.0)
    assert obs.tolist() == pytest.approx([0.5, 90 / 190, 0.0, 0.0, 1.0])  # J2, J3 waited 100, 90
    # J2 starts at 100: wait 100 s = 10 units of 10 s, a cost, over the episode's 3 jobs.
    obs, reward, done, _, info = env.step(0)
    assert (reward, done) == (-10.0 / 3, False)
    assert obs.tolist() == pytest.approx([90 / 190, 0.0, 0.0, 0.0, 0.5])  # 2 of 4 cores free
    obs, reward, done, _, info = env.step(0)  # J3 starts at 100: wait 90 s
    assert (reward, done, info["started"]) == (-3.0, True, 3)
    assert obs.tolist() == [0.0] * 5
    episode = HPCDispatchEnv(
        THREE,
        "nodes=1,cores=4",
        episode_jobs=3,
        window=4,
        reward="test-wait-in",
        reward_params={"scale": 10.0},
        observation="test-waits",
    )
    episode.reset(options={"start": 0})
    rewards = [episode.step(0)[1] for _ in range(3)]
    assert rewards == [0.0, 0.0, -19.0 / 3]
    assert episode.model_spec == ModelSpec("test-waits", {}, "test-wait-in", {"scale": 10.0})


# ------------------------------------------------------------------ saved with a model
class _Model:
    """What save_learned needs of a model: ``save(path)`` writing the zip."""

    def save(self, path: str) -> None:
        with open(path if path.endswith(".zip") else path + ".zip", "wb") as out:
            out.write(b"model")


def test_the_spec_round_trips_beside_the_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec = ModelSpec("test-waits", {"scale": 50.0}, "test-wait-in", {"scale": 10.0}, "step")
    options = DispatchOptions(window=8, backfill=True)
    saved = save_learned(_Model(), tmp_path / "m", options, spec, trace="three")
    assert saved == tmp_path / "m.zip" and saved.read_bytes() == b"model"
    assert json.loads((tmp_path / "m.zip.json").read_text()) == {
        "options": {"window": 8, "backfill": True, "allocator": "first-fit"},
        "observation": {"name": "test-waits", "params": {"scale": 50.0}},
        "reward": {"name": "test-wait-in", "params": {"scale": 10.0}, "timing": "step"},
        "trace": "three",
    }
    loaded, rest = load_options(saved)
    assert loaded == options and rest["trace"] == "three"
    assert load_spec(saved, rest) == spec
    # A file written before rewards and observations had names: the defaults.
    assert load_spec(saved, {"trace": "three"}) == ModelSpec()
    with pytest.raises(ConfigError, match=r"^save_learned: 'reward' is saved from"):
        save_learned(_Model(), tmp_path / "n", options, spec, reward="bsld")


def test_learned_path_refuses_an_observation_that_is_not_registered(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.policies import make_policy

    spec = ModelSpec(observation="my-obs")
    saved = save_learned(_Model(), tmp_path / "m", DispatchOptions(window=8), spec)
    with pytest.raises(ConfigError) as caught:
        make_policy(f"learned:{saved}")
    message = str(caught.value)
    assert "\n" not in message
    assert message.endswith(
        f"learned:{saved}: the model was saved with observation 'my-obs', which is not "
        f"registered in this process; registered: {', '.join(OBSERVATIONS)}; register it with "
        "@market_hpc.rl.registry.register_observation('my-obs') in a module imported before "
        "the model is loaded, or name that module in an installed package's 'market_hpc.rl' "
        "entry point"
    )
    wrong = save_learned(
        _Model(), tmp_path / "w", DispatchOptions(window=8), ModelSpec("test-waits", {"x": 1})
    )
    with pytest.raises(ConfigError) as caught:
        make_policy(f"learned:{wrong}")
    assert str(caught.value).endswith(
        f"learned:{wrong}: observation_params: observation 'test-waits' has no parameter "
        "'x'; valid: scale"
    )


class ShortestWait:
    """A scripted predictor over ``test-waits``: the slot that waited least (the latest)."""

    def predict(self, observation, *, action_masks, deterministic):  # type: ignore[no-untyped-def]
        scores = np.where(action_masks, observation[: len(action_masks)], 2.0)
        return int(np.argmin(scores)), None


def test_a_policy_reads_the_custom_observation_as_the_environment_offers_it() -> None:
    pytest.importorskip("gymnasium", reason="gymnasium is not installed")
    from market_hpc.rl.env import HPCDispatchEnv

    jobs = list(JOBS[:120])
    env = HPCDispatchEnv(
        jobs, PLATFORM, episode_jobs=len(jobs), window=16, observation="test-waits"
    )
    agent = ShortestWait()
    obs, _ = env.reset(options={"start": 0})
    done = False
    while not done:
        action, _ = agent.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, done, _, _ = env.step(action)
    assert env.model is not None
    policy = DispatchingPolicy(
        make_allocator("first-fit"),
        agent,
        DispatchOptions(window=16),
        observation=make_observation("test-waits", 16),
    )
    run = HPCModel(jobs, PLATFORM, policy=policy, record_timeseries=False)
    run.run()
    columns = ["job_id", "start_time", "nodes"]
    assert run.jobs_frame()[columns].equals(env.model.jobs_frame()[columns])
    fifo = HPCModel(jobs, PLATFORM, scheduler="fifo", record_timeseries=False)
    fifo.run()  # the observation decides: not the queue order
    assert not run.jobs_frame()[columns].equals(fifo.jobs_frame()[columns])


# ------------------------------------------------------------------ training (rl extra)
@pytest.mark.rl
def test_a_model_trained_with_a_custom_reward_and_observation_runs_in_a_sweep(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sb3_contrib = pytest.importorskip(
        "sb3_contrib", reason="the rl extra (sb3-contrib, torch) is not installed"
    )
    from market_hpc.experiment.sweep import run_sweep
    from market_hpc.rl.env import HPCDispatchEnv

    env = HPCDispatchEnv(
        list(JOBS),
        PLATFORM,
        episode_jobs=64,
        window=16,
        reward="test-wait-in",
        reward_params={"scale": 600.0},
        reward_timing="step",
        observation="test-waits",
        observation_params={"scale": 300.0},
    )
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=64,
        batch_size=32,
        n_epochs=1,
        seed=0,
        policy_kwargs={"net_arch": [16]},
        device="cpu",
    )
    model.learn(128)
    path = save_learned(model, tmp_path / "custom", env.options, env.model_spec)
    assert load_spec(path, load_options(path)[1]) == env.model_spec
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f"""
name = "custom-learned"
platform = "{PLATFORM}"
seeds = 1

[workload]
generator = "lublin-feitelson"
jobs = 150
load_factor = 1.5

[policy]
scheduler = "fifo"

[grid]
"policy.scheduler" = ["fifo", "learned:{path}"]
""")
    outcome = run_sweep(sweep, tmp_path / "out", progress=False)  # in this process: registered
    assert " 0 failed" in outcome.describe()
    import pandas as pd

    table = pd.read_csv(tmp_path / "out" / "results.csv")
    assert set(table["scheduler"]) == {"fifo", f"learned:{path}"}
    assert (table["status"] == "ok").all()
