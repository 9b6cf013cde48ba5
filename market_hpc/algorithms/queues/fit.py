"""DP-NLPM: cubic least-squares surrogate of mean wait vs partition sizes, and its
constrained minimisation (Kondameedi & Vadhiyar, Eqs. 1-4 and 6).

With sum(P_i) = P the last size is implied, so the surrogate is a full
polynomial of total degree <= 3 in the first NQ-1 shares x_i = P_i / P (20 terms for
NQ = 4). Instead of fmincon, scipy SLSQP from several starts, then integer repair (largest
remainder in node units) and a one-unit pairwise local search. Eq. 6 enters as a floor
of ``alpha`` x the proportional share per queue (``share_floor``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize

from market_hpc.algorithms.queues.partitions import apportion


def monomial_exponents(n_vars: int, degree: int = 3) -> list[tuple[int, ...]]:
    """Exponent tuples of every monomial of total degree <= ``degree``.

    >>> len(monomial_exponents(3)), monomial_exponents(1)
    (20, [(0,), (1,), (2,), (3,)])
    """
    return [
        e
        for total in range(degree + 1)
        for e in sorted(itertools.product(range(total + 1), repeat=n_vars), reverse=True)
        if sum(e) == total
    ]


def design_matrix(x: np.ndarray, exponents: Sequence[tuple[int, ...]]) -> np.ndarray:
    """Rows of monomial values for the points ``x`` (n_points x n_vars)."""
    x = np.atleast_2d(x)
    return np.stack([np.prod(x ** np.asarray(e), axis=1) for e in exponents], axis=1)


@dataclass(frozen=True)
class Cubic:
    """A fitted polynomial surrogate ``f(x)`` on the free shares.

    Attributes:
        exponents: Monomial exponents.
        coef: Coefficients (same order).
        r2: Coefficient of determination on the fitting points.
    """

    exponents: tuple[tuple[int, ...], ...]
    coef: np.ndarray
    r2: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Evaluate at points ``x`` (n_points x n_vars, or one point)."""
        values: np.ndarray = design_matrix(x, self.exponents) @ self.coef
        return values

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """Gradient at one point."""
        x = np.asarray(x, dtype=float)
        grad = np.zeros_like(x)
        for e, c in zip(self.exponents, self.coef):
            for i, power in enumerate(e):
                if power:
                    others = (
                        np.prod([x[j] ** p for j, p in enumerate(e) if j != i])
                        if len(e) > 1
                        else 1.0
                    )
                    grad[i] += c * power * x[i] ** (power - 1) * others
        return grad


def fit_cubic(x: np.ndarray, y: np.ndarray, degree: int = 3, ridge: float = 1e-9) -> Cubic:
    """Least-squares polynomial of total degree <= ``degree`` through ``(x, y)``.

    A tiny ridge keeps near-collinear designs stable.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.random((60, 2))
    >>> y = 1 + 2 * x[:, 0] - x[:, 1] ** 2 + 3 * x[:, 0] * x[:, 1] ** 2
    >>> model = fit_cubic(x, y)
    >>> round(float(model(np.array([0.5, 0.5]))[0]), 6), round(model.r2, 6)
    (2.125, 1.0)
    """
    exponents = tuple(monomial_exponents(x.shape[1], degree))
    matrix = design_matrix(x, exponents)
    gram = matrix.T @ matrix + ridge * np.eye(len(exponents))
    coef = np.linalg.solve(gram, matrix.T @ y)
    residual = y - matrix @ coef
    spread = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / spread if spread > 0 else 1.0
    return Cubic(exponents, coef, r2)


def cross_r2(x: np.ndarray, y: np.ndarray, folds: int = 5, degree: int = 3) -> float:
    """Out-of-sample R^2 of the cubic: each of ``folds`` interleaved folds predicted by
    a fit on the others (the in-sample R^2 is 1 whenever samples <= terms).

    >>> x = np.linspace(0, 1, 40)[:, None]
    >>> round(cross_r2(x, 1 + x[:, 0] ** 3), 6)
    1.0
    >>> cross_r2(x[:1], np.ones(1))
    nan
    """
    if len(y) < 2:  # one sample (the bounds fill the machine): nothing to predict it from
        return math.nan
    predicted = np.empty(len(y))
    for fold in range(folds):
        test = np.arange(fold, len(y), folds)
        train = np.setdiff1d(np.arange(len(y)), test)
        predicted[test] = fit_cubic(x[train], y[train], degree)(x[test])
    spread = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - predicted) ** 2).sum()) / spread if spread > 0 else 1.0


