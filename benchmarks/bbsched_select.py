"""Weighted and Constrained selections on the exact DP front against enumeration, and the
DP under an EASY reservation.

For the same seeded windows as ``benchmarks/bbsched.py`` (KTH-like: 100 nodes, a
28,700 GB pool, 40 % free), in one process, per window size w: the mean CPU time of

* ``dp``: ``dp_pareto`` then ``weighted_pick`` (0.5/0.5), ``weighted_pick`` (0.8/0.2)
  and ``constrained_pick`` (nodes and burst buffer): what the baselines now run;
* ``enum``: ``weighted_select`` / ``constrained_select`` by enumeration of 2**w subsets
  (what they ran before, capped at w = 22; w <= 20 here), with the check that both
  return the same masks;
* ``dp reserved``: ``dp_pareto`` on the same windows under a reservation (the back
  half of the window runs past the shadow time; extra: a quarter of the free capacities).

    python benchmarks/bbsched_select.py [--windows 20] [--sizes 10 16 20 50]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from bbsched import timed, windows

from market_hpc.algorithms.bbsched.exact import dp_pareto
from market_hpc.algorithms.bbsched.selection import (
    Window,
    constrained_pick,
    constrained_select,
    weighted_pick,
    weighted_select,
)

NODES, POOL = 100, 28700


def by_dp(window: Window) -> list[int]:
    front = dp_pareto(window)
    k = window.size
    return [
        weighted_pick(front, k, 0.5, 0.5, NODES, POOL),
        weighted_pick(front, k, 0.8, 0.2, NODES, POOL),
        constrained_pick(front, k, "nodes"),
        constrained_pick(front, k, "bb"),
    ]


def by_enumeration(window: Window) -> list[int]:
    return [
        weighted_select(window, 0.5, 0.5, NODES, POOL),
        weighted_select(window, 0.8, 0.2, NODES, POOL),
        constrained_select(window, "nodes"),
        constrained_select(window, "bb"),
    ]


def reserved(window: Window) -> Window:
    """The same jobs with the back half running past a shadow time (extra: a quarter)."""
    return Window.of(
        window.nodes,
        window.bb,
        window.free_nodes,
        window.free_bb,
        window.size // 2,
        window.free_nodes // 4,
        window.free_bb // 4,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--windows", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 16, 20, 50])
    args = parser.parse_args()
    print(
        f"{'w':>3} | {'dp: 4 picks, ms CPU':>19} | {'enumeration, ms CPU':>19} | {'enum / dp':>9} "
        "| "
        f"{'dp reserved, ms CPU':>19}"
    )
    for size in args.sizes:
        cases = windows(args.windows, size)
        dp_cpu = [timed(by_dp, w)[1] for w in cases]
        reserved_cpu = [timed(dp_pareto, reserved(w))[1] for w in cases]
        enum_cell, ratio = "-", "-"
        if size <= 20:
            enum = [timed(by_enumeration, w) for w in cases]
            assert all(value == by_dp(w) for (_, _, value), w in zip(enum, cases))
            enum_mean = np.mean([used for _, used, _ in enum])
            enum_cell, ratio = f"{enum_mean * 1e3:.2f}", f"{enum_mean / np.mean(dp_cpu):.1f}x"
        print(
            f"{size:>3} | {np.mean(dp_cpu) * 1e3:19.2f} | {enum_cell:>19} | {ratio:>9} | "
            f"{np.mean(reserved_cpu) * 1e3:19.2f}"
        )
    print(
        f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores "
        "(shared)"
    )


if __name__ == "__main__":
    main()
