"""A local HTTP mirror for ``market-hpc trace fetch --mirror URL`` in tests: a folder served
on a free loopback port, quietly, for as long as the ``with`` block lasts, and the synthetic
stand-ins it serves under the archive's file names (:func:`stand_in`)."""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path


def stand_in(seed: int) -> bytes:
    """A gzipped SWF trace: a job every 4 h for 800 days (so that every shipped window holds
    jobs), 1-64 processors, run times of 1 minute to 2 hours under requests of twice that."""
    lines = ["; a synthetic stand-in served by tests/local_mirror.py"]
    state = seed
    for job in range(1, 800 * 6 + 1):
        state = (state * 1103515245 + 12345) % 2**31
        procs = 1 + state % 64
        run = 60 + (state // 64) % 7140
        lines.append(
            f"{job} {(job - 1) * 14400} -1 {run} {procs} -1 -1 {procs} {run * 2} -1 1 "
            f"{1 + job % 7} -1 -1 1 -1 -1 -1"
        )
    return gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)


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
