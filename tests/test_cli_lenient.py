"""``--lenient`` on the command line: a parse error suggests it, and ``trace info`` and
``replay`` describe it."""

from __future__ import annotations

from pathlib import Path

import pytest

from market_hpc.cli import build_parser, main

LINE = "{} 0 -1 10 4 -1 -1 4 -1 -1 1 1 -1 -1 1 -1 -1 -1\n"


def test_parse_error_suggests_lenient(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "bad.swf"
    trace.write_text(LINE.format(1) + LINE.format(2).replace(" 0 ", " x ", 1))
    assert main(["trace", "info", str(trace)]) == 2
    err = capsys.readouterr().err
    assert "bad.swf:2: field 2 (submit time)" in err and "add --lenient" in err
    assert main(["trace", "info", str(trace), "--lenient"]) == 0
    assert "add --lenient" not in capsys.readouterr().err


def test_lenient_is_described_everywhere() -> None:
    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    info = sub["trace"]._subparsers._group_actions[0].choices["info"].format_help()  # type: ignore[union-attr]
    assert "skip malformed lines instead of stopping" in " ".join(info.split())
    assert "skip malformed lines instead of stopping" in " ".join(
        sub["replay"].format_help().split()
    )
