"""Point labels that never overlap: a deterministic greedy placement for scatter charts.

Decisions:
    * Each label, in the caller's order, takes the first free spot of a ring search around
      its point: eight directions close to the marker, then rings of growing radius with
      more directions, out to the axes' diagonal. A spot is free when the label's box lies
      inside the axes and meets no label placed before and no point's marker. A label
      beside its marker (ring 0) must be nearer its own point than any other, so it is
      never read as a neighbour's; a label further out gets a thin leader line instead.
    * Placement is in display pixels of the frozen layout (``freeze_layout``: one draw
      with the figure's layout engine, then none), and each label is stored as an offset
      in points from its point, so saving at another dpi keeps the geometry.
    * No randomness and no iteration to convergence (unlike force-directed placers such
      as adjustText): the same chart gives the same picture, byte for byte.
    * A label with no free spot anywhere is not drawn over others: it is returned, and
      the caller names it elsewhere (``pareto_figures`` lists it under the panel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text

RINGS_PT = (3.0, 9.0, 16.0, 25.0, 36.0, 50.0, 68.0, 90.0)  # then every 24 pt
GAP_PX = 1.5  # clearance between a label and any other box


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in display pixels."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box, gap: float = 0.0) -> bool:
        """Whether the boxes, each grown by ``gap``, share any area.

        >>> Box(0, 0, 2, 2).overlaps(Box(1, 1, 3, 3)), Box(0, 0, 1, 1).overlaps(Box(2, 0, 3, 1))
        (True, False)
        >>> Box(0, 0, 1, 1).overlaps(Box(1.5, 0, 3, 1), gap=0.5)
        True
        """
        return (
            self.x0 - gap < other.x1 + gap
            and other.x0 - gap < self.x1 + gap
            and self.y0 - gap < other.y1 + gap
            and other.y0 - gap < self.y1 + gap
        )

    def distance(self, x: float, y: float) -> float:
        """Distance from the point ``(x, y)`` to the box (0 inside).

        >>> Box(0, 0, 2, 2).distance(5, 6), Box(0, 0, 2, 2).distance(1, 1)
        (5.0, 0.0)
        """
        return math.hypot(max(self.x0 - x, 0.0, x - self.x1), max(self.y0 - y, 0.0, y - self.y1))

    def nearest(self, x: float, y: float) -> tuple[float, float]:
        """The point of the box nearest ``(x, y)``."""
        return min(max(x, self.x0), self.x1), min(max(y, self.y0), self.y1)

    def crosses(self, x0: float, y0: float, x1: float, y1: float) -> bool:
        """Whether the segment from ``(x0, y0)`` to ``(x1, y1)`` passes through the box's
        interior, half a pixel in from its edges (Liang-Barsky clipping).

        >>> Box(0, 0, 2, 2).crosses(-1, 1, 3, 1), Box(0, 0, 2, 2).crosses(-1, 3, 3, 3)
        (True, False)
        >>> Box(0, 0, 2, 2).crosses(-1, 1, 0, 1)  # ends on the edge
        False
        """
        low, high = 0.0, 1.0
        dx, dy = x1 - x0, y1 - y0
        for step, gap in (
            (-dx, x0 - self.x0 - 0.5),
            (dx, self.x1 - 0.5 - x0),
            (-dy, y0 - self.y0 - 0.5),
            (dy, self.y1 - 0.5 - y0),
        ):
            if step == 0:
                if gap < 0:
                    return False
                continue
            ratio = gap / step
            if step < 0:
                low = max(low, ratio)
            else:
                high = min(high, ratio)
            if low > high:
                return False
        return high - low > 1e-9

    def inside(self, other: Box) -> bool:
        """Whether this box lies within ``other``."""
        return (
            self.x0 >= other.x0
            and self.x1 <= other.x1
            and self.y0 >= other.y0
            and self.y1 <= other.y1
        )


def freeze_layout(figure: Figure) -> None:
    """Run the figure's layout engine once and keep its positions (no engine afterwards),
    so boxes measured now are the boxes saved."""
    if not isinstance(figure.canvas, FigureCanvasAgg):
        FigureCanvasAgg(figure)
    figure.draw_without_rendering()
    figure.set_layout_engine("none")


def _directions(ring: int) -> list[tuple[float, float]]:
    count = 8 if ring < 3 else 16 if ring < 8 else 32
    # upper right first: the eye reads a label there as its point's
    angles = [math.pi / 4 + 2 * math.pi * k / count for k in range(count)]
    return [(math.cos(a), math.sin(a)) for a in angles]


def _box_at(
    anchor: tuple[float, float], direction: tuple[float, float], width: float, height: float
) -> tuple[Box, str, str]:
    """The label box whose side facing the point sits at ``anchor``, and its alignment."""
    dx, dy = direction
    ha = "left" if dx > 0.3 else "right" if dx < -0.3 else "center"
    va = "bottom" if dy > 0.3 else "top" if dy < -0.3 else "center"
    x, y = anchor
    x0 = x if ha == "left" else x - width if ha == "right" else x - width / 2
    y0 = y if va == "bottom" else y - height if va == "top" else y - height / 2
    return Box(x0, y0, x0 + width, y0 + height), ha, va


def place_labels(
    axes: Axes,
    xs: Sequence[float],
    ys: Sequence[float],
    labels: Sequence[str],
    fontsize: float = 7.5,
    marker_pt: float = 4.0,
) -> list[str]:
    """Annotate each point ``(xs[i], ys[i])`` of ``axes`` with ``labels[i]``, no two
    labels overlapping, none over a marker, all inside the axes (module docstring).

    Call after the axes' limits and scales are final and ``freeze_layout`` ran.

    Args:
        axes: The axes holding the points.
        xs: Data x of each point.
        ys: Data y of each point.
        labels: Text of each point, placed in this order (put the important ones first).
        fontsize: Label size in points.
        marker_pt: Half the side of the box kept free around every point, in points.

    Returns:
        The labels that found no free spot (not drawn).
    """
    figure = axes.get_figure()
    assert isinstance(figure, Figure)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    to_px = figure.dpi / 72.0
    frame = axes.get_window_extent(renderer)
    area = Box(frame.x0 + 2, frame.y0 + 2, frame.x1 - 2, frame.y1 - 2)
    points = [tuple(axes.transData.transform((x, y))) for x, y in zip(xs, ys)]
    half = marker_pt * to_px
    taken = [Box(px - half, py - half, px + half, py + half) for px, py in points]
    leaders: list[tuple[float, float, float, float]] = []
    unplaced = []
    for (px, py), x, y, label in zip(points, xs, ys, labels):
        probe = axes.text(0, 0, label, fontsize=fontsize)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        others = [point for point in points if point != (px, py)]
        spot = _first_free(
            px,
            py,
            extent.width,
            extent.height,
            half,
            to_px,
            area,
            taken,
            len(points),
            others,
            leaders,
        )
        if spot is None:
            unplaced.append(label)
            continue
        box, ha, va, ring = spot
        taken.append(box)
        if ring > 0:
            leaders.append((px, py, *box.nearest(px, py)))
        anchor = {"left": box.x0, "right": box.x1, "center": (box.x0 + box.x1) / 2}[ha]
        anchor_y = {"bottom": box.y0, "top": box.y1, "center": (box.y0 + box.y1) / 2}[va]
        leader = (
            {
                "arrowstyle": "-",
                "color": "#9a9a9a",
                "linewidth": 0.6,
                "shrinkA": 0.0,
                "shrinkB": marker_pt,
            }
            if ring > 0
            else None
        )
        axes.annotate(
            label,
            (x, y),
            xytext=((anchor - px) / to_px, (anchor_y - py) / to_px),
            textcoords="offset points",
            ha=ha,
            va=va,
            fontsize=fontsize,
            arrowprops=leader,
            annotation_clip=False,
        )
    return unplaced


def _radii(area: Box, to_px: float) -> list[float]:
    """Ring radii in pixels: close rings first, then every 24 pt out to the diagonal."""
    reach = math.hypot(area.x1 - area.x0, area.y1 - area.y0)
    radii = [r * to_px for r in RINGS_PT]
    while radii[-1] < reach:
        radii.append(radii[-1] + 24.0 * to_px)
    return radii


def _first_free(
    px: float,
    py: float,
    width: float,
    height: float,
    half: float,
    to_px: float,
    area: Box,
    taken: Sequence[Box],
    markers: int,
    others: Sequence[tuple[float, float]],
    leaders: Sequence[tuple[float, float, float, float]],
) -> tuple[Box, str, str, int] | None:
    """The first free spot (module docstring); ``taken`` holds the ``markers`` markers'
    boxes, then the labels placed so far. Leader lines crossing labels are avoided where
    any spot allows it, else allowed (a label over another never is)."""
    for strict in (True, False):
        spot = _search(
            px, py, width, height, half, to_px, area, taken, markers, others, leaders, strict
        )
        if spot is not None:
            return spot
    return None


def _search(
    px: float,
    py: float,
    width: float,
    height: float,
    half: float,
    to_px: float,
    area: Box,
    taken: Sequence[Box],
    markers: int,
    others: Sequence[tuple[float, float]],
    leaders: Sequence[tuple[float, float, float, float]],
    strict: bool,
) -> tuple[Box, str, str, int] | None:
    for ring, radius in enumerate(_radii(area, to_px)):
        distance = half + radius
        for dx, dy in _directions(ring):
            reach = distance / max(abs(dx), abs(dy))  # on a square around the marker's box
            box, ha, va = _box_at((px + dx * reach, py + dy * reach), (dx, dy), width, height)
            if not box.inside(area) or any(box.overlaps(other, GAP_PX) for other in taken):
                continue
            if strict and any(box.crosses(*leader) for leader in leaders):
                continue
            # without a leader line, the label must sit nearer its own point than any other
            if ring == 0 and any(box.distance(qx, qy) <= box.distance(px, py) for qx, qy in others):
                continue
            leader = (px, py, *box.nearest(px, py))
            if strict and ring > 0 and any(other.crosses(*leader) for other in taken[markers:]):
                continue  # a leader line through another label would hide it
            return box, ha, va, ring
    return None


def label_boxes(axes: Axes) -> list[Box]:
    """The display boxes of the axes' annotations' texts after a draw (for checks and tests)."""
    figure = axes.get_figure()
    assert isinstance(figure, Figure)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = []
    for child in axes.get_children():
        if isinstance(child, Annotation):
            extent = Text.get_window_extent(child, renderer)  # the text alone, not its leader line
            boxes.append(Box(extent.x0, extent.y0, extent.x1, extent.y1))
    return boxes


__all__ = ["Box", "freeze_layout", "label_boxes", "place_labels"]
