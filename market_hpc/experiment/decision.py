"""Which policies a centre should consider, per setting: those no other policy beats
significantly on the chosen objective.

Decisions:
    * **Beats.** Policy A beats B in a setting (trace x load) when, paired by replicate
      (the time slice: both replayed the same jobs), the mean of A - B is in the metric's
      better direction and a two-sided paired t-test rejects "no difference" at ``alpha``
      after Holm's correction over every pair of policies of that setting (Holm 1979,
      "A simple sequentially rejective multiple test procedure"). A setting of k policies
      makes k (k - 1) / 2 tests; Holm keeps the chance of any false "beats" in it below
      ``alpha`` without assuming the tests independent.
    * **p-values** are the leaderboard's (``stats.paired_p_value``, ``stats.holm``): the
      same nonzero difference on every replicate has p = 0 (it beats, as the
      leaderboard's marks read it), all differences 0 have p = 1; pairs with fewer than two
      common replicates get no p-value, never count as a "beats" and do not count in
      Holm's m. The family is a setting's pairs here, not a metric's whole leaderboard:
      the decision is taken per setting.
    * **Decision set.** The policies of a setting that no other policy beats. With few
      replicates it is large: that is the honest answer (the slices cannot separate them),
      not a failure.

The functions are pure: frames in, frames out; ``report_decision`` draws them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from market_hpc.errors import ConfigError
from market_hpc.experiment.leaderboard import ALPHA
from market_hpc.experiment.stats import holm, paired_p_value

PAIR_COLUMNS = [
    "setting",
    "policy_a",
    "policy_b",
    "pairs",
    "mean_diff",
    "p_value",
    "p_adjusted",
    "winner",
]
DECISION_COLUMNS = ["setting", "policy", "mean", "replicates", "rank", "beaten_by", "in_set"]


def pairwise_tests(
    runs: pd.DataFrame,
    name: str,
    better: str,
    alpha: float = ALPHA,
    *,
    policy: str = "policy_label",
    replicate: str = "replicate_key",
    setting: str = "setting",
) -> pd.DataFrame:
    """Every pair of policies within each setting: paired mean difference (a - b) over
    common replicates, t-test p-value, Holm-adjusted p-value within the setting, winner.

    Args:
        runs: One row per run, with ``policy``, ``replicate``, ``setting`` and ``name``.
        name: The metric.
        better: ``lower`` or ``higher``: which way of ``name`` is better.
        alpha: Family-wise error rate per setting.
        policy: Column naming the policy.
        replicate: Column pairing runs.
        setting: Column of the setting tested apart.

    Returns:
        Columns ``PAIR_COLUMNS``, one row per unordered pair (a before b in order of
        appearance); ``winner`` is the policy that beats the other, or ``""``.

    Raises:
        ConfigError: ``better`` is neither ``lower`` nor ``higher``, or a column is missing.
    """
    if better not in ("lower", "higher"):
        raise ConfigError(
            f"decision: metric {name!r} has no better direction (got {better!r}; "
            "expected 'lower' or 'higher'); choose a rank_by metric that has one"
        )
    for column in (policy, replicate, setting, name):
        if column not in runs:
            raise ConfigError(f"decision: no column {column!r}; columns are {list(runs.columns)}")
    rows = []
    for key, group in runs.groupby(setting, sort=False, observed=True):
        wide = group.pivot_table(
            index=replicate, columns=policy, values=name, aggfunc="mean", observed=True
        )
        names = [p for p in pd.unique(group[policy]) if p in wide.columns]
        found = []
        for first, second in itertools.combinations(names, 2):
            diff = (wide[first] - wide[second]).dropna()
            found.append(
                [
                    key,
                    first,
                    second,
                    len(diff),
                    float(diff.mean()) if len(diff) else float("nan"),
                    paired_p_value(diff.tolist()),
                ]
            )
        adjusted = holm([row[-1] for row in found])
        for row, p_adjusted in zip(found, adjusted):
            mean_diff = row[4]
            winner = ""
            if np.isfinite(p_adjusted) and p_adjusted < alpha:
                first_better = mean_diff < 0 if better == "lower" else mean_diff > 0
                winner = row[1] if first_better else row[2]
            rows.append([*row, float(p_adjusted), winner])
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def decision_table(
    runs: pd.DataFrame,
    name: str,
    better: str,
    alpha: float = ALPHA,
    *,
    policy: str = "policy_label",
    replicate: str = "replicate_key",
    setting: str = "setting",
    pairs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per setting and policy: mean over replicates, rank, who beats it, and whether it is
    in the decision set (no other policy beats it significantly; module docstring).

    Args:
        runs: One row per run (see ``pairwise_tests``).
        name: The metric.
        better: ``lower`` or ``higher``.
        alpha: Family-wise error rate per setting.
        policy: Column naming the policy.
        replicate: Column pairing runs.
        setting: Column of the setting.
        pairs: ``pairwise_tests`` of the same arguments, if already computed.

    Returns:
        Columns ``DECISION_COLUMNS``, sorted by setting (order of appearance) and rank;
        ``beaten_by`` lists the policies beating it, joined by ``", "`` (best mean first).

    Raises:
        ConfigError: as ``pairwise_tests``.

    >>> runs = pd.DataFrame({"policy_label": ["a", "b", "c"] * 4, "setting": "s",
    ...                      "replicate_key": [r for r in "1234" for _ in range(3)],
    ...                      "wait": [1.0, 5.0, 5.1, 2.0, 6.0, 6.2, 1.5, 5.5, 5.4, 1.2, 5.9, 6.0]})
    >>> table = decision_table(runs, "wait", "lower")
    >>> table[["policy", "rank", "beaten_by", "in_set"]].to_dict("records")[0]
    {'policy': 'a', 'rank': 1, 'beaten_by': '', 'in_set': True}
    >>> table["in_set"].tolist()
    [True, False, False]
    """
    if pairs is None:
        pairs = pairwise_tests(
            runs, name, better, alpha, policy=policy, replicate=replicate, setting=setting
        )
    rows = []
    for key, group in runs.groupby(setting, sort=False, observed=True):
        means = group.groupby(policy, sort=False, observed=True)[name].mean()
        counts = group.groupby(policy, sort=False, observed=True)[name].count()
        ranks = (means if better == "lower" else -means).rank(method="min", na_option="bottom")
        won = pairs[(pairs["setting"] == key) & (pairs["winner"] != "")]
        for candidate in means.index:
            involved = won[(won["policy_a"] == candidate) | (won["policy_b"] == candidate)]
            winners = [w for w in involved["winner"] if w != candidate]
            winners.sort(key=lambda other: (ranks[other], str(other)))
            rows.append(
                [
                    key,
                    candidate,
                    float(means[candidate]),
                    int(counts[candidate]),
                    int(ranks[candidate]),
                    ", ".join(map(str, winners)),
                    not winners,
                ]
            )
    table = pd.DataFrame(rows, columns=DECISION_COLUMNS)
    order = {s: i for i, s in enumerate(pd.unique(table["setting"]))}
    return table.sort_values(
        ["setting", "rank"], key=lambda c: c.map(order) if c.name == "setting" else c, kind="stable"
    ).reset_index(drop=True)


__all__ = ["decision_table", "pairwise_tests"]
