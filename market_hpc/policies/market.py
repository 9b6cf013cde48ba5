"""Market dispatchers of seed 002: SJQ, maxV, maxVD, minVR and their holding variants.

Each instant (Algorithm 2): queued jobs that can no longer earn anything are dropped
(A5: even their fastest completion earns 0). Then, repeatedly, every node bids its free
cores and the highest bid wins (ties: lowest node index, A15); the policy picks a job
for that node among those with positive profit on ``min(bid, c*)`` cores. When no core
is free anywhere the holding variants run Algorithm 3 for the jobs that arrived at this
instant and were never held (A12/A13), holding the best latest-start prefix on one node.

Decisions where the paper is silent (spec items):

- jobs started or held at this instant are not candidates for holding or resuming in the
  same instant (A10's flag; avoids hold/resume ping-pong within one instant);
- a job's score ties break by arrival, then job id (A15);
- the decision asks to be woken when the next queued job's value runs out, so drops
  happen at that instant rather than at the next unrelated event.
"""

from __future__ import annotations

import math

import numpy as np

from market_hpc.algorithms.market import Candidate, Executing, c_star, hold_search, profit, remaining_time
from market_hpc.errors import ConfigError
from market_hpc.policies.base import NOTHING, Action, Allocator, Decision, Drop, Hold, Start, View
from market_hpc.policies.registry import register_scheduler

RULES = ("sjq", "maxv", "maxvd", "minvr")


def _candidate(view: View, job, now: float) -> Candidate:  # type: ignore[no-untyped-def]
    curve = job.payload.get("value_curve")
    if curve is None or job.profile is None:
        raise ConfigError(
            f"market policies need moldable jobs with value curves; job {job.job_id} has "
            f"{'no value curve' if curve is None else 'no profile'} (use a task-graph job set or "
            "workload.market = true for traces)"
        )
    state = view.state(job.job_id)
    recent = job.submit == now and state.hold_count == 0
    best = job.payload.get("c_star") or c_star(job.profile)
    return Candidate(job.job_id, job.submit, curve, job.profile, state.progress, recent, best)


