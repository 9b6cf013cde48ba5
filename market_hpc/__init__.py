"""market_hpc: agent-based simulation of HPC dispatching under overload.

The public API, imported on first use (``import market_hpc`` loads neither Mesa, numpy
nor pandas, so ``market-hpc --help`` starts at once)::

    from market_hpc import HPCModel, lublin_feitelson

    model = HPCModel(lublin_feitelson(n_jobs=200, max_procs=64, seed=1),
                     platform="nodes=64,cores=1", scheduler="easy", seed=1)
    model.run_model()
    model.steps, model.datacollector.get_model_vars_dataframe()

See docs/python-api.md (a tour) and docs/extending.md (your own policies).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from market_hpc.errors import (
    ConfigError,
    InvalidNumberError,
    MarketHpcError,
    PluginError,
    PolicyError,
    TraceFormatError,
    UnknownNameError,
)

if TYPE_CHECKING:
    from market_hpc.algorithms.market.bidding import Bidder
    from market_hpc.core.model import HPCModel
    from market_hpc.domain.job import Job, JobStatus
    from market_hpc.domain.platform import NodeType, Platform, load_platform
    from market_hpc.experiment.config import RunConfig, config_from_dict, load_scenario
    from market_hpc.experiment.run import Result, simulate

    # Packed, not one name a line: market_hpc.policies re-exports the same names that way.
    # isort: off
    from market_hpc.policies.base import (
        NOTHING,
        Allocation,
        Allocator,
        Decision,
        Drop,
        Hold,
        JobState,
    )
    from market_hpc.policies.base import Policy, RunningJob, Start, View
    from market_hpc.policies.registry import allocator_names, bidder_names, make_bidder, make_policy
    from market_hpc.policies.registry import register_allocator, register_bidder, register_scheduler
    from market_hpc.policies.registry import scheduler_names

    # isort: on
    from market_hpc.policies.scratch import PassScratch
    from market_hpc.workload.applications import library_job_set
    from market_hpc.workload.eurora import eurora_like
    from market_hpc.workload.kit import kit_like
    from market_hpc.workload.swf import Workload, read_swf, write_swf
    from market_hpc.workload.swf_stream import stream_swf
    from market_hpc.workload.synthetic import lublin_feitelson
    from market_hpc.workload.taskgraph_jobs import demo_job_set, read_job_set, write_job_set
    from market_hpc.workload.transform import first_n, scale_load, time_slice

__version__ = "0.1.0"

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    "HPCModel": "market_hpc.core.model",
    "Job": "market_hpc.domain.job",
    "JobStatus": "market_hpc.domain.job",
    "NodeType": "market_hpc.domain.platform",
    "Platform": "market_hpc.domain.platform",
    "load_platform": "market_hpc.domain.platform",
    # workloads: traces and generators
    "Workload": "market_hpc.workload.swf",
    "read_swf": "market_hpc.workload.swf",
    "write_swf": "market_hpc.workload.swf",
    "stream_swf": "market_hpc.workload.swf_stream",
    "lublin_feitelson": "market_hpc.workload.synthetic",
    "demo_job_set": "market_hpc.workload.taskgraph_jobs",
    "read_job_set": "market_hpc.workload.taskgraph_jobs",
    "write_job_set": "market_hpc.workload.taskgraph_jobs",
    "library_job_set": "market_hpc.workload.applications",
    "kit_like": "market_hpc.workload.kit",
    "eurora_like": "market_hpc.workload.eurora",
    "first_n": "market_hpc.workload.transform",
    "scale_load": "market_hpc.workload.transform",
    "time_slice": "market_hpc.workload.transform",
    # scenarios and runs
    "RunConfig": "market_hpc.experiment.config",
    "config_from_dict": "market_hpc.experiment.config",
    "load_scenario": "market_hpc.experiment.config",
    "Result": "market_hpc.experiment.run",
    "simulate": "market_hpc.experiment.run",
    # the decision protocol
    "NOTHING": "market_hpc.policies.base",
    "Allocation": "market_hpc.policies.base",
    "Allocator": "market_hpc.policies.base",
    "Decision": "market_hpc.policies.base",
    "Drop": "market_hpc.policies.base",
    "Hold": "market_hpc.policies.base",
    "JobState": "market_hpc.policies.base",
    "Policy": "market_hpc.policies.base",
    "RunningJob": "market_hpc.policies.base",
    "Start": "market_hpc.policies.base",
    "View": "market_hpc.policies.base",
    "Bidder": "market_hpc.algorithms.market.bidding",
    "PassScratch": "market_hpc.policies.scratch",
    # the registry
    "register_scheduler": "market_hpc.policies.registry",
    "register_allocator": "market_hpc.policies.registry",
    "register_bidder": "market_hpc.policies.registry",
    "make_policy": "market_hpc.policies.registry",
    "make_bidder": "market_hpc.policies.registry",
    "scheduler_names": "market_hpc.policies.registry",
    "allocator_names": "market_hpc.policies.registry",
    "bidder_names": "market_hpc.policies.registry",
}

__all__ = [
    "NOTHING",
    "Allocation",
    "Allocator",
    "Bidder",
    "ConfigError",
    "Decision",
    "Drop",
    "HPCModel",
    "Hold",
    "InvalidNumberError",
    "Job",
    "JobState",
    "JobStatus",
    "MarketHpcError",
    "NodeType",
    "PassScratch",
    "Platform",
    "PluginError",
    "Policy",
    "PolicyError",
    "Result",
    "RunConfig",
    "RunningJob",
    "Start",
    "TraceFormatError",
    "UnknownNameError",
    "View",
    "Workload",
    "__version__",
    "allocator_names",
    "bidder_names",
    "config_from_dict",
    "demo_job_set",
    "eurora_like",
    "first_n",
    "kit_like",
    "library_job_set",
    "load_platform",
    "load_scenario",
    "lublin_feitelson",
    "make_bidder",
    "make_policy",
    "read_job_set",
    "read_swf",
    "register_allocator",
    "register_bidder",
    "register_scheduler",
    "scale_load",
    "scheduler_names",
    "simulate",
    "stream_swf",
    "time_slice",
    "write_job_set",
    "write_swf",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'market_hpc' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
