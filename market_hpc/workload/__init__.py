"""Workloads: SWF traces, trace transformations, synthetic generation and summaries."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from market_hpc.workload.swf import TraceReport, Workload, read_swf, write_swf
from market_hpc.workload.transform import first_n, scale_load, time_slice

if TYPE_CHECKING:
    from market_hpc.workload.info import format_trace_info, trace_info
    from market_hpc.workload.synthetic import lublin_feitelson

# Loaded on first use: a replay needs neither the trace summaries nor the generator.
_LAZY = {"format_trace_info": "info", "trace_info": "info", "lublin_feitelson": "synthetic"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"market_hpc.workload.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TraceReport",
    "Workload",
    "first_n",
    "format_trace_info",
    "lublin_feitelson",
    "read_swf",
    "scale_load",
    "time_slice",
    "trace_info",
    "write_swf",
]
