"""Where the node grid's cells go: one section per node type, blocks of node rows, the
pixel scale and the two label lines (node types, node ranges and GPU/MIC columns).

No solara and no model here: a layout depends only on the platform, so it is computed
once per platform (cached) and the per-step drawing in ``node_grid`` only fills it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import CORES, GPUS, MICS

ABSENT = -1
TARGET_ASPECT = 1.9  # width / height of the node-grid tile
MAX_WIDTH = 760  # pixels of the node-grid picture
MAX_HEIGHT = 400
MAX_CELL = 28
LABEL_LINE = 15
LABEL_HEIGHT = 2 * LABEL_LINE + 2


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


def band_of_nodes(n_nodes: int, bands: list[tuple[str, int, int]]) -> np.ndarray:
    """Index of the band (queue partition, pool) each node is in, -1 for none; a later
    band wins where ranges overlap.

    >>> band_of_nodes(6, [("a", 0, 2), ("b", 2, 5), ("pool", 5, 6)]).tolist()
    [0, 0, 1, 1, 1, 2]
    """
    band = np.full(n_nodes, -1, dtype=np.int64)
    for index, (_, lo, hi) in enumerate(bands):
        band[max(0, lo):min(hi, n_nodes)] = index
    return band


def tile_nodes(geometry: GridGeometry, per_node: np.ndarray, background: object,
               markers: np.ndarray | None = None) -> np.ndarray:
    """Arrange ``(n_nodes, node_width, ...)`` rows into the picture's sections and blocks;
    ``markers`` (one value per node) fills each node's marker cell, left of its row."""
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
        if markers is not None:
            marks = np.empty((slots, *rest), dtype=per_node.dtype)
            marks[:] = background
            marks[:section.count] = markers[section.first:section.first + section.count]
            block[:, :, 0] = marks.reshape(section.blocks, geometry.rows, *rest).swapaxes(0, 1)
        block[:, :, 1:] = padded.reshape(section.blocks, geometry.rows, len(section.columns), *rest).swapaxes(0, 1)
        right = section.left + section.blocks * section.width
        picture[:, section.left:right] = block.reshape(geometry.rows, -1, *rest)
    return picture


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


def add_labels(picture: np.ndarray, geometry: GridGeometry, scale: Scale) -> np.ndarray:
    """Write the label strip into the top ``LABEL_HEIGHT`` rows of ``picture``."""
    picture[:LABEL_HEIGHT] = _label_strip(geometry, scale.factor, picture.shape[1])
    return picture
