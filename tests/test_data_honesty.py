"""Data honesty: SWF jobs without a wall-time request are counted by
every reader, reported in the summary and warned about; sacct GPU requests become the
jobs' GPU requests, and no synthetic GPU users are drawn beside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import real_trace

from market_hpc.cli import main
from market_hpc.domain.platform import load_platform
from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.experiment.config import config_from_dict
from market_hpc.experiment.run import build_workload, simulate
from market_hpc.workload import swf, swf_stream
from market_hpc.workload.accelerators import AcceleratorRule
from market_hpc.workload.all_families import platform_accelerators
from market_hpc.workload.slurm import read_sacct
from market_hpc.workload.slurm_convert import convert_sacct, side_file
from market_hpc.workload.swf import read_swf
from market_hpc.workload.swf_stream import SwfStream, stream_swf

# ------------------------------------------------------------------ estimate fallbacks


def swf_text(
    n_jobs: int = 100, without_request: tuple[int, ...] = (10, 50, 90), zero: int = 50
) -> str:
    """``n_jobs`` one-minute jobs asking for 2 minutes; the ids in ``without_request`` have
    field 9 = -1, or 0 for ``zero`` (also no request)."""
    lines = ["; Version: 2.2"]
    for job in range(1, n_jobs + 1):
        limit = ("0" if job == zero else "-1") if job in without_request else "120"
        lines.append(
            f"{job} {job * 10} -1 60 2 -1 -1 2 {limit} -1 1 {job % 7 + 1} -1 -1 1 -1 -1 -1"
        )
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def every_reading(
    path: Path, monkeypatch: pytest.MonkeyPatch, lenient: bool = False
) -> dict[str, object]:
    """The report of each parse path: read_swf fast and line by line, stream_swf in blocks
    (small ones: several per file) and line by line."""
    reports: dict[str, object] = {
        "read_swf": read_swf(path, lenient=lenient).report,
        "stream blocks": SwfStream(path, lenient=lenient, block_bytes=(512, 256)).report,
    }
    with monkeypatch.context() as patch:
        patch.setattr(swf, "parse_fast", lambda data: None)
        reports["read_swf line by line"] = read_swf(path, lenient=lenient).report
    with monkeypatch.context() as patch:
        patch.setattr(swf_stream, "scan_blocks", lambda source, size: None)
        reports["stream line by line"] = stream_swf(path, lenient=lenient).report
    return reports


def test_three_of_a_hundred_jobs_without_a_request_on_every_parse_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, swf_text())
    reports = every_reading(path, monkeypatch)
    for name, report in reports.items():
        assert report.estimate_fallback_jobs == 3, name  # type: ignore[attr-defined]
        assert report.estimate_fallback_share == 0.03, name  # type: ignore[attr-defined]
    assert len({repr(report) for report in reports.values()}) == 1
    jobs = {job.job_id: job.estimate for job in read_swf(path).jobs}
    assert (
        jobs[10] == jobs[50] == jobs[90] == 60.0 and jobs[11] == 120.0
    )  # the fallback itself is unchanged


def test_irregular_files_count_the_same_on_every_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unknown run times, a held job (whole line and parts), a malformed line (lenient)
    and an orphan part kept as its job (lenient): only kept jobs count, each once."""
    lines = swf_text(20, (3, 7)).splitlines()
    lines.append(
        "7 70 -1 30 2 -1 -1 2 -1 -1 2 1 -1 -1 1 -1 -1 -1"
    )  # a part of held job 7: not a job
    lines.append("21 300 -1 -1 2 -1 -1 2 -1 -1 1 1 -1 -1 1 -1 -1 -1")  # unknown run time: skipped
    lines.append("22 310 -1 10 2 -1 -1 2 -1 -1 1 1 -1 -1 1 -1 -1")  # 17 fields: malformed
    lines.append(
        "23 320 -1 10 2 -1 -1 2 -1 -1 3 1 -1 -1 1 -1 -1 -1"
    )  # orphan part: the job (lenient)
    lines.append(
        "23 330 -1 10 2 -1 -1 2 -1 -1 4 1 -1 -1 1 -1 -1 -1"
    )  # its second part: missing_summary
    path = write(tmp_path, "\n".join(lines) + "\n")
    reports = every_reading(path, monkeypatch, lenient=True)
    counts = {
        name: (report.jobs_kept, report.estimate_fallback_jobs) for name, report in reports.items()
    }  # type: ignore[attr-defined]
    assert set(counts.values()) == {(21, 3)}, counts  # jobs 3, 7 and 23


