#!/usr/bin/env python3
"""Draw the key figure of each family's study for its docs page, as a small SVG.

Each figure is drawn from that study's results table in ``docs/data/`` (the numbers the
study scripts printed and the page's tables give) and written to ``docs/img/`` with the
text kept as SVG text, no date and fixed element ids, so the same table gives the same
bytes. The market figure is drawn from the demo's ``comparison.csv`` (``market-hpc demo
--seeds 5``; its policy, value curves, job-set size, seed and profit columns are kept in
``docs/data/market_demo.csv``) with the demo's own statistics.

Usage (from the repository root)::

    python scripts/docs_figures.py                 # every figure
    python scripts/docs_figures.py bbsched cp      # some of them
    python scripts/docs_figures.py market --market-comparison out/demo/comparison.csv
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from market_hpc.experiment.stats import t_interval
from market_hpc.studies.market_figures import save_svg, series_style

DATA, IMAGES = ROOT / "docs" / "data", ROOT / "docs" / "img"
MARKET_PAIRS = (
    ("sjq", "sjqh", "SJQH - SJQ"),
    ("maxv", "maxvh", "maxVH - maxV"),
    ("maxvd", "maxvdh", "maxVDH - maxVD"),
    ("minvr", "minvrh", "minVRH - minVR"),
)
MARKET_COLUMNS = ["curves", "policy", "n_jobs", "seed", "total_profit"]


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_svg(figure, path)


def forest(
    axes: object,
    labels: list[str],
    mean: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    index: int,
    name: str,
    shift: float = 0.0,
) -> None:
    """One series of a forest plot: a point and its 95 % interval per row."""
    rows = np.arange(len(labels)) + shift
    axes.errorbar(
        mean,
        rows,
        xerr=np.vstack([mean - low, high - mean]),
        linestyle="none",
        capsize=2,  # type: ignore[attr-defined]
        markersize=5,
        label=name,
        **series_style(index),
    )


def forest_groups(
    axes: object, table: pd.DataFrame, group: str, label: str, labels: list[str]
) -> None:
    """One forest series per value of ``group`` (its rows by ``label``, in ``labels`` order)."""
    for index, (name, rows) in enumerate(table.groupby(group, sort=False)):
        rows = rows.set_index(label).loc[labels]
        forest(
            axes,
            labels,
            rows["mean"].to_numpy(),
            rows["low"].to_numpy(),
            rows["high"].to_numpy(),
            index,
            str(name),
            shift=0.15 if index else -0.15,
        )
    axes.axvline(0, color="black", linewidth=0.8)  # type: ignore[attr-defined]


def finish_rows(axes: object, labels: list[str], xlabel: str, title: str, legend: str) -> None:
    """Row labels top to bottom, the x label, a light grid, the legend and the title."""
    axes.set_yticks(range(len(labels)), labels)  # type: ignore[attr-defined]
    axes.invert_yaxis()  # type: ignore[attr-defined]
    axes.set_xlabel(xlabel)  # type: ignore[attr-defined]
    axes.grid(axis="x", alpha=0.3)  # type: ignore[attr-defined]
    axes.legend(fontsize="small", frameon=False, loc=legend)  # type: ignore[attr-defined]
    axes.set_title(title, fontsize="medium")  # type: ignore[attr-defined]


def market_claims(table: pd.DataFrame) -> pd.DataFrame:
    """Each "H beats its base" claim per value-curve regime: the paired difference over seeds
    (a seed's job sets averaged, Student's t), in % of the base's mean, as the demo prints it.

    >>> runs = pd.DataFrame({"curves": "spec", "policy": ["sjq", "sjqh"] * 3, "n_jobs": 10,
    ...                      "seed": [1, 1, 2, 2, 3, 3],
    ...                      "total_profit": [10.0, 11, 10, 12, 10, 13]})
    >>> row = market_claims(runs).iloc[0]
    >>> row["claim"], float(row["mean"]), round(float(row["low"]), 1)
    ('SJQH - SJQ', 20.0, -4.8)
    """
    rows = []
    for curves, study in table.groupby("curves", sort=False):
        per_seed = study.groupby(["policy", "seed"])["total_profit"].mean().unstack("policy")
        for base, held, claim in MARKET_PAIRS:
            if base not in per_seed or held not in per_seed:
                continue
            mean, low, high = t_interval((per_seed[held] - per_seed[base]).dropna().tolist())
            scale = 100 / abs(float(per_seed[base].mean()))
            rows.append(
                {
                    "curves": curves,
                    "claim": claim,
                    "mean": mean * scale,
                    "low": low * scale,
                    "high": high * scale,
                    "seeds": int(per_seed[base].notna().sum()),
                }
            )
    return pd.DataFrame(rows)


def market_figure(table: pd.DataFrame, path: Path) -> Path:
    """Forest plot of the holding claims, spec and steep value curves side by side."""
    claims = market_claims(table)
    claims = claims.assign(regime=claims["curves"] + " value curves")
    labels = [claim for _, _, claim in MARKET_PAIRS if claim in set(claims["claim"])]
    figure = Figure(figsize=(7.0, 3.0), layout="constrained")
    axes = figure.add_subplot()
    forest_groups(axes, claims, "regime", "claim", labels)
    seeds = int(claims["seeds"].max()) if len(claims) else 0
    finish_rows(
        axes,
        labels,
        "profit change (% of the base policy), paired by seed, 95 % CI",
        f"Holding against its base policy (market demo, {seeds} seeds)",
        "center right",
    )
    return _save(figure, path)


def bbsched_figure(table: pd.DataFrame, path: Path) -> Path:
    """Forest plot of BBSched against the baseline per workload, mean wait and slowdown."""
    labels = list(dict.fromkeys(table["workload"]))
    figure = Figure(figsize=(7.0, 3.4), layout="constrained")
    axes = figure.add_subplot()
    forest_groups(axes, table, "metric", "workload", labels)
    finish_rows(
        axes,
        labels,
        "BBSched against the baseline (% of the baseline), 95 % CI",
        "BBSched in the burst-buffer-bound regime (5 seeds)",
        "upper right",
    )
    return _save(figure, path)


def cp_figure(table: pd.DataFrame, path: Path) -> Path:
    """Mean slowdown per dispatcher on the two systems."""
    systems = list(dict.fromkeys(table["system"]))
    dispatchers = list(dict.fromkeys(table["dispatcher"]))
    figure = Figure(figsize=(7.0, 3.0), layout="constrained")
    axes = figure.add_subplot()
    width = 0.8 / len(systems)
    for index, system in enumerate(systems):
        rows = table[table["system"] == system].set_index("dispatcher").reindex(dispatchers)
        axes.barh(
            np.arange(len(dispatchers)) + (index - (len(systems) - 1) / 2) * width,
            rows["slowdown"],
            height=width,
            label=system,
            color=series_style(index)["color"],
        )
    finish_rows(
        axes,
        dispatchers,
        "mean slowdown (lower is better), mean of the seeds",
        "CP dispatchers in the saturated regime",
        "lower right",
    )
    return _save(figure, path)


def queues_figure(table: pd.DataFrame, path: Path) -> Path:
    """Mean wait per strategy and planning period, HPC2N and Curie."""
    studies = list(dict.fromkeys(table["study"]))
    strategies = list(dict.fromkeys(table["strategy"]))
    figure = Figure(figsize=(7.0, 3.0), layout="constrained")
    panels = figure.subplots(1, len(studies), sharey=True, squeeze=False)[0]
    for panel, study in zip(panels, studies, strict=True):
        part = table[table["study"] == study]
        for index, strategy in enumerate(strategies):
            rows = part[part["strategy"] == strategy].sort_values("period")
            if len(rows):
                panel.plot(
                    rows["period"], rows["mean_wait_h"], label=strategy, **series_style(index)
                )
        panel.set_yscale("log")
        panel.set_xticks(sorted(part["period"].unique()))
        panel.set_xlabel("planning period (month)")
        panel.set_title(study, fontsize="medium")
        panel.grid(alpha=0.3)
    panels[0].set_ylabel("mean wait (hours, log)")
    panels[-1].legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(figure, path)


def heterogeneity_figure(table: pd.DataFrame, path: Path) -> Path:
    """Slowdown gain of the best heterogeneity-aware
    allocator over first fit, ours and the paper's."""
    labels = [
        f"{month} {scheduler}"
        for month, scheduler in zip(table["month"], table["scheduler"], strict=True)
    ]
    figure = Figure(figsize=(7.0, 3.6), layout="constrained")
    axes = figure.add_subplot()
    rows = np.arange(len(labels))
    for index, (column, name) in enumerate(
        (
            ("ours_gain_s_vs_ff", "this project (3 seeds)"),
            ("paper_gain_s_vs_ff", "paper (Tables 2-3)"),
        )
    ):
        axes.barh(
            rows + (index - 0.5) * 0.4,
            table[column],
            height=0.4,
            label=name,
            color=series_style(index)["color"],
        )
    axes.axvline(0, color="black", linewidth=0.8)
    finish_rows(
        axes,
        labels,
        "mean slowdown: gain of the best of B / W / P-W over FF (%)",
        "Heterogeneity-aware allocation on the Eurora-like months",
        "lower right",
    )
    return _save(figure, path)


FIGURES: dict[str, tuple[str, Callable[[pd.DataFrame, Path], Path]]] = {
    "market": ("market_demo.csv", market_figure),
    "bbsched": ("bbsched_study.csv", bbsched_figure),
    "cp": ("cp_study.csv", cp_figure),
    "queues": ("queues_study.csv", queues_figure),
    "heterogeneity": ("heterogeneity_study.csv", heterogeneity_figure),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="*", choices=[*FIGURES, []], help="default: every study")
    parser.add_argument(
        "--market-comparison",
        type=Path,
        help="a demo's comparison.csv: keep its columns in docs/data/market_demo.csv first",
    )
    args = parser.parse_args(argv)
    if args.market_comparison:
        pd.read_csv(args.market_comparison)[MARKET_COLUMNS].to_csv(
            DATA / "market_demo.csv", index=False
        )
    for study in args.studies or list(FIGURES):
        table_name, draw = FIGURES[study]
        path = draw(pd.read_csv(DATA / table_name), IMAGES / f"{study}.svg")
        print(
            f"{path.relative_to(ROOT)} ({path.stat().st_size / 1024:.1f} KB) from "
            f"docs/data/{table_name}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
