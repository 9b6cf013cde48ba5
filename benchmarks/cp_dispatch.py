"""Dispatch time per decision of PCP'20 against PCP'19, by queue length and node count.

    PYTHONPATH=. python benchmarks/cp_dispatch.py [--repeats 100] [--pcp19-repeats 3]
    PYTHONPATH=. python benchmarks/cp_dispatch.py --exact   # exact mode (levels = 0): size vs nodes
    PYTHONPATH=. python benchmarks/cp_dispatch.py --study out/cp_dispatch out/cp_dispatch_pcp19

Instances: KIT's two node types (20-core thin nodes, 21 fat 48-core nodes with 4 GPUs)
at 64, 1,173 and 5,544 nodes; every node busy until a random time except 8 thin nodes
(whole-node jobs of 1-8 nodes, so the number of running jobs, and of fixed boxes, grows
with the system); 10, 50 or 100 queued jobs that each fit the free nodes now (the
modelled set of PCP'19/20 holds only such jobs) but not all together. Both models get the
schedulers' default limits (deterministic time 0.002 per solve, 1 worker, seed 0; PCP'20's default
``auto`` search), so decisions are reproducible; the wall and CPU time (model building +
search) are measured in one process, so machine load shifts both columns alike; p99 is
over the cell's instances (100 by default). PCP'19 runs on the first 3 instances of a
cell, at 5,544 nodes for 10 queued jobs only (its model has ~|Q| x |N| variables).
"""

from __future__ import annotations

import argparse
import json
import time
import tomllib
from pathlib import Path

import numpy as np

from market_hpc.algorithms.cp.instance import (
    CpInstance,
    CpJob,
    CpLimits,
    CpOutcome,
    CpRunning,
    slowdown_weight,
)
from market_hpc.algorithms.cp.pcp19 import solve_pcp19
from market_hpc.algorithms.cp.pcp20 import solve_pcp20
from market_hpc.policies.cp import DETERMINISTIC_TIME

SIZES = (64, 1173, 5544)
QUEUES = (10, 50, 100)
THIN, FAT = (20, 0, 64), (48, 4, 1024)
FREE_THIN = 8


def instance(nodes: int, queued: int, seed: int) -> CpInstance:
    """A loaded KIT-like system with ``queued`` jobs that fit now."""
    rng = np.random.default_rng(seed)
    thin = nodes - 21
    capacity = np.array([THIN] * thin + [FAT] * 21, dtype=np.int64)
    running, node = [], 0
    busy = thin - FREE_THIN
    while node < busy:
        width = min(int(rng.integers(1, 9)), busy - node)
        running.append(
            CpRunning(
                int(rng.integers(60, 40_000)),
                tuple((n, (20, 0, 32)) for n in range(node, node + width)),
            )
        )
        node += width
    for fat in range(thin, nodes):
        running.append(CpRunning(int(rng.integers(60, 40_000)), ((fat, (48, 4, 512)),)))
    free_thin = FREE_THIN
    rng = np.random.default_rng([seed, 1])  # the same queue at every size
    jobs = []
    for key in range(queued):
        if rng.random() < 0.35:
            units, unit = 1, (int(rng.choice([1, 2, 4, 8, 16])), 0, int(rng.integers(1, 16)))
        else:
            units, unit = (
                int(rng.integers(1, min(4, free_thin) + 1)),
                (20, 0, int(rng.integers(1, 64))),
            )
        duration = int(rng.integers(60, 40_000))
        jobs.append(CpJob(key, units, unit, duration, slowdown_weight(duration)))
    return CpInstance(capacity, tuple(jobs), tuple(running))


def measure(solver, inst: CpInstance, limits: CpLimits) -> tuple[float, float, CpOutcome]:  # type: ignore[no-untyped-def]
    """Wall and process CPU seconds of one solve (the paper reports CPU time), and its outcome."""
    began, cpu = time.perf_counter(), time.process_time()
    outcome = solver(inst, limits)
    return time.perf_counter() - began, time.process_time() - cpu, outcome


