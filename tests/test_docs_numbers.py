"""The figures README.md, docs/getting-started.md and docs/performance.md quote are the
generated blocks of ``scripts/docs_numbers.py``: the fast, deterministic ones (the first
replay's output, the demo's confidence line) must equal a fresh run; the measured ones
(timings) must name their machine and load and keep their deterministic counts."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
REGENERATE = "run python scripts/docs_numbers.py to rewrite it"


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))
    try:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # the script's dataclass looks its module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


NUMBERS = load("docs_numbers")
BLOCKS = load("doc_blocks")


def block(page: Path, name: str) -> str:
    return str(BLOCKS.read_block(page.read_text(), name))


def test_the_first_replay_prints_what_getting_started_shows() -> None:
    shown = block(NUMBERS.GETTING_STARTED, "replay-example")
    assert shown == NUMBERS.replay_example(), f"replay-example is stale: {REGENERATE}"
    assert "  jobs_total             2000\n" in shown  # the block is the replay's own lines


def test_the_demo_quick_line_is_what_the_demo_computes() -> None:
    shown = block(NUMBERS.GETTING_STARTED, "demo-quick-line")
    assert shown == NUMBERS.demo_quick_line(), f"demo-quick-line is stale: {REGENERATE}"
    assert "  minVRH - minVR: " in shown and "3 seeds: " in shown


def test_the_measured_demo_time_names_its_machine_and_the_demo_run_count() -> None:
    from market_hpc.studies.demo import CURVES, JOB_SET_SIZES, LOOKAHEAD, POLICIES

    runs = len(POLICIES + LOOKAHEAD) * len(JOB_SET_SIZES) * 3 * len(CURVES)
    readme = block(NUMBERS.README, "demo-time")
    assert readme == block(NUMBERS.GETTING_STARTED, "demo-time")
    assert f": {runs} runs; the demo printed " in readme
    for words in (
        "Measured by `python scripts/docs_numbers.py demo-time`",
        " cores (",
        "load average ",
        " s of CPU (user + system)",
    ):
        assert words in readme


def test_the_hpc2n_figures_say_how_they_were_measured() -> None:
    from market_hpc.workload.trace_catalogue import CATALOGUE

    shown = block(NUMBERS.PERFORMANCE, "hpc2n-market")
    assert shown.startswith(
        "* `market-hpc run scenarios/hpc2n_market.toml` (HPC2N, "
        f"{CATALOGUE['hpc2n'].jobs:,} jobs at 1.5x load, maxVH, "
    )
    assert "Measured by `python scripts/docs_numbers.py hpc2n-market` (" in shown
    assert "load average " in shown


def test_the_penalty_sweep_time_names_its_runs_and_machine() -> None:
    shown = block(NUMBERS.PERFORMANCE, "penalty-sweep")
    assert shown.startswith(
        "* `market-hpc sweep scenarios/penalty_sweep.toml --workers 2` "
        "(240 runs, 240 done, report included): "
    )
    assert "Measured by `python scripts/docs_numbers.py penalty-sweep` (" in shown


def test_the_overload_sweeps_are_listed_with_their_run_counts() -> None:
    shown = block(NUMBERS.README, "overload-runs").splitlines()
    commands = [line.split("  #")[0].rstrip() for line in shown if line.startswith("market-hpc")]
    assert commands == [
        f"market-hpc sweep {file}{' --quick' if quick else ''} --workers 2"
        for file, quick, _ in NUMBERS.OVERLOAD_SWEEPS
    ]
    assert all(line.endswith(" runs") for line in shown if line.startswith("market-hpc"))


@pytest.mark.skipif(
    not (Path(__file__).resolve().parents[2] / "shared" / "traces").is_dir(),
    reason="expanding the overload sweeps reads ../shared/traces",
)
def test_the_overload_run_counts_are_what_the_sweep_files_expand_to() -> None:
    """Deterministic: a policy or slice added to a sweep file changes the count (about 25 s)."""
    assert block(NUMBERS.README, "overload-runs").strip() == NUMBERS.overload_runs().strip()


def test_every_block_is_in_its_pages_once() -> None:
    for name, spec in NUMBERS.BLOCKS.items():
        for page in spec.pages:
            assert block(page, name).strip(), f"{page}: block {name} is empty"


@pytest.mark.parametrize(
    ("argv", "code", "out", "err"),
    [
        (["--list"], 0, "replay-example: docs/getting-started.md (fast)\n", ""),
        (
            ["nope"],
            2,
            "",
            (
                "docs_numbers.py: error: unknown block 'nope'; valid: replay-example, "
                "demo-quick-line, demo-time, hpc2n-market, overload-runs, "
                "penalty-sweep\n"
            ),
        ),
    ],
)
def test_the_script_lists_its_blocks_and_refuses_an_unknown_one(
    argv: list[str], code: int, out: str, err: str
) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "docs_numbers.py"), *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == code
    assert done.stdout.startswith(out)
    assert done.stderr.endswith(err)
