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
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from matplotlib.colors import hsv_to_rgb

from market_hpc.domain.job import JobStatus
from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import CORES, GPUS, MICS
from market_hpc.model import HPCModel

ABSENT, FREE = -1, 0
BACKGROUND = (1.0, 1.0, 1.0)
FREE_COLOURS = {CORES: (0.90, 0.91, 0.93), GPUS: (0.84, 0.91, 0.98), MICS: (0.98, 0.90, 0.82)}
TARGET_ASPECT = 1.9  # width / height of the node-grid tile
MAX_WIDTH = 760  # pixels of the node-grid picture
MAX_HEIGHT = 400
MAX_CELL = 28
LABEL_LINE = 15
LABEL_HEIGHT = 2 * LABEL_LINE + 2
SECTION_GAP_PX = 8


@dataclass(frozen=True, eq=False)  # hashed by identity: cached per platform
class Section:
    """The nodes of one node type and where they go in the picture.

    Attributes:
        name: The node type's name.
        first: Its first node index.
        count: Its nodes.
        columns: Columns of the common node row (``GridGeometry.kind``) it shows, -1
            for a gap cell.
        blocks: Blocks of nodes side by side.
        left: Picture column of its first block's marker column.
        text: What the type is, for its label.
    """

    name: str
    first: int
    count: int
    columns: np.ndarray
    blocks: int
    left: int
    text: str

    @property
    def width(self) -> int:
        """Cells of one block: a marker column, then a node row."""
        return len(self.columns) + 1


@dataclass(frozen=True, eq=False)  # hashed by identity: cached per platform
class GridGeometry:
    """Where each node's cells are in the picture.

    Attributes:
        node_width: Cells of the common node row (cores, then gap + GPUs, gap + MICs).
        offsets: Column of the first core, GPU and MIC cell within the common row.
        rows: Node rows of every section.
        kind: ``(n_nodes, node_width)`` resource index of each cell, ``ABSENT`` for
            cells a node does not have.
        sections: One per node type, left to right.
        columns: Picture width in cells.
    """

    node_width: int
    offsets: dict[int, int]
    rows: int
    kind: np.ndarray
    sections: tuple[Section, ...]
    columns: int

    @property
    def shape(self) -> tuple[int, int]:
        """Picture size in cells."""
        return self.rows, self.columns

    def section_of(self, node: int) -> Section:
        """The section holding ``node``."""
        for section in self.sections:
            if node < section.first + section.count:
                return section
        raise IndexError(node)

    def cell(self, node: int, column: int = 0) -> tuple[int, int]:
        """Picture row and column of a node's cell ``column`` of the common row."""
        section = self.section_of(node)
        block, row = divmod(node - section.first, self.rows)
        position = int(np.nonzero(section.columns == column)[0][0]) if column else 0
        return row, section.left + block * section.width + 1 + position


def _type_columns(node_type, offsets: dict[int, int]) -> np.ndarray:  # type: ignore[no-untyped-def]
    columns: list[int] = list(range(node_type.cores))
    for resource, count in ((GPUS, node_type.gpus), (MICS, node_type.mics)):
        if count:
            columns += [-1, *range(offsets[resource], offsets[resource] + count)]
    return np.asarray(columns, dtype=np.int64)


def _type_text(node_type) -> str:  # type: ignore[no-untyped-def]
    extra = "".join(f" + {n} {name}" for n, name in ((node_type.gpus, "GPUs"), (node_type.mics, "MICs")) if n)
    return f"{node_type.name}: {node_type.count:,} x {node_type.cores} cores{extra}"


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
    types = [(t, _type_columns(t, offsets)) for t in platform.node_types]
    gap = 1 if len(types) > 1 else 0

    def picture_width(rows: int) -> int:
        return sum(math.ceil(t.count / rows) * (len(c) + 1) for t, c in types) + gap * (len(types) - 1)

    def cost(rows: int) -> float:  # off the tile's aspect, plus the share of empty node slots
        slots = sum(math.ceil(t.count / rows) * rows for t, _ in types)
        return abs(math.log(picture_width(rows) / rows / TARGET_ASPECT)) + (slots - n_nodes) / slots

    rows = min(range(1, max(t.count for t, _ in types) + 1), key=cost)
    sections, first, left = [], 0, 0
    for node_type, type_columns in types:
        blocks = math.ceil(node_type.count / rows)
        sections.append(Section(node_type.name, first, node_type.count, type_columns, blocks, left,
                                _type_text(node_type)))
        first += node_type.count
        left += blocks * (len(type_columns) + 1) + gap
    return GridGeometry(width, offsets, rows, kind, tuple(sections), left - gap)


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


