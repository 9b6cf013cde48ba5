"""``HPCDispatchEnv``: the API checker, seeding, rewards, options, and correctness by
construction: scripted agents reproduce fifo, sjf and easy start for start, and masked
actions never produce a decision the core refuses."""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (the dev or rl extra)")

from conftest import real_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import assert_schedule_invariants, random_workload
from rl_env_recording import CASES

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import PRESETS
from market_hpc.errors import ConfigError
from market_hpc.policies.classic import shortest_first
from market_hpc.rl.dispatch import JOB_FEATURES, first_fit_slot, job_metric
from market_hpc.rl.env import HPCDispatchEnv
from market_hpc.rl.evaluate import episode_metrics, episode_metrics_frame
from market_hpc.workload.market_rule import apply_market_rule
from market_hpc.workload.synthetic import lublin_feitelson

PLATFORM = "nodes=8,cores=8"


def _play(env: HPCDispatchEnv, agent, seed: int | None = None, start: int | None = None):  # type: ignore[no-untyped-def]
    """One episode; returns the observations, rewards and last info."""
    obs, info = env.reset(seed=seed, options=None if start is None else {"start": start})
    observations, rewards, done = [obs], [], False
    while not done:
        obs, reward, done, truncated, info = env.step(agent(env))
        assert not truncated
        observations.append(obs)
        rewards.append(reward)
    return observations, rewards, info


def first_job(env: HPCDispatchEnv) -> int:
    return 0


def shortest_job(env: HPCDispatchEnv) -> int:
    return first_fit_slot(env.window_jobs(), shortest_first)


def _starts(frame):  # type: ignore[no-untyped-def]
    return frame.set_index("job_id")[["status", "start_time", "nodes"]].sort_index()


def _reproduces(
    jobs: list[Job],
    platform: str,
    scheduler: str,
    agent,
    backfill: bool,  # type: ignore[no-untyped-def]
    window: int = 128,
) -> None:
    reference = HPCModel(jobs, platform, scheduler=scheduler, record_timeseries=False)
    reference.run()
    env = HPCDispatchEnv(jobs, platform, episode_jobs=len(jobs), window=window, backfill=backfill)
    _play(env, agent, start=0)
    assert env.model is not None
    ours, theirs = _starts(env.model.jobs_frame()), _starts(reference.jobs_frame())
    assert len(ours) == len(jobs)
    pd_testing = pytest.importorskip("pandas.testing")
    pd_testing.assert_frame_equal(ours, theirs)
    assert env.model.decision_causes == reference.decision_causes


# ------------------------------------------------------------------ reproduction
GENERATED = lublin_feitelson(600, 64, seed=2, load_factor=1.6)


@pytest.mark.parametrize(
    ("scheduler", "agent", "backfill"),
    [("fifo", first_job, False), ("sjf", shortest_job, False), ("easy", first_job, True)],
)
def test_scripted_agents_reproduce_schedulers_on_a_generated_workload(
    scheduler, agent, backfill
) -> None:  # type: ignore[no-untyped-def]
    _reproduces(list(GENERATED), PLATFORM, scheduler, agent, backfill, window=len(GENERATED))


