"""Apply one-line mutations of a mechanism one at a time, run the tests that pin it, restore
the file, and print whether a test caught each: the shared loop of the seed mutation checks
(``bbsched_mutations.py``, ``queues_mutations.py``).

Edits source files in place for the duration of one pytest run each (restored in a
``finally``): run it in a clean worktree, never while editing those files or running
other tests in the same tree.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
Mutation = tuple[str, str, str, str]  # (name, file relative to ROOT, old text, new text)


def run_mutations(mutations: Sequence[Mutation], tests: Sequence[str]) -> int:
    """Apply each mutation alone, run ``tests`` (stop at the first failure), restore.

    Returns the number of mutations no test caught (each one printed as SURVIVED).
    """
    survived = 0
    for name, path, old, new in mutations:
        target = ROOT / path
        source = target.read_text()
        if source.count(old) != 1:
            raise SystemExit(
                f"{name}: the text to mutate occurs {source.count(old)} times in {path}, not once"
            )
        target.write_text(source.replace(old, new))
        try:
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
            )
        finally:
            target.write_text(source)
        failed = next(
            (line for line in result.stdout.splitlines() if line.startswith("FAILED")), ""
        )
        survived += result.returncode == 0
        print(f"{name:40s} {'CAUGHT' if result.returncode else 'SURVIVED'}  {failed}", flush=True)
    return survived
