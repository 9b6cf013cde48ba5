"""BBSched's GA on windows whose processor requests need more than 15 bits.

The GA packs a selection's objectives as ``nodes << 48 | bb``. On CEA-Curie-sized
machines (80,640 processors) a window's node sum passes 2**15 and the packed value needs
more than 63 bits: it must not wrap in int64 nor overflow when the front is built.
"""

from __future__ import annotations

import numpy as np

from market_hpc.algorithms.bbsched.ga import SHIFT, GaSettings, ga_pareto, packed_rows
from market_hpc.algorithms.bbsched.selection import Window, exact_pareto


def test_packed_rows_do_not_wrap_above_2_to_the_15_nodes():
    rows = np.array([[2**15 - 1, 7], [2**15, 7], [80_640, 2**40]])
    assert packed_rows(rows) == [
        ((2**15 - 1) << SHIFT) | 7,
        (2**15 << SHIFT) | 7,
        (80_640 << SHIFT) | 2**40,
    ]


def test_the_ga_finds_the_exact_front_of_a_curie_sized_window():
    # Five jobs of thousands of processors on an 80,640-processor machine with a 5,000 GB pool:
    # the exact front, hand-checkable: {J1,J3,J4,J5} uses 80,000 nodes and 1,800 GB (J2 no
    # longer fits beside them); {J2,J3,J4,J5} 60,000 nodes and 4,900 GB. Packed in int64 the
    # node sums wrapped and the GA returned points that are not even feasible selections.
    window = Window.of(
        [40_000, 20_000, 30_000, 5_000, 5_000], [900, 4_000, 100, 400, 400], 80_640, 5_000
    )
    exact = exact_pareto(window)
    for kernel in ("ints", "numpy"):
        found = ga_pareto(window, GaSettings(), seed=3, kernel=kernel)
        assert sorted(map(tuple, found.objectives.tolist())) == sorted(
            map(tuple, exact.objectives.tolist())
        ), kernel
    assert sorted(map(tuple, exact.objectives.tolist())) == [(60_000, 4_900), (80_000, 1_800)]
