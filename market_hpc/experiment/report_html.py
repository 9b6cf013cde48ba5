"""``report.html``: every plot and table of a sweep report in one self-contained file.

PNGs are embedded as ``data:`` URIs and tables as HTML, so the file can be mailed or
attached to a paper's supplementary material without its folder. No JavaScript, no
external resources.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from market_hpc.experiment.metrics_table import METRICS, metric
from market_hpc.experiment.stats import COLUMNS, RELATIVE_METHOD

if TYPE_CHECKING:
    from market_hpc.experiment.report_data import SweepData

MAX_TABLE_ROWS = 200

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1em; margin-top: 1.5em; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; }
.note { color: #8a4b00; }
details { margin: 0.3em 0 1em; }
"""


@dataclass(frozen=True)
class Figureset:
    """One plot of the report and the table it was drawn from.

    Attributes:
        metric: The metric it shows.
        png: The picture.
        csv: Its table.
    """

    metric: str
    png: Path
    csv: Path


def _table(frame: pd.DataFrame) -> str:
    shown = frame.head(MAX_TABLE_ROWS)
    text: str = shown.to_html(index=False, float_format=plain, na_rep="", border=0)
    if len(frame) > MAX_TABLE_ROWS:
        text += f"<p>first {MAX_TABLE_ROWS} of {len(frame)} rows; all in the CSV file</p>"
    return text


def plain(value: float, signed: bool = False) -> str:
    """A number as people write it: thousands separators, no exponent, 3-4 significant
    digits for small values.

    >>> plain(15190.4), plain(1400.0), plain(2.345), plain(0.01234), plain(-3.0, signed=True)
    ('15,190', '1,400', '2.35', '0.0123', '-3.00')
    >>> plain(0.5, signed=True), plain(float("nan"))
    ('+0.500', 'n/a')
    """
    if not np.isfinite(value):
        return "n/a"
    sign = "+" if signed else ""
    size = abs(value)
    if size >= 100 or value == 0:
        return f"{value:{sign},.0f}"
    if size >= 1:
        return f"{value:{sign},.2f}"
    digits = 2 - int(np.floor(np.log10(size)))  # three significant digits
    return f"{value:{sign}.{digits}f}"


CLIPPED = "clipped"
CLIP_METHOD = (
    "a bound below -100 % (a policy value below 0, impossible for a metric that "
    "cannot be negative; the t interval is too wide for the seeds it has) is cut at "
    "-100 % and marked clipped; the paired-differences CSV keeps the t bound"
)


def cannot_be_negative(name: str) -> bool:
    """Whether the metric ``name`` is never below 0 (every metric of the table but those
    in value units: profit and value can be negative; unknown columns: not assumed).

    >>> cannot_be_negative("mean_bounded_slowdown"), cannot_be_negative("total_profit")
    (True, False)
    >>> cannot_be_negative("some_new_column")
    False
    """
    return name in METRICS and METRICS[name].unit != "value units"


def possible_relative(name: str, low: float, high: float) -> tuple[float, float, bool]:
    """The relative interval cut to what the metric allows: a policy's value is never below
    0 for a metric that cannot be negative, so its relative difference to a positive
    baseline is never below -100 %. Returns the bounds and whether the low one was cut.

    >>> possible_relative("mean_bounded_slowdown", -2.037, 0.204)
    (-1.0, 0.204, True)
    >>> possible_relative("total_profit", -2.037, 0.204)
    (-2.037, 0.204, False)
    """
    if cannot_be_negative(name) and np.isfinite(low) and low < -1.0:
        return -1.0, max(high, -1.0), True
    return low, high, False


def relative_text(name: str, mean: float, low: float, high: float) -> str:
    """The relative difference and its interval in percent, cut to what is possible
    (``possible_relative``), ``n/a`` without one.

    >>> relative_text("mean_bounded_slowdown", -0.917, -2.037, 0.204)
    '-91.7 % [-100 (clipped), +20.4] %'
    >>> relative_text("mean_wait", 0.05, float("nan"), float("nan"))
    '+5.0 %'
    """
    if not np.isfinite(mean):
        return "n/a"
    if not np.isfinite(low):
        return f"{100 * mean:+.1f} %"
    low, high, cut = possible_relative(name, low, high)
    low_text = f"{100 * low:+.0f} ({CLIPPED})" if cut else f"{100 * low:+.1f}"
    return f"{100 * mean:+.1f} % [{low_text}, {100 * high:+.1f}] %"


def _unit(name: str) -> str:
    unit = metric(name).unit
    return "" if unit in ("", "fraction") else f" {unit}"


