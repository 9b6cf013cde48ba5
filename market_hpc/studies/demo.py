"""``market-hpc demo``: the embedded default study (Singh et al., HPCS'15).

The ``hlrs-3x9`` platform (3 nodes x 9 cores) is overloaded by HLRS-like task-graph job
sets of 10 to 100 jobs (Poisson arrivals at twice the platform's capacity, applications
from the bundled profiled library). All eight market policies run on every set, for
several seeds. The study prints the comparison, writes ``comparison.csv`` (one row per
policy x job set x seed) and ``profit_vs_jobs.png`` and ``.svg`` (the paper's Fig. 6),
and checks the paper's claims: every holding variant earns at least its base policy, maxVH
earns most, and maxVH's mean gain over maxV (the paper reports +8 %). It runs two value-curve
regimes: the spec's suggested decay and a steep one, because whether holding pays depends on how
fast value is lost while waiting.

Every claim is also judged at 95% confidence: the paired difference of total profit
across seeds (``experiment.stats``; a seed's job sets are averaged first) must lie above
zero for the claim to hold (verdict ``higher``). The look-ahead holding variants (non-paper,
``...lh``) run too and are compared with maxV and maxVH the same way.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.algorithms.market.auction import RULES
from market_hpc.core.model import HPCModel
from market_hpc.experiment.stats import RELATIVE_METHOD, format_differences, paired_differences
from market_hpc.studies.market_figures import profit_figure
from market_hpc.workload.applications import CURVE_REGIMES, library_job_set

POLICIES = (*RULES, *(rule + "h" for rule in RULES))
LOOKAHEAD = tuple(rule + "lh" for rule in RULES)
_RULE_LABELS = dict(zip(RULES, ("SJQ", "maxV", "maxVD", "minVR"), strict=True))
LABELS = {
    rule + suffix: _RULE_LABELS[rule] + label
    for suffix, label in (("", ""), ("h", "H"), ("lh", "-LH"))
    for rule in RULES
}
JOB_SET_SIZES = (10, 25, 50, 100)
QUICK_SIZES = (10, 30)
DEMO_LOAD = 2.0
CURVES = CURVE_REGIMES  # the study reports both value-curve regimes


def run_study(
    sizes: tuple[int, ...],
    seeds: int,
    load: float = DEMO_LOAD,
    penalty: float = 0.0,
    curves: str = "spec",
    policies: tuple[str, ...] = POLICIES + LOOKAHEAD,
) -> pd.DataFrame:
    """Run every policy on every (job-set size, seed); one row per run."""
    rows = []
    for seed in range(1, seeds + 1):
        for n_jobs in sizes:
            jobs = library_job_set(n_jobs, seed, load=load, curves=curves)
            for policy in policies:
                model = HPCModel(
                    jobs,
                    "hlrs-3x9",
                    policy,
                    hold_penalty=penalty,
                    seed=seed,
                    record_timeseries=False,
                )
                model.run()
                recorder = model.recorder
                rows.append(
                    {
                        "policy": policy,
                        "seed": seed,
                        "n_jobs": n_jobs,
                        "curves": curves,
                        "total_profit": recorder.profit,
                        "jobs_completed": recorder.finished,
                        "jobs_dropped": recorder.drops,
                        "holds": recorder.holds,
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "policy",
            "seed",
            "total_profit",
            "jobs_completed",
            "jobs_dropped",
            "holds",
            "n_jobs",
            "curves",
        ],
    )


def claims(table: pd.DataFrame) -> dict[str, Any]:
    """Check the paper's claims on a study table (counts per job set)."""
    table = table[table.policy.isin(POLICIES)]
    wide = table.pivot_table(index=["seed", "n_jobs"], columns="policy", values="total_profit")
    holding_ok = {base: int((wide[base + "h"] >= wide[base] - 1e-9).sum()) for base in RULES}
    best = wide.idxmax(axis=1)
    gain = (wide["maxvh"] - wide["maxv"]) / wide["maxv"]
    return {
        "runs_per_policy": len(wide),
        "holding_at_least_base": holding_ok,
        "maxvh_best_count": int((best == "maxvh").sum()),
        "best_policy_counts": best.value_counts().to_dict(),
        "maxvh_vs_maxv_mean_gain": float(gain.mean()),
        "maxvh_vs_maxv_gain_of_sums": float(wide["maxvh"].sum() / wide["maxv"].sum() - 1.0),
        "gain_per_seed": gain.groupby(level="seed").mean().to_dict(),
    }


