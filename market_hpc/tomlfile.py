"""Read TOML files with errors that name the file and what it was for."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from market_hpc.errors import ConfigError


def read_toml(path: str | Path, what: str, error: type[ConfigError] = ConfigError) -> dict[str, Any]:
    """Parse ``path``; raise ``error`` naming the file for unreadable or invalid TOML.

    Args:
        path: The file.
        what: What the file is ("scenario", "platform file", "sweep"...), for messages.
        error: The ``ConfigError`` subclass to raise.
    """
    file = Path(path)
    try:
        return tomllib.loads(file.read_text())
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
