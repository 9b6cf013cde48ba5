"""``market-hpc``: the command line, thin over ``market_hpc.experiment``."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from market_hpc.cli.audit_command import add_audit_command
from market_hpc.cli.tools import (
    LENIENT_HELP,
    add_catalogue_commands,
    add_convert_command,
    add_export_command,
    add_plot_command,
)
from market_hpc.errors import ConfigError, MarketHpcError, TraceFormatError
from market_hpc.gc_pause import gc_paused
from market_hpc.validation import COUNT, NON_NEGATIVE_INT, POSITIVE_FACTOR, flag_number


def _overrides(pairs: Sequence[str]) -> dict[str, object]:
    from market_hpc.experiment.config import parse_value

    result: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects key=value (e.g. policy.scheduler=easy), got {pair!r}")
        result[key.strip()] = parse_value(raw.strip())
    return result


def _print_summary(summary: dict[str, object], out: Path | None) -> None:
    keys = ("jobs_total", "jobs_completed", "jobs_rejected", "jobs_dropped", "jobs_skipped",
            "mean_wait", "mean_slowdown", "mean_bounded_slowdown", "utilisation_cores",
            "makespan", "total_profit", "holds", "simulation_seconds")
    width = max(len(k) for k in keys)
    for key in keys:
        if key in summary:
            value = summary[key]
            text = f"{value:,.2f}" if isinstance(value, float) else f"{value}"
            print(f"  {key:<{width}}  {text}")
    if out is not None:
        print(f"results written to {out}/")
    else:
        print("results not written (give --out DIR to keep jobs.csv, summary.json, ...)")


def _check_out(args: argparse.Namespace) -> None:
    """Refuse an ``--out`` that cannot be written (or would replace results without
    ``--overwrite``) before anything is simulated."""
    if args.out:
        from market_hpc.experiment.out_dir import check_out_dir

        check_out_dir(args.out, args.overwrite)


def _simulate_and_report(config: Any, args: argparse.Namespace, title: Callable[[str], str],
                         converted: Path | None = None) -> int:
    """Run ``config``, write ``--out`` and print the summary.

    ``converted`` (a trace converted from sacct output) is written into ``--out`` as
    ``trace.swf`` with the results, and config.json names it there (absolutely).
    """
    # Trace replays stream the trace and the results (bounded memory); the rest as simulate().
    import dataclasses

    from market_hpc.experiment.streaming import simulate_streaming

    _check_out(args)
    _collect_from_here()
    result = simulate_streaming(config, progress=True)
    carry: dict[str, Path] = {}
    if converted is not None and args.out:
        kept = Path(args.out).resolve() / "trace.swf"
        workload = dataclasses.replace(result.config.workload, trace=str(kept))
        result.config = dataclasses.replace(result.config, workload=workload)
        carry[kept.name] = converted
    out = result.write(args.out, overwrite=args.overwrite, carry=carry) if args.out else None
    print(title(result.summary["policy"]))
    _print_summary(result.summary, out)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from market_hpc.cli.tools import replayable_trace
    from market_hpc.experiment import config_from_dict
    from market_hpc.experiment.config import set_path
    from market_hpc.policies.registry import scheduler_entry
    from market_hpc.workload.trace_catalogue import resolve_trace

    if args.platform is None:
        from market_hpc.workload.trace_catalogue import CATALOGUE

        if args.trace not in CATALOGUE:
            raise ConfigError(f"replay {args.trace}: --platform is required (a preset, "
                              "nodes=N,cores=C or a platform TOML file); only catalogue logs "
                              f"({', '.join(CATALOGUE)}) have a default")
        args.platform = CATALOGUE[args.trace].platform
    market = args.market or scheduler_entry(args.scheduler).market
    if market and not args.market:
        print(f"{args.scheduler} is a market policy: trace jobs get value curves "
              "(as --market; docs/market.md)")
    load_factor = flag_number(args.load_factor, POSITIVE_FACTOR, "--load-factor")
    seed = flag_number(args.seed, NON_NEGATIVE_INT, "--seed", integer=True)
    first_n = flag_number(args.first_n, COUNT, "--first-n", integer=True)
    _check_out(args)
    with replayable_trace(args.trace, args.out, args.lenient) as trace:
        data: dict[str, Any] = {
            "name": Path(args.trace).name,
            "platform": args.platform,
            "seed": seed,
            "exclusive": args.exclusive,
            "timeseries": not args.no_timeseries,
            # Absolute, as a scenario's trace: config.json names the file wherever it is read.
            "workload": {"trace": str(Path(trace).resolve()), "lenient": args.lenient, "load_factor": load_factor,
                         "market": market},
            "policy": {"scheduler": args.scheduler, "allocator": args.allocator, "bidder": args.bidder},
        }
        if first_n is not None:
            data["workload"]["first_n"] = first_n
        for key, value in _overrides(args.set or []).items():
            set_path(data, key, value)
        config = config_from_dict(data)
        converted = None if trace == resolve_trace(args.trace) else Path(trace)  # sacct output, converted
        return _simulate_and_report(config, args, lambda policy: f"replay of {args.trace} on "
                                    f"{args.platform} with {policy}", converted)


def cmd_run(args: argparse.Namespace) -> int:
    from market_hpc.experiment import load_scenario

    config = load_scenario(args.scenario, _overrides(args.set or []))
    return _simulate_and_report(config, args,
                                lambda policy: f"scenario {config.name}: {policy} on {config.platform}")


def cmd_trace_info(args: argparse.Namespace) -> int:
    from market_hpc.cli.tools import replayable_trace
    from market_hpc.workload import format_trace_info, read_swf, trace_info

    with replayable_trace(args.trace, None, args.lenient) as trace:  # (sacct: converted first)
        print(format_trace_info(trace_info(read_swf(trace, lenient=args.lenient))))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from market_hpc.experiment.demo import run_demo
    from market_hpc.experiment.out_dir import staged_out_dir

    seeds = flag_number(args.seeds, COUNT, "--seeds", integer=True)
    if args.out is None:  # the demo's own folder: re-running the README's first command replaces it
        args.out, args.overwrite = "out/demo", True
    _check_out(args)
    with staged_out_dir(args.out, args.overwrite) as staging:
        run_demo(staging, seeds=seeds, quick=args.quick, shown_as=Path(args.out))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from market_hpc.experiment.report import write_report
    from market_hpc.experiment.sweep import load_sweep, run_sweep

    suffix = "-quick" if args.quick else ""
    out = Path(args.out) if args.out else Path("out") / f"{Path(args.sweep).stem}{suffix}"
    workers = flag_number(args.workers, NON_NEGATIVE_INT, "--workers", integer=True)  # 0: run_sweep names it
    from market_hpc.experiment.out_dir import check_out_dir

    check_out_dir(out, overwrite=True)  # writable; an existing sweep folder is resumed, not replaced
    outcome = run_sweep(load_sweep(args.sweep, quick=args.quick), out, workers=workers, dask=args.dask, keep_runs=args.keep_runs,
                        audit=args.audit)
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

        return cmd_plot(argparse.Namespace(run_dir=args.directory, window=None, nodes=None,
                                           out=None))

    written = write_report(args.directory, args.metric)
    for path in written:
        if path.name.endswith("_paired_differences.txt"):
            print(path.read_text(), end="")
    print(f"report: {len(written)} files in {Path(args.directory) / 'report'}/")
    return 0


def _add_sweep_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sweep = sub.add_parser("sweep", help="run a parameter sweep (resumable)",
                           description="Run every point x seed of a sweep file; re-running into "
                           "the same --out skips runs already stored ok and retries failed ones.")
    sweep.add_argument("sweep", help="sweep TOML file (see docs/sweeps.md)")
    sweep.add_argument("--out", help="results folder (default: out/<sweep file name>)")
    where = sweep.add_mutually_exclusive_group()
    where.add_argument("--workers", default=1,
                       help="local worker processes (default: 1, in this process)")
    where.add_argument("--dask", metavar="ADDRESS",
                       help="local:N for a loopback LocalCluster of N workers, or a scheduler "
                       "address tcp://HOST:PORT")
    sweep.add_argument("--keep-runs", action="store_true",
                       help="also write each run's results folder to OUT/runs/<run_id>/")
    sweep.add_argument("--audit", action="store_true",
                       help="audit each run's results folder (market-hpc audit); a violation "
                       "marks the run failed with the audit's message")
    sweep.add_argument("--quick", action="store_true",
                       help="the sweep file's [quick] grid and zip lists instead of its own "
                       "(default --out: out/<sweep file name>-quick)")
    sweep.set_defaults(func=cmd_sweep)

    report = sub.add_parser("report", help="tables and plots of a sweep results folder "
                            "(or, for a run folder, its page as market-hpc plot)")
    report.add_argument("directory", help="a sweep --out folder, or a run/replay --out folder")
    report.add_argument("--metric", action="append",
                        help="metric to plot (repeatable; default: the sweep file's "
                        "[report] metrics, else total_profit or mean_bounded_slowdown)")
    report.set_defaults(func=cmd_report)


def _replay_choices() -> tuple[str, str, str, str]:
    """Platform presets, schedulers, allocators and bidders for ``replay --help`` (plugins
    included).

    Importing them loads numpy and every policy module, so only the ``replay`` command
    pays for it; ``market-hpc --help`` and the other commands start without.
    """
    from market_hpc.domain.platform import PRESETS
    from market_hpc.policies import allocator_names, bidder_names, scheduler_names

    return (", ".join(PRESETS), ", ".join(scheduler_names()), ", ".join(allocator_names()),
            ", ".join(bidder_names()))


def build_parser(list_choices: bool = True) -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests).

    Args:
        list_choices: Name every preset, scheduler and allocator in ``replay``'s help
            (imports the policy registry); without, the help points to ``replay --help``.
    """
    from market_hpc import __version__

    if list_choices:
        presets, schedulers, allocators, bidders = _replay_choices()
    else:
        presets = schedulers = allocators = bidders = "see market-hpc replay --help"

    parser = argparse.ArgumentParser(
        prog="market-hpc",
        description="Simulate HPC dispatching under overload: market auctions with hold/resume, "
        "classic schedulers, trace replay.",
    )
    parser.add_argument("--version", action="version", version=f"market-hpc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the embedded default study")
    demo.add_argument("--out", help="results folder (default: out/demo, replaced on every run; a "
                      "folder given here is refused if it holds files, unless --overwrite)")
    demo.add_argument("--seeds", default=3, help="number of seeds (default: 3)")
    demo.add_argument("--quick", action="store_true", help="smaller study for smoke tests")
    demo.add_argument("--overwrite", action="store_true",
                        help="replace an existing, non-empty --out folder (nothing of it is kept)")
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run one scenario file")
    run.add_argument("scenario", help="scenario TOML file")
    run.add_argument("--out", help="results folder (refused if it holds files, unless --overwrite)")
    run.add_argument("--overwrite", action="store_true",
                        help="replace an existing, non-empty --out folder (nothing of it is kept)")
    run.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="override a config value by dotted path, e.g. policy.scheduler=easy")
    run.set_defaults(func=cmd_run)

    replay = sub.add_parser("replay", help="replay an SWF trace or Slurm sacct output")
    replay.add_argument("trace", help="SWF file (.swf or .swf.gz), sacct --parsable2 output "
                        "(converted first, see trace convert) or a fetched catalogue log "
                        "(trace list, trace fetch)")
    replay.add_argument("--platform",
                        help=f"preset ({presets}), nodes=N,cores=C[,gpus=G,mics=M,mem=GB] "
                        "or a platform TOML file (default for a catalogue log: its preset; "
                        "required otherwise)")
    replay.add_argument("--scheduler", default="fifo", help=f"one of {schedulers}")
    replay.add_argument("--allocator", default=None, help=f"one of {allocators}")
    replay.add_argument("--bidder", default=None,
                        help=f"market auctions' node bidding strategy: one of {bidders} (default free-cores)")
    replay.add_argument("--out", help="results folder (refused if it holds files, unless --overwrite)")
    replay.add_argument("--overwrite", action="store_true",
                        help="replace an existing, non-empty --out folder (nothing of it is kept)")
    replay.add_argument("--seed", default=0)
    replay.add_argument("--lenient", action="store_true", help=LENIENT_HELP)
    replay.add_argument("--market", action="store_true",
                        help="give trace jobs speedup profiles and value curves (workload.market; "
                        "implied by a market scheduler such as maxvh)")
    replay.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="override a config value by dotted path, e.g. policy.hold_penalty=0.1")
    replay.add_argument("--load-factor", default=1.0,
                        help="compress inter-arrival times by this factor")
    replay.add_argument("--first-n", default=None, help="replay only the first N jobs")
    replay.add_argument("--exclusive", action="store_true", help="allocate whole nodes per job")
    replay.add_argument("--no-timeseries", action="store_true", help="skip timeseries.csv sampling")
    replay.set_defaults(func=cmd_replay)

    trace = sub.add_parser("trace", help="workload trace tools")
    trace_sub = trace.add_subparsers(dest="trace_command", required=True)
    info = trace_sub.add_parser("info", help="counts, ranges and anomalies of a trace")
    info.add_argument("trace", help="SWF file (.swf or .swf.gz) or sacct --parsable2 output")
    info.add_argument("--lenient", action="store_true", help=LENIENT_HELP)
    info.set_defaults(func=cmd_trace_info)
    add_convert_command(trace_sub)
    add_catalogue_commands(trace_sub)
    _add_sweep_commands(sub)
    add_export_command(sub)
    add_plot_command(sub)
    from market_hpc.cli.policies_cmd import add_policies_command

    add_policies_command(sub)
    add_audit_command(sub)
    from market_hpc.viz import add_viz_command

    add_viz_command(sub)
    return parser


