"""Record or check the market dispatchers' results: a digest of every run's ``jobs.csv``
and its summary (timing entries left out), so a faster market is proven to decide the same.

    PYTHONPATH=. python benchmarks/market_equivalence.py check      # against the stored reference
    PYTHONPATH=. python benchmarks/market_equivalence.py record FILE
    # the general path, same digests:
    PYTHONPATH=. python benchmarks/market_equivalence.py check --general

``--general`` makes the auctions decide these cores-only single-node workloads by their
general path (``algorithms.market_offers``: every resource, jobs across nodes), which
must then decide exactly as the cores-only path: the check that the general rules reduce
to the seed's (issue 34).

The stored reference, ``benchmarks/data/market_reference.json``, was first recorded at
630059f (before the vectorised market) and re-recorded at 66f8815 (after ``jobs_skipped``
changed meaning, before the pruned auction), with ``--first-n 6000``, and again after the
decision-timing rule of docs/market.md (wake-ups read after the decision and superseded
by the next one; ``policy.every_step`` and the ``decisions_*`` cause counts added), and
once more when ``summary.json`` named the allocator a run used (``''`` before,
``'max-bid'`` for the auctions): every ``jobs.csv`` identical, no other summary entry changed.

Workloads: (a) the demo study's job sets (``hlrs-3x9``, HLRS-like task graphs of 10 to 100
jobs at load 2, both value-curve regimes, seeds 1-2; and 25 and 50 jobs with step and
exponential curves) under every market policy (the eight of seed 002, the four look-ahead
variants) and the ``easy-mold`` baseline; (b) the 240
runs of ``scenarios/penalty_sweep.toml``; (c) a slice of HPC2N (``first_n`` jobs at 1.5x
load, the market rule, one pool of 240 cores; skipped when ``../shared/traces`` is absent)
under the same policies, plus maxVH and maxV-LH with a holding cost. ``record`` is run on
the unmodified code, ``check`` after each change: any changed byte of ``jobs.csv`` or any
changed summary entry is reported. Floats are compared bit for bit (``repr``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from market_hpc.policies.market.dispatchers import MARKET_SCHEDULERS

REPO = Path(__file__).resolve().parents[1]
HPC2N = REPO.parent / "shared" / "traces" / "HPC2N-2002-2.1-cln.swf.gz"
MARKET = MARKET_SCHEDULERS
BASELINES = ("easy-mold",)
DEMO_SIZES = (10, 25, 50, 100)
TIMING = ("seconds", "dispatch_ms", "duration", "cpu_per_decision")
REFERENCE = REPO / "benchmarks" / "data" / "market_reference.json"


def demo_cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for curves in ("spec", "steep"):
        for seed in (1, 2):
            for size in DEMO_SIZES:
                for policy in MARKET + BASELINES:
                    out.append(
                        (
                            f"demo/{curves}/s{seed}/n{size}/{policy}",
                            {
                                "name": "demo",
                                "platform": "hlrs-3x9",
                                "seed": seed,
                                "timeseries": False,
                                "workload": {
                                    "generator": "taskgraphs",
                                    "jobs": size,
                                    "load": 2.0,
                                    "curves": curves,
                                },
                                "policy": {"scheduler": policy},
                            },
                        )
                    )
    for shape in (
        "step",
        "exponential",
    ):  # the other curve kinds (step: zero-width ramp; exponential: scalar)
        for size in (25, 50):
            for policy in MARKET + BASELINES:
                out.append(
                    (
                        f"demo/{shape}/s1/n{size}/{policy}",
                        {
                            "name": "demo",
                            "platform": "hlrs-3x9",
                            "seed": 1,
                            "timeseries": False,
                            "workload": {
                                "generator": "taskgraphs",
                                "jobs": size,
                                "load": 2.0,
                                "curve_shape": shape,
                            },
                            "policy": {"scheduler": policy},
                        },
                    )
                )
    return out


def sweep_cases() -> list[tuple[str, dict[str, Any]]]:
    from market_hpc.experiment.sweep_spec import load_sweep

    sweep = load_sweep(REPO / "scenarios" / "penalty_sweep.toml")
    return [(f"sweep/{run.run_id}", run.config) for run in sweep.runs]


def hpc2n_cases(first_n: int) -> list[tuple[str, dict[str, Any]]]:
    if not HPC2N.is_file() or first_n <= 0:
        return []
    base = {
        "name": "hpc2n",
        "platform": "nodes=1,cores=240",
        "seed": 1,
        "timeseries": False,
        "workload": {"trace": str(HPC2N), "first_n": first_n, "load_factor": 1.5, "market": True},
    }
    out = [
        (f"hpc2n{first_n}/{policy}", {**base, "policy": {"scheduler": policy}})
        for policy in MARKET + BASELINES
    ]
    for policy in ("maxvh", "maxvlh"):
        out.append(
            (
                f"hpc2n{first_n}/{policy}-cost",
                {
                    **base,
                    "policy": {
                        "scheduler": policy,
                        "resume_seconds": 300.0,
                        "hold_progress_loss": 0.1,
                    },
                },
            )
        )
    return out


# Summary entries added after the reference was recorded (issue 45: every submitted job
# counted, the estimate fallback counted): new facts about the same schedule, left out of the
# digest so that a changed decision still shows and a new column does not.
ADDED_SINCE_REFERENCE = frozenset(
    {
        "mean_wait_all",
        "mean_bounded_slowdown_all",
        "completed_core_hours",
        "completed_share",
        "estimate_fallback_jobs",
        "estimate_fallback_share",
    }
)


def digest(config: dict[str, Any]) -> dict[str, Any]:
    """``jobs.csv`` digest and the untimed summary of one run."""
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate
    from market_hpc.experiment.sweep_exec import scalar_metrics

    result = simulate(config_from_dict(config))
    text = result.jobs.to_csv(index=False)
    summary = {
        key: repr(value)
        for key, value in scalar_metrics(result.summary).items()
        if not any(word in key for word in TIMING) and key not in ADDED_SINCE_REFERENCE
    }
    return compact(
        {
            "jobs": hashlib.sha256(text.encode()).hexdigest(),
            "rows": len(result.jobs),
            "summary": summary,
        }
    )


def compact(full: dict[str, Any]) -> dict[str, Any]:
    """What the reference keeps of a run: the digests and the headline entries."""
    summary = full["summary"]
    return {
        "jobs": full["jobs"][:24],
        "rows": full["rows"],
        "summary": hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()[:24],
        **{key: summary.get(key) for key in ("total_profit", "holds", "decisions", "jobs_dropped")},
    }


def collect(only: str | None, first_n: int) -> tuple[dict[str, Any], float]:
    results: dict[str, Any] = {}
    began = time.perf_counter()
    for key, config in demo_cases() + sweep_cases() + hpc2n_cases(first_n):
        if only and only not in key:
            continue
        results[key] = digest(config)
    return results, time.perf_counter() - began


def differences(results: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """One line per run whose digests or headline entries differ from the reference."""
    lines = []
    for key, got in results.items():
        want = reference.get(key, {})
        changed = {
            k: (want.get(k), got.get(k))
            for k in sorted(set(got) | set(want))
            if got.get(k) != want.get(k)
        }
        if changed:
            lines.append(
                f"{key}: changed (reference, now): {changed}" if want else f"{key}: no reference"
            )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("record", "check"))
    parser.add_argument("file", nargs="?", default=str(REFERENCE))
    parser.add_argument("--only", help="run only the cases whose key contains this")
    parser.add_argument(
        "--first-n", type=int, default=6000, help="HPC2N slice length (default: 6000; 0 skips it)"
    )
    parser.add_argument(
        "--general",
        action="store_true",
        help="decide by the auctions' general path (every resource, across nodes)",
    )
    args = parser.parse_args()
    if args.general:
        from market_hpc.policies.market import dispatchers as market

        market._cores_only = lambda *args: False  # type: ignore[assignment]
    results, seconds = collect(args.only, args.first_n)
    if args.mode == "record":
        Path(args.file).write_text(json.dumps(results, indent=0, sort_keys=True) + "\n")
        print(f"recorded {len(results)} runs in {seconds:.1f} s")
        return 0
    bad = differences(results, json.loads(Path(args.file).read_text()))
    for line in bad:
        print(line)
    print(
        "identical" if not bad else f"{len(bad)} differences",
        f"({len(results)} runs, {seconds:.1f} s)",
    )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
