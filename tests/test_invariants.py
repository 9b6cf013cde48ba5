"""Schedule invariants on random workloads under every registered classic dispatcher.

Every (non-market) scheduler x allocator pair runs seeded random workloads on single-core
nodes, multi-core nodes with multi-core units (jobs spanning nodes, or each fitting one
node so nodes get packed) and GPU nodes, with core-level and node-exclusive allocation;
each finished run must pass ``assert_schedule_invariants``.
The checker itself is tested on doctored frames so a silent checker cannot pass.
"""

from __future__ import annotations

import itertools
import re

import pandas as pd
import pytest
from invariants import (
    assert_schedule_invariants,
    can_ever_run,
    classic_pairs,
    parse_nodes,
    random_workload,
)

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import load_platform

# name -> (platform spec, unit vectors jobs draw from, whether a job may span nodes)
PLATFORMS = {
    "single-core": ("nodes=8,cores=1", [(1, 0, 0, 0)], True),
    "multi-core": ("nodes=6,cores=4", [(2, 0, 0, 0), (1, 0, 0, 0), (3, 0, 0, 0)], True),
    "multi-core-one-node": ("nodes=6,cores=4", [(2, 0, 0, 0), (1, 0, 0, 0), (3, 0, 0, 0)], False),
    "gpu": ("nodes=4,cores=4,gpus=1", [(1, 0, 0, 0), (2, 1, 0, 0)], True),
}
SEEDS = (11, 12, 13)


def run_model(
    jobs: list[Job], platform: str, scheduler: str, allocator: str, exclusive: bool
) -> tuple[HPCModel, pd.DataFrame]:
    model = HPCModel(
        jobs,
        platform=platform,
        scheduler=scheduler,
        allocator=allocator,
        exclusive=exclusive,
        seed=3,
        record_timeseries=False,
    )
    model.run()
    return model, model.recorder.jobs_frame()


def invariant_cases() -> list[object]:
    cases = []
    for (scheduler, allocator), platform_name, exclusive in itertools.product(
        classic_pairs(), sorted(PLATFORMS), (False, True)
    ):
        mode = "exclusive" if exclusive else "core-level"
        cases.append(
            pytest.param(
                scheduler,
                allocator,
                platform_name,
                exclusive,
                id=f"{scheduler}+{allocator}-{platform_name}-{mode}",
            )
        )
    return cases


@pytest.mark.parametrize(
    ("scheduler", "allocator", "platform_name", "exclusive"), invariant_cases()
)
def test_random_workloads_keep_invariants(
    scheduler: str, allocator: str, platform_name: str, exclusive: bool
) -> None:
    platform, units_from, spanning = PLATFORMS[platform_name]
    for seed in SEEDS:
        jobs = random_workload(seed, platform, units_from, spanning)
        model, frame = run_model(jobs, platform, scheduler, allocator, exclusive)
        assert_schedule_invariants(jobs, frame, platform, exclusive=exclusive)
        # Classic dispatchers never hold or drop: everything that fits finishes.
        assert set(frame["status"]) <= {"finished", "rejected"}, f"seed {seed}"
        assert (frame["hold_count"] == 0).all()
        assert model.recorder.rejected == int((frame["status"] == "rejected").sum())
        assert not model.job_agents and not model.queue_agent.jobs
        assert (model.free == model.platform.capacity).all()


def test_workloads_exercise_what_the_invariants_check() -> None:
    """Guard the generator: rejections, multi-node jobs, ties and short estimates occur."""
    platform, units_from, _ = PLATFORMS["multi-core"]
    jobs = [job for seed in SEEDS for job in random_workload(seed, platform, units_from)]
    fits = [can_ever_run(job, load_platform(platform)) for job in jobs]
    assert not all(fits) and any(fits)
    assert any(job.estimate < job.run_time for job in jobs)
    assert any(job.run_time == 0 for job in jobs)
    assert len({job.submit for job in jobs}) < len(jobs)
    _, frame = run_model(
        random_workload(SEEDS[0], platform, units_from), platform, "easy", "first-fit", False
    )
    assert frame["nodes"].map(lambda text: len(parse_nodes(text)) > 1).any()


