"""Start-up cost: the command line and the policy registry import only what they need.

Measured in a fresh interpreter by the modules loaded, not by time (no timed assertions).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = (
    "numpy",
    "pandas",
    "scipy",
    "matplotlib",
    "mesa",
    "ortools",
    "deap",
    "dask",
    "networkx",
    "pyarrow",
    "solara",
)


def loaded_after(code: str) -> list[str]:
    probe = (
        f"import sys, json\n{code}\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.smoke
def test_top_level_help_imports_nothing_heavy():
    code = (
        "from market_hpc.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert loaded_after(code) == []


def test_policy_registry_loads_without_solvers_or_plotting():
    """Registering every policy must not load CP-SAT, DEAP, scipy, pandas or matplotlib:
    those load when a policy that needs them is built or runs."""
    code = "from market_hpc.policies import scheduler_names\nscheduler_names()"
    assert set(loaded_after(code)) <= {"numpy"}


def test_replay_help_lists_every_registered_name(capsys, monkeypatch):
    from market_hpc.cli import main
    from market_hpc.policies import allocator_names, scheduler_names

    monkeypatch.setenv("COLUMNS", "100000")  # argparse would otherwise wrap names at hyphens
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in scheduler_names() + allocator_names():
        assert name in text
