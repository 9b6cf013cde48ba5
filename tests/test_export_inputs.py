"""`export`, `plot`, `report` and `trace convert` on bad run folders, bad traces and a full
disk: one line naming the file, line and column (or key) and what is valid, exit 2; every
write whole or not at all (the previous file kept, no temporary file left)."""

from __future__ import annotations

import builtins
import errno
import gzip
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from market_hpc.atomic_file import atomic_write, write_files
from market_hpc.cli import main
from market_hpc.errors import OutputError

ROOT = Path(__file__).resolve().parents[1]
SACCT = ROOT / "traces" / "slurm-sample.sacct"
PREFIX = "market-hpc: error: "
Capture = pytest.CaptureFixture[str]
NODES_VALID = "node:units pairs joined by ';' (e.g. 0:4;1:2), or empty, nodes 0 to 2"


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real small run folder: 30 task-graph jobs under maxVH on hlrs-3x9 (3 nodes), with
    holds; CSV files only, so the edits below are what the commands read."""
    from market_hpc.experiment.config import load_scenario
    from market_hpc.experiment.run import simulate

    run = simulate(load_scenario(ROOT / "scenarios" / "market_taskgraphs.toml")).write(
        tmp_path_factory.mktemp("real") / "run"
    )
    for name in ("jobs.parquet", "segments.parquet"):
        (run / name).unlink()
    return Path(run)


@pytest.fixture
def run(real_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(real_run, tmp_path / "run"))


def set_cell(path: Path, line: int, column: str, value: str) -> None:
    """Set one cell of a CSV file (``line`` counts the header as line 1)."""
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[line - 1].split(",")
    cells[header.index(column)] = value
    lines[line - 1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line on stderr (with the ``market-hpc: error:`` prefix)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def said(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line on stderr, without its ``market-hpc: error: `` prefix."""
    line = error_line(capsys)
    assert line.startswith(PREFIX), line
    return line.removeprefix(PREFIX)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


# ------------------------------------------------------------- the cases the review found
@pytest.mark.parametrize(
    ("line", "column", "value", "valid"),
    [
        (2, "nodes", "0:x", NODES_VALID),
        (3, "nodes", "7:1", NODES_VALID),
        (4, "nodes", "0:4;", NODES_VALID),
        (2, "units", "abc", "an integer in [1, 2^53 - 1]"),
        (3, "units", "2.5", "an integer in [1, 2^53 - 1]"),
        (5, "cores", "-1", "an integer in [0, 2^53 - 1]"),
        (2, "start_time", "soon", "a finite number in [0, 2^50 (1.1e15 s)] or empty"),
        (2, "status", "done", "queued, running, held, finished, dropped, rejected, skipped"),
        (2, "job_id", "1e400", "an integer in [0, 2^53 - 1]"),
    ],
)
def test_a_bad_jobs_cell_is_named(
    run: Path, capsys: pytest.CaptureFixture[str], line: int, column: str, value: str, valid: str
) -> None:
    set_cell(run / "jobs.csv", line, column, value)
    shown = {"2.5": 2.5, "-1": -1, "1e400": float("inf")}.get(value, value)
    expected = f"{run / 'jobs.csv'}: line {line}, column {column}: got {shown!r}; valid: {valid}"
    for command in (["export", str(run)], ["plot", str(run)], ["report", str(run)]):
        assert main(command) == 2
        assert said(capsys) == expected
    assert sorted(snapshot(run)) == [
        "config.json",
        "jobs.csv",
        "market_jobs.csv",
        "segments.csv",
        "summary.json",
        "timeseries.csv",
    ]  # nothing written


