#!/usr/bin/env python3
"""Yardstick: a bare heapq event loop against our in-process simulation.

The yardstick computes the schedule of

    market-hpc replay TRACE --platform nodes=P,cores=1 --scheduler fifo|easy --allocator first-fit

for plain processor-count jobs on P single-core nodes, with nothing but a heap of
completions, Python lists and plain ints: no Mesa, no agents, no numpy per event.
With single-unit jobs on identical one-resource nodes, first-fit places a job whenever
the total free count covers it, so free processors are one integer.

Semantics (the project's; see ``market_hpc/core/model.py`` and ``policies/classic.py``):

* each instant: completions first, then arrivals (same-second arrivals in job-id order),
  then one decision when the queue is not empty; a job of run time 0 completes at a
  second instant at the same time, which makes another decision;
* a job larger than the platform is rejected at arrival (never queued);
* FIFO starts jobs in queue order and blocks at the first that does not fit;
* EASY (Mu'alem & Feitelson 2001): jobs start in queue order while they fit; the first
  that does not fit (the head) gets a reservation at the shadow time, the earliest
  expected end (start + estimate, or *now* for a job past its estimate) at which enough
  processors are free, counting jobs started earlier in this decision; *extra* is what
  is free at the shadow time once the head has its share, counting every job ending
  exactly at the shadow time. A later job is backfilled, in queue order, when it fits
  now and either ends by the shadow time (now + estimate <= shadow) or needs no more
  than extra (which it then uses up).
* estimate = SWF field 9 when positive, else the run time; processors = field 8 when
  positive, else field 5 (both rules are applied by ``read_swf``, which this script
  uses for both sides; the parse is not timed).

The script runs the yardstick and ``HPCModel(jobs, platform, scheduler, "first-fit",
record_timeseries=False).run()`` + ``model.recorder.jobs_frame()`` in the same process,
checks that every job starts at the same time on both sides (printing the number of
mismatches) and prints the best time of ``--repeat`` runs and the ratio ours /
yardstick (target: within 5x on KTH-SP2 and HPC2N).

Usage (from the repository root)::

    python benchmarks/heapq_yardstick.py                       # KTH-SP2 and HPC2N, fifo and easy
    python benchmarks/heapq_yardstick.py --trace kth --scheduler fifo --repeat 5 \
        --accasim-reference /tmp/accasim_kth_reference.csv
    python benchmarks/heapq_yardstick.py --trace ../shared/traces/NASA-iPSC-1993-3.1-cln.swf.gz \
        --procs 128
    python benchmarks/heapq_yardstick.py --trace ../shared/traces/CEA-Curie-2011-2.1-cln.swf.gz \
        --procs 93312 --platform curie --scheduler easy --repeat 1

Exit status 1 when any start time differs.
"""

from __future__ import annotations

import argparse
import csv
import gc
import heapq
import math
import statistics
import sys
import time
from bisect import bisect_left, insort
from collections import OrderedDict, deque
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from market_hpc.domain.job import Job

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO.parent / "shared" / "traces"
# name -> (trace file, processors, preset with the same processor count or None)
KNOWN = {
    "kth": ("KTH-SP2-1996-2.1-cln.swf.gz", 100, None),  # the kth-sp2 preset is nodes=100,cores=1
    "hpc2n": ("HPC2N-2002-2.1-cln.swf.gz", 240, "hpc2n"),
}


# --------------------------------------------------------------------------- yardstick
def plain_jobs(jobs: Iterable[Job]) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """(ids, submit, run, estimate, procs) as lists of ints, sorted by (submit, id)."""
    ordered = sorted(jobs, key=lambda j: (j.submit, j.job_id))
    ids, submit, run, est, procs = [], [], [], [], []
    for job in ordered:
        if job.unit != (1, 0, 0, 0) or job.profile is not None or job.bb:
            raise ValueError(f"job {job.job_id}: the yardstick handles plain processor jobs only")
        values = (job.submit, job.run_time, job.estimate)
        if not all(float(v).is_integer() for v in values):
            raise ValueError(f"job {job.job_id}: the yardstick needs integer times, got {values}")
        ids.append(job.job_id)
        submit.append(int(job.submit))
        run.append(int(job.run_time))
        est.append(int(job.estimate))
        procs.append(job.units)
    return ids, submit, run, est, procs


NEVER = 1 << 62  # later than any trace time (plain int, like every time here)


def yardstick(
    submit: list[int], run: list[int], est: list[int], procs: list[int], total: int, easy: bool
) -> list[int | None]:
    """Start time of each job (by index), ``None`` for jobs rejected as too large."""
    return (easy_loop if easy else fifo_loop)(submit, run, est, procs, total)


