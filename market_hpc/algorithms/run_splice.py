"""One splice of a run list for a whole batch of range updates (the free-core index's core).

Free counts per node are kept as *runs*: parallel lists ``starts`` (first node of each
run, increasing, ``starts[0] == 0``) and ``vals`` (the count of each run), with no two
adjacent runs sharing a count. :func:`splice` applies a batch of *pieces* ``(first, end,
delta)`` (sorted, disjoint node ranges, ``delta`` added to every node of the range) in one
walk and returns the replacement for one slice of the lists: the runs between pieces
that no piece touches are copied as slices (C speed), so the Python work is per piece,
not per run of the span. A whole allocation (all its runs) costs one walk and one list
splice instead of one insert/delete per run.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

Piece = tuple[int, int, int]
"""``(first, end, delta)``: add ``delta`` to nodes ``first..end-1``."""


def splice(starts: list[int], vals: list[int], n_nodes: int, pieces: Sequence[Piece]
           ) -> tuple[int, int, list[int], list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """The runs that replace ``starts[i:j]``/``vals[i:j]`` once ``pieces`` are applied.

    ``pieces`` must be non-empty, sorted, disjoint, inside ``0..n_nodes`` and non-empty
    ranges. Returns ``(i, j, new_starts, new_vals, fresh, kept)``: ``fresh`` lists the
    ``(value, start)`` entries the walk wrote itself (every run that is new or changed is
    among them; some may equal old entries), ``kept`` the ranges ``(a, b)`` of old run
    indices copied unchanged. Adjacent runs never share a count afterwards, including
    across the slice's edges.

    >>> starts, vals = [0, 2, 3], [2, 0, 1]            # free: 2 2 0 1 1
    >>> i, j, s, v, fresh, kept = splice(starts, vals, 5, [(0, 2, -2), (3, 4, -1)])
    >>> (i, j, s, v)
    (0, 3, [0, 4], [0, 1])
    >>> starts[i:j], vals[i:j] = s, v; starts, vals    # free: 0 0 0 0 1
    ([0, 4], [0, 1])
    """
    f0 = pieces[0][0]
    pos = bisect_right(starts, f0) - 1
    if pos > 0 and starts[pos] == f0:
        pos -= 1  # the changed nodes may merge with the run before
    first_index = pos
    cur = starts[pos]  # nodes of run ``pos`` from ``cur`` on are not written yet
    last = len(starts) - 1
    out_s: list[int] = []
    out_v: list[int] = []
    fresh: list[tuple[int, int]] = []
    kept: list[tuple[int, int]] = []
    for f, e, d in pieces:
        p = bisect_right(starts, f, pos) - 1  # the run holding node ``f``
        if p > pos:  # the rest of run ``pos``, then untouched runs, unchanged
            v = vals[pos]
            if not out_v or out_v[-1] != v:
                out_s.append(cur)
                out_v.append(v)
                fresh.append((v, cur))
            if p > pos + 1:
                out_s += starts[pos + 1:p]
                out_v += vals[pos + 1:p]
                kept.append((pos + 1, p))
            pos = p
            cur = starts[p]
        v = vals[pos]
        if cur < f and (not out_v or out_v[-1] != v):  # the head of run ``p`` before ``f``
            out_s.append(cur)
            out_v.append(v)
            fresh.append((v, cur))
        v += d
        if not out_v or out_v[-1] != v:
            out_s.append(f)
            out_v.append(v)
            fresh.append((v, f))
        q = bisect_left(starts, e, pos) - 1  # the run holding node ``e - 1``
        for r in range(pos + 1, q + 1):
            v = vals[r] + d
            if out_v[-1] != v:
                s = starts[r]
                out_s.append(s)
                out_v.append(v)
                fresh.append((v, s))
        pos = q + 1 if q < last and starts[q + 1] == e else q
        cur = e
    end = starts[pos + 1] if pos < last else n_nodes
    if cur < end:  # the rest of the run holding node ``e`` (it may merge)
        v = vals[pos]
        if out_v[-1] != v:
            out_s.append(cur)
            out_v.append(v)
            fresh.append((v, cur))
    return first_index, pos + 1, out_s, out_v, fresh, kept


def pieces_of(runs: Sequence[tuple[int, int, int]], delta_per_unit: int) -> list[Piece]:
    """Pieces adding ``delta_per_unit`` per unit to each run ``(first, count, units)``.

    >>> pieces_of(((0, 2, 1), (5, 1, 3)), -1)
    [(0, 2, -1), (5, 6, -3)]
    """
    return [(first, first + count, units * delta_per_unit) for first, count, units in runs]
