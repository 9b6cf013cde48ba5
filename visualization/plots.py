"""Vector plots of a running model as SVG text: the time series and a job's value curve.

Matplotlib took ~120 ms per step to redraw four panels on Curie (the browser then
decoded a new PNG); these plots are a few polylines written with numpy, ~1-3 ms, drawn
by the browser as vectors. Samples are copied into a growing array incrementally, and a
line keeps at most ``MAX_POINTS`` vertices (evenly picked, the newest always kept), so a
step costs the same at step 10 and step 10,000. The x range ends a margin after the
newest sample, which is marked with a dot: the newest step is never on the border. No
solara here, so the benchmark and tests build the same plots.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import CORES, GPUS, MICS
from market_hpc.core.model import HPCModel
from market_hpc.core.recorder import TIMESERIES_COLUMNS

_COLUMN = {name: index for index, name in enumerate(TIMESERIES_COLUMNS)}
MAX_POINTS = 400
RIGHT_MARGIN = 0.04  # share of the time span left free after the newest sample
FONT = "font-family='sans-serif'"
TITLE_GAP = 7  # title and legend baseline above the plot area


def legend_width(label: str) -> int:
    """Width of one legend entry (swatch, label, space), generous for a 10 px sans-serif.

    >>> legend_width("running")
    65
    """
    return 7 * len(label) + 16


def time_axis(times: np.ndarray, unit: str) -> tuple[np.ndarray, str]:
    """Times in a readable unit for an axis: seconds become min, h or days as they grow.

    >>> time_axis(np.array([0.0, 7200.0 * 3]), "s")[1]
    'time (h)'
    """
    if unit != "s":
        return times, f"time ({unit})"
    span = float(times[-1]) if len(times) else 0.0
    for limit, scale, name in ((120.0, 1.0, "s"), (7200.0, 60.0, "min"), (3 * 86400.0, 3600.0, "h")):
        if span <= limit:
            return times / scale, f"time ({name})"
    return times / 86400.0, "time (days)"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]``.

    >>> nice_ticks(0.0, 97.0)
    [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    """
    span = high - low if high > low else 1.0
    raw = span / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)
    first = math.floor(low / step) * step
    return [round(first + i * step, 10) for i in range(math.ceil((high - first) / step - 1e-9) + 1)]


def tick_labels(ticks: list[float]) -> list[str]:
    """Labels of one axis's ticks: one scale (k, M) and the fewest decimals that keep every
    tick exact, so neighbouring ticks never read the same.

    >>> tick_labels([366.4, 366.45, 366.5])
    ['366.40', '366.45', '366.50']
    >>> tick_labels([0.0, 12500.0, 25000.0]), tick_labels([0.0, 2e6, 4e6])
    (['0', '12.5k', '25k'], ['0', '2M', '4M'])
    """
    if not ticks:
        return []
    biggest = max(abs(t) for t in ticks)
    scale, suffix = (1e6, "M") if biggest >= 1e6 else (1e3, "k") if biggest >= 1e4 else (1.0, "")
    values = [t / scale for t in ticks]
    for decimals in range(7):
        labels = [f"{v:.{decimals}f}" for v in values]
        if all(abs(float(label) - v) <= 1e-9 * max(1.0, abs(v)) for label, v in zip(labels, values)):
            break
    if suffix:  # 12.5k and 25k rather than 12.5k and 25.0k
        labels = [label.rstrip("0").rstrip(".") if "." in label else label for label in labels]
    return [label + suffix if float(label) else "0" for label in labels] if suffix else labels


def _ticks_with_labels(ticks: list[float]) -> list[tuple[float, str]]:
    return list(zip(ticks, tick_labels(ticks), strict=True))


def thin_indices(n: int, keep: int = MAX_POINTS) -> np.ndarray:
    """At most ``keep`` evenly spread indices of ``n`` samples, first and last included.

    >>> thin_indices(10, 4).tolist()
    [0, 3, 6, 9]
    """
    if n <= keep:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, keep).round().astype(np.int64))


