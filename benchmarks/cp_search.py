"""PCP'20's search on the study's own instances: OPTIMAL share, changes against the greedy
plan and time, per search strategy and budget.

    PYTHONPATH=. python benchmarks/cp_search.py capture --out /tmp/cp_instances.pkl
    PYTHONPATH=. python benchmarks/cp_search.py measure /tmp/cp_instances.pkl \
        --branching priority earliest auto --budgets 0.002 0.02 0.1
    PYTHONPATH=. python benchmarks/cp_search.py measure /tmp/cp_instances.pkl --limit 70 \
        --branching auto --budgets 0.002 --relax off on --relax-time 0.01 0.05 0.2 \
        --relax-search restarts default
    PYTHONPATH=. python benchmarks/cp_search.py measure /tmp/cp_instances.pkl \
        --branching auto --budgets 0.002 --settle off on --by-size

``capture`` runs the study's PCP'20 runs (``scenarios/cp_dispatch.toml``: KIT-like 3,000
jobs at offered load 1.5, Eurora-like 1,000 jobs, seed 1 unless ``--seeds``) and keeps
every instance for which PCP'20 built a model (non-trivial: the greedy plan does not
start every modelled job now). ``measure`` solves each kept instance under every
(branching, deterministic budget) pair in one process and prints, per system: the share
ending OPTIMAL, FEASIBLE and FALLBACK, the share whose start-now jobs or nodes differ
from the greedy plan's, the mean objective gain over the greedy plan, the mean answer
objective over the list plan's (PCP'20's hint), what the schedule relaxation did
(``cp_relax``: proved / unpacked / bound / skipped), and the mean / p99 wall time and
the mean CPU time per decision. ``--relax``, ``--relax-time`` and ``--relax-search``
vary the relaxation (``on`` is the default), ``--settle`` its settle cap;
``--by-size`` adds the OPTIMAL count per model size (modelled jobs), ``--relax-jobs``
lifts the relaxation's size cap (to measure the large models), ``--systems`` picks systems. Same
instances for every configuration: a paired comparison (the machine is shared, so the times are
noisy; the statuses are exact, since the limits are deterministic).
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import time
from pathlib import Path

import numpy as np

from market_hpc.algorithms.cp import relax as cp_relax
from market_hpc.algorithms.cp.cuts import CUTS
from market_hpc.algorithms.cp.greedy import greedy_plan
from market_hpc.algorithms.cp.instance import BRANCHINGS, CpInstance, CpLimits
from market_hpc.algorithms.cp.listplan import list_plan
from market_hpc.algorithms.cp.pcp20 import solve_pcp20
from market_hpc.algorithms.cp.reduce import reduce_instance


def capture(out: Path, seeds: list[int], jobs: int) -> None:
    from benchmarks.cp_study import config
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate
    from market_hpc.policies import cp

    kept: dict[str, list[CpInstance]] = {}
    original = cp.Pcp20.solve

    def keeping(self: cp.Pcp20, instance: CpInstance) -> object:
        reduced = reduce_instance(instance, self.levels).instance if self.levels else instance
        if greedy_plan(reduced).objective(reduced) > 0:
            kept.setdefault(self._system, []).append(instance)
        return original(self, instance)

    cp.Pcp20.solve = keeping  # type: ignore[method-assign]
    for system in ("kit", "eurora"):
        for seed in seeds:
            data = config(system, "pcp20", seed, jobs)
            cp.Pcp20._system = f"{data['platform']}"  # type: ignore[attr-defined]
            began = time.perf_counter()
            simulate(config_from_dict(data))
            print(
                f"{data['platform']} seed {seed}: {len(kept.get(data['platform'], []))} instances "
                "so far, "
                f"{time.perf_counter() - began:.0f} s",
                flush=True,
            )
    out.write_bytes(pickle.dumps(kept))


HINT = "list"


def with_parameters(settings: list[str]) -> None:
    """Apply ``KEY=VALUE`` CP-SAT parameters on top of every solve's own (benchmark only)."""
    from market_hpc.algorithms.cp import instance as cp_instance
    from market_hpc.algorithms.cp import pcp20 as cp_pcp20

    for item in list(settings):  # PCP'20 sets its LP level after ``configure``: patch it there
        if item.startswith("linearization_level="):
            cp_pcp20.LINEARIZATION = int(item.split("=")[1])  # type: ignore[misc]
            settings = [other for other in settings if other != item]
    if not settings:
        return
    original = cp_instance.configure

    def configure(solver: object, limits: CpLimits, deterministic_time: float) -> None:
        original(solver, limits, deterministic_time)  # type: ignore[arg-type]
        params = solver.parameters  # type: ignore[attr-defined]
        for item in settings:
            key, value = item.split("=")
            kind = type(getattr(params, key))
            setattr(params, key, value.lower() == "true" if kind is bool else kind(value))

    cp_instance.configure = configure  # type: ignore[assignment]


