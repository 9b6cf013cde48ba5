"""``market-hpc replay``: without ``--out`` it says its results were not written; with a
market scheduler and ``--set`` it runs the market and records the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from market_hpc.cli import main

LINE = "{} 0 -1 10 4 -1 -1 4 -1 -1 1 1 -1 -1 1 -1 -1 -1\n"


def test_replay_without_out_says_nothing_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(LINE.format(1) + LINE.format(2))
    assert main(["replay", str(trace), "--platform", "nodes=1,cores=8"]) == 0
    assert "results not written (give --out DIR" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == [trace]


def test_replay_market_and_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(LINE.format(1) + LINE.format(2))
    assert (
        main(
            [
                "replay",
                str(trace),
                "--platform",
                "nodes=1,cores=8",
                "--scheduler",
                "maxv",
                "--set",
                "policy.hold_penalty=0.2",
                "--out",
                str(tmp_path / "run"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "maxv is a market policy" in out and "total_profit" in out
    config = (tmp_path / "run" / "config.json").read_text()
    assert '"hold_penalty": 0.2' in config and '"market": true' in config
