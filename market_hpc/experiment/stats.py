"""Paired differences between policies with 95% confidence intervals across seeds.

Runs of different policies on the same seed see the same workload, so policies are
compared *paired*: for every seed, the policy's metric minus the baseline's (averaged
over any other varied parameter first), then Student's t interval over seeds. The
verdict says where the interval lies: ``higher`` (above 0: the policy's metric is higher
than the baseline's at 95%), ``lower`` (below 0), ``equal`` (every paired difference 0)
or ``undecided``. The words name a direction, not a judgement, so they read the same for
metrics where lower is better and never collide with a metric's name (e.g. ``holds``).
With few seeds the intervals are wide; that is the honest answer, not a failure.

Decisions:
    * Replicates that do not vary (every seed gives the same paired difference, e.g.
      seeds over a fixed trace with a deterministic policy) get no interval: a
      zero-width "95% interval" would claim a certainty the seeds never tested. The
      bounds are NaN and the verdict is ``no spread`` (``equal`` when the difference is
      0); the difference itself is exact for that workload.
    * The relative difference is the absolute one divided by the magnitude of the
      baseline's mean over the paired seeds, bounds included: ``rel = diff / |mean(base)|``.
      The baseline's mean is taken as a fixed scale (its own uncertainty is not
      propagated), so the relative interval is the absolute interval rescaled and always
      has the same sign and verdict. It is NaN when the baseline's mean is 0.
    * ``p_value`` is the two-sided paired t-test of a mean difference of 0 (as
      ``scipy.stats.ttest_rel``). Differences that do not vary give 0 (all equal and
      nonzero: the same difference on every replicate) or 1 (all 0); fewer than two
      pairs give NaN. ``holm`` adjusts a family of them (Holm 1979).

``paired_differences`` is what ``market-hpc report`` and the demo call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from market_hpc.errors import ConfigError

CONFIDENCE = 0.95
COLUMNS = [
    "policy",
    "baseline",
    "seeds",
    "mean_diff",
    "ci_low",
    "ci_high",
    "rel_mean",
    "rel_low",
    "rel_high",
    "verdict",
    "p_value",
]


NO_SPREAD = "no spread"


def t_interval(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """Mean and two-sided t confidence interval of ``values``; NaN bounds for one value
    or for values that do not vary (no zero-width intervals, see the module docstring).

    >>> mean, low, high = t_interval([1.0, 2.0, 3.0])
    >>> mean, round(low, 3), round(high, 3)
    (2.0, -0.484, 4.484)
    >>> t_interval([5.0, 5.0])
    (5.0, nan, nan)
    """
    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    if data.size < 2:
        return mean, float("nan"), float("nan")
    sem = float(data.std(ddof=1)) / float(np.sqrt(data.size))
    if sem == 0.0:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + confidence / 2, data.size - 1)) * sem
    return mean, float(mean - half), float(mean + half)


def paired_p_value(differences: Sequence[float]) -> float:
    """Two-sided p-value of the paired t-test that the mean of ``differences`` is 0.

    >>> round(paired_p_value([1.0, 2.0, 3.0]), 4)      # t = 2 / (1 / sqrt 3), 2 degrees of freedom
    0.0742
    >>> paired_p_value([3.0, 3.0]), paired_p_value([0.0, 0.0]), paired_p_value([3.0])
    (0.0, 1.0, nan)
    """
    data = np.asarray(differences, dtype=float)
    if data.size < 2:
        return float("nan")
    mean = float(data.mean())
    sem = float(data.std(ddof=1)) / float(np.sqrt(data.size))
    if sem == 0.0:  # no spread: the same difference on every replicate
        return 1.0 if mean == 0.0 else 0.0
    return float(2.0 * stats.t.sf(abs(mean / sem), data.size - 1))


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values of one family of tests (Holm 1979).

    With the ``m`` finite p-values sorted, ``p(1) <= ... <= p(m)``, the adjusted
    ``p(i)`` is ``max over j <= i of min(1, (m - j + 1) p(j))``: rejecting where it is
    below ``alpha`` keeps the family-wise error rate at ``alpha``. NaN p-values (no
    test) stay NaN and are not counted in ``m``.

    >>> # 4 x 0.005, 3 x 0.01, 2 x 0.03, max(1 x 0.04, 0.06)
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(4).tolist()
    [0.03, 0.06, 0.06, 0.02]
    >>> holm([0.5, float("nan"), 0.01]).tolist()                 # m = 2
    [0.5, nan, 0.02]
    """
    values = np.asarray(p_values, dtype=float)
    adjusted = np.full(values.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(values))
    order = tested[np.argsort(values[tested], kind="stable")]
    factors = np.arange(len(order), 0, -1)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(factors * values[order]))
    return adjusted


