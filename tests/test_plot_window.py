"""``market-hpc plot --window``: a window counts from the trace's time 0, and one that
selects no job is refused naming the run's first and last submit times (a trace whose
first job comes on day 6.94, as KTH-SP2's does)."""

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


def test_a_window_before_the_first_job_names_the_submit_times(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run), "--window", "2d:3d"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"market-hpc: error: --window 172,800 s (2.00 d) to 259,200 s (3.00 d) selects no job "
        f"of {run / 'jobs.csv'}: its jobs were submitted from 599,834 s (6.94 d) to 648,000 s "
        "(7.50 d) and ran until 651,600 s (7.54 d); a window counts from the trace's time 0, "
        "not from its first job\n"
    )
    assert not (run / "schedule.html").exists()


def test_an_open_window_after_the_run_says_the_start(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run), "--window", "8d:"]) == 2
    assert capsys.readouterr().err.startswith(
        "market-hpc: error: --window 691,200 s (8.00 d) to the end selects no job of "
    )


def test_a_window_counted_from_time_0_over_the_jobs_draws_them(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", str(run), "--window", "6.9d:7.6d", "--out", str(tmp_path / "p.html")]) == 0
    assert "page: " in capsys.readouterr().out
    assert (tmp_path / "p.html").stat().st_size > 0