def share_floor(
    total: int, lower: Sequence[int], hours: Sequence[float], alpha: float
) -> tuple[int, ...]:
    """Per-queue minimum: the larger of lb_i and ``alpha`` x its Eq. 7 share.

    This is the relaxed Eq. 6 used here: as written, P_i/P_j > C_i/C_j for
    every pair is infeasible, and a pairwise ratio bound is too once whole nodes and
    lb_i meet queues with tiny CPU hours; "each queue keeps at least alpha of its
    proportional share" is always satisfiable for alpha < 1 and alpha = 1 gives PP
    back. When the floors exceed ``total`` their excess over ``lower`` is scaled down.

    >>> share_floor(100, [1, 1, 1], [60.0, 30.0, 10.0], 0.5)
    (30, 15, 5)
    """
    weight = sum(hours)
    floors = [
        max(lo, math.ceil(alpha * total * h / weight - 1e-9)) if weight > 0 else lo
        for lo, h in zip(lower, hours)
    ]
    if sum(floors) > total:
        extra = apportion(total - sum(lower), [f - lo for f, lo in zip(floors, lower)])
        floors = [lo + e for lo, e in zip(lower, extra)]
    return tuple(int(f) for f in floors)


@dataclass(frozen=True)
class NlpProblem:
    """Eqs. 2-4 and the relaxed Eq. 6 in node units.

    Attributes:
        total: P, nodes to share (Eq. 3).
        floor: Smallest size per queue: lb_i (Eq. 4) and the relaxed Eq. 6
            (``share_floor``).
        upper: Largest size per queue (the sampled region's top: no extrapolation).
        surrogates: One fitted cubic per epoch, on x = P[:-1] / total.
        weights: Epoch weights (Eq. 2; 1/3, 2/3, 1 by recency).
        scale: The surrogates' unit: x = P[:-1] / scale (0: ``total``; the
            machine's nodes when queues fixed at their floor are left out).
    """

    total: int
    floor: tuple[int, ...]
    upper: tuple[int, ...]
    surrogates: tuple[Cubic, ...]
    weights: tuple[float, ...]
    scale: int = 0

    @property
    def unit(self) -> float:
        """Nodes per unit of the surrogates' variables."""
        return float(self.scale or self.total)

    def objective(self, sizes: np.ndarray) -> float:
        """Weighted surrogate wait (Eq. 2) at node sizes ``sizes``."""
        x = np.asarray(sizes, dtype=float)[:-1] / self.unit
        return float(sum(w * f(x)[0] for w, f in zip(self.weights, self.surrogates)))

    def feasible(self, sizes: Sequence[int]) -> bool:
        """Whether integer sizes meet Eq. 3 and the floors and upper bounds."""
        return sum(sizes) == self.total and all(
            lo <= s <= max(lo, hi) for s, lo, hi in zip(sizes, self.floor, self.upper)
        )


def epoch_weights(count: int) -> tuple[float, ...]:
    """Eq. 2 recency weights, oldest first (Table III: 1/3, 2/3, 3/3 for 3 epochs).

    >>> epoch_weights(3)
    (0.3333333333333333, 0.6666666666666666, 1.0)
    """
    return tuple((k + 1) / count for k in range(count))


