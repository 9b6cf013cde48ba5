"""Scenario and sweep files name traces (``trace = "kth-sp2"``): found in the cache ``trace
fetch`` fills, then in ``$MARKET_HPC_TRACES`` or ``../shared/traces``; a trace found nowhere
fails naming the fetch command. Runs with no ``../shared`` at all: a local HTTP mirror serves
a small KTH-like trace under the KTH file name."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, SHARED_TRACES
from local_mirror import serving

from market_hpc.cli import main
from market_hpc.experiment.config import load_scenario
from market_hpc.experiment.sweep_spec import SweepError, load_sweep
from market_hpc.workload.trace_catalogue import CATALOGUE, cached_path, resolve_trace

KTH = CATALOGUE["kth-sp2"]
SMALL_KTH = gzip.compress((REPO / "traces" / "lf-kth-like-2000.swf").read_bytes(), mtime=0)


@pytest.fixture
def no_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache and an empty trace folder: as on a machine without ../shared."""
    monkeypatch.setenv("MARKET_HPC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "traces").mkdir()
    monkeypatch.setenv("MARKET_HPC_TRACES", str(tmp_path / "traces"))
    return tmp_path / "traces"


@pytest.fixture
def small_kth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A mirror serving a 2,000-job KTH-like trace as the KTH file (catalogue entry to match)."""
    served = tmp_path / "served"
    served.mkdir()
    (served / KTH.file).write_bytes(SMALL_KTH)
    monkeypatch.setitem(
        CATALOGUE,
        "kth-sp2",
        dataclasses.replace(KTH, size=len(SMALL_KTH), sha256=hashlib.sha256(SMALL_KTH).hexdigest()),
    )
    with serving(served) as url:
        yield url


def test_fetch_then_run_a_shipped_scenario_without_shared(
    no_shared: Path, small_kth: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = REPO / "scenarios" / "kth_easy.toml"
    assert (
        main(["run", str(scenario), "--set", "workload.first_n=300", "--out", str(tmp_path / "a")])
        == 2
    )
    assert capsys.readouterr().err == (
        "market-hpc: error: trace 'kth-sp2' is a catalogue log that is not in the cache nor "
        f"the trace folders (looked in {tmp_path / 'cache' / 'traces'}, {no_shared}); fetch it "
        "first: market-hpc trace fetch kth-sp2 (without direct access, add --mirror URL)\n"
    )
    assert main(["trace", "fetch", "KTH-SP2", "--mirror", small_kth]) == 0
    assert (
        main(["run", str(scenario), "--set", "workload.first_n=300", "--out", str(tmp_path / "a")])
        == 0
    )
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert config["config"]["workload"]["trace"] == str(cached_path(KTH).resolve())
    assert (tmp_path / "a" / "jobs.csv").read_text().count("\n") == 301


def test_a_name_reads_the_same_file_as_its_path(no_shared: Path, tmp_path: Path) -> None:
    (no_shared / KTH.file).write_bytes(SMALL_KTH)
    (no_shared / "own.swf").write_bytes(b"; my trace\n")
    folder = tmp_path / "scenarios"
    folder.mkdir()
    expected = str((no_shared / KTH.file).resolve())
    for name in ("kth-sp2", "KTH-SP2", KTH.file, f"../../shared/traces/{KTH.file}"):
        assert resolve_trace(name, folder) == expected, name
    assert resolve_trace("own.swf", folder) == str((no_shared / "own.swf").resolve())
    assert resolve_trace("missing.swf", folder) == str(folder / "missing.swf")  # the reader says so
    assert (
        resolve_trace("/abs/KTH-SP2-1996-2.1-cln.swf.gz", folder)
        == "/abs/KTH-SP2-1996-2.1-cln.swf.gz"
    )
    (folder / "kth-sp2").write_text("")
    assert resolve_trace("kth-sp2", folder) == str(
        folder / "kth-sp2"
    )  # an explicit path comes first


def test_a_sweep_naming_a_missing_trace_names_the_file_and_the_fetch(
    no_shared: Path, tmp_path: Path
) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'platform = "kth-sp2"\n[workload]\ntrace = "nasa-ipsc"\n'
        '[policy]\nscheduler = "easy"\n[grid]\n"workload.load_factor" = [1.0, 2.0]\n'
    )
    with pytest.raises(
        SweepError,
        match=rf"^{sweep}: workload\.trace: trace 'nasa-ipsc' is a catalogue log "
        r"that is not in the cache .*market-hpc trace fetch nasa-ipsc \(without direct access, "
        r"add --mirror URL\)$",
    ):
        load_sweep(sweep)
    (no_shared / "own.swf").write_text("")
    sweep.write_text(
        'platform = "kth-sp2"\n[workload]\ntrace = "own.swf"\n'
        '[policy]\nscheduler = "easy"\n[grid]\n"workload.trace" = ["hpc2n"]\n'
    )
    with pytest.raises(
        SweepError,
        match=rf"^{sweep}: workload\.trace: .*trace 'hpc2n' is a catalogue log "
        r"that is not in the cache .*market-hpc trace fetch hpc2n",
    ):
        load_sweep(sweep)


def test_shipped_names_keep_the_run_ids_of_the_shared_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not (SHARED_TRACES / KTH.file).is_file():
        pytest.skip(f"{SHARED_TRACES} absent")
    monkeypatch.setenv("MARKET_HPC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MARKET_HPC_TRACES", raising=False)
    scenarios = REPO / "scenarios"
    assert load_scenario(scenarios / "kth_easy.toml").workload.trace == str(
        (SHARED_TRACES / KTH.file).resolve()
    )
    body = (scenarios / "bbsched_pressure.toml").read_text()
    assert '"workload.trace" = ["kth-sp2", "hpc2n"]' in body
    by_path = tmp_path / "by_path.toml"
    paths = f'"{SHARED_TRACES / KTH.file}", "{SHARED_TRACES / CATALOGUE["hpc2n"].file}"'
    by_path.write_text(
        body.replace('trace = "kth-sp2"', f'trace = "{SHARED_TRACES / KTH.file}"').replace(
            '"workload.trace" = ["kth-sp2", "hpc2n"]', f'"workload.trace" = [{paths}]'
        )
    )
    named = [run.run_id for run in load_sweep(scenarios / "bbsched_pressure.toml").runs]
    assert named == [run.run_id for run in load_sweep(by_path).runs]
    assert len(named) == 16


def test_a_sweep_naming_its_own_trace_needs_not_the_base_scenarios(
    no_shared: Path, tmp_path: Path
) -> None:
    """The overload study's base names kth-sp2; a sweep on its own trace runs without it."""
    own = no_shared / "own.swf"
    own.write_text("1 0 0 10 1 -1 -1 1 20 -1 1 1 1 1 1 -1 -1 -1\n")
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'base = "{REPO / "scenarios" / "overload_study_base.toml"}"\n'
        '[workload]\ntrace = "own.swf"\n[grid]\n"workload.load_factor" = [1.0, 2.0]\n'
    )
    runs = load_sweep(sweep).runs
    assert len(runs) == 2 and {run.config["workload"]["trace"] for run in runs} == {str(own)}
    sweep.write_text(
        f'base = "{REPO / "scenarios" / "overload_study_base.toml"}"\n'
        '[grid]\n"workload.load_factor" = [1.0, 2.0]\n'
    )
    with pytest.raises(
        SweepError, match=r"trace 'kth-sp2' is a catalogue log .*trace fetch kth-sp2"
    ):
        load_sweep(sweep)
