"""``market-hpc slurm-check EXPORT --slurm-conf FILE``: how close the ``slurm`` scheduler
comes to a site's recorded start times (:mod:`market_hpc.studies.slurm_check`)."""

from __future__ import annotations

import argparse

from market_hpc.cli.tools import LENIENT_HELP

FORMAT = "JobID,User,Submit,Start,End,Timelimit,NCPUS,State,Partition"
"""The columns the check needs (``slurm_compare.FORMAT``, repeated so that building the
parser imports no experiment module; tests/slurm/test_check.py keeps them equal)."""


def cmd_slurm_check(args: argparse.Namespace) -> int:
    """Replay the export under its slurm.conf, print the agreement, write the CSV."""
    from market_hpc.errors import TraceFormatError
    from market_hpc.studies.slurm_check import check_export, write_check_csv

    try:
        check = check_export(args.export, args.slurm_conf, args.platform, lenient=args.lenient)
    except TraceFormatError as exc:
        if exc.field == "header":  # --lenient skips malformed lines, not a missing column:
            args.lenient = None  # no hint to add it (commands.main gives it when False)
        raise
    print("\n".join(check.describe()))
    if args.out:
        print(f"written: {write_check_csv(check, args.out)}")
    return 0


def add_slurm_check_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``slurm-check``."""
    check = sub.add_parser(
        "slurm-check",
        help="how close the slurm scheduler comes to a sacct export's recorded start times",
        description="Replay a sacct --parsable2 export with the slurm scheduler under the "
        "slurm.conf the jobs ran under (recorded submit times, CPUs, users, partitions, time "
        "limits and run times), on the nodes the slurm.conf declares unless --platform "
        "says otherwise, and compare: jobs compared and jobs left out by reason, the wait "
        "error (simulated wait - recorded wait) as median, 95th percentile and max of its "
        "absolute value and its mean, Kendall's tau-b and the same-position share of the "
        "start order, and Slurm's own scheduling lag. See docs/slurm-scheduler.md.",
        epilog="Exit status: 0 compared; 2 bad input (a file that cannot be read, not a "
        "sacct export, a missing column, a malformed line, a slurm.conf key that cannot be "
        "read: one line naming the file, line and field).",
    )
    check.add_argument("export", help=f"sacct --parsable2 output with at least --format={FORMAT}")
    check.add_argument(
        "--slurm-conf", required=True, metavar="FILE", help="the slurm.conf the jobs ran under"
    )
    check.add_argument(
        "--platform",
        metavar="SPEC",
        help="preset, nodes=N,cores=C or FILE.toml (default: the slurm.conf's NodeName lines)",
    )
    check.add_argument(
        "--out",
        metavar="DIR",
        help="also write DIR/slurm_check.csv: one row per compared job (job id, user, cpus, "
        "partition, submit, recorded and simulated start and wait, wait error)",
    )
    check.add_argument("--lenient", action="store_true", help=LENIENT_HELP)
    check.set_defaults(func=cmd_slurm_check)
