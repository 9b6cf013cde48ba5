"""The node grid of a large platform, binned: which nodes fall in which cell, the cells'
colours, the partition strips, the selected job's frame and the labels (hand-checked)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # visualization/ is a leaf beside the package, not installed

from market_hpc.domain.platform import load_platform
from market_hpc.domain.resources import CORES, GPUS
from visualization.grid_layout import (
    ABSENT,
    LABEL_HEIGHT,
    _font,
    first_node_labels,
    grid_geometry,
    picture_scale,
)
from visualization.model import VizModel
from visualization.node_bins import (
    MIN_BIN_PX,
    MIN_NODE_PX,
    binned_cells,
    binned_geometry,
    group_shares,
    group_size,
    node_groups,
    share_colour,
    view_geometry,
)
from visualization.node_grid import BAND_COLOURS, node_grid_pixels
from visualization.panels import queue_bands

pytestmark = pytest.mark.browser  # run-tests runs these on the newest Python and Mesa too


def test_groups_restart_at_every_cut_and_type() -> None:
    assert node_groups(0, 10, 4) == [0, 4, 8]
    assert node_groups(0, 10, 4, cuts=[3, 10, 40]) == [0, 3, 7]
    assert node_groups(5040, 360, 8)[:2] == [5040, 5048] and len(node_groups(5040, 360, 8)) == 45
    geometry = binned_geometry(load_platform("nodes=10,cores=4"), 4, (3,))
    assert geometry.bounds.tolist() == [0, 3, 7, 10]
    assert [geometry.slot_of(n) for n in range(10)] == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
    assert geometry.node_range(1, 2) == (3, 9)


def test_curie_binned_by_type_with_gpu_cells_only_where_nodes_have_gpus() -> None:
    curie = load_platform("curie")
    geometry = binned_geometry(curie, 8)
    assert [(s.name, s.first, s.count) for s in geometry.sections] == [
        ("thin", 0, 630),
        ("fat", 630, 45),
        ("hybrid", 675, 18),
    ]
    assert (
        geometry.slot_of(5039) == 629
        and geometry.slot_of(5040) == 630
        and geometry.slot_of(5543) == 692
    )
    assert geometry.offsets == {CORES: 0, GPUS: 2}
    assert geometry.kind[0].tolist() == [CORES, ABSENT, ABSENT]
    assert geometry.kind[692].tolist() == [CORES, ABSENT, GPUS]
    assert geometry.sections[2].columns.tolist() == [0, -1, 2]


def test_only_platforms_whose_rows_are_too_thin_are_binned() -> None:
    for name in ("kth-sp2", "hpc2n", "eurora", "nodes=64,cores=32"):
        assert group_size(load_platform(name)) == 1, name
    for name, k in (("curie", 4), ("kit-fh2", 2)):
        platform = load_platform(name)
        assert picture_scale(grid_geometry(platform)).factor < MIN_NODE_PX
        assert group_size(platform) == k
        assert picture_scale(view_geometry(platform)).factor >= MIN_BIN_PX
        smaller = (1, 2, 4)[(1, 2, 4).index(k) - 1]
        if smaller > 1:  # the next smaller size would give cells under MIN_BIN_PX
            assert picture_scale(binned_geometry(platform, smaller)).factor < MIN_BIN_PX


def test_cell_colour_is_the_groups_busy_share() -> None:
    platform = load_platform("nodes=10,cores=4,gpus=2")
    geometry = binned_geometry(platform, 4, (3,))  # groups 0-2, 3-6, 7-9
    used = np.zeros_like(platform.capacity)
    used[:, CORES] = [4, 4, 0, 1, 1, 1, 1, 0, 0, 0]
    used[:, GPUS] = [2, 2, 2, 0, 0, 0, 0, 0, 1, 0]
    shares = group_shares(used, platform.capacity, geometry.bounds)
    assert shares[:, CORES].tolist() == pytest.approx([8 / 12, 4 / 16, 0.0])
    assert shares[:, GPUS].tolist() == pytest.approx([1.0, 0.0, 1 / 6])
    cells = binned_cells(geometry, used, platform.capacity)
    # free + share x (busy - free), rounded: grey (229, 232, 237) to slate (45, 55, 72)
    assert cells[:, 0].tolist() == [[106, 114, 127], [183, 188, 196], [229, 232, 237]]
    assert cells[0, 2].tolist() == [8, 104, 172] and cells[1, 2].tolist() == [214, 232, 250]
    assert cells[:, 1].tolist() == [[255, 255, 255]] * 3  # the gap column
    assert share_colour(np.array([0.5]), CORES).tolist() == [[137, 144, 154]]


def _centre(geometry, scale, slot: int, column: int = 0) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    row, col = geometry.cell(slot, column)
    return LABEL_HEIGHT + scale.px(row) + int(scale.factor / 2), scale.px(col) + int(
        scale.factor / 2
    )


def test_curie_picture_cells_show_each_groups_share_of_busy_cores() -> None:
    model = VizModel(policy="easy", platform="curie", workload="lublin-feitelson", jobs=300, seed=1)
    for _ in range(40):
        model.step()
    geometry = view_geometry(model.platform)
    scale = picture_scale(geometry)
    pixels = node_grid_pixels(model)
    assert geometry.group == 4 and scale.factor == 10.0
    assert pixels.shape == (LABEL_HEIGHT + 400, 760, 3)
    used = model.platform.capacity - model.free
    seen = set()
    for slot in range(len(geometry.bounds) - 1):
        lo, hi = geometry.bounds[slot], geometry.bounds[slot + 1]
        share = used[lo:hi, CORES].sum() / model.platform.capacity[lo:hi, CORES].sum()
        seen.add(round(float(share), 2))
        assert (
            pixels[_centre(geometry, scale, slot)].tolist()
            == share_colour(np.array(share), CORES).tolist()
        )
    assert 0.0 in seen and 1.0 in seen and len(seen) > 2, seen  # free, full and part-busy groups


def test_partition_strips_stay_exact_when_binned_and_the_selected_job_is_framed() -> None:
    model = VizModel(
        policy="queues-hybrid", platform="curie", workload="lublin-feitelson", jobs=200, seed=1
    )
    for _ in range(20):
        model.step()
    bands = queue_bands(model)
    geometry = view_geometry(model.platform, [edge for _, lo, hi in bands for edge in (lo, hi)])
    band = np.full(model.platform.n_nodes, -1)
    for index, (_, lo, hi) in enumerate(bands):
        band[lo:hi] = index
    scale = picture_scale(geometry)
    job = max(model.running_by_end, key=lambda r: len(r.allocation))
    pixels = node_grid_pixels(model, selected=job.job.job_id)
    body = pixels[LABEL_HEIGHT:]
    slots = {geometry.slot_of(node) for node, _ in job.allocation}
    for slot in range(len(geometry.bounds) - 1):
        lo, hi = geometry.bounds[slot], geometry.bounds[slot + 1]
        assert band[lo] == band[hi - 1], (slot, lo, hi)  # no cell straddles two partitions
        y, _ = _centre(geometry, scale, slot)
        row, column = geometry.cell(slot)
        strip = body[y - LABEL_HEIGHT, scale.px(column) - 2].tolist()
        assert strip == (list(BAND_COLOURS[band[lo]]) if band[lo] >= 0 else [255, 255, 255])
        assert body[y - LABEL_HEIGHT, scale.px(column) - 6].tolist() == [
            255,
            255,
            255,
        ]  # a strip, not a cell
        corner = body[scale.px(row), scale.px(column)].tolist()
        assert (corner == [0, 0, 0]) == (slot in slots), slot


def test_curie_labels_keep_apart_and_name_each_types_first_node() -> None:
    geometry = view_geometry(load_platform("curie"))
    scale = picture_scale(geometry)
    font = _font()
    labels = first_node_labels(geometry, scale, 760, font.getlength)
    texts = [text for _, text in labels]
    assert {"0", "5,040", "5,400"} <= set(texts)
    spans = sorted((x, x + font.getlength(text)) for x, text in labels)
    assert all(right + 8 <= left for (_, right), (left, _) in itertools.pairwise(spans))
    assert spans[-1][1] <= 760 and len(labels) >= 10


@pytest.mark.parametrize(
    "module",
    [
        "visualization.node_bins",
        "visualization.grid_layout",
        "visualization.components",
        "visualization.model",
    ],
)
@pytest.mark.filterwarnings(
    "ignore:.*ComponentsView:UserWarning"
)  # solara on Mesa's code (see app.py)
def test_doctests_of_the_viz_modules(module: str) -> None:
    """visualization/ is outside the suite's doctest paths: its examples run here."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0, result


def test_binned_cells_with_a_held_jobs_node_get_the_red_cross(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cross goes left of the cell holding each node a held job waits for (which
    nodes those are is the model's, tested with the market; here three are given)."""
    from visualization import node_grid

    model = VizModel(policy="easy", platform="curie", workload="lublin-feitelson", jobs=100, seed=1)
    monkeypatch.setattr(node_grid, "held_nodes", lambda _: [5, 6, 4000])
    geometry = view_geometry(model.platform)
    assert {geometry.slot_of(node) for node in (5, 6, 4000)} == {1, 1000}  # nodes 4-7, 4000-4003
    scale = picture_scale(geometry)
    body = node_grid_pixels(model)[LABEL_HEIGHT:]
    red = [214, 39, 40]
    for slot in range(len(geometry.bounds) - 1):
        row, column = geometry.cell(slot)
        top, left = scale.px(row), scale.px(column - 1)  # the cross fills the cell left of it
        assert (body[top + 3, left + 3].tolist() == red) == (slot in (1, 1000)), slot
