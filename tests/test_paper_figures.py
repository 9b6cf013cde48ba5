"""Paper-ready market figures: distinct styles, 95% intervals from seeds, regime named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from market_hpc.studies import market_figures as paper_figures
from market_hpc.studies.demo import LABELS, LOOKAHEAD, POLICIES
from market_hpc.studies.market_figures import profit_bands, relative_to


def study() -> pd.DataFrame:
    rows = []
    for index, policy in enumerate(POLICIES + LOOKAHEAD):
        for seed in (1, 2, 3):
            for size in (10, 20):
                rows.append(
                    {
                        "policy": policy,
                        "seed": seed,
                        "n_jobs": size,
                        "total_profit": 100.0 * size + 10 * index + seed,
                    }
                )
    return pd.DataFrame(rows)


def test_bands_and_relative_change_are_the_seed_intervals() -> None:
    table = study()
    bands = profit_bands(table, ["maxv"]).set_index("n_jobs")
    assert bands.loc[10, "mean"] == pytest.approx(1000 + 10 + 2)  # maxv is index 1
    assert bands.loc[10, "low"] == pytest.approx(1012 - 4.303 * 1 / 3**0.5 * 1.0, abs=1e-2)
    change = relative_to(table, ["maxv", "maxvh"], "maxv").set_index("n_jobs")
    assert list(change.policy) == ["maxvh", "maxvh"]  # the baseline itself is not drawn
    # maxvh (index 5) is 40 above maxv on every seed: 40 / mean(1011, 1012, 1013) in %, and no
    # interval, since the difference does not vary between seeds
    assert change.loc[10, "mean"] == pytest.approx(100 * 40 / 1012)
    assert np.isnan(change.loc[10, "low"]) and np.isnan(change.loc[10, "high"])


def test_every_series_has_its_own_colour_and_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[Figure] = []
    original = Figure.savefig

    def keep(self: Figure, *args: object, **kwargs: object) -> None:
        drawn.append(self)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Figure, "savefig", keep)
    paper_figures.profit_figure(
        study(), tmp_path / "f.png", "steep", LABELS, list(POLICIES + LOOKAHEAD)
    )
    (figure,) = set(drawn)  # one figure, saved as PNG and as SVG
    assert len(drawn) == 2
    left = figure.axes[0]
    styles = {
        (line.get_color(), line.get_marker())
        for line in left.get_lines()
        if line.get_marker() in paper_figures.MARKERS
    }
    assert len(styles) == 12
    assert "the paper's regime" in figure._suptitle.get_text()  # type: ignore[union-attr]
    assert "3 seeds" in figure._suptitle.get_text()  # type: ignore[union-attr]
    assert "95% CI" in left.get_ylabel() and "paired" in figure.axes[1].get_ylabel()
