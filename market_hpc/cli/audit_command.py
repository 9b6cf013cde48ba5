"""``market-hpc audit RUN_DIR``: check a run folder's schedule invariants from its files.

Exit status: 0 every invariant holds, 1 a violation (named on standard output), 2 the
folder cannot be read (``AuditReadError``, one line on standard error naming the file,
line and column or key, through the command line's ``MarketHpcError`` path).
"""

from __future__ import annotations

import argparse

EXIT_CODES = (
    "Exit status: 0 every invariant holds; 1 a violation (printed as FAILED: with the "
    "time, node, jobs and amounts); 2 the folder cannot be read (a file missing or "
    "malformed, a value not of its column's type or range: one line naming the "
    "file, line and column or key)"
)


def cmd_audit(args: argparse.Namespace) -> int:
    """Audit a run folder: exit status 0 when every invariant holds, 1 when one is
    violated; an unreadable folder raises ``AuditReadError`` (exit 2)."""
    from market_hpc.experiment.audit import audit_run

    report = audit_run(args.run_dir)
    print(report)
    return 0 if report.ok else 1


def add_audit_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``audit``."""
    audit = sub.add_parser(
        "audit",
        help="check a run folder's schedule invariants from its files",
        description="Check a run folder (run/replay --out) from jobs.csv, segments.csv and "
        "config.json alone, every column checked for type, range and finiteness first, "
        "jobs.parquet and segments.parquet cross-checked against the CSV files: no node "
        "over-allocated in any resource at any time, nor the burst buffer; no segment "
        "before its job's submit time; each job ends once; a job's segments in order and "
        "not overlapping; work conserved across holds; jobs.csv agreeing with the segments. "
        "Prints the first violation. See docs/concepts.md.",
        epilog=f"{EXIT_CODES}.",
    )
    audit.add_argument("run_dir", help="a run folder (run or replay --out DIR)")
    audit.set_defaults(func=cmd_audit)
