"""Download one file over HTTP(S) with an overall deadline and a minimum transfer rate.

Written on :mod:`http.client` rather than ``urllib.request`` so that every failure of a
hostile or broken server (bytes that are not HTTP, a broken chunked body, a 100 kB header
line, a body cut short, a server trickling a few bytes a second) ends as one
:class:`DownloadError` naming the cause, and so that the deadline also bounds the header
phase: a watchdog shuts the socket down when the deadline passes, whatever the read is
waiting for.

Decisions:
    * Only ``http`` and ``https`` URLs, on redirects too (at most :data:`MAX_REDIRECTS`).
    * The minimum rate is checked over windows of ``rate_window`` seconds (30 by default):
      fewer than ``min_rate * rate_window`` bytes in a window, or a window of silence,
      fails. ``min_rate = 0`` turns the check off; the deadline still holds.
    * Proxies of the environment (``https_proxy``, ``http_proxy``, ``no_proxy``) are used as
      ``urllib`` would: plain HTTP through the proxy, HTTPS through a CONNECT tunnel.
    * The name lookup of the host is not bounded by the deadline (the resolver offers no
      timeout); the connection and every read are.
"""

from __future__ import annotations

import hashlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import BinaryIO

from market_hpc.errors import ConfigError, MarketHpcError

DEFAULT_DEADLINE = 900.0
DEFAULT_MIN_RATE = 1000.0
RATE_WINDOW = 30.0
MAX_REDIRECTS = 5
_CHUNK = 1 << 16
_REDIRECTS = (301, 302, 303, 307, 308)


class DownloadError(MarketHpcError):
    """The server could not be reached, broke the protocol, was too slow or sent a bad body."""


def check_base_url(url: str, option: str = "--mirror") -> str:
    """Return ``url`` when it is an ``http://`` or ``https://`` URL with a host.

    >>> check_base_url("https://mirror.example/pwa/")
    'https://mirror.example/pwa/'

    Raises:
        ConfigError: empty, another scheme, no host, a bad port, spaces, a query or a fragment.
    """
    problem = _url_problem(url)
    if problem:
        raise ConfigError(
            f"{option} {url!r}: {problem}; valid: an http:// or https:// base URL "
            "such as https://mirror.example/pwa"
        )
    return url


def _url_problem(url: str) -> str:
    if not url:
        return "empty"
    if any(ord(c) <= 32 or ord(c) == 127 for c in url):
        return "contains a space or a control character"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as error:
        return f"not a URL ({error})"
    if parts.scheme not in ("http", "https"):
        return f"scheme {parts.scheme}:// is not supported" if parts.scheme else "no scheme"
    if not parts.hostname:
        return "no host"
    if parts.query or parts.fragment:
        return "a base URL has no ?query or #fragment"
    return ""


class _Clock:
    """The deadline and the rate windows of one download."""

    def __init__(self, deadline: float, min_rate: float, rate_window: float) -> None:
        self.deadline = deadline
        self.min_rate = min_rate
        self.rate_window = rate_window
        self.start = time.monotonic()
        self.end = self.start + deadline
        self.expired = False
        self.window_start = self.start
        self.window_bytes = 0

    def remaining(self) -> float:
        return max(self.end - time.monotonic(), 0.001)

    def read_timeout(self) -> float:
        """How long one read may wait: a rate window (a silent window is below any minimum
        rate), else the rest of the deadline. The watchdog ends a read at the deadline."""
        return self.rate_window if self.min_rate > 0 else self.remaining()

    def check(self, received: int) -> None:
        """Raise when the deadline passed or the last full window was slower than the minimum."""
        now = time.monotonic()
        if now >= self.end:
            self.expired = True
        if self.expired:
            raise self.deadline_error()
        span = now - self.window_start
        if self.min_rate > 0 and span >= self.rate_window:
            rate = (received - self.window_bytes) / span
            if rate < self.min_rate:
                raise DownloadError(
                    f"{rate:,.0f} B/s over the last {span:.3g} s, below the "
                    f"minimum rate of {self.min_rate:g} B/s (--min-rate)"
                )
            self.window_start, self.window_bytes = now, received

    def deadline_error(self) -> DownloadError:
        return DownloadError(
            f"not complete within the deadline of {self.deadline:g} s (--deadline)"
        )


def download(
    url: str,
    out: BinaryIO,
    size: int,
    deadline: float = DEFAULT_DEADLINE,
    min_rate: float = DEFAULT_MIN_RATE,
    rate_window: float = RATE_WINDOW,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """Write the body at ``url`` to ``out`` and return its SHA-256 (hex).

    Args:
        url: An ``http://`` or ``https://`` URL.
        out: Binary stream the body is written to.
        size: The expected size in bytes; a server that announces or sends more fails.
        deadline: Seconds the whole download may take, connection included.
        min_rate: Bytes per second each ``rate_window`` must reach (0: no minimum).
        rate_window: Seconds over which the rate is measured.
        progress: Called as ``progress(bytes_so_far, size)`` after each block.

    Raises:
        DownloadError: One line with the cause (HTTP status, protocol error, too slow, cut
            short, too long, connection or TLS error).
    """
    clock = _Clock(deadline, min_rate, rate_window)
    for _ in range(MAX_REDIRECTS + 1):
        problem = _url_problem(url)
        if problem:
            raise DownloadError(f"redirected to {url!r}: {problem}")
        try:
            connection, target = _connection(url, clock)
        except ValueError as error:  # a proxy variable that is not host:port
            raise DownloadError(f"the proxy of the environment: {_one_line(str(error))}") from None
        watchdog = threading.Timer(clock.remaining(), _expire, (clock, connection))
        watchdog.daemon = True
        watchdog.start()
        try:
            response = _get(connection, target, clock)
            if response.status in _REDIRECTS and response.getheader("Location"):
                url = urllib.parse.urljoin(url, response.getheader("Location", ""))
                continue
            if response.status != 200:
                raise DownloadError(f"HTTP {response.status} {_one_line(response.reason)}")
            return _body(response, connection, out, size, clock, progress)
        finally:
            watchdog.cancel()
            connection.close()
    raise DownloadError(f"more than {MAX_REDIRECTS} redirects")


def _expire(clock: _Clock, connection: http.client.HTTPConnection) -> None:
    clock.expired = True
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)  # wakes the read the download waits in
        except OSError:
            pass


