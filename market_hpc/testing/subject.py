"""The policy a conformance check runs: a registered name or a factory, made fresh per run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from market_hpc.policies.base import PolicyHooks
from market_hpc.policies.capabilities import UNDECLARED, UNDECLARED_MARKET, Capabilities
from market_hpc.testing.workloads import Workload, workloads_for

if TYPE_CHECKING:
    from market_hpc.core.model import HPCModel
    from market_hpc.policies.base import Policy

MARKET_HOLD_PENALTY = 0.2
"""The holding penalty market policies decide and are charged with in the checks."""


@dataclass(frozen=True)
class PolicyUnderTest:
    """A scheduler (registered name or factory) composed with an allocator, as the checks
    run it (build one with ``policy_under_test``).

    Attributes:
        label: ``scheduler+allocator``, as failure messages and test ids name it.
        scheduler: The registered scheduler name, or ``None`` for a factory.
        allocator: The allocator name.
        factory: ``factory(allocator, **params) -> Policy`` when not registered.
        params: Scheduler parameters.
        capabilities: What it handles (chooses the workloads).
        market: Whether it is a market policy (valued moldable jobs, a holding penalty,
            the market checks).
    """

    label: str
    scheduler: str | None
    allocator: str
    factory: Callable[..., Policy] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    capabilities: Capabilities = UNDECLARED
    market: bool = False

    def __str__(self) -> str:
        return self.label

    @property
    def hold_penalty(self) -> float:
        """The holding penalty its runs charge."""
        return MARKET_HOLD_PENALTY if self.market else 0.0

    def workloads(self) -> list[Workload]:
        """The built-in workloads it runs on (``testing.workloads``)."""
        return workloads_for(self.capabilities, self.market or self.capabilities.molds)

    def make(self) -> Policy:
        """A new instance (each run and each probe gets its own)."""
        from market_hpc.policies.registry import make_allocator, make_policy

        params = {**self.params, **({"penalty": self.hold_penalty} if self.market else {})}
        if self.factory is None:
            assert self.scheduler is not None
            return make_policy(self.scheduler, self.allocator, scheduler_params=params or None)
        made = self.factory(make_allocator(self.allocator), **self.params)
        return made

    def model(self, workload: Workload, *, exclusive: bool = False, **options: Any) -> HPCModel:
        """A model of ``workload`` run by a new instance (by name when registered without
        parameters, so the composition check runs too)."""
        from market_hpc.core.model import HPCModel

        common: dict[str, Any] = {"exclusive": exclusive, "hold_penalty": self.hold_penalty}
        if self.scheduler is not None and not self.params:
            return HPCModel(
                workload.jobs,
                platform=workload.platform,
                scheduler=self.scheduler,
                allocator=self.allocator,
                **common,
                **options,
            )
        policy = self.make()
        decides_with = PolicyHooks(policy).penalty  # None: it decides without one
        if decides_with is not None:
            common["hold_penalty"] = decides_with
        return HPCModel(
            workload.jobs, platform=workload.platform, policy=policy, **common, **options
        )


PolicySpec = Any
"""What ``policy_under_test`` takes: a name, a ``(scheduler, allocator)`` pair, a factory
or class, or a ``PolicyUnderTest``."""


def policy_under_test(
    scheduler: PolicySpec,
    allocator: str | None = None,
    *,
    params: Mapping[str, Any] | None = None,
    handles: Capabilities | None = None,
    market: bool | None = None,
) -> PolicyUnderTest:
    """Resolve what to check into a ``PolicyUnderTest``.

    Args:
        scheduler: A registered scheduler name, a ``(scheduler, allocator)`` pair, a
            factory or class called as ``factory(allocator, **params)``, or a
            ``PolicyUnderTest`` (returned as it is).
        allocator: The allocator name (default: the scheduler's default allocator; for a
            factory ``first-fit``, or ``max-bid`` for a market one).
        params: Scheduler parameters.
        handles: A factory's capabilities (default: a registered scheduler's declared
            ones; for a factory, what the built-ins of its kind handle).
        market: Whether a factory is a market policy (default: a registered scheduler's
            registration, else whether ``handles`` needs value curves).

    Raises:
        UnknownNameError: an unknown scheduler or allocator name.
    """
    from market_hpc.policies.registry import make_allocator, scheduler_entry

    if isinstance(scheduler, PolicyUnderTest):
        return scheduler
    if isinstance(scheduler, tuple):
        scheduler, allocator = scheduler
    if isinstance(scheduler, str):
        entry = scheduler_entry(scheduler)
        allocator = (allocator or entry.default_allocator).lower()
        return PolicyUnderTest(
            f"{entry.name}+{allocator}",
            entry.name,
            allocator,
            params=dict(params or {}),
            capabilities=handles or entry.capabilities,
            market=entry.market if market is None else market,
        )
    is_market = bool(handles and handles.value_curves) if market is None else market
    allocator = (allocator or ("max-bid" if is_market else "first-fit")).lower()
    make_allocator(allocator)  # an unknown name fails now, listing the valid ones
    name = getattr(scheduler, "__name__", type(scheduler).__name__)
    return PolicyUnderTest(
        f"{name}+{allocator}",
        None,
        allocator,
        factory=scheduler,
        params=dict(params or {}),
        capabilities=handles or (UNDECLARED_MARKET if is_market else UNDECLARED),
        market=is_market,
    )