def fifo_loop(
    submit: list[int], run: list[int], est: list[int], procs: list[int], total: int
) -> list[int | None]:
    """FIFO: start jobs in arrival order while they fit; the head blocks the queue."""
    n = len(submit)
    start: list[int | None] = [None] * n
    completions: list[tuple[int, int]] = []  # heap of (end, job index)
    queue: deque[int] = deque()
    free = total
    nxt = 0
    heappush, heappop = heapq.heappush, heapq.heappop
    while nxt < n or completions:
        now = completions[0][0] if completions else NEVER
        if nxt < n and submit[nxt] < now:
            now = submit[nxt]
        while completions and completions[0][0] == now:
            free += procs[heappop(completions)[1]]
        while nxt < n and submit[nxt] == now:
            if procs[nxt] <= total:  # larger jobs are rejected at arrival
                queue.append(nxt)
            nxt += 1
        while queue and procs[queue[0]] <= free:
            i = queue.popleft()
            free -= procs[i]
            start[i] = now
            heappush(completions, (now + run[i], i))
    return start


def easy_loop(
    submit: list[int], run: list[int], est: list[int], procs: list[int], total: int
) -> list[int | None]:
    """EASY backfilling (Mu'alem & Feitelson 2001) with the project's exact semantics."""
    n = len(submit)
    start: list[int | None] = [None] * n
    completions: list[tuple[int, int]] = []  # heap of (end, job index)
    running: list[tuple[int, int, int]] = []  # sorted (est_end, start seq, job index)
    key_of: list[tuple[int, int]] = [(0, 0)] * n  # job index -> its (est_end, seq)
    # Insertion-ordered with O(1) removal from the middle. An OrderedDict, not a dict: a
    # dict keeps the holes removals leave at its front, so finding the head of a long
    # queue costs O(queue) (CEA-Curie); the model's queue is an OrderedDict too.
    queue: OrderedDict[int, None] = OrderedDict()
    free = total
    seq = 0
    nxt = 0
    heappush, heappop = heapq.heappush, heapq.heappop
    while nxt < n or completions:
        now = completions[0][0] if completions else NEVER
        if nxt < n and submit[nxt] < now:
            now = submit[nxt]
        while completions and completions[0][0] == now:
            i = heappop(completions)[1]
            free += procs[i]
            del running[bisect_left(running, key_of[i])]
        while nxt < n and submit[nxt] == now:
            if procs[nxt] <= total:  # larger jobs are rejected at arrival
                queue[nxt] = None
            nxt += 1
        if not queue or free == 0:
            continue
        # Start in queue order while jobs fit; the first that does not is the head.
        started: list[int] = []
        head = -1
        items = iter(queue)
        for i in items:
            p = procs[i]
            if p > free:
                head = i
                break
            free -= p
            start[i] = now
            heappush(completions, (now + run[i], i))
            seq += 1
            key_of[i] = (now + est[i], seq)
            insort(running, (now + est[i], seq, i))
            started.append(i)
        if head >= 0 and free > 0:
            # Shadow time and extra processors of the head. ``running`` includes this
            # decision's starts; a job past its estimate is expected to end now; every
            # job ending exactly at the shadow time counts towards extra.
            need = procs[head]
            avail = free
            shadow = NEVER
            for end, _, i in running:
                if end < now:  # noqa: PLR1730 (cheaper than max() in this loop)
                    end = now
                if end > shadow:
                    break
                avail += procs[i]
                if shadow == NEVER and avail >= need:
                    shadow = end
            extra = avail - need
            # Backfill later jobs in queue order: fits now and ends by the shadow
            # time, or uses only extra processors (which it then uses up).
            for i in items:
                if free == 0:
                    break
                p = procs[i]
                if p > free:
                    continue
                if now + est[i] > shadow:
                    if p > extra:
                        continue
                    extra -= p
                free -= p
                start[i] = now
                heappush(completions, (now + run[i], i))
                seq += 1
                key_of[i] = (now + est[i], seq)
                insort(running, (now + est[i], seq, i))
                started.append(i)
        for i in started:
            del queue[i]
    return start


# ------------------------------------------------------------------------- harness
def resolve_trace(name: str) -> tuple[Path, int | None, str | None]:
    if name in KNOWN:
        file, procs, preset = KNOWN[name]
        return TRACES / file, procs, preset
    path = Path(name)
    return (path if path.is_absolute() else (REPO / path).resolve()), None, None


def run_ours(jobs: list[Job], platform: str, scheduler: str) -> tuple[pd.DataFrame, float, float]:
    """Our in-process simulation; returns (frame, seconds to build+run, seconds for the frame)."""
    from market_hpc.core.model import HPCModel

    began = time.perf_counter()
    model = HPCModel(jobs, platform, scheduler, "first-fit", record_timeseries=False)
    model.run()
    mid = time.perf_counter()
    frame = model.recorder.jobs_frame()
    return frame, mid - began, time.perf_counter() - mid


