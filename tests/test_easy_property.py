"""EASY backfilling checked against an independent brute-force implementation.

The reference below follows Mu'alem & Feitelson (IEEE TPDS 12(6), 2001) on a machine of
P identical processors, using an explicit availability profile: a list of
``(time, free processors from then on)`` steps built from running jobs' estimated ends
(a job past its estimate is expected to end now). At each decision instant it

1. starts jobs in queue order while they fit;
2. gives the first job that does not fit (the head) a reservation at the earliest step of
   the profile with enough free processors (the shadow time); the processors still free
   at that step once the head has its share are the extra processors;
3. backfills later jobs, in queue order, that fit now and either end (by their estimate)
   by the shadow time or fit in the extra processors (which they then consume).

It is driven by its own tiny event loop with the model's tie rules: at one instant
completions, then arrivals (same-second arrivals in job-id order), then one decision; a
job that ends at the instant it starts (run time 0) frees its processors at a second pass
over the same instant, which decides again. The clock uses real run times; the
scheduler sees only estimates, which may be shorter than the run time.

On single-core nodes with first-fit every allocation question is a processor count, so
the model's ``easy`` scheduler must give every job exactly the reference start time.
A second property compares single decisions on states reached by a scripted policy
(overdue jobs, ties at the shadow time, jobs started ahead of the head), which finds
reservation mistakes far more often than whole random runs do; a third checks, with exact
estimates, that the head never starts later than the shadow time it had when it first
became head (no backfilled job delays the reservation).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.policies import Decision, Start, make_policy

SETTINGS = settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Spec:
    """A rigid job on single-core nodes: ``procs`` processors."""

    job_id: int
    submit: int
    run: int
    estimate: int
    procs: int

    def to_job(self) -> Job:
        return Job(
            self.job_id, float(self.submit), float(self.run), float(self.estimate), units=self.procs
        )


@dataclass
class Instance:
    processors: int
    specs: list[Spec]

    @property
    def platform(self) -> str:
        return f"nodes={self.processors},cores=1"


# ---------------------------------------------------------------- the reference
def availability_profile(
    now: float, free_now: int, running: Sequence[tuple[float, int]]
) -> list[tuple[float, int]]:
    """Steps ``(time, free processors from then on)`` with strictly increasing times.

    Args:
        now: The decision instant.
        free_now: Processors free now.
        running: ``(estimated end, processors)`` of every running job.
    """
    steps = [(now, free_now)]
    for end, procs in sorted((max(end, now), procs) for end, procs in running):
        time, free = steps[-1]
        if end == time:
            steps[-1] = (time, free + procs)
        else:
            steps.append((end, free + procs))
    return steps


def reservation(profile: Sequence[tuple[float, int]], need: int) -> tuple[float, int]:
    """Shadow time and extra processors of a head job needing ``need`` processors."""
    for time, free in profile:
        if free >= need:
            return time, free - need
    raise AssertionError(f"profile {profile} never has {need} processors")


@dataclass
class ReferenceDecision:
    started: list[Spec] = field(default_factory=list)
    head: Spec | None = None
    shadow: float | None = None


def reference_easy_decide(
    now: float, queue: Sequence[Spec], running: Sequence[tuple[float, int]], processors: int
) -> ReferenceDecision:
    """One EASY decision; ``running`` holds ``(estimated end, procs)`` of running jobs."""
    out = ReferenceDecision()
    free = processors - sum(procs for _, procs in running)
    running = list(running)
    position = 0
    while position < len(queue) and queue[position].procs <= free:
        job = queue[position]
        out.started.append(job)
        running.append((now + job.estimate, job.procs))
        free -= job.procs
        position += 1
    if position == len(queue):
        return out
    head = queue[position]
    shadow, extra = reservation(availability_profile(now, free, running), head.procs)
    out.head, out.shadow = head, shadow
    for job in queue[position + 1 :]:
        if job.procs > free:
            continue
        if now + job.estimate <= shadow:
            pass
        elif job.procs <= extra:
            extra -= job.procs
        else:
            continue
        out.started.append(job)
        free -= job.procs
    return out


def reference_simulation(instance: Instance) -> tuple[dict[int, float], dict[int, float]]:
    """Run the reference EASY to completion.

    Returns:
        ``(start time per job id, shadow time per job id when it first became head)``.
    """
    arrivals = sorted(instance.specs, key=lambda s: (s.submit, s.job_id))
    next_arrival = 0
    queue: list[Spec] = []
    running: dict[int, tuple[Spec, float]] = {}
    completions: list[tuple[float, int]] = []
    starts: dict[int, float] = {}
    first_shadow: dict[int, float] = {}
    while next_arrival < len(arrivals) or completions:
        now = min(
            completions[0][0] if completions else float("inf"),
            arrivals[next_arrival].submit if next_arrival < len(arrivals) else float("inf"),
        )
        changed = False
        while completions and completions[0][0] == now:
            _, job_id = heapq.heappop(completions)
            del running[job_id]
            changed = True
        while next_arrival < len(arrivals) and arrivals[next_arrival].submit == now:
            queue.append(arrivals[next_arrival])
            next_arrival += 1
            changed = True
        if not (changed and queue):
            continue
        estimated = [(start + spec.estimate, spec.procs) for spec, start in running.values()]
        decision = reference_easy_decide(now, queue, estimated, instance.processors)
        if decision.head is not None:
            assert decision.shadow is not None
            first_shadow.setdefault(decision.head.job_id, decision.shadow)
        for job in decision.started:
            queue.remove(job)
            running[job.job_id] = (job, now)
            starts[job.job_id] = now
            heapq.heappush(completions, (now + job.run, job.job_id))
        assert sum(spec.procs for spec, _ in running.values()) <= instance.processors
    assert not queue, "reference left jobs waiting"
    return starts, first_shadow


# ------------------------------------------------------------------- the model
class HeadShadowRecorder:
    """Wraps a dispatcher; records, at every decision, the head's shadow time.

    The head is the first queued job the decision leaves waiting; its shadow time is
    computed with the reference profile from the running jobs plus the jobs the
    decision starts ahead of it (they run from now for their estimate).
    """

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[attr-defined]
        self.first_shadow: dict[int, float] = {}

    def decide(self, view, rng: np.random.Generator) -> Decision:  # type: ignore[no-untyped-def]
        decision = self.inner.decide(view, rng)  # type: ignore[attr-defined]
        started = {a.job_id for a in decision.actions if isinstance(a, Start)}
        queue = list(view.queue)
        ahead = 0
        while ahead < len(queue) and queue[ahead].job_id in started:
            ahead += 1
        if ahead < len(queue):
            head = queue[ahead]
            now = view.time
            running = [(view.expected_end(r), r.units) for r in view.running]
            running += [(now + job.estimate, job.units) for job in queue[:ahead]]
            free_now = int(view.free[:, 0].sum()) - sum(job.units for job in queue[:ahead])
            shadow, _ = reservation(availability_profile(now, free_now, running), head.units)
            self.first_shadow.setdefault(head.job_id, shadow)
        return decision


def model_starts(instance: Instance, policy: object | None = None) -> dict[int, float]:
    jobs = [spec.to_job() for spec in instance.specs]
    if policy is None:
        model = HPCModel(
            jobs,
            platform=instance.platform,
            scheduler="easy",
            allocator="first-fit",
            record_timeseries=False,
        )
    else:
        model = HPCModel(
            jobs,
            platform=instance.platform,
            policy=policy,  # type: ignore[arg-type]
            record_timeseries=False,
        )
    model.run()
    frame = model.recorder.jobs_frame()
    assert frame["job_id"].tolist() == sorted(s.job_id for s in instance.specs)
    assert (frame["status"] == "finished").all()
    runs = {s.job_id: s.run for s in instance.specs}
    for job_id, start, end in zip(frame["job_id"], frame["start_time"], frame["end_time"]):
        assert end - start == runs[job_id]
    return dict(zip(frame["job_id"].tolist(), frame["start_time"].tolist()))


# ------------------------------------------------------------------ strategies
@st.composite
def instances(draw: st.DrawFn, exact_estimates: bool = False) -> Instance:
    processors = draw(st.integers(2, 8))
    count = draw(st.integers(1, 12))
    ids = draw(st.permutations(range(1, count + 1)))
    # Half the instances are dense: arrivals within a few seconds and few distinct run
    # times, so queues build up and running jobs often end together (ties at the shadow
    # time); the others spread over the whole ranges.
    dense = draw(st.booleans())
    specs = []
    for job_id in ids:
        submit = draw(st.integers(0, 3) if dense else st.integers(0, 20))
        run = draw(st.sampled_from([1, 2, 4, 6]) if dense else st.integers(0, 15))
        if exact_estimates:
            estimate = run
        elif run > 0 and draw(st.integers(0, 3)) == 0:
            estimate = draw(st.integers(0, run - 1))  # the job outlives its estimate
        else:
            estimate = run + draw(st.sampled_from([0, 0, 1, 3, 10]))
        procs = draw(st.integers(1, processors))
        specs.append(Spec(job_id, submit, run, estimate, procs))
    return Instance(processors, specs)


@dataclass
class DecisionInstant:
    """A state at ``NOW``: jobs already running (with estimated ends, some overdue) and
    jobs waiting, reached in a real model by a scripted policy."""

    processors: int
    running: list[Spec]  # submit, estimate and procs; they run far past NOW
    waiting: list[Spec]


NOW = 10


@st.composite
def decision_instants(draw: st.DrawFn) -> DecisionInstant:
    processors = draw(st.integers(2, 8))
    running, used, job_id = [], 0, 0
    for _ in range(draw(st.integers(0, 5))):
        if used >= processors - 1:
            break  # keep a processor free: backfilling needs room now
        procs = draw(st.integers(1, processors - 1 - used))
        used += procs
        # Few distinct estimated ends: ties at the shadow time, overdue jobs (end < NOW).
        end = draw(
            st.one_of(
                st.sampled_from([NOW - 2, NOW, NOW + 3, NOW + 5, NOW + 5]),
                st.integers(NOW - 5, NOW + 15),
            )
        )
        submit = draw(st.integers(0, min(NOW - 1, end)))
        job_id += 1
        running.append(Spec(job_id, submit, 1000, end - submit, procs))
    waiting = []
    for _ in range(draw(st.integers(1, 8))):
        job_id += 1
        estimate = draw(st.one_of(st.sampled_from([0, 3, 5, 5, 8]), st.integers(0, 20)))
        waiting.append(
            Spec(
                job_id,
                draw(st.integers(0, NOW)),
                estimate,
                estimate,
                draw(st.integers(1, processors)),
            )
        )
    order = draw(st.permutations(range(1, job_id + 1)))  # job ids independent of roles
    rename = dict(zip(range(1, job_id + 1), order))
    return DecisionInstant(
        processors,
        [Spec(rename[s.job_id], s.submit, s.run, s.estimate, s.procs) for s in running],
        [Spec(rename[s.job_id], s.submit, s.run, s.estimate, s.procs) for s in waiting],
    )


class ScriptedThenEasy:
    """Starts the ``running`` jobs on arrival (first free nodes) until ``NOW``, where it
    asks the real EASY for its first decision and records it with the view's queue."""

    name = "scripted-then-easy"

    def __init__(self, running_ids: set[int]) -> None:
        self.running_ids = running_ids
        self.easy = make_policy("easy", "first-fit")
        self.seen: tuple[list[int], list[int]] | None = None

    def decide(self, view, rng: np.random.Generator) -> Decision:  # type: ignore[no-untyped-def]
        if view.time < NOW:
            free_nodes = [int(n) for n in np.flatnonzero(view.free[:, 0])]
            actions = []
            for job in view.queue:
                if job.job_id in self.running_ids:
                    nodes, free_nodes = free_nodes[: job.units], free_nodes[job.units :]
                    actions.append(Start(job.job_id, tuple((n, 1) for n in nodes)))
            return Decision(tuple(actions), wake_at=NOW)
        assert view.time == NOW
        if self.seen is not None:
            return Decision()  # a zero-length job ended at NOW: one decision is enough
        decision = self.easy.decide(view, rng)
        started = [a.job_id for a in decision.actions if isinstance(a, Start)]
        self.seen = ([job.job_id for job in view.queue], started)
        return decision


