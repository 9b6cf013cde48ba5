"""Every submitted job counts: ``summary.json``'s ``*_all`` metrics and completed work on
hand-checked frames (one finished, one dropped, one queued job)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from market_hpc.core.metrics import run_end, summarize, waits_all

NAN = np.nan


def three_jobs() -> pd.DataFrame:
    """Job 1 finishes (submit 0, start 10, end 110, 4 cores); job 2 is dropped at 60 without
    starting (submit 20); job 3 is still queued (submit 50). The run ends at 110."""
    return pd.DataFrame(
        {
            "job_id": [1, 2, 3],
            "status": ["finished", "dropped", "queued"],
            "submit_time": [0.0, 20.0, 50.0],
            "start_time": [10.0, NAN, NAN],
            "end_time": [110.0, 60.0, NAN],
            "wait_time": [10.0, NAN, NAN],
            "run_time": [100.0, NAN, NAN],
            "cores": [4, 8, 2],
        }
    )


def test_unfinished_jobs_wait_until_the_runs_last_event() -> None:
    jobs = three_jobs()
    assert run_end(jobs) == 110.0
    wait, bounded = waits_all(jobs)
    assert wait.tolist() == [10.0, 90.0, 60.0]  # 110 - 20, 110 - 50
    assert bounded.tolist() == pytest.approx(
        [1.1, 9.0, 6.0]
    )  # 110 / 100; never ran: wait / tau (10 s)


def test_summary_counts_every_submitted_job() -> None:
    summary = summarize(
        three_jobs(), pd.DataFrame(), np.array([16, 0, 0, 0]), np.array([400.0, 0, 0, 0])
    )
    assert summary["mean_wait"] == 10.0 and summary["mean_bounded_slowdown"] == pytest.approx(1.1)
    assert summary["mean_wait_all"] == pytest.approx(160.0 / 3)
    assert summary["mean_bounded_slowdown_all"] == pytest.approx(16.1 / 3)
    assert summary["completed_core_hours"] == pytest.approx(
        4 * 100.0 / 3600
    )  # the dropped job's cores do not count
    assert summary["completed_share"] == pytest.approx(1 / 3)


def test_a_job_dropped_after_running_keeps_its_run_time() -> None:
    # Job 2 ran 30 s from 20 and was dropped at 50: it waits 110 - 20 = 90 s, its bounded
    # slowdown is (90 + 30) / 30 = 4; job 3, rejected at its submission at 100, waits 10 s.
    jobs = three_jobs().assign(
        status=["finished", "dropped", "rejected"],
        start_time=[10.0, 20.0, NAN],
        end_time=[110.0, 50.0, NAN],
        wait_time=[10.0, 0.0, NAN],
        run_time=[100.0, 30.0, NAN],
        submit_time=[0.0, 20.0, 100.0],
    )
    wait, bounded = waits_all(jobs)
    assert wait.tolist() == [10.0, 90.0, 10.0]
    assert bounded.tolist() == pytest.approx([1.1, 4.0, 1.0])


def test_core_hours_use_the_allocated_cores_and_the_time_run() -> None:
    # a market job molded to 2 of the 8 cores it asked for and run 7,200 s (holds left out)
    jobs = three_jobs().assign(
        status="finished",
        cores=[2, 8, 1],
        run_time=[7200.0, 1800.0, 0.0],
        start_time=[0.0, 20.0, 50.0],
        end_time=[9000.0, 1820.0, 50.0],
        wait_time=[0.0, 0.0, 0.0],
    )
    summary = summarize(jobs, pd.DataFrame(), np.array([16, 0, 0, 0]), np.array([0.0, 0, 0, 0]))
    assert summary["completed_core_hours"] == pytest.approx(2 * 2.0 + 8 * 0.5)
    assert summary["completed_share"] == 1.0


def test_no_jobs_give_nan_not_an_error() -> None:
    empty = three_jobs().iloc[:0]
    summary = summarize(empty, pd.DataFrame(), np.array([16, 0, 0, 0]), np.zeros(4))
    assert np.isnan(summary["mean_wait_all"]) and np.isnan(summary["mean_bounded_slowdown_all"])
    assert summary["completed_core_hours"] == 0.0 and np.isnan(summary["completed_share"])
