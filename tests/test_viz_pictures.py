"""The browser app's pictures and model without a browser: node-grid cells, queue order,
the time-series plot, Curie's sections, accelerator shares, the launcher's command line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # visualization/ is a leaf beside the package, not installed

from market_hpc.viz import server_command
from visualization.model import VizModel, generated_jobs, with_accelerators
from visualization.node_grid import cell_owners, grid_geometry, node_grid_pixels
from visualization.panels import queue_rows
from visualization.plots import TimeSeriesPlot

pytestmark = pytest.mark.browser  # run-tests runs these on the newest Python and Mesa too


@pytest.mark.parametrize("platform", ["nodes=8,cores=4", "eurora"])
@pytest.mark.parametrize("policy", ["maxvdh", "easy"])
def test_node_grid_cells_match_the_allocation(policy: str, platform: str) -> None:
    model = VizModel(policy=policy, platform=platform, jobs=200, seed=3)
    for _ in range(25):
        model.step()
    owners = cell_owners(model)
    geometry = grid_geometry(model.platform)
    used = model.platform.capacity - model.free
    for resource, offset in geometry.offsets.items():
        width = int(model.platform.capacity[:, resource].max())
        busy = (owners[:, offset : offset + width] > 0).sum(axis=1)
        assert busy.tolist() == used[:, resource].tolist()
    running = {r.job.job_id for r in model.running_by_end}
    assert set(np.unique(owners[owners > 0]).tolist()) == running
    assert node_grid_pixels(model).dtype == np.uint8


def test_market_queue_lists_top_value_density_first() -> None:
    model = VizModel(policy="maxvd", platform="nodes=2,cores=4", jobs=120, load=4.0, seed=2)
    for _ in range(30):
        model.step()
    rows = queue_rows(model, limit=5)
    assert rows and len(rows) <= 5
    densities = [row.density for row in rows]
    assert None not in densities
    assert densities == sorted((d for d in densities if d is not None), reverse=True)


def test_launcher_serves_on_loopback_in_production_mode() -> None:
    command = server_command(REPO / "visualization" / "app.py", "127.0.0.1", 8765)
    assert command[:4] == [sys.executable, "-m", "solara", "run"]
    assert {"--production", "--no-open", "--no-check-version"} <= set(command)


def test_newest_sample_is_inside_the_time_series_plot() -> None:
    model = VizModel(
        policy="easy", platform="nodes=8,cores=4", workload="lublin-feitelson", jobs=80, seed=2
    )
    plot = TimeSeriesPlot(model.platform, model.time_unit)
    for _ in range(30):
        model.step()
        plot.update(model)
    svg = plot.svg()
    newest = [float(x) for x in re.findall(r"<circle cx='([0-9.]+)'", svg)]
    assert len(newest) == 6  # profit, cores, queued, running, holds, drops
    for panel in plot.panels:
        right = panel.left + panel.width
        assert all(x <= right - 0.02 * panel.width for x in newest if panel.left <= x <= right + 1)
    assert "<polyline" in svg and "utilisation (%)" in svg


def test_curie_grid_has_one_labelled_section_per_partition() -> None:
    model = VizModel(
        policy="easy",
        platform="curie",
        workload="lublin-feitelson",
        jobs=200,
        seed=1,
        gpu_share=0.5,
    )
    geometry = grid_geometry(model.platform)
    assert [(s.name, s.first, s.count) for s in geometry.sections] == [
        ("thin", 0, 5040),
        ("fat", 5040, 360),
        ("hybrid", 5400, 144),
    ]
    assert geometry.cell(5400)[1] == geometry.sections[2].left + 1
    for _ in range(40):
        model.step()
    owners = cell_owners(model)
    used = model.platform.capacity - model.free
    assert ((owners[:, :32] > 0).sum(axis=1) == used[:, 0]).all()
    gpu = geometry.offsets[2 - 1]
    assert ((owners[:, gpu : gpu + 2] > 0).sum(axis=1) == used[:, 1]).all()
    assert used[:, 1].sum() > 0, "no GPU job placed with gpu_share = 0.5"
    pixels = node_grid_pixels(model)
    assert pixels.shape[1] <= 760 and pixels.shape[0] <= 440


def test_accelerator_shares_and_workloads_reach_the_model() -> None:
    model = VizModel(
        policy="easy",
        allocator="balanced",
        platform="custom",
        nodes=6,
        cores=8,
        gpus=2,
        mics=2,
        workload="lublin-feitelson",
        jobs=300,
        gpu_share=0.3,
        mic_share=0.3,
        seed=4,
    )
    assert model.error is None and model.policy_name == "easy + balanced"
    jobs = generated_jobs("easy", model.platform, 300, 2.0, 4, "lublin-feitelson")
    jobs = with_accelerators(jobs, model.platform, 0.3, 0.3, 4)
    kinds = [(job.unit[1] > 0, job.unit[2] > 0) for job in jobs]
    assert 0.15 < kinds.count((True, False)) / len(jobs) < 0.45
    assert 0.1 < kinds.count((False, True)) / len(jobs) < 0.45
    for _ in range(60):
        model.step()
    assert (
        model.recorder.busy_resource_seconds[1] > 0 and model.recorder.busy_resource_seconds[2] > 0
    )
    trace = VizModel(
        policy="ebf",
        workload="trace file",
        trace=str(REPO / "traces" / "lf-kth-like-2000.swf"),
        platform="kth-sp2",
        jobs=100,
    )
    assert trace.error is None and trace.n_jobs == 100
    broken = VizModel(policy="maxv", allocator="first-fit")
    assert broken.error is not None and "valid choices: max-bid" in broken.error
    broken.step()  # stopped, not a traceback
    assert not broken.running


def test_viz_refuses_a_sweep_file_naming_what_to_run() -> None:
    from market_hpc.errors import ConfigError
    from market_hpc.viz import check_not_a_sweep

    with pytest.raises(
        ConfigError,
        match=r"heterogeneity.toml is a sweep file \(it has seeds, grid, zip, "
        r"report\).*market-hpc sweep .*market-hpc report DIR",
    ):
        check_not_a_sweep(str(REPO / "scenarios" / "heterogeneity.toml"))
    check_not_a_sweep(str(REPO / "scenarios" / "sample_overload.toml"))


def test_time_series_legends_are_above_their_plot_areas() -> None:
    """Each legend entry sits on its panel's title line, right of the title (at most 7 px
    a character), above the plot area its lines are drawn in."""
    from visualization.plots import TITLES

    model = VizModel(
        policy="easy",
        platform="eurora",
        workload="lublin-feitelson",
        jobs=80,
        seed=2,
        gpu_share=0.3,
        mic_share=0.3,
    )
    plot = TimeSeriesPlot(model.platform, model.time_unit)
    for _ in range(20):
        model.step()
    plot.update(model)
    entries = re.findall(
        r"<rect x='([0-9.]+)' y='([0-9.]+)' width='9' height='3'[^>]*/>"
        r"<text x='[0-9.]+' y='([0-9.]+)' fill='[^']+'>([^<]+)</text>",
        plot.svg(),
    )
    assert sorted(label for *_, label in entries) == sorted(
        ["cores", "GPUs", "MICs", "queued", "running", "holds", "drops"]
    ), entries
    for panel, title in zip(plot.panels, TITLES):
        inside = [
            (float(x), float(y), float(base))
            for x, y, base, _ in entries
            if panel.left <= float(x) <= panel.left + panel.width
            and panel.top - 30 <= float(y) <= panel.top + panel.height
        ]
        for x, swatch_top, baseline in inside:
            assert baseline <= panel.top - 5 and swatch_top + 3 <= panel.top - 5, (
                title,
                swatch_top,
                baseline,
            )
            assert x >= panel.left + 7 * len(title), (title, x)
