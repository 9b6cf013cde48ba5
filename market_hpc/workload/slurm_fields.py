"""Parse the field formats of Slurm's ``sacct`` output: times, durations, ids, memory, TRES.

Each parser returns plain numbers or raises :class:`ValueError` with a message that the
reader (:mod:`market_hpc.workload.slurm`) turns into a file/line/field error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from market_hpc.validation import MAX_INT

# Words sacct prints for a time that is not known (not started, still running).
UNKNOWN_TIMES = frozenset({"", "unknown", "none", "n/a"})
# Words sacct prints for a time limit that is not a number (no estimate).
NO_LIMIT = frozenset({"", "unlimited", "infinite", "partition_limit", "none"})

# re.ASCII: \d is 0-9 only, as everywhere numbers enter (market_hpc.validation).
_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+(?:\.\d+)?))?$", re.ASCII)
_JOB_ID = re.compile(r"^(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(?:\.(.+))?$", re.ASCII)
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)([cn]?)$", re.IGNORECASE | re.ASCII)
_MIB = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3, "": 1.0}


def parse_timestamp(text: str) -> float | None:
    """Seconds since the epoch of a sacct time, ``None`` when sacct does not know it.

    sacct prints ``YYYY-MM-DDTHH:MM:SS`` in the cluster's local time without a zone (or
    epoch seconds with ``SLURM_TIME_FORMAT=%s``). A time without a zone is read as UTC:
    only differences matter to a replay, and they are exact except across a daylight
    saving change (then off by the clock shift; export with ``SLURM_TIME_FORMAT=%s`` to
    avoid it).

    >>> parse_timestamp("2024-03-01T00:01:40") - parse_timestamp("2024-03-01T00:00:00")
    100.0
    >>> parse_timestamp("1709251200"), parse_timestamp("Unknown"), parse_timestamp("None")
    (1709251200.0, None, None)
    """
    word = text.strip()
    if word.lower() in UNKNOWN_TIMES:
        return None
    if not word.isascii():
        raise ValueError(f"{text!r} is not a time (ASCII digits only)")
    if word.isdigit():
        return float(word)
    try:
        stamp = datetime.fromisoformat(word)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time (expected YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown or None)"
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def parse_duration(text: str) -> float | None:
    """Seconds of a Slurm duration, ``None`` for no limit (``UNLIMITED``, ``Partition_Limit``).

    Slurm's formats: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM`` and
    ``D-HH:MM:SS`` (sbatch ``--time``); sacct prints ``[D-]HH:MM:SS`` for Elapsed and
    Timelimit. Fractional seconds (``MM:SS.mmm``) are kept.

    >>> [parse_duration(t) for t in ("1-02:03:04", "02:03:04", "03:04", "5", "2-12", "1-00:30")]
    [93784.0, 7384.0, 184.0, 300.0, 216000.0, 88200.0]
    >>> parse_duration("UNLIMITED"), parse_duration("Partition_Limit")
    (None, None)
    """
    word = text.strip()
    if word.lower() in NO_LIMIT:
        return None
    match = _DURATION.match(word)
    if match is None:
        raise ValueError(
            f"{text!r} is not a duration (expected [D-]HH:MM:SS, MM:SS, "
            "UNLIMITED or Partition_Limit)"
        )
    days, first, second, third = match.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        hours, minutes, seconds = float(first), float(second or 0), float(third or 0)
        total = float(days) * 86400.0 + hours * 3600.0 + minutes * 60.0 + seconds
    elif third is not None:  # HH:MM:SS
        total = float(first) * 3600.0 + float(second) * 60.0 + float(third)
    elif second is not None:  # MM:SS
        total = float(first) * 60.0 + float(second)
    else:  # MM
        total = float(first) * 60.0
    return total


@dataclass(frozen=True)
class SlurmJobId:
    """A parsed sacct JobID.

    Attributes:
        job: The job (or array master / het leader) number.
        array_task: The array element, ``None`` outside arrays; ``"[4-9]"`` for elements
            still pending when exported (one line for several elements).
        het_component: The heterogeneous job component (``123+1``), ``None`` otherwise.
        step: The step name (``batch``, ``extern``, ``0``), ``None`` for an allocation.
    """

    job: int
    array_task: str | None
    het_component: int | None
    step: str | None

    @property
    def pending_array(self) -> bool:
        """A line standing for array elements that never started (``123_[4-9]``)."""
        return self.array_task is not None and self.array_task.startswith("[")


def parse_job_id(text: str) -> SlurmJobId:
    """Split a sacct JobID into job, array element, het component and step.

    >>> parse_job_id("123_4.batch")
    SlurmJobId(job=123, array_task='4', het_component=None, step='batch')
    >>> parse_job_id("77+1.0").het_component, parse_job_id("9_[3-5%2]").pending_array
    (1, True)
    """
    match = _JOB_ID.match(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a Slurm job id (expected 123, 123_4, 123+0, 123.batch, ...)"
        )
    job, task, component, step = match.groups()
    return SlurmJobId(int(job), task, None if component is None else int(component), step)


def parse_memory_mib(text: str, cpus: int, nodes: int) -> float | None:
    """MiB per CPU of a sacct ReqMem (``4000M``, ``4Gc`` per CPU, ``16Gn`` or ``16G`` per node).

    A value without ``c``/``n`` is per node (how Slurm 21.08 and later print ``--mem``).

    >>> parse_memory_mib("4Gc", 8, 1), parse_memory_mib("16G", 8, 2), parse_memory_mib("", 1, 1)
    (4096.0, 4096.0, None)
    """
    word = text.strip()
    if not word or word in {"0", "0n", "0c"}:
        return None
    match = _MEMORY.match(word)
    if match is None:
        raise ValueError(f"{text!r} is not a memory size (expected e.g. 4000M, 4Gc, 16Gn)")
    amount = float(match.group(1)) * _MIB[match.group(2).upper()]
    if match.group(3).lower() == "c":
        return amount
    per_node = max(cpus, 1) / max(nodes, 1)
    return amount / per_node


def tres_memory_mib(text: str, cpus: int) -> float | None:
    """MiB per CPU of the ``mem=`` entry of a TRES list (the job's whole memory), or ``None``
    when the list has none: the memory of an export whose ReqMem column is empty.

    >>> tres_memory_mib("cpu=8,mem=16G,node=1", 8), tres_memory_mib("cpu=4,mem=3000M", 4)
    (2048.0, 750.0)
    >>> tres_memory_mib("cpu=4,gres/gpu=1", 4) is None
    True
    """
    for item in text.split(","):
        key, _, value = item.strip().partition("=")
        if key == "mem":
            match = _MEMORY.match(value.strip())
            if match is None or match.group(3):
                raise ValueError(f"{item!r} is not a memory size (expected e.g. mem=64G)")
            return float(match.group(1)) * _MIB[match.group(2).upper()] / max(cpus, 1)
    return None


def tres_gpus(text: str) -> int:
    """GPUs in a TRES list (``cpu=8,mem=64G,node=1,gres/gpu=2``); typed entries
    (``gres/gpu:a100=2``) count only when the untyped total is absent. Other GPU TRES
    (``gres/gpumem=40G``, ``gres/gpuutil=90``: what a GPU used, not how many) are no
    request and are left alone.

    >>> tres_gpus("cpu=8,gres/gpu=2,gres/gpu:a100=2"), tres_gpus("gres/gpu:v100=1,gres/gpu:a100=3")
    (2, 4)
    >>> tres_gpus("cpu=4,mem=8G"), tres_gpus("cpu=4,gres/gpumem=40G,gres/gpu=1")
    (0, 1)
    >>> tres_gpus("cpu=8,gres/gpu=two")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: 'gres/gpu=two': GPU count must be a whole number (ASCII digits); valid: 0 to
    9,007,199,254,740,991
    """
    total, typed = None, 0
    for item in text.split(","):
        key, _, value = item.strip().partition("=")
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        count = value.strip()
        if not (count.isascii() and count.isdigit()):
            raise ValueError(
                f"{item.strip()!r}: GPU count must be a whole number (ASCII digits); "
                f"valid: 0 to {MAX_INT:,}"
            )
        if int(count) > MAX_INT:
            raise ValueError(f"{item.strip()!r}: GPU count is too large; valid: 0 to {MAX_INT:,}")
        if key == "gres/gpu":
            if total is not None:
                raise ValueError(
                    f"{item.strip()!r}: gres/gpu appears twice (first gres/gpu={total})"
                )
            total = int(count)
        else:
            typed += int(count)
    gpus = typed if total is None else total
    if gpus > MAX_INT:
        raise ValueError(
            f"{text.strip()!r}: typed GPU counts add up to {gpus}; valid: 0 to {MAX_INT:,}"
        )
    return gpus
