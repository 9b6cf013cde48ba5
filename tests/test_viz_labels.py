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
