"""BBSched (Fan et al., HPDC'19) mutation check: apply each named one-line mutation, run
the mechanism tests, restore the file, and print whether a test caught it.

Edits source files in place for the duration of one pytest run each (restored in a
``finally``): run it in a clean worktree, never while editing these files.

    python benchmarks/bbsched_mutations.py
"""

from __future__ import annotations

from mutation_check import run_mutations

MUTATIONS = [
    (
        "multiplier 2->1",
        "market_hpc/algorithms/bbsched/selection.py",
        "candidates = gain > 2.0 * node_loss",
        "candidates = gain > 1.0 * node_loss",
    ),
    (
        "multiplier 2->3",
        "market_hpc/algorithms/bbsched/selection.py",
        "candidates = gain > 2.0 * node_loss",
        "candidates = gain > 3.0 * node_loss",
    ),
    (
        "gain / N",
        "market_hpc/algorithms/bbsched/selection.py",
        "gain = (f2 - f2[start]) / total_bb if",
        "gain = (f2 - f2[start]) / total_nodes if",
    ),
    (
        "loss / B",
        "market_hpc/algorithms/bbsched/selection.py",
        "node_loss = (f1[start] - f1) / total_nodes",
        "node_loss = (f1[start] - f1) / total_bb",
    ),
    (
        "ints oldest-first",
        "market_hpc/algorithms/bbsched/ga.py",
        "pool = born[::-1] + order",
        "pool = order[::-1] + born",
    ),
    (
        "numpy oldest-first",
        "market_hpc/algorithms/bbsched/ga.py",
        "by_age = np.lexsort((-np.arange(len(ages)), ages))",
        "by_age = np.lexsort((-np.arange(len(ages)), -ages))",
    ),
    (
        "never GA",
        "market_hpc/policies/bbsched/schedulers.py",
        "        if not use_ga:\n",
        "        if True:\n",
    ),
    (
        "never optimise",
        "market_hpc/policies/bbsched/schedulers.py",
        "        front = self.pareto(window, rng)\n",
        "        return None\n        front = self.pareto(window, rng)\n",
    ),
    ("WFP exp 1", "market_hpc/policies/bbsched/window.py", "ratio**3", "ratio**1"),
    ("WFP no n", "market_hpc/policies/bbsched/window.py", "-job.cores * ratio**3", "-ratio**3"),
    (
        "starv off-by-one",
        "market_hpc/policies/bbsched/starvation.py",
        "if self.count.get(job.job_id, 0.0) > self.bound:",
        "if self.count.get(job.job_id, 0.0) > self.bound + 1:",
    ),
    (
        "forced not fixed",
        "market_hpc/policies/bbsched/window.py",
        "        for job in starving:  # fix forced jobs in while they fit",
        "        for job in []:  # fix forced jobs in while they fit",
    ),
    (
        "forced_starts all",
        "market_hpc/policies/bbsched/window.py",
        "sum(job.job_id not in started for job in starving)",
        "len(starving)",
    ),
    # the optimiser around a starving job's reservation
    (
        "reserve: optimiser skipped",
        "market_hpc/policies/bbsched/window.py",
        (
            "selected = self._selection(pool, free_nodes, free_bb, view, rng, record=True, "
            "reservation=reservation)"
        ),
        "selected = None",
    ),
    (
        "reserve: no restriction",
        "market_hpc/policies/bbsched/window.py",
        "long_from = len(short)",
        "long_from = None",
    ),
    (
        "reserve: shadow ignored",
        "market_hpc/policies/bbsched/window.py",
        "return self.now + job.estimate <= self.shadow",
        "return True",
    ),
    (
        "reserve: extra = free",
        "market_hpc/policies/bbsched/window.py",
        "reservation = Reservation(view.time, shadow, extra[0],",
        "reservation = Reservation(view.time, shadow, free_nodes,",
    ),
    (
        "DP: long jobs not capped",
        "market_hpc/algorithms/bbsched/exact.py",
        "if i >= window.long_start else (free_nodes, free_bb)",
        "if False else (free_nodes, free_bb)",
    ),
    (
        "enumeration: long jobs not capped",
        "market_hpc/algorithms/bbsched/selection.py",
        "    if start < k:  # under a reservation",
        "    if False:  # under a reservation",
    ),
    (
        "base order: extra not spent",
        "market_hpc/policies/bbsched/window.py",
        "            extra_nodes -= job.cores\n",
        "",
    ),
    # Weighted / Constrained on the exact DP
    (
        "Weighted: first front point",
        "market_hpc/algorithms/bbsched/selection.py",
        "    return _best(front.masks, score, k)\n",
        "    return int(front.masks[0])\n",
    ),
    (
        "Constrained_BB: max nodes",
        "market_hpc/algorithms/bbsched/selection.py",
        (
            '    main, other = (0, 1) if resource == "nodes" else (1, 0)\n    objectives = '
            "front.objectives"
        ),
        "    main, other = (0, 1)\n    objectives = front.objectives",
    ),
    # the readings of the starvation bound
    (
        "optimised: every invocation counts",
        "market_hpc/policies/bbsched/starvation.py",
        'if self.by == "optimised" and had_choice:',
        'if self.by == "optimised":',
    ),
    (
        "optimised: choice never noted",
        "market_hpc/policies/bbsched/window.py",
        "            self._had_choice = True\n",
        "            pass\n",
    ),
    (
        "passed-over: fit ignored",
        "market_hpc/policies/bbsched/starvation.py",
        "if job.job_id not in started and job.cores <= free_nodes and job.bb <= free_bb:",
        "if job.job_id not in started:",
    ),
    (
        "passed-over: BB fit ignored",
        "market_hpc/policies/bbsched/starvation.py",
        "and job.cores <= free_nodes and job.bb <= free_bb:",
        "and job.cores <= free_nodes:",
    ),
    (
        "backstop ignored",
        "market_hpc/policies/bbsched/starvation.py",
        "return self.backstop > 0 and now - first > self.backstop",
        "return False",
    ),
    (
        "backstop_jobs counts every forced job",
        "market_hpc/policies/bbsched/starvation.py",
        "if job.job_id not in self.backstopped and self.count.get(job.job_id, 0.0) <= self.bound:",
        "if job.job_id not in self.backstopped:",
    ),
]
TESTS = [
    "tests/bbsched/test_mechanisms.py",
    "tests/bbsched/test_bbsched.py",
    "tests/bbsched/test_resource.py",
    "tests/bbsched/test_reservation.py",
    "tests/bbsched/test_starvation.py",
]


if __name__ == "__main__":
    raise SystemExit(run_mutations(MUTATIONS, TESTS))