class Panel:
    """One plot area of an SVG: data ranges to pixels, axes, ticks, title."""

    def __init__(self, left: float, top: float, width: float, height: float) -> None:
        self.left, self.top, self.width, self.height = left, top, width, height
        self.x_range = (0.0, 1.0)
        self.y_range = (0.0, 1.0)

    def set_ranges(self, x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
        """Data limits of the plot area."""
        self.x_range, self.y_range = x_range, y_range

    def px(self, x: Any) -> Any:
        """Pixel column of data ``x`` (an array or a number)."""
        low, high = self.x_range
        return self.left + (x - low) / (high - low) * self.width

    def py(self, y: Any) -> Any:
        """Pixel row of data ``y`` (an array or a number)."""
        low, high = self.y_range
        return self.top + self.height - (y - low) / (high - low) * self.height

    def frame(self, title: str, legend: list[tuple[str, str]], x_label: str | None,
              y_ticks: list[float], x_ticks: list[float]) -> list[str]:
        """Axes box, grid, ticks, and above the plot area the title (left) and an inline
        legend (right)."""
        right, bottom = self.left + self.width, self.top + self.height
        parts = [(f"<rect x='{self.left:.1f}' y='{self.top:.1f}' width='{self.width:.1f}' "
                 f"height='{self.height:.1f}' fill='white' stroke='#999' stroke-width='0.8'/>")]
        for tick, text in _ticks_with_labels(y_ticks):
            y = float(self.py(np.float64(tick)))
            parts.append(f"<line x1='{self.left:.1f}' x2='{right:.1f}' y1='{y:.1f}' y2='{y:.1f}' "
                         "stroke='#e4e4e4' stroke-width='0.6'/>"
                         f"<text x='{self.left - 4:.1f}' y='{y + 3:.1f}' text-anchor='end'>{text}</text>")
        for tick, text in _ticks_with_labels(x_ticks):
            x = float(self.px(np.float64(tick)))
            parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{self.top:.1f}' y2='{bottom:.1f}' "
                         "stroke='#e4e4e4' stroke-width='0.6'/>"
                         f"<text x='{x:.1f}' y='{bottom + 11:.1f}' text-anchor='middle'>{text}</text>")
        baseline = self.top - TITLE_GAP
        parts.append(f"<text x='{self.left:.1f}' y='{baseline:.1f}' font-size='11' "
                     f"font-weight='600'>{html.escape(title)}</text>")
        # The legend shares the title's line, right-aligned, outside the plot area: a line
        # at the top of its axis (running jobs when nothing waits) never runs through it.
        x = right
        for label, colour in reversed(legend):
            x -= legend_width(label)
            parts.append(f"<rect x='{x:.1f}' y='{baseline - 4:.1f}' width='9' height='3' fill='{colour}'/>"
                         f"<text x='{x + 12:.1f}' y='{baseline:.1f}' fill='{colour}'>{html.escape(label)}</text>")
        title_x = self.left + self.width / 2
        if x_label:
            parts.append(f"<text x='{title_x:.1f}' y='{bottom + 24:.1f}' text-anchor='middle'>"
                         f"{html.escape(x_label)}</text>")
        return parts

    def line(self, x: np.ndarray, y: np.ndarray, colour: str, steps: bool) -> str:
        """A polyline (step-after when ``steps``) with the newest point marked."""
        xs, ys = self.px(x), self.py(y)
        if steps and len(xs) > 1:
            xs = np.repeat(xs, 2)[1:]
            ys = np.repeat(ys, 2)[:-1]
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs.tolist(), ys.tolist()))
        return (f"<polyline points='{points}' fill='none' stroke='{colour}' stroke-width='1.3'/>"
                f"<circle cx='{xs[-1]:.1f}' cy='{ys[-1]:.1f}' r='2.6' fill='{colour}'/>")


SERIES = (  # panel, sample column, label, colour, steps
    (0, "profit", "profit", "#2ca02c", False),
    (1, "used_cores", "cores", "#1f77b4", True),
    (1, "used_gpus", "GPUs", "#9467bd", True),
    (1, "used_mics", "MICs", "#ff7f0e", True),
    (2, "queue_length", "queued", "#d62728", True),
    (2, "running_jobs", "running", "#7f7f7f", True),
    (3, "holds", "holds", "#8c564b", True),
    (3, "drops", "drops", "#e377c2", True),
)
TITLES = ("cumulative profit", "utilisation (%)", "jobs", "holds and drops (cumulative)")
WIDTH, HEIGHT = 760, 380


