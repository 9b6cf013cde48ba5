"""SWF partial-execution lines (status 2, 3, 4): which line is a job, for both line-by-line passes.

The SWF definition (Parallel Workloads Archive, version 2.2, field 11 "status") gives 0
failed, 1 completed, 5 cancelled and, when a log records checkpointing or swapping, 2
"partial execution, to be continued", 3 "last partial execution, completed" and 4 "last
partial execution, failed"; a log whose ``Preemption`` header is ``Double`` shows a split
job "once as a one-line summary, and again as a sequence of lines representing the parts"
(this project's schedule export writes such files). The rules here:

* A line whose status is 2, 3 or 4 is a *partial line*; any other status (0, 1, 5, -1,
  or a value the definition does not name) makes a *whole-job line*.
* A partial line of a job number that also has a whole-job line (kept as a job, or
  skipped for an unknown run time, size or submit time), before or after it, is skipped
  in every mode and counted as ``partial_execution``: the whole-job line is the job. This
  holds for a part whose run time, size or submit time is unknown too (a part is never a
  job, so it is not listed with the skipped jobs either).
* A partial line of unknown run time, size or submit time whose job number has no
  whole-job line is skipped as unknown, as any such line.
* Partial lines of a job number with no whole-job line (e.g. a ``Preemption: Yes`` log,
  which has the parts only) raise :class:`TraceFormatError` at the first of them, or with
  ``lenient`` the first of them is the job and the others are counted as
  ``missing_summary``.

Which case a partial line is can depend on a later line, so the passes hold each job
number's first partial line as a tentative job and decide at the end
(:meth:`PartialLines.resolve`); malformed-line errors, found on the way, come first.
"""

from __future__ import annotations

from collections.abc import Callable

from market_hpc.errors import TraceFormatError
from market_hpc.validation import parse_ascii_number
from market_hpc.workload.swf_format import FIELD_NAMES, N_FIELDS, STATUS

PARTIAL_STATUSES: tuple[float, ...] = (2.0, 3.0, 4.0)
"""Field 11 values of a partial execution (continued; last, completed; last, failed)."""
PARTIAL_EXECUTION = "partial_execution"
"""Report kind of a partial line whose job has a whole-job line (skipped in every mode)."""
MISSING_SUMMARY = "missing_summary"
"""Report kind (``lenient`` only) of a job's later partial lines when it has no whole-job line."""


def is_partial(tokens: list[str]) -> bool:
    """Whether a line's status (field 11) is 2, 3 or 4.

    >>> is_partial("2 5 0 10 2 -1 -1 4 60 -1 2 3 -1 -1 1 -1 -1 -1".split())
    True
    >>> is_partial("2 5 0 20 4 -1 -1 4 60 -1 1 3 -1 -1 1 -1 -1 -1".split())
    False

    Args:
        tokens: The line's whitespace-separated fields (comment removed).
    """
    return len(tokens) == N_FIELDS and parse_ascii_number(tokens[STATUS]) in PARTIAL_STATUSES


class PartialLines:
    """The partial lines of a line-by-line pass, decided once every line was seen.

    Attributes:
        first: Job number -> line of its first partial line (the tentative job).
        later: ``(job number, line)`` of the other partial lines, in file order.
        unknown: ``(job number, line, values)`` of the partial lines of unknown run time,
            size or submit time, in file order.
    """

    def __init__(self) -> None:
        self.first: dict[float, int] = {}
        self.later: list[tuple[float, int]] = []
        self.unknown: list[tuple[float, int, list[float]]] = []

    def add_unknown(self, job_id: float, line: int, values: list[float]) -> None:
        """Note a partial line of unknown run time, size or submit time (never a job)."""
        self.unknown.append((job_id, line, values))

    def add(self, job_id: float, line: int) -> bool:
        """Note a well-formed partial line; return whether it is its job's first (a
        tentative job, which the pass keeps until :meth:`resolve`)."""
        if job_id in self.first:
            self.later.append((job_id, line))
            return False
        self.first[job_id] = line
        return True

    def resolve(
        self,
        has_whole: Callable[[float], bool],
        source: str,
        lenient: bool,
        count: Callable[[str, list[int]], None],
    ) -> tuple[set[int], list[tuple[int, list[float]]]]:
        """Decide every partial line.

        Args:
            has_whole: Whether a job number has a whole-job line.
            source: The file, for the error.
            lenient: Keep a job's first partial line when it has no whole-job line.
            count: Called with a kind and the lines (in file order) to count under it.

        Returns:
            The lines of tentative jobs that are not jobs, and ``(line, values)`` of the
            partial lines to skip as unknown (no whole-job line), in file order.

        Raises:
            TraceFormatError: A job has partial lines and no whole-job line (unless
                ``lenient``), naming the first such job's first partial line.
        """
        unknown = [(line, values) for job_id, line, values in self.unknown if not has_whole(job_id)]
        unknown_parts_of_held_jobs = [line for job_id, line, _ in self.unknown if has_whole(job_id)]
        orphans = {job_id for job_id in self.first if not has_whole(job_id)}
        if orphans and not lenient:
            line, job_id = min((self.first[job_id], job_id) for job_id in orphans)
            raise TraceFormatError(
                source,
                line,
                f"job {job_id:.0f} has partial-execution lines (status 2, 3 or 4) but "
                "no whole-job line (status 0, 1, 5 or -1): a Preemption: Double log gives each "
                "split job a summary line; add it, or use --lenient to keep the job's first part "
                "as the job",
                field=f"{STATUS + 1} ({FIELD_NAMES[STATUS]})",
            )
        dropped = sorted(line for job_id, line in self.first.items() if job_id not in orphans)
        partial = sorted(
            dropped
            + unknown_parts_of_held_jobs
            + [line for job_id, line in self.later if job_id not in orphans]
        )
        missing = [line for job_id, line in self.later if job_id in orphans]
        if partial:
            count(PARTIAL_EXECUTION, partial)
        if missing:
            count(MISSING_SUMMARY, missing)
        return set(dropped), unknown
