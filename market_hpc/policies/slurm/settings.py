"""The ``slurm`` scheduler's settings: Slurm's defaults, a slurm.conf, ``[policy.params]``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

from market_hpc.algorithms.slurm.priority import Weights
from market_hpc.errors import ConfigError
from market_hpc.policies.slurm.conf import Partition, read_slurm_conf

DAY = 86400.0


@dataclass(frozen=True)
class SlurmSettings:
    """Slurm 22.05's defaults (slurm.conf(5)); each field is a ``[policy.params]`` key.

    Attributes:
        priority_type: ``basic`` (submit order) or ``multifactor``.
        scheduler_type: ``backfill`` or ``builtin`` (main scheduler only).
        weight_age, weight_fairshare, weight_job_size, weight_partition, weight_qos: The
            ``PriorityWeight*`` integers.
        max_age: ``PriorityMaxAge`` (s). decay_half_life: ``PriorityDecayHalfLife`` (s; 0: none).
        favor_small: ``PriorityFavorSmall``. calc_period: ``PriorityCalcPeriod`` (s).
        fs_dampening: ``FairShareDampeningFactor``.
        shares: Fair-share shares per user id (default 1 each: ``sacctmgr``'s ``Fairshare=1``).
        fairshare_account: Users are children of one account under the root (else of the root).
        account_share: That account's normalised share (0.5: beside the root user's own).
        charge_at_end: Charge a job's usage since the last decay pass when it ends (Slurm
            22.05, observed: no; only jobs running at a pass are charged).
        qos_priority: QOS name -> ``Priority`` (a job's QOS: ``payload["qos"]``, default
            ``normal``).
        bf_interval, bf_window, bf_resolution: seconds. bf_max_job_test, bf_max_job_start
            (0: no limit), bf_continue, default_queue_depth: ``SchedulerParameters``.
        preempt: ``PreemptType=preempt/partition_prio``. preempt_mode: ``suspend`` or ``requeue``.
        slurm_conf: The slurm.conf read (``None``: none).
    """

    priority_type: str = "basic"
    scheduler_type: str = "backfill"
    weight_age: int = 0
    weight_fairshare: int = 0
    weight_job_size: int = 0
    weight_partition: int = 0
    weight_qos: int = 0
    max_age: float = 7 * DAY
    decay_half_life: float = 7 * DAY
    favor_small: bool = False
    calc_period: float = 300.0
    fs_dampening: int = 1
    shares: dict[str, float] = field(default_factory=dict)
    fairshare_account: bool = True
    account_share: float = 0.5
    charge_at_end: bool = False
    qos_priority: dict[str, float] = field(default_factory=dict)
    bf_interval: float = 30.0
    bf_window: float = DAY
    bf_resolution: float = 60.0
    bf_max_job_test: int = 500
    bf_max_job_start: int = 0
    bf_continue: bool = False
    default_queue_depth: int = 100
    sched_interval: float = 60.0
    preempt: bool = False
    preempt_mode: str = "off"
    slurm_conf: str | None = None
    # read from the slurm.conf, never given as parameters
    partitions: tuple[Partition, ...] = field(default=(), metadata={"parameter": False})
    unmodelled: tuple[str, ...] = field(default=(), metadata={"parameter": False})

    @property
    def weights(self) -> Weights:
        """The ``PriorityWeight*`` integers."""
        return Weights(
            self.weight_age,
            self.weight_fairshare,
            self.weight_job_size,
            self.weight_partition,
            self.weight_qos,
        )

    @property
    def multifactor(self) -> bool:
        """Whether ``priority/multifactor`` orders the queue."""
        return self.priority_type == "multifactor"

    @property
    def backfill(self) -> bool:
        """Whether ``sched/backfill`` runs beside the main scheduler."""
        return self.scheduler_type == "backfill"


PARAMETERS = tuple(f.name for f in fields(SlurmSettings) if f.metadata.get("parameter", True))


def settings(slurm_conf: str | None = None, **params: Any) -> SlurmSettings:
    """Slurm's defaults, then ``slurm_conf``'s keys, then ``params``.

    >>> settings(weight_age=10).weights.age, settings().bf_window
    (10, 86400.0)

    Raises:
        ConfigError: an unreadable slurm.conf key, or an inconsistent setting.
    """
    chosen = SlurmSettings()
    if slurm_conf is not None:
        conf = read_slurm_conf(slurm_conf)
        chosen = replace(
            chosen,
            **conf.params,
            slurm_conf=slurm_conf,
            partitions=conf.partitions,
            unmodelled=conf.unmodelled,
        )
    chosen = replace(chosen, **params)
    if chosen.preempt and chosen.preempt_mode not in ("suspend", "requeue"):
        raise ConfigError(
            f"scheduler 'slurm': PreemptType=preempt/partition_prio needs PreemptMode "
            f"SUSPEND or REQUEUE, got {chosen.preempt_mode.upper()}"
            f"{f' ({slurm_conf})' if slurm_conf else ''}"
        )
    for name in (
        "max_age",
        "calc_period",
        "bf_interval",
        "bf_window",
        "bf_resolution",
        "sched_interval",
    ):
        if not getattr(chosen, name) > 0 or not math.isfinite(getattr(chosen, name)):
            raise ConfigError(
                f"scheduler 'slurm': {name} = {getattr(chosen, name)!r} is invalid; "
                "valid: a finite number of seconds > 0"
            )
    return chosen
