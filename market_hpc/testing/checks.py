"""The conformance checks: what every policy must do, one small function each.

Each check takes a ``PolicyUnderTest`` (``testing.subject``), runs it on its built-in
workloads (``testing.workloads``) and raises ``AssertionError`` naming the check, the
policy, the workload and what went wrong, e.g. ``check_decisions_are_executable failed
for policy 'easy+first-fit' on workload 'single-core-seed101' (core-level): ...``. A
``MarketHpcError`` raised by a run (the model refusing a decision, a ``PolicyError``) is
reported the same way. ``CHECKS`` lists them in the order ``check_policy`` runs them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from market_hpc.errors import MarketHpcError
from market_hpc.policies.base import Decision
from market_hpc.testing.invariants import assert_schedule_invariants, segments_of
from market_hpc.testing.subject import PolicyUnderTest
from market_hpc.testing.workloads import Workload

if TYPE_CHECKING:
    from market_hpc.core.model import HPCModel

Check = Callable[[PolicyUnderTest], None]
CHECKS: list[Check] = []
"""Every conformance check, in the order ``check_policy`` runs them."""
MARKET_ONLY: set[str] = set()
"""Names of the checks that only market policies get."""
SAME_SEED = 7
PROGRESS_TOLERANCE = 1e-9


def conformance_check(*, market_only: bool = False) -> Callable[[Check], Check]:
    """Register a check in ``CHECKS``; its failures name it and the policy."""

    def register(check: Check) -> Check:
        @functools.wraps(check)
        def run(policy: PolicyUnderTest) -> None:
            try:
                check(policy)
            except AssertionError as failure:
                raise AssertionError(
                    f"{check.__name__} failed for policy {policy.label!r} {failure}"
                ) from failure

        CHECKS.append(run)
        if market_only:
            MARKET_ONLY.add(check.__name__)
        return run

    return register


def applies(check: Check, policy: PolicyUnderTest) -> bool:
    """Whether ``check`` is one ``policy`` gets (market-only checks: market policies)."""
    return policy.market or check.__name__ not in MARKET_ONLY


@contextmanager
def on(workload: Workload, exclusive: bool = False, when: str = "") -> Iterator[None]:
    """Report a failure inside as happening on ``workload``."""
    where = f"on workload {workload.label!r} ({'exclusive' if exclusive else 'core-level'}){when}"
    try:
        yield
    except AssertionError as failure:
        raise AssertionError(f"{where}: {failure}") from None
    except MarketHpcError as error:
        raise AssertionError(f"{where}: {type(error).__name__}: {error}") from None


def executable(policy: PolicyUnderTest, exclusive: bool) -> None:
    for workload in policy.workloads():
        with on(workload, exclusive):
            model = policy.model(workload, exclusive=exclusive, seed=1, record_timeseries=False)
            model.run()
            assert not model.running, f"the run stopped at t={model.now:g} with events left"
            assert_schedule_invariants(
                workload.jobs,
                model.recorder.jobs_frame(),
                workload.platform,
                exclusive=exclusive,
                segments=segments_of(model),
            )


@conformance_check()
def check_decisions_are_executable(policy: PolicyUnderTest) -> None:
    """Whole runs on core-level platforms end without a refused decision, and their
    schedules keep the invariants (``invariants.assert_schedule_invariants``: each job
    listed once and ending once, start >= submit, no node or burst buffer over-allocated,
    work conserved across holds)."""
    executable(policy, exclusive=False)


@conformance_check()
def check_decisions_are_executable_exclusive(policy: PolicyUnderTest) -> None:
    """``check_decisions_are_executable`` with node-exclusive allocation."""
    executable(policy, exclusive=True)


def snapshot(model: HPCModel) -> tuple[Any, ...]:
    """Everything a policy could corrupt through its view."""
    return (
        model.now,
        model.free.copy(),
        model.free_total,
        model.free_bb,
        [job.job_id for job in model.queue_agent.jobs.values()],
        list(model.running_by_end),
        {job_id: agent.status for job_id, agent in model.job_agents.items()},
    )


SNAPSHOT_LABELS = ("time", "free", "free_total", "free_bb", "queue", "running", "statuses")


def assert_same_state(before: tuple[Any, ...], after: tuple[Any, ...]) -> None:
    """Assert two ``snapshot``s are equal, naming the first part that changed."""
    for label, old, new in zip(SNAPSHOT_LABELS, before, after):
        same = np.array_equal(old, new) if label == "free" else old == new
        assert same, f"decide() changed the model's {label}: {old!r} -> {new!r}"


def assert_read_only(view: Any) -> None:
    """Assert the view's free array refuses writes, in place and augmented."""
    free = view.free
    try:
        free[0, 0] = 10**6
    except ValueError:
        pass
    else:
        raise AssertionError("view.free accepted a write (view.free[0, 0] = 10**6)")
    try:
        free += 1
    except ValueError:
        pass
    else:
        raise AssertionError("view.free accepted a write (view.free += 1)")


