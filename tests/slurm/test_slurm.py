"""Slurm accounting import: every rule of market_hpc.workload.slurm on hand-written files."""

from __future__ import annotations

from pathlib import Path

import pytest

from market_hpc.cli import main
from market_hpc.errors import TraceFormatError
from market_hpc.workload import read_swf
from market_hpc.workload.slurm import is_sacct, read_sacct
from market_hpc.workload.slurm_convert import convert_sacct, side_file
from market_hpc.workload.slurm_fields import parse_duration, parse_timestamp

HEADER = (
    "JobID|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqCPUS|NNodes|State|Partition|"
    "ReqMem|AllocTRES|ReqTRES|User"
)
T0 = "2024-03-01T00:00:00"


def row(
    job_id: str = "100",
    submit: str = T0,
    start: str = "2024-03-01T00:00:10",
    end: str = "2024-03-01T01:00:10",
    elapsed: str = "01:00:00",
    limit: str = "02:00:00",
    ncpus: str = "8",
    req: str = "8",
    nodes: str = "1",
    state: str = "COMPLETED",
    partition: str = "batch",
    mem: str = "16G",
    alloc_tres: str = "cpu=8,mem=16G,node=1",
    req_tres: str = "cpu=8",
    user: str = "alice",
) -> str:
    cells = [
        job_id,
        submit,
        start,
        end,
        elapsed,
        limit,
        ncpus,
        req,
        nodes,
        state,
        partition,
        mem,
        alloc_tres,
        req_tres,
        user,
    ]
    return "|".join(cells)


def write(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "cluster.sacct"
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows))
    return path


def test_allocation_line_maps_to_swf_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        row(),
        row(
            job_id="101",
            submit="2024-03-01T00:05:00",
            start="2024-03-01T00:10:00",
            end="2024-03-01T00:40:00",
            elapsed="00:30:00",
            limit="1-00:00:00",
            ncpus="4",
            req="2",
            state="FAILED",
            partition="gpu",
            mem="4000Mc",
            alloc_tres="cpu=4,gres/gpu=2,gres/gpu:a100=2",
            user="bob",
        ),
    )
    out = tmp_path / "cluster.swf"
    conversion = convert_sacct(path, out)
    assert len(conversion.jobs) == 2 and not conversion.skipped
    lines = [line.split() for line in out.read_text().splitlines() if not line.startswith(";")]
    # id, submit, wait, run, alloc, -, -, req, limit, mem
    # KB/cpu, status, user, -, -, queue, partition
    assert lines[0][:16] == [
        "1",
        "0",
        "10",
        "3600",
        "8",
        "-1",
        "-1",
        "8",
        "7200",
        "2097152",
        "1",
        "1",
        "-1",
        "-1",
        "1",
        "1",
    ]
    assert lines[1][:16] == [
        "2",
        "300",
        "300",
        "1800",
        "4",
        "-1",
        "-1",
        "2",
        "86400",
        "4096000",
        "0",
        "2",
        "-1",
        "-1",
        "2",
        "2",
    ]
    jobs = read_swf(out).jobs
    assert [(j.job_id, j.submit, j.run_time, j.estimate, j.units) for j in jobs] == [
        (1, 0.0, 3600.0, 7200.0, 8),
        (2, 300.0, 1800.0, 86400.0, 2),
    ]
    side = side_file(out).read_text().splitlines()
    assert side[2] == "2,101,3,FAILED,gpu,1,2,4000,bob"
    assert "; Partitions: 1=batch, 2=gpu" in out.read_text()


def test_steps_arrays_het_and_states_are_counted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        row(),
        row(job_id="100.batch"),
        row(job_id="100.extern"),
        row(job_id="100.0"),
        row(job_id="101_1"),
        row(job_id="101_[2-5%2]", start="Unknown", end="Unknown"),
        row(job_id="102+0"),
        row(job_id="102+1", ncpus="2"),
        row(job_id="102+1.0"),
        row(job_id="103", start="None", end="2024-03-01T00:26:00", state="CANCELLED by 1000"),
        row(job_id="104", start="Unknown", end="Unknown", state="PENDING"),
        row(job_id="105", end="Unknown", state="RUNNING"),
        row(job_id="106", ncpus="0", req="0"),
        row(),
    )
    conversion = read_sacct(path)
    assert [job.slurm_id for job in conversion.jobs] == ["100", "101_1", "102+0", "102+1"]
    assert conversion.skipped == {
        "job_step": 4,
        "pending_array": 1,
        "duplicate": 1,
        "cancelled_before_start": 1,
        "never_started": 1,
        "still_running": 1,
        "no_cpus": 1,
    }
    text = "\n".join(conversion.describe())
    assert "14 data lines, 4 converted" in text and "skipped 4: job steps" in text


