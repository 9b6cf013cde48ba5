"""Seeded corruptions of one real run folder into `export` (every format), `plot` and
`report`, and of a real sacct file into `trace convert`.

Each case exits 0 or 2, never with a traceback or a hang; exit 2 is one line on stderr;
no command leaves an empty output file or a temporary file behind, and a failed
conversion leaves no output at all. Bounded: a fixed seed and a fixed number of cases
(tests/export_fuzz_cases.py makes them).
"""

from __future__ import annotations

import contextlib
import gzip
import random
import re
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from export_fuzz_cases import corruptions

from market_hpc.cli import main

ROOT = Path(__file__).resolve().parents[1]
SACCT = ROOT / "traces" / "slurm-sample.sacct"
SEED = 20240301
EXPORT_CASES, PLOT_CASES, REPORT_CASES, CONVERT_CASES = 30, 2, 1, 24
ALARM_SECONDS = 60  # a case takes well under a second; only a hang gets near this


@contextlib.contextmanager
def no_hang() -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise TimeoutError(f"no result after {ALARM_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(ALARM_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 task-graph jobs under maxVH on hlrs-3x9, with holds (segments of several parts)."""
    from market_hpc.experiment.config import load_scenario
    from market_hpc.experiment.run import simulate

    folder = tmp_path_factory.mktemp("fuzz") / "run"
    scenario = load_scenario(ROOT / "scenarios" / "market_taskgraphs.toml")
    return Path(simulate(scenario).write(folder))


def _columns(run: Path) -> dict[str, list[str]]:
    return {
        name: list(pd.read_csv(run / name, nrows=0).columns)
        for name in ("jobs.csv", "segments.csv", "timeseries.csv")
    }


def _files(folder: Path) -> dict[Path, int]:
    return {path: path.stat().st_size for path in folder.rglob("*") if path.is_file()}


def _check(argv: list[str], folder: Path, what: str, capsys: pytest.CaptureFixture[str]) -> int:
    """Run one command on a corrupted folder and check every outcome rule."""
    before = _files(folder)
    with no_hang():
        code = main(argv)
    err = capsys.readouterr().err
    where = f"{' '.join(argv[:1])} on {what}"
    assert code in (0, 2), f"{where}: exit {code}: {err}"
    assert "Traceback" not in err, f"{where}: {err}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("market-hpc: error: "), f"{where}: {err}"
    else:
        assert err == "", f"{where}: exit 0 with {err}"
    after = _files(folder)
    empty = [path for path, size in after.items() if size == 0 and before.get(path) != 0]
    assert not empty, f"{where}: empty output files {empty}"
    temporary = [path for path in after if path.name.endswith(".tmp")]
    assert not temporary, f"{where}: temporary files left {temporary}"
    return code


def _cases(real_run: Path, count: int, salt: int) -> list[tuple[str, object]]:
    return list(corruptions(SEED + salt, count, _columns(real_run)))


def test_export_every_format_on_corrupted_run_folders(
    real_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = []
    for number, (what, corrupt) in enumerate(_cases(real_run, EXPORT_CASES, 0)):
        folder = Path(shutil.copytree(real_run, tmp_path / f"r{number}"))
        corrupt(folder)  # type: ignore[operator]
        swf = ["--swf", str(folder / "schedule.swf.gz")] if number % 2 else []
        code = _check(["export", str(folder), *swf], folder, what, capsys)
        if code == 0:
            outputs = ("workload.json", "batsim_jobs.csv", swf[1] if swf else "schedule.swf")
            assert all((folder / name).stat().st_size > 0 for name in outputs)
        else:  # plot and report read what export reads (and more): refused the same way
            page = ["plot", "report"][number % 2]
            assert _check([page, str(folder)], folder, what, capsys) == 2, f"{page} on {what}"
        codes.append(code)
        shutil.rmtree(folder)
    assert codes.count(2) >= EXPORT_CASES // 3 and codes.count(0) >= 1  # the cases do bite


@pytest.mark.parametrize(
    ("command", "count", "salt"), [("plot", PLOT_CASES, 1), ("report", REPORT_CASES, 2)]
)
def test_plot_and_report_on_more_corrupted_run_folders(
    real_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    count: int,
    salt: int,
) -> None:
    for number, (what, corrupt) in enumerate(_cases(real_run, count, salt)):
        folder = Path(shutil.copytree(real_run, tmp_path / f"r{number}"))
        corrupt(folder)  # type: ignore[operator]
        if _check([command, str(folder)], folder, what, capsys) == 0:
            assert (folder / "schedule.html").stat().st_size > 0
        capsys.readouterr()
        shutil.rmtree(folder)


CELLS = (
    "abc",
    "",
    "-1",
    "1e400",
    "Unknown",
    "99999999999999999999",
    "2024-13-01T00:00:00",
    "25:99:99",
    "gres/gpu=x",
    "é",
    "0",
    "1-",
    "CANCELLED by 0",
)


def _sacct_cases(count: int) -> list[tuple[str, bytes]]:
    rng = random.Random(SEED)
    source = SACCT.read_bytes()
    cases = []
    for _ in range(count):
        kind = rng.choice(("gzip_cut", "gzip_flip", "garbage", "cell", "fields", "cut"))
        if kind == "gzip_cut":
            packed = gzip.compress(source, mtime=0)
            data = packed[: rng.randrange(1, len(packed))]
        elif kind == "gzip_flip":
            packed = bytearray(gzip.compress(source, mtime=0))
            packed[rng.randrange(10, len(packed))] ^= 0xFF
            data = bytes(packed)
        elif kind == "garbage":
            data = rng.randbytes(rng.randrange(1, 2000))
        elif kind == "cut":
            data = source[: rng.randrange(len(source))]
        else:
            lines = source.decode().split("\n")
            line = rng.randrange(1, len(lines) - 1)
            cells = lines[line].split("|")
            if kind == "cell":
                cells[rng.randrange(len(cells))] = rng.choice(CELLS)
            else:
                cells.append("x")
            lines[line] = "|".join(cells)
            data = "\n".join(lines).encode()
        cases.append((kind, data))
    return cases


def test_trace_convert_on_corrupted_sacct_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = []
    for number, (kind, data) in enumerate(_sacct_cases(CONVERT_CASES)):
        folder = tmp_path / f"c{number}"
        folder.mkdir()
        source = folder / ("in.sacct.gz" if kind.startswith("gzip") else "in.sacct")
        source.write_bytes(data)
        with no_hang():
            code = main(["trace", "convert", str(source), "--out", str(folder / "out.swf")])
        err = capsys.readouterr().err
        assert code in (0, 2) and "Traceback" not in err, f"{kind}: {err}"
        written = sorted(path.name for path in folder.iterdir() if path != source)
        if code == 2:
            first = err.splitlines()[0]
            assert first.startswith(f"market-hpc: error: {source}"), f"{kind}: {err}"
            if kind in ("gzip_cut", "gzip_flip", "garbage", "fields"):
                assert re.match(
                    rf"market-hpc: error: {re.escape(str(source))}(:\d+:|: line \d+:)", first
                ), f"{kind}: {first}"
            assert written == [], f"{kind}: {written} left by a failed conversion"
        else:
            assert written == ["out.slurm.csv", "out.swf"]
            assert all((folder / name).stat().st_size > 0 for name in written)
        codes.append(code)
    assert codes.count(2) >= CONVERT_CASES // 3 and codes.count(0) >= 1
