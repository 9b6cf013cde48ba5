"""``market-hpc``: the command line, thin over ``market_hpc.experiment``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from market_hpc.errors import ConfigError, MarketHpcError


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


def cmd_replay(args: argparse.Namespace) -> int:
    from market_hpc.experiment import config_from_dict, simulate

    data = {
        "name": Path(args.trace).name,
        "platform": args.platform,
        "seed": args.seed,
        "exclusive": args.exclusive,
        "timeseries": not args.no_timeseries,
        "workload": {"trace": args.trace, "lenient": args.lenient, "load_factor": args.load_factor},
        "policy": {"scheduler": args.scheduler, "allocator": args.allocator},
    }
    if args.first_n is not None:
        data["workload"]["first_n"] = args.first_n  # type: ignore[index]
    config = config_from_dict(data)
    result = simulate(config, progress=True)
    out = result.write(args.out) if args.out else None
    print(f"replay of {args.trace} on {args.platform} with {result.summary['policy']}")
    _print_summary(result.summary, out)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from market_hpc.experiment import load_scenario, simulate

    config = load_scenario(args.scenario, _overrides(args.set or []))
    result = simulate(config, progress=True)
    out = result.write(args.out) if args.out else None
    print(f"scenario {config.name}: {result.summary['policy']} on {config.platform}")
    _print_summary(result.summary, out)
    return 0


def cmd_trace_info(args: argparse.Namespace) -> int:
    from market_hpc.workload import format_trace_info, read_swf, trace_info

    print(format_trace_info(trace_info(read_swf(args.trace, lenient=args.lenient))))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from market_hpc.experiment.demo import run_demo

    run_demo(Path(args.out), seeds=args.seeds, quick=args.quick)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for docs and tests)."""
    from market_hpc import __version__
    from market_hpc.domain.platform import PRESETS
    from market_hpc.policies import allocator_names, scheduler_names

    parser = argparse.ArgumentParser(
        prog="market-hpc",
        description="Simulate HPC dispatching under overload: market auctions with hold/resume, "
        "classic schedulers, trace replay.",
    )
    parser.add_argument("--version", action="version", version=f"market-hpc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the embedded default study")
    demo.add_argument("--out", default="out/demo", help="results folder (default: out/demo)")
    demo.add_argument("--seeds", type=int, default=3, help="number of seeds (default: 3)")
    demo.add_argument("--quick", action="store_true", help="smaller study for smoke tests")
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run one scenario file")
    run.add_argument("scenario", help="scenario TOML file")
    run.add_argument("--out", help="results folder")
    run.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="override a config value by dotted path, e.g. policy.scheduler=easy")
    run.set_defaults(func=cmd_run)

    replay = sub.add_parser("replay", help="replay an SWF trace")
    replay.add_argument("trace", help="SWF file (.swf or .swf.gz)")
    replay.add_argument("--platform", required=True,
                        help=f"preset ({', '.join(PRESETS)}), nodes=N,cores=C[,gpus=G,mics=M,mem=GB] "
                        "or a platform TOML file")
    replay.add_argument("--scheduler", default="fifo", help=f"one of {', '.join(scheduler_names())}")
    replay.add_argument("--allocator", default=None, help=f"one of {', '.join(allocator_names())}")
    replay.add_argument("--out", help="results folder")
    replay.add_argument("--seed", type=int, default=0)
    replay.add_argument("--lenient", action="store_true", help="skip malformed lines, report counts")
    replay.add_argument("--load-factor", type=float, default=1.0,
                        help="compress inter-arrival times by this factor")
    replay.add_argument("--first-n", type=int, default=None, help="replay only the first N jobs")
    replay.add_argument("--exclusive", action="store_true", help="allocate whole nodes per job")
    replay.add_argument("--no-timeseries", action="store_true", help="skip timeseries.csv sampling")
    replay.set_defaults(func=cmd_replay)

    trace = sub.add_parser("trace", help="workload trace tools")
    trace_sub = trace.add_subparsers(dest="trace_command", required=True)
    info = trace_sub.add_parser("info", help="counts, ranges and anomalies of a trace")
    info.add_argument("trace")
    info.add_argument("--lenient", action="store_true")
    info.set_defaults(func=cmd_trace_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``market-hpc`` and ``python -m market_hpc``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except MarketHpcError as exc:
        print(f"market-hpc: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("market-hpc: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