def _summary(data: SweepData, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per point: the parameters and ``mean ± std unit (n)`` of each metric."""
    keys = [a.key for a in data.axes] or [data.frame.columns[0]]
    grouped = data.frame.groupby(keys, sort=False, observed=True)
    table = grouped[list(metrics)].agg(["mean", "std", "count"])
    out = table.index.to_frame(index=False)
    for name in metrics:
        mean, std, n = (table[(name, s)].to_numpy() for s in ("mean", "std", "count"))
        unit = _unit(name)
        out[metric(name).label] = [
            f"{plain(m)} ± {plain(s)}{unit} ({c})" if c > 1 else f"{plain(m)}{unit}"
            for m, s, c in zip(mean, std, n)
        ]
    return out


def paired_section(name: str, csv: Path) -> str:
    """The paired differences of one metric as an HTML table with 95% intervals."""
    table = pd.read_csv(csv)
    unit = _unit(name)
    settings = [c for c in table.columns if c not in COLUMNS]
    rows = pd.DataFrame({c: table[c] for c in settings})
    rows["comparison"] = table["policy"].astype(str) + " − " + table["baseline"].astype(str)
    rows["seeds"] = table["seeds"]
    rows[f"difference{f' ({unit.strip()})' if unit else ''} [95% CI]"] = [
        f"{plain(m, True)} [{plain(lo, True)}, {plain(hi, True)}]"
        if np.isfinite(lo)
        else f"{plain(m, True)} (same every seed, no interval)"
        for m, lo, hi in zip(table["mean_diff"], table["ci_low"], table["ci_high"])
    ]
    rows["relative [95% CI]"] = [
        relative_text(name, m, lo, hi)
        for m, lo, hi in zip(table["rel_mean"], table["rel_low"], table["rel_high"], strict=True)
    ]
    rows["at 95 %"] = table["verdict"]
    better = metric(name).better
    hint = f" ({better} is better)" if better else ""
    return (
        f"<h3>{html.escape(metric(name).label)}{html.escape(hint)}</h3>"
        + _table(rows)
        + "<p>Per seed, the policy's value minus the baseline's (other varied parameters "
        "averaged per seed first, except those listed), then a Student t interval over "
        "seeds. <em>higher</em> / <em>lower</em>: the whole interval lies above / below 0; "
        "<em>undecided</em>: it contains 0; <em>equal</em>: every difference is 0; "
        "<em>no spread</em>: the same nonzero difference in every seed (no interval). "
        f"{html.escape(RELATIVE_METHOD[0].upper() + RELATIVE_METHOD[1:])}; "
        f"{html.escape(CLIP_METHOD)}.</p>"
    )


def image_html(png: Path, alt: str) -> str:
    """A PNG embedded as a ``data:`` URI, and the names of its files (PNG, SVG)."""
    encoded = base64.b64encode(png.read_bytes()).decode()
    svg = png.with_suffix(".svg")
    files = f"{png.name}, {svg.name}" if svg.is_file() else png.name
    return (
        f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{encoded}'>"
        f"<p>files: {html.escape(files)}</p>"
    )


def _figure(figure: Figureset) -> str:
    return (
        f"<h3>{html.escape(figure.png.stem)}</h3>"
        + image_html(figure.png, figure.png.stem)
        + f"<details><summary>table ({html.escape(figure.csv.name)})</summary>"
        f"{_table(pd.read_csv(figure.csv))}</details>"
    )


def write_html(
    path: Path,
    directory: Path,
    data: SweepData,
    metrics: Sequence[str],
    figures: Sequence[Figureset],
    paired: dict[str, Path] | None = None,
    tables: Sequence[tuple[str, Path]] = (),
    summary: str = "",
    forests: Sequence[Figureset] = (),
    decision: str = "",
) -> Path:
    """Write the report page and return its path.

    The page opens with ``decision`` (a leaderboard's: ``report_decision``), then ``summary`` (what
    was compared, the significant differences), then the ``forests`` (paired differences with 95%
    intervals, one per metric), then every plot, then the tables, collapsed: ``paired`` (metric ->
    paired-differences CSV), the mean ± std per point, and ``tables`` ((title, CSV file) sections).
    """
    manifest_file = directory / "sweep.json"
    manifest = json.loads(manifest_file.read_text()) if manifest_file.is_file() else {}
    title = f"Sweep report: {Path(manifest.get('sweep_file', str(directory))).name}"
    parts = [
        (
            "<!DOCTYPE html><html lang='en'><head><meta "
            f"charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
        )
    ]
    parts.append(decision)
    parts.append(summary)
    parts += [f"<p class='note'>{html.escape(note)}</p>" for note in data.notes]
    if forests:
        parts.append("<h2>Paired differences between policies, 95% confidence intervals</h2>")
        parts += [_figure(figure) for figure in forests]
    for name in metrics:
        parts.append(f"<h2>{html.escape(metric(name).axis_label)}</h2>")
        parts += [_figure(figure) for figure in figures if figure.metric == name]
    parts.append("<h2>Tables</h2>")
    if paired:
        parts.append(
            "<details><summary>Paired differences between policies (95% confidence "
            "intervals)</summary>"
            + "".join(paired_section(name, csv) for name, csv in paired.items())
            + "</details>"
        )
    parts.append(
        "<details><summary>Summary: mean ± std over seeds (n)</summary>"
        + _table(_summary(data, metrics))
        + "</details>"
    )
    for title_text, table in tables:
        parts.append(
            f"<details><summary>{html.escape(title_text)}</summary>"
            + _table(pd.read_csv(table))
            + "</details>"
        )
    axes = ", ".join(a.name for a in data.axes) or "none"
    parts.append(
        f"<p>{len(data.frame)} runs finished ok; axes: {html.escape(axes)}; seeds: "
        f"{html.escape(str(manifest.get('seeds', '?')))}; results folder "
        f"<code>{html.escape(str(directory.resolve()))}</code>. Each point of the plots is the "
        "mean over "
        "seeds; bands and whiskers span min to max. Every figure is also saved as SVG next to "
        "its PNG.</p>"
    )
    parts.append("</body></html>\n")
    path.write_text("".join(parts), encoding="utf-8")
    return path