def test_a_bad_segments_cell_is_named(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_cell(run / "segments.csv", 3, "nodes", "x:1")
    assert main(["export", str(run)]) == 2
    assert said(capsys) == (
        f"{run / 'segments.csv'}: line 3, column nodes: got 'x:1'; valid: "
        "node:units pairs joined by ';' (e.g. 0:4;1:2), nodes 0 to 2"
    )
    set_cell(run / "segments.csv", 3, "nodes", "2:2")
    set_cell(run / "segments.csv", 3, "units", "0:4")
    assert main(["plot", str(run)]) == 2
    assert said(capsys) == (
        f"{run / 'segments.csv'}: line 3, column units: got '0:4'; valid: "
        "an integer in [1, 2^53 - 1]"
    )


@pytest.mark.parametrize("column", ["start_time", "status"])
def test_a_missing_column_is_named(run: Path, capsys: Capture, column: str) -> None:
    frame = pd.read_csv(run / "jobs.csv", dtype=str, keep_default_na=False)
    frame.drop(columns=[column]).to_csv(run / "jobs.csv", index=False)
    assert main(["export", str(run)]) == 2
    assert error_line(capsys) == (
        f"market-hpc: error: {run / 'jobs.csv'}: no column {column}; valid: a header with job_id, "
        "submit_time, start_time, end_time, wait_time, run_time, status, cores, units, estimate, "
        "nodes (as market-hpc run/replay --out writes)"
    )


def test_a_duplicated_jobs_row_is_named(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = (run / "jobs.csv").read_text().splitlines(keepends=True)
    (run / "jobs.csv").write_text("".join(lines[:4] + lines[3:]))  # job 3 on lines 4 and 5
    for command in ("export", "plot"):
        assert main([command, str(run)]) == 2
        assert said(capsys) == (
            f"{run / 'jobs.csv'}: line 5: job_id 3 again (first on line 4); valid: one row per job"
        )


def test_a_cut_jobs_file_is_refused_by_the_summary_count(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (run / "jobs.csv").read_text().splitlines(keepends=True)
    (run / "jobs.csv").write_text("".join(lines[:21]))  # cut at a line end: 20 of 30 jobs
    assert main(["export", str(run)]) == 2
    assert said(capsys) == (
        f"{run / 'jobs.csv'}: 20 job rows, but summary.json counts 30 "
        "(jobs_total + jobs_skipped); valid: one row per job (is the file "
        "cut short?)"
    )


SHAPE = 'valid: an object (config.json is {"config": {"platform": ..., ...}, ...})'


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (None, f"key (top level): got null; {SHAPE}"),
        ({"config": None}, f"key config: got null; {SHAPE}"),
        (
            {"config": {"platform": 3}},
            (
                "key config.platform: got 3; valid: a platform preset name "
                "or spec text such as nodes=2,cores=4"
            ),
        ),
        (
            {"config": {"platform": "hlrs-3x9", "policy": []}},
            "key config.policy: got []; valid: an object",
        ),
        (
            {"config": {"platform": "hlrs-3x9", "workload": {"trace": 7}}},
            "key config.workload.trace: got 7; valid: a file name or null",
        ),
    ],
)
def test_a_bad_config_json_is_named(
    run: Path, capsys: pytest.CaptureFixture[str], document: Any, message: str
) -> None:
    (run / "config.json").write_text(json.dumps(document))
    for command in ("export", "plot", "report"):
        assert main([command, str(run)]) == 2
        assert error_line(capsys) == f"market-hpc: error: {run / 'config.json'}: {message}"


def test_unreadable_files_are_named(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run / "summary.json").write_text('{"jobs_total": 3')
    assert main(["plot", str(run)]) == 2
    assert said(capsys) == (
        f"{run / 'summary.json'}: not JSON: Expecting ',' delimiter: line 1 "
        "column 17 (char 16); valid: the summary.json market-hpc run/replay "
        "--out writes"
    )
    (run / "summary.json").unlink()
    set_cell(run / "timeseries.csv", 3, "used_cores", "many")
    assert main(["plot", str(run)]) == 2
    assert said(capsys) == (
        f"{run / 'timeseries.csv'}: line 3, column used_cores: got 'many'; "
        "valid: a finite number >= 0"
    )
    (run / "jobs.parquet").write_bytes(b"PAR1 not really")
    assert main(["export", str(run)]) == 2
    assert said(capsys).startswith(f"{run / 'jobs.parquet'}: cannot be read as Parquet (")


# ------------------------------------------------------------------------------ full disk
class FullDisk:
    """``open`` for writing under ``root`` gives a file whose writes store half their
    bytes and then fail with ENOSPC, as a disk that fills up mid-write."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.real = builtins.open
        self.failed = 0

    def __call__(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = self.real(file, mode, *args, **kwargs)
        if not any(flag in mode for flag in "wax") or not str(file).startswith(self.root):
            return handle
        disk = self

        class Full:
            def __getattr__(self, name: str) -> Any:
                return getattr(handle, name)

            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: object) -> None:
                handle.close()

            def write(self, data: Any) -> int:
                handle.write(data[: len(data) // 2])
                handle.flush()
                disk.failed += 1
                raise OSError(errno.ENOSPC, "No space left on device")

        return Full()


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FullDisk]:
    disk = FullDisk(tmp_path)
    monkeypatch.setattr(builtins, "open", disk)
    monkeypatch.setattr(io, "open", disk)
    yield disk


def test_export_on_a_full_disk_keeps_the_previous_files(
    run: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert main(["export", str(run)]) == 0
    capsys.readouterr()
    before = snapshot(run)
    disk = FullDisk(tmp_path)
    monkeypatch.setattr(builtins, "open", disk)
    monkeypatch.setattr(io, "open", disk)
    assert main(["export", str(run)]) == 2
    assert said(capsys) == (
        f"cannot write {run / 'schedule.swf'}: No space left on device "
        "(none of the 3 files written, the previous ones unchanged)"
    )
    assert disk.failed == 1 and snapshot(run) == before  # no temporary file left either


def test_export_on_a_full_disk_leaves_no_file(
    run: Path, capsys: pytest.CaptureFixture[str], full_disk: FullDisk
) -> None:
    before = snapshot(run)
    assert main(["export", str(run), "--swf", str(run / "s.swf.gz")]) == 2
    assert error_line(capsys).endswith(
        "No space left on device (none of the 3 files written, the previous ones unchanged)"
    )
    assert snapshot(run) == before


def test_plot_and_report_on_a_full_disk(
    run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert main(["plot", str(run)]) == 0
    capsys.readouterr()
    before = snapshot(run)
    assert {"schedule.html", "schedule.svg", "plots/schedule-gantt.png"} <= set(before)
    disk = FullDisk(tmp_path)
    monkeypatch.setattr(builtins, "open", disk)
    monkeypatch.setattr(io, "open", disk)
    for command in ("plot", "report"):
        assert main([command, str(run)]) == 2
        assert said(capsys) == (
            f"cannot write {run / 'schedule.svg'}: No space left on device "
            "(none of the 6 files written, the previous ones unchanged)"
        )
        assert snapshot(run) == before


def sacct_copy(tmp_path: Path) -> Path:
    source = tmp_path / "cluster.sacct"
    shutil.copyfile(SACCT, source)
    return source


def test_trace_convert_on_a_full_disk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = sacct_copy(tmp_path)
    out = tmp_path / "out" / "cluster.swf"
    out.parent.mkdir()
    disk = FullDisk(out.parent)
    monkeypatch.setattr(builtins, "open", disk)
    monkeypatch.setattr(io, "open", disk)
    assert main(["trace", "convert", str(source), "--out", str(out)]) == 2
    assert error_line(capsys) == (
        f"market-hpc: error: cannot write {out}: No space left on device "
        "(none of the 2 files written, the previous ones unchanged)"
    )
    assert list(out.parent.iterdir()) == []
    monkeypatch.undo()
    assert main(["trace", "convert", str(source), "--out", str(out)]) == 0
    before = snapshot(out.parent)
    assert sorted(before) == ["cluster.slurm.csv", "cluster.swf"]
    monkeypatch.setattr(builtins, "open", disk)
    monkeypatch.setattr(io, "open", disk)
    assert main(["trace", "convert", str(source), "--out", str(out)]) == 2
    assert snapshot(out.parent) == before


def test_the_atomic_writer_removes_its_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("old")

    def fail(handle: Any) -> None:
        handle.write(b"new, half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as info:
        atomic_write(target, fail)
    assert (info.value.errno, info.value.filename) == (errno.ENOSPC, str(target))
    assert [path.name for path in tmp_path.iterdir()] == ["a.txt"] and target.read_text() == "old"
    with pytest.raises(
        OutputError,
        match=r"cannot write .*missing/b.txt: No such file or "
        r"directory \(none of the 2 files written",
    ):
        write_files({target: "new", tmp_path / "missing" / "b.txt": b"x"})
    assert target.read_text() == "old" and [path.name for path in tmp_path.iterdir()] == ["a.txt"]


# ------------------------------------------------------------------------- trace convert
def test_trace_convert_refuses_a_cut_gzip_naming_the_line(tmp_path: Path, capsys: Capture) -> None:
    data = gzip.compress(SACCT.read_bytes(), mtime=0)
    (tmp_path / "whole.sacct.gz").write_bytes(data)
    assert (
        main(
            [
                "trace",
                "convert",
                str(tmp_path / "whole.sacct.gz"),
                "--out",
                str(tmp_path / "whole.swf"),
            ]
        )
        == 0
    )
    assert _jobs(tmp_path / "whole.swf") == _jobs(_converted(tmp_path))
    capsys.readouterr()
    cut = tmp_path / "cut.sacct.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert main(["trace", "convert", str(cut), "--out", str(tmp_path / "cut.swf")]) == 2
    line = error_line(capsys)
    assert line.startswith(f"market-hpc: error: {cut}: line ") and line.endswith(
        ": the gzip data is cut short or corrupt (Compressed file ended before the end-of-stream "
        "marker was reached); valid: a whole .gz file (gzip -t checks it)"
    )
    assert not (tmp_path / "cut.swf").exists() and not (tmp_path / "cut.slurm.csv").exists()


def _converted(tmp_path: Path) -> Path:
    """The SWF of the plain (not compressed) sacct file."""
    plain = sacct_copy(tmp_path)
    assert main(["trace", "convert", str(plain), "--out", str(tmp_path / "plain.swf")]) == 0
    return tmp_path / "plain.swf"


def _jobs(swf: Path) -> list[str]:
    lines = [line for line in swf.read_text().splitlines() if not line.startswith(";")]
    assert len(lines) == 80
    return lines


def test_trace_convert_refuses_a_bad_field_naming_line_and_field(
    tmp_path: Path, capsys: Capture
) -> None:
    lines = SACCT.read_text().splitlines()
    cells = lines[1].split("|")
    cells[6] = "many"  # NCPUS
    lines[1] = "|".join(cells)
    source = tmp_path / "bad.sacct"
    source.write_text("\n".join(lines) + "\n")
    assert main(["trace", "convert", str(source), "--out", str(tmp_path / "bad.swf")]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"{PREFIX}{source}:2: field ncpus: 'many' is not a whole number"
    assert "Traceback" not in err and sorted(p.name for p in tmp_path.iterdir()) == ["bad.sacct"]