def test_a_run_reports_and_warns_about_the_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, swf_text())
    assert (
        main(["replay", str(path), "--platform", "nodes=4,cores=8", "--out", str(tmp_path / "out")])
        == 0
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["estimate_fallback_jobs"], summary["estimate_fallback_share"]) == (3, 0.03)
    err = capsys.readouterr().err
    assert "market-hpc: warning: 3 jobs (3.0% of the trace) in " in err and str(path) in err
    assert "no wall-time request" in err


def test_streamed_and_whole_runs_agree_and_one_percent_does_not_warn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, swf_text(without_request=(42,)))
    assert main(["replay", str(path), "--platform", "nodes=4,cores=8"]) == 0
    assert "warning" not in capsys.readouterr().err  # 1 % is not above 1 %
    config = config_from_dict(
        {
            "platform": "nodes=4,cores=8",
            "timeseries": False,
            "workload": {"trace": str(path)},
            "policy": {"scheduler": "easy"},
        }
    )
    summary = simulate(config).summary
    assert (summary["estimate_fallback_jobs"], summary["estimate_fallback_share"]) == (1, 0.01)


def test_generated_workloads_report_no_fallback() -> None:
    config = config_from_dict(
        {
            "platform": "nodes=4,cores=8",
            "timeseries": False,
            "workload": {"generator": "lublin-feitelson", "jobs": 20},
        }
    )
    summary = simulate(config).summary
    assert (summary["estimate_fallback_jobs"], summary["estimate_fallback_share"]) == (0, 0.0)


def test_trace_info_prints_the_count_and_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", "info", str(write(tmp_path, swf_text()))]) == 0
    assert "no time request  3 jobs (3.0%): estimate = run time" in capsys.readouterr().out


REAL_FALLBACKS = {  # kept jobs, and those without a wall-time request
    "KTH-SP2-1996-2.1-cln.swf.gz": (27_992, 0),
    "NASA-iPSC-1993-3.1-cln.swf.gz": (18_239, 18_239),  # no field 9 at all: every estimate is exact
    "HPC2N-2002-2.1-cln.swf.gz": (202_876, 0),
    "CEA-Curie-2011-2.1-cln.swf.gz": (312_807, 0),
}


@pytest.mark.parametrize("name", list(REAL_FALLBACKS))
def test_real_traces_fallback_counts(name: str) -> None:
    path = real_trace(name)
    report = read_swf(path).report
    assert (report.jobs_kept, report.estimate_fallback_jobs) == REAL_FALLBACKS[name]
    assert stream_swf(path).report.estimate_fallback_jobs == report.estimate_fallback_jobs


# ------------------------------------------------------------------ sacct GPU requests

HEADER = (
    "JobID|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqCPUS|NNodes|State|Partition|ReqMem|"
    "AllocTRES|ReqTRES|User"
)


def sacct_row(
    job_id: str,
    alloc_tres: str,
    req_tres: str = "",
    ncpus: str = "8",
    user: str = "alice",
    submit_minute: int = 0,
) -> str:
    submit = f"2024-03-01T00:{submit_minute:02d}:00"
    start = f"2024-03-01T00:{submit_minute:02d}:10"
    end = f"2024-03-01T01:{submit_minute:02d}:10"
    cells = (
        job_id,
        submit,
        start,
        end,
        "01:00:00",
        "02:00:00",
        ncpus,
        ncpus,
        "1",
        "COMPLETED",
        "gpu",
        "",
        alloc_tres,
        req_tres,
        user,
    )
    return "|".join(cells)


