"""Write a file whole or not at all.

:func:`atomic_write` writes to a temporary file in the target's folder, flushes it to
disk and renames it over the target, so a failure at any point (a full disk, a kill)
leaves the previous file, or none, never an empty or half-written one; the temporary
file is removed. :func:`atomic_write_all` does so for several files, all or none.
:func:`write_file` and :func:`write_files` are the same for commands: they raise
:class:`~market_hpc.errors.OutputError`, one line naming the file and the cause.

Every file that ``export``, ``plot``, ``report`` and ``trace convert`` write goes
through here, and the sweep store's tables.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from market_hpc.errors import OutputError

Writer = Callable[[IO[bytes]], object]
Content = bytes | str | Writer
TMP_SUFFIX = ".tmp"
"""Suffix of the temporary files (``.NAME.PID.tmp`` beside the target)."""


def temporary_name(target: Path) -> Path:
    """The temporary file :func:`atomic_write` writes before renaming it to ``target``.

    >>> temporary_name(Path("out/jobs.csv")).name.startswith(".jobs.csv.")
    True
    """
    return target.with_name(f".{target.name}.{os.getpid()}{TMP_SUFFIX}")


def atomic_write(target: str | os.PathLike[str], write: Writer) -> None:
    """Write ``target`` through a temporary file that is fsynced and renamed into place.

    Args:
        target: The file to write.
        write: Writes the content to the binary handle it is given.

    Raises:
        OSError: The write, flush or rename failed, with ``filename`` the target (not the
            temporary file); ``target`` is as it was before.
    """
    atomic_write_all({Path(target): write})


def atomic_write_all(files: Mapping[Path, Writer]) -> None:
    """Write several files all or none: every temporary file is written and fsynced
    before the first is renamed into place, so a failure while writing (a full disk)
    leaves every target as it was.

    Raises:
        OSError: As :func:`atomic_write`, naming the target whose write failed.
    """
    temporaries: dict[Path, Path] = {}
    current = Path()
    try:
        for current, write in files.items():
            temporaries[current] = temporary_name(current)
            with open(temporaries[current], "wb") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
        for current, temporary in temporaries.items():
            os.replace(temporary, current)
    except OSError as exc:
        if exc.filename is None or str(exc.filename) == str(temporaries.get(current)):
            raise OSError(exc.errno, exc.strerror or str(exc), str(current)) from exc
        raise
    finally:
        for temporary in temporaries.values():
            with contextlib.suppress(OSError):
                temporary.unlink()
    for folder in dict.fromkeys(path.parent for path in files):
        _fsync_directory(folder)


def write_file(target: str | os.PathLike[str], content: Content) -> Path:
    """Write ``content`` (bytes, UTF-8 text or a writer of a binary handle) atomically.

    Returns:
        ``target`` as a ``Path``.

    Raises:
        OutputError: The file cannot be written (no folder, no permission, disk full);
            the message names it and says the previous file, if any, is unchanged.
    """
    return write_files({target: content})[0]


def write_files(files: Mapping[str | os.PathLike[str], Content]) -> list[Path]:
    """:func:`write_file` for several files, all or none (:func:`atomic_write_all`).

    Raises:
        OutputError: A file cannot be written; then none of them is.
    """
    writers = {Path(target): _writer(content) for target, content in files.items()}
    try:
        atomic_write_all(writers)
    except OSError as exc:
        path = Path(str(exc.filename))
        cause = exc.strerror or str(exc) or type(exc).__name__
        kept = (
            f"none of the {len(writers)} files written, the previous ones unchanged"
            if len(writers) > 1
            else f"nothing written, the previous {path.name} unchanged"
        )
        raise OutputError(str(path), f"{cause} ({kept})") from None
    return list(writers)


def _writer(content: Content) -> Writer:
    if isinstance(content, str):
        content = content.encode("utf-8")
    if isinstance(content, bytes):
        data = content
        return lambda handle: handle.write(data)
    return content


def _fsync_directory(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not supported on every platform/filesystem
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