def dispatch_times(repeats: int, pcp19_repeats: int) -> None:
    """PCP'20 (chosen search, default limits) on ``repeats`` instances per cell: wall and
    CPU mean / p99, model size mean / max, statuses; PCP'19 on the first ``pcp19_repeats``
    (its models grow with the node count, so it runs on a few only)."""
    limits = CpLimits(deterministic_time=DETERMINISTIC_TIME)
    solve_pcp20(instance(SIZES[0], QUEUES[0], 0), limits)  # load OR-Tools outside the timings
    print(
        f"{'nodes':>6} {'queue':>5} {'n':>4} | {'mean ms':>7} {'p99':>7} {'max':>7} "
        f"{'cpu mean':>8} {'cpu p99':>7} | "
        f"{'vars mean/max':>13} {'cons mean/max':>13} | {'OPT':>4} {'FEA':>4} {'FB':>3} {'chg':>4} "
        "| "
        f"{'PCP19 ms':>8} {'vars':>7} {'19/20':>6}"
    )
    means: dict[tuple[int, int], float] = {}
    cpus: dict[tuple[int, int], float] = {}
    for nodes in SIZES:
        for queued in QUEUES:
            wall, cpu, variables, constraints, statuses, changed = [], [], [], [], [], 0
            pcp19, pcp20_paired, vars19 = [], [], 0
            for seed in range(repeats):
                inst = instance(nodes, queued, seed)
                seconds, used, outcome = measure(solve_pcp20, inst, limits)
                wall.append(seconds)
                cpu.append(used)
                variables.append(outcome.variables)
                constraints.append(outcome.constraints)
                statuses.append(outcome.status)
                changed += bool(outcome.changed)
                if seed < pcp19_repeats and (nodes <= 1173 or queued == 10):
                    seconds19, _, outcome19 = measure(solve_pcp19, inst, limits)
                    vars19 = outcome19.variables
                    pcp19.append(seconds19)
                    pcp20_paired.append(seconds)
            ms, cpu_ms = np.asarray(wall) * 1e3, np.asarray(cpu) * 1e3
            means[nodes, queued] = float(ms.mean())
            cpus[nodes, queued] = float(cpu_ms.mean())
            slow = (
                f"{np.mean(pcp19) * 1e3:8.0f} {vars19:7d} "
                f"{np.mean(pcp19) / np.mean(pcp20_paired):5.1f}x"
                if pcp19
                else f"{'not run':>8}"
            )
            print(
                f"{nodes:6d} {queued:5d} {repeats:4d} | {ms.mean():7.1f} "
                f"{np.percentile(ms, 99):7.1f} {ms.max():7.1f} "
                f"{cpu_ms.mean():8.1f} {np.percentile(cpu_ms, 99):7.1f} | "
                f"{np.mean(variables):6.0f}/{max(variables):6d} "
                f"{np.mean(constraints):6.0f}/{max(constraints):6d} | "
                f"{statuses.count('OPTIMAL'):4d} {statuses.count('FEASIBLE'):4d} "
                f"{statuses.count('FALLBACK'):3d} "
                f"{changed:4d} | {slow}",
                flush=True,
            )
    for name, table in (("wall", means), ("cpu", cpus)):
        print(
            f"PCP'20 mean {name} time at 5,544 nodes / at 64 nodes:",
            ", ".join(f"{q} jobs {table[SIZES[-1], q] / table[SIZES[0], q]:.2f}x" for q in QUEUES),
        )


def exact_sizes(repeats: int) -> None:
    """Model size of the exact mode (``levels = 0``: every node and running job) against the
    reduced one, per node count and queue length (the models are built, not solved)."""
    from market_hpc.algorithms.cp.greedy import greedy_plan
    from market_hpc.algorithms.cp.instance import model_size
    from market_hpc.algorithms.cp.pcp20 import Pcp20Model
    from market_hpc.algorithms.cp.reduce import reduce_instance

    print(
        f"{'nodes':>6} {'queue':>5} | {'exact vars':>10} {'exact cons':>10} {'build ms':>8} | "
        f"{'reduced vars':>12} {'reduced cons':>12} {'nodes kept':>10}"
    )
    for queued in QUEUES[:2]:
        for nodes in SIZES:
            exact, reduced, kept, build = [], [], [], []
            for seed in range(repeats):
                inst = instance(nodes, queued, seed)
                began = time.perf_counter()
                exact.append(model_size(Pcp20Model(inst, greedy_plan(inst)).model))
                build.append(time.perf_counter() - began)
                small = reduce_instance(inst)
                reduced.append(
                    model_size(Pcp20Model(small.instance, greedy_plan(small.instance)).model)
                )
                kept.append(len(small.nodes))
            ev, ec = np.mean(exact, axis=0)
            rv, rc = np.mean(reduced, axis=0)
            print(
                f"{nodes:6d} {queued:5d} | {ev:10.0f} {ec:10.0f} {np.mean(build) * 1e3:8.0f} | "
                f"{rv:12.0f} {rc:12.0f} {np.mean(kept):10.0f}",
                flush=True,
            )


def study_table(folders: list[Path]) -> None:
    import pandas as pd

    frames = []
    for folder in folders:
        files = sorted(folder.glob("*.parquet")) + sorted(folder.glob("*.csv"))
        if not files:
            raise SystemExit(f"no sweep results in {folder}")
        part = pd.read_parquet(files[0]) if files[0].suffix == ".parquet" else pd.read_csv(files[0])
        if "platform" not in part:  # not swept: the sweep file's platform
            sweep_file = json.loads((folder / "sweep.json").read_text())["sweep_file"]
            part["platform"] = tomllib.loads(Path(sweep_file).read_text())["platform"]
        frames.append(part)
    frame = pd.concat(frames, ignore_index=True)
    columns = [
        "platform",
        "scheduler",
        "mean_slowdown",
        "std_slowdown",
        "mean_wait",
        "std_wait",
        "mean_dispatch_ms",
        "p99_dispatch_ms",
        "max_dispatch_ms",
        "cp_optimal_share",
        "cp_fallback_share",
        "cp_decisions",
        "cp_mean_variables",
        "decisions",
        "duration_s",
        "jobs_completed",
    ]
    present = [c for c in columns if c in frame]
    print(
        frame[present]
        .sort_values(present[:2])
        .to_string(index=False, float_format=lambda v: f"{v:.3g}")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100, help="instances per cell")
    parser.add_argument("--pcp19-repeats", type=int, default=3, help="of which PCP'19 also solves")
    parser.add_argument(
        "--exact", action="store_true", help="print the exact mode's model size instead"
    )
    parser.add_argument(
        "--study",
        type=Path,
        nargs="+",
        help="print the cp_dispatch sweep table from these result folders",
    )
    args = parser.parse_args()
    if args.study is not None:
        study_table(args.study)
    elif args.exact:
        exact_sizes(min(args.repeats, 5))
    else:
        dispatch_times(args.repeats, args.pcp19_repeats)


if __name__ == "__main__":
    main()
