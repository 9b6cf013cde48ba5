"""The documentation and the package describe the project as it is, not how it got there.

The development record (rounds of work, sessions, issue numbers) lives in ``CHANGELOG.md``
and in git. Pages under ``docs/`` and the sources under ``market_hpc/`` must not point into
it; and each seed study page keeps one fixed order and a readable length.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PACKAGE = REPO / "market_hpc"

HISTORY = re.compile(
    r"session [0-9]|(first|second|third|fourth|previous|last) round|issue [0-9]+", re.IGNORECASE
)
SEED_PAGES = ("market", "cp", "bbsched", "queues", "heterogeneity")
SEED_SECTIONS = (
    "What the paper proposes and what runs here",
    "How to run it",
    "Decisions where the paper is silent",
    "The current study",
    "What is not done, and why",
)
MAX_SEED_LINES = 320
TEXT_SUFFIXES = {
    ".md",
    ".py",
    ".yml",
    ".yaml",
    ".toml",
    ".txt",
    ".css",
    ".js",
    ".html",
    ".cfg",
    ".ini",
    "",
}


def _text_files(root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        if path.suffix not in TEXT_SUFFIXES:
            continue
        if "changelog" in path.name.lower():
            continue
        files.append(path)
    return files


def history_matches(paths: list[Path]) -> list[str]:
    """``file:line: text`` for every line that names a session, a round or an issue number."""
    found = []
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(lines, start=1):
            if HISTORY.search(line):
                found.append(f"{path.relative_to(REPO).as_posix()}:{number}: {line.strip()}")
    return found


def test_the_pattern_catches_history_words() -> None:
    for text in (
        "see session 7",
        "Second round (x)",
        "the previous round",
        "Issue 22, item 2",
        "LAST ROUND",
    ):
        assert HISTORY.search(text), text
    for text in ("sessions", "a round number", "issue tracker", "round-robin", "rounded to 3"):
        assert not HISTORY.search(text), text


@pytest.mark.parametrize("root", [DOCS, PACKAGE], ids=["docs", "market_hpc"])
def test_no_history_words(root: Path) -> None:
    matches = history_matches(_text_files(root))
    assert not matches, "history words (move them to CHANGELOG.md):\n" + "\n".join(matches)


@pytest.mark.parametrize("page", SEED_PAGES)
def test_seed_page_is_short_and_in_the_fixed_order(page: str) -> None:
    lines = (DOCS / f"{page}.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_SEED_LINES, (
        f"docs/{page}.md has {len(lines)} lines (at most {MAX_SEED_LINES})"
    )
    in_fence = False
    sections = []
    for line in lines:
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("## "):
            sections.append(line[3:].split("{")[0].strip())
    assert tuple(sections) == SEED_SECTIONS, (
        f"docs/{page}.md: level-2 sections {sections}, expected exactly {list(SEED_SECTIONS)} in "
        "this order"
    )
