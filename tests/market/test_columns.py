"""MarketColumns prices every queued job exactly as the scalar code does, bit for bit."""

from __future__ import annotations

import numpy as np

from market_hpc.algorithms.market.columns import MarketColumns
from market_hpc.algorithms.market.maths import c_star, profit, remaining_time
from market_hpc.algorithms.valuecurve import (
    ExponentialCurve,
    LinearDecayCurve,
    PiecewiseLinearCurve,
    StepCurve,
)
from market_hpc.domain.job import Job


def _curve(rng: np.random.Generator, kind: int):  # type: ignore[no-untyped-def]
    vmax = float(rng.uniform(1.0, 900.0))
    plateau = float(rng.choice([rng.uniform(0.0, 50.0), rng.integers(0, 50)]))
    width = float(rng.uniform(0.5, 90.0))
    if kind == 0:
        return LinearDecayCurve(vmax, plateau, plateau + width)
    if kind == 1:
        return StepCurve(vmax, plateau)
    if kind == 2:
        return ExponentialCurve(vmax, plateau, tau=width / 4.0, floor=0.01)
    return PiecewiseLinearCurve(((0.0, vmax), (plateau, vmax / 2.0), (plateau + width, 0.0)))


def _job(rng: np.random.Generator, job_id: int, submit: float) -> Job:
    tasks = int(rng.integers(1, 12))
    work = float(rng.uniform(5.0, 80.0))
    profile = tuple(max(work / c, work / 4.0) for c in range(1, tasks + 1))
    curve = _curve(rng, int(rng.choice(4, p=[0.55, 0.2, 0.15, 0.1])))
    return Job(
        job_id, submit, 1.0, 1.0, units=tasks, profile=profile, payload={"value_curve": curve}
    )


def test_columns_price_like_the_scalar_code_through_pushes_and_takes() -> None:
    rng = np.random.default_rng(11)
    columns = MarketColumns()
    queue: dict[int, tuple[Job, float, int]] = {}  # queue order = insertion order
    next_id = 1
    for step in range(400):
        now = float(step) / 2.0
        if queue and rng.random() < 0.45:
            job_id = int(rng.choice(list(queue)))
            del queue[job_id]
            columns.take(job_id)
        else:
            progress = float(rng.choice([0.0, 0.0, 0.3, 0.71]))
            holds = int(progress > 0)
            job = _job(rng, next_id, now if holds == 0 else float(rng.uniform(0, now + 1)))
            queue[next_id] = (job, progress, holds)
            columns.push(job, progress, holds)
            next_id += 1
        assert len(columns) == len(queue)
        rows = [columns.position[job_id] for job_id in queue]
        assert columns.order[rows].tolist() == sorted(
            columns.order[rows].tolist()
        )  # queue order kept
        if not queue:
            continue
        bid = int(rng.integers(1, 12))
        cores = np.minimum(columns.best, bid)
        elapsed = (now + columns.fastest) - columns.arrival
        values, rests = columns.values(elapsed), columns.remaining_values(now - columns.arrival)
        on_bid = columns.values_on(now, cores)
        gains, gain_cores = columns.gains(now, bid)  # the auction's buffered pass: same floats
        assert gains.tolist() == on_bid.tolist() and gain_cores.tolist() == cores.tolist()
        rows_now = np.arange(len(columns))[::-1]
        assert (
            columns.values_on_rows(now, rows_now, cores[rows_now]).tolist()
            == on_bid[rows_now].tolist()
        )
        edges = [
            columns.values(columns.plateau.copy()),
            columns.values(columns.zero.copy()),
        ]  # ramp ends, deadlines
        for job_id, (job, progress, _) in queue.items():
            row = columns.position[job_id]
            curve, best = job.payload["value_curve"], c_star(job.profile)  # type: ignore[arg-type]
            assert columns.best[row] == best
            fastest = remaining_time(job.profile, best, progress)  # type: ignore[arg-type]
            assert columns.wake[row] == np.floor(job.submit + curve.zero_time - fastest)
            assert values[row] == curve.value_at(now + fastest - job.submit), (step, job_id)
            assert [edge[row] for edge in edges] == [
                curve.value_at(float(columns.plateau[row])),
                curve.value_at(float(columns.zero[row])),
            ]
            assert rests[row] == curve.remaining_value(now - job.submit), (step, job_id)
            use = min(bid, best)
            assert on_bid[row] == profit(curve, now, job.submit, job.profile, use, progress), (
                step,
                job_id,
            )  # type: ignore[arg-type]


def test_jobs_without_curve_or_profile_are_reported_not_priced() -> None:
    columns = MarketColumns([(Job(1, 0.0, 1.0, 1.0, units=2), 0.0, 0)])
    assert columns.invalid == {1: "no value curve"} and len(columns) == 0
    columns.take(1)
    assert columns.invalid == {}
