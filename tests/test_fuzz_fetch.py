"""``trace fetch`` against a hostile mirror: every misbehaviour of a local threaded HTTP
server ends as one line naming the URL and exit code 2, within the deadline, and leaves
nothing in the cache. Seeded (random replies from ``random.Random(20240)``) and bounded
(tiny deadlines and rate windows)."""

from __future__ import annotations

import hashlib
import http.server
import random
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO

from market_hpc.cli import main, tools
from market_hpc.errors import ConfigError
from market_hpc.workload import http_fetch
from market_hpc.workload.trace_catalogue import (
    CATALOGUE,
    CatalogueTrace,
    TraceFetchError,
    cache_dir,
    fetch_trace,
)

BODY = (REPO / "traces" / "lf-240p-5000.swf.gz").read_bytes()
FILE = "lf-240p-5000.swf.gz"
RANDOM_REPLIES = [
    random.Random(20240 + i).randbytes(random.Random(i).randrange(1, 400)) for i in range(40)
]
PLAIN_REPLIES = [
    b"",
    b"\r\n\r\n",
    b"220 ProFTPD Server ready.\r\n",
    b"SSH-2.0-OpenSSH_9.6\r\n",
    b"HTTP/1.1 abc OK\r\n\r\n",
    b"HTTP/9 200 OK\r\n\r\n",
    b"<html>hello</html>",
]


