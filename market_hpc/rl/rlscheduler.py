"""RLScheduler's evaluation protocol, exactly (Zhang et al., SC'20, and its released code,
``DIR-LAB/deep-batch-scheduler``: ``HPCSimPickJobs.py``, ``job.py``, ``cluster.py``).

Three pieces, each reproducing that code's behaviour rather than the paper's prose:

- **the draw** (:func:`rlscheduler_starts`): ``env.seed(seed)`` with gym's 2019 seeding
  (:func:`gym_np_random`: the seed hashed with SHA-512, a legacy ``RandomState``), then per
  sequence ``np_random.randint(length, n_jobs - length - 1)``; sequence ``i`` is the
  ``length`` jobs from that index. ``compare-pick-jobs.py`` seeds with 1 by default;
- **the jobs** (:func:`read_rlscheduler_trace`): processors ``max(allocated, requested)``,
  requested time field 9 (the run time when -1), a negative run time counted as 10 s,
  jobs with a run time of 0 left out; the machine is the header's ``MaxNodes`` nodes of
  ``MaxProcs / MaxNodes`` processors, a job taking ``ceil(processors / per node)`` nodes;
- **the semantics** (:func:`schedule_sequence`): the queue is sorted by the score, the
  first job is chosen and *waits until it fits*: nothing else starts meanwhile, or with
  backfilling, jobs in submit order that end (by their request) before the chosen job's
  earliest start, computed once when it was chosen from the running jobs' requests.
  Arrivals enter the queue one at a time (an arrival first when it ties a completion);
  when the queue is empty, the next arrival is chosen alone.

The project's own semantics (``HPCModel`` and its registered schedulers: a head does not
stick, EASY uses the extra processors) stay the default everywhere else; this module is
what ``semantics = "rlscheduler"`` runs (``rl.evaluate``, ``examples/rlscheduler_table5.py``).
"""

from __future__ import annotations

import gzip
import hashlib
import math
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.errors import ConfigError
from market_hpc.workload.swf import header_lines, parse_fast

SCORES = ("fcfs", "sjf", "f1", "wfp3", "unicep")
"""The heuristics :func:`schedule_sequence` runs, as RLScheduler's ``*_score`` functions."""
WAITS = ("real", "rlscheduler")
"""How WFP3 and UNICEP read a waiting job's wait: ``now - submit`` or RLScheduler's
``scheduled_time - submit`` of an unscheduled job (``-1 - submit``)."""


