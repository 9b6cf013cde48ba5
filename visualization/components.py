"""Solara components of the market view, one per SolaraViz grid tile.

Each component takes the model, reads Mesa's ``update_counter`` so it redraws after every
Step/Play, reads the model under its lock and tells the play loop what it drew
(``pacing.reads_model``), and marks what the browser test looks at with ``mhpc-*`` CSS
classes.
"""

from __future__ import annotations

import html

import solara
from mesa.visualization.utils import update_counter

from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import CORES, GPUS, MICS
from visualization.model import VizModel, format_clock
from visualization.node_bins import group_size, ramp_css
from visualization.node_grid import BAND_COLOURS, node_grid_pixels, png_bytes
from visualization.pacing import reads_model
from visualization.panels import (
    QueueRow,
    burst_buffer_use,
    job_details,
    queue_bands,
    queue_layout,
    queue_rows,
    status,
)
from visualization.plots import TimeSeriesPlot, ValueCurvePlot

selected_job = solara.reactive(0)

CSS = """
.mhpc-tile { height: 100%; overflow: auto; padding: 6px 10px; }
.mhpc-title { font-weight: 600; font-size: 14px; margin-bottom: 4px; }
.mhpc-note { font-size: 11px; color: #666; }
.mhpc-status { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: baseline; font-size: 13px; }
.mhpc-status b { font-size: 15px; }
.mhpc-nodes { display: block; max-width: 100%; max-height: 100%; width: auto; height: auto; }
/* The node grid's tile has a fixed height (grid rows) while its picture scales with the
   tile's width: the picture shrinks, keeping its shape, to leave the title and the notes
   room, so the tile can be as short as the picture at common window widths. */
.mhpc-grid-tile > * { flex: none; }
.mhpc-grid-tile > div:has(> img.mhpc-nodes) { flex: 0 1 auto; min-height: 0; height: auto !important; }
.mhpc-svg { width: 100%; height: auto; display: block; }
.mhpc-timeseries svg { max-height: 380px; }
/* a slider whose label (with its value) leaves it under 120 px goes to the next line */
.v-input__slider .v-input__slot { flex-wrap: wrap; }
.v-input__slider .v-input__slot > .v-slider { flex: 1 1 120px; min-width: 120px; }
.v-input__slider .v-input__slot > .v-label { height: auto; white-space: normal; }
/* one page of tiles: Mesa's "Page 0" tab bar says nothing */
.v-tabs:not(:has(.v-tab ~ .v-tab)) { display: none; }
.mhpc-table td, .mhpc-table th { padding: 0 6px !important; height: 22px !important; font-size: 12px; }
.mhpc-table th { text-align: right !important; }
.mhpc-table .v-btn { height: 20px !important; }
.mhpc-table td { text-align: right; }
.mhpc-partitions, .mhpc-bb, .mhpc-bins { font-size: 12px; }
.mhpc-ramp { display: inline-block; width: 60px; height: 10px; margin: 0 8px 0 3px; vertical-align: -1px; }
.mhpc-band { margin-right: 10px; white-space: nowrap; }
.mhpc-band i { display: inline-block; width: 10px; height: 10px; margin-right: 3px; vertical-align: -1px; }
.mhpc-bar { display: inline-block; width: 200px; height: 10px; background: #e5e7eb; margin-right: 6px; vertical-align: -1px; }
.mhpc-bar div { height: 100%; background: #7b1fa2; }
"""


@solara.component
@reads_model
def StatusBar(model: VizModel) -> None:
    """Simulated clock, counters and profit in one line; the model's error if any."""
    update_counter.get()
    now = status(model, model.time_unit)
    parts = [
        f'<span>clock <b class="mhpc-clock">{html.escape(now.clock)}</b></span>',
        f"<span>step <b>{now.step}</b></span>",
        f"<span>queued <b>{now.queued:,}</b> ({now.held} held)</span>",
        f"<span>running <b>{now.running:,}</b></span>",
        f"<span>done <b>{now.finished:,}</b></span>",
        f"<span>dropped <b>{now.dropped:,}</b></span>",
        f"<span>holds <b>{now.holds:,}</b></span>",
        f'<span>profit <b class="mhpc-profit">{now.profit:,.1f}</b></span>',
        f"<span>cores busy <b>{now.utilisation:.0f} %</b></span>",
        *(f'<span>{name} busy <b class="mhpc-{name}">{100 * (1 - model.free_total[r] / model.platform.total[r]):.0f} %'
          "</b></span>" for r, name in ((GPUS, "GPUs"), (MICS, "MICs")) if model.platform.total[r]),
        '<span style="color: #c62828"><b>stopped: see the platform tile</b></span>' if model.error else "",
        (f'<span class="mhpc-note">{html.escape(model.policy_name)} on '
         f"{html.escape(_platform_text(model))}, {model.n_jobs:,} jobs; "
         f"{html.escape(model.settings_text)} (change parameters, then Reset)</span>"),
    ]
    with solara.Column(classes=["mhpc-tile"], gap="2px"):
        solara.Style(CSS)
        solara.HTML(tag="div", unsafe_innerHTML="".join(parts), classes=["mhpc-status"])


