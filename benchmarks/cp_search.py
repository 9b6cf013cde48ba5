"""PCP'20's search on the study's own instances: OPTIMAL share, changes against the greedy
plan and time, per search strategy and budget.

    PYTHONPATH=. python benchmarks/cp_search.py capture --out /tmp/cp_instances.pkl
    PYTHONPATH=. python benchmarks/cp_search.py measure /tmp/cp_instances.pkl \
        --branching priority earliest auto --budgets 0.002 0.02 0.1

``capture`` runs the study's PCP'20 runs (``scenarios/cp_dispatch.toml``: KIT-like 3,000
jobs at offered load 1.5, Eurora-like 1,000 jobs, seed 1 unless ``--seeds``) and keeps
every instance for which PCP'20 built a model (non-trivial: the greedy plan does not
start every modelled job now). ``measure`` solves each kept instance under every
(branching, deterministic budget) pair in one process and prints, per system: the share
ending OPTIMAL, FEASIBLE and FALLBACK, the share whose start-now jobs or nodes differ
from the greedy plan's, the mean objective gain over the greedy plan, and the mean /
p99 wall time per decision. Same instances for every configuration: a paired
comparison (the machine is shared, so the times are noisy; the statuses are exact,
since the limits are deterministic).
"""

from __future__ import annotations

import argparse
import copy
import pickle
import time
from pathlib import Path

import numpy as np

from market_hpc.algorithms.cp_greedy import greedy_plan
from market_hpc.algorithms.cp_instance import CpInstance, CpLimits
from market_hpc.algorithms.cp_pcp20 import BRANCHINGS, solve_pcp20
from market_hpc.algorithms.cp_reduce import reduce_instance

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "cp_dispatch.toml"


def capture(out: Path, seeds: list[int], jobs_scale: float) -> None:
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate
    from market_hpc.experiment.sweep import load_sweep
    from market_hpc.policies import cp

    kept: dict[str, list[CpInstance]] = {}
    original = cp.Pcp20.solve

    def keeping(self: cp.Pcp20, instance: CpInstance) -> object:
        reduced = reduce_instance(instance, self.levels).instance if self.levels else instance
        if greedy_plan(reduced).objective(reduced) > 0:
            kept.setdefault(self._system, []).append(instance)
        return original(self, instance)

    cp.Pcp20.solve = keeping  # type: ignore[method-assign]
    sweep = load_sweep(SCENARIO)
    for run in sweep.runs:
        if run.config["policy"]["scheduler"] != "pcp20":
            continue
        for seed in seeds:
            data = copy.deepcopy(run.config)
            data["seed"] = seed
            data["workload"]["jobs"] = int(data["workload"]["jobs"] * jobs_scale)
            config = config_from_dict(data)
            cp.Pcp20._system = f"{data['platform']}"  # type: ignore[attr-defined]
            began = time.perf_counter()
            simulate(config)
            print(f"{data['platform']} seed {seed}: {len(kept.get(data['platform'], []))} instances so far, "
                  f"{time.perf_counter() - began:.0f} s", flush=True)
    out.write_bytes(pickle.dumps(kept))


def measure(path: Path, branchings: list[str], budgets: list[float], limit: int | None) -> None:
    kept: dict[str, list[CpInstance]] = pickle.loads(path.read_bytes())
    print(f"{'system':>8} {'branching':>9} {'budget':>7} {'n':>4} | {'OPTIMAL':>7} {'FEAS':>6} {'FALLB':>6} | "
          f"{'changed':>7} {'gain%':>6} | {'mean ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for system, instances in kept.items():
        instances = instances[:: max(1, len(instances) // limit)] if limit else instances
        for branching in branchings:
            for budget in budgets:
                limits = CpLimits(deterministic_time=budget)
                statuses, changed, gains, seconds = [], [], [], []
                for instance in instances:
                    began = time.perf_counter()
                    outcome = solve_pcp20(instance, limits, branching=branching)
                    seconds.append(time.perf_counter() - began)
                    statuses.append(outcome.status)
                    changed.append(bool(outcome.changed))
                    reduced = reduce_instance(instance).instance
                    greedy = greedy_plan(reduced).objective(reduced)
                    gains.append(1 - outcome.objective / greedy if greedy else 0.0)
                n = len(instances)
                ms = np.asarray(seconds) * 1e3
                share = {s: statuses.count(s) / n for s in ("OPTIMAL", "FEASIBLE", "FALLBACK")}
                print(f"{system:>8} {branching:>9} {budget:7.3f} {n:4d} | {share['OPTIMAL']:7.3f} "
                      f"{share['FEASIBLE']:6.3f} {share['FALLBACK']:6.3f} | {np.mean(changed):7.3f} "
                      f"{100 * np.mean(gains):6.2f} | {ms.mean():8.1f} {np.percentile(ms, 99):8.1f} {ms.max():8.1f}",
                      flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("--out", type=Path, required=True)
    cap.add_argument("--seeds", type=int, nargs="+", default=[1])
    cap.add_argument("--jobs-scale", type=float, default=1.0)
    mea = sub.add_parser("measure")
    mea.add_argument("path", type=Path)
    mea.add_argument("--branching", nargs="+", default=list(BRANCHINGS), choices=BRANCHINGS)
    mea.add_argument("--budgets", type=float, nargs="+", default=[0.002, 0.02, 0.1])
    mea.add_argument("--limit", type=int, default=None, help="about N instances per system, evenly spread")
    args = parser.parse_args()
    if args.command == "capture":
        capture(args.out, args.seeds, args.jobs_scale)
    else:
        measure(args.path, args.branching, args.budgets, args.limit)


if __name__ == "__main__":
    main()
