"""One instant's job selection of the market dispatchers (Singh et al.), used by
``policies.market``.

The auction prices only the queued jobs that can matter (``algorithms.market_index`` and
``MarketColumns``), with the scalar code's arithmetic, so it picks exactly the job that
pricing every queued job would: docs/performance.md gives the argument for each
shortcut and ``tests/market/test_auction.py`` checks them against the scalar code.
"""

from __future__ import annotations

import math

import numpy as np

from market_hpc.algorithms.market.columns import LONG, MarketColumns
from market_hpc.algorithms.market.maths import Candidate, profit

RULES = ("sjq", "maxv", "maxvd", "minvr")
"""The market dispatchers' job-selection rules (Singh et al.), as ``Auction`` reads them."""
# minVR prices the rows tied at the least remaining value on the offer, then the next
# least, this many times before it prices every row.
TRIES = 3
# maxV / maxVD on a long queue price only the rows whose bound reaches the top row's key,
# when at most 1 / PRUNED of the queue does (else every row, in one pass).
PRUNED = 8
# Up to this many rows are priced by the scalar code (cheaper than numpy calls on a few).
FEW = 8


class Auction:
    """One instant's job selection (``MarketColumns`` and its ``QueueIndex``).

    A job is dropped when even its fastest completion (``c*`` cores, from now) earns
    nothing; only the rows the drop index hands over are priced for that. For a node
    bidding ``b`` free cores the policy picks, among the jobs not yet started with positive
    profit on ``min(b, c*)`` cores, the first in queue order (SJQ: a walk in queue order,
    pricing a few rows at a time, that stops at the first such job), the largest profit
    (maxV) or profit per core (maxVD) (one vectorised pricing of every row), or the
    smallest remaining value (minVR: the rows of least remaining value are priced first,
    every row only when none of the first few can earn); ties break by arrival, then job id
    (the lowest index). Indices are the columns' rows.

    Args:
        rule: ``sjq``, ``maxv``, ``maxvd`` or ``minvr``.
        columns: The queued jobs as columns (``MarketColumns``), in queue order.
        now: The instant the auction prices.
    """

    def __init__(self, rule: str, columns: MarketColumns, now: float) -> None:
        self.rule = rule
        self.now = now
        self.columns = columns
        arrival = self.arrival = columns.arrival
        self.job_id, self.best = columns.job_id, columns.best
        rows, outside = columns.drop_candidates(now)
        if rows is None:  # every row priced, as one vectorised pass
            worthless = columns.values((now + columns.fastest) - arrival) <= 0
            dead = np.flatnonzero(worthless).tolist()
            alive = columns.wake[~worthless] if dead else columns.wake
            soonest = float(alive.min()) if len(alive) else math.inf
        elif len(rows) <= FEW:  # priced by the scalar code (the columns' reference)
            fastest, curves, wake = columns.fastest, columns.curves, columns.wake
            dead = [
                row
                for row in rows
                if curves[row].value_at((now + float(fastest[row])) - float(arrival[row])) <= 0
            ]
            soonest = min([float(wake[row]) for row in rows if row not in dead], default=math.inf)
        else:
            picked = np.array(rows)
            worthless = (
                columns.values_of(picked, (now + columns.fastest[picked]) - arrival[picked]) <= 0
            )
            dead = picked[worthless].tolist()
            soonest = (
                float(columns.wake[picked[~worthless]].min()) if len(dead) < len(rows) else math.inf
            )
        soonest = min(soonest, outside)
        self.closed: set[int] = set(dead)  # rows dropped, started or held for at this instant
        order = columns.order
        self.dropped: list[int] = [
            int(self.job_id[row]) for row in sorted(dead, key=lambda row: order[row])
        ]
        self.left = len(columns) - len(dead)
        self.wake: float = int(soonest) + 1 if soonest < math.inf else math.inf
        self._full: np.ndarray | None = None
        self._remaining: np.ndarray | None = None

    def full(self) -> np.ndarray:
        """Every job's value on ``c*`` cores started now, computed when first asked for."""
        if self._full is None:
            self._full = self.columns.values((self.now + self.columns.fastest) - self.arrival)
        return self._full

    def remaining(self) -> np.ndarray:
        """Every job's remaining value now (minVR's key), computed when first asked for."""
        if self._remaining is None:
            self._remaining = self.columns.remaining_values(self.now - self.arrival)
        return self._remaining

    def index(self, job_id: int) -> int:
        """Row of a queued job."""
        return self.columns.position[job_id]

    def take(self, index: int) -> int:
        """Mark a candidate started (or held for); returns its job id."""
        self.closed.add(index)
        self.left -= 1
        return int(self.job_id[index])

    def select(self, bid: int) -> tuple[int, int] | None:
        """``(row, cores)`` of the job the rule picks for a node offering ``bid`` cores."""
        if self.left <= 0:
            return None
        if self.rule == "sjq":
            return self._first_in_order(bid)
        if self.rule == "minvr":
            return self._least_remaining(bid)
        if len(self.columns) >= LONG:
            pick = self._bounded_best(bid)
            if pick is not None:
                return pick
        gain, cores = self.columns.gains(self.now, bid)
        key = gain if self.rule == "maxv" else gain / cores
        closed = list(self.closed)
        if closed:
            key[closed] = -np.inf
        index = int(key.argmax())
        if not key[index] > 0:  # no job earns, or a tiny profit per core rounded to 0
            if self.rule == "maxv":
                return None
            return self._exact(key, gain, closed, bid, largest=True)
        ties = np.flatnonzero(key == key[index])  # all earn: their key is > 0
        if len(ties) > 1:
            index = self._earliest(ties)
        return index, min(int(self.best[index]), bid)

    def select_reserved(self, bid: int, reserve: float) -> tuple[int, int] | None:
        """``select`` for a node offering ``bid`` cores at a reserve: among the jobs whose
        value per core started now on ``min(bid, c*)`` cores is at least ``reserve``
        (``algorithms.bidding``, "offers with a reserve"); every open row priced at once."""
        size = len(self.columns)
        return self.select_offer(
            np.full(size, bid, dtype=np.int64), np.ones(size, dtype=bool), reserve
        )

    def select_offer(
        self, cap: np.ndarray, eligible: np.ndarray, reserve: float = 0.0
    ) -> tuple[int, int] | None:
        """``(row, units)`` of the job the rule picks among the ``eligible`` open rows, each
        offered ``cap[row]`` units (``algorithms.market_offers``: the units of its unit
        vector the offer holds; 0: it does not fit). A row is priced on ``min(cap, c*)``
        units; the rule's key and ties are ``select``'s, and with every ``cap`` equal to
        one bid it picks what ``select`` picks (every eligible row priced at once). With
        ``reserve > 0`` only rows earning at least ``reserve`` per unit are picked."""
        if self.left <= 0:
            return None
        able = eligible & (cap > 0)
        if self.closed:
            able[list(self.closed)] = False
        rows = np.flatnonzero(able)
        if not len(rows):
            return None
        units = np.minimum(self.best[rows], cap[rows])
        gain = self.columns.values_on_rows(self.now, rows, units)
        earns = gain > 0
        if reserve > 0:
            earns &= gain / units >= reserve
        if not earns.any():
            return None
        rows, units, gain = rows[earns], units[earns], gain[earns]
        if self.rule == "sjq":
            pick = int(self.columns.order[rows].argmin())
            return int(rows[pick]), int(units[pick])
        if self.rule == "minvr":
            key = self.remaining()[rows]
            top = key.min()
        else:
            key = gain if self.rule == "maxv" else gain / units
            top = key.max()
        ties = np.flatnonzero(key == top)
        pick = (
            int(ties[0])
            if len(ties) == 1
            else int(np.searchsorted(rows, self._earliest(rows[ties])))
        )
        return int(rows[pick]), int(units[pick])

    def _bounded_best(self, bid: int) -> tuple[int, int] | None:
        """maxV / maxVD on a long queue: price only the rows whose bound (``bounds``, per
        core for maxVD) reaches the key of the row with the largest bound. A row left out
        has key <= bound < that key, so it can neither win nor tie. ``None`` when that
        would not save much (the caller prices every row)."""
        columns = self.columns
        bound = columns.bounds(bid)
        if self.rule == "maxvd":
            bound = bound / np.minimum(self.best, bid)
        top = int(bound.argmax())
        cores = min(int(self.best[top]), bid)
        job = columns.jobs[top]
        assert job.profile is not None
        floor = profit(
            columns.curves[top],
            self.now,
            job.submit,
            job.profile,
            cores,
            float(columns.progress[top]),
        )
        if self.rule == "maxvd":
            floor /= cores
        if not floor > 0 or top in self.closed:
            return None
        rows = np.flatnonzero(bound >= floor)
        if len(rows) * PRUNED > len(bound):
            return None
        cores_of = np.minimum(self.best[rows], bid)
        key = columns.values_on_rows(self.now, rows, cores_of)
        if self.rule == "maxvd":
            key /= cores_of
        for row in self.closed.intersection(rows.tolist()):
            key[np.searchsorted(rows, row)] = -np.inf
        best = key.max()  # >= floor > 0: the top row is among them
        ties = rows[key == best]
        index = int(ties[0]) if len(ties) == 1 else self._earliest(ties)
        return index, min(int(self.best[index]), bid)

    def _first_in_order(self, bid: int) -> tuple[int, int] | None:
        """SJQ: the first open job in queue order with a positive profit on ``bid`` cores:
        the first open job priced alone, then ``FEW``, ``4 * FEW``... rows at a time."""
        columns, closed, position = self.columns, self.closed, self.columns.position
        ids = columns.index.in_order()
        batch = 1
        while True:
            chunk: list[int] = []
            for job_id in ids:
                row = position[job_id]
                if row not in closed:
                    chunk.append(row)
                    if len(chunk) == batch:
                        break
            if not chunk:
                return None
            if batch == 1:
                row = chunk[0]
                cores = min(int(self.best[row]), bid)
                if self._earns(row, cores):
                    return row, cores
                batch = FEW
                continue
            rows = np.array(chunk)
            cores = np.minimum(self.best[rows], bid)
            earns = np.flatnonzero(columns.values_on_rows(self.now, rows, cores) > 0)
            if len(earns):
                return int(rows[earns[0]]), int(cores[earns[0]])
            batch = min(4 * batch, 4096)

    def _least_remaining(self, bid: int) -> tuple[int, int] | None:
        """minVR: the open job of least remaining value among those with a positive profit.

        The rows tied at the least remaining value are priced on ``bid`` cores; when none
        earns they are set aside and the next least tried, up to ``TRIES`` times; then
        every row is priced.
        """
        key = self.remaining()
        closed = list(self.closed)
        if closed:
            key = key.copy()  # the cached remaining values stay as they are
            key[closed] = np.inf
        for attempt in range(TRIES):
            index = int(key.argmin())
            least = key[index]
            if least == np.inf:
                break
            ties = np.flatnonzero(key == least)
            if len(ties) == 1:
                earns = ties if self._earns(index, min(int(self.best[index]), bid)) else ties[:0]
            else:
                earns = ties[
                    self.columns.values_on_rows(self.now, ties, np.minimum(self.best[ties], bid))
                    > 0
                ]
            if len(earns):
                index = int(earns[0]) if len(earns) == 1 else self._earliest(earns)
                return index, min(int(self.best[index]), bid)
            if attempt == 0 and not closed:
                key = key.copy()
            key[ties] = np.inf  # none of them earns on this offer
        gain, _ = self.columns.gains(self.now, bid)
        return self._exact(key, gain, closed, bid, largest=False)

    def _exact(
        self, key: np.ndarray, gain: np.ndarray, closed: list[int], bid: int, *, largest: bool
    ) -> tuple[int, int] | None:
        """The best ``key`` among the open rows with ``gain > 0`` (every row compared)."""
        able = gain > 0
        if closed:
            able[closed] = False
        if not able.any():
            return None
        index = _first_best(key, able, self.arrival, self.job_id, largest=largest)
        return index, min(int(self.best[index]), bid)

    def _earns(self, row: int, cores: int) -> bool:
        """Whether one row earns a positive profit on ``cores`` cores started now (the
        scalar code, which the columns reproduce bit for bit)."""
        columns = self.columns
        job = columns.jobs[row]
        assert job.profile is not None
        return (
            profit(
                columns.curves[row],
                self.now,
                job.submit,
                job.profile,
                cores,
                float(columns.progress[row]),
            )
            > 0
        )

    def _earliest(self, rows: np.ndarray) -> int:
        """Among ``rows``, the earliest arrival, then the lowest job id."""
        pick = rows[self.arrival[rows] == self.arrival[rows].min()]
        if len(pick) > 1:
            pick = pick[self.job_id[pick] == self.job_id[pick].min()]
        return int(pick[0])

    def rank_of(self, index: int) -> int:
        """How many open candidates other than ``index`` rank before it (by the rule's
        key on ``c*`` cores; queue order under SJQ)."""
        if self.rule == "sjq":
            order = self.columns.order
            before = order < order[index]
        elif self.rule == "maxvd":
            density = self.full() / self.best
            before = density > density[index]
        else:
            bound = -self.full() if self.rule == "maxv" else self.remaining()
            key, arrival, job_id = bound[index], self.arrival[index], self.job_id[index]
            before = bound < key
            ties = np.flatnonzero(bound == key)
            before[ties] = (self.arrival[ties] < arrival) | (
                (self.arrival[ties] == arrival) & (self.job_id[ties] < job_id)
            )
        closed = list(self.closed)  # ``index`` itself never ranks before itself
        return int(np.count_nonzero(before)) - (
            int(np.count_nonzero(before[closed])) if closed else 0
        )

    def arrivals(self) -> list[Candidate]:
        """The open candidates that arrived now and may trigger holding (never held:
        ``market_holding.may_trigger``), in queue order: the jobs holding is tried for."""
        columns = self.columns
        out = []
        for job_id in columns.index.recent_ids(self.now):
            row = columns.position[job_id]
            if row in self.closed:
                continue
            job = columns.jobs[row]
            assert job.profile is not None
            out.append(
                Candidate(
                    job.job_id,
                    job.submit,
                    columns.curves[row],
                    job.profile,
                    float(columns.progress[row]),
                    True,
                    int(columns.best[row]),
                    job.unit,
                    job.bb,
                    bool(columns.spans[row]),
                    int(columns.holds[row]),
                )
            )
        return out


def _first_best(
    key: np.ndarray, able: np.ndarray, arrival: np.ndarray, job_id: np.ndarray, *, largest: bool
) -> int:
    """Index of the best ``key`` among ``able`` rows; ties: earliest arrival, then lowest id."""
    masked = np.where(able, key, -np.inf if largest else np.inf)
    index = int(masked.argmax() if largest else masked.argmin())
    ties = masked == masked[index]
    if np.count_nonzero(ties) > 1:
        pick = np.flatnonzero(ties)
        pick = pick[arrival[pick] == arrival[pick].min()]
        if len(pick) > 1:
            pick = pick[job_id[pick] == job_id[pick].min()]
        index = int(pick[0])
    return index
