"""Workloads: SWF traces, trace transformations, synthetic generation and summaries."""

from market_hpc.workload.info import format_trace_info, trace_info
from market_hpc.workload.swf import TraceReport, Workload, read_swf, write_swf
from market_hpc.workload.synthetic import lublin_feitelson
from market_hpc.workload.transform import first_n, scale_load, time_slice

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
