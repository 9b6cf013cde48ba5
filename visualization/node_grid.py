"""The node grid: one row of cells per node, coloured by the job on each cell.

A node row holds its cores, then (where its type has them) its GPUs and MICs after a
gap. Each node type (a partition: Curie's thin, fat and hybrid nodes) is a labelled
section of its own, as wide as that type's node; within a section nodes are tiled top to
bottom in blocks side by side, and every section has the same number of rows, chosen so
the picture keeps a screen-like aspect. A cell's colour is the job on it (a stable
colour per job id); cells are filled in the order jobs started, a picture of the
allocation counts, not of core affinity (the model does not track core indices). Drawn
with numpy and encoded with Pillow, no matplotlib: it is redrawn every step. No solara
here, so the benchmark and the tests build the same picture.
"""

from __future__ import annotations

import io
import itertools

import numpy as np
from matplotlib.colors import hsv_to_rgb

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import JobStatus
from market_hpc.domain.resources import CORES, GPUS, MICS
from visualization.grid_layout import (
    ABSENT,
    LABEL_HEIGHT,
    GridGeometry,
    Scale,
    add_labels,
    band_of_nodes,
    grid_geometry,
    picture_scale,
    tile_nodes,
)
from visualization.node_bins import binned_cells, slim_markers, view_geometry

__all__ = ["GridGeometry", "cell_owners", "grid_geometry", "node_grid_pixels", "png_bytes", "tile_nodes"]

FREE = 0
BACKGROUND = (1.0, 1.0, 1.0)
# Queue partitions and the hybrid pool: the marker cell left of each node row (and the
# legend under the grid) in these colours, in band order (``panels.queue_bands``).
BAND_COLOURS = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (148, 103, 189), (140, 86, 75),
                (227, 119, 194), (188, 189, 34), (23, 190, 207))
FREE_COLOURS = {CORES: (0.90, 0.91, 0.93), GPUS: (0.84, 0.91, 0.98), MICS: (0.98, 0.90, 0.82)}


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
    lengths = np.fromiter((len(r.allocation) for r in running), dtype=np.int64, count=len(running))
    pairs = np.fromiter(itertools.chain.from_iterable(itertools.chain.from_iterable(r.allocation for r in running)),
                        dtype=np.int64, count=2 * int(lengths.sum())).reshape(-1, 2)
    node_ids = pairs[:, 0]
    job_ids = np.repeat(np.fromiter((r.job.job_id for r in running), dtype=np.int64, count=len(running)), lengths)
    if model.exclusive:  # a node-exclusive job holds its nodes' whole capacity
        amounts = model.platform.capacity[node_ids]
    else:
        unit_vectors = np.asarray([r.job.unit for r in running], dtype=np.int64)
        amounts = pairs[:, 1:2] * np.repeat(unit_vectors, lengths, axis=0)
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


_FIXED = 4  # palette codes: 0 background, 1-3 free core/GPU/MIC cell, then one per job


