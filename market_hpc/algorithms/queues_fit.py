"""DP-NLPM: cubic least-squares surrogate of mean wait vs partition sizes, and its
constrained minimisation (seed 004, Eqs. 1-4 and 6).

Spec A6: with sum(P_i) = P the last size is implied, so the surrogate is a full
polynomial of total degree <= 3 in the first NQ-1 shares x_i = P_i / P (20 terms for
NQ = 4). Spec A21: scipy SLSQP from several starts, then integer repair (largest
remainder in node units) and a one-unit pairwise local search. Eq. 6 enters as a floor
of ``alpha`` x the proportional share per queue (``share_floor``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from market_hpc.algorithms.queues import apportion


def monomial_exponents(n_vars: int, degree: int = 3) -> list[tuple[int, ...]]:
    """Exponent tuples of every monomial of total degree <= ``degree``.

    >>> len(monomial_exponents(3)), monomial_exponents(1)
    (20, [(0,), (1,), (2,), (3,)])
    """
    return [e for total in range(degree + 1)
            for e in sorted(itertools.product(range(total + 1), repeat=n_vars), reverse=True)
            if sum(e) == total]


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
        return design_matrix(x, self.exponents) @ self.coef

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """Gradient at one point."""
        x = np.asarray(x, dtype=float)
        grad = np.zeros_like(x)
        for e, c in zip(self.exponents, self.coef):
            for i, power in enumerate(e):
                if power:
                    others = np.prod([x[j] ** p for j, p in enumerate(e) if j != i]) if len(e) > 1 else 1.0
                    grad[i] += c * power * x[i] ** (power - 1) * others
        return grad


def fit_cubic(x: np.ndarray, y: np.ndarray, degree: int = 3, ridge: float = 1e-9) -> Cubic:
    """Least-squares polynomial of total degree <= ``degree`` through ``(x, y)``.

    A tiny ridge keeps near-collinear designs stable (spec A6).

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
    r2 = 1.0 - float((residual ** 2).sum()) / spread if spread > 0 else 1.0
    return Cubic(exponents, coef, r2)


def share_floor(total: int, lower: Sequence[int], hours: Sequence[float], alpha: float) -> tuple[int, ...]:
    """Per-queue minimum: the larger of lb_i and ``alpha`` x its Eq. 7 share.

    This is the relaxed Eq. 6 used here (spec A4): as written, P_i/P_j > C_i/C_j for
    every pair is infeasible, and a pairwise ratio bound is too once whole nodes and
    lb_i meet queues with tiny CPU hours; "each queue keeps at least alpha of its
    proportional share" is always satisfiable for alpha < 1 and alpha = 1 gives PP
    back. When the floors exceed ``total`` their excess over ``lower`` is scaled down.

    >>> share_floor(100, [1, 1, 1], [60.0, 30.0, 10.0], 0.5)
    (30, 15, 5)
    """
    weight = sum(hours)
    floors = [max(lo, math.ceil(alpha * total * h / weight - 1e-9)) if weight > 0 else lo
              for lo, h in zip(lower, hours)]
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
        upper: Largest size per queue (the sampled region's top, spec A5).
        surrogates: One fitted cubic per epoch, on x = P[:-1] / total.
        weights: Epoch weights (Eq. 2; 1/3, 2/3, 1 by recency).
    """

    total: int
    floor: tuple[int, ...]
    upper: tuple[int, ...]
    surrogates: tuple[Cubic, ...]
    weights: tuple[float, ...]

    def objective(self, sizes: np.ndarray) -> float:
        """Weighted surrogate wait (Eq. 2) at node sizes ``sizes``."""
        x = np.asarray(sizes, dtype=float)[:-1] / self.total
        return float(sum(w * f(x)[0] for w, f in zip(self.weights, self.surrogates)))

    def feasible(self, sizes: Sequence[int]) -> bool:
        """Whether integer sizes meet Eq. 3 and the floors and upper bounds."""
        return sum(sizes) == self.total and all(lo <= s <= max(lo, hi)
                                                for s, lo, hi in zip(sizes, self.floor, self.upper))


def solve_nlp(problem: NlpProblem, starts: Sequence[Sequence[float]], max_iter: int = 200) -> tuple[int, ...]:
    """Minimise the weighted surrogate under Eq. 3 and the floors; integer node sizes.

    The variables are shares y_i = P_i / P (well scaled for SLSQP): bounds
    [floor_i, upper_i] / P and one equality sum(y) = 1. SLSQP runs from every start;
    each optimum is rounded by largest remainder above the floors and the best is
    improved by moving one node between pairs while the objective falls.
    """
    n = len(problem.floor)
    total = float(problem.total)
    scale = max(abs(problem.objective(np.asarray(s, dtype=float))) for s in starts) or 1.0

    def fun(y: np.ndarray) -> float:
        return sum(w * f(y[:-1])[0] for w, f in zip(problem.weights, problem.surrogates)) / scale

    def jac(y: np.ndarray) -> np.ndarray:
        grad = np.zeros(n)
        for w, f in zip(problem.weights, problem.surrogates):
            grad[:-1] += w * f.gradient(y[:-1])
        return grad / scale

    constraints = [{"type": "eq", "fun": lambda y: y.sum() - 1.0, "jac": lambda y: np.ones(n)}]
    bounds = [(lo / total, max(lo, hi) / total) for lo, hi in zip(problem.floor, problem.upper)]
    best: tuple[float, tuple[int, ...]] | None = None
    for start in starts:
        y0 = np.clip(np.asarray(start, dtype=float) / total, [b[0] for b in bounds], [b[1] for b in bounds])
        result = minimize(fun, y0, jac=jac, method="SLSQP", bounds=bounds, constraints=constraints,
                          options={"maxiter": max_iter, "ftol": 1e-12})
        sizes = _round(result.x * total, problem)
        if sizes is not None:
            value = problem.objective(np.array(sizes))
            if best is None or value < best[0]:
                best = (value, sizes)
    if best is None:
        return apportion(problem.total, [1.0] * n, problem.floor)
    return _local_search(best[1], problem)


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
