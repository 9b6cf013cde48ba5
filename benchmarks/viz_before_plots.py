"""The matplotlib time series as it was before issue 15 (a 2x2 Agg figure encoded as PNG
every step): the "before" of ``viz_step.py``. Not used by the app.

Matplotlib plots of a running model: the time series and a job's value curve.

Each plot is built once per model and updated in place every step: creating axes and
ticks is what costs time in matplotlib, drawing new data into them is cheap. Figures use
``matplotlib.figure.Figure`` with their own Agg canvas (no pyplot state), so sessions do
not share anything. No solara here, so the benchmark builds the same plots.
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from market_hpc.core.model import HPCModel
from market_hpc.core.recorder import TIMESERIES_COLUMNS
from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import CORES, GPUS, MICS
from visualization.node_grid import png_bytes

_COLUMN = {name: index for index, name in enumerate(TIMESERIES_COLUMNS)}


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


SERIES = (  # panel, sample column, label, colour
    (0, "profit", "profit", "#2ca02c"),
    (1, "used_cores", "cores", "#1f77b4"),
    (1, "used_gpus", "GPUs", "#9467bd"),
    (1, "used_mics", "MICs", "#ff7f0e"),
    (2, "queue_length", "queued", "#d62728"),
    (2, "running_jobs", "running", "#7f7f7f"),
    (3, "holds", "holds", "#8c564b"),
    (3, "drops", "drops", "#e377c2"),
)
TITLES = ("cumulative profit", "utilisation (%)", "jobs", "holds and drops (cumulative)")


class TimeSeriesPlot:
    """Cumulative profit, utilisation, queue length and holds/drops over time."""

    def __init__(self, platform: Platform, unit: str) -> None:
        self.unit = unit
        self.figure = Figure(figsize=(7.6, 3.9), dpi=100)
        FigureCanvasAgg(self.figure)
        self.axes = list(self.figure.subplots(2, 2, sharex=True).flat)
        total = platform.total
        self.scale: dict[str, float] = {"used_cores": 100.0 / total[CORES]}
        for resource, column in ((GPUS, "used_gpus"), (MICS, "used_mics")):
            if total[resource]:
                self.scale[column] = 100.0 / total[resource]
        self.lines = {}
        self.panel: dict[str, int] = {}
        for panel, column, label, colour in SERIES:
            if column.startswith("used_") and column not in self.scale:
                continue
            (line,) = self.axes[panel].plot([], [], color=colour, linewidth=1.1, label=label,
                                            drawstyle="default" if panel == 0 else "steps-post")
            self.lines[column] = line
            self.panel[column] = panel
        for axes, title in zip(self.axes, TITLES, strict=True):
            axes.set_title(title, fontsize=9)
            axes.tick_params(labelsize=7)
            axes.grid(alpha=0.3, linewidth=0.5)
            if len(axes.get_lines()) > 1:
                axes.legend(fontsize=7, loc="upper left", frameon=False)
        for axes in self.axes[2:]:
            axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        self.figure.subplots_adjust(left=0.085, right=0.985, bottom=0.12, top=0.93,
                                    wspace=0.2, hspace=0.32)

    def update(self, model: HPCModel) -> None:
        """Draw the model's samples so far."""
        samples = np.asarray(model.recorder.samples, dtype=np.float64)
        if samples.size == 0:
            samples = np.zeros((1, len(TIMESERIES_COLUMNS)))
        times, label = time_axis(samples[:, _COLUMN["time"]], self.unit)
        top = [0.0, 100.0, 1.0, 1.0]
        bottom = [0.0, 0.0, 0.0, 0.0]
        for column, line in self.lines.items():
            values = samples[:, _COLUMN[column]] * self.scale.get(column, 1.0)
            line.set_data(times, values)
            panel = self.panel[column]
            top[panel] = max(top[panel], float(values.max()))
            bottom[panel] = min(bottom[panel], float(values.min()))
        left, right = float(times[0]), float(times[-1])
        for panel, axes in enumerate(self.axes):
            margin = 0.05 * (top[panel] - bottom[panel]) or 1.0
            axes.set_ylim(bottom[panel] - (margin if bottom[panel] < 0 else 0.0), top[panel] + margin)
            axes.set_xlim(left, right if right > left else left + 1.0)
        for axes in self.axes[2:]:
            axes.set_xlabel(label, fontsize=8)

    def png(self) -> bytes:
        """Render the current state."""
        return canvas_png(self.figure)


class ValueCurvePlot:
    """A job's value curve against time since its arrival, ``now`` marked."""

    def __init__(self, unit: str) -> None:
        self.figure = Figure(figsize=(3.6, 1.6), dpi=100)
        FigureCanvasAgg(self.figure)
        self.axes = self.figure.add_subplot()
        (self.curve,) = self.axes.plot([], [], color="#2ca02c", linewidth=1.2)
        self.now = self.axes.axvline(0.0, color="#d62728", linewidth=1.0, linestyle="--")
        self.axes.set_xlabel(f"since arrival ({unit})", fontsize=7)
        self.axes.set_ylabel("value", fontsize=7)
        self.axes.tick_params(labelsize=6)
        self.axes.grid(alpha=0.3, linewidth=0.5)
        self.figure.subplots_adjust(left=0.17, right=0.97, bottom=0.27, top=0.95)

    def update(self, curve, elapsed: float) -> None:  # type: ignore[no-untyped-def]
        """Draw ``curve`` with the job's ``elapsed`` time since arrival marked."""
        horizon = max(float(getattr(curve, "zero_time", 0.0)) * 1.1, elapsed * 1.05, 1.0)
        times = np.linspace(0.0, horizon, 120)
        self.curve.set_data(times, [curve.value_at(t) for t in times])
        self.now.set_xdata([elapsed, elapsed])
        self.axes.set_xlim(0.0, horizon)
        self.axes.set_ylim(0.0, float(curve.max_value) * 1.08 or 1.0)

    def png(self) -> bytes:
        """Render the current state."""
        return canvas_png(self.figure)


def canvas_png(figure: Figure) -> bytes:
    """Draw a figure on its Agg canvas and encode it as PNG."""
    canvas = figure.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    canvas.draw()
    return png_bytes(np.asarray(canvas.buffer_rgba())[:, :, :3])