def describe(instance: Instance) -> str:
    return f"P={instance.processors} " + ", ".join(
        f"#{s.job_id}(submit={s.submit} run={s.run} est={s.estimate} procs={s.procs})"
        for s in instance.specs
    )


# ---------------------------------------------------------- hand-checked cases
def test_reference_profile_merges_equal_ends_and_clamps_overdue_jobs() -> None:
    profile = availability_profile(5.0, 1, [(10.0, 2), (3.0, 1), (10.0, 1), (20.0, 4)])
    assert profile == [(5.0, 2), (10.0, 5), (20.0, 9)]
    assert reservation(profile, 4) == (10.0, 1)
    assert reservation(profile, 2) == (5.0, 0)


def test_reference_backfills_only_without_delaying_the_head() -> None:
    # 4 processors, 3 busy until 10; head needs 4 -> shadow 10, extra 0.
    queue = [Spec(1, 0, 5, 5, 4), Spec(2, 0, 12, 12, 1), Spec(3, 0, 9, 9, 1)]
    decision = reference_easy_decide(0.0, queue, [(10.0, 3)], 4)
    assert decision.head == queue[0] and decision.shadow == 10.0
    assert decision.started == [queue[2]]


def test_model_matches_reference_on_a_plain_backfill() -> None:
    instance = Instance(
        4, [Spec(1, 0, 10, 10, 3), Spec(2, 1, 5, 5, 4), Spec(3, 2, 12, 12, 1), Spec(4, 2, 8, 8, 1)]
    )
    starts, _ = reference_simulation(instance)
    assert starts == {1: 0, 2: 10, 3: 15, 4: 2}
    assert model_starts(instance) == starts


