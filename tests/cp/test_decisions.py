"""The CP dispatchers' decisions are pinned: faster model building must not change them.

CP-SAT with one worker, a fixed seed and a deterministic time limit answers the same
for the *same model*; a model built differently (another variable or constraint order,
a hint or strategy more or less) may answer differently. So each of the four
dispatchers runs a small fixed multi-resource workload (GPU + memory, core-level and
node-exclusive) and two things are compared with what the unmodified code produced
(recorded from the main branch before the model building was optimised):

* every job's start time and allocation (a SHA-256 of the rows), and
* every model handed to CP-SAT: its full proto in text format plus the solver
  parameters (a SHA-256 over all solves, and the number of solves).

The pins depend on OR-Tools' version (the solver's answers and the proto's text form):
after an upgrade, re-record them by running this module's ``fingerprint`` on the code
before and after a change and compare the two (``benchmarks/cp_equivalence.py`` does
the same on more workloads).
"""

from __future__ import annotations

import hashlib
from typing import Any

import ortools
import pytest
from invariants import random_workload

from market_hpc.core.model import HPCModel
from market_hpc.policies import make_policy

PLATFORM = "nodes=5,cores=8,gpus=2,mem=32"
UNITS = [(1, 0, 0, 2048), (2, 1, 0, 4096), (4, 0, 0, 1024), (1, 0, 0, 16384), (8, 2, 0, 30000)]
ORTOOLS = "9.15.6755"  # the version the pins were recorded with

# (scheduler, exclusive) -> (schedule sha, models sha, models solved), recorded from main
PINS: dict[tuple[str, bool], tuple[str, str, int]] = {
    ("pcp20", False): ("6148ec348f1eca3c5490", "defe8df23df18a4dbf32", 36),
    ("pcp20", True): ("b1439c514137ce1587f2", "485d57ff265a4a0b71a0", 44),
    ("pcp20-default", False): ("fa375a57d7ed0e924988", "7a41d28e0158ff4fa96b", 71),
    ("pcp20-default", True): ("89d1747962b4e9b21cc1", "b73fe6cefee64193900a", 55),
    ("pcp19", False): ("730eaf6b18c566eca9cf", "5230d871c1a7e4b255c0", 78),
    ("pcp19", True): ("61b7983ae474a1775d8c", "dc1c1eed1a5bcc10de8b", 92),
    ("hcp19", False): ("c59bb124c99c1741d96c", "15b526ba9e72fa7497a3", 58),
    ("hcp19", True): ("6535f53b26043a2cfa8c", "efafc05f7f3773fa6c1c", 81),
    ("cph", False): ("464afd5fa84c9d13fdba", "86524ba4a534f0d89426", 63),
    ("cph", True): ("7439fe61006e39e724f3", "d28c6231a26353af5351", 58),
}


def fingerprint(scheduler: str, exclusive: bool, budget: bool = False) -> tuple[str, str, int]:
    """Digest of the schedule and of every model solved in one small run; without
    ``budget`` with ``decision_budget = 0`` (the behaviour before decision budgets, which
    ``PINS`` were recorded with), else with the scheduler's default budget."""
    from market_hpc.algorithms.cp import instance as cp_instance
    from market_hpc.algorithms.cp import pcp20 as cp_pcp20
    from market_hpc.algorithms.cp import pooled as cp_pooled

    models = hashlib.sha256()
    solves = [0]
    original = cp_instance.solve

    def recording(model: Any, *args: Any, **kwargs: Any) -> Any:
        solver, status = original(model, *args, **kwargs)
        models.update(str(model.proto).encode())
        models.update(str(solver.parameters).encode())
        models.update(status.encode())
        solves[0] += 1
        return solver, status

    cp_pcp20.solve = cp_pooled.solve = recording  # the two call sites of cp_instance.solve
    try:
        jobs = random_workload(7, PLATFORM, UNITS, count=60)
        # ``pcp20``: the pins of PCP'20's fixed priority search on the shelf hint without the
        # redundant rules (the model as recorded from main); ``pcp20-default``: the default
        # (``auto`` search, list-scheduling hint, every rule of ``cp_cuts``; recorded when
        # they were added, re-recorded when the schedule relaxation ``cp_relax`` became the
        # default: its packing solves are recorded too)
        params: dict[str, Any] = {} if budget else {"decision_budget": 0}
        if scheduler == "pcp20":
            params |= {"branching": "priority", "hint": "shelf", "cuts": [], "relax": False}
        name = "pcp20" if scheduler == "pcp20-default" else scheduler
        model = HPCModel(
            jobs,
            platform=PLATFORM,
            scheduler=name,
            exclusive=exclusive,
            seed=3,
            record_timeseries=False,
            policy=make_policy(name, scheduler_params=params),
        )
        model.run()
    finally:
        cp_pcp20.solve = cp_pooled.solve = original
    frame = model.recorder.jobs_frame()
    rows = "\n".join(
        f"{r.job_id} {r.status} {r.start_time!r} {r.nodes}" for r in frame.itertuples()
    )
    schedule = hashlib.sha256(rows.encode()).hexdigest()[:20]
    return schedule, models.hexdigest()[:20], solves[0]


