"""RLScheduler's kernel network as a MaskablePPO policy (needs the ``rl`` extra: torch).

One small network scores every job of the window from that job's features and the
platform's (the same weights for every slot, so the score of a job does not depend on
its slot, and what is learned on one slot holds on all); the scores are the action logits
(masked by MaskablePPO). The critic reads the whole observation. This is the design of
RLScheduler's policy network (Zhang et al., SC'20, "kernel-based" network), which the
paper found much easier to train than a plain MLP over the flattened window.

    MaskablePPO(KernelPolicy, env)   # env: HPCDispatchEnv (its observation layout)
"""

from __future__ import annotations

from typing import Any

from market_hpc.rl.dispatch import JOB_FEATURES, PLATFORM_FEATURES

_F, _G = len(JOB_FEATURES), len(PLATFORM_FEATURES)

try:  # the rl extra; without it this module imports (for the doctests) but offers nothing
    import torch
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from torch import nn
except ImportError as _missing:
    _MISSING: ImportError | None = _missing
else:
    _MISSING = None

    class JobScorer(nn.Module):  # type: ignore[misc]  # Any without the rl extra
        """``forward(obs) -> (scores per slot, critic latent)``, SB3's ``mlp_extractor`` shape."""

        def __init__(
            self, observation_size: int, hidden: tuple[int, ...] = (32, 16, 8), critic: int = 64
        ) -> None:
            super().__init__()
            window, rest = divmod(observation_size - _G, _F)
            if rest or window < 1:
                raise ValueError(
                    f"an observation of {observation_size} values is not an HPCDispatchEnv "
                    "observation"
                )
            self.window = window
            self.latent_dim_pi = window
            self.latent_dim_vf = critic
            layers: list[nn.Module] = []
            width = _F + _G
            for size in hidden:
                layers += [nn.Linear(width, size), nn.ReLU()]
                width = size
            layers.append(nn.Linear(width, 1))
            self.score = nn.Sequential(*layers)
            self.critic = nn.Sequential(
                nn.Linear(observation_size, critic), nn.ReLU(), nn.Linear(critic, critic), nn.ReLU()
            )

        def forward_actor(self, obs: torch.Tensor) -> torch.Tensor:
            batch = obs.shape[0]
            jobs = obs[:, : self.window * _F].reshape(batch, self.window, _F)
            platform = obs[:, self.window * _F :].unsqueeze(1).expand(batch, self.window, _G)
            scores: torch.Tensor = self.score(torch.cat((jobs, platform), dim=2)).squeeze(-1)
            return scores

        def forward_critic(self, obs: torch.Tensor) -> torch.Tensor:
            value: torch.Tensor = self.critic(obs)
            return value

        def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.forward_actor(obs), self.forward_critic(obs)

    class KernelPolicy(MaskableActorCriticPolicy):  # type: ignore[misc]  # Any without the rl extra
        """MaskablePPO's actor-critic with :class:`JobScorer`: the per-job scores are the logits."""

        def _build_mlp_extractor(self) -> None:
            self.mlp_extractor = JobScorer(int(self.features_dim))  # type: ignore[assignment]

        def _build(self, lr_schedule: Any) -> None:
            super()._build(lr_schedule)
            self.action_net = nn.Identity()  # the scores are the logits
            self.optimizer = self.optimizer_class(  # type: ignore[call-arg]  # as sb3's _build
                self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
            )


def __getattr__(name: str) -> Any:
    if _MISSING is not None and name in ("JobScorer", "KernelPolicy"):
        raise ImportError(
            f"market_hpc.rl.kernel.{name} needs the rl extra (torch, sb3-contrib): {_MISSING}"
        )
    raise AttributeError(f"module 'market_hpc.rl.kernel' has no attribute {name!r}")