class TimeSeriesPlot:
    """Cumulative profit, utilisation, queue length and holds/drops over time, as SVG."""

    def __init__(self, platform: Platform, unit: str) -> None:
        self.unit = unit
        total = platform.total
        self.scale: dict[str, float] = {"used_cores": 100.0 / total[CORES]}
        for resource, column in ((GPUS, "used_gpus"), (MICS, "used_mics")):
            if total[resource]:
                self.scale[column] = 100.0 / total[resource]
        self.series = [s for s in SERIES if not s[1].startswith("used_") or s[1] in self.scale]
        width, height = (WIDTH - 70 - 60) / 2, (HEIGHT - 50 - 60) / 2
        self.panels = [Panel(55 + (i % 2) * (width + 60), 22 + (i // 2) * (height + 46), width, height)
                       for i in range(4)]
        self._buffer = np.zeros((0, len(TIMESERIES_COLUMNS)))
        self._count = 0
        self._svg = ""

    def _samples(self, model: HPCModel) -> np.ndarray:
        """The model's samples as an array, copying only the rows added since last time."""
        samples = model.recorder.samples
        if len(samples) < self._count:  # a new run in the same plot
            self._count = 0
        if len(samples) > len(self._buffer):
            grown = np.zeros((max(256, 2 * len(samples)), len(TIMESERIES_COLUMNS)))
            grown[:self._count] = self._buffer[:self._count]
            self._buffer = grown
        if len(samples) > self._count:
            self._buffer[self._count:len(samples)] = np.asarray(samples[self._count:], dtype=np.float64)
            self._count = len(samples)
        if self._count == 0:
            return np.zeros((1, len(TIMESERIES_COLUMNS)))
        return self._buffer[:self._count]

    def update(self, model: HPCModel) -> None:
        """Draw the model's samples so far."""
        samples = self._samples(model)
        picked = samples[thin_indices(len(samples))]
        times, label = time_axis(picked[:, _COLUMN["time"]], self.unit)
        left, right = float(times[0]), float(times[-1])
        span = right - left if right > left else 1.0
        x_range = (left, right + RIGHT_MARGIN * span)
        x_ticks = [t for t in nice_ticks(left, right) if x_range[0] <= t <= x_range[1]]
        parts = [(f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {WIDTH} {HEIGHT}' "
                 f"class='mhpc-svg' {FONT} font-size='10' fill='#333'>")]
        for number, panel in enumerate(self.panels):
            lines = [s for s in self.series if s[0] == number]
            values = [picked[:, _COLUMN[s[1]]] * self.scale.get(s[1], 1.0) for s in lines]
            top = max([100.0 if number == 1 else 1.0, *(float(v.max()) for v in values)])
            bottom = min([0.0, *(float(v.min()) for v in values)])
            y_ticks = nice_ticks(bottom, top, 4)
            panel.set_ranges(x_range, (min(bottom, y_ticks[0]), max(top, y_ticks[-1])))
            legend = [(s[2], s[3]) for s in lines] if len(lines) > 1 else []
            parts += panel.frame(TITLES[number], legend, label if number >= 2 else None, y_ticks, x_ticks)
            parts += [panel.line(times, v, s[3], s[4]) for s, v in zip(lines, values)]
        parts.append("</svg>")
        self._svg = "".join(parts)

    def svg(self) -> str:
        """The plot drawn by the last ``update``."""
        return self._svg


class ValueCurvePlot:
    """A job's value curve against time since its arrival, ``now`` marked, as SVG."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.panel = Panel(48, 8, 300, 92)
        self._svg = ""

    def update(self, curve, elapsed: float) -> None:  # type: ignore[no-untyped-def]
        """Draw ``curve`` with the job's ``elapsed`` time since arrival marked."""
        horizon = max(float(getattr(curve, "zero_time", 0.0)) * 1.1, elapsed * 1.05, 1.0)
        times = np.linspace(0.0, horizon, 120)
        values = np.array([curve.value_at(t) for t in times])
        top = float(curve.max_value) * 1.08 or 1.0
        y_ticks = nice_ticks(0.0, top, 3)
        self.panel.set_ranges((0.0, horizon), (0.0, max(top, y_ticks[-1])))
        parts = [("<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 360 136' "
                 f"class='mhpc-svg mhpc-curve' {FONT} font-size='9' fill='#333'>")]
        x_ticks = [t for t in nice_ticks(0.0, horizon, 4) if t <= horizon]
        parts += self.panel.frame("", [], f"since arrival ({self.unit})", y_ticks, x_ticks)
        parts.append(self.panel.line(times, values, "#2ca02c", False))
        x = float(self.panel.px(np.float64(elapsed)))
        parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='8' y2='100' stroke='#d62728' "
                     "stroke-dasharray='4 3'/>"
                     f"<text x='{x + 3:.1f}' y='18' fill='#d62728'>now</text>"
                     "<text x='10' y='54' transform='rotate(-90 10 54)' text-anchor='middle'>value</text>"
                     "</svg>")
        self._svg = "".join(parts)

    def svg(self) -> str:
        """The plot drawn by the last ``update``."""
        return self._svg
