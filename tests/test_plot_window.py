"""``market-hpc plot --window``: a window counts from the run's first submission (``@``
bounds from the trace's time 0), and one that selects no job is refused naming the run's
first and last submit times (a trace whose first job comes on day 6.94, as KTH-SP2's
does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from market_hpc.cli import main

DAY = 86_400


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A replayed run whose three jobs are submitted on days 6.94 to 7.5."""
    tmp_path = tmp_path_factory.mktemp("late")
    trace = tmp_path / "late.swf"
    submits = (599_834, 620_000, 648_000)
    trace.write_text(
        "".join(
            f"{i} {t} -1 3600 2 -1 -1 2 7200 -1 1 1 -1 -1 -1 -1 -1 -1\n"
            for i, t in enumerate(submits, start=1)
        )
    )
    out = tmp_path / "run"
    assert (
        main(
            [
                "replay",
                str(trace),
                "--platform",
                "nodes=4,cores=1",
                "--scheduler",
                "fifo",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


def test_a_trace_time_window_before_the_first_job_names_the_submit_times(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run), "--window", "@2d:@3d"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"market-hpc: error: --window 172,800 s (2.00 d) to 259,200 s (3.00 d) (trace time) "
        f"selects no job of {run / 'jobs.csv'}: its jobs were submitted from 599,834 s (6.94 d) "
        "to 648,000 s (7.50 d) and ran until 651,600 s (7.54 d) (trace time); a window counts "
        "from the first submission, @TIME bounds from the trace's time 0\n"
    )
    assert not (run / "schedule.html").exists()


def test_a_window_after_the_run_counts_from_the_first_submission(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run), "--window", "1d:"]) == 2  # 599,834 s + 1 d: past the end
    assert capsys.readouterr().err.startswith(
        "market-hpc: error: --window 686,234 s (7.94 d) to the end (trace time) selects no job "
    )


def test_a_window_from_the_first_submission_draws_its_jobs(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run), "--window", "0:1h", "--out", str(tmp_path / "p.html")]) == 0
    out = capsys.readouterr().out
    # day 6.94 + 1 h: job 1 (submitted at the window's start) only
    assert "Gantt chart: 1 of 3 jobs drawn, window 599,834.00 to 603,434.00 s (--window)" in out
    assert (
        main(["plot", str(run), "--window", "@6.9d:@7.6d", "--out", str(tmp_path / "q.html")]) == 0
    )
    assert "Gantt chart: 3 of 3 jobs drawn" in capsys.readouterr().out


def test_a_window_mixing_the_two_counts_must_still_be_ordered(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run), "--window", "1d:@7d"]) == 2  # 7.94 d to 7.00 d
    assert capsys.readouterr().err == (
        "market-hpc: error: --window: its start (686,234 s) is not before its end (604,800 s)\n"
    )
