"""``rl.dispatch``: the dispatcher on a view without the model's optional members (its
fallbacks) gives the same observations as on the model's view."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="gymnasium is not installed (the dev or rl extra)")

from market_hpc.rl.env import HPCDispatchEnv
from market_hpc.workload.synthetic import lublin_feitelson

_VIEW = ("platform", "time", "queue", "running", "free", "free_total", "free_bb", "exclusive")


class _PlainView:
    """The model's view without its optional members (``queue_min_cores``, ``free_index``,
    ``running_version``, ...): only ``View``'s."""

    def __init__(self, view: object) -> None:
        self._view = view

    def __getattr__(self, name: str) -> object:
        if name in _VIEW or name in ("bids", "asks", "expected_end", "state", "running_on"):
            return getattr(self._view, name)
        raise AttributeError(name)


@pytest.mark.parametrize("backfill", [False, True])
def test_a_plain_view_gives_the_same_observations(backfill: bool) -> None:
    def play(plain: bool) -> list[bytes]:
        env = HPCDispatchEnv(
            lublin_feitelson(400, 64, seed=6, load_factor=1.8),
            "nodes=8,cores=8",
            episode_jobs=150,
            window=16,
            backfill=backfill,
        )
        if plain:
            begin = env.dispatcher.begin
            env.dispatcher.begin = lambda view: begin(_PlainView(view))  # type: ignore[method-assign]
        rng = np.random.default_rng(6)
        obs, _ = env.reset(seed=6)
        seen, done = [obs.tobytes()], False
        while not done:
            mask = env.action_masks()
            obs, reward, done, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
            seen += [mask.tobytes(), obs.tobytes(), np.float64(reward).tobytes()]
        assert type(env.dispatcher._view_type) is type
        assert (env.dispatcher._view_type is _PlainView) == plain
        return seen

    assert play(plain=True) == play(plain=False)