def test_cancelled_after_start_is_a_job_with_status_5(tmp_path: Path) -> None:
    conversion = read_sacct(write(tmp_path, row(state="CANCELLED by 0")))
    assert conversion.jobs[0].state == "CANCELLED"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-02:03:04", 93784.0),
        ("02:03:04", 7384.0),
        ("03:04", 184.0),
        ("7", 420.0),
        ("2-12", 216000.0),
        ("1-00:30", 88200.0),
        ("00:00:01.500", 1.5),
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("", None),
    ],
)
def test_slurm_duration_formats(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def test_unlimited_limit_leaves_the_estimate_unknown(tmp_path: Path) -> None:
    conversion = read_sacct(
        write(tmp_path, row(limit="UNLIMITED"), row(job_id="2", limit="Partition_Limit"))
    )
    assert [job.time_limit for job in conversion.jobs] == [-1.0, -1.0]


def test_elapsed_missing_uses_end_minus_start(tmp_path: Path) -> None:
    header = HEADER.replace("|Elapsed", "")
    line = row().replace("|01:00:00|", "|", 1)
    assert read_sacct(write(tmp_path, line, header=header)).jobs[0].run_time == 3600.0


def test_timestamps_iso_and_epoch() -> None:
    assert parse_timestamp("2024-03-01T00:00:10") - parse_timestamp(T0) == 10.0  # type: ignore[operator]
    assert parse_timestamp("1709251210") == 1709251210.0


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        (row(start="2024-13-01T00:00:00"), "start", "is not a time"),
        (row(elapsed="1:2:3:4"), "elapsed", "is not a duration"),
        (row(ncpus="eight"), "ncpus", "is not a whole number"),
        (row(state="EXPLODED"), "state", "unknown state 'EXPLODED'; valid: BOOT_FAIL"),
        (row(job_id="abc"), "jobid", "is not a Slurm job id"),
        (row(start="2023-12-31T00:00:00"), "start", "before Submit"),
        (row(end="2024-03-01T00:00:05"), "end", "before Start"),
        (row(mem="lots"), "reqmem", "is not a memory size"),
        (row() + "|extra", "line", "expected 15 '|'-separated fields"),
        # ASCII numbers only, as in every reader: Arabic-Indic digits, underscores
        (row(start="\u0661\u0667\u0660\u0669"), "start", "ASCII digits only"),
        (row(elapsed="\u0660\u0661:00:00"), "elapsed", "is not a duration"),
        (row(ncpus="\u0668"), "ncpus", "is not a whole number"),
        (row(job_id="\u0661\u0662"), "jobid", "is not a Slurm job id"),
        (row(alloc_tres="cpu=8,gres/gpu=1_0"), "alloctres", "GPU count must be a whole number"),
    ],
)
def test_malformed_lines_name_file_line_field(
    tmp_path: Path, bad: str, field: str, message: str
) -> None:
    path = write(tmp_path, row(job_id="1"), bad)
    with pytest.raises(TraceFormatError, match=message) as caught:
        read_sacct(path)
    assert (caught.value.line, caught.value.field) == (3, field)
    assert str(caught.value).startswith(f"{path}:3: field {field}:")
    lenient = read_sacct(path, lenient=True)
    assert len(lenient.jobs) == 1 and lenient.rejected == {field: 1}
    assert lenient.messages[0].startswith(f"{path}:3:")


def test_header_must_name_the_required_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "1|2", header="JobID|State")
    with pytest.raises(TraceFormatError, match="lacks submit, start, end, NCPUS"):
        read_sacct(path)


