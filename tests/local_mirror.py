"""A local HTTP mirror for ``market-hpc trace fetch --mirror URL`` in tests: a folder served
on a free loopback port, quietly, for as long as the ``with`` block lasts."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files without logging each request to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(folder: Path) -> Iterator[str]:
    """Serve ``folder``; yields the mirror's URL (``http://127.0.0.1:PORT/``)."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
