"""Pure workload transformations: scale_load, first_n, time_slice."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError
from market_hpc.workload import first_n, scale_load, time_slice


def make_jobs(*submits: float) -> tuple[Job, ...]:
    return tuple(
        Job(i, float(s), 10.0, 20.0, units=2, user=1, queue=3) for i, s in enumerate(submits, 1)
    )


def test_scale_load_compresses_from_first_submit() -> None:
    jobs = make_jobs(100, 100, 130, 400)
    scaled = scale_load(jobs, 3.0)
    assert [j.submit for j in scaled] == [100.0, 100.0, 110.0, 200.0]
    assert [(j.job_id, j.run_time, j.estimate, j.units, j.user, j.queue) for j in scaled] == [
        (j.job_id, j.run_time, j.estimate, j.units, j.user, j.queue) for j in jobs
    ]
    assert [j.submit for j in jobs] == [100.0, 100.0, 130.0, 400.0]


def test_scale_load_uses_earliest_submit_whatever_the_order() -> None:
    jobs = make_jobs(50, 10, 30)
    assert [j.submit for j in scale_load(jobs, 2)] == [30.0, 10.0, 20.0]


def test_scale_load_identity_and_empty() -> None:
    jobs = make_jobs(0, 5, 9)
    assert scale_load(jobs, 1.0) == jobs
    assert scale_load((), 2.0) == ()


@pytest.mark.parametrize("factor", [0, -1.0, math.nan, math.inf, "2"])
def test_scale_load_rejects_bad_factor(factor: object) -> None:
    with pytest.raises(ConfigError, match="load factor: got .*; valid: a finite number > 0"):
        scale_load(make_jobs(0, 1), factor)  # type: ignore[arg-type]


@settings(max_examples=50, deadline=None)
@given(
    submits=st.lists(st.floats(0, 1e7, allow_nan=False), min_size=1, max_size=20),
    factor=st.floats(0.1, 10.0),
)
def test_scale_load_inverts_and_keeps_order(submits: list[float], factor: float) -> None:
    jobs = make_jobs(*sorted(submits))
    scaled = scale_load(jobs, factor)
    assert [j.submit for j in scaled] == sorted(j.submit for j in scaled)
    back = scale_load(scaled, 1 / factor)
    for original, restored in zip(jobs, back, strict=True):
        assert restored.submit == pytest.approx(original.submit, rel=1e-9, abs=1e-6)


def test_first_n() -> None:
    jobs = make_jobs(0, 1, 2, 3)
    assert [j.job_id for j in first_n(jobs, 2)] == [1, 2]
    assert first_n(jobs, 0) == ()
    assert first_n(jobs, 99) == jobs
    assert first_n(list(jobs), 1) == jobs[:1]


@pytest.mark.parametrize("n", [-1, 1.5, True, "3"])
def test_first_n_rejects_bad_n(n: object) -> None:
    with pytest.raises(ConfigError, match="number of jobs must be an integer >= 0"):
        first_n(make_jobs(0), n)  # type: ignore[arg-type]


def test_time_slice_is_half_open() -> None:
    jobs = make_jobs(0, 10, 20, 20, 30, 40)
    assert [j.job_id for j in time_slice(jobs, 10, 30)] == [2, 3, 4]
    assert time_slice(jobs, 20, 20) == ()
    assert [j.job_id for j in time_slice(jobs, 0, math.inf)] == [1, 2, 3, 4, 5, 6]


def test_time_slice_rebase() -> None:
    jobs = make_jobs(0, 10, 25, 30)
    sliced = time_slice(jobs, 10, 30, rebase=True)
    assert [(j.job_id, j.submit) for j in sliced] == [(2, 0.0), (3, 15.0)]
    assert jobs[1].submit == 10.0


@pytest.mark.parametrize(("start", "end"), [(10, 5), (math.nan, 5), (0, math.nan)])
def test_time_slice_rejects_bad_window(start: float, end: float) -> None:
    with pytest.raises(ConfigError, match="time slice needs start <= end"):
        time_slice(make_jobs(0), start, end)
