"""The GPU requests a Slurm trace recorded, given back to its jobs when it is replayed.

SWF has no GPU field. ``market-hpc trace convert`` (:mod:`market_hpc.workload.slurm_convert`)
therefore writes each job's GPUs (sacct ``AllocTRES``, else ``ReqTRES``: ``gres/gpu=N``, or
the typed ``gres/gpu:TYPE=N`` entries) to the side file ``NAME.slurm.csv`` beside
``NAME.swf`` (column ``gpus``, by SWF job id;
:func:`~market_hpc.workload.slurm_convert.side_file`) and their count to the SWF header
(``GPUJobs: N``). A run of an SWF trace reads that side file when it exists:

* **Shape.** A job of P processors and G GPUs asks for ``g = gcd(P, G)`` units of
  ``P/g`` cores and ``G/g`` GPUs: both totals stay exact, and a job spread evenly over
  its nodes (as Slurm places ``--gpus-per-node``) gets units no larger than one node's
  share. 8 CPUs and 2 GPUs become 2 units of 4 cores + 1 GPU (Curie's hybrid node
  layout); 10 CPUs and 4 GPUs 2 units of 5 cores + 2 GPUs. Memory is not requested, as
  for every SWF job (the trace's memory is not replayed). Run time, estimate, user and
  queue are unchanged.
* **What cannot be placed keeps its CPU request**, counted (``kept_cpu_too_large``) and
  warned about by the run commands: a request the platform cannot hold even when empty
  (every request, on a CPU-only platform). The job ran on the real machine, so rejecting
  it would change the workload more than keeping its processors does (the rule of
  :mod:`market_hpc.workload.accelerators`).
* **No synthetic GPU users.** On a trace that records GPU requests the all-families rule
  draws no GPU users (``all_families.platform_accelerators``), and a configured
  ``[workload.accelerators]`` rule that would make GPU jobs (``gpu_users``,
  ``gpu_partition``) is refused: the trace says who used GPUs.
* **A missing side file is an error** when the SWF header says the trace has GPU jobs,
  so copying the SWF without it cannot silently make a CPU-only workload.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import re
from collections.abc import Sequence
from typing import Any

from market_hpc.algorithms.allocation import units_fit
from market_hpc.domain.job import CORE_UNIT, Job
from market_hpc.domain.platform import Platform
from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.validation import MAX_INT
from market_hpc.workload.accelerators import AcceleratorRule
from market_hpc.workload.slurm_convert import side_file

GPU_JOBS_HEADER = "GPUJobs"
"""SWF header key under which ``trace convert`` writes how many jobs recorded GPUs."""
_GPU_JOBS_LINE = re.compile(rf"^;\s*{GPU_JOBS_HEADER}:\s*(\d+)", re.ASCII)


def header_gpu_jobs(header: Sequence[str]) -> int:
    """The ``GPUJobs: N`` of an SWF header (0 when absent).

    >>> header_gpu_jobs(["; Version: 2.2", "; GPUJobs: 9 (requests in x.slurm.csv)"])
    9
    """
    for line in header:
        match = _GPU_JOBS_LINE.match(line)
        if match:
            return int(match.group(1))
    return 0


def read_gpu_requests(trace: str | os.PathLike[str], header: Sequence[str] = ()) -> dict[int, int]:
    """SWF job id -> GPUs of every job whose side file records GPUs (empty: none recorded).

    Args:
        trace: The SWF file; its side file is :func:`side_file` of it.
        header: The trace's header lines, to refuse a missing side file that the header
            says holds GPU requests.

    Raises:
        ConfigError: The header records GPU jobs and the side file is missing, or the side
            file cannot be read.
        TraceFormatError: A side-file line whose ``swf_job_id`` or ``gpus`` is not a whole
            number (named by file, line and column), or a side file without those columns.
    """
    path = side_file(trace)
    if not path.is_file():
        recorded = header_gpu_jobs(header)
        if recorded:
            raise ConfigError(
                f"{os.fspath(trace)}: its header records {recorded:,} jobs with GPU requests "
                f"({GPU_JOBS_HEADER}), kept in the side file {path}, which is missing: copy it "
                "beside the trace or convert the sacct export again"
            )
        return {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return _requests(str(path), list(csv.reader(handle)))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def _requests(source: str, rows: list[list[str]]) -> dict[int, int]:
    """The GPU requests of a side file's rows (its header first)."""
    header = rows[0] if rows else []
    missing = [name for name in ("swf_job_id", "gpus") if name not in header]
    if missing:
        raise TraceFormatError(
            source,
            1,
            f"the side file lacks the column(s) {', '.join(missing)}; "
            f"got {', '.join(header) or 'nothing'}",
            field="header",
        )
    id_at, gpus_at = header.index("swf_job_id"), header.index("gpus")
    requests: dict[int, int] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        job_id, gpus = (
            _whole(source, number, row, at, name)
            for at, name in ((id_at, "swf_job_id"), (gpus_at, "gpus"))
        )
        if gpus:
            requests[job_id] = gpus
    return requests


