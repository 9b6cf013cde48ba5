"""Griffe extension for the documentation site: doctests and Sphinx roles made Markdown.

The package's docstrings carry doctests (run by ``pytest --doctest-modules``) as plain
paragraphs after the Google-style sections. Markdown would render ``>>> [a][b]`` as prose
and autorefs would read ``[a][b]`` as a cross-reference, so every run of lines that starts
with ``>>>`` at the docstring's left margin (prompt, continuation and expected output, up to
the next blank line) is fenced as a ``pycon`` code block before griffe parses the sections.
Indented doctests (inside a section) are left to griffe's own parser. Sphinx roles
(``:class:`~market_hpc.core.model.HPCModel```) become code spans (``HPCModel``; the full
path without the ``~``), so they read as names, not as role markup.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

FENCE = "```"
ROLE = re.compile(r":(?:class|mod|func|meth|attr|data|exc|obj):`(~?)([^`]+)`")


def plain_roles(text: str) -> str:
    """``:class:`~a.b.C``` -> ```C```, ``:mod:`a.b``` -> ```a.b``` (code spans)."""
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)


def fence_doctests(text: str) -> str:
    """Wrap every unindented ``>>>`` block of ``text`` (up to its next blank line) in a
    ``pycon`` fence; lines inside an existing fence are left alone."""
    out: list[str] = []
    in_doctest = in_fence = False
    for line in text.splitlines():
        if line.startswith(FENCE):
            in_fence = not in_fence
        if in_doctest and not line.strip():
            out.append(FENCE)
            in_doctest = False
        elif not in_fence and not in_doctest and line.startswith(">>>"):
            out.append(FENCE + "pycon")
            in_doctest = True
        out.append(line)
    if in_doctest:
        out.append(FENCE)
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Fence the bare doctests and plain the Sphinx roles of every object's docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(fence_doctests(obj.docstring.value))
