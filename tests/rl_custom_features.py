"""A custom reward and observation for tests/rl/test_registry.py, registered on import (as a
researcher's module or a ``market_hpc.rl`` plugin registers its own)."""

from __future__ import annotations

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.rl.dispatch import InstantDispatcher
from market_hpc.rl.registry import register_observation, register_reward


@register_reward("test-wait-in", negate=True)
def wait_in(job: Job, start: float, scale: float = 60.0) -> float:
    """The job's wait in units of ``scale`` seconds (a cost)."""
    return (start - job.submit) / scale


@register_observation("test-waits")
class Waits:
    """Each slot's wait as ``w / (w + scale)``, then the free share of the cores."""

    low, high = 0.0, 1.0

    def __init__(self, window: int, scale: float = 100.0) -> None:
        self.size = window + 1
        self.scale = scale

    def __call__(self, dispatcher: InstantDispatcher) -> np.ndarray:
        view = dispatcher.view
        assert view is not None
        obs = np.zeros(self.size, dtype=np.float32)
        for slot, job in enumerate(dispatcher.window()):
            waited = view.time - job.submit
            obs[slot] = waited / (waited + self.scale)
        obs[-1] = dispatcher.free[0] / view.platform.total[0]
        return obs
