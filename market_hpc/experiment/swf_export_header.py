"""What a schedule export keeps from its input trace, and the exported SWF's header.

The simulator's jobs carry no SWF status (field 11) or partition (field 16): a
``Job`` holds what scheduling needs, and ``jobs.csv`` its simulated outcome. The export
carries them minimally by re-reading the input trace named in the run's
``config.json`` (``workload.trace``) and joining on the job id (replays keep the trace's
job ids). A run of a synthetic workload, or whose trace has moved, has none; the notes
say so.

The header follows the Parallel Workloads Archive's SWF 2.2 header comments
(``Version``, ``Computer``, ``Installation``, ``Conversion``, ``MaxJobs``,
``MaxRecords`` (job lines: a held job's parts count), ``Preemption`` (``Double`` when held
jobs are written as a summary and parts), ``UnixStartTime``, ``TimeZoneString``, ``StartTime``,
``EndTime``, ``MaxNodes``, ``MaxProcs``, ``AllowOveruse``, ``MaxQueues``, ``Queues``,
``MaxPartitions``, ``Partitions``, ``Note``), taking the time origin and the
partition/queue names from the input trace's header where it has them.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd

_STATUS, _PARTITION = 10, 15  # 0-based SWF fields 11 and 16
_CARRIED = ("UnixStartTime", "TimeZoneString", "Queues", "Partitions", "MaxRuntime", "MaxMemory")


@dataclass(frozen=True)
class OriginalTrace:
    """What the input trace says that the simulation does not keep.

    Attributes:
        path: The trace read.
        header: Its ``Key: value`` header comments.
        status: SWF status (field 11) by job id, where it is not ``-1``.
        partition: Partition (field 16) by job id, where it is not ``-1``.
    """

    path: str
    header: dict[str, str] = field(default_factory=dict)
    status: dict[int, int] = field(default_factory=dict)
    partition: dict[int, int] = field(default_factory=dict)


def read_original(trace: str | None) -> OriginalTrace | None:
    """Fields 11 and 16 by job id and the header comments of an SWF trace; None when
    ``trace`` is None, missing or not SWF (e.g. a task-graph job set)."""
    if not trace or not Path(trace).is_file():
        return None
    try:
        frame = pd.read_csv(
            trace,
            sep=r"\s+",
            comment=";",
            header=None,
            usecols=[0, _STATUS, _PARTITION],
            dtype=float,
            engine="c",
            compression="infer",
        )
        opener = gzip.open if str(trace).endswith(".gz") else open
        with opener(trace, "rt", encoding="latin-1") as handle:
            lines = [line for line in handle if line.startswith(";")]
    except (ValueError, OSError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    header = {}
    for line in lines:
        key, sep, value = line.lstrip("; \t").partition(":")
        if sep and re.fullmatch(r"[A-Za-z]+", key.strip()) and key.strip() not in header:
            header[key.strip()] = value.strip()
    ids = frame[0].astype(int).tolist()
    status = {
        job: int(value)
        for job, value in zip(ids, frame[_STATUS].tolist(), strict=True)
        if value != -1
    }
    partition = {
        job: int(value)
        for job, value in zip(ids, frame[_PARTITION].tolist(), strict=True)
        if value != -1
    }
    return OriginalTrace(str(trace), header, status, partition)


def _date(seconds: float, zone: str) -> str | None:
    """``date``-style text of a Unix time in ``zone`` (SWF 2.2 StartTime/EndTime).

    >>> _date(1709539561, "UTC")
    'Mon Mar  4 08:06:01 UTC 2024'
    """
    try:
        moment = datetime.fromtimestamp(seconds, ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError, OverflowError):
        return None
    return moment.strftime("%a %b %e %H:%M:%S %Z %Y")


def swf_header(
    *,
    name: str,
    policy: str,
    platform: str,
    directory: str,
    n_jobs: int,
    n_records: int,
    n_nodes: int,
    n_procs: int,
    last_end: float,
    queues: int,
    original: OriginalTrace | None,
    preemption: str,
    notes: list[str],
) -> list[str]:
    """The header comments of an exported schedule (module docstring); ``notes`` are the
    things SWF cannot express, written as ``Note:`` lines. ``n_records`` counts the job
    lines (summaries and parts of held jobs), ``preemption`` is ``No``, ``Yes`` or
    ``Double`` (:mod:`~market_hpc.experiment.export_segments`)."""
    carried = original.header if original else {}
    lines = [
        "Version: 2.2",
        f"Computer: simulated by market_hpc ({name})",
        f"Installation: {policy} on platform {platform}",
        f"Conversion: market-hpc export of the run folder {directory}",
        f"MaxJobs: {n_jobs}",
        f"MaxRecords: {n_records}",
        f"Preemption: {preemption}",
    ]
    start = carried.get("UnixStartTime")
    zone = carried.get("TimeZoneString")
    if start is not None and re.fullmatch(r"-?\d+(\.\d+)?", start):
        lines.append(f"UnixStartTime: {start}")
        if zone is None:
            zone = "UTC"
            notes.append("the input trace names no time zone; TimeZoneString UTC is assumed")
        lines.append(f"TimeZoneString: {zone}")
        for key, seconds in (("StartTime", float(start)), ("EndTime", float(start) + last_end)):
            text = _date(seconds, zone)
            if text:
                lines.append(f"{key}: {text}")
    else:
        notes.append(
            "no UnixStartTime: the input "
            + ("trace has none" if original else "is not an SWF trace")
            + "; times are seconds after the first submit"
        )
    lines += [f"MaxNodes: {n_nodes}", f"MaxProcs: {n_procs}"]
    lines += [f"{key}: {carried[key]}" for key in ("MaxRuntime", "MaxMemory") if key in carried]
    lines.append("AllowOveruse: Yes")
    notes.append(
        "AllowOveruse: the simulator never kills a job at its requested time; a job "
        "runs for its recorded run time"
    )
    lines.append(f"MaxQueues: {queues}")
    if "Queues" in carried:
        lines.append(f"Queues: {carried['Queues']}")
    if original and original.partition:
        lines.append(f"MaxPartitions: {len(set(original.partition.values()))}")
        if "Partitions" in carried:
            lines.append(f"Partitions: {carried['Partitions']}")
    lines += [f"Note: {note}" for note in notes]
    return lines