def tile_nodes(geometry: GridGeometry, per_node: np.ndarray, background: object) -> np.ndarray:
    """Arrange ``(n_nodes, node_width, ...)`` rows into the picture's sections and blocks."""
    rest = per_node.shape[2:]
    picture = np.empty((geometry.rows, geometry.columns, *rest), dtype=per_node.dtype)
    picture[:] = background
    filler = np.empty((1, *rest), dtype=per_node.dtype)
    filler[:] = background
    for section in geometry.sections:
        rows = per_node[section.first:section.first + section.count]
        shown = rows[:, np.maximum(section.columns, 0)]
        shown[:, section.columns < 0] = filler
        slots = section.blocks * geometry.rows
        padded = np.empty((slots, len(section.columns), *rest), dtype=per_node.dtype)
        padded[:] = background
        padded[:section.count] = shown
        block = np.empty((geometry.rows, section.blocks, section.width, *rest), dtype=per_node.dtype)
        block[:] = background
        block[:, :, 1:] = padded.reshape(section.blocks, geometry.rows, len(section.columns), *rest).swapaxes(0, 1)
        right = section.left + section.blocks * section.width
        picture[:, section.left:right] = block.reshape(geometry.rows, -1, *rest)
    return picture


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


@dataclass(frozen=True)
class Scale:
    """Cell to pixel mapping: every cell ``factor`` pixels wide, rounded per cell."""

    factor: float

    def px(self, cell: int) -> int:
        """First pixel of a cell."""
        return math.floor(cell * self.factor + 1e-9)

    def index(self, cells: int) -> np.ndarray:
        """The cell each pixel of ``cells`` cells shows."""
        return (np.arange(self.px(cells)) / self.factor + 1e-9).astype(np.int64)


def picture_scale(geometry: GridGeometry) -> Scale:
    """Pixels per cell: as many as fit ``MAX_WIDTH`` x ``MAX_HEIGHT`` (a fraction when
    cells are many)."""
    return Scale(min(float(MAX_CELL), MAX_WIDTH / geometry.columns, MAX_HEIGHT / geometry.rows))