def test_model_matches_reference_when_a_job_outlives_its_estimate() -> None:
    # Job 1 estimates 2 but runs 10: from t=2 on it is expected to end "now", so the
    # head's shadow is now and only zero-length or extra-fitting jobs may backfill.
    instance = Instance(2, [Spec(1, 0, 10, 2, 2), Spec(2, 3, 4, 4, 2), Spec(3, 4, 1, 1, 1)])
    starts, _ = reference_simulation(instance)
    assert starts == {1: 0, 2: 10, 3: 14}
    assert model_starts(instance) == starts


def test_model_reservation_counts_jobs_started_in_the_same_decision() -> None:
    # Regression: the reservation once ignored jobs started earlier in the same decision.
    # t=0: job 1 (2 of 4 procs, 10 s) starts; job 2 needs 4 -> shadow 10, extra 0.
    # Job 3 (1 proc, 100 s) must not backfill: it would push job 2 to t=100.
    instance = Instance(4, [Spec(1, 0, 10, 10, 2), Spec(2, 0, 5, 5, 4), Spec(3, 0, 100, 100, 1)])
    starts, _ = reference_simulation(instance)
    assert starts == {1: 0, 2: 10, 3: 15}
    assert model_starts(instance) == starts


def test_model_extra_counts_every_job_ending_at_the_shadow_time() -> None:
    # Regression: extra once stopped at the first release reaching the head's need.
    # t=1: 1 of 5 procs free, jobs 1 and 2 (2 procs each) both end at 10; head 3 needs
    # 3 -> shadow 10, extra 5 - 3 = 2, so job 4 (1 proc, long) backfills at t=1.
    instance = Instance(
        5,
        [
            Spec(1, 0, 10, 10, 2),
            Spec(2, 0, 10, 10, 2),
            Spec(3, 1, 5, 5, 3),
            Spec(4, 1, 100, 100, 1),
        ],
    )
    starts, _ = reference_simulation(instance)
    assert starts == {1: 0, 2: 0, 3: 10, 4: 1}
    assert model_starts(instance) == starts


