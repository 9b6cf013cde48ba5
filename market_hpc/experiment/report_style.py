"""How sweep-report figures look and are saved: distinct line styles, PNG plus SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

_DASHES = ["-", "--", "-.", ":"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def series_look(index: int) -> dict[str, Any]:
    """Marker, dash style and marker size of the ``index``-th line, so lines with equal
    values stay visible under one another: a later line has a different dash and a
    smaller, different marker drawn on top of the earlier one's.

    >>> [(look["marker"], look["linestyle"]) for look in map(series_look, range(5))]
    [('o', '-'), ('s', '--'), ('^', '-.'), ('D', ':'), ('v', '-')]
    >>> len({(s["marker"], s["linestyle"]) for s in map(series_look, range(12))})
    12
    """
    return {"marker": _MARKERS[index % len(_MARKERS)], "linestyle": _DASHES[(index + index // len(_MARKERS)) % len(_DASHES)],
            "markersize": 8.0 - 3.0 * (index % 3) / 2, "markerfacecolor": "none" if index % 2 else None,
            "linewidth": 1.6}


def save_figure(figure: Figure, path: Path) -> Path:
    """Save ``path`` (PNG) and the same figure as SVG beside it, byte for byte repeatable
    (fixed SVG ids, no dates); return the PNG's path."""
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=120, metadata={"Software": None})
    with rc_context({"svg.hashsalt": "market-hpc", "svg.fonttype": "none"}):
        figure.savefig(path.with_suffix(".svg"), metadata={"Date": None, "Creator": None})
    return path
