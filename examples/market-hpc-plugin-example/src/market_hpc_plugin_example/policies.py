"""The plugin's policies, registered when market_hpc loads the entry point."""

from __future__ import annotations

import numpy as np

from market_hpc import (
    Allocator,
    Decision,
    Job,
    PassScratch,
    Start,
    View,
    register_bidder,
    register_scheduler,
)


@register_scheduler(
    "saf",
    "smallest estimated area (estimate x cores) first; no reservation",
    allocators=("first-fit", "best-fit"),
)
class SmallestAreaFirst:
    """Start waiting jobs in order of estimated area, skipping those that do not fit."""

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self.name = f"saf+{allocator.name}"

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        def area(job: Job) -> tuple[float, float, int]:
            return (job.estimate * job.cores, job.submit, job.job_id)

        starts = []
        free_bb = view.free_bb
        with PassScratch(view) as scratch:  # what this decision's earlier starts leave free
            for job in sorted(view.queue, key=area):
                if job.bb > free_bb:
                    continue
                allocation = scratch.allocate(self.allocator, job)
                if allocation is not None:
                    scratch.take(job, allocation)
                    starts.append(Start(job.job_id, allocation))
                    free_bb -= job.bb
        return Decision(tuple(starts))


@register_bidder("fullest-node", "bid more the fewer free cores a node has (packing)")
class FullestNodeBidder:
    """Bid ``1 / free cores``: the auction picks the fullest node that still has room."""

    name = "fullest-node"

    def bids(self, free: np.ndarray, capacity: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """One bid per row of ``free``: the inverse of its free cores (0: abstain)."""
        cores = free[:, 0].astype(float)
        return np.divide(1.0, cores, out=np.zeros_like(cores), where=cores > 0)