# ------------------------------------------------------------------ properties
@SETTINGS
@given(instances())
def test_model_start_times_match_reference_easy(instance: Instance) -> None:
    expected, _ = reference_simulation(instance)
    actual = model_starts(instance)
    mismatched = {j: (actual[j], expected[j]) for j in expected if actual[j] != expected[j]}
    assert not mismatched, f"{describe(instance)}: (model, reference) starts {mismatched}"


@SETTINGS
@given(instances(exact_estimates=True))
def test_reference_never_delays_the_head_reservation(instance: Instance) -> None:
    starts, first_shadow = reference_simulation(instance)
    late = {j: (starts[j], s) for j, s in first_shadow.items() if starts[j] > s}
    assert not late, f"{describe(instance)}: (start, first shadow) {late}"


@SETTINGS
@given(instances(exact_estimates=True))
def test_model_backfilling_never_delays_the_head_reservation(instance: Instance) -> None:
    recorder = HeadShadowRecorder(make_policy("easy", "first-fit"))
    starts = model_starts(instance, recorder)
    late = {j: (starts[j], s) for j, s in recorder.first_shadow.items() if starts[j] > s}
    assert not late, f"{describe(instance)}: (start, first shadow) {late}"


@settings(SETTINGS, max_examples=500)
@given(decision_instants())
def test_one_easy_decision_matches_reference(instant: DecisionInstant) -> None:
    jobs = [spec.to_job() for spec in instant.running + instant.waiting]
    policy = ScriptedThenEasy({spec.job_id for spec in instant.running})
    model = HPCModel(
        jobs, platform=f"nodes={instant.processors},cores=1", policy=policy, record_timeseries=False
    )
    model.run(until=NOW)
    assert policy.seen is not None, "no decision at NOW"
    queue_ids, started = policy.seen
    queue = sorted(instant.waiting, key=lambda s: (s.submit, s.job_id))
    assert queue_ids == [s.job_id for s in queue]
    estimated = [(s.submit + s.estimate, s.procs) for s in instant.running]
    expected = reference_easy_decide(NOW, queue, estimated, instant.processors)
    assert started == [s.job_id for s in expected.started], (
        f"P={instant.processors} running (end, procs) {estimated}; queue "
        f"{[(s.job_id, s.estimate, s.procs) for s in queue]}"
    )