@pytest.mark.parametrize(
    ("scheduler", "agent", "backfill"),
    [("fifo", first_job, False), ("sjf", shortest_job, False), ("easy", first_job, True)],
)
def test_scripted_agents_reproduce_schedulers_on_a_multi_resource_platform(
    scheduler, agent, backfill
) -> None:  # type: ignore[no-untyped-def]
    platform = "nodes=4,cores=4,gpus=1"
    jobs = [
        job
        for seed in (21, 22, 23)
        for job in random_workload(seed, platform, [(1, 0, 0, 0), (2, 1, 0, 0)])
    ]
    jobs = [
        Job(i + 1, job.submit + 200.0 * (i // 40), job.run_time, job.estimate, job.units, job.unit)
        for i, job in enumerate(jobs)
    ]
    _reproduces(jobs, platform, scheduler, agent, backfill, window=len(jobs))


@pytest.mark.traces
@pytest.mark.parametrize(
    ("scheduler", "agent", "backfill"),
    [("fifo", first_job, False), ("sjf", shortest_job, False), ("easy", first_job, True)],
)
def test_scripted_agents_reproduce_schedulers_on_a_kth_slice(scheduler, agent, backfill) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.workload.swf import read_swf

    jobs = list(read_swf(real_trace("KTH-SP2-1996-2.1-cln.swf.gz")).jobs)[5000:7000]
    _reproduces(jobs, "kth-sp2", scheduler, agent, backfill, window=len(jobs))


def test_the_first_job_agent_is_fifo_whatever_the_window() -> None:
    # The queue outgrows a window of 8: the first slot is still the queue's head.
    _reproduces(list(GENERATED), PLATFORM, "fifo", first_job, False, window=8)
    _reproduces(list(GENERATED), PLATFORM, "easy", first_job, True, window=8)


# ------------------------------------------------------------- masked actions
PROPERTY_PLATFORMS = {
    "cores": ("nodes=6,cores=4", [(1, 0, 0, 0), (2, 0, 0, 0), (3, 0, 0, 0)]),
    "gpus": ("nodes=4,cores=4,gpus=1", [(1, 0, 0, 0), (2, 1, 0, 0)]),
    "memory": ("nodes=4,cores=8,mem=16", [(1, 0, 0, 1024), (2, 0, 0, 8192)]),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    platform_name=st.sampled_from(sorted(PROPERTY_PLATFORMS)),
    backfill=st.booleans(),
    exclusive=st.booleans(),
    window=st.sampled_from([1, 3, 16]),
)
def test_random_masked_actions_are_never_refused(
    seed: int, platform_name: str, backfill: bool, exclusive: bool, window: int
) -> None:
    platform, units = PROPERTY_PLATFORMS[platform_name]
    jobs = random_workload(seed, platform, units, count=60)
    env = HPCDispatchEnv(
        jobs,
        platform,
        episode_jobs=len(jobs),
        window=window,
        backfill=backfill,
        exclusive=exclusive,
        invalid_action="raise",
    )
    rng = np.random.default_rng(seed)

    def masked(env: HPCDispatchEnv) -> int:
        return int(rng.choice(np.flatnonzero(env.action_masks())))

    _play(env, masked, start=0)  # a refused decision raises PolicyError
    assert env.model is not None
    assert_schedule_invariants(jobs, env.model.jobs_frame(), platform, exclusive=exclusive)


# ------------------------------------------------------------------ gymnasium
def test_check_env_passes() -> None:
    from gymnasium.utils.env_checker import check_env

    env = HPCDispatchEnv(list(GENERATED), PLATFORM, episode_jobs=64, window=16)
    check_env(env, skip_render_check=True)
    market = HPCDispatchEnv(
        apply_market_rule(GENERATED),
        PLATFORM,
        episode_jobs=64,
        window=16,
        reward="value",
        reward_timing="step",
        backfill=True,
    )
    check_env(market, skip_render_check=True)


def test_same_seed_same_episode_and_spaces_hold_every_observation() -> None:
    env = HPCDispatchEnv(list(GENERATED), PLATFORM, episode_jobs=100, window=32)
    first = _play(env, lambda e: 0, seed=7)
    second = _play(env, lambda e: 0, seed=7)
    assert env.start_index == first[2]["start_index"] == second[2]["start_index"]
    assert all(np.array_equal(a, b) for a, b in zip(first[0], second[0], strict=True))
    assert first[1] == second[1]
    other = _play(env, lambda e: 0, seed=8)
    assert other[2]["start_index"] != first[2]["start_index"]
    for obs in first[0] + other[0]:
        assert env.observation_space.contains(obs)


def test_step_rewards_add_up_to_the_episode_reward_and_the_metric() -> None:
    jobs = list(GENERATED)
    step = HPCDispatchEnv(jobs, PLATFORM, episode_jobs=200, reward_timing="step")
    episode = HPCDispatchEnv(jobs, PLATFORM, episode_jobs=200, reward_timing="episode")
    _, step_rewards, info = _play(step, shortest_job, start=100)
    _, episode_rewards, _ = _play(episode, shortest_job, start=100)
    assert all(r == 0.0 for r in episode_rewards[:-1])
    assert sum(step_rewards) == pytest.approx(episode_rewards[-1])
    # The reward is minus the mean bounded slowdown of the slice (every job started).
    assert step.model is not None
    frame = step.model.jobs_frame()
    bsld = np.maximum(
        1.0, (frame["wait_time"] + frame["run_time"]) / np.maximum(frame["run_time"], 10.0)
    )
    assert info["episode_metrics"]["jobs"] == 200
    assert -episode_rewards[-1] == pytest.approx(bsld.mean())
    assert info["episode_metrics"]["bsld"] == pytest.approx(bsld.mean())
    assert info["episode_metrics"]["wait"] == pytest.approx(frame["wait_time"].mean())


@pytest.mark.parametrize("name", sorted(CASES))
def test_episode_metrics_are_the_frames_bit_for_bit(name: str) -> None:
    env = CASES[name]()[0]
    rng = np.random.default_rng(7)
    env.reset(seed=7)
    done, steps = False, 0
    while not done:
        _, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        steps += 1
        if steps % 11 == 0 or done:  # mid-episode too: jobs still running or waiting
            fast, frame = episode_metrics(env.model), episode_metrics_frame(env.model)
            assert fast.keys() == frame.keys()
            for key, value in frame.items():
                assert np.float64(fast[key]).tobytes() == np.float64(value).tobytes(), key
    assert info["episode_metrics"] == episode_metrics_frame(env.model)


def test_value_reward_counts_what_market_jobs_earn() -> None:
    jobs = apply_market_rule(GENERATED[:150])
    env = HPCDispatchEnv(jobs, PLATFORM, episode_jobs=150, reward="value", backfill=True)
    _, rewards, _ = _play(env, first_job, start=0)
    assert env.model is not None
    frame = env.model.jobs_frame()
    assert rewards[-1] == pytest.approx(frame["value"].sum() / 150)
    assert rewards[-1] > 0
    slot = JOB_FEATURES.index("value_now")
    obs, _ = env.reset(options={"start": 0})
    assert 0 < obs[slot] <= 1


def test_job_metric_examples() -> None:
    job = Job(1, 100.0, 50.0, 60.0)
    assert job_metric(job, 100.0, "bsld") == 1.0
    assert job_metric(job, 250.0, "bsld") == 4.0
    assert job_metric(job, 250.0, "wait") == 150.0
    assert job_metric(Job(2, 0.0, 2.0, 2.0), 18.0, "bsld") == 2.0  # run below 10 s counts as 10 s
    assert job_metric(job, 250.0, "value") == 0.0


def test_from_config_builds_the_runs_workload(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.experiment.config import config_from_dict

    config = config_from_dict(
        {
            "platform": "nodes=8,cores=8",
            "seed": 4,
            "workload": {"generator": "lublin-feitelson", "jobs": 300, "load_factor": 1.3},
            "policy": {"scheduler": "easy", "allocator": "best-fit"},
        }
    )
    env = HPCDispatchEnv.from_config(config, episode_jobs=50, window=8)
    assert len(env.jobs) == 300 and env.options.allocator == "best-fit"
    assert env.platform.total_cores == 64
    obs, _ = env.reset(seed=1)
    assert obs.shape == env.observation_space.shape


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"episode_jobs": 0}, "episode_jobs"),
        ({"episode_jobs": 10_000}, "episode_jobs: 10000 jobs do not fit"),
        ({"window": 0}, "window"),
        ({"reward": "profit"}, "reward: got 'profit'; valid: bsld, wait, value"),
        ({"reward_timing": "end"}, "reward_timing: got 'end'; valid: step, episode"),
        ({"start_range": (0.5, 0.2)}, "start_range"),
        ({"start_range": "all"}, "start_range"),
        ({"allocator": "max-bid"}, "allocator: got 'max-bid'"),
        ({"allocator": "nope"}, "allocator: got 'nope'"),
        ({"backfill": "yes"}, "backfill"),
        ({"invalid_action": "ignore"}, "invalid_action: got 'ignore'; valid: wrap, raise"),
    ],
)
def test_bad_options_are_refused_by_name(options, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        HPCDispatchEnv(list(GENERATED), PLATFORM, **options)


ENV_JOBS = list(GENERATED[:40])
PRESET_TEXT = ", ".join(sorted(PRESETS))  # curie, eurora, ..., kth-sp2, nasa-ipsc


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"jobs": None}, "jobs: got None; valid: a sequence of Job records"),
        ({"jobs": 5}, "jobs: got 5; valid: a sequence of Job records"),
        ({"jobs": "jobs.swf"}, "jobs: got str 'jobs.swf'; valid: a sequence of Job records"),
        (
            {"jobs": [*ENV_JOBS[:3], 7]},
            "jobs[3]: got int 7; valid: a Job record (market_hpc.domain.job.Job)",
        ),
        (
            {"platform": None},
            (
                f"platform: got None; valid: a Platform, a preset ({PRESET_TEXT}), "
                "nodes=N,cores=C[,...] or FILE.toml"
            ),
        ),
        (
            {"platform": ("nodes=8", "cores=8")},
            "platform: got ('nodes=8', 'cores=8'); valid: a Platform",
        ),
        ({"exclusive": "no"}, "exclusive: got 'no'; valid: true or false"),
        ({"exclusive": 1}, "exclusive: got 1; valid: true or false"),
        ({"reward": ["bsld"]}, "reward: got ['bsld']; valid: bsld, wait, value"),
        ({"reward_timing": None}, "reward_timing: got None; valid: step, episode"),
        ({"invalid_action": None}, "invalid_action: got None; valid: wrap, raise"),
        (
            {"reward": "value"},
            (
                "reward: got 'value', but 40 of 40 jobs have no value curve (job 1 "
                "first), so they would earn 0 whatever is chosen; valid: bsld or wait, "
                "or market jobs (a market rule, apply_market_rule)"
            ),
        ),
    ],
)
def test_bad_arguments_are_config_errors_with_exact_messages(options, message) -> None:  # type: ignore[no-untyped-def]
    arguments = {"jobs": ENV_JOBS, "platform": PLATFORM, "episode_jobs": 10, "window": 4, **options}
    with pytest.raises(ConfigError) as caught:
        HPCDispatchEnv(**arguments)
    assert str(caught.value).startswith(message)
    if "platform" in options and options["platform"] is None:
        assert str(caught.value) == message


