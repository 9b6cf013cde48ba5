"""Traces read once per process: a sweep's worker replays many slices of the same trace.

A sweep runs each of its runs in a long-lived worker (a process pool or Dask worker), and
every run of a slice read the whole trace again: 4 s of a Curie run's 11 s of CPU, for a
slice whose simulation took 1.3 s. :func:`read_swf_cached` keeps the last few workloads
read in this process, keyed by the file's resolved path, size and modification time, so a
trace changed on disk is read again. A :class:`~market_hpc.workload.swf.Workload` is
immutable (frozen jobs in a tuple), so runs can share it.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "t.swf").write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 1 -1 -1 -1\\n")
>>> first = read_swf_cached(folder / "t.swf")
>>> read_swf_cached(folder / "t.swf") is first, len(first.jobs)
(True, 1)
"""

from __future__ import annotations

import os
from collections import OrderedDict

from market_hpc.errors import ConfigError
from market_hpc.workload.swf import Workload, read_swf

CACHED_TRACES = 4
"""Workloads kept per process (the overload study replays four traces)."""

_cache: OrderedDict[tuple[str, int, int, bool], Workload] = OrderedDict()

__all__ = ["CACHED_TRACES", "clear", "read_swf_cached"]


def read_swf_cached(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """:func:`~market_hpc.workload.swf.read_swf`, reusing this process's last reads of the
    same unchanged file (same resolved path, size and modification time, same ``lenient``).

    Raises:
        ConfigError, TraceFormatError: As :func:`~market_hpc.workload.swf.read_swf`.
    """
    source = os.fspath(path)
    try:
        status = os.stat(source)
    except OSError as exc:
        raise ConfigError(f"cannot read trace {source}: {exc.strerror or exc}") from None
    key = (os.path.realpath(source), status.st_size, status.st_mtime_ns, lenient)
    workload = _cache.get(key)
    if workload is not None and workload.source == source:
        _cache.move_to_end(key)
        return workload
    workload = read_swf(source, lenient=lenient)
    _cache[key] = workload
    _cache.move_to_end(key)
    while len(_cache) > CACHED_TRACES:
        _cache.popitem(last=False)
    return workload


def clear() -> None:
    """Forget every cached workload."""
    _cache.clear()
