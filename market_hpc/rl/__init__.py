"""Learned dispatchers: a Gymnasium environment over the project's own ``HPCModel``,
the heuristics RL papers compare against, and trained models run as schedulers.

- :class:`~market_hpc.rl.env.HPCDispatchEnv` (needs ``gymnasium``, the ``rl`` or ``dev`` extra);
- :class:`~market_hpc.rl.bidding_env.NodeBiddingEnv`: node agents choosing their offers in the
  market auctions, a PettingZoo ``ParallelEnv`` (needs ``pettingzoo``, the ``rl`` or ``dev`` extra);
- :mod:`market_hpc.rl.dispatch`: one decision built job by job (numpy only), shared by the
  environment and the ``learned:PATH`` scheduler;
- :mod:`market_hpc.rl.heuristics`: WFP3, UNICEP and F1, with and without EASY backfilling;
- :mod:`market_hpc.rl.learned`: a saved MaskablePPO model as a scheduler (needs the ``rl`` extra);
- :mod:`market_hpc.rl.registry`: rewards and observations by name (``register_reward``,
  ``register_observation``, also importable from here).

Importing this package imports neither gymnasium, pettingzoo nor torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HPCDispatchEnv", "NodeBiddingEnv", "register_observation", "register_reward"]


def __getattr__(name: str) -> Any:
    if name == "HPCDispatchEnv":
        from market_hpc.rl.env import HPCDispatchEnv

        return HPCDispatchEnv
    if name == "NodeBiddingEnv":
        from market_hpc.rl.bidding_env import NodeBiddingEnv

        return NodeBiddingEnv
    if name in ("register_observation", "register_reward"):
        from market_hpc.rl import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'market_hpc.rl' has no attribute {name!r}")
