"""Seed 002, Fig. 6: overall profit by job-set size for the eight market policies.

    python scenarios/fig6_profit_vs_jobs.py [--seeds 5] [--sizes 10 20 30 40 50] [--curves steep|spec]
                                            [--out out/fig6]

Writes ``fig6.csv`` (one row per policy x size x seed), ``fig6.png`` and prints the mean
profit table and the paper's claims (holding >= base, maxVH best, maxVH vs maxV), as
counts of job sets and at 95% confidence across seeds (the eight seed policies and the
look-ahead variants). The default ``--curves steep`` is the regime in which the paper's
claims can show (docs/market.md); ``--curves spec`` is the spec's gentler decay.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from market_hpc.studies.demo import (
    LABELS,
    LOOKAHEAD,
    POLICIES,
    _print_claims,
    _print_confidence,
    claims,
    claims_with_confidence,
    run_study,
)
from market_hpc.studies.market_figures import REGIMES, profit_figure
from market_hpc.workload.applications import CURVE_REGIMES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5,
                        help="seeds 1..N; each seed is one job set per size (default: 5)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 30, 40, 50],
                        help="job-set sizes (default: 10 20 30 40 50, as the paper)")
    parser.add_argument("--load", type=float, default=2.0,
                        help="arrival rate over the platform's capacity (default: 2)")
    parser.add_argument("--curves", choices=sorted(CURVE_REGIMES), default="steep",
                        help="value-curve regime: " + "; ".join(f"{k}: {v}" for k, v in
                                                                REGIMES.items()))
    parser.add_argument("--out", default="out/fig6", help="output folder (default: out/fig6)")
    args = parser.parse_args(argv)
    table = run_study(tuple(args.sizes), args.seeds, load=args.load, curves=args.curves)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "fig6.csv", index=False)
    profit = table.pivot_table(index="policy", columns="n_jobs", values="total_profit", aggfunc="mean")
    profit = profit.loc[list(POLICIES + LOOKAHEAD)].rename(index=LABELS)
    print(f"mean total profit by job-set size, {REGIMES[args.curves]}, {args.seeds} seeds:")
    print(profit.to_string(float_format=lambda v: f"{v:,.0f}"))
    _print_claims(args.curves, claims(table))
    _print_confidence(args.curves, claims_with_confidence(table))
    profit_figure(table, out / "fig6.png", args.curves, LABELS, list(POLICIES + LOOKAHEAD))
    print(f"wrote {out}/fig6.csv and fig6.png")


if __name__ == "__main__":
    main()