def _whole(source: str, number: int, row: list[str], at: int, name: str) -> int:
    text = row[at].strip() if at < len(row) else ""
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_INT:
        raise TraceFormatError(
            source, number, f"{text!r} is not a whole number; valid: 0 to {MAX_INT:,}", field=name
        )
    return int(text)


def gpu_shape(cores: int, gpus: int) -> tuple[int, tuple[int, int, int, int]]:
    """Units and unit of a job of ``cores`` processors and ``gpus`` GPUs (module docstring).

    >>> gpu_shape(8, 2), gpu_shape(10, 4), gpu_shape(1, 2)
    ((2, (4, 1, 0, 0)), (2, (5, 2, 0, 0)), (1, (1, 2, 0, 0)))
    """
    units = math.gcd(cores, gpus)
    return units, (cores // units, gpus // units, 0, 0)


def apply_gpu_requests(
    jobs: Sequence[Job], requests: dict[int, int], platform: Platform, trace: str
) -> tuple[list[Job], dict[str, Any]]:
    """Give each job its recorded GPU request (module docstring), in the same order.

    Args:
        jobs: Processor jobs read from the SWF (``unit == (1, 0, 0, 0)``).
        requests: :func:`read_gpu_requests` of the trace.
        platform: Where the jobs will run (decides what can be placed at all).
        trace: The SWF file (its side file is named in the report).

    Returns:
        The jobs and a report: ``side_file``, ``recorded_gpu_jobs`` (jobs present that
        recorded GPUs), ``gpu_jobs`` (given their request) and ``kept_cpu_too_large``.

    >>> from market_hpc.domain.platform import load_platform
    >>> jobs = [Job(1, 0.0, 10.0, 20.0, units=8), Job(2, 0.0, 10.0, 20.0, units=8),
    ...         Job(3, 0.0, 10.0, 20.0, units=4)]
    >>> platform = load_platform("nodes=2,cores=8,gpus=2")
    >>> out, report = apply_gpu_requests(jobs, {1: 2, 2: 16}, platform, "t.swf")
    >>> [(job.units, job.unit) for job in out], report["gpu_jobs"], report["kept_cpu_too_large"]
    ([(2, (4, 1, 0, 0)), (8, (1, 0, 0, 0)), (4, (1, 0, 0, 0))], 1, 1)
    """
    room: dict[tuple[int, int, int, int], int] = {}
    counts = {"recorded_gpu_jobs": 0, "gpu_jobs": 0, "kept_cpu_too_large": 0}
    out: list[Job] = []
    for job in jobs:
        gpus = requests.get(job.job_id, 0)
        if not gpus or job.unit != CORE_UNIT:
            out.append(job)
            continue
        counts["recorded_gpu_jobs"] += 1
        units, unit = gpu_shape(job.cores, gpus)
        fits = room.get(unit)
        if fits is None:
            fits = room[unit] = int(units_fit(platform.capacity, unit).sum())
        if units > fits:
            counts["kept_cpu_too_large"] += 1
            out.append(job)
            continue
        counts["gpu_jobs"] += 1
        out.append(dataclasses.replace(job, units=units, unit=unit, profile=None))
    return out, {"side_file": str(side_file(trace)), **counts}


def check_accelerator_rule(rule: AcceleratorRule, requests: dict[int, int], trace: str) -> None:
    """Refuse a rule that would make synthetic GPU jobs on a trace that records GPU requests.

    >>> rule = AcceleratorRule(gpu_users=0.2)
    >>> check_accelerator_rule(rule, {7: 1}, "c.swf")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: workload.accelerators: c.swf records the GPU requests of 1 jobs
    (c.slurm.csv); gpu_users / gpu_partition would add synthetic GPU jobs beside them: leave them
    unset (mic_users and mic_partition still apply)
    """
    if requests and (rule.gpu_users > 0 or rule.gpu_partition is not None):
        raise ConfigError(
            f"workload.accelerators: {trace} records the GPU requests of {len(requests):,} jobs "
            f"({side_file(trace).name}); gpu_users / gpu_partition would add synthetic GPU jobs "
            "beside them: leave them unset (mic_users and mic_partition still apply)"
        )