def view_untouched(policy: PolicyUnderTest, exclusive: bool) -> None:
    probe = policy.make()  # its own instance: the run is not perturbed
    rng = np.random.default_rng(0)
    for workload in policy.workloads():
        model = policy.model(workload, exclusive=exclusive, seed=1, record_timeseries=False)
        probed = 0
        while model.running:
            with on(workload, exclusive):
                model.step()
            if not model.queue_agent.jobs:
                continue
            with on(workload, exclusive, f" at t={model.now:g}"):
                view = model.make_view()
                assert [j.job_id for j in view.queue] == list(model.queue_agent.jobs), (
                    "view.queue is not the model's queue in order"
                )
                ends = [(r.est_end, r.seq) for r in view.running]
                assert ends == sorted(ends), "view.running is not sorted by (est_end, seq)"
                before = snapshot(model)
                decision = probe.decide(view, rng)
                assert isinstance(decision, Decision), (
                    f"decide() returned a {type(decision).__name__}, not a Decision"
                )
                assert_same_state(before, snapshot(model))
                assert_read_only(view)
                assert_same_state(before, snapshot(model))
            probed += 1
        with on(workload, exclusive):
            assert probed > 0, "the queue was never probed (no job ever waited)"


@conformance_check()
def check_decide_does_not_mutate_the_view(policy: PolicyUnderTest) -> None:
    """At every instant with a waiting job, a second instance's ``decide`` on the model's
    view changes nothing of the model (clock, free resources, queue, running jobs,
    statuses), returns a ``Decision``, and the view's arrays refuse writes."""
    view_untouched(policy, exclusive=False)


@conformance_check()
def check_decide_does_not_mutate_the_view_exclusive(policy: PolicyUnderTest) -> None:
    """``check_decide_does_not_mutate_the_view`` with node-exclusive allocation."""
    view_untouched(policy, exclusive=True)


def first_difference(first: pd.DataFrame, second: pd.DataFrame, what: str) -> str | None:
    """The first cell where two frames differ, as a sentence, or ``None``."""
    if first.shape != second.shape or list(first.columns) != list(second.columns):
        return f"{what} has shape {first.shape} then {second.shape}"
    for column in first.columns:
        old, new = first[column].tolist(), second[column].tolist()
        for row, (a, b) in enumerate(zip(old, new)):
            if a != b and not (pd.isna(a) and pd.isna(b)):
                key = f"job {first['job_id'].iloc[row]}" if "job_id" in first else f"row {row}"
                return f"{what}: {key} has {column} {a!r} then {b!r}"
    return None


@conformance_check()
def check_same_seed_same_results(policy: PolicyUnderTest) -> None:
    """Two runs with the same seed give the same jobs and time series, cell for cell."""
    for workload in policy.workloads():
        with on(workload):
            runs = []
            for _ in range(2):
                model = policy.model(workload, seed=SAME_SEED)
                model.run()
                runs.append((model.recorder.jobs_frame(), model.recorder.timeseries_frame()))
            for index, what in enumerate(("jobs", "timeseries")):
                difference = first_difference(runs[0][index], runs[1][index], what)
                assert difference is None, f"two runs with seed {SAME_SEED} differ: {difference}"


@conformance_check(market_only=True)
def check_held_jobs_keep_their_work(policy: PolicyUnderTest) -> None:
    """Market runs: a job's first segment starts at progress 0, each resumed segment at
    the progress its hold left, and a finished job ends at progress 1 (a held job keeps
    its work and does it once)."""
    for workload in policy.workloads():
        with on(workload):
            model = policy.model(workload, seed=1, record_timeseries=False)
            model.run()
            segments = model.recorder.segments_frame().sort_values(["job_id", "start"])
            finished = set(
                model.recorder.jobs_frame().query("status == 'finished'")["job_id"].tolist()
            )
            previous: dict[int, float] = {}
            for job_id, before, after in zip(
                segments["job_id"].tolist(),
                segments["progress_before"].tolist(),
                segments["progress_after"].tolist(),
            ):
                left = previous.get(job_id, 0.0)
                assert abs(before - left) <= PROGRESS_TOLERANCE, (
                    f"job {job_id} resumed at progress {before:.6g} after its hold at progress "
                    f"{left:.6g}: a held job keeps its work"
                    if job_id in previous
                    else f"job {job_id} started at progress {before:.6g}, not 0"
                )
                previous[job_id] = after
            for job_id in sorted(finished):
                done = previous.get(job_id, 0.0)
                assert abs(done - 1.0) <= PROGRESS_TOLERANCE, (
                    f"job {job_id} finished at progress {done:.6g}, not 1"
                )
