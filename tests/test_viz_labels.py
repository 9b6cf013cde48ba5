"""Browser view text without a browser: axis tick labels stay distinct and exact."""

from __future__ import annotations

import pytest

from visualization.plots import nice_ticks, tick_labels


@pytest.mark.parametrize(("low", "high"), [(366.38, 366.52), (0.0, 97.0), (0.0, 26000.0),
                                           (1.2e6, 4.9e6), (0.001, 0.0042)])
def test_tick_labels_are_distinct_and_exact(low: float, high: float) -> None:
    ticks = nice_ticks(low, high)
    labels = tick_labels(ticks)
    assert len(set(labels)) == len(labels), labels
    scale = {"k": 1e3, "M": 1e6}
    for tick, label in zip(ticks, labels, strict=True):
        value = float(label[:-1]) * scale[label[-1]] if label[-1] in scale else float(label)
        assert value == pytest.approx(tick, rel=1e-9, abs=1e-12), (tick, label)


def test_curie_clock_ticks_no_longer_repeat() -> None:
    assert tick_labels([366.4, 366.45, 366.5]) == ["366.40", "366.45", "366.50"]


def test_queue_tile_names_the_partitions_the_policy_uses() -> None:
    import re

    from visualization.model import VizModel
    from visualization.panels import queue_layout

    model = VizModel(policy="queues-hybrid", platform="nodes=40,cores=16",
                     workload="lublin-feitelson", jobs=100)
    assert model.error is None
    model.step()
    text = queue_layout(model)
    shown = [(int(a), int(b) + 1) for a, b in re.findall(r"nodes ([\d,]+)-([\d,]+)", text.replace(",", ""))]
    assert shown == list(model.policy.groups), (text, model.policy.groups)  # partitions, then pool
    assert "shared pool" in text and "by reservation" in text
    assert queue_layout(VizModel(policy="easy", workload="lublin-feitelson", jobs=50)) == "one queue"


def test_band_of_nodes_marks_each_partition_and_the_pool() -> None:
    from visualization.grid_layout import band_of_nodes

    band = band_of_nodes(10, [("narrow", 0, 3), ("wide", 3, 7), ("shared pool", 8, 10)])
    assert band.tolist() == [0, 0, 0, 1, 1, 1, 1, -1, 2, 2]


def test_node_grid_draws_the_hybrid_partitions_in_the_marker_column() -> None:
    import numpy as np

    from visualization.grid_layout import grid_geometry, tile_nodes
    from visualization.model import VizModel
    from visualization.node_grid import BAND_COLOURS, node_grid_pixels
    from visualization.panels import queue_bands

    model = VizModel(policy="queues-hybrid", platform="nodes=40,cores=16",
                     workload="lublin-feitelson", jobs=100)
    model.step()
    bands = queue_bands(model)
    assert [(lo, hi) for _, lo, hi in bands] == list(model.policy.groups)  # partitions, then pool
    assert bands[-1][0] == "shared pool"
    geometry = grid_geometry(model.platform)
    markers = np.arange(40)
    tiled = tile_nodes(geometry, np.zeros((40, geometry.node_width), dtype=np.int64), -5, markers)
    for node in (0, 17, 39):  # each node's marker cell sits left of its first core
        row, column = geometry.cell(node)
        assert tiled[row, column - 1] == node
    pixels = node_grid_pixels(model)
    colours = {tuple(c) for c in pixels.reshape(-1, 3).tolist()}
    assert {BAND_COLOURS[i] for i in range(len(bands))} <= colours
    assert not {BAND_COLOURS[i] for i in range(len(bands))} & {tuple(c) for c in node_grid_pixels(
        VizModel(policy="easy", platform="nodes=40,cores=16", workload="lublin-feitelson", jobs=50)
    ).reshape(-1, 3).tolist()}


def test_shared_queues_draw_no_band_and_bb_use_is_reported() -> None:
    from visualization.model import VizModel
    from visualization.panels import burst_buffer_use, queue_bands

    shared = VizModel(policy="queues-shared", platform="nodes=40,cores=16", workload="lublin-feitelson", jobs=50)
    assert queue_bands(shared) == []
    bb = VizModel(policy="easy", platform="nodes=16,cores=16,bb=100", workload="lublin-feitelson", jobs=50)
    assert burst_buffer_use(bb) == (0.0, 100.0)
    assert burst_buffer_use(shared) is None


def test_burst_buffer_policy_gets_a_pool_that_jobs_use() -> None:
    from visualization.model import VizModel
    from visualization.panels import burst_buffer_use

    model = VizModel(policy="bbsched", platform="kth-sp2", workload="lublin-feitelson", jobs=300)
    assert model.error is None and model.platform.burst_buffer == 28_700.0  # Theta's pool, 100 nodes
    for _ in range(40):
        model.step()
    used, total = burst_buffer_use(model)  # type: ignore[misc]
    assert total == 28_700.0 and 0 < used <= total
    assert used == sum(r.job.bb for r in model.running_by_end)


def test_task_graph_jobs_scale_with_the_platform_so_curie_is_busy() -> None:
    from market_hpc.domain.platform import load_platform
    from visualization.model import MAX_SCALED_JOBS, VizModel, scaled_job_count

    assert scaled_job_count(1500, load_platform("nodes=64,cores=32"), "maxvdh", "auto") == 3000
    assert scaled_job_count(1500, load_platform("curie"), "maxvdh", "taskgraphs") == MAX_SCALED_JOBS
    assert scaled_job_count(1500, load_platform("curie"), "maxvdh", "lublin-feitelson") == 1500
    model = VizModel(platform="hpc2n", jobs=400, load=2.0)  # 120 nodes: 4 x 400 task graphs
    assert model.n_jobs == 1600
