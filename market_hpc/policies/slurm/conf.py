"""Read a slurm.conf into the ``slurm`` scheduler's parameters and partitions.

Keys are case-insensitive, ``#`` starts a comment, a ``\\`` at a line's end continues it.
The modelled keys (``MODELLED``) become scheduler parameters (``[policy.params]`` overrides
them); every other key is kept, by name, in ``SlurmConf.unmodelled`` (the run's summary
lists them once). A modelled key whose value cannot be read is a ``ConfigError`` naming
the file, the line, the key, the value and what is valid. Times follow slurm.conf(5):
``PriorityMaxAge`` and ``PriorityDecayHalfLife`` are ``[days-]hours:minutes[:seconds]`` or
minutes, ``MaxTime`` minutes or ``[days-]hours:minutes:seconds`` or ``UNLIMITED``,
``bf_window`` minutes, ``bf_interval``, ``bf_resolution`` and ``sched_interval`` seconds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from market_hpc.errors import ConfigError


@dataclass(frozen=True)
class Partition:
    """One ``PartitionName`` line.

    Attributes:
        name: The partition's name.
        nodes: Indices of its nodes in ``NodeName`` order (``None``: every node).
        max_time: ``MaxTime`` in seconds (``inf``: unlimited).
        priority_tier: ``PriorityTier`` (sorts jobs first; preemption by tier).
        priority_job_factor: ``PriorityJobFactor`` (the partition factor's numerator).
        default: ``Default=YES``.
    """

    name: str
    nodes: tuple[int, ...] | None = None
    max_time: float = math.inf
    priority_tier: int = 1
    priority_job_factor: int = 1
    default: bool = False


@dataclass(frozen=True)
class NodeLine:
    """One ``NodeName`` line (not ``NodeName=DEFAULT``), as written.

    Attributes:
        line: Its line number in the file.
        names: Its host names, expanded (``n[1-2]`` -> ``n1``, ``n2``).
        settings: Its other keys, lower-case, ``NodeName=DEFAULT``'s filled in; the
            scheduler reads none of them (``market-hpc slurm-check`` builds a platform
            from ``CPUs``).
    """

    line: int
    names: tuple[str, ...]
    settings: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SlurmConf:
    """What a slurm.conf sets: scheduler parameters, partitions, unmodelled key names, and
    the ``NodeName`` lines."""

    path: str
    params: dict[str, Any] = field(default_factory=dict)
    partitions: tuple[Partition, ...] = ()
    unmodelled: tuple[str, ...] = ()
    nodes: tuple[NodeLine, ...] = ()


_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
WEIGHTS = {
    "priorityweightage": "weight_age",
    "priorityweightfairshare": "weight_fairshare",
    "priorityweightjobsize": "weight_job_size",
    "priorityweightpartition": "weight_partition",
    "priorityweightqos": "weight_qos",
}
BF_SECONDS = {
    "bf_interval": "bf_interval",
    "bf_resolution": "bf_resolution",
    "sched_interval": "sched_interval",
}
BF_COUNTS = {
    "bf_max_job_test": "bf_max_job_test",
    "bf_max_job_start": "bf_max_job_start",
    "default_queue_depth": "default_queue_depth",
}
MODELLED = (
    "PriorityType",
    *("PriorityWeight" + w for w in ("Age", "FairShare", "JobSize", "Partition", "QOS")),
    "PriorityMaxAge",
    "PriorityDecayHalfLife",
    "PriorityFavorSmall",
    "PriorityCalcPeriod",
    "FairShareDampeningFactor",
    "SchedulerType",
    "SchedulerParameters",
    "PartitionName",
    "NodeName",
    "PreemptType",
    "PreemptMode",
)
"""The keys this reader models (``PriorityFlags`` too: ``NO_FAIR_TREE`` only)."""


def slurm_time(text: str, minutes_default: bool = True) -> float:
    """Seconds in a slurm.conf time: ``minutes``, ``minutes:seconds``,
    ``hours:minutes:seconds``, ``days-hours[:minutes[:seconds]]``; ``UNLIMITED`` is ``inf``.

    >>> slurm_time("7-0"), slurm_time("90"), slurm_time("1:30"), slurm_time("2:00:00")
    (604800.0, 5400.0, 90.0, 7200.0)
    >>> slurm_time("UNLIMITED")
    inf

    Raises:
        ValueError: not such a time.
    """
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return math.inf
    match = _TIME.match(text.strip())
    if match is None:
        raise ValueError(text)
    days, first, second, third = match.groups()
    if days is not None:  # days-hours[:minutes[:seconds]]
        return float(
            int(days) * 86400 + int(first) * 3600 + int(second or 0) * 60 + int(third or 0)
        )
    if third is not None:
        return float(int(first) * 3600 + int(second) * 60 + int(third))
    if second is not None:
        return float(int(first) * 60 + int(second))
    return float(int(first) * (60 if minutes_default else 1))


def hostlist(text: str) -> list[str]:
    """Expand a Slurm host list.

    >>> hostlist("n[1-3,7],gpu01")
    ['n1', 'n2', 'n3', 'n7', 'gpu01']
    >>> hostlist("c[01-02]")
    ['c01', 'c02']
    """
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", text):
        match = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", part)
        if match is None:
            names.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        for item in ranges.split(","):
            low, _, high = item.partition("-")
            width = len(low)
            for number in range(int(low), int(high or low) + 1):
                names.append(f"{prefix}{number:0{width}d}{suffix}")
    return names


def _logical_lines(text: str) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1].strip() if pending else line[:-1]
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            lines.append((start, line))
    return lines


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.params: dict[str, Any] = {}
        self.unmodelled: list[str] = []
        self.node_names: list[str] = []
        self.node_lines: list[NodeLine] = []
        self.node_defaults: dict[str, str] = {}
        self.partitions: list[tuple[int, dict[str, str]]] = []
        self.part_defaults: dict[str, str] = {}

    def fail(self, line: int, key: str, value: str, valid: str) -> ConfigError:
        return ConfigError(f"{self.path}:{line}: {key}={value} is invalid; valid: {valid}")

    def note(self, name: str) -> None:
        if name not in self.unmodelled:
            self.unmodelled.append(name)

    def integer(self, line: int, key: str, value: str, low: int = 0) -> int:
        if not re.fullmatch(r"\d+", value) or int(value) < low or int(value) > 2**32 - 1:
            raise self.fail(line, key, value, f"an integer in [{low}, 4294967295]")
        return int(value)

    def time(self, line: int, key: str, value: str, what: str) -> float:
        try:
            seconds = slurm_time(value)
        except ValueError:
            raise self.fail(line, key, value, what) from None
        if not math.isfinite(seconds):
            raise self.fail(line, key, value, what)
        return seconds

    def choice(self, line: int, key: str, value: str, choices: dict[str, Any]) -> Any:
        found = choices.get(value.lower())
        if found is None:
            raise self.fail(line, key, value, "one of " + ", ".join(choices))
        return found

    def read(self, number: int, line: str) -> None:
        pairs = [item.partition("=") for item in line.split()]
        key, _, value = pairs[0]
        lower = key.lower()
        if lower in ("nodename", "partitionname"):
            table = {k.lower(): v for k, _, v in pairs[1:]}
            if lower == "nodename":
                if value.upper() != "DEFAULT":
                    self.node_names.extend(hostlist(value))
                    names = tuple(hostlist(value))
                    self.node_lines.append(NodeLine(number, names, {**self.node_defaults, **table}))
                else:
                    self.node_defaults.update(table)
                for name in table:
                    if name not in ("cpus", "nodeaddr", "nodehostname"):
                        self.note(f"NodeName.{name}")
            elif value.upper() == "DEFAULT":
                self.part_defaults.update(table)
            else:
                self.partitions.append(
                    (number, {**self.part_defaults, **table, "partitionname": value})
                )
            return
        self.setting(number, key, lower, line.partition("=")[2].strip())

    def setting(self, number: int, key: str, lower: str, value: str) -> None:
        if lower in WEIGHTS:
            self.params[WEIGHTS[lower]] = self.integer(number, key, value)
        elif lower == "prioritytype":
            self.params["priority_type"] = self.choice(
                number,
                key,
                value,
                {"priority/basic": "basic", "priority/multifactor": "multifactor"},
            )
        elif lower in ("prioritymaxage", "prioritydecayhalflife"):
            name = "max_age" if lower == "prioritymaxage" else "decay_half_life"
            self.params[name] = self.time(
                number, key, value, "[days-]hours:minutes[:seconds] or minutes"
            )
        elif lower == "prioritycalcperiod":
            seconds = self.time(
                number, key, value, "minutes or hours:minutes:seconds (at least 1 second)"
            )
            if seconds <= 0:
                raise self.fail(
                    number, key, value, "minutes or hours:minutes:seconds (at least 1 second)"
                )
            self.params["calc_period"] = seconds
        elif lower == "priorityfavorsmall":
            self.params["favor_small"] = self.choice(number, key, value, {"yes": True, "no": False})
        elif lower == "fairsharedampeningfactor":
            self.params["fs_dampening"] = self.integer(number, key, value, low=1)
        elif lower == "priorityflags":
            for flag in value.split(","):
                if flag.upper() != "NO_FAIR_TREE":
                    self.note(f"PriorityFlags={flag}")
        elif lower == "schedulertype":
            self.params["scheduler_type"] = self.choice(
                number, key, value, {"sched/backfill": "backfill", "sched/builtin": "builtin"}
            )
        elif lower == "schedulerparameters":
            self.scheduler_parameters(number, key, value)
        elif lower == "preempttype":
            self.params["preempt"] = self.choice(
                number, key, value, {"preempt/none": False, "preempt/partition_prio": True}
            )
        elif lower == "preemptmode":
            modes = [mode.lower() for mode in value.split(",")]
            self.params["preempt_mode"] = self.choice(
                number,
                key,
                modes[0],
                {"off": "off", "suspend": "suspend", "requeue": "requeue", "cancel": "cancel"},
            )
            for mode in modes[1:]:
                self.note(f"PreemptMode={mode.upper()}")
        else:
            self.note(key)

    def scheduler_parameters(self, number: int, key: str, value: str) -> None:
        for option in filter(None, (item.strip() for item in value.split(","))):
            name, equals, setting = option.partition("=")
            name = name.lower()
            where = f"{key}:{name}"
            if name in BF_SECONDS:
                self.params[BF_SECONDS[name]] = float(self.integer(number, where, setting, low=1))
            elif name == "bf_window":
                self.params["bf_window"] = 60.0 * self.integer(number, where, setting, low=1)
            elif name in BF_COUNTS:
                self.params[BF_COUNTS[name]] = self.integer(number, where, setting)
            elif name == "bf_continue" and not equals:
                self.params["bf_continue"] = True
            else:
                self.note(f"SchedulerParameters:{name}")

    def partition(self, number: int, table: dict[str, str]) -> Partition:
        name = table["partitionname"]
        nodes: tuple[int, ...] | None = None
        listed = table.get("nodes")
        if listed is not None and listed.upper() != "ALL":
            index = {node: i for i, node in enumerate(self.node_names)}
            unknown = [node for node in hostlist(listed) if node not in index]
            if unknown:
                raise self.fail(
                    number,
                    f"PartitionName={name} Nodes",
                    listed,
                    "names from the NodeName lines: " + ", ".join(self.node_names),
                )
            nodes = tuple(sorted(index[node] for node in hostlist(listed)))
        max_time = math.inf
        if "maxtime" in table:
            try:
                max_time = slurm_time(table["maxtime"])
            except ValueError:
                raise self.fail(
                    number,
                    f"PartitionName={name} MaxTime",
                    table["maxtime"],
                    "minutes, [days-]hours:minutes:seconds or UNLIMITED",
                ) from None
        where = f"PartitionName={name} "
        tier = self.integer(number, where + "PriorityTier", table.get("prioritytier", "1"))
        factor = self.integer(
            number, where + "PriorityJobFactor", table.get("priorityjobfactor", "1")
        )
        default = self.choice(
            number, where + "Default", table.get("default", "no"), {"yes": True, "no": False}
        )
        for option in table:
            if option not in (
                "partitionname",
                "nodes",
                "maxtime",
                "prioritytier",
                "priorityjobfactor",
                "default",
                "priority",
            ):
                self.note(f"PartitionName.{option}")
        if "priority" in table:  # the old name of both PriorityJobFactor and PriorityTier
            tier = factor = self.integer(number, where + "Priority", table["priority"])
        return Partition(name, nodes, max_time, tier, factor, default)


def read_slurm_conf(path: str | Path) -> SlurmConf:
    """Read ``path`` (a slurm.conf).

    Raises:
        ConfigError: the file cannot be read, or a modelled key's value is invalid
            (``FILE:LINE: Key=value is invalid; valid: ...``).
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(
            f"policy.slurm_conf: cannot read {str(path)!r}: {exc.strerror or exc}"
        ) from None
    reader = _Reader(str(path))
    for number, line in _logical_lines(text):
        if "=" not in line.split()[0]:
            raise ConfigError(f"{path}:{number}: {line.split()[0]!r} is not a Key=value setting")
        reader.read(number, line)
    partitions = tuple(reader.partition(number, table) for number, table in reader.partitions)
    return SlurmConf(
        str(path), reader.params, partitions, tuple(reader.unmodelled), tuple(reader.node_lines)
    )
