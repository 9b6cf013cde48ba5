"""Train a dispatcher with MaskablePPO on one trace and evaluate it on held-out slices of
that trace and on a second trace, against fifo, sjf, easy and RLScheduler's heuristics.

    pip install -e ".[rl]"
    python examples/train_dispatcher.py --minutes 15 --out models/hpc2n

Training: ``HPCDispatchEnv`` on episodes of 256 consecutive jobs drawn from the first 70 %
of the training trace (HPC2N by default), K = 128, bounded-slowdown reward (``--reward``
names another registered one, ``--observation`` another observation, ``--import MODULE``
the module registering them: ``docs/learned-dispatchers.md``) given per
decision (the step rewards of an episode add up to minus its mean bounded slowdown),
RLScheduler's kernel network (``market_hpc.rl.kernel``), for at most ``--minutes`` of wall
time on ``--threads`` torch threads. The model is saved with its options
(``learned:PATH`` then runs it as a scheduler anywhere).

Evaluation: 10 held-out slices of 1,024 jobs from the last 30 % of the training trace
(disjoint from the training range and from each other by construction:
``rl.evaluate.disjoint_starts``), and 10 disjoint slices of 1,024 jobs of the second trace
(KTH-SP2 by default), each run from an
empty machine by every policy; per policy the mean of the slices' mean bounded slowdown
with a 95 % t interval, and the paired difference to the trained policy (policy − learned,
same slices) with its 95 % t interval: positive means the trained policy is better. The
trained policy is also run with EASY backfilling around its choices (``learned+easy``),
as RLScheduler reports it. Results go to ``OUT.eval.csv`` and ``OUT.eval.md``.

``--seeds 0 1 2`` trains one model per seed (``OUT-s0.zip``, ...) and ends with the
across-seed 95 % t interval of each policy's mean paired difference to the trained policy
(the spread a paper should report: one training run is one sample).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import pandas as pd

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
HEURISTICS = [
    "fifo",
    "sjf",
    "easy",
    "sjf-easy",
    "f1",
    "f1-easy",
    "wfp3",
    "wfp3-easy",
    "unicep",
    "unicep-easy",
]


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--train-trace", default=str(SHARED / "HPC2N-2002-2.1-cln.swf.gz"))
    parser.add_argument("--train-platform", default="hpc2n")
    parser.add_argument("--test-trace", default=str(SHARED / "KTH-SP2-1996-2.1-cln.swf.gz"))
    parser.add_argument("--test-platform", default="kth-sp2")
    parser.add_argument(
        "--minutes", type=float, default=15.0, help="wall-time budget of the training"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (1: a second thread only adds synchronisation at these sizes)",
    )
    parser.add_argument(
        "--envs", type=int, default=8, help="environments stepped together (one forward pass)"
    )
    parser.add_argument("--episode-jobs", type=int, default=256)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument(
        "--backfill", action="store_true", help="train with EASY backfilling around the choices"
    )
    parser.add_argument(
        "--reward",
        default="bsld",
        help="registered reward (market_hpc.rl.registry; import your module first: --import)",
    )
    parser.add_argument(
        "--observation",
        default="default",
        help="registered observation (not 'default': an MLP instead of the kernel network)",
    )
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        help="a module to import first (it registers rewards or observations); repeatable",
    )
    parser.add_argument("--eval-slices", type=int, default=10)
    parser.add_argument("--eval-jobs", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=None,
        help="train one model per seed (OUT-sSEED) and report across-seed intervals",
    )
    parser.add_argument(
        "--out", default="models/dispatcher", help="model path (PATH.zip, PATH.zip.json)"
    )
    parser.add_argument(
        "--evaluate-only", action="store_true", help="evaluate the model saved at --out"
    )
    args = parser.parse_args(argv)
    import importlib

    for module in args.imports:
        importlib.import_module(module)
    if args.seeds:
        return _across_seeds(args, list(sys.argv[1:] if argv is None else argv))
    return _one_seed(args)


def _across_seeds(args: argparse.Namespace, argv: list[str]) -> pd.DataFrame:
    from market_hpc.experiment.stats import t_interval

    kept, skip = [], False
    for token in argv:  # the same command per seed, without --seeds and with its own --out
        if skip and not token.startswith("--"):
            continue
        skip = token in ("--seeds", "--out", "--seed")
        if not skip:
            kept.append(token)
    frames = []
    for seed in args.seeds:
        frame = main([*kept, "--seed", str(seed), "--out", f"{args.out}-s{seed}"])
        frames.append(frame.assign(seed=seed))
    result = pd.concat(frames)
    print(
        f"\nacross {len(args.seeds)} training seeds {args.seeds}: mean paired difference "
        "policy - learned (positive: the trained policy is better), 95 % t interval over seeds"
    )
    for label, part in result.groupby("set", sort=False):
        per_seed = part.pivot_table(index=["seed", "start"], columns="policy", values="bsld")
        means = {
            name: (per_seed[name] - per_seed["learned"]).groupby(level="seed").mean()
            for name in per_seed.columns
            if name != "learned"
        }
        print(f"{label}:")
        for name, values in means.items():
            mean, low, high = t_interval(values.to_numpy())
            print(f"  {name:14s} {mean:9.2f} [{low:.2f}, {high:.2f}]")
    return result


def _one_seed(args: argparse.Namespace) -> pd.DataFrame:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from market_hpc.policies import make_allocator
    from market_hpc.rl.env import HPCDispatchEnv
    from market_hpc.rl.evaluate import disjoint_starts, evaluate, paired_table
    from market_hpc.rl.kernel import KernelPolicy
    from market_hpc.rl.learned import (
        DispatchingPolicy,
        GreedyPredictor,
        load_model,
        load_options,
        load_spec,
        save_learned,
        saved_observation,
    )
    from market_hpc.workload.swf import read_swf

    torch.set_num_threads(args.threads)
    train_jobs = [job for job in read_swf(args.train_trace).jobs if job.run_time > 0]
    test_jobs = [job for job in read_swf(args.test_trace).jobs if job.run_time > 0]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    saved = out if out.suffix == ".zip" else out.with_name(out.name + ".zip")

    if not args.evaluate_only:

        def make_env() -> HPCDispatchEnv:
            return HPCDispatchEnv(
                train_jobs,
                args.train_platform,
                episode_jobs=args.episode_jobs,
                window=args.window,
                backfill=args.backfill,
                reward=args.reward,
                reward_timing="step",
                observation=args.observation,
                start_range=(0.0, 0.7),
            )

        env = DummyVecEnv([make_env for _ in range(args.envs)])
        env.seed(args.seed)

        class Budget(BaseCallback):
            """Stop after the wall-time budget; count finished episodes."""

            def __init__(self, seconds: float) -> None:
                super().__init__()
                self.seconds, self.began, self.episodes, self.last = (
                    seconds,
                    time.perf_counter(),
                    0,
                    [],
                )

            def _on_step(self) -> bool:
                for info in self.locals.get("infos", []):
                    if "episode_metrics" in info:
                        self.episodes += 1
                        self.last.append(info["episode_metrics"]["bsld"])
                return time.perf_counter() - self.began < self.seconds

        model = MaskablePPO(
            KernelPolicy if args.observation == "default" else "MlpPolicy",
            env,
            n_steps=max(64, 2048 // args.envs),
            batch_size=256,
            n_epochs=4,
            learning_rate=3e-4,
            gamma=1.0,
            gae_lambda=0.97,
            ent_coef=0.01,
            seed=args.seed,
            device="cpu",
            verbose=0,
        )
        budget = Budget(args.minutes * 60.0)
        began = time.perf_counter()
        model.learn(total_timesteps=10**9, callback=budget)
        seconds = time.perf_counter() - began
        tail = budget.last[-20:]
        print(
            f"trained {model.num_timesteps} steps, {budget.episodes} episodes in "
            f"{seconds / 60:.1f} min "
            f"({model.num_timesteps / seconds:.0f} steps/s); mean bsld of the last {len(tail)} "
            "training episodes: "
            f"{sum(tail) / max(len(tail), 1):.1f}"
        )
        save_learned(
            model,
            out,
            env.envs[0].options,
            env.envs[0].model_spec,
            trace=Path(args.train_trace).name,
            platform=args.train_platform,
            steps=model.num_timesteps,
            episodes=budget.episodes,
            train_seconds=round(seconds, 1),
            threads=args.threads,
            seed=args.seed,
            start_range=[0.0, 0.7],
        )
    options, info = load_options(saved)
    observation = saved_observation(saved, load_spec(saved, info), options.window)
    model = GreedyPredictor(load_model(saved))
    print(f"model {saved}: {json.dumps(info)}")

    def learned(backfill: bool):  # type: ignore[no-untyped-def]
        chosen = dataclasses.replace(options, backfill=backfill)
        return lambda: DispatchingPolicy(
            make_allocator("first-fit"), model, chosen, name="learned", observation=observation
        )

    policies = {
        **{name: name for name in HEURISTICS},
        "learned": learned(False),
        "learned+easy": learned(True),
    }
    sets = [
        (
            f"{Path(args.train_trace).name} held-out (last 30 %)",
            train_jobs,
            args.train_platform,
            disjoint_starts(len(train_jobs), args.eval_jobs, args.eval_slices, 1, span=(0.7, 1.0)),
        ),
        (
            Path(args.test_trace).name,
            test_jobs,
            args.test_platform,
            disjoint_starts(len(test_jobs), args.eval_jobs, args.eval_slices, 1),
        ),
    ]
    frames, lines = [], [f"# Evaluation of {saved}", "", f"Training: {json.dumps(info)}", ""]
    for label, jobs, platform, starts in sets:
        began = time.perf_counter()
        frame = evaluate(jobs, platform, policies, starts, args.eval_jobs, label=label)
        frames.append(frame)
        table = paired_table(frame, "learned").round(2)
        text = table.to_string()
        print(
            f"\n{label}: {len(starts)} slices of {args.eval_jobs} jobs at {starts} "
            f"({time.perf_counter() - began:.0f} s)\n{text}"
        )
        lines += [
            f"## {label}",
            "",
            f"{len(starts)} slices of {args.eval_jobs} jobs starting at {starts}.",
            "",
            table.to_markdown() if _has_tabulate() else "```\n" + text + "\n```",
            "",
        ]
    result = pd.concat(frames)
    result.to_csv(saved.with_suffix(".eval.csv"), index=False)
    saved.with_suffix(".eval.md").write_text("\n".join(lines))
    return result


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
