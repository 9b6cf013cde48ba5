"""The documentation site: built strictly from the checkout, offline, with its API reference.

``mkdocs build --strict`` (``mkdocs.yml``) turns every warning into an error: a broken link
or anchor, a page missing from the nav, a docstring griffe cannot parse. One build checks
the pages, the API reference and that nothing is fetched from the network.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
STUDIES = ("heterogeneity", "cp", "market", "bbsched", "queues")  # seeds 000-004
CLAIMS_HEADING = re.compile(r"<h[23][^>]*>[^<]*(claims|against the paper)", re.IGNORECASE)
IMG_SOURCE = re.compile(r"""<img\b[^>]*\bsrc=["']([^"']+)["']""", re.IGNORECASE)
REMOTE_ASSET = re.compile(
    r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.IGNORECASE
)


def _build(site: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # Material's notice about MkDocs 2.0
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(REPO / "mkdocs.yml"),
            "-d",
            str(site),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _first_line(docstring: str | None) -> str:
    assert docstring, "no docstring"
    return docstring.strip().splitlines()[0]


@pytest.mark.slow
def test_site_builds_strictly_offline_with_the_api_reference(tmp_path: Path) -> None:
    if (
        importlib.util.find_spec("mkdocs") is None
        or importlib.util.find_spec("mkdocstrings") is None
    ):
        pytest.fail('mkdocs is not installed: pip install -e ".[docs]" (./run-tests does)')
    site = tmp_path / "site"
    done = _build(site)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    assert "WARNING" not in done.stderr, done.stderr

    pages = {
        path.relative_to(site).as_posix(): path.read_text(encoding="utf-8")
        for path in site.rglob("*.html")
    }
    for page in (
        "index.html",
        "getting-started.html",
        "concepts.html",
        "sweeps.html",
        *(f"{study}.html" for study in STUDIES),
        "reference/core.html",
        "reference/policies.html",
    ):
        assert page in pages, f"{page} not built; built: {sorted(pages)}"

    # The API reference is generated from the docstrings, not written by hand.
    from market_hpc.core.model import HPCModel
    from market_hpc.policies.registry import register_scheduler

    core = pages["reference/core.html"]
    assert 'id="market_hpc.core.model.HPCModel"' in core
    assert html.escape(_first_line(HPCModel.__doc__), quote=False) in core
    policies = pages["reference/policies.html"]
    assert 'id="market_hpc.policies.registry.register_scheduler"' in policies
    assert html.escape(_first_line(register_scheduler.__doc__), quote=False) in policies
    assert 'id="market_hpc.policies.base.Decision"' in policies

    # Every seed study carries its claims table: a heading naming the claims, then a table.
    for study in STUDIES:
        heading = CLAIMS_HEADING.search(pages[f"{study}.html"])
        assert heading, f"{study}.html has no claims heading"
        assert "<table>" in pages[f"{study}.html"][heading.end() :], (
            f"{study}.html: no table after its claims heading"
        )

    # Offline: no web fonts, no script, stylesheet or picture from another host, links to
    # files (not directories) so the site opens from the file system, search inlined.
    for name, text in pages.items():
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, name
        remote = REMOTE_ASSET.search(text)
        assert remote is None, f"{name} loads {remote.group(0) if remote else ''}"
    assert 'href="getting-started.html"' in pages["index.html"]

    # Every picture resolves to a file of the built site, and each study page shows its key figure.
    for name, text in pages.items():
        for source in IMG_SOURCE.findall(text):
            if source.startswith("data:"):
                continue
            assert (site / name).parent.joinpath(html.unescape(source)).resolve().is_file(), (
                f"{name}: <img src={source}>"
            )
    for study in STUDIES:
        assert f'src="img/{study}.svg"' in pages[f"{study}.html"], (
            f"{study}.html does not show img/{study}.svg"
        )
    assert (site / "search" / "search_index.js").is_file()


def test_getting_started_python_example_runs() -> None:
    """The Python block of the getting-started page runs as written."""
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert blocks, "no python example in docs/getting-started.md"
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/getting-started.md", "exec"), namespace)  # noqa: S102
    frame = namespace["jobs_frame"]
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == 500 and (frame["status"] == "finished").all()


def _hooks_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "griffe_doctests", DOCS / "hooks" / "griffe_doctests.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    pytest.importorskip("griffe")
    spec.loader.exec_module(module)
    return module


def test_bare_doctests_are_fenced_for_the_site() -> None:
    """A doctest at the docstring's margin becomes a pycon block; indented or fenced ones stay."""
    fence = _hooks_module().fence_doctests
    text = (
        "Sum.\n\n>>> 1 + 1\n2\n>>> print('a')\na\n\nAfter.\n\nArgs:\n    x: ``>>> not a prompt``\n"
    )
    assert fence(text) == (
        "Sum.\n\n```pycon\n>>> 1 + 1\n2\n>>> print('a')\na\n```\n\nAfter.\n\nArgs:\n    x: ``>>> "
        "not a prompt``"
    )
    assert fence("Last.\n>>> 2\n2") == "Last.\n```pycon\n>>> 2\n2\n```"
    fenced = "```python\n>>> 3\n```"
    assert fence(fenced) == fenced


def test_sphinx_roles_become_code_spans() -> None:
    plain = _hooks_module().plain_roles
    assert plain("See :class:`~market_hpc.core.model.HPCModel` and :mod:`market_hpc.core`.") == (
        "See `HPCModel` and `market_hpc.core`."
    )
    assert (
        plain(":meth:`View.expected_end`, ``:not a role``")
        == "`View.expected_end`, ``:not a role``"
    )
