"""How sweep-report figures look and are saved: distinct line styles, plain tick numbers
without overlaps, PNG plus SVG.

Decisions:
    * Numeric axes show plain numbers with thousands separators (``10,000,000``), never
      an offset or a power of ten in the corner (``1e7``): a reader copies a tick as it
      reads. ``save_figure`` applies this to every axis with matplotlib's default
      formatters, so every report figure gets it.
    * Tick labels of a numeric axis never overlap: ``save_figure`` draws the figure, and
      while two labels of an axis meet it asks that axis for fewer ticks (down to two).
      Category names on the x axis that meet are turned upright (90 degrees); names
      that meet even upright (more lines of text than a category has room) keep the
      caller's look (the report's tables list them).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from matplotlib import rc_context
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import (
    FuncFormatter,
    LogFormatter,
    LogLocator,
    MaxNLocator,
    ScalarFormatter,
)

_DASHES = ["-", "--", "-.", ":"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
TICK_GAP_PX = 2.0  # clearance between neighbouring tick labels


def series_look(index: int) -> dict[str, Any]:
    """Marker, dash style and marker size of the ``index``-th line, so lines with equal
    values stay visible under one another: a later line has a different dash and a
    smaller, different marker drawn on top of the earlier one's.

    >>> [(look["marker"], look["linestyle"]) for look in map(series_look, range(5))]
    [('o', '-'), ('s', '--'), ('^', '-.'), ('D', ':'), ('v', '-')]
    >>> len({(s["marker"], s["linestyle"]) for s in map(series_look, range(12))})
    12
    """
    return {
        "marker": _MARKERS[index % len(_MARKERS)],
        "linestyle": _DASHES[(index + index // len(_MARKERS)) % len(_DASHES)],
        "markersize": 8.0 - 3.0 * (index % 3) / 2,
        "markerfacecolor": "none" if index % 2 else None,
        "linewidth": 1.6,
    }


def tick_text(value: float) -> str:
    """A tick value with thousands separators and no exponent.

    >>> tick_text(600000.0), tick_text(6.95), tick_text(0.0), tick_text(2.5e-05)
    ('600,000', '6.95', '0', '0.000025')
    >>> tick_text(1e7), tick_text(-125000.0), tick_text(0.30000000000000004)
    ('10,000,000', '-125,000', '0.3')
    """
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = max(0, min(12, -math.floor(math.log10(abs(value))) + 3))
    return f"{value:,.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{value:,.0f}"


PLAIN_TICKS = FuncFormatter(lambda value, _: tick_text(value))


def plain_numbers(figure: Figure) -> None:
    """Give every axis of ``figure`` that uses a default number formatter plain tick
    numbers (module docstring); axes with their own formatter keep it."""
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            formatter = axis.get_major_formatter()
            if isinstance(formatter, ScalarFormatter) or (
                isinstance(formatter, LogFormatter)
                and isinstance(axis.get_major_locator(), LogLocator)
            ):
                axis.set_major_formatter(PLAIN_TICKS)


def _overlapping(axis: Axis, renderer: Any) -> bool:
    boxes = [
        label.get_window_extent(renderer)
        for tick in axis.get_major_ticks()
        for label in (tick.label1, tick.label2)
        if label.get_visible() and label.get_text()
    ]
    boxes = [box for box in boxes if box.width > 0]
    boxes.sort(key=lambda box: (box.x0, box.y0))
    return any(
        a.x0 - TICK_GAP_PX < b.x1
        and b.x0 - TICK_GAP_PX < a.x1
        and a.y0 - TICK_GAP_PX < b.y1
        and b.y0 - TICK_GAP_PX < a.y1
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
    )


def thin_ticks(figure: Figure) -> None:
    """Ask each numeric axis whose tick labels overlap for fewer ticks until they do not
    (module docstring); axes with fixed ticks (categories) are left as they are."""
    if not isinstance(figure.canvas, FigureCanvasAgg):
        FigureCanvasAgg(figure)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    figure.draw_without_rendering()
    for axes in figure.axes:
        if not isinstance(axes.xaxis.get_major_locator(), MaxNLocator) and _overlapping(
            axes.xaxis, renderer
        ):  # categories: upright names cannot be thinned, turn them
            labels = axes.get_xticklabels()
            before = [
                (t.get_rotation(), t.get_horizontalalignment(), t.get_rotation_mode())
                for t in labels
            ]
            for label in labels:
                label.set(rotation=90, horizontalalignment="center", rotation_mode="default")
            figure.draw_without_rendering()
            if _overlapping(axes.xaxis, renderer):  # no better upright: keep the caller's look
                for label, (rotation, align, mode) in zip(labels, before, strict=True):
                    label.set(rotation=rotation, horizontalalignment=align, rotation_mode=mode)
                figure.draw_without_rendering()
        for axis in (axes.xaxis, axes.yaxis):
            if not isinstance(axis.get_major_formatter(), FuncFormatter | ScalarFormatter):
                continue
            if axis.get_scale() != "linear" or not isinstance(
                axis.get_major_locator(), MaxNLocator
            ):
                continue
            bins = 8
            while bins >= 2 and _overlapping(axis, renderer):
                bins -= 1
                axis.set_major_locator(MaxNLocator(nbins=bins, steps=[1, 2, 2.5, 5, 10]))
                figure.draw_without_rendering()


def save_figure(figure: Figure, path: Path) -> Path:
    """Save ``path`` (PNG) and the same figure as SVG beside it, byte for byte repeatable
    (fixed SVG ids, no dates), with plain tick numbers that do not overlap (module
    docstring); return the PNG's path."""
    FigureCanvasAgg(figure)
    plain_numbers(figure)
    thin_ticks(figure)
    figure.savefig(path, dpi=120, metadata={"Software": None})
    with rc_context({"svg.hashsalt": "market-hpc", "svg.fonttype": "none"}):
        figure.savefig(path.with_suffix(".svg"), metadata={"Date": None, "Creator": None})
    return path
