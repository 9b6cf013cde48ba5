"""The node grid as it was before issue 15 (one common node width, integer cell scale,
every cell coloured through np.unique): the "before" of ``viz_step.py``. Not used by the app.

The node grid: one row of cells per node, coloured by the job on each cell.

A node row holds its cores, then (where the platform has them) its GPUs and MICs after a
gap. Nodes are tiled top to bottom in blocks side by side so large platforms keep a
screen-like aspect. A cell's colour is the job on it (a stable colour per job id); cells
are filled in the order jobs started, a picture of the allocation counts, not of core
affinity (the model does not track core indices). Drawn with numpy and encoded with
Pillow, no matplotlib: it is redrawn every step. No solara here, so the benchmark and the
tests build the same picture.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from matplotlib.colors import hsv_to_rgb

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import JobStatus
from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import CORES, GPUS, MICS

ABSENT, FREE = -1, 0
BACKGROUND = (1.0, 1.0, 1.0)
FREE_COLOURS = {CORES: (0.90, 0.91, 0.93), GPUS: (0.84, 0.91, 0.98), MICS: (0.98, 0.90, 0.82)}
TARGET_ASPECT = 1.7  # width / height of the node-grid tile
MAX_WIDTH = 760  # pixels of the node-grid picture
MAX_CELL = 28
LABEL_HEIGHT = 16


@dataclass(frozen=True)
class GridGeometry:
    """Where each node's cells are in the picture.

    Attributes:
        node_width: Cells per node row (cores, then gap + GPUs, gap + MICs).
        offsets: Column of the first core, GPU and MIC cell within a node row.
        blocks: Blocks of nodes side by side.
        rows: Node rows per block.
        kind: ``(n_nodes, node_width)`` resource index of each cell, ``ABSENT`` for
            cells a node does not have.
    """

    node_width: int
    offsets: dict[int, int]
    blocks: int
    rows: int
    kind: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        """Picture size in cells; every block has one leading marker column."""
        return self.rows, self.blocks * (self.node_width + 1)

    def cell(self, node: int) -> tuple[int, int]:
        """Row and column of a node's first cell."""
        block, row = divmod(node, self.rows)
        return row, block * (self.node_width + 1) + 1


@lru_cache(maxsize=16)
def grid_geometry(platform: Platform) -> GridGeometry:
    """Lay a platform's nodes out (cached per platform)."""
    capacity = platform.capacity
    n_nodes = platform.n_nodes
    offsets = {CORES: 0}
    width = int(capacity[:, CORES].max())
    for resource in (GPUS, MICS):
        most = int(capacity[:, resource].max())
        if most:
            offsets[resource] = width + 1
            width += 1 + most
    kind = np.full((n_nodes, width), ABSENT, dtype=np.int8)
    columns = np.arange(width)
    for resource, offset in offsets.items():
        present = (columns >= offset) & (columns < offset + capacity[:, resource][:, None])
        kind[present] = resource
    best = min(range(1, n_nodes + 1),
               key=lambda b: abs(math.log(b * (width + 1) / math.ceil(n_nodes / b) / TARGET_ASPECT)))
    return GridGeometry(width, offsets, best, math.ceil(n_nodes / best), kind)


def _fill(owner: np.ndarray, nodes: np.ndarray, counts: np.ndarray, jobs: np.ndarray,
          offset: int) -> None:
    """Give each job ``counts`` consecutive cells on its nodes, in the order given."""
    keep = counts > 0
    nodes, counts, jobs = nodes[keep], counts[keep], jobs[keep]
    if not len(nodes):
        return
    order = np.argsort(nodes, kind="stable")
    nodes, counts, jobs = nodes[order], counts[order], jobs[order]
    ends = np.cumsum(counts)
    starts = ends - counts
    first = np.r_[True, nodes[1:] != nodes[:-1]]
    within = starts - np.maximum.accumulate(np.where(first, starts, 0))
    segment = np.repeat(np.arange(len(nodes)), counts)
    position = np.arange(ends[-1]) - starts[segment] + within[segment]
    owner[nodes[segment], offset + position] = jobs[segment]


