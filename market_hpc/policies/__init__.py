"""Dispatching policies: the decision protocol, the registry, the built-in policies."""

from market_hpc.policies.base import (
    NOTHING,
    Allocation,
    Allocator,
    Decision,
    Drop,
    Hold,
    JobState,
    Policy,
    RunningJob,
    Start,
    View,
)
from market_hpc.policies.registry import (
    allocator_names,
    allocators_for,
    bidder_names,
    make_allocator,
    make_bidder,
    make_policy,
    register_allocator,
    register_bidder,
    register_scheduler,
    scheduler_entry,
    scheduler_names,
)

__all__ = [
    "NOTHING", "Allocation", "Allocator", "Decision", "Drop", "Hold", "JobState", "Policy",
    "RunningJob", "Start", "View", "allocator_names", "allocators_for", "bidder_names", "make_allocator",
    "make_bidder", "make_policy", "register_allocator", "register_bidder", "register_scheduler",
    "scheduler_entry", "scheduler_names",
]