def verdict(low: float, high: float, differences: Sequence[float] = ()) -> str:
    """``higher`` (interval above 0), ``lower`` (below 0), ``undecided``; for paired
    ``differences`` that do not vary, ``equal`` (all 0) or ``no spread``.

    >>> verdict(0.5, 2.0), verdict(-2.0, -0.1), verdict(-1.0, 1.0)
    ('higher', 'lower', 'undecided')
    >>> nan = float("nan")
    >>> verdict(nan, nan, [0.0, 0.0]), verdict(nan, nan, [3.0, 3.0]), verdict(nan, nan, [3.0])
    ('equal', 'no spread', 'undecided')
    """
    data = np.asarray(differences, dtype=float)
    if data.size >= 2 and np.all(data == data[0]):
        return "equal" if data[0] == 0 else NO_SPREAD
    if low > 0:
        return "higher"
    if high < 0:
        return "lower"
    return "undecided"


def paired_differences(
    frame: pd.DataFrame,
    policy_col: str,
    metric: str,
    seed_col: str,
    baseline: str,
    policies: Sequence[str] | None = None,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Each policy's paired difference to ``baseline`` on ``metric``, across seeds.

    Args:
        frame: One row per run.
        policy_col: Column naming the policy (e.g. ``policy`` or ``policy.scheduler``).
        metric: Column to compare (e.g. ``total_profit``).
        seed_col: Column of the seed; runs with the same seed are paired.
        baseline: The policy every other one is compared with.
        policies: Policies to compare (default: every other policy, in order of appearance).
        confidence: Confidence level of the intervals.

    Returns:
        One row per policy: ``seeds`` (pairs), ``mean_diff`` and its interval
        ``ci_low``/``ci_high`` (NaN when the differences do not vary), the relative
        difference ``diff / |mean of the baseline|`` (``rel_*``, the absolute interval
        rescaled, so it agrees with it in sign and verdict), the ``verdict``
        (``higher``/``lower``/... than the baseline at the confidence level) and the
        paired t-test's two-sided ``p_value`` (``paired_p_value``).
        Other parameters varying in ``frame`` are averaged per seed first; split the frame
        by them to compare within each setting.

    Raises:
        ConfigError: on a missing column or baseline.

    >>> runs = pd.DataFrame({"policy": ["a", "b"] * 3, "seed": [1, 1, 2, 2, 3, 3],
    ...                      "profit": [10.0, 12.0, 20.0, 21.0, 30.0, 33.0]})
    >>> row = paired_differences(runs, "policy", "profit", "seed", "a").iloc[0]
    >>> row.policy, int(row.seeds), float(row.mean_diff), row.verdict
    ('b', 3, 2.0, 'undecided')
    """
    for column in (policy_col, metric, seed_col):
        if column not in frame.columns:
            raise ConfigError(
                f"paired_differences: no column {column!r}; columns are {list(frame.columns)}"
            )
    wide = frame.pivot_table(index=seed_col, columns=policy_col, values=metric, aggfunc="mean")
    if baseline not in wide.columns:
        raise ConfigError(
            f"paired_differences: baseline {baseline!r} not among {list(wide.columns)}"
        )
    names = [p for p in (policies or pd.unique(frame[policy_col])) if p != baseline]
    rows = []
    for name in names:
        pairs = wide[[name, baseline]].dropna()
        diff = pairs[name] - pairs[baseline]
        mean, low, high = t_interval(diff.tolist() or [float("nan")], confidence)
        scale = abs(float(pairs[baseline].mean())) if len(pairs) else 0.0
        rel_mean, rel_low, rel_high = (
            (mean / scale, low / scale, high / scale) if scale > 0 else (float("nan"),) * 3
        )
        rows.append(
            [
                name,
                baseline,
                len(pairs),
                mean,
                low,
                high,
                rel_mean,
                rel_low,
                rel_high,
                verdict(low, high, diff.tolist()),
                paired_p_value(diff.tolist()),
            ]
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def format_differences(table: pd.DataFrame, labels: dict[str, str] | None = None) -> str:
    """Render ``paired_differences`` output as aligned text lines.

    >>> runs = pd.DataFrame(
    ...     {"policy": ["a", "b"] * 2, "seed": [1, 1, 2, 2], "profit": [10.0, 12.0, 20.0, 23.0]}
    ... )
    >>> print(format_differences(paired_differences(runs, "policy", "profit", "seed", "a")))
      b - a: +2.5 (95% CI -3.9..+8.9), +16.7% (-25.7..+59.0%), 2 seeds: undecided
    >>> same = pd.DataFrame(
    ...     {"policy": ["a", "b"] * 2, "seed": [1, 1, 2, 2], "profit": [10.0, 12.0, 10.0, 12.0]}
    ... )
    >>> print(format_differences(paired_differences(same, "policy", "profit", "seed", "a")))
      b - a: +2.0, +20.0%, the same in all 2 seeds: no spread (replicates do not vary; no interval)
    """
    labels = labels or {}
    lines = []
    for row in table.itertuples():
        name, base = labels.get(row.policy, row.policy), labels.get(row.baseline, row.baseline)
        head = f"  {name} - {base}: {row.mean_diff:+,.1f}"
        if row.verdict in (NO_SPREAD, "equal"):
            relative = "" if np.isnan(row.rel_mean) else f", {100 * row.rel_mean:+.1f}%"
            lines.append(
                f"{head}{relative}, the same in all {row.seeds} seeds: {row.verdict} "
                "(replicates do not vary; no interval)"
            )
            continue
        relative = (
            ""
            if np.isnan(row.rel_mean)
            else f"{100 * row.rel_mean:+.1f}% "
            f"({100 * row.rel_low:+.1f}..{100 * row.rel_high:+.1f}%), "
        )
        lines.append(
            f"{head} (95% CI {row.ci_low:+,.1f}..{row.ci_high:+,.1f}), "
            f"{relative}{row.seeds} seeds: {row.verdict}"
        )
    return "\n".join(lines)


RELATIVE_METHOD = (
    "relative = difference / |mean of the baseline over the paired seeds|, "
    "interval bounds included, so it agrees with the absolute interval"
)


POLICY_COLUMNS = ("scheduler", "policy.scheduler", "policy")


def paired_tables(
    frame: pd.DataFrame, varying: Sequence[str], metric: str, out: Path
) -> list[Path]:
    """Write the paired differences of a sweep's policies on ``metric`` into ``out``.

    The first policy of the sweep (plan order) is the baseline; the differences are
    computed separately for every combination of the other varying parameters. Writes
    ``<metric>_paired_differences.csv`` and a ``.txt`` rendering (``market-hpc report``
    prints it); nothing when no policy column varies or there are fewer than two seeds.
    """
    policy_col = next((c for c in POLICY_COLUMNS if c in varying), None)
    if policy_col is None or "seed" not in frame or frame["seed"].nunique() < 2:
        return []
    runs = frame.assign(**{policy_col: frame[policy_col].astype(str)})
    names = list(pd.unique(runs[policy_col]))
    others = [c for c in varying if c != policy_col]
    tables, lines = (
        [],
        [f"{metric}: paired differences to {names[0]} across seeds (95% t intervals)"],
    )
    for key, group in runs.groupby(others, sort=False) if others else [((), runs)]:
        setting = ", ".join(
            f"{c}={v}" for c, v in zip(others, key if isinstance(key, tuple) else (key,))
        )
        table = paired_differences(group, policy_col, metric, "seed", names[0], names[1:])
        tables.append(table.assign(**dict(zip(others, key if isinstance(key, tuple) else (key,)))))
        lines += [setting or "all runs", format_differences(table)]
    csv, txt = out / f"{metric}_paired_differences.csv", out / f"{metric}_paired_differences.txt"
    pd.concat(tables, ignore_index=True).to_csv(csv, index=False)
    txt.write_text("\n".join(lines) + "\n")
    return [csv, txt]
