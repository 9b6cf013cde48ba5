"""``market-hpc audit RUN_DIR``: check a run folder's schedule invariants from its files."""

from __future__ import annotations

import argparse


def cmd_audit(args: argparse.Namespace) -> int:
    """Audit a run folder; exit status 1 when an invariant is violated."""
    from market_hpc.experiment.audit import audit_run

    report = audit_run(args.run_dir)
    print(report)
    return 0 if report.ok else 1


def add_audit_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``audit``."""
    audit = sub.add_parser(
        "audit", help="check a run folder's schedule invariants from its files",
        description="Check a run folder (run/replay --out) from jobs and segments files and "
        "config.json alone: no node over-allocated in any resource at any time, nor the burst "
        "buffer; no segment before its job's submit time; each job ends once; a job's "
        "segments in order and not overlapping; work conserved across holds. Prints the first "
        "violation and exits 1 (0 when every invariant holds). See docs/concepts.md.")
    audit.add_argument("run_dir", help="a run folder (run or replay --out DIR)")
    audit.set_defaults(func=cmd_audit)
