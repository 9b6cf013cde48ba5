"""Generated blocks in Markdown pages: the text between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` is written by a script, never by hand, and a test compares it with
what the script prints (``scripts/platform_table.py``, ``scripts/docs_numbers.py``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def markers(name: str) -> tuple[str, str]:
    """The start and end comments of block ``name``."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def read_block(text: str, name: str) -> str:
    """The text of block ``name`` in ``text`` (without the marker lines).

    Raises:
        ValueError: ``text`` does not hold the block exactly once.
    """
    start, end = markers(name)
    found = re.findall(re.escape(start) + r"\n(.*?)" + re.escape(end), text, re.DOTALL)
    if len(found) != 1:
        raise ValueError(f"block {name!r}: found {len(found)} times, expected once")
    return str(found[0])


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with block ``name``'s text replaced by ``body`` (one trailing newline)."""
    read_block(text, name)
    start, end = markers(name)
    pattern = re.escape(start) + r"\n.*?" + re.escape(end)
    return re.sub(pattern, lambda _: f"{start}\n{body.rstrip()}\n{end}", text, flags=re.DOTALL)


def write_block(path: Path, name: str, body: str) -> bool:
    """Rewrite block ``name`` of the page at ``path``; return whether it changed."""
    text = path.read_text()
    new = replace_block(text, name, body)
    if new != text:
        path.write_text(new)
    return new != text