def test_value_reward_is_refused_when_some_jobs_lack_curves() -> None:
    jobs = [*apply_market_rule(ENV_JOBS[:30]), *ENV_JOBS[30:]]
    with pytest.raises(
        ConfigError, match=r"^reward: got 'value', but 10 of 40 jobs have no value curve"
    ):
        HPCDispatchEnv(jobs, PLATFORM, episode_jobs=10, window=4, reward="value")


def test_integral_floats_size_the_spaces_as_integers() -> None:
    env = HPCDispatchEnv(ENV_JOBS, PLATFORM, episode_jobs=10.0, window=4.0)  # type: ignore[arg-type]
    assert env.episode_jobs == 10 and env.options.window == 4
    assert env.action_space.n == 4 and env.observation_space.shape == (4 * len(JOB_FEATURES) + 11,)
    env.reset(seed=0)
    assert env.step(0)[4]["started"] >= 0


def test_bad_reset_and_step_arguments_are_config_errors() -> None:
    env = HPCDispatchEnv(ENV_JOBS, PLATFORM, episode_jobs=10, window=4)
    for seed in ("1", 1.5, -1, True):
        with pytest.raises(ConfigError) as caught:
            env.reset(seed=seed)  # type: ignore[arg-type]
        assert str(caught.value) == f"seed: got {seed!r}; valid: None or an integer >= 0"
    for options in ("start", {"begin": 0}):
        with pytest.raises(ConfigError) as caught:
            env.reset(options=options)  # type: ignore[arg-type]
        assert (
            str(caught.value)
            == f"options: got {options!r}; valid: None or a dict with the key 'start'"
        )
    env.reset(seed=0)
    for action in ("0", None, 1.0, True):
        with pytest.raises(ConfigError, match=r"^action: got .*; valid: an integer slot 0\.\."):
            env.step(action)
    assert env.step(np.array([0]))[4]["started"] >= 0  # a one-element integer array is a slot