def weighted_waits(epoch_waits: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """Per sample, the recency-weighted mean of its epochs' waits (Eq. 2 on the samples).

    >>> waits = [np.array([0.0, 9.0]), np.array([0.0, 9.0]), np.array([10.0, 0.0])]
    >>> weighted_waits(waits, epoch_weights(3))
    array([5. , 4.5])
    """
    total = np.zeros(len(epoch_waits[0]))
    for waits, weight in zip(epoch_waits, weights):
        total += weight * np.asarray(waits, dtype=float)
    return total / sum(weights)


@dataclass
class NlpResult:
    """What the NLP did.

    Attributes:
        sizes: Integer sizes after rounding and the one-node local search (``None``
            when every solve failed).
        slsqp_sizes: The best SLSQP optimum, rounded, before the local search.
        start: Index of the start that gave it.
        solves: SLSQP runs (retries included).
        failures: Runs whose ``result.success`` was false.
        retries: Failed starts retried from another start.
        discarded: Starts whose solves all failed (their output is not used).
        messages: Failure messages and how often each occurred.
    """

    sizes: tuple[int, ...] | None = None
    slsqp_sizes: tuple[int, ...] | None = None
    start: int = -1
    solves: int = 0
    failures: int = 0
    retries: int = 0
    discarded: int = 0
    messages: dict[str, int] = field(default_factory=dict)


def solve_nlp(
    problem: NlpProblem, starts: Sequence[Sequence[float]], max_iter: int = 200
) -> NlpResult:
    """Minimise the weighted surrogate under Eq. 3 and the floors; integer node sizes.

    The variables are shares y_i = P_i / unit (well scaled for SLSQP): bounds
    [floor_i, upper_i] / unit and one equality sum(y) = total / unit. SLSQP runs from every start;
    a run whose ``success`` is false is retried once from the midpoint of its start
    and the centre of the bounds, and discarded if that fails too (counted in the
    result). Each kept optimum is rounded by largest remainder above the floors; the
    best is improved by moving one node between pairs while the objective falls.
    """
    n = len(problem.floor)
    total = problem.unit
    share = problem.total / total
    scale = max(abs(problem.objective(np.asarray(s, dtype=float))) for s in starts) or 1.0

    def fun(y: np.ndarray) -> float:
        value: float = sum(w * f(y[:-1])[0] for w, f in zip(problem.weights, problem.surrogates))
        return value / scale

    def jac(y: np.ndarray) -> np.ndarray:
        grad = np.zeros(n)
        for w, f in zip(problem.weights, problem.surrogates):
            grad[:-1] += w * f.gradient(y[:-1])
        return grad / scale

    constraints = [{"type": "eq", "fun": lambda y: y.sum() - share, "jac": lambda y: np.ones(n)}]
    bounds = [(lo / total, max(lo, hi) / total) for lo, hi in zip(problem.floor, problem.upper)]
    lows, highs = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    centre = lows + (highs - lows) * max(0.0, share - lows.sum()) / max((highs - lows).sum(), 1e-12)
    out = NlpResult()
    best: tuple[float, tuple[int, ...]] | None = None
    for position, start in enumerate(starts):
        y0 = np.clip(np.asarray(start, dtype=float) / total, lows, highs)
        for attempt in (y0, (y0 + centre) / 2):
            result = minimize(
                fun,
                attempt,
                jac=jac,
                method="SLSQP",
                bounds=bounds,
                constraints=constraints,
                options={"maxiter": max_iter, "ftol": 1e-12},
            )
            out.solves += 1
            if result.success:
                break
            out.failures += 1
            out.messages[str(result.message)] = out.messages.get(str(result.message), 0) + 1
            if attempt is y0:
                out.retries += 1
        else:
            out.discarded += 1
            continue
        sizes = _round(result.x * total, problem)
        if sizes is not None:
            value = problem.objective(np.array(sizes))
            if best is None or value < best[0]:
                best = (value, sizes)
                out.start = position
    if best is not None:
        out.slsqp_sizes = best[1]
        out.sizes = _local_search(best[1], problem)
    return out


def settle(
    problem: NlpProblem,
    starts: Sequence[Sequence[int]],
    samples: Sequence[Sequence[int]],
    sample_waits: np.ndarray,
    simulate: Callable[[tuple[int, ...]], float],
    max_iter: int = 200,
) -> tuple[tuple[int, ...], dict[str, Any]]:
    """The DP-NLPM decision: solve the NLP, simulate its optimum (``simulate`` returns
    the recency-weighted wait, the unit of ``sample_waits``) and keep it unless the best
    simulated sample is better (a check the paper does not have: a cubic fitted to
    heavy-tailed waits can put its optimum where every simulation is worse).

    Returns the sizes and the record of the decision: ``source`` (``nlp``, ``sample``:
    the best sample beat the NLP optimum, or ``fallback``: every solve failed, best
    sample used), predicted (surrogate) and simulated waits of both, solver counts.
    """
    solved = solve_nlp(problem, starts, max_iter)
    best = int(np.argmin(sample_waits))
    weight = sum(problem.weights)
    record: dict[str, Any] = {
        "solves": solved.solves,
        "failures": solved.failures,
        "retries": solved.retries,
        "discarded": solved.discarded,
        "messages": dict(solved.messages),
        "sample_sim_h": float(sample_waits[best]),
        "sample_pred_h": problem.objective(np.array(samples[best])) / weight,
    }
    if solved.sizes is None:
        return tuple(samples[best]), {**record, "source": "fallback"}
    simulated = simulate(solved.sizes)
    record.update(
        {
            "nlp_sim_h": simulated,
            "nlp_pred_h": problem.objective(np.array(solved.sizes)) / weight,
            "slsqp_moved": solved.slsqp_sizes != tuple(starts[solved.start]),
            "search_moved": solved.sizes != solved.slsqp_sizes,
            "nlp_gain_pct": 100.0 * (sample_waits[best] - simulated) / sample_waits[best]
            if sample_waits[best] > 0
            else 0.0,
        }
    )
    if simulated <= sample_waits[best]:
        return solved.sizes, {**record, "source": "nlp"}
    return tuple(samples[best]), {**record, "source": "sample"}


def _round(values: np.ndarray, problem: NlpProblem) -> tuple[int, ...] | None:
    clipped = np.maximum(values, np.asarray(problem.floor, dtype=float))
    shares = apportion(problem.total, clipped.tolist(), problem.floor)
    return shares if problem.feasible(shares) else None


def _local_search(sizes: tuple[int, ...], problem: NlpProblem) -> tuple[int, ...]:
    current = list(sizes)
    value = problem.objective(np.array(current))
    improved = True
    while improved:
        improved = False
        for i, j in itertools.permutations(range(len(current)), 2):
            trial = list(current)
            trial[i] += 1
            trial[j] -= 1
            if trial[i] > problem.upper[i] or not problem.feasible(trial):
                continue
            trial_value = problem.objective(np.array(trial))
            if trial_value < value - 1e-12:
                current, value, improved = trial, trial_value, True
    return tuple(current)