def _connection(url: str, clock: _Clock) -> tuple[http.client.HTTPConnection, str]:
    """A connection for ``url`` (through the environment's proxy, if any) and the request target."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = parts.port
    path = parts.path or "/"
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and urllib.request.proxy_bypass(host):
        proxy = None
    proxy_parts = urllib.parse.urlsplit(proxy if proxy and "//" in proxy else f"//{proxy}")
    timeout = min(clock.read_timeout(), clock.remaining())
    if parts.scheme == "https":
        if proxy:
            tunnel = http.client.HTTPSConnection(
                proxy_parts.hostname or "", proxy_parts.port, timeout=timeout
            )
            tunnel.set_tunnel(host, port)
            return tunnel, path
        return http.client.HTTPSConnection(host, port, timeout=timeout), path
    if proxy:
        return http.client.HTTPConnection(
            proxy_parts.hostname or "", proxy_parts.port, timeout=timeout
        ), url
    return http.client.HTTPConnection(host, port, timeout=timeout), path


def _get(
    connection: http.client.HTTPConnection, target: str, clock: _Clock
) -> http.client.HTTPResponse:
    try:
        connection.request(
            "GET",
            target,
            headers={"Accept-Encoding": "identity", "User-Agent": "market-hpc trace fetch"},
        )
        return connection.getresponse()
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise _failure(error, clock) from error


def _body(
    response: http.client.HTTPResponse,
    connection: http.client.HTTPConnection,
    out: BinaryIO,
    size: int,
    clock: _Clock,
    progress: Callable[[int, int], None] | None,
) -> str:
    if response.length is not None and response.length != size:
        raise DownloadError(
            f"the server announces {response.length:,} bytes; the file has {size:,}"
        )
    digest = hashlib.sha256()
    received = 0
    while True:
        try:
            if connection.sock is not None:
                connection.sock.settimeout(clock.read_timeout())
            block = response.read1(_CHUNK)
        except (OSError, http.client.HTTPException, ValueError) as error:
            raise _failure(error, clock) from error
        if not block:
            break
        received += len(block)
        if received > size:
            raise DownloadError(f"the server sent more than the file's {size:,} bytes")
        try:
            out.write(block)
        except OSError as error:
            raise DownloadError(
                f"cannot write {getattr(out, 'name', 'the download')}: {error.strerror or error}"
            ) from error
        digest.update(block)
        clock.check(received)
        if progress is not None:
            progress(received, size)
    if clock.expired:
        raise clock.deadline_error()
    if response.length:
        raise DownloadError(
            f"the connection closed after {received:,} of {received + response.length:,} bytes"
        )
    return digest.hexdigest()


def _failure(error: BaseException, clock: _Clock) -> DownloadError:
    """The one-line description of a network or protocol error."""
    if clock.expired or time.monotonic() >= clock.end:
        clock.expired = True
        return clock.deadline_error()
    if isinstance(error, http.client.RemoteDisconnected):
        return DownloadError("the server closed the connection without an HTTP reply")
    if isinstance(error, http.client.BadStatusLine):
        return DownloadError(f"not an HTTP reply (it begins {_one_line(str(error))[:60]!r})")
    if isinstance(error, http.client.IncompleteRead):
        return DownloadError("the body ended early or its chunked encoding is broken")
    if isinstance(error, http.client.HTTPException):
        return DownloadError(f"invalid HTTP reply: {_one_line(str(error))[:120]}")
    if isinstance(error, TimeoutError | socket.timeout):
        if clock.min_rate > 0:
            return DownloadError(
                f"no data for {clock.rate_window:g} s, below the minimum rate of "
                f"{clock.min_rate:g} B/s (--min-rate)"
            )
        return clock.deadline_error()
    if isinstance(error, ssl.SSLError):
        detail = getattr(error, "verify_message", None) or error.reason or error
        return DownloadError(f"TLS: {_one_line(str(detail))[:200]}")
    if isinstance(error, socket.gaierror):
        return DownloadError(f"cannot resolve the host: {error.strerror or error}")
    if isinstance(error, OSError):
        return DownloadError(
            _one_line(str(getattr(error, "reason", None) or error.strerror or error))[:200]
        )
    return DownloadError(_one_line(str(error))[:200])


def _one_line(text: str) -> str:
    return " ".join(text.split())
