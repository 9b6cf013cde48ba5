"""Convert a sacct export to an SWF trace and a side file of what SWF cannot hold.

Backs ``market-hpc trace convert`` and ``market-hpc replay`` of a sacct file.
"""

from __future__ import annotations

import csv
import io
import os
from datetime import UTC, datetime
from pathlib import Path

from market_hpc.atomic_file import write_files
from market_hpc.workload.slurm import SacctConversion, read_sacct, swf_rows
from market_hpc.workload.swf import trace_bytes
from market_hpc.workload.swf_rows import swf_text

SIDE_COLUMNS = (
    "swf_job_id",
    "slurm_job_id",
    "line",
    "state",
    "partition",
    "nodes",
    "gpus",
    "mem_mib_per_cpu",
    "user",
)


def side_file(swf_path: str | os.PathLike[str]) -> Path:
    """The side file next to an SWF: ``cluster.swf`` -> ``cluster.slurm.csv``."""
    path = Path(swf_path)
    stem = path.name.removesuffix(".gz").removesuffix(".swf")
    return path.with_name(f"{stem}.slurm.csv")


def convert_sacct(
    source: str | os.PathLike[str], out: str | os.PathLike[str], *, lenient: bool = False
) -> SacctConversion:
    """Read a sacct export and write it as an SWF trace plus ``<name>.slurm.csv``.

    The SWF header records the source, the first submit time, the partition and user
    numbers, the number of jobs with GPU requests (``GPUJobs``) and the conversion
    counts; the side file maps every SWF job id to its Slurm JobID, state, partition,
    node count, GPUs and memory. A run of the SWF reads the GPUs back
    (:mod:`market_hpc.workload.gpu_requests`).

    Args:
        source: sacct ``--parsable2`` output with its header line.
        out: The SWF file to write (``.swf`` or ``.swf.gz``).
        lenient: Count malformed lines instead of raising on the first.

    Returns:
        The conversion (its ``describe()`` gives the counts).

    The SWF and the side file are written both or neither, each whole
    (:func:`~market_hpc.atomic_file.write_files`): a full disk leaves the previous files.

    Raises:
        ConfigError, TraceFormatError: As :func:`~market_hpc.workload.slurm.read_sacct`.
        OutputError: An output cannot be written (then neither is).
    """
    conversion = read_sacct(source, lenient=lenient)
    rows, partitions, users = swf_rows(conversion)
    first = conversion.jobs[0].submit
    header = [
        "Version: 2.2",
        f"Computer: converted from Slurm accounting ({Path(conversion.source).name})",
        "Conversion: market-hpc trace convert (see docs/slurm.md)",
        f"UnixStartTime: {int(first)}",
        (
            f"StartTime: {datetime.fromtimestamp(first, UTC).strftime('%Y-%m-%dT%H:%M:%S')} "
            "(sacct's clock, read as UTC)"
        ),
        "Partitions: " + (", ".join(f"{n}={name}" for name, n in partitions.items()) or "none"),
        f"Users: {len(users)} (numbered in order of first job)",
        (
            f"GPUJobs: {sum(1 for job in conversion.jobs if job.gpus)} (their GPU requests are in "
            f"{side_file(out).name}; runs of this trace read them)"
        ),
        *conversion.describe(),
    ]
    swf = trace_bytes(swf_text(rows, header), out)
    write_files({Path(out): swf, side_file(out): _side_text(conversion)})  # both or neither
    return conversion


def _side_text(conversion: SacctConversion) -> str:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(SIDE_COLUMNS)
    for number, job in enumerate(conversion.jobs, start=1):
        writer.writerow(
            (
                number,
                job.slurm_id,
                job.line,
                job.state,
                job.partition,
                job.nodes,
                job.gpus,
                f"{job.mem_mib_per_cpu:g}",
                job.user,
            )
        )
    return text.getvalue()