def gym_np_random(seed: int) -> np.random.RandomState:
    """A ``RandomState`` seeded as gym's 2019 ``seeding.np_random(seed)`` seeds it.

    The seed (mod 2^64) is hashed with SHA-512; its first 8 bytes, padded with 4 zero bytes,
    are read as three native 32-bit words into an integer, whose 32-bit digits (least
    significant first) seed the legacy Mersenne Twister.

    >>> int(gym_np_random(1).randint(1024, 10_000 - 1024 - 1))  # its first HPC2N sequence
    1981
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed: got {seed!r}; valid: a non-negative integer")
    digest = hashlib.sha512(str(seed % 2**64).encode("utf8")).digest()[:8] + b"\0" * 4
    words = struct.unpack("3I", digest)
    big = sum(word << (32 * i) for i, word in enumerate(words))
    digits: list[int] = []
    while big > 0:
        big, digit = divmod(big, 2**32)
        digits.append(digit)
    rng = np.random.RandomState()
    rng.seed(digits or [0])
    return rng


def rlscheduler_starts(
    n_jobs: int, length: int, count: int, seed: int = 1, batch_job_slice: int = 0
) -> list[int]:
    """The first index of each of ``count`` sequences RLScheduler's ``reset_for_test`` draws
    after ``env.seed(seed)``, in draw order: ``randint(length, m - length - 1)`` with ``m``
    the trace's job count, or ``batch_job_slice`` when positive (its ``make_table_script.py``
    passes 10,000 for HPC2N and SDSC-SP2, 0 for the Lublin traces).

    >>> rlscheduler_starts(202_876, 1024, 3, seed=1, batch_job_slice=10_000)
    [1981, 2756, 4299]
    """
    span = min(batch_job_slice, n_jobs) if batch_job_slice > 0 else n_jobs
    if span - length - 1 <= length:
        raise ConfigError(
            f"--jobs: {length}-job sequences need a range of more than "
            f"{2 * length + 1} jobs; got {span}"
        )
    rng = gym_np_random(seed)
    return [int(rng.randint(length, span - length - 1)) for _ in range(count)]


@dataclass(frozen=True)
class RLTrace:
    """A trace as RLScheduler reads it: one entry per kept job, in job-id order."""

    job_id: tuple[int, ...]
    submit: tuple[int, ...]
    run: tuple[int, ...]
    request: tuple[int, ...]
    procs: tuple[int, ...]
    max_nodes: int
    max_procs: int

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def widest(self) -> int:
        """Index of the job requesting the most processors (the first of equals)."""
        return int(np.argmax(self.procs))


def _header_value(lines: Sequence[str], key: str) -> int:
    for line in lines:
        if line.startswith(f"; {key}:"):
            try:
                return int(line.split(":")[1].strip())
            except ValueError:
                return 0
    return 0


def _trace_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError) as exc:
        raise ConfigError(
            f"cannot read trace {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None


def read_rlscheduler_trace(path: str) -> RLTrace:
    """Read an SWF trace as RLScheduler's ``job.Workloads`` does (see the module docstring).

    Raises:
        ConfigError: The file cannot be read or parsed as 18-field SWF lines.
    """
    data = _trace_bytes(path)
    rows = parse_fast(data)
    if rows is None:
        raise ConfigError(
            f"{path}: not a regular 18-field SWF trace (market-hpc trace info {path} "
            f"names the irregular lines)"
        )
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    run = rows[:, 3].astype(np.int64)
    run = np.where(run < 0, 10, run)
    request = rows[:, 8].astype(np.int64)
    request = np.where(request == -1, rows[:, 3].astype(np.int64), request)
    procs = np.maximum(rows[:, 4], rows[:, 7]).astype(np.int64)
    kept = run > 0
    header = header_lines(data)
    max_nodes, max_procs = _header_value(header, "MaxNodes"), _header_value(header, "MaxProcs")
    return RLTrace(
        tuple(rows[kept, 0].astype(np.int64).tolist()),
        tuple(rows[kept, 1].astype(np.int64).tolist()),
        tuple(run[kept].tolist()),
        tuple(request[kept].tolist()),
        tuple(procs[kept].tolist()),
        max_nodes,
        max_procs or max_nodes,
    )


def _static_scores(
    score: str, submit: list[int], request: list[int], procs: list[int]
) -> list[tuple[float, ...]]:
    if score == "fcfs":
        return [(float(s),) for s in submit]
    if score == "sjf":
        return [(float(r), float(s)) for r, s in zip(request, submit, strict=True)]
    r = np.log10(np.where(np.array(request) > 0, np.array(request, dtype=float), 0.1))
    s = np.log10(np.where(np.array(submit) > 0, np.array(submit, dtype=float), 0.1))
    return [(float(v),) for v in r * np.array(procs) + 870 * s]


def _dynamic_score(
    score: str, wait: str, submit: list[int], request: list[int], procs: list[int]
) -> Callable[[int, int], float]:
    def waited(job: int, now: int) -> float:
        return float(now - submit[job] if wait == "real" else -1 - submit[job])

    def wfp3(job: int, now: int) -> float:
        req = request[job] if request[job] > 0 else 0.1
        return float(-np.power(waited(job, now) / req, 3) * procs[job])

    def unicep(job: int, now: int) -> float:
        req = request[job] if request[job] > 0 else 0.1
        return float(-(waited(job, now) + 1e-15) / (np.log2(procs[job] + 1e-15) * req))

    return wfp3 if score == "wfp3" else unicep


def check_machine(
    trace: RLTrace, starts: Sequence[int], length: int, nodes: int, per_node: float, source: str
) -> None:
    """Refuse a machine narrower than a job of the sequences, naming the job."""
    total = nodes * per_node
    for start in starts:
        for index in range(start, start + length):
            if math.ceil(trace.procs[index] / per_node) > nodes:
                raise ConfigError(
                    f"{source}: job {trace.job_id[index]} requests {trace.procs[index]} "
                    f"processors; "
                    f"the platform has {total:g} ({nodes} nodes); valid: a platform of at least "
                    f"{trace.procs[index]} processors"
                )


def schedule_sequence(
    trace: RLTrace,
    start: int,
    length: int,
    score: str,
    backfill: bool,
    nodes: int,
    per_node: float,
    wait: str = "real",
) -> list[float]:
    """Run ``length`` jobs from ``start`` as RLScheduler's ``schedule_curr_sequence_reset``
    does, from an empty machine of ``nodes`` nodes of ``per_node`` processors.

    Args:
        trace: The jobs (:func:`read_rlscheduler_trace`).
        start: Index of the sequence's first job.
        length: Jobs in the sequence.
        score: One of :data:`SCORES`.
        backfill: RLScheduler's backfilling around the chosen job.
        nodes: Nodes of the machine.
        per_node: Processors per node.
        wait: How WFP3 and UNICEP read the wait (:data:`WAITS`).

    Returns:
        Each job's bounded slowdown ``max(1, (wait + run) / max(run, 10))``, in start order.
    """
    if score not in SCORES:
        raise ConfigError(f"score: got {score!r}; valid: {', '.join(SCORES)}")
    if wait not in WAITS:
        raise ConfigError(f"wait: got {wait!r}; valid: {', '.join(WAITS)}")
    stop = start + length
    submit, run = list(trace.submit[start:stop]), list(trace.run[start:stop])
    request, procs = list(trace.request[start:stop]), list(trace.procs[start:stop])
    need = [math.ceil(p / per_node) for p in procs]
    check_machine(trace, [start], length, nodes, per_node, "platform")
    key: Callable[[int], tuple[float, ...]]
    if score in ("fcfs", "sjf", "f1"):
        static = _static_scores(score, submit, request, procs)
        key = static.__getitem__
    else:
        dynamic = _dynamic_score(score, wait, submit, request, procs)
    scheduled = [-1] * length
    bsld: list[float] = []
    queue, running = [0], []
    state = {"now": submit[0], "free": nodes, "next": 1}

    def real_end(job: int) -> int:
        return scheduled[job] + run[job]

    def begin(job: int) -> None:
        scheduled[job] = state["now"]
        state["free"] -= need[job]
        running.append(job)
        bsld.append(max(1.0, (scheduled[job] - submit[job] + run[job]) / max(run[job], 10)))
        queue.remove(job)

    def advance() -> None:
        # One event: the next arrival if it comes no later than the next completion.
        running.sort(key=real_end)
        release = real_end(running[0])
        upcoming = state["next"]
        if upcoming < length and submit[upcoming] <= release:
            state["now"] = max(state["now"], submit[upcoming])
            queue.append(upcoming)
            state["next"] += 1
        else:
            state["now"] = max(state["now"], release)
            state["free"] += need[running.pop(0)]

    while True:
        if score in ("wfp3", "unicep"):
            now = state["now"]
            queue.sort(key=lambda job: dynamic(job, now))
        else:
            queue.sort(key=key)
        chosen = queue[0]
        if need[chosen] > state["free"]:
            earliest = state["now"]
            if backfill:
                running.sort(key=lambda job: scheduled[job] + request[job])
                free = state["free"] * per_node
                for job in running:
                    free += need[job] * per_node
                    earliest = scheduled[job] + request[job]
                    if free >= procs[chosen]:
                        break
            while need[chosen] > state["free"]:
                if backfill:
                    queue.sort(key=submit.__getitem__)
                    for job in queue.copy():  # begin() removes from the queue
                        if state["now"] + request[job] < earliest and need[job] <= state["free"]:
                            begin(job)
                advance()
        begin(chosen)
        if not queue:
            if state["next"] >= length:
                break
            while not queue:
                release = sys.maxsize  # as RLScheduler: always add jobs when none runs
                if running:
                    running.sort(key=real_end)
                    release = real_end(running[0])
                if submit[state["next"]] <= release:
                    state["now"] = max(state["now"], submit[state["next"]])
                    queue.append(state["next"])
                    state["next"] += 1
                else:
                    state["now"] = max(state["now"], release)
                    state["free"] += need[running.pop(0)]
    return bsld


def sequence_bsld(
    trace: RLTrace,
    start: int,
    length: int,
    score: str,
    backfill: bool,
    nodes: int,
    per_node: float,
    wait: str = "real",
) -> float:
    """The mean bounded slowdown of one sequence (:func:`schedule_sequence`), summed as
    RLScheduler sums it (each job's value divided by ``length``)."""
    return sum(
        value / length
        for value in schedule_sequence(trace, start, length, score, backfill, nodes, per_node, wait)
    )


def project_jobs(trace: RLTrace, start: int, length: int) -> list[Job]:
    """The sequence as the project's jobs (cores only), so both semantics run the same jobs:
    RLScheduler's processors, run time and request (a request below 0 read as 0, fewer
    than one processor as one)."""
    stop = start + length
    return [
        Job(job_id, float(submit), float(run), float(max(request, 0)), units=max(procs, 1))
        for job_id, submit, run, request, procs in zip(
            trace.job_id[start:stop],
            trace.submit[start:stop],
            trace.run[start:stop],
            trace.request[start:stop],
            trace.procs[start:stop],
            strict=True,
        )
    ]


def machine(trace: RLTrace, platform: Platform | None, source: str) -> tuple[int, float]:
    """RLScheduler's machine, ``(nodes, processors per node)``: the trace header's, or the
    platform's nodes with its cores spread evenly; refused when narrower than the trace's
    widest job (naming it)."""
    if platform is None:
        if trace.max_nodes <= 0:
            raise ConfigError(
                f"{source}: the header has no MaxNodes or MaxProcs; valid: pass "
                f"--platform (a preset or nodes=N,cores=C)"
            )
        nodes, per_node = trace.max_nodes, trace.max_procs / trace.max_nodes
    else:
        nodes, per_node = platform.n_nodes, platform.total_cores / platform.n_nodes
    widest = trace.widest
    if len(trace) and math.ceil(trace.procs[widest] / per_node) > nodes:
        shown = platform.describe() if platform is not None else "the trace header's machine"
        raise ConfigError(
            f"--platform {shown}: job {trace.job_id[widest]} of {source} requests "
            f"{trace.procs[widest]} processors, the platform has {nodes * per_node:g}; "
            f"valid: a platform of at least {trace.procs[widest]} cores"
        )
    return nodes, per_node