class _Misbehaving(http.server.BaseHTTPRequestHandler):
    """``GET /CASE/FILE``: the reply CASE names."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        case = self.path.strip("/").split("/")[0]
        try:
            getattr(self, "case_" + case.split("-")[0].replace(".", "_"))(case)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _head(self, status: int = 200, length: int | None = len(BODY), **extra: str) -> None:
        self.send_response(status)
        if length is not None:
            self.send_header("Content-Length", str(length))
        for key, value in extra.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()

    def case_ok(self, case: str) -> None:
        self._head()
        self.wfile.write(BODY)

    def case_raw(self, case: str) -> None:
        kind, index = case.split("-")[1:]
        replies = RANDOM_REPLIES if kind == "random" else PLAIN_REPLIES
        self.wfile.write(replies[int(index)])

    def case_status(self, case: str) -> None:
        code = int(case.split("-")[1])
        self._head(code, length=5)
        self.wfile.write(b"nope\n")

    def case_chunked(self, case: str) -> None:
        self._head(length=None, Transfer_Encoding="chunked")
        self.wfile.write(b"zz\r\nhello" if case == "chunked-bad" else b"3e8\r\n" + BODY[:10])

    def case_hugeheader(self, case: str) -> None:
        self._head(X_Big="a" * 100_000)
        self.wfile.write(BODY)

    def case_manyheaders(self, case: str) -> None:
        self._head(**{f"X_{i}": "1" for i in range(150)})

    def case_truncated(self, case: str) -> None:
        self._head()
        self.wfile.write(BODY[: len(BODY) // 2])

    def case_wrong(self, case: str) -> None:
        self._head()
        self.wfile.write(bytes(len(BODY)))

    def case_longer(self, case: str) -> None:
        self._head(length=None)  # no length: the body runs to the end of the connection
        self.wfile.write(BODY + b"extra bytes")

    def case_announce(self, case: str) -> None:
        self._head(length=len(BODY) + 1)

    def case_redirect(self, case: str) -> None:
        target = {
            "redirect-ok": f"/ok/{FILE}",
            "redirect-ftp": f"ftp://127.0.0.1/{FILE}",
            "redirect-loop": self.path,
        }[case]
        self._head(302, length=0, Location=target)

    def case_trickle(self, case: str) -> None:
        self._head()
        self._drip(BODY)

    def case_slowheader(self, case: str) -> None:
        self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        self._drip(b"a" * 60_000)

    def case_silent(self, case: str) -> None:
        self._head()
        time.sleep(3)

    def _drip(self, data: bytes) -> None:
        for start in range(0, min(len(data), 4_000), 20):  # 400 B/s, at most 10 s
            self.wfile.write(data[start : start + 20])
            self.wfile.flush()
            time.sleep(0.05)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Misbehaving)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CatalogueTrace:
    monkeypatch.setenv("MARKET_HPC_CACHE", str(tmp_path / "cache"))
    entry = CatalogueTrace(
        "sample",
        FILE,
        "l_sample",
        len(BODY),
        hashlib.sha256(BODY).hexdigest(),
        "nodes=240,cores=1",
        5000,
        "Lublin-Feitelson sample",
    )
    monkeypatch.setitem(CATALOGUE, "sample", entry)
    return entry


def _fetch_fails(server: str, case: str, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    """Run ``trace fetch sample`` from ``server/case``; return the one error line."""
    capsys.readouterr()
    assert main(["trace", "fetch", "sample", "--mirror", f"{server}/{case}", *options]) == 2
    err = capsys.readouterr().err.splitlines()
    errors = [line for line in err if not line.startswith("  ")]  # progress lines are indented
    assert len(errors) == 1, err
    url = f"{server}/{case}/{FILE}"
    assert errors[0].startswith(f"market-hpc: error: cannot download sample from {url}: "), errors[
        0
    ]
    assert not list(cache_dir().iterdir())  # neither the file nor a partial download
    return errors[0].removeprefix(f"market-hpc: error: cannot download sample from {url}: ")


@pytest.mark.parametrize(
    ("case", "cause"),
    [
        ("raw-plain-0", "the server closed the connection without an HTTP reply"),
        ("raw-plain-2", "not an HTTP reply (it begins '220 ProFTPD Server ready.')"),
        ("raw-plain-3", "not an HTTP reply (it begins 'SSH-2.0-OpenSSH_9.6')"),
        ("raw-plain-6", "not an HTTP reply (it begins '<html>hello</html>')"),
        ("status-404", "HTTP 404 Not Found"),
        ("status-500", "HTTP 500 Internal Server Error"),
        ("chunked-bad", "the body ended early or its chunked encoding is broken"),
        ("chunked-cut", "the body ended early or its chunked encoding is broken"),
        ("hugeheader", "invalid HTTP reply: got more than 65536 bytes when reading header line"),
        ("manyheaders", "invalid HTTP reply: got more than 100 headers"),
        ("truncated", f"the connection closed after {len(BODY) // 2:,} of {len(BODY):,} bytes"),
        ("longer", f"the server sent more than the file's {len(BODY):,} bytes"),
        ("announce", f"the server announces {len(BODY) + 1:,} bytes; the file has {len(BODY):,}"),
        ("redirect-ftp", f"redirected to 'ftp://127.0.0.1/{FILE}': scheme ftp:// is not supported"),
        ("redirect-loop", "more than 5 redirects"),
    ],
)
def test_each_misbehaviour_is_one_line_naming_the_url(
    server: str, case: str, cause: str, sample: CatalogueTrace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _fetch_fails(server, case, capsys) == cause


def test_a_wrong_checksum_is_named_and_nothing_kept(
    server: str, sample: CatalogueTrace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", "fetch", "sample", "--mirror", f"{server}/wrong"]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == (
        f"market-hpc: error: {server}/wrong/{FILE}: "
        f"got {len(BODY):,} bytes with SHA-256 {hashlib.sha256(bytes(len(BODY))).hexdigest()}, "
        f"expected {len(BODY):,} bytes with SHA-256 {sample.sha256}; the file was not kept"
    )
    assert not list(cache_dir().iterdir())


def test_random_replies_never_escape_as_tracebacks(
    server: str, sample: CatalogueTrace, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [f"raw-random-{i}" for i in range(len(RANDOM_REPLIES))]
    cases += [f"raw-plain-{i}" for i in range(len(PLAIN_REPLIES))]
    for case in cases:
        _fetch_fails(server, case, capsys, "--deadline", "5")


def test_tls_to_a_plain_http_server_is_one_line(
    server: str, sample: CatalogueTrace, capsys: pytest.CaptureFixture[str]
) -> None:
    https = server.replace("http://", "https://")
    assert main(["trace", "fetch", "sample", "--mirror", f"{https}/ok"]) == 2
    assert capsys.readouterr().err == (
        f"market-hpc: error: cannot download sample from {https}/ok/{FILE}: "
        "TLS: WRONG_VERSION_NUMBER\n"
    )


def test_a_proxy_variable_that_is_not_host_port_is_one_line(
    server: str, sample: CatalogueTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:port")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    with pytest.raises(
        TraceFetchError,
        match=r"/ok/lf-240p-5000\.swf\.gz: the proxy of the "
        r"environment: Port could not be cast to integer value as 'port'$",
    ):
        fetch_trace(sample, mirror=f"{server}/ok")


def test_a_redirect_to_the_file_is_followed(server: str, sample: CatalogueTrace) -> None:
    path = fetch_trace(sample, mirror=f"{server}/redirect-ok")
    assert path.read_bytes() == BODY
    assert sorted(p.name for p in cache_dir().iterdir()) == [FILE]


@pytest.mark.parametrize("case", ["trickle", "slowheader"])
def test_the_deadline_ends_a_trickle_in_the_body_or_the_header(
    server: str, case: str, sample: CatalogueTrace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _fetch_fails(server, case, capsys, "--deadline", "0.4", "--min-rate", "0") == (
        "not complete within the deadline of 0.4 s (--deadline)"
    )


def test_the_minimum_rate_ends_a_trickle_and_a_silence(server: str, sample: CatalogueTrace) -> None:
    with pytest.raises(
        TraceFetchError,
        match=r"/trickle/lf-240p-5000\.swf\.gz: [\d,]+ B/s over the last "
        r"0\.\d+ s, below the minimum rate of 10000 B/s \(--min-rate\)$",
    ):
        fetch_trace(sample, mirror=f"{server}/trickle", min_rate=10_000, rate_window=0.3)
    with pytest.raises(
        TraceFetchError,
        match=r"/silent/lf-240p-5000\.swf\.gz: no data for 0\.3 s, below "
        r"the minimum rate of 1000 B/s \(--min-rate\)$",
    ):
        fetch_trace(sample, mirror=f"{server}/silent", rate_window=0.3)
    assert not list(cache_dir().iterdir())


@pytest.mark.parametrize(
    ("mirror", "problem"),
    [
        ("", "empty"),
        ("ftp://127.0.0.1:21/pwa", "scheme ftp:// is not supported"),
        ("file:///tmp", "scheme file:// is not supported"),
        ("127.0.0.1/pwa", "no scheme"),
        ("http://", "no host"),
        ("http://h:port/", "not a URL (Port could not be cast to integer value as 'port')"),
        ("http://h/a b", "contains a space or a control character"),
        ("http://h/pwa?x=1", "a base URL has no ?query or #fragment"),
    ],
)
def test_bad_mirrors_are_refused_before_any_download(
    mirror: str, problem: str, sample: CatalogueTrace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", "fetch", "sample", "--mirror", mirror]) == 2
    assert capsys.readouterr().err == (
        f"market-hpc: error: --mirror {mirror!r}: {problem}; valid: an http:// or https:// "
        "base URL such as https://mirror.example/pwa\n"
    )
    with pytest.raises(ConfigError):
        fetch_trace(sample, mirror=mirror)
    assert not cache_dir().exists() or not list(cache_dir().iterdir())


@pytest.mark.parametrize(
    ("option", "value", "valid"),
    [
        ("--deadline", "0", "> 0"),
        ("--deadline", "-3", "> 0"),
        ("--deadline", "nan", "> 0"),
        ("--deadline", "soon", "> 0"),
        ("--min-rate", "-1", ">= 0"),
        ("--min-rate", "inf", ">= 0"),
    ],
)
def test_bad_limits_exit_2_naming_the_option(
    option: str, value: str, valid: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["trace", "fetch", "sample", option, value])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"market-hpc trace fetch: error: argument {option}: got {value!r}; "
        f"valid: a finite number {valid}"
    )


def test_offline_names_the_url_and_hints_at_a_mirror(
    sample: CatalogueTrace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(
        "market_hpc.workload.trace_catalogue.ARCHIVE", f"http://127.0.0.1:{port}/pwa"
    )
    assert main(["trace", "fetch", "sample"]) == 2
    assert capsys.readouterr().err == (
        "market-hpc: error: cannot download sample from "
        f"http://127.0.0.1:{port}/pwa/l_sample/{FILE}: Connection refused; "
        "without direct access, fetch from a mirror: --mirror URL\n"
    )


def test_an_interrupted_download_leaves_nothing(server: str, sample: CatalogueTrace) -> None:
    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch_trace(sample, mirror=f"{server}/ok", progress=interrupt)
    assert not list(cache_dir().iterdir())


def test_a_cache_that_cannot_be_written_is_one_line(
    server: str,
    sample: CatalogueTrace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("MARKET_HPC_CACHE", str(tmp_path / "a-file"))
    assert main(["trace", "fetch", "sample", "--mirror", f"{server}/ok"]) == 2
    assert capsys.readouterr().err == (
        f"market-hpc: error: cannot write the trace cache {tmp_path / 'a-file' / 'traces'}: "
        "Not a directory (MARKET_HPC_CACHE names another folder)\n"
    )


def test_the_command_line_defaults_are_the_library_defaults() -> None:
    assert (tools.DEFAULT_DEADLINE, tools.DEFAULT_MIN_RATE, tools.RATE_WINDOW) == (
        http_fetch.DEFAULT_DEADLINE,
        http_fetch.DEFAULT_MIN_RATE,
        http_fetch.RATE_WINDOW,
    )