def cell_codes(model: HPCModel, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Palette index of each cell of ``owner``, the ``uint8`` palette, and which codes
    are jobs resumed after a hold: colours are looked up once per job, not per cell."""
    geometry = grid_geometry(model.platform)
    ids = np.unique(np.fromiter((r.job.job_id for r in model.running_by_end), dtype=np.int64))
    codes = np.zeros(owner.shape, dtype=np.int32)
    for resource in FREE_COLOURS:
        codes[(geometry.kind == resource) & (owner == FREE)] = 1 + resource
    busy = owner > 0
    codes[busy] = _FIXED + np.searchsorted(ids, owner[busy])
    palette = np.empty((_FIXED + len(ids), 3))
    palette[0] = BACKGROUND
    for resource, colour in FREE_COLOURS.items():
        palette[1 + resource] = colour
    palette[_FIXED:] = job_colours(ids)
    resumed = np.zeros(len(palette), dtype=bool)
    resumed[_FIXED:] = [_hold_count(model, int(job_id)) > 0 for job_id in ids]
    return codes, (palette * 255).astype(np.uint8), resumed


def node_grid_image(model: HPCModel, owner: np.ndarray | None = None) -> np.ndarray:
    """RGB picture ``(rows, columns, 3)`` of the platform now, one pixel per cell
    (``owner``: its ``cell_owners`` when already computed)."""
    geometry = grid_geometry(model.platform)
    owner = cell_owners(model) if owner is None else owner
    codes, palette, _ = cell_codes(model, owner)
    return palette[tile_nodes(geometry, codes, 0)] / 255.0


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
    """The node grid as a ``uint8`` RGB picture: cells with white borders when they are
    large enough, two label lines (node types, node ranges), jobs resumed after a hold
    hatched, a red cross left of nodes whose held jobs wait to resume, the selected job
    outlined in black. A large platform is binned (``node_bins``): one cell per group of
    nodes, coloured by its busy share; resumed jobs are not hatched there."""
    from visualization.panels import queue_bands

    bands = queue_bands(model)
    geometry = view_geometry(model.platform, (edge for _, lo, hi in bands for edge in (lo, hi)))
    scale = picture_scale(geometry)
    rows_of, columns_of = scale.index(geometry.rows), scale.index(geometry.columns)
    band = band_of_nodes(model.platform.n_nodes, bands)[geometry.bounds[:-1]] if bands else None
    frames: list[tuple[int, int, int]] = []  # slot, first and last column of the selected job
    if geometry.group > 1:
        cells = binned_cells(geometry, model.platform.capacity - model.free, model.platform.capacity)
        markers = None if band is None else np.where(  # band colour, white outside every band
            (band >= 0)[:, None], np.asarray(BAND_COLOURS)[band % len(BAND_COLOURS)], 255).astype(np.uint8)
        body = tile_nodes(geometry, cells, 255, markers)[rows_of][:, columns_of]
        slim_markers(body, geometry, scale.factor)
        agent = model.job_agents.get(selected) if selected else None
        if agent is not None and agent.running is not None:
            last = max(geometry.offsets[r] for r in geometry.offsets if agent.job.unit[r])
            frames = [(slot, 0, last) for slot in sorted({geometry.slot_of(n) for n, _ in agent.running.allocation})]
    else:
        owner = cell_owners(model)
        body = _job_cells(model, geometry, owner, band, scale, rows_of, columns_of)
        if selected:
            mask = owner == selected
            frames = [(int(node), int(np.nonzero(mask[node])[0][0]), int(np.nonzero(mask[node])[0][-1]))
                      for node in np.nonzero(mask.any(axis=1))[0]]
    if scale.factor >= 4:
        body[np.nonzero(np.diff(rows_of, append=-1))[0]] = 255
        body[:, np.nonzero(np.diff(columns_of, append=-1))[0]] = 255
    size = max(1, int(scale.factor))
    for slot in sorted({geometry.slot_of(node) for node in held_nodes(model)}):
        row, column = geometry.cell(slot)
        _cross(body, scale.px(row), scale.px(column - 1), size)
    if scale.factor >= 4:
        for slot, first_column, last_column in frames:
            row, first = geometry.cell(slot, first_column)
            _, last = geometry.cell(slot, last_column)
            _frame(body, scale.px(row), scale.px(first), size, scale.px(last + 1) - scale.px(first))
    picture = np.full((LABEL_HEIGHT + body.shape[0], body.shape[1], 3), 255, dtype=np.uint8)
    picture[LABEL_HEIGHT:] = body
    return add_labels(picture, geometry, scale)


def _job_cells(model: HPCModel, geometry: GridGeometry, owner: np.ndarray, band: np.ndarray | None,
               scale: Scale, rows_of: np.ndarray, columns_of: np.ndarray) -> np.ndarray:
    """The picture body of one row per node: each cell in its job's colour, the band
    colours in the marker cells, jobs resumed after a hold hatched."""
    codes, palette, resumed_codes = cell_codes(model, owner)
    markers = None
    if band is not None:  # marker cells in the band colours, appended to the palette
        markers = np.where(band >= 0, len(palette) + band % len(BAND_COLOURS), 0).astype(codes.dtype)
        palette = np.vstack([palette, np.asarray(BAND_COLOURS, dtype=np.uint8)])
        resumed_codes = np.r_[resumed_codes, np.zeros(len(BAND_COLOURS), dtype=bool)]
    pixel_codes = tile_nodes(geometry, codes, 0, markers)[rows_of][:, columns_of]
    body = palette[pixel_codes]
    if resumed_codes.any():
        hatch = resumed_codes[pixel_codes]
        rows, columns = np.indices(hatch.shape)
        size = max(1, int(scale.factor))
        hatch &= (rows + columns) % max(3, size // 2) < max(1, size // 7)
        body[hatch] = (body[hatch] * 0.45).astype(np.uint8)
    return body


def _cross(body: np.ndarray, top: int, left: int, size: int) -> None:
    span = np.arange(min(size, body.shape[0] - top))
    colour = np.array([214, 39, 40], dtype=np.uint8)
    body[top + span, left + span] = colour
    body[top + span, left + size - 1 - span] = colour


def _frame(body: np.ndarray, top: int, left: int, height: int, width: int) -> None:
    thick = 2 if height >= 6 else 1
    body[top:top + thick, left:left + width] = 0
    body[top + height - thick:top + height, left:left + width] = 0
    body[top:top + height, left:left + thick] = 0
    body[top:top + height, left + width - thick:left + width] = 0


def png_bytes(pixels: np.ndarray) -> bytes:
    """Encode an RGB picture as PNG (fast compression: it is redrawn every step)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="png", compress_level=1)
    return buffer.getvalue()
