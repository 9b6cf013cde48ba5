"""``market-hpc slurm-check``: a sacct export replayed under its slurm.conf and compared with
its recorded start times (market_hpc/studies/slurm_check.py), on the three exports
recorded from a real Slurm 22.05 (tests/data/slurm_validate/) and on the hand-made export
traces/slurm-sample.sacct (steps, arrays, cancelled and pending jobs)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from market_hpc.cli import main
from market_hpc.cli.slurm_check_command import FORMAT as CLI_FORMAT
from market_hpc.studies.slurm_compare import FORMAT, compare, parse_sacct, replay

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "slurm_validate"
DOC = ROOT / "docs" / "slurm-scheduler.md"
SAMPLE = ROOT / "traces" / "slurm-sample.sacct"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("name", "printed"),
    [  # the lines docs/slurm-scheduler.md shows ("How close is the model to your Slurm?")
        (
            "fifo",
            [
                (
                    "wait error (simulated wait - recorded wait): |error| median 7.00 s, "
                    "p95 20.00 s, max 22.00 s; mean (bias) -8.48 s"
                ),
                "start order: Kendall's tau-b 0.9993, same position 100.00 %",
                (
                    "Slurm's own scheduling lag (start - the submit or job end that let it start): "
                    "median 1.00 s, max 3.00 s"
                ),
            ],
        ),
        (
            "multifactor-fairshare",
            [
                (
                    "wait error (simulated wait - recorded wait): |error| median 8.00 s, "
                    "p95 69.00 s, max 71.00 s; mean (bias) -6.70 s"
                ),
                "start order: Kendall's tau-b 0.9544, same position 69.00 %",
                (
                    "Slurm's own scheduling lag (start - the submit or job end that let it start): "
                    "median 1.00 s, max 18.00 s"
                ),
            ],
        ),
        (
            "backfill-small-window",
            [
                (
                    "wait error (simulated wait - recorded wait): |error| median 5.00 s, "
                    "p95 64.85 s, max 224.00 s; mean (bias) -0.29 s"
                ),
                "start order: Kendall's tau-b 0.9669, same position 72.00 %",
                (
                    "Slurm's own scheduling lag (start - the submit or job end that let it start): "
                    "median 1.00 s, max 5.00 s"
                ),
            ],
        ),
    ],
)
def test_the_printed_figures_are_the_comparison_functions(name, printed, tmp_path, capsys):
    export, conf = DATA / name / "sacct.txt", DATA / name / "slurm.conf"
    code, out, err = run(
        ["slurm-check", str(export), "--slurm-conf", str(conf), "--out", str(tmp_path)], capsys
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[2:4] == [
        "platform: slurm.conf: 1x[localhost: cores=32] (from the slurm.conf's NodeName lines)",
        "jobs compared: 100; lines left out: 0",
    ]
    assert lines[4:7] == printed
    assert lines[7] == f"written: {tmp_path / 'slurm_check.csv'}"

    records = parse_sacct(export.read_text(), str(export))
    simulated = replay(records, conf)
    agreement = compare(records, simulated)
    assert printed[0].startswith(
        "wait error (simulated wait - recorded wait): |error| median "
        f"{agreement.median_deviation:.2f} s, p95 {agreement.p95_deviation:.2f} s, "
        f"max {agreement.max_deviation:.2f} s; "
    )
    assert printed[1] == (
        f"start order: Kendall's tau-b {agreement.kendall_tau:.4f}, "
        f"same position {100 * agreement.same_position:.2f} %"
    )
    assert printed[2].endswith(
        f"median {agreement.lag_median:.2f} s, max {agreement.lag_max:.2f} s"
    )

    with open(tmp_path / "slurm_check.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    origin = min(r.submit for r in records)
    assert [int(row["job_id"]) for row in rows] == [
        r.job_id for r in sorted(records, key=lambda r: (r.submit, r.job_id))
    ]
    by_id = {r.job_id: r for r in records}
    for row in rows:
        record = by_id[int(row["job_id"])]
        assert (row["user"], int(row["cpus"]), row["partition"]) == (
            record.user,
            record.cpus,
            record.partition,
        )
        assert float(row["submit"]) == record.submit - origin
        assert float(row["recorded_start"]) == record.start - origin
        assert float(row["simulated_start"]) == simulated[record.job_id]
        assert float(row["recorded_wait"]) == record.start - record.submit
        assert float(row["wait_error"]) == simulated[record.job_id] - (record.start - origin)
    errors = np.array([float(row["wait_error"]) for row in rows])
    assert round(float(np.median(np.abs(errors))), 2) == agreement.median_deviation
    assert printed[0].endswith(f"mean (bias) {round(float(errors.mean()), 2):+.2f} s")
    for line in printed:
        assert line in DOC.read_text(), f"{DOC.name} does not show {line!r}"


SITE_CONF = """ClusterName=site
NodeName=DEFAULT CPUs=32
NodeName=n[01-04]
NodeName=g01 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2
PartitionName=batch Nodes=n[01-04] Default=YES MaxTime=12:00:00
PartitionName=gpu Nodes=g01 MaxTime=1-00:00:00
PartitionName=long Nodes=n[01-04] MaxTime=UNLIMITED
SchedulerType=sched/backfill
"""


def test_every_line_left_out_is_counted_by_reason(tmp_path, capsys):
    conf = tmp_path / "slurm.conf"
    conf.write_text(SITE_CONF)
    code, out, err = run(["slurm-check", str(SAMPLE), "--slurm-conf", str(conf)], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1] == (
        f"slurm.conf: {conf} (4 keys not modelled: ClusterName, NodeName.sockets, "
        "NodeName.corespersocket, NodeName.threadspercore)"
    )
    assert lines[2:15] == [
        (
            "platform: slurm.conf: 4x[n01..n04: cores=32] 1x[g01: cores=32] (from the slurm.conf's "
            "NodeName lines)"
        ),
        "jobs compared: 68; lines left out: 182",
        "  left out 155: job steps (.batch, .extern, .N): the allocation line is the job",
        "  left out 7: array elements that never started (123_[4-9])",
        "  left out 6: cancelled before they started (no Start)",
        "  left out 1: still running at export (End Unknown)",
        "  left out 1: never started (no Start; e.g. PENDING at export)",
        (
            "  left out 12: not started in the replay: dropped by the simulated slurm "
            "(a time limit "
            "above its partition's MaxTime, or larger than its partition's nodes)"
        ),
        "  note: 5 jobs without a time limit: given their partition's MaxTime, else 31536000 s",
        (
            "  note: 2 jobs in a partition the slurm.conf does not name: replayed in its default "
            "partition"
        ),
        "  note: 9 jobs use GPUs: replayed on their CPUs alone",
        (
            "wait error (simulated wait - recorded wait): |error| median 2282.50 s, "
            "p95 36657.70 s, "
            "max 66885.00 s; mean (bias) +4857.63 s"
        ),
        "start order: Kendall's tau-b 0.7919, same position 16.18 %",
    ]
    assert len(lines) == 16
    # 250 data lines: 68 compared, 182 left out; the 12 dropped are the batch jobs (and the
    # jobs of partitions the file does not name) whose limit is above batch's 12 h
    assert lines[0].startswith(f"export: {SAMPLE} (250 data lines; first submit 1709539561")


def test_a_platform_smaller_than_a_job_leaves_it_out_by_name(tmp_path, capsys):
    conf = tmp_path / "slurm.conf"
    conf.write_text(SITE_CONF.replace("MaxTime=12:00:00", "MaxTime=2-00:00:00"))
    argv = ["slurm-check", str(SAMPLE), "--slurm-conf", str(conf), "--platform", "nodes=2,cores=32"]
    code, out, err = run(argv, capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[2:4] == [
        "platform: nodes=2,cores=32: 2x[node: cores=32] (--platform)",
        "jobs compared: 64; lines left out: 186",
    ]
    # the 7 jobs above 64 CPUs, and the 9 GPU jobs: partition gpu's node g01 (index 4)
    # is not on a 2-node platform
    assert lines[9:11] == [
        (
            "  left out 9: not started in the replay: dropped by the simulated slurm (a time limit "
            "above its partition's MaxTime, or larger than its partition's nodes)"
        ),
        "  left out 7: not started in the replay: larger than the platform",
    ]


def test_the_cli_names_the_columns_the_check_reads():
    assert CLI_FORMAT == FORMAT


HEADER = "JobID|User|Submit|Start|End|Timelimit|NCPUS|State|Partition"
GOOD_LINE = "7|u1|1000|1002|1012|00:02:00|4|COMPLETED|debug"
CONF = "NodeName=n1 CPUs=32\nPartitionName=debug Nodes=n1 Default=YES\n"
HINT = "market-hpc: hint: add --lenient to skip malformed lines and count them by kind\n"


@pytest.mark.parametrize(
    ("export", "conf", "message"),
    [
        (None, CONF, "cannot read sacct file {export}: No such file or directory\n"),
        (
            "1 0 10 100 4 -1 -1 4 120 -1 1 1 1 -1 1 -1 -1 -1\n",
            CONF,
            (
                "{export}:1: field header: not a sacct --parsable2 export (the first line is no "
                "'|'-separated header with JobID); export with sacct --parsable2 "
                f"--format={FORMAT}\n"
            ),
        ),
        (
            "JobID|Submit|Start|End|NCPUS|State|Partition\n7|1000|1002|1012|4|COMPLETED|debug\n",
            CONF,
            (
                "{export}:1: field header: the header line lacks User, Timelimit; export with "
                f"sacct --parsable2 --format={FORMAT}\n"
            ),
        ),
        (
            f"{HEADER}\n{GOOD_LINE}\n",
            None,
            "cannot read slurm.conf {conf}: No such file or directory\n",
        ),
        (
            f"{HEADER}\n{GOOD_LINE}\n",
            CONF + "PriorityType=priority/multifactor\nPriorityWeightAge=lots\n",
            "{conf}:4: PriorityWeightAge=lots is invalid; valid: an integer in [0, 4294967295]\n",
        ),
        (
            f"{HEADER}\n{GOOD_LINE}\n",
            "NodeName=n1 CPUs=many\nPartitionName=debug Nodes=n1 Default=YES\n",
            (
                "{conf}:1: NodeName=n1 CPUs=many is invalid; valid: an integer in "
                "[1, 9007199254740991]\n"
            ),
        ),
        (
            f"{HEADER}\n{GOOD_LINE}\n",
            "PartitionName=debug Default=YES\n",
            (
                "{conf}: no NodeName line declares the nodes; give the platform "
                "(--platform nodes=N,cores=C)\n"
            ),
        ),
        (
            f"{HEADER}\n{GOOD_LINE}\n8|u1|soon|1002|1012|00:02:00|4|COMPLETED|debug\n",
            CONF,
            "{export}:3: field submit: 'soon' is not a time (expected YYYY-MM-DDTHH:MM:SS, "
            "epoch seconds, Unknown or None)\n" + HINT,
        ),
    ],
)
def test_bad_input_is_one_line_naming_file_line_and_field(export, conf, message, tmp_path, capsys):
    export_path, conf_path = tmp_path / "cluster.sacct", tmp_path / "slurm.conf"
    if export is not None:
        export_path.write_text(export)
    if conf is not None:
        conf_path.write_text(conf)
    code, out, err = run(["slurm-check", str(export_path), "--slurm-conf", str(conf_path)], capsys)
    first, _, rest = message.partition("\n")
    expected = (
        "market-hpc: error: " + first.format(export=export_path, conf=conf_path) + "\n" + rest
    )
    assert (code, out, err) == (2, "", expected)
