"""A run's results folder, written whole or not at all.

:func:`check_out_dir` runs before the simulation: a results folder that cannot be written
(a file in the way, no permission) or would silently replace earlier results is refused
before any time is spent. :func:`staged_out_dir` gives a temporary folder beside the
target; only when every file is written is it renamed into place, so a failure (a full
disk, say) leaves the previous results, or nothing, never half a run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from market_hpc.errors import OutputError

STAGING_PREFIX = ".staging-"
"""Name prefix of the temporary folders made beside the target (removed after use)."""


def _cause(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _existing_ancestor(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def check_out_dir(out: str | Path, overwrite: bool = False) -> Path:
    """Refuse a results folder that cannot be written, before anything is simulated.

    Creates the folders above ``out`` if missing and makes (and removes) a temporary
    folder beside it: the same operations the final write needs.

    Args:
        out: The results folder.
        overwrite: Allow replacing an existing, non-empty folder.

    Returns:
        ``out`` as a ``Path``.

    Raises:
        OutputError: ``out`` is a file, lies under a file, is not writable, or already
            holds files and ``overwrite`` is false.
    """
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise OutputError(str(target), "it is a file, not a folder")
    ancestor = _existing_ancestor(target.parent)
    if not ancestor.is_dir():
        raise OutputError(str(target), f"{ancestor} is a file, not a folder")
    try:
        if target.is_dir() and any(target.iterdir()) and not overwrite:
            raise OutputError(
                str(target),
                "the folder already exists and is not empty "
                "(give --overwrite to replace its contents)",
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        probe = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=target.parent)
        os.rmdir(probe)
    except OSError as exc:
        raise OutputError(str(target), _cause(exc)) from None
    if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
        raise OutputError(str(target), os.strerror(errno.EACCES))
    return target


@contextlib.contextmanager
def staged_out_dir(
    out: str | Path, overwrite: bool = False, carry: Mapping[str, Path] | None = None
) -> Iterator[Path]:
    """Yield a temporary folder beside ``out``; on success it replaces ``out``.

    Everything in an existing ``out`` (stale plots and pages included) is gone after a
    successful write; after a failure ``out`` is as it was and the temporary folder is
    removed.

    Args:
        out: The results folder.
        overwrite: Allow replacing an existing, non-empty folder.
        carry: Files copied into the folder with the results, by name in it.

    Raises:
        OutputError: Any ``OSError`` while writing or renaming, naming the file (as it
            would be in ``out``) and the cause.
    """
    target = check_out_dir(out, overwrite)
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=target.parent))
        staging.chmod(0o777 & ~_umask())
    except OSError as exc:
        raise OutputError(str(target), _cause(exc)) from None
    try:
        yield staging
        for name, source in (carry or {}).items():
            shutil.copyfile(source, staging / name)
        _replace(staging, target)
    except OSError as exc:
        name = exc.filename if isinstance(exc.filename, str) else str(target)
        shown = name.replace(str(staging), str(target), 1)
        raise OutputError(shown, f"{_cause(exc)}; {target} left unchanged") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """Give an ``OSError`` raised while writing ``path`` the file name it lacks.

    A failed ``write`` (a full disk) raises without a file name; the message of
    :class:`~market_hpc.errors.OutputError` names the file from it.
    """
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, _cause(exc), str(path)) from exc
        raise


def _replace(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``, moving an existing ``target`` aside first and
    back if the rename fails."""
    if not target.exists():
        os.rename(staging, target)
        return
    old = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