def test_parsable_with_trailing_bar_and_detection(tmp_path: Path) -> None:
    path = write(tmp_path, row() + "|", header=HEADER + "|")
    assert is_sacct(path) and len(read_sacct(path).jobs) == 1
    swf = tmp_path / "x.swf"
    swf.write_text("1 0 -1 10 4 -1 -1 -1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    assert not is_sacct(swf)


def test_no_job_converted_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no jobs to convert.*job steps"):
        read_sacct(write(tmp_path, row(job_id="1.batch")))


def test_replay_sacct_under_easy_and_maxvh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        row(),
        row(job_id="2", submit="2024-03-01T00:00:05", ncpus="16", req="16"),
        row(job_id="2.batch"),
    )
    assert (
        main(
            [
                "replay",
                str(path),
                "--platform",
                "nodes=1,cores=16",
                "--scheduler",
                "easy",
                "--out",
                str(tmp_path / "easy"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "replay",
                str(path),
                "--platform",
                "nodes=1,cores=16",
                "--scheduler",
                "maxvh",
                "--out",
                str(tmp_path / "maxvh"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "skipped 1: job steps" in out and "maxvh is a market policy" in out
    easy = (tmp_path / "easy" / "jobs.csv").read_text().splitlines()
    assert len(easy) == 3 and (tmp_path / "maxvh" / "trace.swf").exists()


def test_cli_convert_and_lenient_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, row(), row(job_id="2", elapsed="soon"))
    assert main(["trace", "convert", str(path)]) == 2
    assert "add --lenient" in capsys.readouterr().err
    assert main(["trace", "convert", str(path), "--lenient", "--out", str(tmp_path / "c.swf")]) == 0
    out = capsys.readouterr().out
    assert "rejected 1: malformed elapsed" in out and "c.slurm.csv" in out


def test_trace_info_reads_sacct(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "info", str(write(tmp_path, row(), row(job_id="100.batch")))]) == 0
    out = capsys.readouterr().out
    assert "skipped 1: job steps" in out and "jobs kept        1" in out


def test_bundled_sample_counts() -> None:
    sample = Path(__file__).resolve().parents[2] / "traces" / "slurm-sample.sacct"
    conversion = read_sacct(sample)
    assert len(conversion.jobs) == 80 and not conversion.rejected
    assert conversion.skipped == {
        "job_step": 155,
        "pending_array": 7,
        "cancelled_before_start": 6,
        "still_running": 1,
        "never_started": 1,
    }
    ids = [job.slurm_id for job in conversion.jobs]
    assert any("_" in i for i in ids) and any("+" in i for i in ids)
    assert sum(1 for job in conversion.jobs if job.gpus == 2) == 9
    jobs = {job.slurm_id: job for job in conversion.jobs}
    # the lines a real export adds: a finished array, days in Elapsed, srun and salloc
    # steps, OOM / node failure / preemption, cancelled after start, no limits, a
    # job that failed at launch
    assert [i for i in ids if i.startswith("5072_")] == ["5072_1", "5072_2", "5072_3", "5072_4"]
    assert (
        jobs["5073"].run_time == 93_784.0 and jobs["5073"].time_limit == 172_800.0
    )  # 1-02:03:04, 2-00:00:00
    assert {jobs[i].state for i in ("5074", "5075", "5076", "5077")} == {
        "OUT_OF_MEMORY",
        "NODE_FAIL",
        "PREEMPTED",
        "CANCELLED",
    }
    assert jobs["5077"].run_time == 631.0  # CANCELLED by 0 after 10:31: it used the machine
    assert jobs["5076"].time_limit == jobs["5079"].time_limit == -1.0  # Partition_Limit, UNLIMITED
    assert jobs["5074"].mem_mib_per_cpu == 250.0  # ReqMem 4000M per node over 16 CPUs
    assert jobs["5081"].run_time == 0.0 and "5080" not in jobs  # failed at launch; PENDING


def _readme_replays() -> list[str]:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    return [
        line
        for line in readme.splitlines()
        if line.startswith("market-hpc replay traces/slurm-sample.sacct")
    ]


def test_readme_replays_the_sacct_sample_under_easy_and_maxvh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's two commands, as written (only --out moved under tmp_path): every job
    of the sample is accounted for, the zero-length job included, and both runs earn a
    profit from the same value curves."""
    import json
    import shlex

    commands = _readme_replays()
    assert [c.split("--scheduler ")[1].split()[0] for c in commands] == ["easy", "maxvh"], commands
    summaries = {}
    for command in commands:
        argv = shlex.split(command)[1:]
        out = argv.index("--out") + 1
        argv[out] = str(tmp_path / Path(argv[out]).name)
        sample = Path(__file__).resolve().parents[2] / argv[1]
        argv[1] = str(sample)
        assert main(argv) == 0
        summaries[argv[argv.index("--scheduler") + 1]] = json.loads(
            (Path(argv[out]) / "summary.json").read_text()
        )
    capsys.readouterr()
    easy, maxvh = summaries["easy"], summaries["maxvh"]
    assert easy["jobs_total"] == maxvh["jobs_total"] == 80
    assert easy["jobs_completed"] == 80 and easy["holds"] == 0
    assert maxvh["jobs_completed"] + maxvh["jobs_dropped"] == 80 and maxvh["holds"] > 0
    assert easy["total_profit"] > 0 and maxvh["total_profit"] > 0


def test_memory_comes_from_alloctres_when_reqmem_is_empty(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        row(mem="", alloc_tres="cpu=8,mem=16G,node=1"),
        row(job_id="101", mem="", alloc_tres="", req_tres="cpu=4,mem=2000M", ncpus="4", req="4"),
        row(job_id="102", mem="", alloc_tres="cpu=8,node=1", req_tres=""),
        row(job_id="103", mem="1000Mc", alloc_tres="cpu=8,mem=64G"),
    )
    jobs = {job.slurm_id: job.mem_mib_per_cpu for job in read_sacct(path).jobs}
    # 16 GiB over 8 CPUs; ReqTRES when AllocTRES is empty; neither; ReqMem wins when given
    assert jobs == {"100": 2048.0, "101": 500.0, "102": -1.0, "103": 1000.0}
    bad = write(tmp_path, row(mem="", alloc_tres="cpu=8,mem=lots"))
    with pytest.raises(TraceFormatError, match=r"cluster\.sacct:2.*alloctres.*mem=lots"):
        read_sacct(bad)


def test_one_gpu_job_is_singular(tmp_path: Path) -> None:
    path = write(tmp_path, row(alloc_tres="cpu=8,gres/gpu=1"), row(job_id="101"))
    note = (
        "  note: 1 job uses GPUs; SWF holds CPUs only (GPUs are in the side file, which runs "
        "of the SWF read)"
    )
    assert note in read_sacct(path).describe()
    two = write(
        tmp_path, row(alloc_tres="cpu=8,gres/gpu=1"), row(job_id="101", alloc_tres="gres/gpu=2")
    )
    assert any("2 jobs use GPUs" in line for line in read_sacct(two).describe())


def test_a_byte_order_mark_is_not_part_of_the_header(tmp_path: Path) -> None:
    path = tmp_path / "bom.sacct"
    path.write_bytes(b"\xef\xbb\xbf" + (HEADER + "\n" + row() + "\n").encode())
    assert is_sacct(path)
    assert [job.slurm_id for job in read_sacct(path).jobs] == ["100"]


def test_an_export_without_its_header_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "noheader.sacct"
    path.write_text(row() + "\n" + row(job_id="101") + "\n")
    assert is_sacct(path)  # not read as SWF ("expected 18 fields, got 1")
    with pytest.raises(TraceFormatError, match=r"noheader\.sacct:1.*lacks"):
        read_sacct(path)
    assert main(["replay", str(path), "--platform", "nodes=1,cores=8"]) != 0
    assert "lacks" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        (
            row(elapsed="99999999999999999999-00:00:00"),
            "elapsed",
            "too long to keep second precision",
        ),
        (
            row(limit="99999999999999999999-00:00:00"),
            "timelimit",
            "too long to keep second precision",
        ),
        (row(ncpus="100000000000000000000000000"), "ncpus", "is too large; valid: an integer"),
        (row(req="100000000000000000000000000"), "reqcpus", "is too large; valid: an integer"),
        (row(mem="99999999999999P"), "reqmem", "is too large"),
        (
            row(elapsed="05:00:00"),
            "elapsed",
            r"Elapsed 05:00:00 \(18,000 s\) is longer than End - Start \(3,600 s\)",
        ),
    ],
)
def test_values_a_replay_would_refuse_are_refused_at_the_sacct_line(
    tmp_path: Path, bad: str, field: str, message: str
) -> None:
    path = write(tmp_path, row(job_id="99"), bad)
    with pytest.raises(TraceFormatError, match=rf"cluster\.sacct:3: field {field}: .*{message}"):
        read_sacct(path)


def test_elapsed_shorter_than_end_minus_start_is_a_suspension(tmp_path: Path) -> None:
    path = write(tmp_path, row(elapsed="00:40:00"), row(job_id="101", elapsed="01:00:01"))
    assert [job.run_time for job in read_sacct(path).jobs] == [
        2400.0,
        3601.0,
    ]  # within a second: rounding


def test_swf_files_are_not_sacct() -> None:
    traces = Path(__file__).resolve().parents[2] / "traces"
    assert not is_sacct(traces / "lf-240p-5000.swf.gz")  # binary: its bytes may hold '|'
    assert not is_sacct(traces / "lf-kth-like-2000.swf")
    assert is_sacct(traces / "slurm-sample.sacct")


def test_a_replayed_sacct_file_is_named_absolutely_in_config_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    sample = Path(__file__).resolve().parents[2] / "traces" / "slurm-sample.sacct"
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "replay",
                str(sample),
                "--platform",
                "nodes=1,cores=128",
                "--scheduler",
                "easy",
                "--out",
                "relative-out",
            ]
        )
        == 0
    )
    config = json.loads((tmp_path / "relative-out" / "config.json").read_text())
    assert config["config"]["workload"]["trace"] == str(tmp_path / "relative-out" / "trace.swf")
