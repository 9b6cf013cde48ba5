"""README.md and docs/getting-started.md run as written: every fenced shell block of a page
runs, in the page's order, in a fresh folder holding a copy of the repository (no
``../shared`` beside it), with archive traces fetched from a local HTTP mirror.

The rules, which a new command in either page falls under:

- **Blocks.** A shell block is a fenced block (three backticks at the start of a line)
  whose info string is ``bash``, ``sh``, ``shell`` or ``console`` (:func:`shell_blocks`;
  in a ``console`` block only the lines starting with ``$`` are commands). Every shell
  block runs, except one whose opening fence follows the line
  ``<!-- not run by tests: REASON -->`` (blank lines between them allowed). REASON must be
  given. A block that is neither excluded nor run cannot exist: a block that is not
  excluded runs, and one that sets up the environment (``python3 -m venv``,
  ``pip install``, ``./run-tests``) fails the test unless it is excluded, before anything
  runs (it would install into the venv the tests run from).
- **The shell.** The pages say every command runs from the repository's root in a shell
  where ``.venv`` is activated. The fresh folder has ``.venv`` as a symlink to the running
  interpreter's venv (``sys.prefix``), so ``.venv/bin/market-hpc`` and ``source
  .venv/bin/activate`` work as written, and each block runs in its own ``bash -e -o
  pipefail`` with what activating gives (``VIRTUAL_ENV``, ``PATH`` starting with
  ``.venv/bin``). ``PYTHONPATH`` is the copy, so the tree under test is what runs.
- **Traces.** ``MARKET_HPC_CACHE`` is an empty folder, ``MARKET_HPC_TRACES`` an empty
  folder (so nothing is read from ``../shared/traces``). The mirror serves synthetic
  stand-ins (``local_mirror.stand_in``) under the archive's file names; the one change to
  a command is ``--mirror URL`` appended to a ``market-hpc trace fetch`` line that has
  none, and a ``sitecustomize`` on ``PYTHONPATH`` gives the catalogue the stand-ins' sizes
  and SHA-256 (the real logs' checksums cannot match them).
- **Long commands** run their quick form: :data:`QUICK` maps a command as written to the
  form run instead, and the same page must name that form verbatim; a block runs each quick
  form once (the overload study's three lines are one quick sweep).
- **Files a page shows.** A ``toml`` block whose first line is ``# PATH`` is that file:
  written into the folder when the repository has none (the page says to save it), else
  its settings (lines other than comments and blank ones) must be the file's, in order.
- **Outputs.** Each block must exit with status 0; :data:`WRITES` lists the files the
  pages say the commands write, checked once the page has run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from local_mirror import serving, stand_in

from market_hpc.workload.trace_catalogue import CATALOGUE

PAGES = ("README.md", "docs/getting-started.md")
SHELLS = ("bash", "sh", "shell", "console")
EXCLUDED = re.compile(r"^<!-- not run by tests:(.*)-->$")
SETUP = re.compile(r"(^|[\s;&|/])(python3? -m venv|pip3? install|\./run-tests)(\s|$)")
BLOCK_TIMEOUT = 600  # seconds; a command that never ends (a server) fails, not hangs

# Long commands as the pages write them -> the quick form each page names and the test runs.
# The 2x sweep's quick form is the study's --quick: its KTH-SP2 part.
OVERLOAD_QUICK = "market-hpc sweep scenarios/overload_study.toml --quick --workers 2"
QUICK = {
    "market-hpc demo": "market-hpc demo --quick",
    "market-hpc sweep scenarios/overload_study.toml --workers 2": OVERLOAD_QUICK,
    "market-hpc sweep scenarios/overload_study_2x.toml --workers 2": OVERLOAD_QUICK,
    "market-hpc sweep scenarios/penalty_sweep.toml --out out/penalty --workers 2": (
        "market-hpc sweep scenarios/penalty_sweep.toml --quick --out out/penalty --workers 2"
    ),
}

# Files each page says its commands write.
WRITES = {
    "README.md": [
        "out/demo/comparison.csv",
        "out/overload_study-quick/report/report.html",
        "out/penalty/report/report.html",
        "out/kth-fifo/schedule.swf",
        "out/kth-fifo/workload.json",
        "out/kth-fifo/schedule.html",
        "out/kth-fifo/day3.html",
        "out/cluster-check/slurm_check.csv",
        "cluster.swf",
    ],
    "docs/getting-started.md": [
        "out/demo/comparison.csv",
        "out/kth-easy/summary.json",
        "out/first/schedule.html",
        "out/first/day1.html",
        "out/overload/results.csv",
        "out/overload/report/report.html",
    ],
}


@dataclass(frozen=True)
class ShellBlock:
    """One fenced shell block of a page.

    Attributes:
        line: Line number (from 1) of the opening fence.
        language: The fence's info string (``bash``, ``sh``, ``shell``, ``console``).
        text: The commands (for ``console``, the ``$`` lines without their prompt).
        excluded: The reason given by ``<!-- not run by tests: REASON -->``, else None.
    """

    line: int
    language: str
    text: str
    excluded: str | None


def shell_blocks(markdown: str) -> list[ShellBlock]:
    """The fenced shell blocks of ``markdown``, in order, with their exclusion reasons.

    >>> page = "<!-- not run by tests: sets up -->\\n```bash\\npip install .\\n```\\n"
    >>> shell_blocks(page)
    [ShellBlock(line=2, language='bash', text='pip install .\\n', excluded='sets up')]
    """
    blocks = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        fence = lines[index]
        if not fence.startswith("```"):
            index += 1
            continue
        language = fence[3:].strip().split(" ")[0]
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if language in SHELLS:
            body = lines[index + 1 : end]
            if language == "console":
                body = [line[1:].lstrip() for line in body if line.startswith("$")]
            before = [line for line in lines[:index] if line.strip()]
            match = EXCLUDED.match(before[-1].strip()) if before else None
            reason = match.group(1).strip() if match else None
            blocks.append(ShellBlock(index + 1, language, "".join(f"{b}\n" for b in body), reason))
        index = end + 1
    return blocks


def logical_lines(text: str) -> list[str]:
    """Lines of a shell block with ``\\`` continuations joined (one command a line)."""
    joined: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        joined.append(pending + line.strip() if pending else line)
        pending = ""
    return joined


def command_of(line: str) -> str:
    """``line`` without its trailing comment (``  # ...``) and surrounding blanks."""
    return re.split(r"\s+#", " " + line, maxsplit=1)[0].strip()


def as_run(text: str, mirror: str) -> str:
    """A block's script as the test runs it: quick forms (a quick form the block already ran
    is not run again), ``--mirror`` on trace fetches."""
    script: list[str] = []
    for line in logical_lines(text):
        command = command_of(line)
        if command in QUICK:
            command = QUICK[command]
            if command in script:
                continue
        if command.startswith("market-hpc trace fetch ") and "--mirror" not in command:
            command += f" --mirror {mirror}"
        script.append(command)
    return "\n".join(script) + "\n"


def file_blocks(markdown: str) -> list[tuple[str, str]]:
    """``(path, text)`` of each ``toml`` block whose first line is ``# PATH``."""
    found = re.findall(r"^```toml\n# (\S+)[^\n]*\n(.*?)^```$", markdown, re.MULTILINE | re.DOTALL)
    return [(path, text) for path, text in found]


def settings(toml: str) -> list[str]:
    """The lines of a TOML text other than comments and blank ones, comments cut off."""
    lines = [command_of(line) for line in toml.splitlines()]
    return [line for line in lines if line]


SITECUSTOMIZE = '''"""Written by tests/test_readme_commands.py: the stand-ins' catalogue."""
import dataclasses
import json
import os

from market_hpc.workload import trace_catalogue

for _name, (_size, _sha256) in json.loads(os.environ["README_TEST_STAND_INS"]).items():
    trace_catalogue.CATALOGUE[_name] = dataclasses.replace(
        trace_catalogue.CATALOGUE[_name], size=_size, sha256=_sha256
    )
'''


def fresh_checkout(root: Path) -> Path:
    """A copy of the repository's files in ``root/checkout``, ``.venv`` the running venv."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    checkout = root / "checkout"
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, checkout / name)
    (checkout / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    return checkout


def environment(root: Path, checkout: Path, stand_ins: dict[str, bytes]) -> dict[str, str]:
    """What ``source .venv/bin/activate`` gives, with empty trace folders and the hook."""
    hook = root / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (root / "cache").mkdir()
    (root / "no-traces").mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("MARKET_HPC")}
    env.update(
        VIRTUAL_ENV=str(checkout / ".venv"),
        PATH=f"{checkout / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=f"{checkout}{os.pathsep}{hook}",
        MARKET_HPC_CACHE=str(root / "cache"),
        MARKET_HPC_TRACES=str(root / "no-traces"),
        README_TEST_STAND_INS=json.dumps(
            {
                name: [len(data), hashlib.sha256(data).hexdigest()]
                for name, data in stand_ins.items()
            }
        ),
        MPLBACKEND="Agg",
    )
    return env


def test_shell_blocks_finds_fenced_shell_blocks_and_their_exclusions() -> None:
    lines = [
        "Set up:",
        "<!-- not run by tests: sets up the venv -->",
        "",
        "```bash",
        "python3 -m venv .venv",
        "```",
        "```toml",
        'name = "x"',
        "```",
        "```console",
        "$ market-hpc demo",
        "output line",
        "```",
        "<!-- not run by tests: -->",
        "```sh",
        "market-hpc replay a \\",
        "    --out b   # the results",
        "```",
    ]
    page = "\n".join(lines)
    assert shell_blocks(page) == [
        ShellBlock(4, "bash", "python3 -m venv .venv\n", "sets up the venv"),
        ShellBlock(10, "console", "market-hpc demo\n", None),
        ShellBlock(15, "sh", "market-hpc replay a \\\n    --out b   # the results\n", ""),
    ]
    assert logical_lines(shell_blocks(page)[2].text) == [
        "market-hpc replay a --out b   # the results"
    ]
    block = "market-hpc demo  # the study\nmarket-hpc trace fetch kth-sp2\nmarket-hpc demo\n"
    assert as_run(block, "http://m/") == (
        "market-hpc demo --quick\nmarket-hpc trace fetch kth-sp2 --mirror http://m/\n"
    )


def test_file_blocks_name_their_file_on_the_first_line() -> None:
    page = '```toml\n# my.toml\nname = "a"   # the name\n\nseed = 1\n```\n```toml\nx = 1\n```\n'
    assert file_blocks(page) == [("my.toml", 'name = "a"   # the name\n\nseed = 1\n')]
    assert settings(file_blocks(page)[0][1]) == ['name = "a"', "seed = 1"]


@pytest.mark.parametrize("page", PAGES)
def test_every_shell_block_runs_or_says_why_not(page: str) -> None:
    blocks = shell_blocks((REPO / page).read_text(encoding="utf-8"))
    assert len(blocks) >= 5, blocks
    for block in blocks:
        where = f"{page}:{block.line}"
        assert block.excluded != "", f"{where}: <!-- not run by tests: REASON --> gives no reason"
        if block.excluded is None:
            setup = [line for line in block.text.splitlines() if SETUP.search(command_of(line))]
            assert not setup, (
                f"{where}: {setup} sets up the environment; precede the block with "
                "<!-- not run by tests: REASON -->"
            )


@pytest.mark.parametrize("page", PAGES)
def test_every_quick_form_is_named_by_the_page_that_runs_it(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    commands = {
        command_of(line)
        for block in shell_blocks(text)
        if block.excluded is None
        for line in logical_lines(block.text)
    }
    for command in commands & QUICK.keys():
        assert QUICK[command] in text, f"{page} runs {command!r} as {QUICK[command]!r}, unnamed"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_the_page_runs_as_written_in_a_fresh_folder(page: str, tmp_path: Path) -> None:
    if shutil.which("bash") is None or shutil.which("git") is None:
        pytest.skip("needs bash and git")
    if not (Path(sys.prefix) / "bin" / "market-hpc").is_file():
        pytest.skip(f"the running venv {sys.prefix} has no market-hpc command")
    text = (REPO / page).read_text(encoding="utf-8")
    checkout = fresh_checkout(tmp_path)
    assert not (checkout.parent / "shared").exists()
    for path, shown in file_blocks(text):
        if (REPO / path).is_file():
            assert settings(shown) == settings((REPO / path).read_text()), path
        else:
            (checkout / path).write_text(shown)
    served = tmp_path / "served"
    served.mkdir()
    stand_ins = {name: stand_in(seed + 1) for seed, name in enumerate(sorted(CATALOGUE))}
    for name, data in stand_ins.items():
        (served / CATALOGUE[name].file).write_bytes(data)
    env = environment(tmp_path, checkout, stand_ins)
    timings = []
    with serving(served) as url:
        for block in shell_blocks(text):
            if block.excluded is not None:
                continue
            script = as_run(block.text, url)
            started = time.monotonic()
            done = subprocess.run(
                ["bash", "-e", "-o", "pipefail"],
                check=False,
                input=script,
                cwd=checkout,
                env=env,
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT,
            )
            timings.append(f"{page}:{block.line} {time.monotonic() - started:.1f} s")
            assert done.returncode == 0, (
                f"{page}:{block.line} exited {done.returncode}\n--- ran\n{script}"
                f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
            )
    print("\n".join(timings))
    for written in WRITES[page]:
        assert (checkout / written).is_file(), f"{page} says it writes {written}"