@pytest.mark.parametrize("exclusive", [False, True], ids=["core", "exclusive"])
@pytest.mark.parametrize("scheduler", ["pcp20", "pcp20-default", "pcp19", "hcp19", "cph"])
def test_cp_decisions_and_models_match_the_unoptimised_code(
    scheduler: str, exclusive: bool
) -> None:
    if ortools.__version__ != ORTOOLS:
        pytest.skip(f"pins recorded with OR-Tools {ORTOOLS}, this is {ortools.__version__}")
    got = fingerprint(scheduler, exclusive)
    assert got[2] > 10  # the workload does make the dispatchers solve models
    assert got == PINS[scheduler, exclusive]


# With their default decision budget (cp_instance.Budget) PCP'20 and HCP'19 solve the same
# models with one parameter more (CP-SAT's conflict limit), so every models' digest differs
# from PINS; PCP'20's fixed search (``pcp20``) and exclusive-mode PCP'20 decide as in PINS,
# default PCP'20 (core) and HCP'19 stop some searches at the conflict limit and decide
# otherwise (recorded when the budget was added; PINS stays reachable with budget 0).
BUDGET_PINS: dict[tuple[str, bool], tuple[str, str, int]] = {
    ("pcp20", False): ("6148ec348f1eca3c5490", "6ac67d0c9ff52e9f9dae", 36),
    ("pcp20", True): ("b1439c514137ce1587f2", "0a8081857fbe124a9797", 44),
    ("pcp20-default", False): ("e21b15c6308048b16766", "4e3fc7f0d6da694a1cc7", 68),
    ("pcp20-default", True): ("89d1747962b4e9b21cc1", "f8a89e3894c801e47356", 55),
    ("hcp19", False): ("439debce4560ab37351d", "96eb3628892e382ea67e", 64),
    ("hcp19", True): ("b46834cb36622c85a627", "1b8dde993820d50799e5", 76),
}


@pytest.mark.parametrize("exclusive", [False, True], ids=["core", "exclusive"])
@pytest.mark.parametrize("scheduler", ["pcp20", "pcp20-default", "hcp19"])
def test_cp_decisions_with_the_default_budget(scheduler: str, exclusive: bool) -> None:
    if ortools.__version__ != ORTOOLS:
        pytest.skip(f"pins recorded with OR-Tools {ORTOOLS}, this is {ortools.__version__}")
    got = fingerprint(scheduler, exclusive, budget=True)
    assert got == BUDGET_PINS[scheduler, exclusive]


if __name__ == "__main__":  # print the pins of the code on PYTHONPATH
    for name in ("pcp20", "pcp20-default", "pcp19", "hcp19", "cph"):
        for excl in (False, True):
            print(f"    ({name!r}, {excl}): {fingerprint(name, excl)!r},")
    print("BUDGET_PINS")
    for name in ("pcp20", "pcp20-default", "hcp19"):
        for excl in (False, True):
            print(f"    ({name!r}, {excl}): {fingerprint(name, excl, budget=True)!r},")


@pytest.mark.parametrize("seed", range(40))
def test_the_one_node_greedy_plan_is_the_shelf_plan(seed: int) -> None:
    # the pooled instances (HCP'19, CPH) take the plain-integer path; it must give the
    # numpy best-fit path's plan exactly (it is the hint and the fallback of every model)
    import numpy as np

    from market_hpc.algorithms.cp.greedy import _one_node_plan, shelf_plan
    from market_hpc.algorithms.cp.instance import CpInstance, CpJob, CpRunning

    rng = np.random.default_rng(seed)
    capacity = rng.integers(1, 12, size=(1, 3))
    capacity[0, 1] = rng.integers(0, 3)  # a type the platform may lack
    jobs = []
    for key in range(int(rng.integers(1, 30))):
        unit = [int(rng.integers(0, c + 1)) for c in capacity[0]]
        unit[0] = max(unit[0], 1)
        fits = min(int(c) // u for c, u in zip(capacity[0], unit) if u > 0)
        jobs.append(
            CpJob(
                key,
                int(rng.integers(1, max(1, fits) + 1)),
                tuple(unit),
                int(rng.integers(1, 50)),
                1,
            )
        )
    running = tuple(
        CpRunning(
            int(rng.integers(1, 60)),
            ((0, tuple(int(rng.integers(0, c + 1)) for c in capacity[0])),),
        )
        for _ in range(int(rng.integers(0, 4)))
    )
    instance = CpInstance(capacity, tuple(jobs), running)
    assert _one_node_plan(instance) == shelf_plan(instance)
