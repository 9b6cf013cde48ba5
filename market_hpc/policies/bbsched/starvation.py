"""The paper's starvation bound for the BBSched window schedulers (Fan et al., HPDC '19,
§3.1: "an upper bound for the number of iterations that a job can stay in the window.
Once a job passes the bound (e.g., 50), it must be selected to run").

The paper defines neither the value (50 is an example) nor an "iteration". A job is
*starving* once its count of iterations is more than ``bound`` ("passes" read as more
than), where ``by`` says what counts as an iteration of a job that is in the window:

* ``invocations``: every scheduling invocation (the default reading);
* ``optimised``: an invocation in which the method had a choice: two or more window
  jobs could start without delaying a reservation, the invocations where an optimising
  method's optimiser runs (the baseline counts the same invocations, it only does not
  optimise in them);
* ``passed-over``: an invocation in which the job fitted the free nodes and burst
  buffer, alone, and did not start;
* ``seconds``: not a count, the time since the job first entered a window.

``backstop`` (seconds, 0: none) also makes a job starving once it has been that long
since it first entered a window, whatever its count: a job that never fits is never
passed over, so ``passed-over`` alone would let a wide job wait forever (it requires a
backstop).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, UnknownNameError

STARVATION_READINGS = ("invocations", "optimised", "passed-over", "seconds")
DEFAULT_READING = "invocations"
DEFAULT_BACKSTOP = 0.0
"""The default: more than 50 scheduling invocations in the window, no backstop.
The other readings and the backstop are options (their trade-offs in ``docs/bbsched.md``)."""


class Starvation:
    """Per-job iteration counts and first-window times, and the starving test.

    >>> s = Starvation(1, "passed-over", backstop=100.0)
    >>> a, b = Job(1, 0.0, 10.0, 10.0, units=4), Job(2, 0.0, 10.0, 10.0, units=9)
    >>> for now in (0.0, 10.0):                      # 5 nodes free, nothing starts
    ...     s.entered([a, b], now)
    ...     s.counted([a, b], set(), 5.0, 0.0, had_choice=False)
    >>> s.starving(a, 20.0), s.starving(b, 20.0)      # a passed over twice (> 1); b never fitted
    (True, False)
    >>> s.starving(b, 100.5)         # the backstop: 100.5 s since first in a window
    True
    """

    def __init__(
        self,
        bound: float,
        by: str = DEFAULT_READING,
        backstop: float = DEFAULT_BACKSTOP,
        label: str = "bb-window",
    ) -> None:
        if by not in STARVATION_READINGS:
            raise UnknownNameError(f"{label} starvation_by", by, STARVATION_READINGS)
        if bound <= 0:
            raise ConfigError(f"{label}: starvation must be > 0 ({by}), got {bound}")
        if backstop < 0:
            raise ConfigError(
                f"{label}: starvation_backstop must be >= 0 seconds (0: none), got {backstop}"
            )
        if by == "passed-over" and backstop == 0:
            raise ConfigError(
                f'{label}: starvation_by = "passed-over" needs a starvation_backstop > 0 seconds '
                "(a job that never fits is never passed over and would never be forced)"
            )
        self.bound = bound
        self.by = by
        self.backstop = backstop
        self.first: dict[int, float] = {}  # when each waiting job first entered a window
        self.count: dict[int, float] = {}  # its iterations (not with ``seconds``)
        self.backstopped: set[int] = set()
        self.by_backstop = 0  # jobs made starving by the backstop alone

    def starving(self, job: Job, now: float) -> bool:
        """The job has passed the bound (or the backstop)."""
        first = self.first.get(job.job_id)
        if first is None:
            return False
        if self.by == "seconds":
            return now - first > self.bound
        if self.count.get(job.job_id, 0.0) > self.bound:
            return True
        return self.backstop > 0 and now - first > self.backstop

    def note_forced(self, starving: Iterable[Job]) -> None:
        """Count the starving jobs that the backstop alone made starving (once each)."""
        if self.backstop <= 0 or self.by == "seconds":
            return
        for job in starving:
            if job.job_id not in self.backstopped and self.count.get(job.job_id, 0.0) <= self.bound:
                self.backstopped.add(job.job_id)
                self.by_backstop += 1

    def entered(self, window: Sequence[Job], now: float) -> None:
        """The window of an invocation, before its selection."""
        first = self.first
        for job in window:
            first.setdefault(job.job_id, now)
        if self.by == "invocations":
            count = self.count
            for job in window:
                count[job.job_id] = count.get(job.job_id, 0.0) + 1.0

    def counted(
        self,
        window: Sequence[Job],
        started: set[int],
        free_nodes: float,
        free_bb: float,
        had_choice: bool,
    ) -> None:
        """The invocation's outcome: the ids ``started``, the free resources at its start,
        whether two or more window jobs were eligible."""
        count = self.count
        if self.by == "optimised" and had_choice:
            for job in window:
                if job.job_id not in started:
                    count[job.job_id] = count.get(job.job_id, 0.0) + 1.0
        elif self.by == "passed-over":
            for job in window:
                if job.job_id not in started and job.cores <= free_nodes and job.bb <= free_bb:
                    count[job.job_id] = count.get(job.job_id, 0.0) + 1.0

    def forget(self, job_ids: Iterable[int]) -> None:
        """Started jobs leave the queue and the window."""
        for job_id in job_ids:
            self.first.pop(job_id, None)
            self.count.pop(job_id, None)
            self.backstopped.discard(job_id)

    def keep(self, queue: Sequence[Job]) -> None:
        """Forget every job no longer in ``queue`` (held back, dropped)."""
        ids = {job.job_id for job in queue}
        self.first = {k: v for k, v in self.first.items() if k in ids}
        self.count = {k: v for k, v in self.count.items() if k in ids}
        self.backstopped &= ids
