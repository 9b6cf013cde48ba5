"""Frozen records: resources, platforms, jobs."""

from market_hpc.domain.job import Job, JobStatus
from market_hpc.domain.platform import NodeType, Platform
from market_hpc.domain.resources import RESOURCES, N_RESOURCES

__all__ = ["Job", "JobStatus", "NodeType", "Platform", "RESOURCES", "N_RESOURCES"]
