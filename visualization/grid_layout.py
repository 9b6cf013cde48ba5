"""Where the node grid's cells go: one section per node type, blocks of node rows, the
pixel scale and the two label lines (node types, node ranges and GPU/MIC columns).

No solara and no model here: a layout depends only on the platform, so it is computed
once per platform (cached) and the per-step drawing in ``node_grid`` only fills it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
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
    """Where each slot's cells are in the picture. A slot is one node, or (binned, see
    ``node_bins``) a group of ``group`` consecutive nodes of one type drawn as one cell
    per resource.

    Attributes:
        node_width: Cells of the common slot row (cores, then gap + GPUs, gap + MICs).
        offsets: Column of the first core, GPU and MIC cell within the common row.
        rows: Slot rows of every section.
        kind: ``(n_slots, node_width)`` resource index of each cell, ``ABSENT`` for
            cells a slot does not have.
        sections: One per node type, left to right (``first``/``count`` in slots).
        columns: Picture width in cells.
        bounds: ``(n_slots + 1,)`` first node of each slot, then the node count.
        group: Nodes per slot (1: one row per node; the last slots of a type, or of a
            queue partition, may hold fewer).
    """

    node_width: int
    offsets: dict[int, int]
    rows: int
    kind: np.ndarray
    sections: tuple[Section, ...]
    columns: int
    bounds: np.ndarray
    group: int = 1

    @property
    def shape(self) -> tuple[int, int]:
        """Picture size in cells."""
        return self.rows, self.columns

    def section_of(self, slot: int) -> Section:
        """The section holding ``slot``."""
        for section in self.sections:
            if slot < section.first + section.count:
                return section
        raise IndexError(slot)

    def slot_of(self, node: int) -> int:
        """The slot drawing ``node``."""
        return int(np.searchsorted(self.bounds, node, side="right")) - 1

    def node_range(self, first_slot: int, last_slot: int) -> tuple[int, int]:
        """First and last node of the slots ``first_slot``..``last_slot``."""
        return int(self.bounds[first_slot]), int(self.bounds[last_slot + 1]) - 1

    def cell(self, slot: int, column: int = 0) -> tuple[int, int]:
        """Picture row and column of a slot's cell ``column`` of the common row."""
        section = self.section_of(slot)
        block, row = divmod(slot - section.first, self.rows)
        position = int(np.nonzero(section.columns == column)[0][0]) if column else 0
        return row, section.left + block * section.width + 1 + position


def _type_columns(node_type, offsets: dict[int, int]) -> np.ndarray:  # type: ignore[no-untyped-def]
    columns: list[int] = list(range(node_type.cores))
    for resource, count in ((GPUS, node_type.gpus), (MICS, node_type.mics)):
        if count:
            columns += [-1, *range(offsets[resource], offsets[resource] + count)]
    return np.asarray(columns, dtype=np.int64)


def type_text(node_type) -> str:  # type: ignore[no-untyped-def]
    """What a node type is, for its section label (``thin: 5,040 x 16 cores``)."""
    extra = "".join(f" + {n} {name}" for n, name in ((node_type.gpus, "GPUs"), (node_type.mics, "MICs")) if n)
    return f"{node_type.name}: {node_type.count:,} x {node_type.cores} cores{extra}"


@lru_cache(maxsize=16)
def grid_geometry(platform: Platform) -> GridGeometry:
    """Lay a platform's nodes out, one row per node (cached per platform)."""
    capacity = platform.capacity
    offsets = {CORES: 0}
    width = int(capacity[:, CORES].max())
    for resource in (GPUS, MICS):
        most = int(capacity[:, resource].max())
        if most:
            offsets[resource] = width + 1
            width += 1 + most
    kind = np.full((platform.n_nodes, width), ABSENT, dtype=np.int8)
    columns = np.arange(width)
    for resource, offset in offsets.items():
        present = (columns >= offset) & (columns < offset + capacity[:, resource][:, None])
        kind[present] = resource
    types = [(t.name, t.count, _type_columns(t, offsets), type_text(t)) for t in platform.node_types]
    return arrange(types, width, offsets, kind, np.arange(platform.n_nodes + 1))