def node_grid_pixels(model: HPCModel, selected: int | None = None) -> np.ndarray:
    """The node grid as a ``uint8`` RGB picture: cells with white borders when they are
    large enough, two label lines (node types, node ranges), jobs resumed after a hold
    hatched, a red cross left of nodes whose held jobs wait to resume, the selected job
    outlined in black."""
    geometry = grid_geometry(model.platform)
    owner = cell_owners(model)
    codes, palette, resumed_codes = cell_codes(model, owner)
    scale = picture_scale(geometry)
    rows_of, columns_of = scale.index(geometry.rows), scale.index(geometry.columns)
    pixel_codes = tile_nodes(geometry, codes, 0)[rows_of][:, columns_of]
    body = palette[pixel_codes]
    if resumed_codes.any():
        hatch = resumed_codes[pixel_codes]
        rows, columns = np.indices(hatch.shape)
        size = max(1, int(scale.factor))
        hatch &= (rows + columns) % max(3, size // 2) < max(1, size // 7)
        body[hatch] = (body[hatch] * 0.45).astype(np.uint8)
    if scale.factor >= 4:
        body[np.nonzero(np.diff(rows_of, append=-1))[0]] = 255
        body[:, np.nonzero(np.diff(columns_of, append=-1))[0]] = 255
    size = max(1, int(scale.factor))
    for node in held_nodes(model):
        row, column = geometry.cell(node)
        _cross(body, scale.px(row), scale.px(column - 1), size)
    if selected and scale.factor >= 4:
        mask = owner == selected
        for index in np.nonzero(mask.any(axis=1))[0]:
            used = np.nonzero(mask[index])[0]
            row, first = geometry.cell(int(index), int(used[0]))
            _, last = geometry.cell(int(index), int(used[-1]))
            _frame(body, scale.px(row), scale.px(first), size, scale.px(last + 1) - scale.px(first))
    picture = np.full((LABEL_HEIGHT + body.shape[0], body.shape[1], 3), 255, dtype=np.uint8)
    picture[LABEL_HEIGHT:] = body
    return _label(picture, geometry, scale)


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


@lru_cache(maxsize=1)
def _font():  # type: ignore[no-untyped-def]
    from PIL import ImageFont

    return ImageFont.load_default(size=12)


@lru_cache(maxsize=16)
def _label_strip(geometry: GridGeometry, factor: float, width: int) -> np.ndarray:
    """The two label lines: node types (partitions) on top, node ranges and GPU/MIC
    columns below, each written only where it does not run into the previous one."""
    from PIL import Image, ImageDraw

    scale = Scale(factor)
    image = Image.new("RGB", (width, LABEL_HEIGHT), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    font = _font()
    free_from = [0.0, 0.0]

    def put(line: int, left: float, text: str, colour: tuple[int, int, int], limit: float) -> bool:
        size = draw.textlength(text, font=font)
        if left < free_from[line] or left + size > limit:
            return False
        draw.text((left, 1 + line * LABEL_LINE), text, fill=colour, font=font)
        free_from[line] = left + size + 8
        return True

    _section_labels(draw, geometry, scale, width)
    for section in geometry.sections:
        for block in range(section.blocks):
            first = section.first + block * geometry.rows
            last = min(first + geometry.rows, section.first + section.count) - 1
            x = scale.px(section.left + block * section.width + 1)
            block_right = scale.px(section.left + (block + 1) * section.width)
            labels = [f"nodes {first}-{last}", f"{first}-{last}", f"{first}"]
            if not any(put(1, x, text, (60, 60, 60), block_right + 4) for text in labels[:2]) and block == 0:
                put(1, x, labels[2], (60, 60, 60), width)
            for resource, name in ((GPUS, "GPU"), (MICS, "MIC")):
                where = np.nonzero(section.columns == geometry.offsets.get(resource, -2))[0]
                if len(where):
                    put(1, scale.px(section.left + block * section.width + 1 + int(where[0])), name,
                        (90, 90, 160), block_right + 4)
    return np.asarray(image)


def _section_labels(draw, geometry: GridGeometry, scale: Scale, width: int) -> None:  # type: ignore[no-untyped-def]
    """Each node type's name (with its shape where there is room) over its section,
    placed right to left so a narrow last section keeps its name."""
    font = _font()
    limit = float(width)
    for section in reversed(geometry.sections):
        left = scale.px(section.left)
        right = scale.px(section.left + section.blocks * section.width)
        draw.line([(left, LABEL_LINE - 2), (max(left, right - 2), LABEL_LINE - 2)], fill=(120, 120, 120))
        for text in (section.text, section.name):
            size = draw.textlength(text, font=font)
            start = min(float(left), limit - size)
            if start >= 0 and (start >= left - 40 or text == section.name):
                draw.text((start, 0), text, fill=(20, 20, 20), font=font)
                limit = start - 8
                break


def _label(picture: np.ndarray, geometry: GridGeometry, scale: Scale) -> np.ndarray:
    picture[:LABEL_HEIGHT] = _label_strip(geometry, scale.factor, picture.shape[1])
    return picture


def png_bytes(pixels: np.ndarray) -> bytes:
    """Encode an RGB picture as PNG (fast compression: it is redrawn every step)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="png", compress_level=1)
    return buffer.getvalue()
