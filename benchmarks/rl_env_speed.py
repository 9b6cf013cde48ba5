#!/usr/bin/env python3
"""Environment steps per second against plain ``easy`` decisions on the same slices.

Both sides run the same slices of a trace (default KTH-SP2, 10 slices of 1,024 jobs)
through ``HPCModel`` end to end: the replay with ``easy`` (model loop + EASY decisions),
and ``HPCDispatchEnv`` with backfilling driven by a first-job agent, which makes exactly
EASY's decisions (tests/rl/test_env.py), so the difference is what the environment costs:
pausing and resuming the model, the observation (K = 128 jobs), the mask and the
job-by-job hand-off. A random masked agent is timed as well (other decisions, same cost
per step). The figure of merit is the CPU time of one environment step over the CPU time
of one EASY decision (goal: at most 2).

``--reference FILE`` also times, in the same process, the environment with the dispatcher
of another checkout's ``market_hpc/rl/dispatch.py`` (``git show REF:market_hpc/rl/dispatch.py
> FILE``), slice by slice in alternated order, with the EASY replay of each slice between:
on a busy machine the only comparison that holds (both sides see the same load).

``--against REF`` compares whole checkouts instead (what ``--reference`` cannot, when the
change is not in ``dispatch.py`` alone): REF's ``market_hpc`` (``git archive``, in a
temporary folder) and this tree's, each in a child process running this script
(``--json``), in ``--pairs`` alternated pairs. Each child measures as the default mode
does (EASY, then the first-job agent, best of ``--repeat``) and then plays the slices once
more, untimed, with the first-job and a seeded random masked agent, hashing every
observation, mask, reward and info: both sides must give the same hash.

    python benchmarks/rl_env_speed.py [--trace PATH] [--slices 10] [--jobs 1024] [--window 128]
    python benchmarks/rl_env_speed.py --reference /tmp/dispatch_before.py
    python benchmarks/rl_env_speed.py --against main --pairs 5
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from market_hpc.core.model import HPCModel
from market_hpc.rl.env import HPCDispatchEnv
from market_hpc.rl.evaluate import slice_starts
from market_hpc.workload.swf import read_swf

TRACE = (
    Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
)


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trace", default=str(TRACE))
    parser.add_argument("--platform", default="kth-sp2")
    parser.add_argument("--slices", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1024)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many rounds")
    parser.add_argument(
        "--reference", default=None, help="another checkout's rl/dispatch.py, timed alternately"
    )
    parser.add_argument("--against", default=None, help="a git ref: whole checkouts, in pairs")
    parser.add_argument("--pairs", type=int, default=5, help="--against: alternated pairs")
    parser.add_argument("--json", action="store_true", help="one JSON line (for --against)")
    args = parser.parse_args(argv)
    if args.against:
        return against(args)

    jobs = list(read_swf(args.trace).jobs)
    starts = slice_starts(len(jobs), args.jobs, args.slices, seed=0)
    slices = [jobs[s : s + args.jobs] for s in starts]

    def easy_round() -> tuple[float, int]:
        decisions, cpu = 0, 0.0
        for part in slices:
            began = time.process_time()
            model = HPCModel(part, args.platform, scheduler="easy", record_timeseries=False)
            model.run()
            cpu += time.process_time() - began
            decisions += model.manager.decisions
        return cpu, decisions

    env = HPCDispatchEnv(
        jobs, args.platform, episode_jobs=args.jobs, window=args.window, backfill=True
    )

    def env_round(agent: str) -> tuple[float, int]:
        rng = np.random.default_rng(0)
        steps, cpu = 0, 0.0
        for start in starts:
            began = time.process_time()
            env.reset(options={"start": start})
            done = False
            while not done:
                if agent == "first":
                    action = 0
                else:
                    action = int(rng.choice(np.flatnonzero(env.action_masks())))
                _, _, done, _, _ = env.step(action)
                steps += 1
            cpu += time.process_time() - began
        return cpu, steps

    if args.reference:
        return paired(args, jobs, starts, env)
    easy = min((easy_round() for _ in range(args.repeat)), key=lambda r: r[0])
    first = min((env_round("first") for _ in range(args.repeat)), key=lambda r: r[0])
    if args.json:
        per_step, per_decision = first[0] / first[1], easy[0] / easy[1]
        result = {
            "easy_us": per_decision * 1e6,
            "step_us": per_step * 1e6,
            "ratio": per_step / per_decision,
            "steps": first[1],
            "decisions": easy[1],
            "digest": digest(env, starts),
        }
        print(json.dumps(result))
        return result["ratio"]
    rand = min((env_round("random") for _ in range(args.repeat)), key=lambda r: r[0])
    per_decision = easy[0] / easy[1]
    print(
        f"{Path(args.trace).name}: {args.slices} slices of {args.jobs} jobs, window {args.window}"
    )
    print(
        f"easy replay:          {easy[1]:7d} decisions  {easy[1] / easy[0]:9.0f} decisions/s  "
        f"{per_decision * 1e6:7.1f} us a decision"
    )
    for label, (cpu, steps) in (("env, first-job agent", first), ("env, random masked", rand)):
        print(
            f"{label:21s} {steps:7d} steps      {steps / cpu:9.0f} steps/s      "
            f"{cpu / steps * 1e6:7.1f} us a step   ratio {cpu / steps / per_decision:.2f}x an EASY "
            "decision"
        )
    ratio = first[0] / first[1] / per_decision
    print(f"ratio (first-job agent, the same decisions as easy): {ratio:.2f} (goal <= 2)")
    # The environment asks no step at instants where nothing can fit (it decides them
    # itself), so per decided instant, the unit the replay counts, it costs less:
    print(
        f"per decided instant (both sides decide the same {easy[1]} instants): "
        f"{first[0] / easy[1] * 1e6:.1f} us against {per_decision * 1e6:.1f} us, ratio "
        f"{first[0] / easy[0]:.2f}"
    )
    return ratio


def digest(env: HPCDispatchEnv, starts: list[int]) -> str:
    """A hash of every observation, mask, reward and info of the slices played by the
    first-job agent and by a seeded random masked agent (untimed)."""
    hashed = hashlib.sha256()
    for agent in ("first", "random"):
        rng = np.random.default_rng(1)
        for start in starts:
            obs, info = env.reset(options={"start": start})
            hashed.update(obs.tobytes() + repr(sorted(info.items())).encode())
            done = False
            while not done:
                mask = env.action_masks()
                action = 0 if agent == "first" else int(rng.choice(np.flatnonzero(mask)))
                obs, reward, done, _, info = env.step(action)
                hashed.update(mask.tobytes() + obs.tobytes() + np.float64(reward).tobytes())
                hashed.update(repr(sorted(info.items())).encode())
    return hashed.hexdigest()


def against(args: argparse.Namespace) -> float:
    """This tree's ``market_hpc`` and ``args.against``'s, each measured by a child process
    (this script, ``--json``), in alternated pairs; returns the median of the pairs' step
    CPU ratios this / ref."""
    here = Path(__file__).resolve().parents[1]
    passed = ["--trace", args.trace, "--platform", args.platform, "--slices", str(args.slices)]
    passed += ["--jobs", str(args.jobs), "--window", str(args.window), "--repeat", str(args.repeat)]
    with tempfile.TemporaryDirectory() as ref_tree:
        archive = subprocess.run(
            ["git", "-C", str(here), "archive", args.against, "market_hpc"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", ref_tree], input=archive, check=True)
        trees = {"this": str(here), "ref": ref_tree}
        results: dict[str, list[dict]] = {"this": [], "ref": []}
        for pair in range(args.pairs):
            order = ("this", "ref") if pair % 2 == 0 else ("ref", "this")
            for side in order:
                child = subprocess.run(
                    [sys.executable, __file__, *passed, "--json"],
                    env={**os.environ, "PYTHONPATH": trees[side]},
                    check=True,
                    capture_output=True,
                    text=True,
                )
                results[side].append(json.loads(child.stdout.strip().splitlines()[-1]))
            this, ref = results["this"][-1], results["ref"][-1]
            print(
                f"pair {pair + 1} ({order[0]} first): this {this['step_us']:.1f} us a step, "
                f"{this['easy_us']:.1f} us a decision, ratio {this['ratio']:.2f}; ref "
                f"{ref['step_us']:.1f} us, {ref['easy_us']:.1f} us, ratio {ref['ratio']:.2f}; "
                f"step this / ref {this['step_us'] / ref['step_us']:.3f}",
                flush=True,
            )
    steps = statistics.median(t["step_us"] / r["step_us"] for t, r in zip(*results.values()))
    for side in ("ref", "this"):
        print(
            f"{side:4s} ({args.against if side == 'ref' else 'this tree'}): median ratio "
            f"{statistics.median(r['ratio'] for r in results[side]):.2f}, step "
            f"{statistics.median(r['step_us'] for r in results[side]):.1f} us, EASY decision "
            f"{statistics.median(r['easy_us'] for r in results[side]):.1f} us"
        )
    same = {r["digest"] for side in results.values() for r in side}
    print(
        f"step CPU this / ref: median {steps:.3f} over {args.pairs} pairs; episodes "
        + ("identical (observations, masks, rewards, infos)" if len(same) == 1 else "DIFFER")
    )
    return steps


def paired(args: argparse.Namespace, jobs: list, starts: list[int], env: HPCDispatchEnv) -> float:
    """The environment with this checkout's dispatcher and with ``args.reference``'s,
    alternated slice by slice for ``args.repeat`` rounds, with EASY between; returns the
    CPU ratio this / reference."""
    from market_hpc.rl import dispatch

    spec = importlib.util.spec_from_file_location("reference_dispatch", args.reference)
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    sys.modules["reference_dispatch"] = reference
    spec.loader.exec_module(reference)
    sides = {"this": dispatch, "reference": reference}
    cpu = {"this": 0.0, "reference": 0.0, "easy": 0.0}
    steps = {"this": 0, "reference": 0}
    decisions = 0
    for round_ in range(args.repeat):
        for i, start in enumerate(starts):
            order = ("this", "reference") if (i + round_) % 2 == 0 else ("reference", "this")
            for side in order:
                env.dispatcher = sides[side].InstantDispatcher(env.options)
                began = time.process_time()
                env.reset(options={"start": start})
                done = False
                while not done:
                    _, _, done, _, _ = env.step(0)
                    steps[side] += 1
                cpu[side] += time.process_time() - began
            began = time.process_time()
            model = HPCModel(
                jobs[start : start + args.jobs],
                args.platform,
                scheduler="easy",
                record_timeseries=False,
            )
            model.run()
            cpu["easy"] += time.process_time() - began
            decisions += model.manager.decisions
    per_decision = cpu["easy"] / decisions
    assert steps["this"] == steps["reference"], steps  # the same decisions, step for step
    for side in ("reference", "this"):
        per_step = cpu[side] / steps[side]
        print(
            f"{side:9s} dispatcher: {per_step * 1e6:7.1f} us a step, "
            f"ratio {per_step / per_decision:.2f}x an EASY decision ({per_decision * 1e6:.1f} us)"
        )
    ratio = cpu["this"] / cpu["reference"]
    print(f"CPU this / reference: {ratio:.3f} ({args.repeat} rounds of {len(starts)} slices)")
    return ratio


if __name__ == "__main__":
    main()
