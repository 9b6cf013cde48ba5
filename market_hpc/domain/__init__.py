"""Frozen records: resources, platforms, jobs."""

from market_hpc.domain.job import Job, JobStatus
from market_hpc.domain.platform import NodeType, Platform
from market_hpc.domain.resources import N_RESOURCES, RESOURCES

__all__ = ["N_RESOURCES", "RESOURCES", "Job", "JobStatus", "NodeType", "Platform"]
