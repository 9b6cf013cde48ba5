"""Read TOML files with errors that name the file and what it was for."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from market_hpc.errors import ConfigError


def read_toml(
    path: str | Path, what: str, error: type[ConfigError] = ConfigError
) -> dict[str, Any]:
    """Parse ``path``; raise ``error`` naming the file for unreadable or invalid TOML.

    TOML files are UTF-8 (the TOML spec); a file that is not fails naming the byte offset,
    line and column of the first invalid byte instead of a ``UnicodeDecodeError``.

    Args:
        path: The file.
        what: What the file is ("scenario", "platform file", "sweep"...), for messages.
        error: The ``ConfigError`` subclass to raise.
    """
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark (some editors write one) is not content
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: {what} is not valid UTF-8 (TOML files must be): "
            f"{describe_bad_byte(raw, exc.start)}; re-save the file as UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None


def describe_bad_byte(raw: bytes, offset: int) -> str:
    """Where an undecodable byte is, for people.

    >>> describe_bad_byte(b'a = 1\\nname = "caf\\xe9"\\n', 17)
    'byte 0xe9 at offset 17 (line 2, column 12)'
    """
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return f"byte 0x{raw[offset]:02x} at offset {offset} (line {line}, column {column})"