def cell_owners(model: HPCModel) -> np.ndarray:
    """``(n_nodes, node_width)`` job id on each cell (``FREE``, ``ABSENT``)."""
    geometry = grid_geometry(model.platform)
    owner = np.where(geometry.kind == ABSENT, ABSENT, FREE).astype(np.int64)
    running = sorted(model.running_by_end, key=lambda r: r.seq)
    if not running:
        return owner
    nodes: list[int] = []
    units: list[int] = []
    unit_vectors: list[tuple[int, ...]] = []
    jobs: list[int] = []
    for entry in running:
        for node, count in entry.allocation:
            nodes.append(node)
            units.append(count)
            unit_vectors.append(entry.job.unit)
            jobs.append(entry.job.job_id)
    node_ids, job_ids = np.asarray(nodes, dtype=np.int64), np.asarray(jobs, dtype=np.int64)
    if model.exclusive:  # a node-exclusive job holds its nodes' whole capacity
        amounts = model.platform.capacity[node_ids]
    else:
        amounts = np.asarray(units, dtype=np.int64)[:, None] * np.asarray(unit_vectors, dtype=np.int64)
    for resource, offset in geometry.offsets.items():
        _fill(owner, node_ids, amounts[:, resource], job_ids, offset)
    return owner


def job_colours(job_ids: np.ndarray) -> np.ndarray:
    """A stable, well spread colour per job id (golden-ratio hues)."""
    ids = job_ids.astype(np.float64)
    hue = (ids * 0.618033988749895) % 1.0
    saturation = 0.50 + 0.15 * (job_ids % 3)
    value = 0.92 - 0.12 * (job_ids % 2)
    return hsv_to_rgb(np.stack([hue, saturation, value], axis=-1))


def node_grid_image(model: HPCModel, owner: np.ndarray | None = None) -> np.ndarray:
    """RGB picture ``(rows, columns, 3)`` of the platform now, one pixel per cell
    (``owner``: its ``cell_owners`` when already computed)."""
    geometry = grid_geometry(model.platform)
    owner = cell_owners(model) if owner is None else owner
    rgb = np.empty(owner.shape + (3,))
    rgb[:] = BACKGROUND
    for resource, colour in FREE_COLOURS.items():
        rgb[(geometry.kind == resource) & (owner == FREE)] = colour
    busy = owner > 0
    if busy.any():
        ids, inverse = np.unique(owner[busy], return_inverse=True)
        rgb[busy] = job_colours(ids)[inverse]
    return tile_nodes(geometry, rgb, BACKGROUND)


def resumed_cells(model: HPCModel, owner: np.ndarray) -> np.ndarray:
    """Per node cell: runs a job that was held before (in ``owner``'s layout)."""
    resumed = [r.job.job_id for r in model.running_by_end if _hold_count(model, r.job.job_id)]
    return np.isin(owner, resumed) if resumed else np.zeros(owner.shape, dtype=bool)


def tile_nodes(geometry: GridGeometry, per_node: np.ndarray, background: object) -> np.ndarray:
    """Arrange ``(n_nodes, node_width, ...)`` rows into the picture's blocks."""
    rest = per_node.shape[2:]
    slots = geometry.blocks * geometry.rows
    padded = np.empty((slots, geometry.node_width, *rest), dtype=per_node.dtype)
    padded[:] = background
    padded[:len(per_node)] = per_node
    picture = np.empty((geometry.rows, geometry.blocks, geometry.node_width + 1, *rest),
                       dtype=per_node.dtype)
    picture[:] = background
    picture[:, :, 1:] = padded.reshape(geometry.blocks, geometry.rows, geometry.node_width, *rest).swapaxes(0, 1)
    return picture.reshape(geometry.rows, -1, *rest)


def _hold_count(model: HPCModel, job_id: int) -> int:
    agent = model.job_agents.get(job_id)
    return agent.hold_count if agent is not None else 0


def held_nodes(model: HPCModel) -> list[int]:
    """Nodes that held jobs, now waiting to resume, last ran on."""
    nodes: set[int] = set()
    for agent in list(model.job_agents.values()):
        if agent.status is JobStatus.HELD and agent.last_allocation:
            nodes.update(node for node, _ in agent.last_allocation)
    return sorted(nodes)


