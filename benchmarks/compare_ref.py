#!/usr/bin/env python3
"""The main replays against a git ref, in alternated pairs of whole-process CPU.

For each replay the script runs the same command with this tree's code and with REF's
(a detached ``git worktree`` beside this one, removed at the end, imported through
``PYTHONPATH``; same interpreter and packages), alternating which goes first, and reads
each child's CPU (user + system, ``os.wait4``). It prints every pair's ratio (this tree /
REF) and their median, and checks that both sides wrote the same ``jobs.csv`` (a speed
change must not change a schedule; ``--no-check`` skips it for a REF whose results are
known to differ). Both trees' bytecode is compiled first and the children may use it
(``PYTHONDONTWRITEBYTECODE`` removed), as an installed package runs; ``--no-bytecode``
keeps the variable, and then every run also pays for compiling every module it imports.

Replays (traces from ``$MARKET_HPC_TRACES``, else ``../shared/traces``):

* ``kth-fifo``, ``kth-easy``: KTH-SP2 (27,992 jobs) on its 100 x 1 preset,
  ``market-hpc replay --no-timeseries``;
* ``curie-easy``: the large EASY replay, CEA-Curie (312,826 job lines) on the ``curie``
  preset (5,544 nodes, 93,312 cores), core-level first-fit;
* ``hpc2n-maxvh``: the market replay, ``market-hpc run scenarios/hpc2n_market.toml``
  (HPC2N, 202,876 jobs at 1.5x load, maxVH); ``--quick`` runs its first 20,000 jobs.

Usage (from the repository root; numbers mean something only on an otherwise idle
machine, and only as pairs: never quote one unpaired time)::

    python benchmarks/compare_ref.py 8c0f8a0                    # every replay, 5 pairs each
    python benchmarks/compare_ref.py main~3 --only kth-fifo kth-easy --pairs 9
    python benchmarks/compare_ref.py HEAD~1 --quick             # 3 pairs, the market run shortened

Exit status 1 when a replay's results differ between the two trees, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _traces() -> Path:
    return Path(os.environ.get("MARKET_HPC_TRACES") or REPO.parent / "shared" / "traces")


def _replays(quick: bool) -> dict[str, list[str]]:
    """Replay name -> the ``market_hpc`` arguments (``OUT`` is replaced by a folder)."""
    traces = _traces()
    # each tree's own scenario file (run from that tree: its relative trace path resolves)
    # each run writes a new folder, so no --overwrite (a flag older refs do not have)
    market = ["run", "scenarios/hpc2n_market.toml", "--out", "OUT"]
    if quick:
        market += ["--set", "workload.first_n=20000"]
    replay = ["replay", "--no-timeseries", "--out", "OUT"]
    return {
        "kth-fifo": [
            *replay,
            str(traces / "KTH-SP2-1996-2.1-cln.swf.gz"),
            "--platform",
            "kth-sp2",
            "--scheduler",
            "fifo",
        ],
        "kth-easy": [
            *replay,
            str(traces / "KTH-SP2-1996-2.1-cln.swf.gz"),
            "--platform",
            "kth-sp2",
            "--scheduler",
            "easy",
        ],
        "curie-easy": [
            *replay,
            str(traces / "CEA-Curie-2011-2.1-cln.swf.gz"),
            "--platform",
            "curie",
            "--scheduler",
            "easy",
        ],
        "hpc2n-maxvh": market,
    }


def _env(code: Path, bytecode: bool) -> dict[str, str]:
    """The children's environment: ``code`` first on the path; with ``bytecode``, Python's
    cached bytecode allowed (``PYTHONDONTWRITEBYTECODE`` removed), as an installed package
    runs. Without it, a machine that sets ``PYTHONDONTWRITEBYTECODE`` compiles every module
    from source in every run, which charges a run for the size of the source tree."""
    env = {**os.environ, "PYTHONPATH": str(code), "MARKET_HPC_TRACES": str(_traces())}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _compile(code: Path) -> None:
    """Write ``code``'s bytecode cache (``compileall``) before any timed run."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(code / "market_hpc")],
        env=_env(code, bytecode=True),
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _cpu(code: Path, arguments: list[str], out: Path, bytecode: bool) -> float:
    """Run ``python -m market_hpc ARGUMENTS`` with ``code`` imported first; its CPU seconds."""
    argv = [sys.executable, "-m", "market_hpc", *[str(out) if a == "OUT" else a for a in arguments]]
    env = _env(code, bytecode)
    with open(os.devnull, "wb") as sink:
        child = subprocess.Popen(argv, cwd=code, env=env, stdout=sink, stderr=subprocess.PIPE)
        assert child.stderr is not None
        errors = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{code}: {' '.join(argv[3:])} failed:\n{errors.decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


def _worktree(ref: str) -> Path:
    """A detached worktree of ``ref`` beside this one (so that scenario files' paths
    relative to the repository, such as ``../../shared/traces``, resolve the same)."""
    target = REPO.parent / f".compare-ref-{os.getpid()}"
    done = subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(target), ref],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"compare_ref: cannot check out {ref!r}: {done.stderr.strip()}")
    return target


