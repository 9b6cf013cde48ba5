"""The priority heuristics RL scheduling papers compare against (RLScheduler, SC'20),
each as a strict scheduler and with EASY backfilling.

Each orders the waiting jobs by a score, **smallest first** (RLScheduler sorts its queue by
the score and takes the first job), ties by submit time then job id. With ``n`` the
requested processors (cores), ``r`` the requested time (the estimate schedulers see,
0.1 s when not positive, as RLScheduler does for F1), ``s`` the submit time (0.1 when not
positive) and ``w`` the wait so far (now − s):

- **WFP3**: ``−(w / r)³ × n``: the longest wait relative to the request first, wide jobs
  first among equals (Tang et al.'s WFP with exponent 3);
- **UNICEP**: ``−w / (log2(n) × r)``; ``log2(1) = 0`` is taken as 1e−15 (RLScheduler adds
  1e−15 to ``n``), so single-processor jobs come first, by ``w / r``;
- **F1**: ``log10(r) × n + 870 × log10(s)`` (Carastan-Santos & de Camargo's learned
  function F1): small, short and early jobs first. It reads the absolute submit time, so
  it depends on where the trace's clock starts.

Sign conventions checked against RLScheduler's ``HPCSimPickJobs.py``: the same formulas,
sorted ascending. One difference, on purpose: there WFP and UNICEP read the wait as
``scheduled_time − submit_time`` of a job not yet scheduled, whose ``scheduled_time`` is
still −1, so they rank by ``−(s + 1)`` in place of ``w``; here ``w`` is the real wait.

The strict schedulers start jobs in that order while they fit and stop at the first that
does not (as ``fifo`` and ``sjf``); the ``-easy`` ones are ``policies.classic.Backfilling``
over the same order (and ``sjf-easy`` is SJF's order with EASY, the row RLScheduler
reports beside them). The order of WFP3 and UNICEP depends on the time (``w``), so it is sorted at
every decision (it is not a ``Backfilling.key``, which the model keeps sorted between decisions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.policies.base import NOTHING, Action, Allocator, Decision, PolicyBase, Start, View
from market_hpc.policies.capabilities import KINDS, RESOURCES, handles
from market_hpc.policies.classic import Backfilling, shortest_first
from market_hpc.policies.registry import register_scheduler
from market_hpc.policies.scratch import PassScratch

Score = Callable[[Job, float], float]
_TINY = 1e-15


def _request(job: Job) -> float:
    return job.estimate if job.estimate > 0 else 0.1


def wfp3(job: Job, now: float) -> float:
    """WFP3's score (smallest first): ``−(wait / requested time)³ × processors``.

    >>> wfp3(Job(1, 0.0, 10.0, 100.0, units=4), now=200.0)
    -32.0
    """
    return -(((now - job.submit) / _request(job)) ** 3) * job.cores


def unicep(job: Job, now: float) -> float:
    """UNICEP's score (smallest first): ``−wait / (log2(processors) × requested time)``.

    >>> unicep(Job(1, 0.0, 10.0, 100.0, units=4), now=200.0)
    -1.0
    """
    cores = job.cores
    return -(now - job.submit) / ((math.log2(cores) if cores > 1 else _TINY) * _request(job))


def f1(job: Job, now: float) -> float:
    """F1's score (smallest first): ``log10(requested time) × processors + 870 × log10(submit)``.

    >>> f1(Job(1, 1000.0, 10.0, 100.0, units=4), now=2000.0)
    2618.0
    """
    submit = job.submit if job.submit > 0 else 0.1
    return math.log10(_request(job)) * job.cores + 870.0 * math.log10(submit)


SCORES: dict[str, Score] = {"wfp3": wfp3, "unicep": unicep, "f1": f1}
"""Each heuristic's score, by scheduler name."""


def ordered_by(score: Score, queue: Iterable[Job], now: float) -> list[Job]:
    """``queue`` sorted by ``score`` at ``now``, smallest first, ties by submit time then id."""
    return sorted(queue, key=lambda job: (score(job, now), job.submit, job.job_id))


def strict_pass(view: View, ordered: Sequence[Job], allocator: Allocator) -> Decision:
    """Start ``ordered`` jobs while they fit; stop at the first that does not."""
    free_cores, free_bb = view.free_total[0], view.free_bb
    actions: list[Action] = []
    with PassScratch(view) as scratch:
        for job in ordered:
            if (job.cores > free_cores and not view.exclusive) or job.bb > free_bb:
                break
            allocation = scratch.allocate(allocator, job)
            if allocation is None:
                break
            actions.append(Start(job.job_id, allocation))
            scratch.take(job, allocation)
            free_cores -= job.cores
            free_bb -= job.bb
    return Decision(tuple(actions)) if actions else NOTHING


class _Scored(PolicyBase):
    """A strict scheduler over a score's order."""

    label = ""
    score: Score

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self.name = f"{self.label}+{allocator.name}"

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        if not view.queue:
            return NOTHING
        return strict_pass(
            view, ordered_by(type(self).score, view.queue, view.time), self.allocator
        )


class _ScoredEasy(Backfilling):
    """EASY backfilling (``Backfilling.schedule``) over a score's order."""

    score: Score

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        if not view.queue:
            return NOTHING
        return self.schedule(view, ordered_by(type(self).score, view.queue, view.time))


_READS = (
    "cores, GPUs, MICs, memory (via the allocator), burst buffer; estimates, submit times, waits"
)
_IGNORES = "queue ids, value curves, moldability (runs the requested size)"
CAPABILITIES = handles(RESOURCES, KINDS, family="rl baselines", reads=_READS, ignores=_IGNORES)


def _register(name: str, score: Score, summary: str) -> None:
    strict = type(
        name.upper(),
        (_Scored,),
        {
            "label": name,
            "summary": summary + "; blocks at the first job that does not fit",
            "handles": CAPABILITIES,
            "score": staticmethod(score),
            "__module__": __name__,
            "__doc__": summary,
        },
    )
    easy = type(
        name.upper() + "Easy",
        (_ScoredEasy,),
        {
            "label": f"{name}-easy",
            "summary": summary + ", with EASY backfilling",
            "handles": CAPABILITIES,
            "score": staticmethod(score),
            "__module__": __name__,
            "__doc__": summary + ", with EASY backfilling",
        },
    )
    register_scheduler(strict)
    register_scheduler(easy)


@register_scheduler
class SjfEasy(Backfilling):
    """EASY backfilling over SJF's order (estimate, submit time, job id): the model keeps
    the queue sorted by this static key between decisions."""

    label = "sjf-easy"
    summary = "SJF with EASY backfilling (RLScheduler's SJF row with backfilling)"
    handles = CAPABILITIES
    key = staticmethod(shortest_first)


_register(
    "wfp3",
    wfp3,
    "WFP3: largest (wait / requested time)^3 x processors first (RLScheduler's baseline)",
)
_register(
    "unicep",
    unicep,
    "UNICEP: largest wait / (log2(processors) x requested time) first (RLScheduler's baseline)",
)
_register(
    "f1",
    f1,
    "F1: smallest log10(requested time) x processors + 870 log10(submit) first (RLScheduler's "
    "baseline)",
)