def _platform_text(model: VizModel) -> str:
    types = " + ".join(f"{t.count} x {t.cores} cores" + (f", {t.gpus} GPUs" if t.gpus else "")
                       + (f", {t.mics} MICs" if t.mics else "") for t in model.platform.node_types)
    return f"{model.platform.name} ({types})" if "=" not in model.platform.name else types


@solara.component
@reads_model
def StepInfo(model: VizModel) -> None:
    """The sidebar's "Information" card (Mesa's ``ShowSteps`` replaced, see ``app.py``):
    steps taken and the simulated clock, the same on every Mesa version."""
    update_counter.get()
    with solara.Column(gap="0px"):
        solara.Text(f"Step: {model.steps}", classes=["mhpc-steps"])
        solara.Text(f"Simulated time: {format_clock(model.now, model.time_unit)}",
                    classes=["mhpc-note"])


@solara.component
@reads_model
def NodeGrid(model: VizModel) -> None:
    """Nodes x cores coloured by job, GPUs/MICs where present, held jobs marked; on a large
    platform one cell per group of nodes, shaded by its busy share (``node_bins``)."""
    update_counter.get()
    pixels = node_grid_pixels(model, selected_job.value or None)
    with solara.Column(classes=["mhpc-tile", "mhpc-grid-tile"], gap="4px"):
        solara.Text(f"Platform: {_platform_text(model)}", classes=["mhpc-title"])
        if model.error:
            solara.Error(f"The run stopped: {model.error}")
        solara.Image(png_bytes(pixels), classes=["mhpc-nodes"])
        legend = partition_legend(model)
        if legend:
            solara.HTML(tag="div", unsafe_innerHTML=legend, classes=["mhpc-partitions"])
        bb = burst_buffer_use(model)
        if bb is not None:
            solara.HTML(tag="div", unsafe_innerHTML=burst_buffer_bar(*bb), classes=["mhpc-bb"])
        k = group_size(model.platform)
        if k > 1:
            solara.HTML(tag="div", unsafe_innerHTML=bin_legend(k, model.platform), classes=["mhpc-bins"])
        solara.Text(grid_note(k), classes=["mhpc-note"])


def bin_legend(k: int, platform: Platform) -> str:
    """HTML legend of a binned grid: nodes per cell and the busy-share colour ramps."""
    ramps = [f'{name} <i class="mhpc-ramp" style="background: {ramp_css(r)}"></i>'
             for r, name in ((CORES, "cores"), (GPUS, "GPUs"), (MICS, "MICs")) if platform.total[r]]
    return (f"<b>one cell = {k:,} nodes</b> (consecutive, of one type and partition; the last may "
            f"hold fewer) · shade = share in use, 0 % to 100 %: " + " ".join(ramps))


def grid_note(k: int) -> str:
    """What the node grid's marks mean, one row per node or binned ``k`` nodes per cell."""
    if k > 1:
        return ("one section per node type (partition); cells top to bottom, the number over a "
                "column is its first node · the cell right of the cores: GPUs (then MICs) · "
                "red × = a node of the cell a held job waits to return from · "
                "black frame = cells of the selected job")
    return ("one section per node type (partition), one row per node · "
            "colour = job on the core · grey = free core (blue GPU, orange MIC) · "
            "hatched = job resumed after a hold · red × = node a held job "
            "waits to return from · black frame = selected job")


def partition_legend(model: VizModel) -> str:
    """HTML legend of the queue partitions and pool the node grid's marker cells show."""
    parts = []
    for index, (name, lo, hi) in enumerate(queue_bands(model)):
        red, green, blue = BAND_COLOURS[index % len(BAND_COLOURS)]
        parts.append(f'<span class="mhpc-band"><i style="background: rgb({red},{green},{blue})"></i>'
                     f"{html.escape(name)}: nodes {lo:,}-{hi - 1:,}</span>")
    if not parts:
        return ""
    return "partitions (the strip left of each node row or cell): " + " ".join(parts)


def burst_buffer_bar(used: float, total: float) -> str:
    """HTML bar of the burst-buffer pool: used and free, in GB (TB from a 100 TB pool on,
    decimal as in seed 003).

    >>> burst_buffer_bar(5_618.0, 40_040.0).split("</div></div>")[1]
    'burst buffer: <b>5,618 GB used</b>, 34,422 GB free of 40,040 GB (14 %)'
    >>> burst_buffer_bar(1_197_945.0, 10_856_669.0).split("</div></div>")[1]
    'burst buffer: <b>1,198 TB used</b>, 9,659 TB free of 10,857 TB (11 %)'
    """
    share = 100.0 * used / total if total else 0.0
    divisor, unit = (1000.0, "TB") if total >= 100_000 else (1.0, "GB")
    return (f'<div class="mhpc-bar"><div style="width: {share:.1f}%"></div></div>'
            f"burst buffer: <b>{used / divisor:,.0f} {unit} used</b>, {(total - used) / divisor:,.0f} {unit} "
            f"free of {total / divisor:,.0f} {unit} ({share:.0f} %)")


