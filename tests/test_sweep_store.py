"""What a resumed sweep skips: the result store counts only runs that ended ``ok``, and a
retried run's part replaces the failed row of the consolidated table."""

from __future__ import annotations

from pathlib import Path

from market_hpc.experiment.sweep_store import ResultStore


def test_sweep_store_counts_only_ok_runs_as_done(tmp_path: Path):
    # Mutation: ``ok_ids`` (what a resumed sweep skips) ignoring the status.
    with ResultStore(tmp_path) as store:
        store.add({"run_id": "a", "status": "ok", "error": None})
        store.add({"run_id": "b", "status": "error", "error": "boom"})
        assert store.ok_ids() == {"a"}
        store.consolidate(["a", "b"], ["run_id", "status", "error"])
    with ResultStore(tmp_path) as store:  # reloaded from the consolidated table and parts
        assert store.ok_ids() == {"a"}


def test_sweep_store_lets_a_retried_part_replace_a_failed_row(tmp_path: Path):
    # The consolidated table says run b failed; its part was since rewritten by a retry
    # that succeeded (killed before the table was rebuilt): the part wins on reload.
    with ResultStore(tmp_path) as store:
        store.add({"run_id": "b", "status": "error", "error": "boom"})
        store.consolidate(["b"], ["run_id", "status", "error"])
        store.add({"run_id": "b", "status": "ok", "error": None})
    with ResultStore(tmp_path) as store:
        assert store.ok_ids() == {"b"}