SIMULATING_COMMANDS = frozenset({"replay", "run", "demo", "sweep"})
ONE_RUN_COMMANDS = frozenset({"replay", "run"})
_GC = {"frozen": False}
_IMPORT_PAUSE = ExitStack()
"""Holds ``gc_paused()`` from ``_prepare_imports`` until ``_collect_from_here`` closes it
(the run starts) or ``main`` returns (the run never started, e.g. an error before it)."""


def _prepare_imports(arguments: Sequence[str]) -> None:
    """Start a command that simulates: Mesa first and, for one run, no cyclic GC while
    importing (``gc_paused`` held by ``_IMPORT_PAUSE``, closed before the run).

    Mesa's logging helpers call ``inspect.stack()`` while Mesa is imported, and
    ``inspect.getmodule`` scans ``sys.modules`` once per frame on the stack: imported from
    here (few frames, few modules loaded) that costs ~0.1-0.25 s less than at the end of
    ``market_hpc.experiment``'s import chain. The imports of ``replay``/``run`` create
    next to no garbage, yet trigger full collections (15-50 ms each) as they allocate.
    ``--help`` and ``trace`` import neither Mesa nor anything else here.
    """
    if not arguments or arguments[0] not in SIMULATING_COMMANDS or {"-h", "--help"} & set(arguments):
        return
    if arguments[0] in ONE_RUN_COMMANDS:
        _IMPORT_PAUSE.enter_context(gc_paused())  # (a GC the caller turned off stays off)
    import mesa  # noqa: F401


