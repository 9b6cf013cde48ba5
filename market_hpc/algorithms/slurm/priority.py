"""Slurm's ``priority/multifactor`` factors and their weighted sum.

Every factor is in [0, 1]; the priority is the weighted sum, truncated to an integer and
at least 1 (``_get_priority_internal`` in ``priority_multifactor.c``: "Priority 0 is
reserved for held jobs"). Fair-share is the classic algorithm (``PriorityFlags=NO_FAIR_TREE``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NICE_FREE = 0.0


@dataclass(frozen=True)
class Weights:
    """The ``PriorityWeight*`` integers of slurm.conf (each 0 by default)."""

    age: int = 0
    fairshare: int = 0
    job_size: int = 0
    partition: int = 0
    qos: int = 0


def age_factor(age: float, max_age: float) -> float:
    """``min(age, max_age) / max_age`` (``set_priority_factors``: ``diff < max_age``).

    >>> age_factor(30.0, 120.0), age_factor(500.0, 120.0), age_factor(-5.0, 120.0)
    (0.25, 1.0, 0.0)
    """
    if age <= 0 or max_age <= 0:
        return 0.0 if age <= 0 else 1.0
    return age / max_age if age < max_age else 1.0


def job_size_factor(
    cpus: int, min_nodes: int, nodes: int, cluster_cpus: int, favor_small: bool
) -> float:
    """The job-size factor of ``set_priority_factors`` (without ``SMALL_RELATIVE_TO_TIME``).

    Favouring large jobs: ``(min_nodes / nodes + cpus / cluster_cpus) / 2``; favouring
    small ones (``PriorityFavorSmall=YES``): ``((nodes - min_nodes) / nodes +
    (cluster_cpus - cpus) / cluster_cpus) / 2``, the node term 0 when the job needs every
    node; clamped to [0, 1].

    >>> job_size_factor(8, 1, 1, 32, False)     # (1/1 + 8/32) / 2
    0.625
    >>> job_size_factor(8, 1, 1, 32, True)      # (0 + 24/32) / 2
    0.375
    >>> job_size_factor(16, 1, 4, 64, True)     # (3/4 + 48/64) / 2
    0.75
    """
    if favor_small:
        factor = (nodes - min_nodes) / nodes if nodes > min_nodes else 0.0
        if cpus:
            factor = (factor + (cluster_cpus - cpus) / cluster_cpus) / 2
    else:
        factor = min_nodes / nodes
        if cpus:
            factor = (factor + cpus / cluster_cpus) / 2
    return min(max(factor, 0.0), 1.0)


def fairshare_factor(usage_efctv: float, shares_norm: float, dampening: float = 1.0) -> float:
    """``2 ** (-(usage_efctv / shares_norm) / dampening)`` (``_set_assoc_fs_factor``); 0
    without shares.

    >>> fairshare_factor(0.0, 0.5), fairshare_factor(0.5, 0.5), fairshare_factor(1.0, 0.25)
    (1.0, 0.5, 0.0625)
    >>> fairshare_factor(0.3, 0.0)
    0.0
    """
    if shares_norm <= 0:
        return 0.0
    return float(2.0 ** (-(usage_efctv / shares_norm) / dampening))


def effective_usage(
    usage_norm: float, parent_efctv: float, shares: float, sibling_shares: float
) -> float:
    """Classic effective usage of an association under a parent that is not the root:
    ``usage_norm + (parent - usage_norm) * shares / sibling_shares`` (``_set_usage_efctv``).

    >>> effective_usage(0.2, 1.0, 1.0, 4.0)     # one of four users of the only account
    0.4
    """
    return usage_norm + (parent_efctv - usage_norm) * shares / sibling_shares


def decay_factor(half_life: float) -> float:
    """Per-second decay ``1 - 0.693 / half_life`` (``_decay_thread``; 1: no decay).

    >>> round(decay_factor(600.0), 6), decay_factor(0.0)
    (0.998845, 1.0)
    """
    return 1.0 - 0.693 / half_life if half_life > 0 else 1.0


def weighted_priority(
    weights: Weights, age: float, fairshare: float, job_size: float, partition: float, qos: float
) -> int:
    """The job priority: the weighted factors summed, truncated, at least 1
    (``_get_priority_internal``; site factor and nice 0, no TRES weights).

    >>> weighted_priority(Weights(age=1000, job_size=100), 0.5, 0.0, 0.625, 0.0, 0.0)
    562
    >>> weighted_priority(Weights(), 1.0, 1.0, 1.0, 1.0, 1.0)
    1
    """
    total = (
        weights.age * age
        + weights.fairshare * fairshare
        + weights.job_size * job_size
        + weights.partition * partition
        + weights.qos * qos
    )
    value = math.floor(total) if total >= 1 else 1
    return min(value, 0xFFFFFFFF)


class FairShareUsage:
    """Per-user decayed raw usage (CPU-seconds), updated at each priority calculation as
    Slurm's decay thread does (``_decay_thread``, ``_apply_new_usage``): the old usage
    decays by ``decay ** delta``; each job adds ``cpus * run_delta * decay ** run_delta``.

    Users are the children of one account under the root (``account=True``, as
    ``sacctmgr add user ... account=A`` leaves them; the account's normalised share is
    ``account_share``: 0.5 beside the root user's own association, as ``sshare`` shows a
    fresh setup) or of the root itself. A user's normalised share is ``account_share *
    shares / sum(shares)`` (``_set_norm_shares``); ``shares`` lists every association of
    the account, also those that never submit.

    >>> usage = FairShareUsage(half_life=0.0, shares={1: 1.0, 2: 1.0}, account=False)
    >>> usage.decay(10.0); usage.add(1, cpus=4, run_delta=10.0)
    >>> usage.factor(1), usage.factor(2)
    (0.25, 1.0)
    """

    def __init__(
        self,
        half_life: float,
        shares: dict[int, float],
        account: bool = True,
        dampening: float = 1.0,
        default_shares: float = 1.0,
        account_share: float = 1.0,
    ) -> None:
        self.per_second = decay_factor(half_life)
        self.shares = dict(shares)
        self.account = account
        self.account_share = account_share if account else 1.0
        self.dampening = dampening
        self.default_shares = default_shares
        self.raw: dict[int, float] = {}

    def decay(self, delta: float) -> None:
        """Decay every user's usage over ``delta`` seconds (once per calculation, before
        the ``add`` calls of that interval)."""
        if delta > 0 and self.per_second < 1.0:
            decay = max(self.per_second**delta, 2.2250738585072014e-308)  # DBL_MIN, as Slurm
            for user in self.raw:
                self.raw[user] *= decay

    def add(self, user: int, cpus: int, run_delta: float) -> None:
        """Charge ``cpus * run_delta * decay ** run_delta`` to ``user`` (``_apply_new_usage``)."""
        if run_delta <= 0:
            return
        self.shares.setdefault(user, self.default_shares)
        self.raw[user] = self.raw.get(user, 0.0) + cpus * run_delta * (self.per_second**run_delta)

    def factor(self, user: int) -> float:
        """The user's fair-share factor now."""
        shares = self.shares.get(user, self.default_shares)
        if user not in self.shares:
            self.shares[user] = shares
        total_shares = sum(self.shares.values())
        total_usage = sum(self.raw.values())
        usage_norm = self.raw.get(user, 0.0) / total_usage if total_usage > 0 else 0.0
        shares_norm = self.account_share * shares / total_shares if total_shares > 0 else 0.0
        efctv = (
            effective_usage(usage_norm, 1.0 if total_usage > 0 else 0.0, shares, total_shares)
            if self.account
            else usage_norm
        )
        return fairshare_factor(efctv, shares_norm, self.dampening)
