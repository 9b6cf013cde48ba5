"""Schedule invariants every simulation must satisfy, checked from its jobs frame alone,
and the seeded random workloads the conformance checks run on.

The checks are written independently of the model: capacities and fits are recomputed
here from the platform with plain integer arithmetic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform, load_platform

TERMINAL = frozenset({"finished", "dropped", "rejected"})
_END, _START = 0, 1  # at equal times, ends are processed before starts


def parse_nodes(text: object) -> list[tuple[int, int]]:
    """``"0:2;5:1"`` -> ``[(0, 2), (5, 1)]``; empty/NaN -> ``[]``."""
    if not isinstance(text, str) or not text:
        return []
    pairs = []
    for item in text.split(";"):
        node, _, units = item.partition(":")
        pairs.append((int(node), int(units)))
    return pairs


def can_ever_run(job: Job, platform: Platform) -> bool:
    """Whether ``job`` fits the empty platform (else it must be rejected on arrival)."""
    if job.bb > platform.burst_buffer:
        return False
    capacity: list[list[int]] = platform.capacity.tolist()
    needed = [(r, amount) for r, amount in enumerate(job.unit) if amount > 0]
    per_node = [min(row[r] // amount for r, amount in needed) for row in capacity]
    if job.moldable:
        return max(per_node) >= 1
    return sum(per_node) >= job.units


def assert_schedule_invariants(
    jobs: Iterable[Job],
    frame: pd.DataFrame,
    platform: Platform | str,
    *,
    exclusive: bool = False,
    segments: pd.DataFrame | None = None,
) -> None:
    """Assert a finished run's jobs frame is a feasible, complete schedule of ``jobs``.

    Checks:
        * every job appears exactly once, with a terminal status;
        * rejected jobs are exactly those that do not fit the empty platform, and they
          never started;
        * started jobs start at or after their submit time, on distinct in-range nodes
          listed in increasing order, with ``job.units`` units for rigid jobs (1 node and
          1..len(profile) units for moldable ones, any nodes for those whose payload sets
          ``spans_nodes``, or ``job.units`` units on any nodes when a rigid policy runs them
          at their requested size); ``wait_time == start - submit``;
        * rigid jobs that finished without ever being held ran exactly their run time;
        * no node is ever over-allocated (sweep over start/end events per node, ends
          before starts at equal times; in ``exclusive`` mode a job takes its nodes'
          whole capacity), nor the shared burst buffer.

    The sweep skips jobs that were held (the frame only holds their first start, last
    end and last allocation) and checks zero-length jobs (start == end) alone against
    the node capacity: their instant of occupancy is not ordered against other jobs
    starting at the same time. Given the run's ``segments``, the run is also audited
    segment by segment (``market_hpc.experiment.audit.audit_frames``: every node and
    resource over every segment, held jobs included, each job ending once, segments in
    order, work conserved across holds).

    Args:
        jobs: The workload the run was given.
        frame: ``model.recorder.jobs_frame()`` (or a ``jobs.csv`` read back).
        platform: The platform (or its spec) the run used.
        exclusive: Whether the run allocated whole nodes.
        segments: ``segments.csv``'s frame of the run (``segments_of(model)``), if any.

    Raises:
        AssertionError: naming the job(s) and the violated invariant.
    """
    platform = load_platform(platform)
    capacity = platform.capacity
    n_nodes = platform.n_nodes
    by_id = {job.job_id: job for job in jobs}

    ids = frame["job_id"].tolist()
    duplicates = sorted({j for j in ids if ids.count(j) > 1})
    assert not duplicates, f"jobs listed more than once: {duplicates}"
    assert set(ids) == set(by_id), (
        f"frame/workload mismatch: missing {sorted(set(by_id) - set(ids))}, "
        f"unknown {sorted(set(ids) - set(by_id))}"
    )
    bad_status = frame.loc[~frame["status"].isin(TERMINAL), ["job_id", "status"]]
    assert bad_status.empty, (
        f"non-terminal statuses (a 'queued' job was still waiting when the run ended): "
        f"{bad_status.values.tolist()}"
    )

    rejected = set(frame.loc[frame["status"] == "rejected", "job_id"].tolist())
    too_large = {j for j, job in by_id.items() if not can_ever_run(job, platform)}
    assert rejected == too_large, (
        f"rejected {sorted(rejected)} but too large for {platform.name!r}: {sorted(too_large)}"
    )

    node_events: dict[int, list[tuple[float, int, int, np.ndarray]]] = defaultdict(list)
    bb_events: list[tuple[float, int, int, float]] = []
    for row in frame.itertuples(index=False):
        job = by_id[row.job_id]
        started = not pd.isna(row.start_time)
        if row.status == "rejected":
            assert not started, f"job {job.job_id} was rejected but started at {row.start_time}"
            continue
        if not started:
            assert row.status == "dropped", f"job {job.job_id} is {row.status} but never started"
            continue
        start, end = float(row.start_time), float(row.end_time)
        assert start >= job.submit, (
            f"job {job.job_id} starts at {start} before its submit {job.submit}"
        )
        assert end >= start, f"job {job.job_id} ends at {end} before it starts at {start}"
        assert row.wait_time == start - job.submit, f"job {job.job_id}: wait_time {row.wait_time}"
        allocation = parse_nodes(row.nodes)
        nodes = [node for node, _ in allocation]
        units = [count for _, count in allocation]
        assert allocation, f"job {job.job_id} started with no allocation"
        assert nodes == sorted(set(nodes)) and 0 <= nodes[0] and nodes[-1] < n_nodes, (
            f"job {job.job_id}: allocation {row.nodes!r} is not distinct increasing nodes "
            f"0..{n_nodes - 1}"
        )
        assert min(units) >= 1, f"job {job.job_id}: allocation {row.nodes!r} has an empty node"
        held = row.hold_count > 0
        if (
            job.moldable
        ):  # molded on one node (on any nodes when it spans), or run at its requested size
            assert job.profile is not None
            spans = len(allocation) == 1 or bool(job.payload.get("spans_nodes"))
            assert (spans and 1 <= sum(units) <= len(job.profile)) or (
                sum(units) == job.units <= len(job.profile)
            ), f"moldable job {job.job_id}: allocation {row.nodes!r}"
        elif not held:
            assert sum(units) == job.units, (
                f"job {job.job_id} needs {job.units} units, got allocation {row.nodes!r}"
            )
            if row.status == "finished":
                assert end - start == job.run_time, (
                    f"job {job.job_id} ran {end - start}, its run time is {job.run_time}"
                )
                assert row.run_time == job.run_time, (
                    f"job {job.job_id}: recorded run_time {row.run_time} != {job.run_time}"
                )
        unit = np.asarray(job.unit, dtype=np.int64)
        for node, count in allocation:
            use = capacity[node].copy() if exclusive else unit * count
            assert (unit * count <= capacity[node]).all(), (
                f"job {job.job_id}: {count} units of {job.unit} exceed node {node} "
                f"capacity {capacity[node].tolist()}"
            )
            if not held and end > start:
                node_events[node].append((start, _START, job.job_id, use))
                node_events[node].append((end, _END, job.job_id, -use))
        if not held and end > start and job.bb > 0:
            bb_events.append((start, _START, job.job_id, job.bb))
            bb_events.append((end, _END, job.job_id, -job.bb))

    for node, events in node_events.items():
        used = np.zeros_like(capacity[node])
        running: set[int] = set()
        for time, kind, job_id, delta in sorted(events, key=lambda e: (e[0], e[1], e[2])):
            used = used + delta
            if kind == _START:
                running.add(job_id)
            else:
                running.discard(job_id)
            assert (used <= capacity[node]).all(), (
                f"node {node} over-allocated at t={time:g}: uses {used.tolist()} of "
                f"{capacity[node].tolist()} with jobs {sorted(running)}"
            )
    bb_used = 0.0
    for time, _, job_id, amount in sorted(bb_events, key=lambda e: (e[0], e[1], e[2])):
        bb_used += amount
        assert bb_used <= platform.burst_buffer + 1e-9, (
            f"burst buffer over-allocated at t={time:g} (job {job_id}): {bb_used} GB of "
            f"{platform.burst_buffer}"
        )
    if segments is not None:
        from market_hpc.experiment.audit import audit_frames

        violation = audit_frames(frame, segments, platform, exclusive=exclusive)
        assert violation is None, f"audit: {violation}"


def segments_of(model: object) -> pd.DataFrame:
    """``segments.csv``'s frame of a finished model's run."""
    from market_hpc.experiment.segments_out import segments_frame

    return segments_frame(model.recorder)  # type: ignore[attr-defined]


def unit_fits(platform_spec: Platform | str, unit: tuple[int, ...]) -> list[int]:
    """Units of ``unit`` each empty node holds."""
    capacity = load_platform(platform_spec).capacity.tolist()
    return [min(row[r] // a for r, a in enumerate(unit) if a > 0) for row in capacity]


def random_workload(
    seed: int,
    platform_spec: Platform | str,
    units_from: Sequence[tuple[int, ...]],
    spanning: bool = True,
    count: int = 40,
) -> list[Job]:
    """Seeded jobs: bursts of equal submit times, zero-length jobs, under- and
    over-estimates, and a few jobs too large for the platform.

    With ``spanning=False`` every job that fits the platform fits one node.
    """
    rng = np.random.default_rng(seed)
    submits = np.cumsum(rng.integers(0, 6, count) * (rng.random(count) < 0.7))
    ids = rng.permutation(count) + 1
    jobs = []
    for job_id, submit in zip(ids.tolist(), submits.tolist()):
        run = int(rng.integers(0, 40))
        if run > 0 and rng.random() < 0.2:
            estimate = int(rng.integers(1, run + 1))  # may be shorter than the run time
        else:
            estimate = run + int(rng.integers(0, 20))
        unit = units_from[int(rng.integers(len(units_from)))]
        fits = unit_fits(platform_spec, unit)
        units = int(rng.integers(1, (sum(fits) if spanning else max(fits)) + 1))
        if rng.random() < 0.07:
            units = sum(fits) + int(rng.integers(1, 4))
        jobs.append(Job(job_id, float(submit), float(run), float(estimate), units=units, unit=unit))
    return jobs
