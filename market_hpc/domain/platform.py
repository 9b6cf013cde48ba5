"""Platforms: node types x counts, held as numpy capacity arrays.

A platform is built from a preset name, an inline spec
``nodes=N,cores=C[,gpus=G,mics=M,mem=GB][,bb=GB]`` or a TOML file::

    name = "mini"
    burst_buffer = 100          # GB, shared pool (optional)
    [[node_type]]
    name = "thin"
    count = 4
    cores = 16
    mem = 64                    # GB
    [[node_type]]
    name = "gpu"
    count = 2
    cores = 8
    gpus = 2
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from market_hpc.errors import ConfigError, InvalidNumberError, UnknownNameError
from market_hpc.tomlfile import read_toml
from market_hpc.validation import (
    COUNT,
    MAX_INT,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    Range,
    check,
    parse_ascii_number,
)

MIB_PER_GB = 1024


@dataclass(frozen=True, slots=True)
class NodeType:
    """A kind of node and how many the platform has.

    Attributes:
        name: Label (``thin``, ``gpu``...).
        count: Number of nodes of this type (>= 1).
        cores: Cores per node (>= 1).
        gpus: GPUs per node.
        mics: MIC (Xeon Phi) cards per node.
        mem: Memory per node in MiB.
    """

    name: str
    count: int
    cores: int
    gpus: int = 0
    mics: int = 0
    mem: int = 0

    def __post_init__(self) -> None:
        for key in ("count", "cores", "gpus", "mics", "mem"):
            check(getattr(self, key), _NODE_RANGES[key], f"node type {self.name!r}: {key}")

    @property
    def capacity(self) -> tuple[int, ...]:
        """Resource vector of one node in ``RESOURCES`` order."""
        return (self.cores, self.gpus, self.mics, self.mem)


@dataclass(frozen=True)
class Platform:
    """A set of nodes plus an optional shared burst-buffer pool.

    Attributes:
        name: Preset name or a label.
        node_types: The node types, in node-index order (type 0 first).
        burst_buffer: Shared burst-buffer capacity in GB (0 when absent).
    """

    name: str
    node_types: tuple[NodeType, ...]
    burst_buffer: float = 0.0

    def __post_init__(self) -> None:
        if not self.node_types:
            raise ConfigError(f"platform {self.name!r} has no node types")
        check(self.burst_buffer, NON_NEGATIVE, f"platform {self.name!r}: burst_buffer")

    @cached_property
    def capacity(self) -> np.ndarray:
        """Read-only ``(n_nodes, N_RESOURCES)`` int64 array of node capacities."""
        rows = [
            np.tile(np.asarray(t.capacity, dtype=np.int64), (t.count, 1)) for t in self.node_types
        ]
        cap = np.concatenate(rows)
        cap.flags.writeable = False
        return cap

    @cached_property
    def node_type_index(self) -> np.ndarray:
        """Read-only array giving each node's index into ``node_types``."""
        idx = np.repeat(np.arange(len(self.node_types)), [t.count for t in self.node_types])
        idx.flags.writeable = False
        return idx

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return sum(t.count for t in self.node_types)

    @cached_property
    def total(self) -> np.ndarray:
        """Total capacity per resource."""
        tot: np.ndarray = self.capacity.sum(axis=0)
        tot.flags.writeable = False
        return tot

    @property
    def total_cores(self) -> int:
        """Total number of cores."""
        return int(self.total[0])

    def describe(self) -> str:
        """One line: node types and counts."""
        parts = []
        for t in self.node_types:
            extra = "".join(f",{k}={v}" for k, v in (("gpus", t.gpus), ("mics", t.mics)) if v)
            mem = f",mem={t.mem // MIB_PER_GB}GB" if t.mem else ""
            parts.append(f"{t.count}x[{t.name}: cores={t.cores}{extra}{mem}]")
        bb = f" + bb={self.burst_buffer:g}GB" if self.burst_buffer else ""
        return f"{self.name}: " + " ".join(parts) + bb

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (for config.json)."""
        return {
            "name": self.name,
            "burst_buffer": self.burst_buffer,
            "node_type": [
                {
                    "name": t.name,
                    "count": t.count,
                    "cores": t.cores,
                    "gpus": t.gpus,
                    "mics": t.mics,
                    "mem_mib": t.mem,
                }
                for t in self.node_types
            ],
        }


_NODE_RANGES: dict[str, Range] = {
    "count": COUNT,
    "cores": COUNT,
    "gpus": NON_NEGATIVE_INT,
    "mics": NON_NEGATIVE_INT,
    "mem": NON_NEGATIVE_INT,
}
# what a spec or file gives: node counts (nodes= inline, count in a file), memory in GB (up to
# what the node's MiB count holds exactly, so a too-large mem is refused as typed, in GB)
_MEM_GB = Range(0.0, MAX_INT // MIB_PER_GB)
_INLINE_RANGES: dict[str, Range] = {
    **_NODE_RANGES,
    "nodes": COUNT,
    "mem": _MEM_GB,
    "bb": NON_NEGATIVE,
}


def _gb(value: float) -> int:
    return round(value * MIB_PER_GB)


PRESETS: dict[str, Platform] = {
    "kth-sp2": Platform("kth-sp2", (NodeType("sp2", 100, 1),)),
    "nasa-ipsc": Platform("nasa-ipsc", (NodeType("ipsc", 128, 1),)),
    "hpc2n": Platform("hpc2n", (NodeType("seth", 120, 2),)),
    # CEA-Curie trace header: 5040 thin (80640 cores), 360 fat (11520), 144 hybrid
    # (1152 cores, 2 GPUs each); memory per TGCC's published node figures.
    "curie": Platform(
        "curie",
        (
            NodeType("thin", 5040, 16, mem=_gb(64)),
            NodeType("fat", 360, 32, mem=_gb(128)),
            NodeType("hybrid", 144, 8, gpus=2, mem=_gb(24)),
        ),
    ),
    # Netti et al. (Eurora): 64 nodes x 16 cores, 16 GB; half with 2 GPUs, half with 2 MICs.
    "eurora": Platform(
        "eurora",
        (
            NodeType("gpu", 32, 16, gpus=2, mem=_gb(16)),
            NodeType("mic", 32, 16, mics=2, mem=_gb(16)),
        ),
    ),
    "kit-fh2": Platform(
        "kit-fh2",
        (
            NodeType("thin", 1152, 20, mem=_gb(64)),
            NodeType("gpu", 21, 48, gpus=4, mem=_gb(1024)),
        ),
    ),
    # Singh et al.: 3 nodes x 9 cores modelled on an HLRS platform.
    "hlrs-3x9": Platform("hlrs-3x9", (NodeType("hlrs", 3, 9),)),
}

_INLINE_KEYS = ("nodes", "cores", "gpus", "mics", "mem", "bb")


def parse_inline(spec: str) -> Platform:
    """Parse ``nodes=N,cores=C[,gpus=G,mics=M,mem=GB,bb=GB]`` into a one-type platform.

    >>> parse_inline("nodes=100,cores=1").total_cores
    100
    >>> parse_inline("nodes=2,cores=4,gpus=1").capacity.tolist()
    [[4, 1, 0, 0], [4, 1, 0, 0]]
    """
    values: dict[str, float] = {}
    for item in spec.split(","):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise ConfigError(f"platform spec {spec!r}: item {item!r} is not key=value")
        if key not in _INLINE_KEYS:
            raise UnknownNameError("platform key", key, _INLINE_KEYS)
        value = parse_ascii_number(raw.strip())
        if value is None:
            raise ConfigError(f"platform spec {spec!r}: {key}={raw!r} is not a number")
        if not _INLINE_RANGES[key].contains(value):
            raise InvalidNumberError(
                f"platform spec {spec!r}: {key}", raw, _INLINE_RANGES[key].describe()
            )
        values[key] = value
    for required in ("nodes", "cores"):
        if required not in values:
            raise ConfigError(f"platform spec {spec!r}: missing {required}=")
    node = NodeType(
        "node",
        int(values["nodes"]),
        int(values["cores"]),
        gpus=int(values.get("gpus", 0)),
        mics=int(values.get("mics", 0)),
        mem=_gb(values.get("mem", 0.0)),
    )
    return Platform(spec, (node,), burst_buffer=values.get("bb", 0.0))


_TYPE_KEYS = ("name", "count", "cores", "gpus", "mics", "mem")
_FILE_KEYS = ("name", "burst_buffer", "node_type")


def platform_from_dict(data: dict[str, Any], source: str) -> Platform:
    """Build a platform from the TOML table layout documented in this module."""
    for key in data:
        if key not in _FILE_KEYS:
            raise UnknownNameError(f"platform key in {source}", key, _FILE_KEYS)
    types = data.get("node_type")
    if not isinstance(types, list) or not types:
        raise ConfigError(f"{source}: needs at least one [[node_type]] table")
    node_types = []
    for i, table in enumerate(types):
        for key in table:
            if key not in _TYPE_KEYS:
                raise UnknownNameError(
                    f"node_type key in {source} (node_type #{i + 1})", key, _TYPE_KEYS
                )
        for key in ("count", "cores"):
            if key not in table:
                raise ConfigError(f"{source}: node_type #{i + 1} is missing {key!r}")
        where = f"{source}: node_type #{i + 1}"
        number = {
            key: check(table.get(key, 0), _INLINE_RANGES[key], f"{where} {key}")
            for key in ("count", "cores", "gpus", "mics", "mem")
        }
        node_types.append(
            NodeType(
                str(table.get("name", f"type{i}")),
                int(number["count"]),
                int(number["cores"]),
                gpus=int(number["gpus"]),
                mics=int(number["mics"]),
                mem=_gb(float(number["mem"])),
            )
        )
    burst_buffer = check(data.get("burst_buffer", 0.0), NON_NEGATIVE, f"{source}: burst_buffer")
    return Platform(str(data.get("name", source)), tuple(node_types), float(burst_buffer))


def load_platform(spec: str | Platform) -> Platform:
    """Resolve a preset name, an inline spec or a ``.toml`` file into a platform.

    Raises:
        ConfigError: for an unknown preset (listing the presets), a bad inline spec, or an
            unreadable / invalid TOML file.
    """
    if isinstance(spec, Platform):
        return spec
    if spec in PRESETS:
        return PRESETS[spec]
    if "=" in spec:
        return parse_inline(spec)
    if spec.endswith(".toml"):
        return platform_from_dict(read_toml(spec, "platform file"), spec)
    raise UnknownNameError(
        "platform preset", spec, list(PRESETS) + ["nodes=N,cores=C[,...]", "FILE.toml"]
    )
