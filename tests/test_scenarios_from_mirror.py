"""Every shipped scenario and sweep runs on a machine with no ``../shared``: its traces are
named by catalogue name, fetched from a local HTTP mirror into an empty cache
(``market-hpc trace fetch NAME --mirror URL``), and its smallest case runs: a scenario on
its first jobs, a sweep's plan (``--quick`` where it has one) at one run per trace it names.

The mirror serves synthetic stand-ins under the archive's file names: one job every 4 hours
over 800 days (so that every shipped window holds jobs), at most 64 processors, run times of
1 minute to 2 hours under their requests."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
from local_mirror import serving, stand_in

from market_hpc.cli import main
from market_hpc.experiment.sweep_exec import RunTask, execute_run
from market_hpc.experiment.sweep_spec import load_sweep
from market_hpc.workload.trace_catalogue import CATALOGUE, cached_path

SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))
FIRST_JOBS = 40  # each run's first jobs (after its window)


def _names(scenario: Path) -> set[str]:
    """The catalogue names a scenario or sweep file mentions."""
    text = scenario.read_text()
    return {name for name in CATALOGUE if f'"{name}"' in text}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, bytes]]]:
    served = tmp_path_factory.mktemp("served")
    files = {}
    for seed, (name, entry) in enumerate(sorted(CATALOGUE.items())):
        files[name] = stand_in(seed + 1)
        (served / entry.file).write_bytes(files[name])
    with serving(served) as url:
        yield url, files


@pytest.fixture
def fetched(
    mirror: tuple[str, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """An empty cache and trace folder (no ../shared), then every catalogue log fetched."""
    url, files = mirror
    monkeypatch.setenv("MARKET_HPC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "traces").mkdir()
    monkeypatch.setenv("MARKET_HPC_TRACES", str(tmp_path / "traces"))
    for name, data in files.items():
        entry = dataclasses.replace(
            CATALOGUE[name], size=len(data), sha256=hashlib.sha256(data).hexdigest()
        )
        monkeypatch.setitem(CATALOGUE, name, entry)
        assert main(["trace", "fetch", name, "--mirror", url]) == 0
    return tmp_path


def test_every_shipped_file_that_names_a_trace_is_covered() -> None:
    named = [s.name for s in SCENARIOS if _names(s)]
    assert len(named) >= 15, named  # the study, BBSched, CP, queues, heterogeneity, market files


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.stem for s in SCENARIOS])
def test_a_shipped_file_runs_its_smallest_case_from_the_mirror(
    scenario: Path, fetched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = _names(scenario)
    if not names:
        pytest.skip(f"{scenario.name} names no catalogue trace")
    text = scenario.read_text()
    if "[grid]" not in text and "[[zip]]" not in text:
        out = fetched / "run"
        argv = ["run", str(scenario), "--set", f"workload.first_n={FIRST_JOBS}", "--out", str(out)]
        assert main(argv) == 0, capsys.readouterr().err
        assert (out / "jobs.csv").read_text().count("\n") >= 2
        return
    sweep = load_sweep(scenario, quick="[quick" in text)
    cached = {str(cached_path(CATALOGUE[name]).resolve()): name for name in CATALOGUE}
    first_per_trace = {}
    for run in sweep.runs:
        trace = run.config["workload"].get("trace")
        assert trace is None or trace in cached, f"{run.run_id}: {trace} is not a fetched log"
        first_per_trace.setdefault(trace, run)
    assert {cached[t] for t in first_per_trace if t is not None} <= names
    for trace, run in first_per_trace.items():
        config = {**run.config, "workload": {**run.config["workload"], "first_n": FIRST_JOBS}}
        row = execute_run(RunTask(run.run_id, config))
        assert row["status"] == "ok", f"{scenario.name} on {trace}: {row['error']}"