@solara.component
@reads_model
def QueuePanel(model: VizModel) -> None:
    """Queue length and its top jobs; clicking a job id selects it."""
    update_counter.get()
    rows = queue_rows(model, limit=12)
    waiting = len(model.queue_agent.jobs)
    order = "by value density" if rows and rows[0].density is not None else "in queue order"
    with solara.Column(classes=["mhpc-tile"], gap="2px"):
        solara.Text(f"Queue: {waiting:,} waiting", classes=["mhpc-title"])
        solara.Text(f"{queue_layout(model)}; dispatched by {model.policy_name}; top jobs "
                    f"{order}; # = place in queue; click an id for details",
                    classes=["mhpc-note", "mhpc-queues"])
        with solara.v.SimpleTable(dense=True, class_="mhpc-table"):
            with solara.v.Html(tag="thead"), solara.v.Html(tag="tr"):
                for title in ("job", "#", "held", "cores", "waited", "value", "value/core"):
                    solara.v.Html(tag="th", children=[title])
            with solara.v.Html(tag="tbody"):
                for row in rows:
                    _queue_row(row)


def _queue_row(row: QueueRow) -> None:
    def select(job_id: int = row.job_id) -> None:
        selected_job.set(job_id)

    cells = (str(row.position), f"{row.held}x" if row.held else "", str(row.cores),
             f"{row.waited:,.0f}", "-" if row.value is None else f"{row.value:,.1f}",
             "-" if row.density is None else f"{row.density:,.1f}")
    with solara.v.Html(tag="tr"):
        with solara.v.Html(tag="td"):
            solara.Button(str(row.job_id), text=True, small=True, on_click=select,
                          style="min-width: 0; padding: 0 4px;")
        for cell in cells:
            solara.v.Html(tag="td", children=[cell])


@solara.component
@reads_model
def TimeSeries(model: VizModel) -> None:
    """Cumulative profit, utilisation, queue length, holds and drops over time."""
    update_counter.get()
    plot = solara.use_memo(lambda: TimeSeriesPlot(model.platform, model.time_unit), [model])
    plot.update(model)
    with solara.Column(classes=["mhpc-tile"], gap="2px"):
        solara.HTML(tag="div", unsafe_innerHTML=plot.svg(), classes=["mhpc-timeseries"])


@solara.component
@reads_model
def JobDetails(model: VizModel) -> None:
    """The selected job: state, allocation, holds and its value curve."""
    update_counter.get()
    curve_plot = solara.use_memo(lambda: ValueCurvePlot(model.time_unit), [model])
    job_id = selected_job.value
    with solara.Column(classes=["mhpc-tile"], gap="2px"):
        solara.Text("Job details", classes=["mhpc-title"])
        solara.InputInt("job id", value=selected_job, continuous_update=False)
        if not job_id:
            solara.Text("Click a job id in the queue, or type one.", classes=["mhpc-note"])
            return
        pairs = job_details(model, job_id, model.time_unit)
        if pairs is None:
            solara.Text(f"Job {job_id} has not arrived (or is not in this workload).",
                        classes=["mhpc-note"])
            return
        with (solara.v.SimpleTable(dense=True, class_="mhpc-table mhpc-job"),
              solara.v.Html(tag="tbody")):
            for label, value in pairs:
                with solara.v.Html(tag="tr"):
                    solara.v.Html(tag="td", children=[label], style_="text-align: left")
                    solara.v.Html(tag="td", children=[value], style_="text-align: left")
        agent = model.job_agents.get(job_id)
        if agent is not None and "value_curve" in agent.job.payload:
            curve_plot.update(agent.job.payload["value_curve"], model.now - agent.job.submit)
            solara.HTML(tag="div", unsafe_innerHTML=curve_plot.svg())


COMPONENTS = [StatusBar, NodeGrid, QueuePanel, TimeSeries, JobDetails]

# SolaraViz 3.3 tiles every component at half width and 390 px with no layout argument;
# this is the grid (12 columns, 30 px rows 10 px apart) laid out for these five. A tile's
# height is fixed in rows, so the node grid's row (390 px) fits its picture as wide as the
# tile is at 1400 px windows (about 290 px tall) and the queue's twelve rows; on wider
# windows the picture shrinks to that height (CSS above) rather than leave an empty band
# above the charts on narrower ones.
LAYOUT = [
    {"i": 0, "x": 0, "y": 0, "w": 12, "h": 2},
    {"i": 1, "x": 0, "y": 2, "w": 7, "h": 10},
    {"i": 2, "x": 7, "y": 2, "w": 5, "h": 10},
    {"i": 3, "x": 0, "y": 12, "w": 8, "h": 11},
    {"i": 4, "x": 8, "y": 12, "w": 4, "h": 11},
]
