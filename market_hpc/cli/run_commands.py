"""The one-run commands: ``run`` (a scenario file), ``replay`` (a trace) and ``trace info``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from market_hpc.cli.startup import collect_from_here
from market_hpc.cli.tools import LENIENT_HELP
from market_hpc.errors import ConfigError
from market_hpc.validation import COUNT, NON_NEGATIVE_INT, POSITIVE_FACTOR, flag_number


def overrides(pairs: Sequence[str]) -> dict[str, object]:
    from market_hpc.experiment.config import parse_value

    result: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects key=value (e.g. policy.scheduler=easy), got {pair!r}")
        result[key.strip()] = parse_value(raw.strip())
    return result


def print_summary(summary: dict[str, object], out: Path | None) -> None:
    keys = (
        "jobs_total",
        "jobs_completed",
        "jobs_rejected",
        "jobs_dropped",
        "jobs_skipped",
        "mean_wait",
        "mean_slowdown",
        "mean_bounded_slowdown",
        "utilisation_cores",
        "makespan",
        "total_profit",
        "holds",
        "simulation_seconds",
    )
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


def check_out(args: argparse.Namespace) -> None:
    """Refuse an ``--out`` that cannot be written (or would replace results without
    ``--overwrite``) before anything is simulated."""
    if args.out:
        from market_hpc.experiment.out_dir import check_out_dir

        check_out_dir(args.out, args.overwrite)


def simulate_and_report(
    config: Any,
    args: argparse.Namespace,
    title: Callable[[str], str],
    converted: Path | None = None,
) -> int:
    """Run ``config``, write ``--out`` and print the summary.

    ``converted`` (a trace converted from sacct output) is written into ``--out`` as
    ``trace.swf`` with its side file ``trace.slurm.csv`` (the GPU requests) and the
    results, and config.json names it there (absolutely). The run's data warnings
    (``data_warnings.run_warnings``) go to stderr.
    """
    # Trace replays stream the trace and the results (bounded memory); the rest as simulate().
    import dataclasses
    import sys

    from market_hpc.experiment.data_warnings import run_warnings
    from market_hpc.experiment.streaming import simulate_streaming
    from market_hpc.workload.slurm_convert import side_file

    check_out(args)
    collect_from_here()
    result = simulate_streaming(config, progress=True)
    for message in run_warnings(result.summary, result.workload_report, config.workload.trace):
        print(f"market-hpc: warning: {message}", file=sys.stderr)
    carry: dict[str, Path] = {}
    if converted is not None and args.out:
        kept = Path(args.out).resolve() / "trace.swf"
        workload = dataclasses.replace(result.config.workload, trace=str(kept))
        result.config = dataclasses.replace(result.config, workload=workload)
        carry[kept.name] = converted
        carry[side_file(kept).name] = side_file(converted)
    out = result.write(args.out, overwrite=args.overwrite, carry=carry) if args.out else None
    print(title(result.summary["policy"]))
    print_summary(result.summary, out)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from market_hpc.cli.tools import replayable_trace
    from market_hpc.experiment import config_from_dict
    from market_hpc.experiment.config import set_path
    from market_hpc.policies.registry import scheduler_entry
    from market_hpc.workload.trace_catalogue import resolve_trace

    if args.platform is None:
        from market_hpc.workload.trace_catalogue import CATALOGUE, catalogue_lookup

        entry = catalogue_lookup(args.trace)
        if entry is None:
            raise ConfigError(
                f"replay {args.trace}: --platform is required (a preset, "
                "nodes=N,cores=C or a platform TOML file); only catalogue logs "
                f"({', '.join(CATALOGUE)}) have a default"
            )
        args.platform = entry.platform
    market = args.market or scheduler_entry(args.scheduler).market
    if market and not args.market:
        print(
            f"{args.scheduler} is a market policy: trace jobs get value curves "
            "(as --market; docs/market.md)"
        )
    load_factor = flag_number(args.load_factor, POSITIVE_FACTOR, "--load-factor")
    seed = flag_number(args.seed, NON_NEGATIVE_INT, "--seed", integer=True)
    first_n = flag_number(args.first_n, COUNT, "--first-n", integer=True)
    check_out(args)
    with replayable_trace(args.trace, args.out, args.lenient) as trace:
        data: dict[str, Any] = {
            "name": Path(args.trace).name,
            "platform": args.platform,
            "seed": seed,
            "exclusive": args.exclusive,
            "timeseries": not args.no_timeseries,
            # Absolute, as a scenario's trace: config.json names the file wherever it is read.
            "workload": {
                "trace": str(Path(trace).resolve()),
                "lenient": args.lenient,
                "load_factor": load_factor,
                "market": market,
            },
            "policy": {
                "scheduler": args.scheduler,
                "allocator": args.allocator,
                "bidder": args.bidder,
            },
        }
        if first_n is not None:
            data["workload"]["first_n"] = first_n
        for key, value in overrides(args.set or []).items():
            set_path(data, key, value)
        config = config_from_dict(data)
        converted = (
            None if trace == resolve_trace(args.trace) else Path(trace)
        )  # sacct output, converted
        return simulate_and_report(
            config,
            args,
            lambda policy: f"replay of {args.trace} on {args.platform} with {policy}",
            converted,
        )


def cmd_run(args: argparse.Namespace) -> int:
    from market_hpc.experiment import load_scenario

    config = load_scenario(args.scenario, overrides(args.set or []))
    return simulate_and_report(
        config, args, lambda policy: f"scenario {config.name}: {policy} on {config.platform}"
    )


def cmd_trace_info(args: argparse.Namespace) -> int:
    from market_hpc.cli.tools import replayable_trace
    from market_hpc.workload import format_trace_info, read_swf, trace_info
    from market_hpc.workload.gpu_requests import read_gpu_requests

    with replayable_trace(args.trace, None, args.lenient) as trace:  # (sacct: converted first)
        workload = read_swf(trace, lenient=args.lenient)
        info = trace_info(workload)
        info["gpu_request_jobs"] = len(read_gpu_requests(trace, workload.header))
        print(format_trace_info(info))
    return 0


def add_run_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    presets: str,
    schedulers: str,
    allocators: str,
    bidders: str,
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """Add ``run``, ``replay`` and ``trace info`` (the choices name what ``replay --help``
    lists); returns the ``trace`` command's subparsers for its other tools."""
    run = sub.add_parser("run", help="run one scenario file")
    run.add_argument("scenario", help="scenario TOML file")
    run.add_argument("--out", help="results folder (refused if it holds files, unless --overwrite)")
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing, non-empty --out folder (nothing of it is kept)",
    )
    run.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config value by dotted path, e.g. policy.scheduler=easy",
    )
    run.set_defaults(func=cmd_run)

    replay = sub.add_parser("replay", help="replay an SWF trace or Slurm sacct output")
    replay.add_argument(
        "trace",
        help="SWF file (.swf or .swf.gz), sacct --parsable2 output "
        "(converted first, see trace convert) or a fetched catalogue log "
        "(trace list, trace fetch)",
    )
    replay.add_argument(
        "--platform",
        help=f"preset ({presets}), nodes=N,cores=C[,gpus=G,mics=M,mem=GB] "
        "or a platform TOML file (default for a catalogue log: its preset; "
        "required otherwise)",
    )
    replay.add_argument("--scheduler", default="fifo", help=f"one of {schedulers}")
    replay.add_argument("--allocator", default=None, help=f"one of {allocators}")
    replay.add_argument(
        "--bidder",
        default=None,
        help=f"market auctions' node bidding strategy: one of {bidders} (default free-cores)",
    )
    replay.add_argument(
        "--out", help="results folder (refused if it holds files, unless --overwrite)"
    )
    replay.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing, non-empty --out folder (nothing of it is kept)",
    )
    replay.add_argument("--seed", default=0)
    replay.add_argument("--lenient", action="store_true", help=LENIENT_HELP)
    replay.add_argument(
        "--market",
        action="store_true",
        help="give trace jobs speedup profiles and value curves (workload.market; "
        "implied by a market scheduler such as maxvh)",
    )
    replay.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config value by dotted path, e.g. policy.hold_penalty=0.1",
    )
    replay.add_argument(
        "--load-factor", default=1.0, help="compress inter-arrival times by this factor"
    )
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
    return trace_sub
