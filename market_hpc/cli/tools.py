"""``market-hpc trace convert``, ``export`` and ``plot``, and sacct input for ``replay``.

Kept apart from :mod:`market_hpc.cli` so that module stays a thin list of commands.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# http_fetch's defaults, repeated so that building the parser imports no workload module
# (the package imports pandas); tests/test_fuzz_fetch.py keeps them equal.
DEFAULT_DEADLINE = 900.0
DEFAULT_MIN_RATE = 1000.0
RATE_WINDOW = 30.0
LENIENT_HELP = (
    "skip malformed lines instead of stopping at the first; each is counted by "
    "kind and the first line numbers are listed"
)


def cmd_trace_convert(args: argparse.Namespace) -> int:
    """Convert sacct output to SWF and print what became of every line."""
    from market_hpc.workload.slurm_convert import convert_sacct, side_file

    out = Path(args.out) if args.out else Path(args.trace).with_suffix(".swf")
    conversion = convert_sacct(args.trace, out, lenient=args.lenient)
    print("\n".join(conversion.describe()))
    print(f"written: {out} and {side_file(out)}")
    return 0


@contextmanager
def replayable_trace(trace: str, out_dir: str | None, lenient: bool) -> Iterator[str]:
    """The SWF file to replay: ``trace`` itself, or for sacct output its conversion,
    written to ``OUT/trace.swf`` (kept with the results) or to a temporary folder."""
    from market_hpc.workload.slurm import is_sacct
    from market_hpc.workload.trace_catalogue import resolve_trace

    trace = resolve_trace(trace)
    if not is_sacct(trace):
        yield trace
        return
    from market_hpc.workload.slurm_convert import convert_sacct

    with tempfile.TemporaryDirectory(prefix="market-hpc-sacct-") as scratch:
        # Converted beside the run, not into OUT: the results folder is written whole at
        # the end (the conversion travels with it, see run_commands.simulate_and_report).
        swf = Path(scratch).resolve() / "trace.swf"
        conversion = convert_sacct(trace, swf, lenient=lenient)
        print("sacct input: " + "\n".join(conversion.describe()))
        print(
            "converted to "
            + (
                f"{Path(out_dir) / 'trace.swf'}"
                if out_dir
                else f"{swf} (temporary: replay --out or trace convert keeps it)"
            )
        )
        yield str(swf)


def cmd_trace_list(args: argparse.Namespace) -> int:
    """Print the catalogue of archive logs and whether each is cached."""
    from market_hpc.workload.trace_catalogue import catalogue_table

    print("\n".join(catalogue_table()))
    return 0


def cmd_trace_fetch(args: argparse.Namespace) -> int:
    """Download catalogue logs into the cache, verifying their checksums."""
    import sys
    import time

    from market_hpc.workload.http_fetch import check_base_url
    from market_hpc.workload.trace_catalogue import (
        cached_path,
        catalogue_entry,
        fetch_trace,
        is_verified,
    )

    entries = [
        catalogue_entry(name) for name in args.names
    ]  # every name checked before any download
    if args.mirror is not None:
        check_base_url(args.mirror)
    for entry in entries:
        if not args.force and is_verified(entry):
            print(f"{entry.name}: already cached, checksum verified: {cached_path(entry)}")
            continue
        print(
            f"{entry.name}: downloading {entry.url(args.mirror)} ({entry.size / 1e6:.1f} MB)",
            flush=True,
        )
        shown = {"at": 0.0}

        def progress(done: int, total: int, shown: dict[str, float] = shown) -> None:
            now = time.monotonic()
            if (
                done == total or now - shown["at"] >= 2.0
            ):  # a line every 2 s, also without a terminal
                shown["at"] = now
                print(
                    f"  {done / 1e6:.1f} of {total / 1e6:.1f} MB ({100 * done / total:.0f}%)",
                    file=sys.stderr,
                    flush=True,
                )

        path = fetch_trace(
            entry,
            mirror=args.mirror,
            progress=progress,
            force=args.force,
            deadline=args.deadline,
            min_rate=args.min_rate,
        )
        print(
            f"{entry.name}: checksum verified, cached at {path}; replay it with "
            f"market-hpc replay {entry.name} --platform {entry.platform}"
        )
    return 0


def _number(minimum: float, strict: bool) -> Callable[[str], float]:
    """An argparse type: a finite number above ``minimum`` (``strict``) or at least it."""
    bound = f"> {minimum:g}" if strict else f">= {minimum:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise argparse.ArgumentTypeError(f"got {text!r}; valid: a finite number {bound}")
        return value

    return parse


def add_catalogue_commands(trace_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``trace list`` and ``trace fetch``."""
    listing = trace_sub.add_parser(
        "list",
        help="the Parallel Workloads Archive logs this project knows",
        description="List the archive logs in the catalogue: name, jobs, size, matching "
        "platform preset and whether the log is in the cache.",
    )
    listing.set_defaults(func=cmd_trace_list)
    fetch = trace_sub.add_parser(
        "fetch",
        help="download archive logs into the cache (checksum verified)",
        description="Download logs of the Parallel Workloads Archive into the cache folder "
        "($MARKET_HPC_CACHE/traces, else ~/.cache/market-hpc/traces), verify each file's "
        "SHA-256 and keep it only when it matches (a failed or interrupted download leaves "
        "nothing). replay and scenario files then accept the name. Any network or protocol "
        "failure is one line naming the URL, exit code 2.",
    )
    fetch.add_argument("names", nargs="+", metavar="NAME", help="catalogue names (trace list)")
    fetch.add_argument(
        "--mirror",
        help="base URL (http:// or https://) serving the archive's "
        "file names, for sites without direct access",
    )
    fetch.add_argument("--force", action="store_true", help="download again even when cached")
    fetch.add_argument(
        "--deadline",
        type=_number(0, strict=True),
        default=DEFAULT_DEADLINE,
        metavar="SECONDS",
        help=f"give up on a log whose download takes longer (default {DEFAULT_DEADLINE:g})",
    )
    fetch.add_argument(
        "--min-rate",
        type=_number(0, strict=False),
        default=DEFAULT_MIN_RATE,
        metavar="BYTES_PER_S",
        help="give up when fewer bytes a second arrive over "
        f"{RATE_WINDOW:g} s (default {DEFAULT_MIN_RATE:g}; 0: no minimum)",
    )
    fetch.set_defaults(func=cmd_trace_fetch)


