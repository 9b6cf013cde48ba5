"""``market-hpc platforms`` lists every preset's node types and counts, and the copies of
its table in docs/concepts.md and README.md are exactly what it prints (written by
``scripts/platform_table.py``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from market_hpc.cli import main
from market_hpc.domain.platform import MIB_PER_GB, PRESETS

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- platform-table:start -->\n(.*?)<!-- platform-table:end -->", re.DOTALL)


def printed(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["platforms"]) == 0
    return capsys.readouterr().out


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


@pytest.mark.parametrize("page", ["docs/concepts.md", "README.md"])
def test_the_table_in_the_page_is_what_the_command_prints(
    page: str, capsys: pytest.CaptureFixture[str]
) -> None:
    found = BLOCK.findall((ROOT / page).read_text())
    assert len(found) == 1, f"{page}: expected one platform-table block"
    assert found[0] == printed(capsys), (
        f"{page}: the platform table differs from market-hpc platforms; "
        "run python scripts/platform_table.py"
    )


def test_every_node_type_of_every_preset_is_a_row_with_its_numbers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = printed(capsys).splitlines()
    assert cells(lines[0]) == [
        "preset",
        "node type",
        "nodes",
        "cores/node",
        "GPUs/node",
        "MICs/node",
        "memory/node (GB)",
        "preset total",
        "burst buffer (GB)",
    ]
    rows = [cells(line) for line in lines[2:] if line.startswith("|")]
    expected = []
    for name, platform in PRESETS.items():
        for index, node in enumerate(platform.node_types):
            memory = f"{node.mem // MIB_PER_GB:,}" if node.mem else "-"
            expected.append(
                [
                    f"`{name}`" if index == 0 else "",
                    node.name,
                    f"{node.count:,}",
                    str(node.cores),
                    str(node.gpus),
                    str(node.mics),
                    memory,
                ]
            )
    assert [row[:7] for row in rows] == expected
    totals = {row[0]: row[7] for row in rows if row[0]}
    assert totals["`curie`"] == "5,544 nodes, 93,312 cores, 288 GPUs"
    assert totals["`eurora`"] == "64 nodes, 1,024 cores, 64 GPUs, 64 MICs"
    assert totals["`kth-sp2`"] == "100 nodes, 100 cores"
    assert {row[8] for row in rows if row[0]} == {"-"}  # no preset defines a burst buffer


def test_the_command_is_listed_and_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "market_hpc", "platforms"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[2].startswith("| `kth-sp2`")
    helped = subprocess.run(
        [sys.executable, "-m", "market_hpc", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "platforms" in helped.stdout
    refused = subprocess.run(
        [sys.executable, "-m", "market_hpc", "platforms", "extra"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 2
    assert "unrecognized arguments: extra" in refused.stderr


def test_the_script_reports_a_stale_block(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("doc_blocks", ROOT / "scripts" / "doc_blocks.py")
    assert spec is not None and spec.loader is not None
    blocks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(blocks)
    page = tmp_path / "page.md"
    page.write_text("a\n<!-- platform-table:start -->\nold\n<!-- platform-table:end -->\nb\n")
    assert blocks.write_block(page, "platform-table", "new\n") is True
    assert (
        page.read_text()
        == "a\n<!-- platform-table:start -->\nnew\n<!-- platform-table:end -->\nb\n"
    )
    assert blocks.write_block(page, "platform-table", "new\n") is False
    with pytest.raises(ValueError, match="block 'other': found 0 times, expected once"):
        blocks.read_block(page.read_text(), "other")