def test_from_config_refuses_unknown_options_and_bad_configs() -> None:
    with pytest.raises(ConfigError) as caught:
        HPCDispatchEnv.from_config("scenarios/none.toml", windows=8)
    assert str(caught.value) == (
        "unknown HPCDispatchEnv option 'windows'; valid choices: allocator, backfill, "
        "episode_jobs, exclusive, invalid_action, observation, observation_params, reward, "
        "reward_params, reward_timing, start_range, window"
    )
    with pytest.raises(ConfigError) as caught:
        HPCDispatchEnv.from_config(5)
    assert str(caught.value) == "config: got 5; valid: a RunConfig or a scenario TOML path"


def test_misuse_is_refused() -> None:
    env = HPCDispatchEnv(
        list(GENERATED), PLATFORM, episode_jobs=20, window=4, invalid_action="raise"
    )
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    with pytest.raises(ConfigError, match="options\\['start'\\]"):
        env.reset(options={"start": 10_000})
    env.reset(options={"start": 0})
    offered = int(env.action_masks().sum())
    if offered < 4:
        with pytest.raises(ValueError, match="names no job"):
            env.step(3)
    wrapping = HPCDispatchEnv(list(GENERATED), PLATFORM, episode_jobs=20, window=4)
    wrapping.reset(options={"start": 0})
    if int(wrapping.action_masks().sum()) < 4:
        assert wrapping.step(3)[4]["invalid_action"]
