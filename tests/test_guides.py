"""The guides run as written: every code block of docs/extending.md and docs/python-api.md,
in order, in one namespace per guide (so they cannot rot).

``python`` blocks are executed; a ``toml`` block after ``<!-- file: NAME -->`` is written to
NAME; each ``market-hpc ...`` line of a ``bash`` block runs through the CLI's ``main`` and
must succeed. Blocks after ``<!-- not run -->`` are skipped. Paths to the real traces
(``../shared/traces/``) point at the folder beside the checkout; a guide that needs them
is skipped when it is absent. Guide-registered policy names are removed afterwards.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from market_hpc.cli import main
from market_hpc.policies import registry

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"
BLOCK = re.compile(
    r"(?:<!-- (?P<marker>[^>]*) -->\n)?```(?P<lang>\w+)\n(?P<code>.*?)```", re.DOTALL
)


def blocks(text: str) -> list[tuple[str, str, str]]:
    """``(marker, language, code)`` of every fenced block, in order."""
    return [(m["marker"] or "", m["lang"], m["code"]) for m in BLOCK.finditer(text)]


def run_guide(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    text = (REPO / "docs" / name).read_text()
    if "../shared/traces/" in text:
        if not SHARED_TRACES.is_dir():
            pytest.skip(f"{name} replays real traces: {SHARED_TRACES} is absent")
        text = text.replace("../shared/traces/", f"{SHARED_TRACES}/")
    monkeypatch.chdir(tmp_path)
    before = registry.snapshot()
    namespace: dict[str, object] = {"__name__": f"guide_{Path(name).stem}"}
    ran = []
    try:
        for marker, lang, code in blocks(text):
            if marker == "not run":
                continue
            if marker.startswith("file: "):
                (tmp_path / marker.removeprefix("file: ")).write_text(code)
            elif lang == "python":
                exec(compile(code, f"docs/{name}", "exec"), namespace)  # noqa: S102  # the guide's own code
            elif lang == "bash":
                for line in code.splitlines():
                    if line.startswith("market-hpc "):
                        assert main(shlex.split(line)[1:]) == 0, line
            ran.append(lang)
    finally:
        registry.restore(before)
    assert "python" in ran
    return text


@pytest.mark.slow
def test_extending_guide_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_guide("extending.md", tmp_path, monkeypatch)
    out = capsys.readouterr().out
    # the comparison the guide describes: EASY waits less than FIFO on this load
    waits = {
        line.split()[0]: float(line.split()[3]) for line in out.splitlines() if "mean wait" in line
    }
    assert set(waits) == {"fifo", "easy", "my-saf"} and waits["easy"] < waits["fifo"]
    assert "policy 'head-on-node-zero' at t=" in out and "over-allocates" in out
    assert "mean_wait: paired differences to easy across seeds" in out  # market-hpc report
    assert "saf - easy" in out and "fifo - easy" in out
    assert (tmp_path / "out" / "my-saf" / "results.parquet").exists()


def test_python_api_guide_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_guide("python-api.md", tmp_path, monkeypatch)
