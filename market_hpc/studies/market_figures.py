"""Paper-ready figures of the market study (Singh et al., HPCS'15, Fig. 6, and the demo's plot),
each written as PNG and as SVG.

Every series has its own colour *and* marker (12 of each, so SJQ and maxVD-LH never
share a blue), the mean over seeds carries a 95% Student t band from the seeds, and the
value-curve regime is named in the title. Error bars are dodged sideways, so series with
equal means stay visible. Policies whose absolute profits lie on top of
each other (maxV, maxVD, maxVH, maxVDH) are separated in a second panel: each policy's
paired difference to maxV per seed, in percent, with its 95% interval.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from market_hpc.experiment.stats import t_interval

# Twelve colours that stay apart in print and for common colour-vision deficiencies
# (Paul Tol's "muted" and "bright" sets), and twelve markers.
COLOURS = (
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#999933",
    "#DDCC77",
    "#CC6677",
    "#882255",
    "#AA4499",
    "#EE6677",
    "#4477AA",
    "#BBBBBB",
)
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p")
REGIMES = {
    "spec": "spec value curves (decay β ~ U[1, 3])",
    "steep": "steep value curves (decay β ~ U[0.2, 0.6], the paper's regime)",
}
BASELINE = "maxv"


def series_style(index: int) -> dict[str, object]:
    """Colour and marker of the ``index``-th series (distinct for 12 series).

    >>> len({(series_style(i)["color"], series_style(i)["marker"]) for i in range(12)})
    12
    """
    return {"color": COLOURS[index % len(COLOURS)], "marker": MARKERS[index % len(MARKERS)]}


def profit_bands(table: pd.DataFrame, policies: list[str]) -> pd.DataFrame:
    """Mean total profit per policy and job-set size with its 95% t interval over seeds.

    >>> runs = pd.DataFrame({"policy": ["a"] * 3, "n_jobs": [10] * 3, "seed": [1, 2, 3],
    ...                      "total_profit": [1.0, 2.0, 3.0]})
    >>> row = profit_bands(runs, ["a"]).iloc[0]
    >>> float(row["mean"]), round(float(row.low), 3), int(row.seeds)
    (2.0, -0.484, 3)
    """
    rows = []
    for policy in policies:
        part = table[table.policy == policy]
        for size, group in part.groupby("n_jobs"):
            per_seed = group.groupby("seed")["total_profit"].mean()
            mean, low, high = t_interval(per_seed.tolist())
            rows.append(
                {
                    "policy": policy,
                    "n_jobs": size,
                    "mean": mean,
                    "low": low,
                    "high": high,
                    "seeds": len(per_seed),
                }
            )
    return pd.DataFrame(rows)


def relative_to(table: pd.DataFrame, policies: list[str], baseline: str) -> pd.DataFrame:
    """Each policy's paired difference to ``baseline`` in % per size, with its 95% interval.

    The percentage is the paired difference (interval included) over |mean of the
    baseline| (``stats.RELATIVE_METHOD``), as the demo prints it, so the panel and the
    printed claims agree in sign and verdict.
    """
    wide = table.pivot_table(index=["n_jobs", "seed"], columns="policy", values="total_profit")
    rows = []
    for policy in policies:
        if policy == baseline or policy not in wide:
            continue
        for size, pairs in wide[[policy, baseline]].dropna().groupby(level="n_jobs"):
            mean, low, high = t_interval(
                (pairs[policy] - pairs[baseline]).tolist() or [float("nan")]
            )
            scale = abs(float(pairs[baseline].mean())) if len(pairs) else 0.0
            percent = 100 / scale if scale > 0 else float("nan")
            rows.append(
                {
                    "policy": policy,
                    "n_jobs": size,
                    "mean": mean * percent,
                    "low": low * percent,
                    "high": high * percent,
                }
            )
    return pd.DataFrame(rows)


def profit_figure(
    table: pd.DataFrame,
    path: Path,
    curves: str,
    labels: dict[str, str],
    policies: list[str],
    figure_name: str = "Fig. 6",
) -> Path:
    """Draw mean profit by job-set size with 95% bands, and the change against maxV."""
    present = [p for p in policies if p in set(table.policy)]
    bands = profit_bands(table, present)
    figure = Figure(figsize=(12.5, 5.0), layout="constrained")
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1.15, 1]})
    sizes = sorted(table.n_jobs.unique())
    span = (sizes[-1] - sizes[0]) or 1.0
    for index, policy in enumerate(present):
        style = series_style(index)
        rows = bands[bands.policy == policy]
        offset = (index - (len(present) - 1) / 2) * span * 0.004  # dodge the error bars
        errors = np.nan_to_num(np.vstack([rows["mean"] - rows.low, rows.high - rows["mean"]]))
        left.errorbar(
            rows.n_jobs + offset,
            rows["mean"],
            yerr=errors,
            capsize=2,
            markersize=5,
            elinewidth=0.8,
            label=labels.get(policy, policy),
            linestyle="-" if policy.endswith("h") else "--",
            **style,
        )
    left.set_xticks(sizes)
    left.set_xlabel("jobs in the set")
    left.set_ylabel("total profit (mean over seeds, 95% CI)")
    left.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    left.grid(alpha=0.3)
    change = relative_to(table, present, BASELINE)
    position = {size: number for number, size in enumerate(sizes)}
    for index, policy in enumerate(present):
        rows = change[change.policy == policy]
        if rows.empty:
            continue
        style = series_style(index)
        offset = (index - (len(present) - 1) / 2) * 0.8 / len(present)  # side by side
        errors = np.nan_to_num(np.vstack([rows["mean"] - rows.low, rows.high - rows["mean"]]))
        right.errorbar(
            rows.n_jobs.map(position) + offset,
            rows["mean"],
            yerr=errors,
            linestyle="none",
            capsize=2,
            markersize=5,
            **style,
        )
    right.axhline(0, color="black", linewidth=0.8)
    right.set_xticks(range(len(sizes)), [str(size) for size in sizes])
    right.set_xlabel("jobs in the set (policies side by side, in legend order)")
    right.set_ylabel(f"profit vs {labels.get(BASELINE, BASELINE)} (%), paired by seed, 95% CI")
    right.grid(alpha=0.3)
    seeds = int(table.seed.nunique())
    left.legend(ncol=2, fontsize="small", loc="upper left", frameon=False)
    figure.suptitle(
        f"Overall profit by job-set size (cf. Singh et al. 2015, {figure_name}): "
        f"{REGIMES.get(curves, curves)}, {seeds} seeds",
        fontsize="medium",
    )
    figure.savefig(path, dpi=150)
    save_svg(figure, path.with_suffix(".svg"))
    return path


def save_svg(figure: Figure, path: Path) -> Path:
    """Write ``figure`` as an SVG that is small and the same for the same data: text kept as
    SVG text, no date, element ids from a fixed salt."""
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "market_hpc"}):
        figure.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    return path
