"""``rl.dispatch`` fast paths against their references: the running jobs' releases per
horizon (bisection over ends and prefix sums, kept while ``running_version`` holds)
against the walk ``cores_released_by``, and the episode metrics read from the result
columns against the pandas frame, at every step of seeded episodes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="gymnasium is not installed (the dev or rl extra)")

from rl_env_recording import CASES

from market_hpc.rl.dispatch import InstantDispatcher, cores_released_by
from market_hpc.rl.env import HPCDispatchEnv, episode_metrics, episode_metrics_frame
from market_hpc.workload.synthetic import lublin_feitelson


class _PlainView:
    """The model's view without its optional members (``running_version`` among them)."""

    def __init__(self, view: object) -> None:
        self._view = view

    def __getattr__(self, name: str) -> object:
        if name in ("platform", "time", "queue", "running", "free", "free_total", "free_bb"):
            return getattr(self._view, name)
        if name in ("exclusive", "bids", "asks", "expected_end", "state", "running_on"):
            return getattr(self._view, name)
        raise AttributeError(name)


def _episodes():  # type: ignore[no-untyped-def]
    yield (
        "backfill",
        HPCDispatchEnv(
            lublin_feitelson(500, 64, seed=3, load_factor=1.7),
            "nodes=8,cores=8",
            episode_jobs=200,
            window=16,
            backfill=True,
        ),
    )
    for name in sorted(CASES):
        yield name, CASES[name]()[0]


@pytest.mark.parametrize("plain", [False, True], ids=["model-view", "plain-view"])
def test_releases_by_bisection_are_the_walks_at_every_step(plain: bool) -> None:
    compared = 0
    for _, env in _episodes():
        if plain:  # every instant reads the running jobs again
            dispatcher = env.dispatcher
            begin = dispatcher.begin
            dispatcher.begin = lambda view, begin=begin: begin(_PlainView(view))  # type: ignore[method-assign]
        rng = np.random.default_rng(5)
        env.reset(seed=5)
        done = False
        while not done:
            dispatcher = env.dispatcher
            view = dispatcher.view
            assert view is not None
            assert dispatcher._released_by(view) == cores_released_by(view.running, view.time)
            compared += 1
            _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    assert compared > 300


def test_a_view_without_running_version_gives_the_same_observations() -> None:
    def play(plain: bool) -> list[bytes]:
        env = HPCDispatchEnv(
            lublin_feitelson(400, 64, seed=6, load_factor=1.8), "nodes=8,cores=8", episode_jobs=150
        )
        if plain:
            dispatcher: InstantDispatcher = env.dispatcher
            begin = dispatcher.begin
            dispatcher.begin = lambda view: begin(_PlainView(view))  # type: ignore[method-assign]
        rng = np.random.default_rng(6)
        obs, _ = env.reset(seed=6)
        seen, done = [obs.tobytes()], False
        while not done:
            obs, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            seen.append(obs.tobytes())
        return seen

    assert play(plain=True) == play(plain=False)


@pytest.mark.parametrize("name", ["backfill", *sorted(CASES)])
def test_episode_metrics_are_the_frames_bit_for_bit(name: str) -> None:
    env = dict(_episodes())[name]
    rng = np.random.default_rng(7)
    env.reset(seed=7)
    done, steps = False, 0
    while not done:
        _, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        steps += 1
        if steps % 11 == 0 or done:  # mid-episode too: jobs still running or waiting
            assert env.model is not None
            fast, frame = episode_metrics(env.model), episode_metrics_frame(env.model)
            assert fast.keys() == frame.keys()
            for key, value in frame.items():
                assert np.float64(fast[key]).tobytes() == np.float64(value).tobytes(), key
    assert info["episode_metrics"] == episode_metrics_frame(env.model)  # type: ignore[arg-type]