def arrange(types: list[tuple[str, int, np.ndarray, str]], width: int, offsets: dict[int, int],
            kind: np.ndarray, bounds: np.ndarray, group: int = 1) -> GridGeometry:
    """Place ``types`` (name, slots, columns of the common row, label) side by side in
    blocks of one common number of rows, chosen for the tile's aspect with few empty slots."""
    gap = 1 if len(types) > 1 else 0

    def picture_width(rows: int) -> int:
        return sum(math.ceil(count / rows) * (len(c) + 1) for _, count, c, _ in types) + gap * (len(types) - 1)

    def cost(rows: int) -> float:  # off the tile's aspect, plus the share of empty slots
        slots = sum(math.ceil(count / rows) * rows for _, count, _, _ in types)
        return abs(math.log(picture_width(rows) / rows / TARGET_ASPECT)) + (slots - len(kind)) / slots

    rows = min(range(1, max(count for _, count, _, _ in types) + 1), key=cost)
    sections, first, left = [], 0, 0
    for name, count, type_columns, text in types:
        blocks = math.ceil(count / rows)
        sections.append(Section(name, first, count, type_columns, blocks, left, text))
        first += count
        left += blocks * (len(type_columns) + 1) + gap
    return GridGeometry(width, offsets, rows, kind, tuple(sections), left - gap, bounds, group)


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
    if geometry.group > 1:
        for x, text in first_node_labels(geometry, scale, width, lambda t: draw.textlength(t, font=font)):
            draw.text((x, 1 + LABEL_LINE), text, fill=(60, 60, 60), font=font)
        return np.asarray(image)
    for section in geometry.sections:
        for block in range(section.blocks):
            first, last = geometry.node_range(section.first + block * geometry.rows,
                                              min((block + 1) * geometry.rows, section.count) + section.first - 1)
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


def first_node_labels(geometry: GridGeometry, scale: Scale, width: int,
                      measure: Callable[[str], float], spacing: float = 8.0) -> list[tuple[float, str]]:
    """Where the first node of each column of a binned grid is written: ``(x, text)``,
    each node type's first column first, then the others left to right, each only where
    it keeps ``spacing`` pixels from every label already placed (moved left to fit the
    width).

    >>> geometry = arrange([("a", 6, np.array([0]), "a"), ("b", 2, np.array([0]), "b")], 1,
    ...                    {0: 0}, np.zeros((8, 1)), np.array([0, 4, 8, 12, 16, 20, 24, 26, 28]), 4)
    >>> geometry.rows, [s.left for s in geometry.sections]   # columns a: 0-2, 3-5; b: 6-7
    (3, [0, 5])
    >>> first_node_labels(geometry, Scale(10.0), 90, lambda text: 6.0 * len(text))
    [(10, '0'), (60, '24'), (30, '12')]
    >>> first_node_labels(geometry, Scale(5.0), 90, lambda text: 6.0 * len(text))  # 12 would touch 0
    [(5, '0'), (30, '24')]
    >>> first_node_labels(geometry, Scale(10.0), 66, lambda text: 6.0 * len(text))  # 24 moves left
    [(10, '0'), (54.0, '24'), (30, '12')]
    """
    candidates = []
    for section in geometry.sections:
        for block in range(section.blocks):
            first, _ = geometry.node_range(section.first + block * geometry.rows, section.first + block * geometry.rows)
            candidates.append((block > 0, scale.px(section.left + block * section.width + 1), f"{first:,}"))
    placed: list[tuple[float, str]] = []
    taken: list[tuple[float, float]] = []
    for _, at, text in sorted(candidates, key=lambda c: (c[0], c[1])):
        x = min(at, width - measure(text))  # the last column's label moves left to fit
        right = x + measure(text)
        if x >= 0 and all(right + spacing <= lo or x >= hi + spacing for lo, hi in taken):
            placed.append((x, text))
            taken.append((x, right))
    return placed


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