def node_grid_pixels(model: HPCModel, selected: int | None = None) -> np.ndarray:
    """The node grid as a ``uint8`` RGB picture: cells of ``scale`` pixels with white
    borders, a label strip, jobs resumed after a hold hatched, a red cross left of nodes
    whose held jobs wait to resume, the selected job outlined in black."""
    geometry = grid_geometry(model.platform)
    owner = cell_owners(model)
    cells = node_grid_image(model, owner)
    columns = cells.shape[1]
    scale = int(min(MAX_CELL, max(1, MAX_WIDTH // columns)))
    body = np.repeat(np.repeat((cells * 255).astype(np.uint8), scale, 0), scale, 1)
    resumed = tile_nodes(geometry, resumed_cells(model, owner), False)
    if resumed.any():
        hatch = np.repeat(np.repeat(resumed, scale, 0), scale, 1)
        rows, columns = np.indices(hatch.shape)
        hatch &= (rows + columns) % max(3, scale // 2) < max(1, scale // 7)
        body[hatch] = (body[hatch] * 0.45).astype(np.uint8)
    if scale >= 4:
        body[scale - 1::scale, :] = 255
        body[:, scale - 1::scale] = 255
    for node in held_nodes(model):
        row, column = geometry.cell(node)
        _cross(body, row * scale, (column - 1) * scale, scale)
    if selected and scale >= 4:
        mask = owner == selected
        for index in np.nonzero(mask.any(axis=1))[0]:
            row, column = geometry.cell(int(index))
            used = np.nonzero(mask[index])[0]
            _frame(body, row * scale, (column + used[0]) * scale, scale,
                   (used[-1] - used[0] + 1) * scale)
    picture = np.full((LABEL_HEIGHT + body.shape[0], body.shape[1], 3), 255, dtype=np.uint8)
    picture[LABEL_HEIGHT:] = body
    return _label(picture, model.platform.n_nodes, geometry, scale)



def _cross(body: np.ndarray, top: int, left: int, size: int) -> None:
    span = np.arange(size)
    colour = np.array([214, 39, 40], dtype=np.uint8)
    body[top + span, left + span] = colour
    body[top + span, left + size - 1 - span] = colour


def _frame(body: np.ndarray, top: int, left: int, height: int, width: int) -> None:
    thick = 2 if height >= 6 else 1
    body[top:top + thick, left:left + width] = 0
    body[top + height - thick:top + height, left:left + width] = 0
    body[top:top + height, left:left + thick] = 0
    body[top:top + height, left + width - thick:left + width] = 0


@lru_cache(maxsize=1)
def _font():  # type: ignore[no-untyped-def]
    from PIL import ImageFont

    return ImageFont.load_default(size=13)


def _label(picture: np.ndarray, n_nodes: int, geometry: GridGeometry, scale: int) -> np.ndarray:
    """Write each block's first node (and GPU/MIC over those cells) where there is room."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(picture)
    draw = ImageDraw.Draw(image)
    free_from = 0.0
    for block in range(geometry.blocks):
        first = block * geometry.rows
        if first >= n_nodes:
            break
        x = (block * (geometry.node_width + 1) + 1) * scale
        labels = [(x, f"nodes {first}-{min(first + geometry.rows, n_nodes) - 1}", (40, 40, 40))]
        kinds = geometry.kind[first:first + geometry.rows]
        labels += [(x + geometry.offsets[resource] * scale, name, (90, 90, 90))
                   for resource, name in ((GPUS, "GPU"), (MICS, "MIC")) if (kinds == resource).any()]
        if draw.textlength(labels[0][1], font=_font()) > (geometry.node_width + 1) * scale:
            labels = [(x, f"{first}", (40, 40, 40))]
        for left, text, colour in labels:
            if left >= free_from:
                draw.text((left, 2), text, fill=colour, font=_font())
                free_from = left + draw.textlength(text, font=_font()) + 6
    return np.asarray(image)


def png_bytes(pixels: np.ndarray) -> bytes:
    """Encode an RGB picture as PNG (fast compression: it is redrawn every step)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="png", compress_level=1)
    return buffer.getvalue()
