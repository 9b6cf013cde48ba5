"""The study commands: ``demo`` (the embedded study), ``sweep`` and ``report``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from market_hpc.cli.run_commands import check_out
from market_hpc.validation import COUNT, NON_NEGATIVE_INT, flag_number

# experiment.sweep_checks.MAX_RUNS, not imported: building the parser loads nothing heavy
MAX_RUNS = 100_000


def cmd_demo(args: argparse.Namespace) -> int:
    from market_hpc.experiment.out_dir import staged_out_dir
    from market_hpc.studies.demo import run_demo

    seeds = flag_number(args.seeds, COUNT, "--seeds", integer=True)
    if args.out is None:  # the demo's own folder: re-running the README's first command replaces it
        args.out, args.overwrite = "out/demo", True
    check_out(args)
    with staged_out_dir(args.out, args.overwrite) as staging:
        run_demo(staging, seeds=seeds, quick=args.quick, shown_as=Path(args.out))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from market_hpc.experiment.report import write_report
    from market_hpc.experiment.sweep import load_sweep, run_sweep

    suffix = "-quick" if args.quick else ""
    out = Path(args.out) if args.out else Path("out") / f"{Path(args.sweep).stem}{suffix}"
    workers = flag_number(
        args.workers, NON_NEGATIVE_INT, "--workers", integer=True
    )  # 0: run_sweep names it
    from market_hpc.experiment.out_dir import check_out_dir

    max_runs = flag_number(args.max_runs, COUNT, "--max-runs", integer=True)
    check_out_dir(
        out, overwrite=True
    )  # writable; an existing sweep folder is resumed, not replaced
    plan = load_sweep(
        args.sweep,
        quick=args.quick,
        max_runs=max_runs,
        announce=lambda line: print(line, file=sys.stderr, flush=True),
    )
    outcome = run_sweep(
        plan, out, workers=workers, dask=args.dask, keep_runs=args.keep_runs, audit=args.audit
    )
    print(f"sweep {args.sweep}: {outcome.describe()}")
    for run_id, error in outcome.errors[:10]:
        print(f"  not done {run_id}: {error}")
    if len(outcome.errors) > 10:
        print(f"  ... {len(outcome.errors) - 10} more runs not done, see {out}/results.csv")
    print(f"results written to {out}/results.parquet and results.csv")
    if outcome.done or outcome.skipped:
        written = write_report(out)
        print(f"report: {len(written)} files in {out}/report/")
    return 1 if outcome.failed or outcome.interrupted else 0


def cmd_report(args: argparse.Namespace) -> int:
    from market_hpc.experiment.report import write_report

    if (Path(args.directory) / "config.json").is_file():  # a run folder: its page (as plot)
        from market_hpc.cli.tools import cmd_plot

        return cmd_plot(
            argparse.Namespace(run_dir=args.directory, window=None, nodes=None, out=None)
        )

    written = write_report(args.directory, args.metric)
    for path in written:
        if path.name.endswith("_paired_differences.txt"):
            print(path.read_text(), end="")
    print(f"report: {len(written)} files in {Path(args.directory) / 'report'}/")
    return 0


def add_demo_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo``."""
    demo = sub.add_parser("demo", help="run the embedded default study")
    demo.add_argument(
        "--out",
        help="results folder (default: out/demo, replaced on every run; a "
        "folder given here is refused if it holds files, unless --overwrite)",
    )
    demo.add_argument("--seeds", default=3, help="number of seeds (default: 3)")
    demo.add_argument("--quick", action="store_true", help="smaller study for smoke tests")
    demo.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing, non-empty --out folder (nothing of it is kept)",
    )
    demo.set_defaults(func=cmd_demo)


def add_sweep_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``sweep`` and ``report``."""
    sweep = sub.add_parser(
        "sweep",
        help="run a parameter sweep (resumable)",
        description="Run every point x seed of a sweep file; re-running into "
        "the same --out skips runs already stored ok and retries failed ones.",
    )
    sweep.add_argument("sweep", help="sweep TOML file (see docs/sweeps.md)")
    sweep.add_argument("--out", help="results folder (default: out/<sweep file name>)")
    where = sweep.add_mutually_exclusive_group()
    where.add_argument(
        "--workers", default=1, help="local worker processes (default: 1, in this process)"
    )
    where.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="local:N for a loopback LocalCluster of N workers, or a scheduler "
        "address tcp://HOST:PORT",
    )
    sweep.add_argument(
        "--keep-runs",
        action="store_true",
        help="also write each run's results folder to OUT/runs/<run_id>/",
    )
    sweep.add_argument(
        "--audit",
        action="store_true",
        help="audit each run's results folder (market-hpc audit); a violation "
        "or an unreadable folder marks the run failed with the audit's message, "
        "and the summary line counts the two apart",
    )
    sweep.add_argument(
        "--max-runs",
        default=MAX_RUNS,
        metavar="N",
        help=f"refuse a sweep of more than N runs, counted before any run (default: {MAX_RUNS:,})",
    )
    sweep.add_argument(
        "--quick",
        action="store_true",
        help="the sweep file's [quick] grid and zip lists instead of its own "
        "(default --out: out/<sweep file name>-quick)",
    )
    sweep.set_defaults(func=cmd_sweep)

    report = sub.add_parser(
        "report",
        help="tables and plots of a sweep results folder "
        "(or, for a run folder, its page as market-hpc plot)",
    )
    report.add_argument("directory", help="a sweep --out folder, or a run/replay --out folder")
    report.add_argument(
        "--metric",
        action="append",
        help="metric to plot (repeatable; default: the sweep file's "
        "[report] metrics, else total_profit or mean_bounded_slowdown)",
    )
    report.set_defaults(func=cmd_report)
