"""The deterministic work budget of one CP dispatching decision (PCP'20, HCP'19).

Seed 001's authors give a decision 1 s of wall clock, then 0.5 s more per retry; a wall
clock makes decisions depend on the machine and its load. Here a decision gets a budget
of *work units* counted from what CP-SAT reports after each solve (deterministic time
and conflicts, with one worker and a fixed seed) and from the size of each model it is
handed, so the same config and seed give the same decisions bit for bit on any machine.
The constants are calibrated so that one unit is about one second of CP-SAT's CPU on the
development machine (docs/cp.md, "Decision budget": measured actual CPU per charged unit
0.24-0.66 at the median and 0.4-1.45 at the 90th percentile over 1,376 solves of the
overload study's KTH-SP2 and HPC2N slices: the charge errs on the high side).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

DECISION_BUDGET = 1.0
"""Default work budget of one PCP'20 / HCP'19 decision, in work units (``Budget``): about
1 s of CP-SAT's CPU on the development machine, the paper's first time limit."""
DET_SECONDS = 5.0
"""Work units charged per unit of CP-SAT deterministic time. Calibrated on the overload
study's KTH-SP2 slice at 2x (docs/cp.md, "Decision budget"): CPU per deterministic unit
ranged 5-1,300 s across 270 PCP'20 solves (the 10 % quantile is 5.2), so deterministic time is
only an upper limit here; conflicts and model size carry the cost."""
CONFLICT_SECONDS = 1e-4
"""Work units per CP-SAT conflict (measured 58-222 us per conflict, median 98 us; each
conflict may add a Boolean, and beyond a few thousand the cost per conflict grows)."""
SIZE_SECONDS = 1.3e-4
"""Work units per variable and constraint of a model handed to CP-SAT (loading it: the
least-squares fit of CPU on conflicts and size gave 67 us per conflict, 130 us per element;
a 3,417-element model took 1.35 s with no conflict)."""


class Budget:
    """The deterministic work budget of one decision (``CpLimits.decision_budget``).

    Work is counted from what CP-SAT reports, never from a clock, so the same model and
    parameters spend the same work on any machine under any load. One solve costs
    ``max(deterministic time * DET_SECONDS, conflicts * CONFLICT_SECONDS)`` plus
    ``SIZE_SECONDS`` per variable and constraint of its model (charged before it runs).
    Each solve asked for deterministic time ``L`` gets at most ``L * DET_SECONDS`` units
    (a conflict limit of ``L * DET_SECONDS / CONFLICT_SECONDS`` included) and never more
    than what is left. ``units=None``: no budget, no conflict limit.

    >>> budget = Budget(1.0)
    >>> budget.limits(0.002, size=1000)   # 0.13 units to load, 0.01 to search
    (0.002, 100)
    >>> budget.charge(0.002, 100)
    >>> round(budget.spent, 6), budget.exhausted
    (0.14, False)
    >>> budget.limits(1.0, size=0)        # the rest: 0.86 units
    (0.172, 8600)
    >>> budget.charge(0.172, 8600); budget.limits(0.002, size=0), budget.exhausted
    ((None, None), True)
    >>> Budget(None).limits(0.002, size=10**6)
    (0.002, None)
    """

    def __init__(self, units: float | None) -> None:
        self.units = units
        self.spent = 0.0
        self.exhausted = False  # a solve was refused or cut short by the budget

    def limits(self, deterministic_time: float, size: int) -> tuple[float | None, int | None]:
        """``(deterministic time, conflict limit)`` for a solve of a model with ``size``
        variables and constraints, the loading charged; ``(None, None)`` when the budget
        cannot pay for it (``exhausted`` set)."""
        if self.units is None:
            return deterministic_time, None
        self.spent += size * SIZE_SECONDS
        left = self.units - self.spent
        own = deterministic_time * DET_SECONDS
        if left < 1e-3 * self.units:
            self.exhausted = True
            return None, None
        if left < own:
            self.exhausted = True
        work = min(own, left)
        return round(work / DET_SECONDS, 9), max(1, round(work / CONFLICT_SECONDS))

    def refuses(self, size: int) -> bool:
        """Whether a model of at least ``size`` variables and constraints is refused by
        ``limits`` whatever its exact size; then its loading is charged at ``size`` and the
        budget is exhausted, so that it need not be built (``False``: build it, ``limits``
        charges the exact size).

        >>> budget = Budget(0.03)
        >>> budget.refuses(100), budget.refuses(300), round(budget.spent, 6), budget.exhausted
        (False, True, 0.039, True)
        >>> Budget(None).refuses(10**9)
        False
        """
        if self.units is None or self.units - self.spent - size * SIZE_SECONDS >= 1e-3 * self.units:
            return False
        self.spent += size * SIZE_SECONDS
        self.exhausted = True
        return True

    def charge(self, deterministic_time: float, conflicts: int) -> None:
        """Add what one solve spent (CP-SAT's ``deterministic_time`` and ``num_conflicts``)."""
        if self.units is not None:
            self.spent += max(deterministic_time * DET_SECONDS, conflicts * CONFLICT_SECONDS)


def run_budgeted(
    solver: cp_model.CpSolver,
    model: cp_model.CpModel,
    budget: Budget | None,
    deterministic_time: float,
) -> Any:
    """``solver.solve(model)`` within ``budget`` (its deterministic and conflict limits set
    on ``solver``, what it spent charged); None, without solving, when the budget cannot
    pay for it, else CP-SAT's status. ``budget=None``: ``deterministic_time`` alone."""
    conflicts = None
    if budget is not None:
        allowed, conflicts = budget.limits(
            deterministic_time, len(model.proto.variables) + len(model.proto.constraints)
        )
        if allowed is None:
            return None
        deterministic_time = allowed
    solver.parameters.max_deterministic_time = deterministic_time
    if conflicts is not None:
        solver.parameters.max_number_of_conflicts = conflicts
    status = solver.solve(model)
    if budget is not None:
        response = solver.response_proto
        budget.charge(response.deterministic_time, response.num_conflicts)
    return status
