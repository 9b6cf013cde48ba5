"""Command-line polish of issue 27: --lenient suggested and described, replay --market and
--set, a run without --out says its results were not written."""

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
    assert "skip malformed lines instead of stopping" in " ".join(sub["replay"].format_help().split())


def test_replay_without_out_says_nothing_was_written(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(LINE.format(1) + LINE.format(2))
    assert main(["replay", str(trace), "--platform", "nodes=1,cores=8"]) == 0
    assert "results not written (give --out DIR" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == [trace]


def test_replay_market_and_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(LINE.format(1) + LINE.format(2))
    assert main(["replay", str(trace), "--platform", "nodes=1,cores=8", "--scheduler", "maxv",
                 "--set", "policy.hold_penalty=0.2", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "maxv is a market policy" in out and "total_profit" in out
    config = (tmp_path / "run" / "config.json").read_text()
    assert '"hold_penalty": 0.2' in config and '"market": true' in config
