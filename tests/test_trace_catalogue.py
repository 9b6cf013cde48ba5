"""``trace list``, ``trace fetch`` and ``replay NAME``: archive logs one command away, fetched
from a local HTTP server standing in for the archive (or a site's mirror)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import REPO, SHARED_TRACES

from market_hpc.cli import main
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.workload import trace_catalogue
from market_hpc.workload.trace_catalogue import (
    CATALOGUE,
    CatalogueTrace,
    TraceFetchError,
    cached_path,
    catalogue_entry,
    fetch_trace,
    resolve_trace,
)

SAMPLE = REPO / "traces" / "lf-240p-5000.swf.gz"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:
        _Quiet.requests.append(self.path)


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[str]:
    """A local HTTP server serving the sample trace under its own name."""
    served = tmp_path / "served"
    served.mkdir()
    (served / SAMPLE.name).write_bytes(SAMPLE.read_bytes())
    _Quiet.requests = []
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(served))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture
def sample_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CatalogueTrace:
    """A catalogue entry for the sample trace, an empty cache folder and no trace folder."""
    monkeypatch.setenv("MARKET_HPC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "no-traces").mkdir()
    monkeypatch.setenv("MARKET_HPC_TRACES", str(tmp_path / "no-traces"))
    data = SAMPLE.read_bytes()
    entry = CatalogueTrace(
        "sample",
        SAMPLE.name,
        "l_sample",
        len(data),
        hashlib.sha256(data).hexdigest(),
        "nodes=240,cores=1",
        5000,
        "Lublin-Feitelson sample",
    )
    monkeypatch.setitem(CATALOGUE, "sample", entry)
    return entry


def test_fetch_verifies_and_caches_then_reuses_the_cache(
    mirror: str, sample_entry: CatalogueTrace
) -> None:
    seen: list[tuple[int, int]] = []
    path = fetch_trace(
        sample_entry, mirror=mirror, progress=lambda done, total: seen.append((done, total))
    )
    assert path == cached_path(sample_entry)
    assert path.read_bytes() == SAMPLE.read_bytes()
    assert seen[-1] == (sample_entry.size, sample_entry.size)
    assert _Quiet.requests == [f"/{SAMPLE.name}"]
    assert fetch_trace(sample_entry, mirror=mirror) == path
    assert len(_Quiet.requests) == 1  # the verified copy is reused, not downloaded again
    fetch_trace(sample_entry, mirror=mirror, force=True)
    assert len(_Quiet.requests) == 2


def test_a_wrong_checksum_keeps_nothing(
    mirror: str, sample_entry: CatalogueTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = CatalogueTrace(**{**sample_entry.__dict__, "sha256": "0" * 64})
    with pytest.raises(
        TraceFetchError, match=r"expected [\d,]+ bytes with SHA-256 0{64}; the file was not kept"
    ):
        fetch_trace(bad, mirror=mirror)
    assert not list(cached_path(bad).parent.iterdir())  # neither the file nor a .part


def test_an_unreachable_mirror_names_the_url(sample_entry: CatalogueTrace) -> None:
    with pytest.raises(
        TraceFetchError, match=r"cannot download sample from http://127\.0\.0\.1:1/lf-240p"
    ):
        fetch_trace(sample_entry, mirror="http://127.0.0.1:1/")


def test_the_archive_url_and_the_mirror_url() -> None:
    kth = catalogue_entry("kth-sp2")
    assert kth.url() == (
        "https://www.cs.huji.ac.il/labs/parallel/workload/l_kth_sp2/KTH-SP2-1996-2.1-cln.swf.gz"
    )
    assert kth.url("https://m.example/pwa/") == "https://m.example/pwa/KTH-SP2-1996-2.1-cln.swf.gz"
    assert catalogue_entry("KTH-SP2-1996-2.1-cln.swf.gz") is kth


def test_unknown_names_list_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(
        UnknownNameError,
        match="unknown catalogue trace 'kth'; valid choices: curie, hpc2n, kth-sp2, nasa-ipsc",
    ):
        catalogue_entry("kth")
    assert main(["trace", "fetch", "kth-sp2", "kth"]) == 2  # checked before any download
    assert "unknown catalogue trace 'kth'" in capsys.readouterr().err


def test_replay_takes_a_fetched_name_and_its_platform(
    mirror: str, sample_entry: CatalogueTrace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "sample", "--first-n", "40", "--out", str(tmp_path / "a")]) == 2
    assert "catalogue log that is not in the cache" in capsys.readouterr().err
    assert main(["trace", "fetch", "sample", "--mirror", mirror]) == 0
    out = capsys.readouterr().out
    assert (
        "checksum verified, cached at" in out
        and "market-hpc replay sample --platform nodes=240,cores=1" in out
    )
    assert main(["trace", "list"]) == 0
    assert "sample" in capsys.readouterr().out
    assert (
        main(
            [
                "replay",
                "SAMPLE",
                "--first-n",
                "40",
                "--scheduler",
                "easy",
                "--out",
                str(tmp_path / "b"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "replay",
                str(cached_path(sample_entry)),
                "--platform",
                "nodes=240,cores=1",
                "--first-n",
                "40",
                "--scheduler",
                "easy",
                "--out",
                str(tmp_path / "c"),
            ]
        )
        == 0
    )
    assert (tmp_path / "b" / "jobs.csv").read_text() == (tmp_path / "c" / "jobs.csv").read_text()


def test_replay_of_a_path_still_needs_a_platform(
    sample_entry: CatalogueTrace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(SAMPLE), "--out", str(tmp_path / "x")]) == 2
    assert "--platform is required" in capsys.readouterr().err
    assert resolve_trace(str(SAMPLE)) == str(SAMPLE)  # a path is a path
    with pytest.raises(
        ConfigError,
        match=r"trace 'Curie' \(curie\) is a catalogue log that is not in the "
        r"cache nor the trace folders \(looked in .*cache/traces, .*no-traces\); fetch it first: "
        r"market-hpc trace fetch curie \(without direct access, add --mirror URL\)",
    ):
        resolve_trace("Curie")  # the cache and the trace folder are empty (sample_entry)


def test_catalogue_matches_the_archive_files_beside_the_checkout() -> None:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"{SHARED_TRACES} absent")
    for entry in CATALOGUE.values():
        local = SHARED_TRACES / entry.file
        if local.is_file():
            assert local.stat().st_size == entry.size, entry.name
            assert trace_catalogue.sha256_of(local) == entry.sha256, entry.name
