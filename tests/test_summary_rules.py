"""Two rules of the run summary, each by a hand-checked case: utilisation spans the first
submit to the last end, and zero-length jobs stay out of the slowdown mean."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from market_hpc.core.metrics import summarize


def finished_frame(rows: list[tuple[float, float, float]]) -> pd.DataFrame:
    """Finished jobs from ``(submit, start, run)`` triples."""
    submit, start, run = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
    return pd.DataFrame(
        {
            "job_id": np.arange(1, len(rows) + 1),
            "status": "finished",
            "submit_time": submit,
            "start_time": start,
            "end_time": start + run,
            "run_time": run,
            "wait_time": start - submit,
        }
    )


CAPACITY = np.array([2, 0, 0, 0])


def test_utilisation_spans_first_submit_to_last_end():
    # Mutation: utilisation over [0, last end]. A trace that starts at t=100: two jobs
    # on one of two cores, 100..110 and 105..115: 20 core-seconds / (2 cores x 15 s).
    jobs = finished_frame([(100.0, 100.0, 10.0), (105.0, 105.0, 10.0)])
    summary = summarize(jobs, pd.DataFrame(), CAPACITY, np.array([20.0, 0, 0, 0]))
    assert summary["makespan"] == 15.0
    assert summary["utilisation_cores"] == pytest.approx(20 / 30)


def test_zero_length_jobs_stay_out_of_the_slowdown_mean():
    # Mutation: ``run > 0`` loosened to ``run >= 0`` (a zero-length job makes it inf or nan).
    # Job 1: response 20 on a run of 10 (slowdown 2); job 2 runs 0 s after waiting 5.
    jobs = finished_frame([(0.0, 10.0, 10.0), (0.0, 5.0, 0.0)])
    summary = summarize(jobs, pd.DataFrame(), CAPACITY, np.array([10.0, 0, 0, 0]))
    assert summary["mean_slowdown"] == 2.0
    # bounded slowdown keeps both: max(20/10, 1) = 2 and max(5/10, 1) = 1
    assert summary["mean_bounded_slowdown"] == 1.5