class MarketPolicy:
    """One of the eight market dispatchers.

    Args:
        allocator: Must be ``max-bid`` (the auction picks the node).
        rule: ``sjq``, ``maxv``, ``maxvd`` or ``minvr``.
        holding: Enable Algorithm 3.
        penalty: Holding penalty pi as a fraction of a held job's maximum value.
    """

    def __init__(self, allocator: Allocator, *, rule: str, holding: bool, penalty: float = 0.0) -> None:
        if rule not in RULES:
            raise ConfigError(f"market rule must be one of {', '.join(RULES)}, got {rule!r}")
        if not 0.0 <= penalty <= 1.0:
            raise ConfigError(f"holding penalty must be in [0, 1], got {penalty}")
        self.allocator = allocator
        self.rule = rule
        self.holding = holding
        self.penalty = penalty
        self.name = rule + ("h" if holding else "")

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Drop worthless jobs, then auction free cores, holding when none are free."""
        now = view.time
        actions: list[Action] = []
        candidates: dict[int, Candidate] = {}
        wake = math.inf
        for job in view.queue:
            cand = _candidate(view, job, now)
            fastest = remaining_time(cand.profile, cand.best_cores, cand.progress)
            if cand.curve.value_at(now + fastest - cand.arrival) <= 0:
                actions.append(Drop(cand.job_id))
                continue
            candidates[cand.job_id] = cand
            wake = min(wake, math.floor(cand.arrival + cand.curve.zero_time - fastest) + 1)
        free = view.free[:, 0].copy()
        busy: set[int] = set()
        auction = _Auction(self.rule, candidates, now)
        while candidates:
            node = int(free.argmax())
            bid = int(free[node])
            if bid > 0:
                choice = auction.select(bid, busy)
                if choice is None:
                    break
                cand, cores = choice
                actions.append(Start(cand.job_id, ((node, cores),)))
            else:
                plan = self._plan_hold(view, candidates, free, busy) if self.holding else None
                if plan is None:
                    break
                for held in plan.held:
                    actions.append(Hold(held))
                    busy.add(held)
                free[plan.node] += sum(r.units for r in view.running if r.job.job_id in plan.held)
                cand = candidates[plan.job_id]
                node, cores = plan.node, plan.cores
                actions.append(Start(cand.job_id, ((node, cores),)))
            free[node] -= cores
            busy.add(cand.job_id)
            del candidates[cand.job_id]
        if not actions and wake == math.inf:
            return NOTHING
        return Decision(tuple(actions), wake_at=wake if wake > now else None)

    def _plan_hold(self, view: View, candidates: dict[int, Candidate], free: np.ndarray, busy: set[int]):  # type: ignore[no-untyped-def]
        arrivals = [c for c in candidates.values() if c.recent]
        if not arrivals:
            return None
        executing = []
        for running in view.running:
            job = running.job
            if job.job_id in busy:
                continue
            curve = job.payload["value_curve"]
            node = running.allocation[0][0]
            executing.append(Executing(job.job_id, node, running.units, running.start, running.seq,
                                       float(curve.value_at(running.est_end - job.submit)),
                                       float(curve.max_value)))
        return hold_search(arrivals, executing, free.tolist(), view.time, self.penalty)


class _Auction:
    """One instant's job selection, exact and fast.

    Candidates are scanned in the order of a lower bound on their selection key (the key
    on ``c*`` cores for maxV, the remaining value for minVR, queue order for SJQ; for
    maxVD the bound is ``-profit(c*)`` since a job's value density on ``c >= 1`` cores is at
    most its profit on ``c*``). A job's profit on fewer cores never exceeds its profit on
    ``c*`` (response times are non-increasing up to ``c*``), so the scan stops as soon as a
    bound cannot beat the best exact key found; ties break by arrival then job id (A15).
    Jobs with no profit even on ``c*`` cores are never candidates in this instant.
    """

    def __init__(self, rule: str, candidates: dict[int, Candidate], now: float) -> None:
        self.rule = rule
        self.now = now
        self.gains: dict[tuple[int, int], float] = {}
        entries = []
        for index, cand in enumerate(candidates.values()):
            full = self.gain(cand, cand.best_cores)
            if full <= 0:
                continue
            if rule == "sjq":
                bound = float(index)
            elif rule == "minvr":
                bound = cand.curve.remaining_value(now - cand.arrival)
            else:
                bound = -full
            entries.append((bound, cand.arrival, cand.job_id, cand))
        entries.sort(key=lambda entry: entry[:3])
        self.entries = entries

    def gain(self, cand: Candidate, cores: int) -> float:
        key = (cand.job_id, cores)
        value = self.gains.get(key)
        if value is None:
            value = self.gains[key] = profit(cand.curve, self.now, cand.arrival, cand.profile, cores,
                                             cand.progress)
        return value

    def select(self, bid: int, taken: set[int]) -> tuple[Candidate, int] | None:
        best: tuple[Candidate, int] | None = None
        best_key: tuple[float, float, int] | None = None
        for bound, arrival, job_id, cand in self.entries:
            if job_id in taken:
                continue
            if best_key is not None and (bound, arrival, job_id) >= best_key:
                break
            cores = min(bid, cand.best_cores)
            gain = self.gain(cand, cores)
            if gain <= 0:
                continue
            if self.rule == "sjq":
                return cand, cores
            if self.rule == "maxv":
                score = -gain
            elif self.rule == "maxvd":
                score = -gain / cores
            else:
                score = bound
            key = (score, arrival, job_id)
            if best_key is None or key < best_key:
                best, best_key = (cand, cores), key
        return best


def _factory(rule: str, holding: bool):  # type: ignore[no-untyped-def]
    def make(allocator: Allocator, penalty: float = 0.0) -> MarketPolicy:
        return MarketPolicy(allocator, rule=rule, holding=holding, penalty=penalty)

    return make


_SUMMARIES = {
    "sjq": "simple job queuing: queue order",
    "maxv": "maximum value queued job first",
    "maxvd": "maximum value density (value / cores) first",
    "minvr": "minimum remaining value (area under the curve) first",
}
for _rule, _summary in _SUMMARIES.items():
    register_scheduler(_rule, f"market (seed 002): {_summary}", allocators=("max-bid",),
                       default_allocator="max-bid", market=True)(_factory(_rule, False))
    register_scheduler(_rule + "h", f"market (seed 002): {_summary}, with holding",
                       allocators=("max-bid",), default_allocator="max-bid", market=True)(
        _factory(_rule, True))