def compare(
    ref_tree: Path, names: list[str], pairs: int, quick: bool, check: bool, bytecode: bool = True
) -> bool:
    """Print each replay's pair ratios; whether every checked replay gave the same jobs.csv."""
    replays = _replays(quick)
    if bytecode:
        for tree in (REPO, ref_tree):
            _compile(tree)
    same = True
    for name in names:
        ratios = []
        with tempfile.TemporaryDirectory() as scratch:
            for pair in range(pairs):
                outs = {side: Path(scratch) / f"{side}-{pair}" for side in ("here", "ref")}
                order = ["here", "ref"] if pair % 2 == 0 else ["ref", "here"]
                cpu = {
                    side: _cpu(
                        REPO if side == "here" else ref_tree, replays[name], outs[side], bytecode
                    )
                    for side in order
                }
                ratios.append(cpu["here"] / cpu["ref"])
                print(
                    f"{name}: pair {pair + 1} ({order[0]} first): here {cpu['here']:.2f} s, "
                    f"ref {cpu['ref']:.2f} s, ratio {ratios[-1]:.3f}",
                    flush=True,
                )
            if check:
                equal = filecmp.cmp(
                    outs["here"] / "jobs.csv", outs["ref"] / "jobs.csv", shallow=False
                )
                same = same and equal
                verdict = "same jobs.csv" if equal else "jobs.csv DIFFERS"
            else:
                verdict = "results not compared"
        print(
            f"{name}: median ratio {statistics.median(ratios):.3f} over {pairs} pairs "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f}); {verdict}",
            flush=True,
        )
    return same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ref", help="the git ref to compare with (a commit, branch or tag)")
    parser.add_argument("--only", nargs="+", choices=list(_replays(False)), help="replays to run")
    parser.add_argument(
        "--pairs", type=int, default=None, help="pairs per replay (default 5, --quick 3)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="3 pairs; the market run's first 20,000 jobs"
    )
    parser.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="do not compare the two sides' jobs.csv",
    )
    parser.add_argument(
        "--no-bytecode",
        dest="bytecode",
        action="store_false",
        help="keep PYTHONDONTWRITEBYTECODE if set: every run compiles every module from source",
    )
    args = parser.parse_args(argv)
    pairs = args.pairs if args.pairs is not None else (3 if args.quick else 5)
    if pairs < 1:
        parser.error(f"--pairs: got {pairs}; valid: 1 or more")
    missing = [p for p in ("KTH-SP2-1996-2.1-cln.swf.gz",) if not (_traces() / p).is_file()]
    if missing:
        parser.error(f"trace {missing[0]} not in {_traces()} (set MARKET_HPC_TRACES)")
    tree = _worktree(args.ref)
    try:
        same = compare(
            tree, args.only or list(_replays(False)), pairs, args.quick, args.check, args.bytecode
        )
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
            check=False,
            capture_output=True,
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
