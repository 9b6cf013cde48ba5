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


def splice(
    starts: list[int],
    vals: list[int],
    n_nodes: int,
    runs: Sequence[tuple[int, int, int]],
    scale: int,
) -> tuple[int, int, list[int], list[int], list[tuple[int, int, int, int]], int]:
    """The runs that replace ``starts[i:j]``/``vals[i:j]`` once ``scale * units`` is added
    to each node of every run ``(first, count, units)`` of ``runs``.

    ``runs`` must be non-empty, sorted, disjoint, non-empty ranges inside ``0..n_nodes``
    (an allocation's runs, or pieces ``(first, end - first, delta)`` with ``scale=1``).
    Returns ``(i, j, new_starts, new_vals, kept, added)``: ``added`` is the total added,
    ``kept`` lists the
    stretches copied unchanged, ``(new_a, new_b, old_a, old_b)`` for
    ``new_starts[new_a:new_b] == starts[old_a:old_b]``; every other new run was written
    by the walk (it is new or changed, or an unchanged neighbour). Adjacent runs never
    share a count afterwards, including across the slice's edges.

    >>> starts, vals = [0, 2, 3], [2, 0, 1]            # free: 2 2 0 1 1
    >>> i, j, s, v, kept, added = splice(starts, vals, 5, [(0, 2, 2), (3, 1, 1)], -1)
    >>> (i, j, s, v, added)
    (0, 3, [0, 4], [0, 1], -5)
    >>> starts[i:j], vals[i:j] = s, v; starts, vals    # free: 0 0 0 0 1
    ([0, 4], [0, 1])
    """
    f0 = runs[0][0]
    pos = bisect_right(starts, f0) - 1
    if pos > 0 and starts[pos] == f0:
        pos -= 1  # the changed nodes may merge with the run before
    first_index = pos
    cur = starts[pos]  # nodes of run ``pos`` from ``cur`` on are not written yet
    last = len(starts) - 1
    out_s: list[int] = []
    out_v: list[int] = []
    kept: list[tuple[int, int, int, int]] = []
    add_s = out_s.append
    add_v = out_v.append
    lastv: int | None = None  # the count of the last run written
    added = 0
    for f, count, units in runs:
        e = f + count
        d = units * scale
        added += count * d
        p = bisect_right(starts, f, pos) - 1  # the run holding node ``f``
        if p > pos:  # the rest of run ``pos``, then untouched runs, unchanged
            v = vals[pos]
            if lastv != v:
                add_s(cur)
                add_v(v)
            if p > pos + 1:
                a = len(out_s)
                out_s += starts[pos + 1 : p]
                out_v += vals[pos + 1 : p]
                kept.append((a, len(out_s), pos + 1, p))
                lastv = vals[p - 1]
            else:
                lastv = v
            pos = p
            cur = starts[p]
        v = vals[pos]
        if cur < f and lastv != v:  # the head of run ``p`` before ``f``
            add_s(cur)
            add_v(v)
            lastv = v
        v += d
        if lastv != v:
            add_s(f)
            add_v(v)
            lastv = v
        q = bisect_left(starts, e, pos) - 1  # the run holding node ``e - 1``
        if q > pos:
            for r in range(pos + 1, q + 1):
                v = vals[r] + d
                if lastv != v:
                    add_s(starts[r])
                    add_v(v)
                    lastv = v
        pos = q + 1 if q < last and starts[q + 1] == e else q
        cur = e
    end = starts[pos + 1] if pos < last else n_nodes
    if cur < end:  # the rest of the run holding node ``e`` (it may merge)
        v = vals[pos]
        if lastv != v:
            add_s(cur)
            add_v(v)
    return first_index, pos + 1, out_s, out_v, kept, added


def pieces_of(runs: Sequence[tuple[int, int, int]], delta_per_unit: int) -> list[Piece]:
    """Pieces adding ``delta_per_unit`` per unit to each run ``(first, count, units)``.

    >>> pieces_of(((0, 2, 1), (5, 1, 3)), -1)
    [(0, 2, -1), (5, 6, -3)]
    """
    return [(first, first + count, units * delta_per_unit) for first, count, units in runs]


def empty_stretch(
    starts: list[int], vals: list[int], n_nodes: int, used: int, k: int, full: int, rest: int
) -> tuple[int, int, list[int], list[int]]:
    """The runs that replace ``starts[lo:hi]``/``vals[lo:hi]`` once a first-fit placement
    is taken: it filled runs ``used..k-1`` (those with free cores; the others are empty),
    ``full`` whole nodes of run ``k`` and ``rest`` units of the node after them. The
    stretch from run ``used`` on becomes one empty run, merged with its neighbours.

    >>> starts, vals = [0, 2, 3], [2, 0, 3]             # free: 2 2 0 3 3; take 6 units
    >>> lo, hi, s, v = empty_stretch(starts, vals, 5, 0, 2, 0, 2)
    >>> starts[lo:hi], vals[lo:hi] = s, v; starts, vals  # free: 0 0 0 1 3
    ([0, 3, 4], [0, 1, 3])
    """
    free = vals[k]
    zero_end = starts[k] + full
    end = starts[k + 1] if k + 1 < len(starts) else n_nodes
    new_starts: list[int] = []
    new_vals: list[int] = []
    lo, hi = used, k + 1
    if lo > 0:  # the run before may absorb the emptied stretch
        lo -= 1
        new_starts.append(starts[lo])
        new_vals.append(vals[lo])
    pieces = [(starts[used], zero_end, 0)]  # (start, end, free) of the new runs
    if rest:
        pieces.append((zero_end, zero_end + 1, free - rest))
        zero_end += 1
    pieces.append((zero_end, end, free))
    for start, stop, v in pieces:
        if start < stop and (not new_vals or new_vals[-1] != v):
            new_starts.append(start)
            new_vals.append(v)
    if hi < len(starts) and vals[hi] == new_vals[-1]:  # the run after absorbs the last one
        hi += 1
    return lo, hi, new_starts, new_vals


def within(
    starts: list[int], vals: list[int], n_nodes: int, k: int, first: int, end: int, delta: int
) -> tuple[int, int, list[int], list[int]]:
    """The runs that replace ``starts[lo:hi]``/``vals[lo:hi]`` once ``delta`` (not 0) is
    added to nodes ``first..end-1``, all inside run ``k`` (the usual update: one job's
    node range).

    >>> starts, vals = [0, 2, 4], [1, 0, 1]             # free: 1 1 0 0 1
    >>> lo, hi, s, v = within(starts, vals, 5, 1, 3, 4, 1)
    >>> starts[lo:hi], vals[lo:hi] = s, v; starts, vals  # free: 1 1 0 1 1
    ([0, 2, 3], [1, 0, 1])
    """
    free = vals[k]
    new = free + delta
    start = starts[k]
    n_runs = len(starts)
    stop = starts[k + 1] if k + 1 < n_runs else n_nodes
    lo, hi = k, k + 1
    new_starts: list[int] = []
    new_vals: list[int] = []
    if first > start:  # the run's head keeps its count
        new_starts.append(start)
        new_vals.append(free)
        new_starts.append(first)
        new_vals.append(new)
    elif k > 0 and vals[k - 1] == new:  # the run before absorbs the changed nodes
        lo -= 1
        new_starts.append(starts[lo])
        new_vals.append(new)
    else:
        new_starts.append(first)
        new_vals.append(new)
    if end < stop:  # the run's tail keeps its count
        new_starts.append(end)
        new_vals.append(free)
    elif hi < n_runs and vals[hi] == new:  # the run after absorbs them
        hi += 1
    return lo, hi, new_starts, new_vals
