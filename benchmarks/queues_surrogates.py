"""Seed 004: can another surrogate carry the DP-NLPM decision? Same simulations, three fits.

    PYTHONPATH=$PWD python benchmarks/queues_surrogates.py [--months 7 8 9] [--trace hpc2n|curie]

For each history month, DP-NLPM samples 100 partition sets per epoch (the planner's own
simulations, ``Surface``); then three surrogates are fitted to the same waits: the
paper's cubic, a cubic of log(1 + wait) (spec A6's option), and scipy's thin-plate
``RBFInterpolator`` with smoothing. For each: the 5-fold cross-validated R^2 per epoch
(on the wait scale), and its NLP optimum (SLSQP from the planner's starts, rounded above
the floors) predicted vs simulated, against the best simulated sample.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.interpolate import RBFInterpolator
from scipy.optimize import minimize

from market_hpc.algorithms.queues.fit import fit_cubic, weighted_waits
from market_hpc.algorithms.queues.partitions import apportion
from market_hpc.domain.platform import load_platform
from market_hpc.experiment.config import QueuesConfig
from market_hpc.experiment.queues import Surface, plan_period
from market_hpc.workload import read_swf, time_slice

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
SOURCES = {
    "hpc2n": (TRACES / "HPC2N-2002-2.1-cln.swf.gz", "hpc2n", 0.0),
    "curie": (TRACES / "CEA-Curie-2011-2.1-cln.swf.gz", "nodes=5040,cores=16", 32_000_000.0),
}
MONTH = 30 * 86400.0
Fit = Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]]


def cubic(x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    return fit_cubic(x, y)


def log_cubic(x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    model = fit_cubic(x, np.log1p(np.maximum(y, 0.0)))
    return lambda points: np.expm1(model(points))


def rbf(x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    model = RBFInterpolator(x, y, kernel="thin_plate_spline", smoothing=0.1)
    return lambda points: model(np.atleast_2d(points))


FITS: dict[str, Fit] = {"cubic": cubic, "log-cubic": log_cubic, "rbf": rbf}


def cv_r2(fit: Fit, x: np.ndarray, y: np.ndarray, folds: int = 5) -> float:
    predicted = np.empty(len(y))
    for fold in range(folds):
        test = np.arange(fold, len(y), folds)
        train = np.setdiff1d(np.arange(len(y)), test)
        predicted[test] = fit(x[train], y[train])(x[test])
    return 1.0 - float(((y - predicted) ** 2).sum()) / float(((y - y.mean()) ** 2).sum())


def optimum(
    surface: Surface, models: list[Callable[[np.ndarray], np.ndarray]]
) -> tuple[tuple[int, ...], float]:
    """SLSQP on the weighted surrogate from the planner's starts; best rounded point."""
    problem = surface.problem
    unit, weights = problem.unit, problem.weights

    def predict(y: np.ndarray) -> float:
        return float(sum(w * m(y[None, :-1])[0] for w, m in zip(weights, models)) / sum(weights))

    bounds = [(lo / unit, max(lo, hi) / unit) for lo, hi in zip(problem.floor, problem.upper)]
    constraint = {"type": "eq", "fun": lambda y: y.sum() - problem.total / unit}
    best: tuple[float, tuple[int, ...]] | None = None
    for start in surface.starts:
        y0 = np.clip(
            np.asarray(start, dtype=float) / unit, [b[0] for b in bounds], [b[1] for b in bounds]
        )
        result = minimize(
            predict,
            y0,
            method="SLSQP",
            bounds=bounds,
            constraints=[constraint],
            options={"maxiter": 200},
        )
        if not result.success:
            continue
        sizes = apportion(
            problem.total, np.maximum(result.x * unit, problem.floor).tolist(), problem.floor
        )
        value = predict(np.asarray(sizes, dtype=float) / unit)
        if best is None or value < best[0]:
            best = (value, sizes)
    if best is None:
        return tuple(surface.sets[0]), float("nan")
    return best[1], best[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", choices=list(SOURCES), default="hpc2n")
    parser.add_argument("--months", type=int, nargs="+", default=[7, 8, 9])
    args = parser.parse_args()
    path, platform_name, offset = SOURCES[args.trace]
    platform = load_platform(platform_name)
    trace = read_swf(path).jobs
    for month in args.months:
        start = offset + (month - 1) * MONTH
        jobs = list(time_slice(trace, start, start + MONTH))
        plan = plan_period(
            jobs,
            start,
            MONTH,
            platform,
            QueuesConfig(strategy="dpnlpm"),
            seed=1,
            strategies=("dpnlpm",),
        )
        details = plan.details["dpnlpm"]
        surface: Surface | None = details.get("surface")
        if surface is None:
            print(f"{args.trace} month {month}: fewer than two queues with jobs, nothing to fit")
            continue
        samples = weighted_waits(surface.epoch_waits, surface.problem.weights)
        print(
            f"{args.trace} month {month} ({len(jobs)} jobs): best sample simulates at "
            f"{samples.min():.3f} h; "
            f"planner chose {details['source']}"
        )
        for name, fit in FITS.items():
            cvs = [cv_r2(fit, surface.x, waits) for waits in surface.epoch_waits]
            models = [fit(surface.x, waits) for waits in surface.epoch_waits]
            sizes, predicted = optimum(surface, models)
            simulated = surface.simulate(sizes)
            gain = 100 * (samples.min() - simulated) / samples.min() if samples.min() > 0 else 0.0
            print(
                f"  {name:9s} CV R2 {', '.join(f'{c:.2f}' for c in cvs)}; optimum {sizes}: "
                "predicted "
                f"{predicted:.3f} h, simulated {simulated:.3f} h, vs best sample {gain:+.1f}%"
            )


if __name__ == "__main__":
    main()
