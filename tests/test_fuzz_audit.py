"""``market-hpc audit`` on a real run folder corrupted many seeded ways: never a traceback,
exit 2 (one line naming the file) for a folder it cannot read, 1 for a schedule that
breaks an invariant or files that disagree, never 0 for a broken run.

One market run with holds is written once; each case copies it and corrupts one file.
The cases are drawn from a fixed seed, so every run of the file tries the same ones.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market_hpc.cli import main
from market_hpc.experiment.config import load_scenario
from market_hpc.experiment.run import simulate

ROOT = Path(__file__).resolve().parent.parent
SEED = 20261202
CSV_FILES = ("jobs.csv", "segments.csv")
NOT_NUMBERS = ("abc", "0x10", "1.2.3", "--1", "1e", "true", "\u00bd", "7 7")
ODD_NUMBERS = ("nan", "NaN", "inf", "-inf", "-1", "-1e9", "1e400", "", "2.5", "9" * 30, " 7")
BAD_NODES = (
    "garbage",
    "1e3:1",
    "0:1;",
    "0:1:2",
    "0:0",
    "0:-1",
    ":",
    ";",
    "0:99999999999",
    "0:1;;1:1",
    "a:1",
    "0:1 ",
    "1",
)
BAD_CONFIGS = (
    b"",
    b"   ",
    b"null",
    b"[]",
    b'"text"',
    b"{}",
    b'{"config": null}',
    b'{"config": []}',
    b'{"config": {"platform": null}}',
    b'{"config": {"platform": {"nodes": 2}}}',
    b'{"config": {"platform": ""}}',
    b'{"config": {"platform": "nodes=0,cores=4"}}',
    b'{"config": {"platform": "nodes=2"}}',
    b'{"config": {"platform": "moon"}}',
    b'{"config": {"platform": "/nowhere/platform.toml"}}',
    b'{"config": {"platform": "hlrs-3x9", "exclusive": 1}}',
    b'{"config": {"platform": "hlrs-3x9", "workload": 5}}',
    b'{"config": {"platform": "hlrs-3x9", "workload": {"burst_buffer": {"capacity_gb": -1}}}}',
    b'{"config": {"platform": "hlrs-3x9"}, "workload": {"burst_buffer": {"capacity_gb": "big"}}}',
    (
        b'{"config": {"platform": "hlrs-3x9"}, '
        b'"workload": {"burst_buffer": {"capacity_gb": Infinity}}}'
    ),
    b"[" * 100_000 + b"]" * 100_000,
    b"\xff\xfe{}",
    b'{"config": {"platform": "hlrs-3x9"',
)

Corruption = Callable[[Path, np.random.Generator], str]
"""Corrupts a copied run folder; returns what it expects: ``"2"``, ``"1"``, ``"not 0"``
or ``"any"`` (a file whose damage may leave every audited value intact)."""


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = load_scenario(ROOT / "scenarios" / "market_taskgraphs.toml")
    config = replace(config, policy=replace(config.policy, hold_penalty=0.1))
    return simulate(config).write(tmp_path_factory.mktemp("fuzz") / "run")


def _cells(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _set_cell(
    run_dir: Path,
    rng: np.random.Generator,
    columns: tuple[str, ...] | None,
    values: tuple[str, ...],
) -> tuple[str, str, str, str]:
    """Write one of ``values`` in a random cell; returns file, column, old and new text."""
    name = CSV_FILES[rng.integers(len(CSV_FILES))]
    frame = _cells(run_dir / name)
    numeric = [c for c in frame.columns if c not in ("status", "ended", "nodes", "reason")]
    pool = [c for c in (columns or numeric) if c in frame.columns]
    column = pool[rng.integers(len(pool))]
    row = int(rng.integers(len(frame)))
    old, new = frame.loc[row, column], values[rng.integers(len(values))]
    frame.loc[row, column] = new
    frame.to_csv(run_dir / name, index=False)
    return name, column, old, new


def truncate(run_dir: Path, rng: np.random.Generator) -> str:
    name = ("jobs.csv", "segments.csv", "config.json", "jobs.parquet", "segments.parquet")[
        rng.integers(5)
    ]
    data = (run_dir / name).read_bytes()
    (run_dir / name).write_bytes(data[: int(rng.integers(0, len(data.rstrip()) - 1))])
    return "not 0"


def garbage(run_dir: Path, rng: np.random.Generator) -> str:
    name = ("jobs.csv", "segments.csv", "config.json", "jobs.parquet", "segments.parquet")[
        rng.integers(5)
    ]
    data = bytearray((run_dir / name).read_bytes())
    at = int(rng.integers(0, len(data)))
    noise = (
        bytes([0xFF]) + rng.integers(0, 256, int(rng.integers(1, 16))).astype(np.uint8).tobytes()
    )
    data[at : at + len(noise)] = noise
    (run_dir / name).write_bytes(bytes(data))
    return "any" if name.endswith(".parquet") else "2"  # not UTF-8 wherever it lands in text


def empty_file(run_dir: Path, rng: np.random.Generator) -> str:
    name = ("jobs.csv", "segments.csv", "config.json", "jobs.parquet", "segments.parquet")[
        rng.integers(5)
    ]
    (run_dir / name).write_bytes(b"")
    return "2"


def missing_file(run_dir: Path, rng: np.random.Generator) -> str:
    name = ("jobs.csv", "segments.csv", "config.json")[rng.integers(3)]
    (run_dir / name).unlink()
    return "2"


def drop_or_rename_column(run_dir: Path, rng: np.random.Generator) -> str:
    name = CSV_FILES[rng.integers(len(CSV_FILES))]
    frame = _cells(run_dir / name)
    column = frame.columns[rng.integers(len(frame.columns))]
    if rng.random() < 0.5:
        frame = frame.drop(columns=[column])
    else:
        frame = frame.rename(columns={column: column + "_x"})
    frame.to_csv(run_dir / name, index=False)
    return "not 0"


def not_a_number(run_dir: Path, rng: np.random.Generator) -> str:
    _set_cell(run_dir, rng, None, NOT_NUMBERS)
    return "2"


def odd_number(run_dir: Path, rng: np.random.Generator) -> str:
    _, _, old, new = _set_cell(run_dir, rng, None, ODD_NUMBERS)
    same = old == new or (old and new and _float(old) == _float(new))
    return "any" if same else "not 0"


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def bad_nodes(run_dir: Path, rng: np.random.Generator) -> str:
    _set_cell(run_dir, rng, ("nodes",), BAD_NODES)
    return "2"


def bad_config(run_dir: Path, rng: np.random.Generator) -> str:
    (run_dir / "config.json").write_bytes(BAD_CONFIGS[rng.integers(len(BAD_CONFIGS))])
    return "2"


def config_edit(run_dir: Path, rng: np.random.Generator) -> str:
    """A valid config.json key set to a value of the wrong type."""
    written = json.loads((run_dir / "config.json").read_text())
    key = ("platform", "exclusive", "workload")[rng.integers(3)]
    written["config"][key] = [None, 3.5, "", [1]][rng.integers(4)]
    (run_dir / "config.json").write_text(json.dumps(written))
    return "2"


def csv_only_edit(run_dir: Path, rng: np.random.Generator) -> str:
    """A number of the CSV changed to another valid number: its Parquet twin disagrees."""
    name = CSV_FILES[rng.integers(len(CSV_FILES))]
    frame = _cells(run_dir / name)
    column = ("job_id", "submit_time", "start_time", "end_time", "cores", "units")[rng.integers(6)]
    if column not in frame:
        column = "units"
    row = int(rng.integers(len(frame)))
    frame.loc[row, column] = str(int(float(frame.loc[row, column])) + int(rng.integers(1, 5)))
    frame.to_csv(run_dir / name, index=False)
    return "1"


def parquet_only_edit(run_dir: Path, rng: np.random.Generator) -> str:
    name = ("jobs.parquet", "segments.parquet")[rng.integers(2)]
    frame = pd.read_parquet(run_dir / name)
    row = int(rng.integers(len(frame)))
    column = (
        ("start", "end", "units")
        if name.startswith("segments")
        else ("submit_time", "value", "units")
    )
    frame.loc[row, column[rng.integers(3)]] += 1
    frame.to_parquet(run_dir / name, index=False)
    return "1"


def reorder_or_duplicate_rows(run_dir: Path, rng: np.random.Generator) -> str:
    name = CSV_FILES[rng.integers(len(CSV_FILES))]
    frame = _cells(run_dir / name)
    if rng.random() < 0.5:
        frame = pd.concat([frame, frame.iloc[[int(rng.integers(len(frame)))]]])
    else:
        frame = frame.iloc[::-1]
    frame.to_csv(run_dir / name, index=False)
    return "1"


def shifted_time(run_dir: Path, rng: np.random.Generator) -> str:
    """A segment moved in time in both files (the twins agree): the schedule breaks."""
    frame = pd.read_csv(run_dir / "segments.csv")
    row = int(rng.integers(len(frame)))
    frame.loc[row, "start"] = frame.loc[row, "start"] - float(rng.integers(1, 1000))
    frame.to_csv(run_dir / "segments.csv", index=False)
    (run_dir / "segments.parquet").unlink()
    return "1"


def dropped_job(run_dir: Path, rng: np.random.Generator) -> str:
    """A job taken out of both CSV files, the Parquet twins deleted: summary.json counts it."""
    jobs = pd.read_csv(run_dir / "jobs.csv", dtype=str, keep_default_na=False)
    job = jobs["job_id"].iloc[int(rng.integers(len(jobs)))]
    jobs[jobs["job_id"] != job].to_csv(run_dir / "jobs.csv", index=False)
    segments = pd.read_csv(run_dir / "segments.csv", dtype=str, keep_default_na=False)
    segments[segments["job_id"] != job].to_csv(run_dir / "segments.csv", index=False)
    for name in ("jobs.parquet", "segments.parquet"):
        (run_dir / name).unlink()
    return "1"


CORRUPTIONS: dict[str, Corruption] = {
    fn.__name__: fn
    for fn in (
        truncate,
        garbage,
        empty_file,
        missing_file,
        drop_or_rename_column,
        not_a_number,
        odd_number,
        bad_nodes,
        bad_config,
        config_edit,
        csv_only_edit,
        parquet_only_edit,
        reorder_or_duplicate_rows,
        shifted_time,
        dropped_job,
    )
}
CASES_PER_KIND = 5


def test_audit_survives_every_corruption(
    run_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(SEED)
    assert main(["audit", str(run_folder)]) == 0
    outcomes: dict[str, list[int]] = {}
    wrong: list[str] = []
    for kind, corrupt in CORRUPTIONS.items():
        for case in range(CASES_PER_KIND):
            run_dir = Path(shutil.copytree(run_folder, tmp_path / f"{kind}-{case}"))
            expected = corrupt(run_dir, rng)
            capsys.readouterr()
            code = main(["audit", str(run_dir)])  # an escaping exception fails the test
            captured = capsys.readouterr()
            outcomes.setdefault(kind, []).append(code)
            if code == 2:
                lines = captured.err.splitlines()
                if len(lines) != 1 or not lines[0].startswith(f"market-hpc: error: {run_dir}"):
                    wrong.append(
                        f"{kind}-{case}: exit 2 without one line naming the file: {captured.err!r}"
                    )
            ok = {
                "2": code == 2,
                "1": code == 1,
                "not 0": code in (1, 2),
                "any": code in (0, 1, 2),
            }[expected]
            if not ok:
                wrong.append(
                    f"{kind}-{case}: expected {expected}, got {code}: {captured.out}{captured.err}"
                )
            shutil.rmtree(run_dir)
    assert not wrong, "\n".join(wrong)
    assert sum(len(codes) for codes in outcomes.values()) == len(CORRUPTIONS) * CASES_PER_KIND