def measure(
    path: Path,
    branchings: list[str],
    budgets: list[float],
    limit: int | None,
    cut_sets: list[str],
    workers: int,
    relaxations: list[tuple[bool, float, bool]],
    settles: list[bool],
    by_size: bool,
    systems: list[str] | None = None,
) -> None:
    kept: dict[str, list[CpInstance]] = pickle.loads(path.read_bytes())
    unknown = sorted(set(systems or ()) - set(kept))
    if unknown:
        raise SystemExit(f"{path}: no captured system {unknown}; captured: {', '.join(kept)}")
    kept = {system: kept[system] for system in systems or kept}
    print(
        f"{'system':>8} {'branching':>9} {'budget':>7} {'cuts':>20} {'relaxation':>18} {'n':>4} | "
        f"{'OPTIMAL':>7} "
        f"{'FEAS':>6} {'FALLB':>6} | {'changed':>7} {'gain%':>6} {'vs hint':>7} | "
        f"{'prv/unp/bnd/skp':>15} | "
        f"{'mean ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu ms':>8}"
    )
    for system, instances in kept.items():
        instances = instances[:: max(1, len(instances) // limit)] if limit else instances
        for branching in branchings:
            for cut_set in cut_sets:
                cuts = (
                    ()
                    if cut_set == "none"
                    else CUTS
                    if cut_set == "all"
                    else tuple(cut_set.split(","))
                )
                for (relax, relax_time, restarts), settle in itertools.product(
                    relaxations, settles
                ):
                    if not relax and settle != settles[0]:
                        continue  # the settle cap is part of the relaxation
                    cp_relax.RELAX_TIME, cp_relax.RELAX_RESTARTS = relax_time, restarts  # type: ignore[misc]
                    cp_relax.SETTLE = settle  # type: ignore[misc]
                    label = (
                        f"{relax_time:g} "
                        f"{'restarts' if restarts else 'default'}{' settle' if settle else ''}"
                        if relax
                        else "off"
                    )
                    for budget in budgets:
                        _measure_one(
                            system,
                            instances,
                            branching,
                            budget,
                            cut_set,
                            cuts,
                            workers,
                            relax,
                            label,
                            by_size,
                        )


def _measure_one(
    system: str,
    instances: list[CpInstance],
    branching: str,
    budget: float,
    cut_set: str,
    cuts: tuple[str, ...],
    workers: int,
    relax: bool,
    label: str,
    by_size: bool = False,
) -> None:
    limits = CpLimits(deterministic_time=budget, workers=workers)
    statuses, changed, gains, ratios, tags, seconds, sizes = [], [], [], [], [], [], []
    cpu = time.process_time()
    for instance in instances:
        began = time.perf_counter()
        outcome = solve_pcp20(
            instance, limits, branching=branching, cuts=cuts, hint=HINT, relax=relax
        )
        seconds.append(time.perf_counter() - began)
        statuses.append(outcome.status)
        changed.append(bool(outcome.changed))
        tags.append(outcome.relaxation)
        reduced = reduce_instance(instance).instance
        sizes.append(len(reduced.jobs))
        plan = greedy_plan(reduced)
        greedy = plan.objective(reduced)
        gains.append(1 - outcome.objective / greedy if greedy else 0.0)
        hint = list_plan(reduced, plan).objective(reduced) if greedy else 0
        ratios.append(outcome.objective / hint if hint else 1.0)
    cpu_ms = (time.process_time() - cpu) * 1e3 / len(instances)  # the reference plans included
    n = len(instances)
    ms = np.asarray(seconds) * 1e3
    share = {s: statuses.count(s) / n for s in ("OPTIMAL", "FEASIBLE", "FALLBACK")}
    counts = "/".join(str(tags.count(tag)) for tag in ("proved", "unpacked", "bound", "skipped"))
    print(
        f"{system:>8} {branching:>9} {budget:7.3f} {cut_set:>20} {label:>18} {n:4d} | "
        f"{share['OPTIMAL']:7.3f} "
        f"{share['FEASIBLE']:6.3f} {share['FALLBACK']:6.3f} | {np.mean(changed):7.3f} "
        f"{100 * np.mean(gains):6.2f} {np.mean(ratios):7.3f} | {counts:>15} | {ms.mean():8.1f} "
        f"{np.percentile(ms, 99):8.1f} {ms.max():8.1f} {cpu_ms:8.1f}",
        flush=True,
    )
    if by_size:
        cells = []
        for low, high in SIZES:
            chosen = [s == "OPTIMAL" for s, k in zip(statuses, sizes) if low <= k <= high]
            if chosen:
                cells.append(f"{low}-{high} jobs: {sum(chosen)}/{len(chosen)} OPTIMAL")
        print(f"{'':>8} by modelled jobs: " + "; ".join(cells), flush=True)


SIZES = ((1, 10), (11, 20), (21, 30), (31, 40), (41, 100))
"""Model-size buckets (modelled jobs on the reduced system) of ``measure --by-size``."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("--out", type=Path, required=True)
    cap.add_argument("--seeds", type=int, nargs="+", default=[1])
    cap.add_argument(
        "--jobs", type=int, default=1500, help="jobs per run (the study's systems and loads)"
    )
    mea = sub.add_parser("measure")
    mea.add_argument("path", type=Path)
    mea.add_argument("--branching", nargs="+", default=list(BRANCHINGS), choices=BRANCHINGS)
    mea.add_argument("--budgets", type=float, nargs="+", default=[0.002, 0.02, 0.1])
    mea.add_argument(
        "--limit", type=int, default=None, help="about N instances per system, evenly spread"
    )
    mea.add_argument(
        "--cuts",
        nargs="+",
        default=["all"],
        help="redundant rules per configuration: all, none, or a comma list of " + ", ".join(CUTS),
    )
    mea.add_argument("--workers", type=int, default=1, help="CP-SAT num_workers")
    mea.add_argument("--hint", default="list", choices=["list", "shelf"], help="PCP'20's hint")
    mea.add_argument(
        "--param", nargs="*", default=[], help="extra CP-SAT parameters KEY=VALUE for every solve"
    )
    mea.add_argument(
        "--relax", nargs="+", default=["on"], choices=["on", "off"], help="the schedule relaxation"
    )
    mea.add_argument(
        "--relax-time",
        type=float,
        nargs="+",
        default=[cp_relax.RELAX_TIME],
        help="its deterministic time per solve",
    )
    mea.add_argument(
        "--relax-search",
        nargs="+",
        default=["restarts"],
        choices=["restarts", "default"],
        help="its search: CP-SAT's quick-restart portfolio or its default",
    )
    mea.add_argument(
        "--settle",
        nargs="+",
        default=["on"],
        choices=["on", "off"],
        help="the relaxation's settle cap (cp_relax.settle_time)",
    )
    mea.add_argument(
        "--by-size", action="store_true", help="also the OPTIMAL count per model-size bucket"
    )
    mea.add_argument(
        "--relax-jobs",
        type=int,
        default=cp_relax.RELAX_JOBS,
        help="most modelled jobs for which the relaxation is solved (cp_relax.RELAX_JOBS)",
    )
    mea.add_argument(
        "--systems",
        nargs="+",
        default=None,
        help="only these captured systems (e.g. kit-fh2 eurora)",
    )
    args = parser.parse_args()
    if args.command == "capture":
        capture(args.out, args.seeds, args.jobs)
    else:
        global HINT
        HINT = args.hint
        with_parameters(args.param)
        cp_relax.RELAX_JOBS = args.relax_jobs  # type: ignore[misc]
        relaxations = (
            [(False, cp_relax.RELAX_TIME, cp_relax.RELAX_RESTARTS)] if "off" in args.relax else []
        )
        if "on" in args.relax:
            relaxations += [
                (True, t, search == "restarts")
                for search in args.relax_search
                for t in args.relax_time
            ]
        measure(
            args.path,
            args.branching,
            args.budgets,
            args.limit,
            args.cuts,
            args.workers,
            relaxations,
            [choice == "on" for choice in args.settle],
            args.by_size,
            args.systems,
        )


if __name__ == "__main__":
    main()