def write_sacct(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "cluster.sacct"
    path.write_text(HEADER + "\n" + "".join(r + "\n" for r in rows))
    return path


def gpu_trace(tmp_path: Path) -> Path:
    """Four jobs: 2 GPUs, typed 1 + 3 GPUs, ReqTRES only (1 GPU), none (gpumem is no request)."""
    path = write_sacct(
        tmp_path,
        sacct_row("100", "cpu=8,mem=16G,node=1,gres/gpu=2,gres/gpu:a100=2"),
        sacct_row("101", "cpu=8,gres/gpu:v100=1,gres/gpu:a100=3", user="bob", submit_minute=1),
        sacct_row("102", "", "cpu=4,gres/gpu=1", ncpus="4", submit_minute=2),
        sacct_row("103", "cpu=8,gres/gpumem=40G,gres/gpuutil=90", user="carol", submit_minute=3),
    )
    out = tmp_path / "cluster.swf"
    convert_sacct(path, out)
    return out


def test_gres_gpu_entries_become_the_jobs_gpu_requests(tmp_path: Path) -> None:
    swf_path = gpu_trace(tmp_path)
    assert [job.gpus for job in read_sacct(tmp_path / "cluster.sacct").jobs] == [2, 4, 1, 0]
    assert "; GPUJobs: 3 (their GPU requests are in cluster.slurm.csv" in swf_path.read_text()
    config = config_from_dict(
        {
            "platform": "nodes=2,cores=8,gpus=4",
            "timeseries": False,
            "workload": {"trace": str(swf_path)},
        }
    )
    jobs, report = build_workload(config, load_platform(config.platform))
    assert [(job.units, job.unit) for job in jobs] == [
        (2, (4, 1, 0, 0)),
        (4, (2, 1, 0, 0)),
        (1, (4, 1, 0, 0)),
        (8, (1, 0, 0, 0)),
    ]
    assert report["gpu_requests"] == {
        "side_file": str(side_file(swf_path)),
        "recorded_gpu_jobs": 3,
        "gpu_jobs": 3,
        "kept_cpu_too_large": 0,
    }


def test_a_replay_runs_the_gpu_requests_and_keeps_the_side_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_sacct(
        tmp_path, sacct_row("100", "cpu=8,gres/gpu=2"), sacct_row("101", "cpu=8", submit_minute=1)
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "replay",
                str(path),
                "--platform",
                "nodes=2,cores=8,gpus=2",
                "--scheduler",
                "easy",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    jobs = (out / "jobs.csv").read_text().splitlines()
    header = jobs[0].split(",")
    gpus = {row.split(",")[0]: row.split(",")[header.index("gpus")] for row in jobs[1:]}
    assert gpus == {"1": "2", "2": "0"}
    assert (out / "trace.slurm.csv").is_file()  # config.json's trace.swf replays with its GPUs
    assert "warning" not in capsys.readouterr().err


def test_a_cpu_only_platform_keeps_the_processors_and_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_sacct(
        tmp_path, sacct_row("100", "cpu=8,gres/gpu=2"), sacct_row("101", "cpu=8", submit_minute=1)
    )
    assert (
        main(["replay", str(path), "--platform", "nodes=2,cores=8", "--out", str(tmp_path / "out")])
        == 0
    )
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["workload"]["gpu_requests"]["kept_cpu_too_large"] == 1
    assert "1 of the 1 jobs with recorded GPU requests" in capsys.readouterr().err


def test_all_families_draws_no_synthetic_gpu_users_on_a_trace_with_gpu_requests(
    tmp_path: Path,
) -> None:
    swf_path = gpu_trace(tmp_path)
    assert (
        platform_accelerators(
            AcceleratorRule(), load_platform("eurora"), 3, recorded_gpus=True
        ).gpu_users
        == 0.0
    )
    config = config_from_dict(
        {
            "platform": "nodes=2,cores=8,gpus=4",
            "seed": 3,
            "timeseries": False,
            "workload": {"trace": str(swf_path), "all_families": {"enabled": True}},
            "policy": {"scheduler": "easy"},
        }
    )
    jobs, report = build_workload(config, load_platform(config.platform))
    assert [job.unit[1] for job in jobs] == [1, 1, 1, 0]  # carol's job stays CPU-only: no draw
    assert "accelerators" not in report  # (no MIC nodes: no rule in force at all)


def test_a_configured_gpu_rule_is_refused_beside_recorded_requests(tmp_path: Path) -> None:
    swf_path = gpu_trace(tmp_path)
    config = config_from_dict(
        {
            "platform": "nodes=2,cores=8,gpus=4",
            "timeseries": False,
            "workload": {"trace": str(swf_path), "accelerators": {"gpu_users": 0.5}},
        }
    )
    with pytest.raises(ConfigError, match="records the GPU requests of 3 jobs"):
        build_workload(config, load_platform(config.platform))


def test_a_missing_side_file_is_an_error_when_the_header_records_gpus(tmp_path: Path) -> None:
    swf_path = gpu_trace(tmp_path)
    side_file(swf_path).unlink()
    with pytest.raises(
        ConfigError, match=r"header records 3 jobs with GPU requests .*cluster\.slurm\.csv"
    ):
        main_or_raise(["replay", str(swf_path), "--platform", "nodes=2,cores=8,gpus=4"])


def main_or_raise(argv: list[str]) -> None:
    """Run the command's function itself, so the error is raised, not printed."""
    from market_hpc.cli.commands import build_parser

    args = build_parser(list_choices=False).parse_args(argv)
    args.func(args)


def test_a_malformed_side_file_names_line_and_column(tmp_path: Path) -> None:
    swf_path = gpu_trace(tmp_path)
    lines = side_file(swf_path).read_text().splitlines()
    lines[2] = lines[2].replace(",1,4,", ",1,four,")
    side_file(swf_path).write_text("\n".join(lines) + "\n")
    config = config_from_dict(
        {"platform": "nodes=2,cores=8,gpus=4", "workload": {"trace": str(swf_path)}}
    )
    with pytest.raises(
        TraceFormatError, match=r"cluster\.slurm\.csv:3: field gpus: 'four' is not a whole number"
    ):
        build_workload(config, load_platform(config.platform))


@pytest.mark.parametrize(
    ("tres", "message"),
    [
        (
            "cpu=8,gres/gpu=-1",
            r"'gres/gpu=-1': GPU count must be a whole number \(ASCII digits\); valid: 0 to ",
        ),
        ("cpu=8,gres/gpu=1.5", "'gres/gpu=1.5': GPU count must be a whole number"),
        ("cpu=8,gres/gpu=", "'gres/gpu=': GPU count must be a whole number"),
        ("cpu=8,gres/gpu", "'gres/gpu': GPU count must be a whole number"),
        ("cpu=8,gres/gpu:a100=1e3", "'gres/gpu:a100=1e3': GPU count must be a whole number"),
        (
            "cpu=8,gres/gpu=99999999999999999999",
            "GPU count is too large; valid: 0 to 9,007,199,254,740,991",
        ),
        (
            "cpu=8,gres/gpu=1,gres/gpu=2",
            r"'gres/gpu=2': gres/gpu appears twice \(first gres/gpu=1\)",
        ),
    ],
)
@pytest.mark.parametrize("column", ["alloctres", "reqtres"])
def test_bad_tres_values_name_file_line_and_field(
    tmp_path: Path, tres: str, message: str, column: str
) -> None:
    bad = sacct_row("2", tres) if column == "alloctres" else sacct_row("2", "", tres)
    path = write_sacct(tmp_path, sacct_row("1", "cpu=8"), bad)
    with pytest.raises(TraceFormatError, match=message) as caught:
        read_sacct(path)
    assert (caught.value.line, caught.value.field) == (3, column)
    assert str(caught.value).startswith(f"{path}:3: field {column}:")
    assert read_sacct(path, lenient=True).rejected == {column: 1}
