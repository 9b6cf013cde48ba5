"""The docs pages' key figures: drawn by ``scripts/docs_figures.py`` from small results
tables, as SVG that parses, names its series and is the same for the same table; the
committed figures stay small; the demo's Fig. 6 is written as SVG too."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

from market_hpc.studies.market_figures import profit_figure

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ("market", "cp", "bbsched", "queues", "heterogeneity")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_figures", ROOT / "scripts" / "docs_figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return [
        "".join(node.itertext()).strip() for node in root.iter("{http://www.w3.org/2000/svg}text")
    ]


def test_a_figure_regenerates_from_a_tiny_results_table(tmp_path: Path) -> None:
    script = _script()
    table = pd.DataFrame(
        {
            "workload": ["A-S1", "B-S2"] * 2,
            "metric": ["mean wait"] * 2 + ["mean slowdown"] * 2,
            "mean": [-5.0, 2.0, -1.0, 3.0],
            "low": [-9.0, -1.0, -4.0, 0.5],
            "high": [-1.0, 5.0, 2.0, 6.0],
        }
    )
    first = script.bbsched_figure(table, tmp_path / "one.svg")
    texts = _texts(first)
    for name in ("mean wait", "mean slowdown", "A-S1", "B-S2"):
        assert name in texts, f"{name!r} missing from the SVG's text: {texts}"
    second = script.bbsched_figure(table, tmp_path / "two.svg")
    assert first.read_bytes() == second.read_bytes()  # no date, fixed ids
    changed = script.bbsched_figure(
        table.assign(workload=["A-S1", "C-S3"] * 2), tmp_path / "three.svg"
    )
    assert "C-S3" in _texts(changed) and "B-S2" not in _texts(changed)


def test_market_figure_from_demo_runs(tmp_path: Path) -> None:
    script = _script()
    rng = np.random.default_rng(3)
    rows = [
        {
            "curves": curves,
            "policy": policy,
            "n_jobs": size,
            "seed": seed,
            "total_profit": 1000 + 100 * policy.endswith("h") + rng.normal(0, 10),
        }
        for curves in ("spec", "steep")
        for policy in ("sjq", "sjqh", "maxv", "maxvh")
        for size in (10, 20)
        for seed in (1, 2, 3)
    ]
    path = script.market_figure(pd.DataFrame(rows), tmp_path / "market.svg")
    texts = _texts(path)
    assert {"spec value curves", "steep value curves", "SJQH - SJQ", "maxVH - maxV"} <= set(texts)
    assert "maxVDH - maxVD" not in texts  # only the pairs the runs have


def test_committed_figures_are_small_svgs_of_their_tables() -> None:
    script = _script()
    for study in STUDIES:
        path = ROOT / "docs" / "img" / f"{study}.svg"
        assert path.stat().st_size < 60_000, f"{path} is {path.stat().st_size} bytes"
        texts = set(_texts(path))
        table = pd.read_csv(ROOT / "docs" / "data" / script.FIGURES[study][0])
        column = {"cp": "dispatcher", "bbsched": "workload", "queues": "strategy"}.get(study)
        names = set(table[column]) if column else set()
        assert names <= texts, f"{study}.svg lacks {names - texts}"
        page = (ROOT / "docs" / f"{study}.md").read_text()
        assert f"](img/{study}.svg)" in page


def test_demo_figure_is_written_as_png_and_svg(tmp_path: Path) -> None:
    rows = [
        {"policy": policy, "n_jobs": size, "seed": seed, "total_profit": 100.0 * seed + size}
        for policy in ("maxv", "maxvh")
        for size in (10, 25)
        for seed in (1, 2)
    ]
    png = profit_figure(
        pd.DataFrame(rows),
        tmp_path / "profit_vs_jobs.png",
        "spec",
        {"maxv": "maxV", "maxvh": "maxVH"},
        ["maxv", "maxvh"],
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    texts = _texts(png.with_suffix(".svg"))
    assert "maxV" in texts and "maxVH" in texts
