"""Shared fixtures: the real traces beside the checkout, skipped cleanly when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"
# A broken plugin module whose import raises on purpose (tests/test_plugins.py): not a
# module for --doctest-modules to import.
collect_ignore = ["plugin_import_error.py"]


def real_trace(name: str) -> Path:
    """Path of a Parallel Workloads Archive trace, or skip the test with the reason."""
    path = SHARED_TRACES / name
    if not path.is_file():
        pytest.skip(f"real trace {name} absent ({SHARED_TRACES} not available)")
    return path
