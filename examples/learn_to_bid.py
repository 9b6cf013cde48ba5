"""Node agents that learn to bid: do independently learning bidders raise or lower the
total value against the ``free-cores`` auction?

    PYTHONPATH=. python examples/learn_to_bid.py                      # the documented run
    PYTHONPATH=. python examples/learn_to_bid.py --episodes 50 --eval 5   # a quick look

The workload is the market task-graph study's (``scenarios/market_taskgraphs.toml``:
``hlrs-3x9``, HLRS-like task graphs at load 2) with ``--jobs`` jobs, under the maxV
rule. Each node of ``NodeBiddingEnv`` learns alone (tabular Q-learning,
``market_hpc.rl.bid_learning``) on slices of ``--episode-jobs`` jobs drawn from the first
70% of the workload; then the greedy learners and the ``free-cores`` auction play the same
disjoint held-out slices of the last 30%, paired slice by slice. One training run per
``--seeds`` entry. Needs pettingzoo (the ``dev`` or ``rl`` extra), no torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.experiment.config import load_scenario
from market_hpc.experiment.stats import paired_differences, t_interval
from market_hpc.rl.bid_learning import evaluate, evaluation_starts, fixed_policy, play_greedy, train
from market_hpc.rl.bidding_env import NodeBiddingEnv

TRAIN_SHARE = 0.7


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="scenarios/market_taskgraphs.toml")
    parser.add_argument("--rule", default="maxv", help="market rule: sjq, maxv, maxvd or minvr")
    parser.add_argument(
        "--jobs", type=int, default=8000, help="jobs generated (train and held-out slices)"
    )
    parser.add_argument("--episode-jobs", type=int, default=60, help="jobs per episode")
    parser.add_argument("--episodes", type=int, default=1500, help="training episodes per seed")
    parser.add_argument("--eval", type=int, default=40, help="held-out slices (at most)")
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0], help="one training run per seed"
    )
    parser.add_argument(
        "--fixed",
        action="store_true",
        help="also every fixed offer played by every node, paired against free-cores",
    )
    args = parser.parse_args(argv)

    config = load_scenario(args.scenario)
    config = dataclasses.replace(
        config, workload=dataclasses.replace(config.workload, jobs=args.jobs)
    )
    train_env = NodeBiddingEnv.from_config(
        config, rule=args.rule, episode_jobs=args.episode_jobs, start_range=(0.0, TRAIN_SHARE)
    )
    test_env = NodeBiddingEnv(
        train_env.jobs, train_env.platform, rule=args.rule, episode_jobs=args.episode_jobs
    )
    starts = evaluation_starts(test_env, TRAIN_SHARE, args.eval)
    print(
        f"{len(train_env.jobs)} jobs on {train_env.platform.name}, rule {args.rule}, value scale "
        f"{train_env.scale:.1f} per core; {args.episodes} training episodes of {args.episode_jobs} "
        "jobs; "
        f"{len(starts)} held-out slices"
    )
    print(
        f"actions: share of free cores {train_env.fractions} x reserve {train_env.reserves} x "
        "value scale"
    )
    if args.fixed:
        print(
            "\nevery node plays one fixed offer (share, reserve per core): paired difference to "
            "free-cores"
        )
        for action in range(len(test_env.bidders)):
            _, table = evaluate(test_env, fixed_policy(action), starts)
            fraction, reserve = test_env.offer(action)
            print(f"  ({fraction:g}, {reserve:6.1f}): " + _difference(table.iloc[0]))
    runs = []
    for seed in args.seeds:
        trained = train(train_env, args.episodes, seed)
        began = time.perf_counter()
        frame, table = evaluate(test_env, trained.learners, starts)
        evaluated = time.perf_counter() - began
        row = table.iloc[0]
        runs.append(frame[frame.policy == "learned"].assign(policy=f"learned (seed {seed})"))
        learned = frame[frame.policy == "learned"].total_value
        base = frame[frame.policy == "free-cores"].total_value
        print(
            f"\nseed {seed}: trained {trained.episodes} episodes ({trained.steps} steps) in "
            f"{trained.seconds:.1f} s, "
            f"evaluated in {evaluated:.1f} s"
        )
        first, last = np.mean(trained.returns[:100]), np.mean(trained.returns[-100:])
        print(f"  training return (all nodes), first 100 episodes {first:.0f}, last 100 {last:.0f}")
        for name, values in (("learned", learned), ("free-cores", base)):
            mean, low, high = t_interval(values.tolist())
            print(
                f"  {name:>10}: mean total value {mean:.1f} per episode (95% CI {low:.1f} .. "
                f"{high:.1f})"
            )
        print("  learned - free-cores: " + _difference(row))
        chosen = np.sum(
            [play_greedy(test_env, trained.learners, start)[1] for start in starts], axis=0
        )
        shares = chosen.reshape(len(test_env.fractions), len(test_env.reserves))
        print(
            "  greedy offers on the held-out slices (share of decisions): by share of free cores "
            + ", ".join(
                f"{f:g}: {s:.0%}"
                for f, s in zip(test_env.fractions, shares.sum(axis=1) / chosen.sum())
            )
            + "; by reserve level "
            + ", ".join(
                f"{r:g}: {s:.0%}"
                for r, s in zip(test_env.reserves, shares.sum(axis=0) / chosen.sum())
            )
        )
    if len(runs) > 1:
        # every training run against the same free-cores runs: per slice, the runs' mean
        pooled = (
            pd.concat(runs)
            .groupby("slice", as_index=False)
            .total_value.mean()
            .assign(policy="learned")
        )
        both = pd.concat([pooled, frame[frame.policy == "free-cores"]])
        row = paired_differences(both, "policy", "total_value", "slice", "free-cores").iloc[0]
        print(f"\nthe {len(runs)} training runs' mean per slice - free-cores: " + _difference(row))
        means = [
            r.total_value.mean() - frame[frame.policy == "free-cores"].total_value.mean()
            for r in runs
        ]
        mean, low, high = t_interval(means)
        print(
            f"  across training runs (n = {len(runs)}): {mean:+.1f} (95% CI {low:+.1f} .. "
            f"{high:+.1f})"
        )
    return 0


def _difference(row: Any) -> str:
    """A ``paired_differences`` row as one line."""
    return (
        f"{row.mean_diff:+.1f} (95% CI {row.ci_low:+.1f} .. {row.ci_high:+.1f}; "
        f"{row.rel_mean:+.2%}, "
        f"{row.rel_low:+.2%} .. {row.rel_high:+.2%}) over {int(row.seeds)} paired slices: "
        f"{row.verdict}"
    )


if __name__ == "__main__":
    sys.exit(main())