def _collect_from_here() -> None:
    """Before the one run of ``replay``/``run``: move everything imported out of the cyclic
    GC's sight (``gc.freeze``), so no collection during the run walks the modules again
    (~0.3-0.5 s of a KTH replay), and end the pause ``_prepare_imports`` began."""
    if not gc.get_freeze_count():  # (a caller that froze objects itself keeps them frozen)
        gc.freeze()
        _GC["frozen"] = True
    _IMPORT_PAUSE.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``market-hpc`` and ``python -m market_hpc``."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    with _IMPORT_PAUSE:  # ends a pause the run did not end (an error before it)
        _prepare_imports(arguments)
        try:
            return _main(arguments, argv)
        finally:
            if _GC["frozen"]:
                _GC["frozen"] = False
                gc.unfreeze()  # (for callers in process, e.g. tests: those objects collect again)


def _main(arguments: list[str], argv: Sequence[str] | None) -> int:
    parser = build_parser(list_choices="replay" in arguments)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except MarketHpcError as exc:
        print(f"market-hpc: error: {exc}", file=sys.stderr)
        if isinstance(exc, TraceFormatError) and exc.line is not None and getattr(
                args, "lenient", True) is False:
            print("market-hpc: hint: add --lenient to skip malformed lines and count them "
                  "by kind", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.filename is None:
            raise
        # A file the command could not write or read outside the checked results folder
        # (a sweep's tables, an export, a converted trace): one line, not a traceback.
        print(f"market-hpc: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("market-hpc: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
