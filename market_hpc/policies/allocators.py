"""Allocators registered by name: first-fit and best-fit (core-level or node-exclusive)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from market_hpc.algorithms.allocation import best_fit, exclusive_fit, first_fit, units_fit
from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.domain.job import Job
from market_hpc.parameters import Param
from market_hpc.policies.base import Allocation, NodeRuns, View
from market_hpc.policies.registry import register_allocator

SPANS_NODES = "cores, gpus, mics, mem per unit, bb checked; spans nodes"
"""What an allocator placing a job over several nodes places (``market-hpc policies``)."""


def job_fits(job: Job, free: np.ndarray, view: View) -> np.ndarray:
    """Units of ``job`` each node can take, honouring node-exclusive mode."""
    if view.exclusive:
        return exclusive_fit(free, view.platform.capacity, job.unit)
    return units_fit(free, job.unit)


@register_allocator
class FirstFit:
    """Fill nodes in index order."""

    name = "first-fit"
    summary = "lowest-index nodes first"
    places = SPANS_NODES
    parameters: ClassVar[Mapping[str, Param]] = {}

    def allocate(self, job: Job, free: np.ndarray, view: View) -> Allocation | None:
        """Place ``job`` on the lowest-index nodes that have room."""
        if job.bb > view.free_bb:
            return None
        return first_fit(job_fits(job, free, view), job.units)

    def allocate_indexed(self, job: Job, index: FreeCoreIndex, view: View) -> NodeRuns | None:
        """The same placement for a plain core job, from the free-core index (see
        ``policies.scratch``): under node-exclusive allocation only idle nodes have free
        cores in the index, so this holds in both modes."""
        if job.bb > view.free_bb:
            return None
        return index.first_fit(job.units)


@register_allocator
class BestFit:
    """Fill the tightest nodes first."""

    name = "best-fit"
    summary = "nodes with the fewest free cores first"
    places = SPANS_NODES
    parameters: ClassVar[Mapping[str, Param]] = {}

    def allocate(self, job: Job, free: np.ndarray, view: View) -> Allocation | None:
        """Place ``job`` on the nodes with the fewest free cores that have room."""
        if job.bb > view.free_bb:
            return None
        return best_fit(job_fits(job, free, view), free[:, 0], job.units)

    def allocate_indexed(self, job: Job, index: FreeCoreIndex, view: View) -> NodeRuns | None:
        """The same placement for a plain core job, from the free-core index."""
        if job.bb > view.free_bb:
            return None
        return index.best_fit(job.units)


@register_allocator
class MaxBid:
    """Worst-fit on one node: the node with the most free cores, ties by lowest index."""

    name = "max-bid"
    summary = "the node bidding the most free cores (market auction, Singh et al.; single node)"
    places = "cores, gpus, mics, mem per unit, bb checked; one node"
    market_only = True
    parameters: ClassVar[Mapping[str, Param]] = {}

    def allocate(self, job: Job, free: np.ndarray, view: View) -> Allocation | None:
        """Place all of ``job``'s units on the node with the most free cores, if they fit."""
        if job.bb > view.free_bb:
            return None
        fits = job_fits(job, free, view)
        node = int(free[:, 0].argmax())
        return ((node, job.units),) if fits[node] >= job.units else None