def claims_with_confidence(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The paper's claims as paired differences of total profit across seeds (95% CIs).

    Returns tables of ``experiment.stats.paired_differences``: ``holding`` (each H
    variant minus its base), ``maxvh_best`` (maxVH minus every other seed policy) and
    ``lookahead`` (each look-ahead variant minus its base and minus its H variant).
    """

    def diff(policy: str, baseline: str) -> pd.DataFrame:
        pair = table[table.policy.isin((policy, baseline))]
        return paired_differences(pair, "policy", "total_profit", "seed", baseline, [policy])

    holding = pd.concat([diff(base + "h", base) for base in RULES], ignore_index=True)
    best = pd.concat(
        [diff("maxvh", other) for other in POLICIES if other != "maxvh"], ignore_index=True
    )
    present = set(table.policy)
    ahead = [
        diff(name, other)
        for name in LOOKAHEAD
        if name in present
        for other in (name[:-2], name[:-2] + "h")
    ]
    lookahead = pd.concat(ahead, ignore_index=True) if ahead else pd.DataFrame()
    return {"holding": holding, "maxvh_best": best, "lookahead": lookahead}


def run_demo(
    out: Path, seeds: int = 3, quick: bool = False, shown_as: Path | None = None
) -> pd.DataFrame:
    """Run the study, print the table and claims, write ``comparison.csv`` and the plot.

    Args:
        out: The folder to write to.
        seeds: Seeds per point.
        quick: The smaller study (smoke tests).
        shown_as: The folder to name in the printed lines (``out`` when ``None``; the
            command line writes to a staging folder renamed to this one at the end).
    """
    began = time.perf_counter()
    sizes = QUICK_SIZES if quick else JOB_SET_SIZES
    studies = {name: run_study(sizes, seeds, curves=name) for name in CURVES}
    table = pd.concat(studies.values(), ignore_index=True)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "comparison.csv", index=False)
    spec = studies["spec"]
    profit = spec.pivot_table(
        index="policy", columns="n_jobs", values="total_profit", aggfunc="mean"
    )
    profit = profit.loc[[p for p in POLICIES + LOOKAHEAD if p in profit.index]].rename(index=LABELS)
    print(
        f"market demo: hlrs-3x9, task-graph job sets at load {DEMO_LOAD:g}, {seeds} seeds, "
        f"{len(table)} runs"
    )
    print("\nmean total profit by job-set size (spec value curves):")
    print(profit.to_string(float_format=lambda v: f"{v:,.0f}"))
    totals = spec.groupby("policy")[["jobs_completed", "jobs_dropped", "holds"]].sum()
    print("\njobs completed / dropped / holds, all job sets (spec value curves):")
    print(
        totals.loc[[p for p in POLICIES + LOOKAHEAD if p in totals.index]]
        .rename(index=LABELS)
        .to_string()
    )
    for name, study in studies.items():
        _print_claims(name, claims(study))
        _print_confidence(name, claims_with_confidence(study))
    pictures = []
    for name, study in studies.items():  # one picture per regime, named in its title
        picture = out / ("profit_vs_jobs.png" if name == "spec" else f"profit_vs_jobs_{name}.png")
        pictures.append(profit_figure(study, picture, name, LABELS, list(POLICIES + LOOKAHEAD)))
    names = ", ".join(f"{p.name} (and .svg)" for p in pictures)
    print(
        f"\nwrote {(shown_as or out) / 'comparison.csv'} and {names} "
        f"in {time.perf_counter() - began:.1f} s"
    )
    return table


def _print_claims(curves: str, found: dict[str, Any]) -> None:
    detail = {"spec": "beta ~ U[1, 3]", "steep": "beta ~ U[0.2, 0.6]"}[curves]
    runs = found["runs_per_policy"]
    print(f"\npaper's claims (Singh et al., HPCS 2015), {curves} value curves ({detail}):")
    for base, count in found["holding_at_least_base"].items():
        print(f"  {LABELS[base + 'h']} >= {LABELS[base]}: {count} of {runs} job sets")
    print(
        f"  maxVH earns most: {found['maxvh_best_count']} of {runs} job sets "
        "(best per set: "
        + ", ".join(
            f"{LABELS.get(name, name)} {count}"
            for name, count in found["best_policy_counts"].items()
        )
        + ")"
    )
    # maxVH vs maxV gets one number, the paired one with its interval (_print_confidence).


def _print_confidence(curves: str, tables: dict[str, pd.DataFrame]) -> None:
    print(
        f"\nat 95% confidence ({curves} value curves; paired over seeds, a seed's job sets "
        "averaged):"
    )
    print(" every holding variant earns more than its base (paper: always):")
    print(format_differences(tables["holding"], LABELS))
    best = tables["maxvh_best"]
    overall = (
        "yes"
        if (best.verdict == "higher").all()
        else ("no" if (best.verdict == "lower").any() else "undecided")
    )
    print(f" maxVH earns most (paper: yes): {overall}")
    print(format_differences(best, LABELS))
    gain = best[best.baseline == "maxv"].iloc[0]
    if np.isfinite(gain.rel_low):
        inside = gain.rel_low <= 0.08 <= gain.rel_high
        print(
            f" maxVH vs maxV: {100 * gain.rel_mean:+.1f}% (95% CI {100 * gain.rel_low:+.1f}.."
            f"{100 * gain.rel_high:+.1f}%); the paper's +8% is {'inside' if inside else 'outside'} "
            "the interval"
        )
    else:
        print(f" maxVH vs maxV: {100 * gain.rel_mean:+.1f}% in every seed (no interval)")
    print(f" ({RELATIVE_METHOD})")
    if len(tables["lookahead"]):
        print(" look-ahead holding (non-paper) against its base and its H variant:")
        print(format_differences(tables["lookahead"], LABELS))