def compare(ids: list[int], starts: list[int | None], frame: pd.DataFrame) -> tuple[int, list[str]]:
    """Count jobs whose start differs (a rejected job has no start on either side)."""
    ours = {
        int(j): (None if math.isnan(s) else s)
        for j, s in zip(frame["job_id"].tolist(), frame["start_time"].tolist(), strict=True)
    }
    mismatches = 0
    examples: list[str] = []
    for job_id, start in zip(ids, starts):
        other = ours.pop(job_id, "missing")
        if other != start:
            mismatches += 1
            if len(examples) < 5:
                examples.append(f"job {job_id}: yardstick {start} ours {other}")
    mismatches += len(ours)  # jobs only we report
    return mismatches, examples


def check_reference(ids: list[int], starts: list[int | None], reference: Path) -> int:
    """Compare the yardstick's schedule with a stored AccaSim reference CSV
    (``job_id,submit_time,start_time,end_time``, as ``accasim_kth.py --save-reference``)."""
    with open(reference, newline="") as handle:
        ref = {int(row["job_id"]): int(float(row["start_time"])) for row in csv.DictReader(handle)}
    mine = {job: start for job, start in zip(ids, starts, strict=True) if start is not None}
    differ = sum(ref.get(job) != start for job, start in mine.items()) + len(set(ref) - set(mine))
    print(
        f"  yardstick vs AccaSim reference {reference.name}: {differ} start-time mismatches"
        f" ({len(ref):,} reference jobs)"
    )
    return differ


def bench(
    trace: Path,
    procs: int,
    preset: str | None,
    scheduler: str,
    repeat: int,
    platforms: list[str] | None = None,
    reference: Path | None = None,
) -> int:
    from market_hpc.workload import read_swf

    jobs = list(read_swf(trace).jobs)
    print(f"== {trace.name}: {len(jobs):,} jobs, {procs} processors, {scheduler}")

    totals, loops = [], []
    for _ in range(repeat):
        gc.collect()
        began = time.perf_counter()
        ids, submit, run, est, p = plain_jobs(jobs)
        mid = time.perf_counter()
        starts = yardstick(submit, run, est, p, procs, scheduler == "easy")
        end = time.perf_counter()
        totals.append(end - began)
        loops.append(end - mid)
    y_total, y_loop = min(totals), min(loops)
    rejected = sum(s is None for s in starts)
    note = f", {rejected} rejected" if rejected else ""
    print(
        f"  yardstick (bare heapq): {y_total:.3f} s best of {repeat}"
        f" (median {statistics.median(totals):.3f} s; event loop alone {y_loop:.3f} s){note}"
    )

    failures = check_reference(ids, starts, reference) if reference is not None else 0
    if not platforms:
        platforms = [f"nodes={procs},cores=1"] + ([preset] if preset else [])
    for platform in platforms:
        results = []
        for _ in range(repeat):
            gc.collect()
            results.append(run_ours(jobs, platform, scheduler))
        frame = results[-1][0]
        run_s = min(r[1] for r in results)
        frame_s = min(r[2] for r in results)
        total_s = min(r[1] + r[2] for r in results)
        median_s = statistics.median(r[1] + r[2] for r in results)
        mismatches, examples = compare(ids, starts, frame)
        failures += mismatches
        print(
            f"  ours --platform {platform}: {total_s:.3f} s best of {repeat}"
            f" (median {median_s:.3f} s; build+run {run_s:.3f} s, jobs_frame {frame_s:.3f} s)"
        )
        print(f"    start-time mismatches vs yardstick: {mismatches}")
        for line in examples:
            print(f"      {line}")
        print(
            f"    ratio ours / yardstick: {total_s / y_total:.2f}x (target <= 5x);"
            f" run only / event loop only: {run_s / y_loop:.2f}x"
        )
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--trace",
        action="append",
        help="'kth', 'hpc2n' or an SWF path (repeatable; default: kth and hpc2n)",
    )
    parser.add_argument(
        "--procs", type=int, help="processors for a trace given by path (default: the largest job)"
    )
    parser.add_argument(
        "--platform",
        action="append",
        help="platform(s) for our side (default: nodes=P,cores=1 and the preset);"
        " any core-level platform of P cores gives the same schedule",
    )
    parser.add_argument(
        "--scheduler", choices=("fifo", "easy"), action="append", help="repeatable; default: both"
    )
    parser.add_argument(
        "--accasim-reference",
        type=Path,
        help="AccaSim FIFO reference CSV of the trace (e.g."
        " /tmp/accasim_kth_reference.csv): also check the yardstick's"
        " FIFO schedule against it",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per measurement (best is shown)"
    )
    args = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    failures = 0
    for name in args.trace or ["kth", "hpc2n"]:
        trace, procs, preset = resolve_trace(name)
        if procs is None:
            if args.procs is None:
                from market_hpc.workload import read_swf

                procs = max(j.units for j in read_swf(trace).jobs)
            else:
                procs = args.procs
        for scheduler in args.scheduler or ["fifo", "easy"]:
            reference = args.accasim_reference if scheduler == "fifo" else None
            failures += bench(
                trace, procs, preset, scheduler, args.repeat, args.platform, reference
            )
    print(f"== total start-time mismatches: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
