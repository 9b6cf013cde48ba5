"""``HPCDispatchEnv`` gives an agent exactly what it gave before its step was optimised:
every observation, mask, reward and start of three seeded episodes (cores only with EASY
backfilling; GPUs, whole nodes and value curves; a window wider than the queue), against
the recording in ``tests/data/rl_env_recorded.npz`` (``tests/rl_env_recording.py``)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="gymnasium is not installed (the dev or rl extra)")

from rl_env_recording import CASES, RECORDED, play


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_episode_gives_what_it_gave_before_bit_for_bit(name: str) -> None:
    recorded = np.load(RECORDED)
    played = play(name)
    for key, value in played.items():
        expected = recorded[f"{name}/{key}"]
        assert value.dtype == expected.dtype and value.shape == expected.shape, key
        assert value.tobytes() == expected.tobytes(), key  # bit for bit, the sign of 0 too
