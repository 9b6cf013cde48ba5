"""Binning a large platform's nodes: above a size, one cell stands for ``k`` nodes.

On Curie (5,544 nodes) one row per node leaves 1.7 px per row: nothing can be read. When
a node row would be under ``MIN_NODE_PX`` pixels, consecutive nodes of one node type are
grouped ``k`` at a time (``k`` the smallest of ``GROUP_SIZES`` giving cells of at least
``MIN_BIN_PX`` pixels) and each group is one slot of the grid: one cell for its cores
and, where its type has them, one for its GPUs and one for its MICs. A cell's colour is
the share of the group's units that are busy, on a ramp from the free colour (0 %) to a
dark one (100 %). Groups never straddle a node type, nor a boundary of a queue partition
or the hybrid pool (``cuts``): every cell's partition strip is exact, and a type's or a
partition's last group may hold fewer than ``k`` nodes (its share is over the nodes it
holds). Small platforms keep one row per node (``group_size`` 1).

No solara and no model here: the tests check these functions by hand.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import CORES, GPUS, MICS
from visualization.grid_layout import (
    ABSENT,
    GridGeometry,
    Scale,
    arrange,
    grid_geometry,
    picture_scale,
    type_text,
)

MIN_NODE_PX = 4.0  # a node row under this many pixels is binned
MIN_BIN_PX = 8.0
STRIP_PX = 3  # width of the partition strip left of a binned cell  # the smallest group size giving cells this large is used
GROUP_SIZES = (2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 256, 512, 1024)
# (free, fully busy) colour of a binned cell per resource; shares in between are linear.
RAMPS = {CORES: ((229, 232, 237), (45, 55, 72)),
         GPUS: ((214, 232, 250), (8, 104, 172)),
         MICS: ((250, 229, 209), (166, 54, 3))}


def node_groups(first: int, count: int, k: int, cuts: Iterable[int] = ()) -> list[int]:
    """First node of each group of nodes ``first``..``first + count - 1``: ``k`` at a
    time, starting afresh at every cut inside the range.

    >>> node_groups(0, 10, 4)
    [0, 4, 8]
    >>> node_groups(0, 10, 4, cuts=[3])
    [0, 3, 7]
    >>> node_groups(100, 5, 2, cuts=[0, 102, 200])
    [100, 102, 104]
    """
    edges = sorted({first, first + count, *(c for c in cuts if first < c < first + count)})
    return [start for lo, hi in itertools.pairwise(edges) for start in range(lo, hi, k)]


@lru_cache(maxsize=32)
def binned_geometry(platform: Platform, k: int, cuts: tuple[int, ...] = ()) -> GridGeometry:
    """The grid with one slot per group of up to ``k`` nodes (``node_groups`` per node
    type, cut at ``cuts``); a slot's row is its cores cell, then gap + GPU cell and
    gap + MIC cell where the platform has them."""
    offsets, width = {CORES: 0}, 1
    for resource in (GPUS, MICS):
        if platform.capacity[:, resource].max():
            offsets[resource] = width + 1
            width += 2
    starts: list[int] = []
    types = []
    kinds = []
    first = 0
    for node_type in platform.node_types:
        groups = node_groups(first, node_type.count, k, cuts)
        starts += groups
        columns = [0]
        row = np.full(width, ABSENT, dtype=np.int8)
        row[0] = CORES
        for resource, count in ((GPUS, node_type.gpus), (MICS, node_type.mics)):
            if count:
                columns += [-1, offsets[resource]]
                row[offsets[resource]] = resource
        kinds.append(np.repeat(row[None, :], len(groups), axis=0))
        types.append((node_type.name, len(groups), np.asarray(columns, dtype=np.int64), type_text(node_type)))
        first += node_type.count
    bounds = np.asarray([*starts, platform.n_nodes], dtype=np.int64)
    return arrange(types, width, offsets, np.concatenate(kinds), bounds, group=k)


@lru_cache(maxsize=16)
def group_size(platform: Platform) -> int:
    """Nodes per cell: 1 while a node row gets ``MIN_NODE_PX`` pixels, else the smallest
    of ``GROUP_SIZES`` whose cells get ``MIN_BIN_PX`` (the largest if none does)."""
    if picture_scale(grid_geometry(platform)).factor >= MIN_NODE_PX:
        return 1
    for k in GROUP_SIZES:
        if picture_scale(binned_geometry(platform, k)).factor >= MIN_BIN_PX:
            return k
    return GROUP_SIZES[-1]


def view_geometry(platform: Platform, cuts: Iterable[int] = ()) -> GridGeometry:
    """The geometry the node grid draws: one row per node, or binned (``group_size``)."""
    k = group_size(platform)
    if k == 1:
        return grid_geometry(platform)
    return binned_geometry(platform, k, tuple(sorted(set(cuts))))


def group_shares(used: np.ndarray, capacity: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``(groups, resources)`` share of each group's units in use (NaN where the group
    has none of that resource); ``used``/``capacity`` are per node, ``bounds`` the first
    node of each group followed by the node count.

    >>> used = np.array([[4, 0], [0, 0], [2, 1], [4, 2]])
    >>> capacity = np.array([[4, 0], [4, 0], [4, 2], [4, 2]])
    >>> group_shares(used, capacity, np.array([0, 2, 4])).tolist()
    [[0.5, nan], [0.75, 0.75]]
    """
    starts = bounds[:-1]
    busy = np.add.reduceat(used, starts, axis=0).astype(np.float64)
    total = np.add.reduceat(capacity, starts, axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, busy / np.where(total > 0, total, 1.0), np.nan)


def share_colour(share: np.ndarray, resource: int) -> np.ndarray:
    """``uint8`` RGB of busy shares on ``RAMPS[resource]``: ``free + share x (busy - free)``,
    rounded.

    >>> share_colour(np.array([0.0, 0.5, 1.0]), CORES).tolist()
    [[229, 232, 237], [137, 144, 154], [45, 55, 72]]
    """
    free, busy = (np.asarray(c, dtype=np.float64) for c in RAMPS[resource])
    return np.rint(free + np.asarray(share, dtype=np.float64)[..., None] * (busy - free)).astype(np.uint8)


def binned_cells(geometry: GridGeometry, used: np.ndarray, capacity: np.ndarray,
                 background: int = 255) -> np.ndarray:
    """``(slots, node_width, 3)`` colour of every binned cell (``background`` where a slot
    has no such resource)."""
    shares = group_shares(used, capacity, geometry.bounds)
    cells = np.full((len(geometry.kind), geometry.node_width, 3), background, dtype=np.uint8)
    for resource, offset in geometry.offsets.items():
        present = geometry.kind[:, offset] == resource
        cells[present, offset] = share_colour(shares[present, resource], resource)
    return cells


def slim_markers(body: np.ndarray, geometry: GridGeometry, factor: float, strip: int = STRIP_PX) -> None:
    """Whiten each marker cell of a binned picture but its right ``strip`` pixels: the
    partition strip stays a strip beside the cell, not a cell of its own."""
    scale = Scale(factor)
    for section in geometry.sections:
        for block in range(section.blocks):
            column = section.left + block * section.width
            left, right = scale.px(column), scale.px(column + 1)
            body[:, left:max(left, right - strip)] = 255


def ramp_css(resource: int) -> str:
    """A CSS linear gradient of the resource's ramp, for the legend."""
    (r0, g0, b0), (r1, g1, b1) = RAMPS[resource]
    return f"linear-gradient(to right, rgb({r0},{g0},{b0}), rgb({r1},{g1},{b1}))"
