"""DP-NLPM: cubic least-squares surrogate of mean wait vs partition sizes, and its
constrained minimisation (seed 004, Eqs. 1-4 and 6).

Spec A6: with sum(P_i) = P the last size is implied, so the surrogate is a full
polynomial of total degree <= 3 in the first NQ-1 shares x_i = P_i / P (20 terms for
NQ = 4). Spec A21: scipy SLSQP from several starts, then integer repair (largest
remainder in node units) and a one-unit pairwise local search.
"""

from __future__ import annotations

import itertools
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
    (1.625, 1.0)
    """
    exponents = tuple(monomial_exponents(x.shape[1], degree))
    matrix = design_matrix(x, exponents)
    gram = matrix.T @ matrix + ridge * np.eye(len(exponents))
    coef = np.linalg.solve(gram, matrix.T @ y)
    residual = y - matrix @ coef
    spread = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual ** 2).sum()) / spread if spread > 0 else 1.0
    return Cubic(exponents, coef, r2)


@dataclass(frozen=True)
class NlpProblem:
    """Eqs. 2-4 and 6 in node units.

    Attributes:
        total: P, nodes to share (Eq. 3).
        lower: lb_i per queue (Eq. 4).
        upper: Largest size per queue (the sampled region's top, spec A5).
        hours: CPU hours per queue (Eq. 5), for the relaxed Eq. 6.
        alpha: Relaxation of Eq. 6: P_i C_j >= alpha P_j C_i for every pair (spec A4a).
        surrogates: One fitted cubic per epoch, on x = P[:-1] / total.
        weights: Epoch weights (Eq. 2; 1/3, 2/3, 1 by recency).
    """

    total: int
    lower: tuple[int, ...]
    upper: tuple[int, ...]
    hours: tuple[float, ...]
    alpha: float
    surrogates: tuple[Cubic, ...]
    weights: tuple[float, ...]

    def objective(self, sizes: np.ndarray) -> float:
        """Weighted surrogate wait (Eq. 2) at node sizes ``sizes``."""
        x = np.asarray(sizes, dtype=float)[:-1] / self.total
        return float(sum(w * f(x)[0] for w, f in zip(self.weights, self.surrogates)))

    def feasible(self, sizes: Sequence[int]) -> bool:
        """Whether integer sizes meet Eqs. 3, 4 and the relaxed Eq. 6."""
        if sum(sizes) != self.total or any(s < lo for s, lo in zip(sizes, self.lower)):
            return False
        return all(sizes[i] * self.hours[j] >= self.alpha * sizes[j] * self.hours[i] - 1e-9
                   for i in range(len(sizes)) for j in range(len(sizes)) if i != j)


def solve_nlp(problem: NlpProblem, starts: Sequence[Sequence[float]], max_iter: int = 200) -> tuple[int, ...]:
    """Minimise the weighted surrogate under Eqs. 3, 4, 6; return integer node sizes.

    SLSQP runs from every start; the best continuous optimum is rounded by largest
    remainder and improved by moving one node between pairs while the objective falls
    and the constraints hold. Falls back to the best feasible start if SLSQP finds
    nothing feasible.
    """
    n = len(problem.lower)
    total = float(problem.total)
    scale = max(abs(problem.objective(np.asarray(s, dtype=float))) for s in starts) or 1.0

    def fun(v: np.ndarray) -> float:
        return problem.objective(v) / scale

    def jac(v: np.ndarray) -> np.ndarray:
        grad = np.zeros(n)
        x = v[:-1] / total
        for w, f in zip(problem.weights, problem.surrogates):
            grad[:-1] += w * f.gradient(x) / total
        return grad / scale

    constraints = [{"type": "eq", "fun": lambda v: (v.sum() - total) / total,
                    "jac": lambda v: np.ones(n) / total}]
    for i in range(n):
        for j in range(n):
            if i != j and problem.hours[i] > 0 and problem.hours[j] > 0:
                ci, cj = problem.hours[i], problem.hours[j]
                row = np.zeros(n)
                row[i], row[j] = cj, -problem.alpha * ci
                row /= max(ci, cj)
                constraints.append({"type": "ineq", "fun": lambda v, r=row: float(r @ v) / total,
                                    "jac": lambda v, r=row: r / total})
    bounds = [(lo, max(lo, hi)) for lo, hi in zip(problem.lower, problem.upper)]
    best: tuple[float, np.ndarray] | None = None
    for start in starts:
        result = minimize(fun, np.asarray(start, dtype=float), jac=jac, method="SLSQP", bounds=bounds,
                          constraints=constraints, options={"maxiter": max_iter, "ftol": 1e-10})
        sizes = _round(result.x, problem)
        if sizes is not None and (best is None or problem.objective(np.array(sizes)) < best[0]):
            best = (problem.objective(np.array(sizes)), np.array(sizes))
    if best is None:
        feasible = [tuple(round(float(v)) for v in s) for s in starts]
        feasible = [s for s in feasible if problem.feasible(s)]
        if not feasible:
            return apportion(problem.total, problem.hours, problem.lower)
        best = min((problem.objective(np.array(s)), np.array(s)) for s in feasible)
    return _local_search(tuple(int(v) for v in best[1]), problem)


def _round(values: np.ndarray, problem: NlpProblem) -> tuple[int, ...] | None:
    clipped = np.maximum(values, np.asarray(problem.lower, dtype=float))
    shares = apportion(problem.total, clipped.tolist(), problem.lower)
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
