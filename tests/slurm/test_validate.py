"""The comparison code of benchmarks/slurm_validate.py and ``market-hpc slurm-check``
(market_hpc/studies/slurm_compare.py) on sacct exports recorded from a real Slurm 22.05
on one 32-CPU node (tests/data/slurm_validate/CONFIG/: its slurm.conf and ``sacct
--parsable2`` with epoch times)."""

from __future__ import annotations

from pathlib import Path

import pytest

from market_hpc.errors import TraceFormatError
from market_hpc.studies.slurm_compare import (
    Record,
    compare,
    event_lags,
    kendall_tau_b,
    parse_sacct,
    replay,
    replay_jobs,
)

ROOT = Path(__file__).resolve().parents[2]

DATA = ROOT / "tests" / "data" / "slurm_validate"


def recorded(name: str) -> list[Record]:
    path = DATA / name / "sacct.txt"
    return parse_sacct(path.read_text(), str(path))


def test_the_recorded_export_parses_to_its_100_jobs():
    records = recorded("fifo")
    assert len(records) == 100
    assert {r.user for r in records} == {"mhu1", "mhu2", "mhu3", "mhu4"}
    assert all(2 <= r.end - r.start <= 62 and r.limit in (60, 120, 180, 240, 300) for r in records)
    jobs = replay_jobs(records)
    assert jobs[0].submit == 0.0 and sorted({job.user for job in jobs}) == [0, 1, 2, 3]


def test_fifo_replay_keeps_slurms_start_order():
    records = recorded("fifo")
    agreement = compare(records, replay(records, DATA / "fifo" / "slurm.conf"))
    assert agreement.same_position == 1.0
    assert agreement.kendall_tau == 0.9993
    assert (agreement.median_deviation, agreement.p95_deviation, agreement.max_deviation) == (
        7.0,
        20.0,
        22.0,
    )
    assert (agreement.lag_median, agreement.lag_max) == (1.0, 3.0)


@pytest.mark.parametrize(
    ("name", "figures"),
    [  # (tau, same position, deviation median, p95, max): the figures docs/slurm-scheduler.md gives
        ("multifactor-fairshare", (0.9544, 0.69, 8.0, 69.0, 71.0)),
        ("backfill-small-window", (0.9669, 0.72, 5.0, 64.85, 224.0)),
    ],
)
def test_the_other_recorded_configurations(name, figures):
    records = recorded(name)
    agreement = compare(records, replay(records, DATA / name / "slurm.conf"))
    assert (
        agreement.kendall_tau,
        agreement.same_position,
        agreement.median_deviation,
        agreement.p95_deviation,
        agreement.max_deviation,
    ) == figures


def test_kendall_tau_b_by_hand():
    assert kendall_tau_b([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    assert kendall_tau_b([1, 2, 3, 4], [2, 1, 3, 4]) == pytest.approx(4 / 6)
    # one tie in the second list: (5 - 0) / sqrt(6 * 5)
    assert kendall_tau_b([1, 2, 3, 4], [1, 2, 2, 4]) == pytest.approx(5 / 30**0.5)


def test_event_lags():
    records = [Record(1, "a", 0, 0, 10, 60, 32), Record(2, "a", 1, 12, 20, 60, 32)]
    assert event_lags(records).tolist() == [0.0, 2.0]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "8|u1|soon|1002|1012|00:02:00|4|COMPLETED|debug",
            "x.txt:2: field submit: 'soon' is not a time",
        ),
        (
            "8|u1|1000|1002|1012|forever|4|COMPLETED|debug",
            "x.txt:2: field jobid: JobID, Timelimit and NCPUS must be numbers",
        ),
    ],
)
def test_a_bad_line_names_file_line_and_field(line, message):
    header = "JobID|User|Submit|Start|End|Timelimit|NCPUS|State|Partition"
    with pytest.raises(TraceFormatError) as caught:
        parse_sacct(f"{header}\n{line}\n", "x.txt")
    assert str(caught.value) == message


def test_a_short_line_is_refused():
    header = "JobID|User|Submit|Start|End|Timelimit|NCPUS|State|Partition"
    with pytest.raises(TraceFormatError, match=r"^x.txt:2: 3 fields, the header has 9$"):
        parse_sacct(f"{header}\n8|u1|1000\n", "x.txt")


def test_missing_columns_are_named():
    with pytest.raises(TraceFormatError, match=r"^x.txt:1: missing columns user, timelimit"):
        parse_sacct("JobID|Submit|Start|End|NCPUS|State|Partition\n", "x.txt")
