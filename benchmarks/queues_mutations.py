"""Seed 004 mutation check: each one-line mutation of a mechanism must fail a test.

    python benchmarks/queues_mutations.py

Applies each mutation to the source, runs the seed 004 tests, restores the file, and
prints which test failed (CAUGHT) or SURVIVED when no test noticed (``mutation_check.py``).
"""

from mutation_check import run_mutations

M = [
    (
        "SLSQP output discarded",
        "market_hpc/algorithms/queues/fit.py",
        "sizes = _round(result.x * total, problem)",
        "sizes = _round(attempt * total, problem)",
    ),
    (
        "SLSQP success not read",
        "market_hpc/algorithms/queues/fit.py",
        "            if result.success:",
        "            if True:",
    ),
    (
        "merges disabled",
        "market_hpc/algorithms/queues/search.py",
        "        if not pairs:\n            break",
        "        if True:\n            break",
    ),
    (
        "tau_pf ignored",
        "market_hpc/policies/queues/dispatchers.py",
        "if factor > config.tau_pf:",
        "if True:",
    ),
    (
        "fitting job allowed onto pool",
        "market_hpc/policies/queues/dispatchers.py",
        "if group_free[group] >= job.cores:",
        "if False:",
    ),
    (
        "equal epoch weights",
        "market_hpc/algorithms/queues/fit.py",
        "return tuple((k + 1) / count for k in range(count))",
        "return tuple(1.0 for k in range(count))",
    ),
    (
        "no global stop",
        "market_hpc/algorithms/queues/search.py",
        "while sum(cuts.values()) and evaluate(",
        "while False and evaluate(",
    ),
    (
        "lower bounds = largest requests",
        "market_hpc/algorithms/queues/search.py",
        (
            "        bounds[i] = knee(grids[i], [next(results).utilisations[i] for _ in grids[i]], "
            "tau)"
        ),
        "        bounds[i] = minimum[i]; [next(results) for _ in grids[i]]",
    ),
    (
        "best sample always used",
        "market_hpc/algorithms/queues/fit.py",
        "    if simulated <= sample_waits[best]:",
        "    if False:",
    ),
    (
        "idle queue runs to grid top",
        "market_hpc/algorithms/queues/search.py",
        "    if peak <= 0.0:\n        return chosen",
        "    if False:\n        return chosen",
    ),
    (
        "merged queue forgets split ancestry",
        "market_hpc/algorithms/queues/search.py",
        "splits=tuple(sorted({*a.splits, *b.splits})))",
        "splits=())",
    ),
    (
        "per-queue merge limit ignored",
        "market_hpc/algorithms/queues/search.py",
        "            if now > (1 + degradation) * max(was, floor):",
        "            if False:",
    ),
]
tests = [
    "tests/queues/test_queues.py",
    "tests/queues/test_mechanisms.py",
    "tests/queues/test_model.py",
]

if __name__ == "__main__":
    raise SystemExit(run_mutations(M, tests))