# ------------------------------------------------------------ the checker itself
PLATFORM = "nodes=2,cores=2"
JOBS = [
    Job(1, 0.0, 5.0, 5.0, units=2),  # node 0, [0, 5)
    Job(2, 0.0, 5.0, 5.0, units=2),  # node 1, [0, 5)
    Job(3, 1.0, 4.0, 4.0, units=2),  # node 0, [5, 9): starts as 1 ends
    Job(4, 2.0, 1.0, 1.0, units=9),  # too large: rejected
    Job(5, 3.0, 2.0, 2.0, units=1, unit=(2, 0, 0, 0)),  # one 2-core unit
]


@pytest.fixture()
def good_frame() -> pd.DataFrame:
    _, frame = run_model(JOBS, PLATFORM, "fifo", "first-fit", False)
    assert frame.set_index("job_id")["start_time"].to_dict() == pytest.approx(
        {1: 0.0, 2: 0.0, 3: 5.0, 4: float("nan"), 5: 5.0}, nan_ok=True
    )
    return frame


def doctor(frame: pd.DataFrame, job_id: int, **changes: object) -> pd.DataFrame:
    out = frame.copy()
    row = out.index[out["job_id"] == job_id][0]
    for column, value in changes.items():
        out.loc[row, column] = value
    return out


def test_checker_accepts_back_to_back_jobs_on_one_node(good_frame: pd.DataFrame) -> None:
    assert_schedule_invariants(JOBS, good_frame, PLATFORM)


@pytest.mark.parametrize(
    ("job_id", "changes", "message"),
    [
        (3, {"start_time": 4.0, "end_time": 8.0, "wait_time": 3.0}, "node 0 over-allocated at t=4"),
        (5, {"nodes": "0:1"}, "node 0 over-allocated at t=5"),
        (3, {"start_time": 0.0, "end_time": 4.0, "wait_time": -1.0}, "before its submit"),
        (1, {"end_time": 6.0}, "ran 6.0, its run time is 5.0"),
        (1, {"nodes": "0:1"}, "needs 2 units"),
        (2, {"nodes": "1:1;0:1"}, "not distinct increasing nodes"),
        (2, {"nodes": "1:1;2:1"}, "not distinct increasing nodes"),
        (4, {"status": "finished"}, "rejected [] but too large"),
        (1, {"status": "rejected"}, "rejected [1, 4]"),
        (2, {"status": "queued", "start_time": float("nan")}, "non-terminal statuses"),
    ],
)
def test_checker_catches_violations(
    good_frame: pd.DataFrame, job_id: int, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(AssertionError, match=re.escape(message)):
        assert_schedule_invariants(JOBS, doctor(good_frame, job_id, **changes), PLATFORM)


def test_checker_catches_exclusive_sharing(good_frame: pd.DataFrame) -> None:
    # Job 5 (2 of node 1's cores) shares node 1 with job 2 over [3, 5): fine core-level,
    # over-allocation when nodes are exclusive.
    frame = doctor(good_frame, 5, start_time=3.0, end_time=5.0, wait_time=0.0, nodes="1:1")
    with pytest.raises(AssertionError, match="node 1 over-allocated at t=3"):
        assert_schedule_invariants(JOBS, frame, "nodes=2,cores=4", exclusive=True)
    assert_schedule_invariants(JOBS, frame, "nodes=2,cores=4", exclusive=False)


def test_checker_catches_missing_and_duplicate_rows(good_frame: pd.DataFrame) -> None:
    with pytest.raises(AssertionError, match=r"missing \[5\]"):
        assert_schedule_invariants(JOBS, good_frame[good_frame["job_id"] != 5], PLATFORM)
    twice = pd.concat([good_frame, good_frame.iloc[[0]]], ignore_index=True)
    with pytest.raises(AssertionError, match=r"more than once: \[1\]"):
        assert_schedule_invariants(JOBS, twice, PLATFORM)


def test_every_classic_pair_is_covered() -> None:
    pairs = classic_pairs()
    assert {("easy", "first-fit"), ("fifo", "best-fit")} <= set(pairs)
    assert len(pairs) == len(set(pairs))