def add_convert_command(trace_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``trace convert``."""
    convert = trace_sub.add_parser(
        "convert",
        help="convert Slurm sacct output to SWF",
        description="Convert `sacct --parsable2` output (with its header line) to an SWF "
        "trace plus NAME.slurm.csv (Slurm ids, states, GPUs, memory). Every line is counted: "
        "converted, skipped with a reason, or rejected with file, line and field. "
        "The mapping is in docs/slurm.md.",
    )
    convert.add_argument(
        "trace",
        help="sacct output, e.g. from sacct --allusers --parsable2 "
        "--format=JobID,Submit,Start,End,Elapsed,Timelimit,NCPUS,ReqCPUS,"
        "NNodes,State,Partition,ReqMem,AllocTRES,ReqTRES,User",
    )
    convert.add_argument("--out", help="SWF file to write (default: the input name with .swf)")
    convert.add_argument("--lenient", action="store_true", help=LENIENT_HELP)
    convert.set_defaults(func=cmd_trace_convert)


def cmd_export(args: argparse.Namespace) -> int:
    """Write a run's schedule as SWF, Batsim JSON and Batsim's output jobs CSV."""
    from market_hpc.experiment.schedule_export import export_schedule

    for note in export_schedule(
        args.run_dir, swf=args.swf, batsim=args.batsim, batsim_jobs_file=args.batsim_jobs
    ):
        print(note)
    return 0


def _run_dir_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    description: str,
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=summary, description=description)
    parser.add_argument("run_dir", help="a run folder (run or replay --out DIR)")
    return parser


def add_export_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``export``."""
    export = _run_dir_parser(
        sub,
        "export",
        "write a run's schedule as SWF, a Batsim JSON workload and Batsim's output jobs CSV",
        "Write the simulated schedule of a run folder (run/replay --out) as an SWF "
        "trace with the simulated wait and run times (standard header; the input trace's "
        "status and partition kept), as a Batsim JSON workload (one resource per core, delay "
        "profiles), and as Batsim's output jobs file with allocated_resources (cores numbered "
        "like the Gantt chart of market-hpc plot), which evalys's JobSet.from_csv loads. "
        "A held and resumed job is an SWF summary line plus one partial-execution line per "
        "segment (status 2/3/4) and one Batsim row per execution (ID#n). "
        "Replaying the SWF with the same platform and policy reproduces the schedule. "
        "See docs/exports.md.",
    )
    export.add_argument("--swf", help="SWF file (default: RUN_DIR/schedule.swf)")
    export.add_argument("--batsim", help="Batsim JSON file (default: RUN_DIR/workload.json)")
    export.add_argument(
        "--batsim-jobs",
        metavar="FILE",
        help="Batsim output jobs CSV (default: RUN_DIR/batsim_jobs.csv)",
    )
    export.set_defaults(func=cmd_export)


def cmd_plot(args: argparse.Namespace) -> int:
    """Write a run's HTML page with its Gantt chart."""
    from market_hpc.experiment.run_page import parse_nodes, parse_window, write_run_page

    page, notes = write_run_page(
        args.run_dir, window=parse_window(args.window), nodes=parse_nodes(args.nodes), out=args.out
    )
    for note in notes:
        print(f"note: {note}")
    print(f"page: {page} (pictures also in {Path(args.run_dir) / 'plots'}/)")
    return 0


def add_plot_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``plot``."""
    plot = _run_dir_parser(
        sub,
        "plot",
        "one HTML page of a run: Gantt chart, occupancy, utilisation, CDFs",
        "Draw a run folder (run/replay --out): a Gantt chart of jobs on nodes (also "
        "RUN_DIR/schedule.svg, with hover text per job), a "
        "binned occupancy map for large platforms, utilisation and queue length over time, "
        "and wait and slowdown CDFs, in one self-contained HTML page (RUN_DIR/schedule.html; "
        "PNGs in RUN_DIR/plots/).",
    )
    plot.add_argument(
        "--window",
        metavar="START:END",
        help="time span to draw, seconds after the run's first submission or with a unit "
        "(e.g. 0:2d, 1.5h:3h, :7200; a bound @TIME counts from the trace's time 0, as "
        "jobs.csv does), or all; default: the whole run, except the "
        "Gantt chart, whose window is chosen so that most jobs are at least 5 px "
        "wide (printed)",
    )
    plot.add_argument(
        "--nodes",
        metavar="FIRST:LAST",
        help="node range of the Gantt chart, e.g. 0:64 (default: every node)",
    )
    plot.add_argument("--out", help="HTML file (default: RUN_DIR/schedule.html)")
    plot.set_defaults(func=cmd_plot)
