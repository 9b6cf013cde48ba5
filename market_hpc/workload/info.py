"""Summaries of a workload: counts, ranges, estimate accuracy and anomalies.

Backs ``market-hpc trace info TRACE``. :func:`trace_info` returns plain data (JSON
serialisable); :func:`format_trace_info` renders it as a text block.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.workload.swf import Workload

_DAY = 86400.0


def trace_info(workload: Workload) -> dict[str, Any]:
    """Summarise a workload.

    Keys: ``source``, ``lines``, ``job_lines``, ``header_lines``, ``jobs``,
    ``skipped``, ``anomalies`` (kind -> count), ``anomaly_examples`` (kind -> line
    numbers), ``submit_first``, ``submit_last``, ``span_seconds`` (last submit minus
    first), ``span_days``, ``procs`` / ``run_time`` / ``estimate`` (min, median, mean,
    max), ``area_core_hours`` (sum of processors x run time), ``accuracy`` (run time /
    estimate over jobs with a positive estimate: mean, median, share of exact estimates),
    ``run_exceeds_estimate`` (jobs whose run time exceeds their estimate),
    ``estimate_fallback_jobs`` / ``estimate_fallback_share`` (kept jobs without a
    wall-time request, field 9 ``-1`` or 0, whose estimate is their run time, and their
    share of the kept jobs), ``users`` (distinct known user ids), ``queues`` (sorted
    distinct queue ids, -1 = unknown). ``market-hpc trace info`` adds ``gpu_request_jobs``
    for a trace whose Slurm side file records GPU requests.

    Args:
        workload: A workload from :func:`read_swf`.

    Returns:
        The summary as plain ``int`` / ``float`` / ``str`` / ``list`` / ``dict`` values.
    """
    jobs = workload.jobs
    report = workload.report
    info: dict[str, Any] = {
        "source": workload.source,
        "lines": report.lines,
        "job_lines": report.job_lines,
        "header_lines": len(workload.header),
        "jobs": len(jobs),
        "skipped": report.skipped,
        "anomalies": dict(report.anomalies),
        "anomaly_examples": {kind: list(lines) for kind, lines in report.examples.items()},
        "estimate_fallback_jobs": report.estimate_fallback_jobs,
        "estimate_fallback_share": report.estimate_fallback_share,
    }
    if not jobs:
        return info
    submit = np.fromiter((job.submit for job in jobs), float, len(jobs))
    run = np.fromiter((job.run_time for job in jobs), float, len(jobs))
    estimate = np.fromiter((job.estimate for job in jobs), float, len(jobs))
    procs = np.fromiter((job.cores for job in jobs), np.int64, len(jobs))
    users = {job.user for job in jobs if job.user >= 0}
    queues = sorted({job.queue for job in jobs})
    positive = estimate > 0
    accuracy = run[positive] / estimate[positive]
    info.update(
        submit_first=float(submit.min()),
        submit_last=float(submit.max()),
        span_seconds=float(submit.max() - submit.min()),
        span_days=float((submit.max() - submit.min()) / _DAY),
        procs=_stats(procs),
        run_time=_stats(run),
        estimate=_stats(estimate),
        area_core_hours=float((procs * run).sum() / 3600.0),
        accuracy={
            "jobs": int(positive.sum()),
            "mean": float(accuracy.mean()) if accuracy.size else None,
            "median": float(np.median(accuracy)) if accuracy.size else None,
            "exact_share": float((accuracy == 1.0).mean()) if accuracy.size else None,
        },
        run_exceeds_estimate=int((run > estimate).sum()),
        users=len(users),
        queues=queues,
    )
    return info


def jobs_fingerprint(jobs: Iterable[Job]) -> str:
    """The first 16 hex digits of the SHA-256 of every job's id, submit, run time, estimate,
    units, user and queue, in order: two readings of a trace give the same jobs when their
    fingerprints agree (``benchmarks/swf_read_speed.py``, ``tests/test_swf_partial.py``).

    >>> jobs_fingerprint([Job(1, 0.0, 10.0, 20.0)])
    '908ddb4019d650bd'
    """
    digest = hashlib.sha256()
    for job in jobs:
        digest.update(
            repr(
                (job.job_id, job.submit, job.run_time, job.estimate, job.units, job.user, job.queue)
            ).encode()
        )
    return digest.hexdigest()[:16]


def _stats(values: np.ndarray) -> dict[str, float]:
    """Min, median, mean and max as floats.

    >>> _stats(np.array([1, 2, 3, 10]))
    {'min': 1.0, 'median': 2.5, 'mean': 4.0, 'max': 10.0}
    """
    return {
        "min": float(values.min()),
        "median": float(np.median(values)),
        "mean": float(values.mean()),
        "max": float(values.max()),
    }


def format_trace_info(info: dict[str, Any]) -> str:
    """Render :func:`trace_info` output as an aligned text block.

    >>> print(format_trace_info({"source": "t.swf", "lines": 3, "job_lines": 1,
    ...     "header_lines": 2, "jobs": 0, "skipped": 1, "anomalies": {"unknown_size": 1},
    ...     "anomaly_examples": {"unknown_size": [3]}}))
    trace            t.swf
    lines            3 (2 header, 1 job lines)
    jobs kept        0 (1 skipped)
    skipped          unknown_size: 1 (e.g. lines 3)
    """
    rows: list[tuple[str, str]] = [
        ("trace", str(info["source"])),
        (
            "lines",
            (
                f"{info['lines']:,} ({info['header_lines']:,} header, "
                f"{info['job_lines']:,} job lines)"
            ),
        ),
        ("jobs kept", f"{info['jobs']:,} ({info['skipped']:,} skipped)"),
    ]
    if "procs" in info:
        rows += [
            (
                "submit range",
                (
                    f"{info['submit_first']:,.0f} .. {info['submit_last']:,.0f} s "
                    f"({info['span_days']:,.1f} days)"
                ),
            ),
            ("processors", _format_stats(info["procs"], "{:,.0f}")),
            ("run time [s]", _format_stats(info["run_time"], "{:,.0f}")),
            ("estimate [s]", _format_stats(info["estimate"], "{:,.0f}")),
            ("work", f"{info['area_core_hours']:,.0f} core-hours"),
        ]
        accuracy = info["accuracy"]
        if accuracy["jobs"]:
            rows.append(
                (
                    "accuracy",
                    (
                        f"run/estimate mean {accuracy['mean']:.3f}, median "
                        f"{accuracy['median']:.3f}, "
                        f"exact {accuracy['exact_share']:.1%} (of {accuracy['jobs']:,} jobs)"
                    ),
                )
            )
        rows += [
            ("run > estimate", f"{info['run_exceeds_estimate']:,} jobs"),
            (
                "no time request",
                (
                    f"{info['estimate_fallback_jobs']:,} jobs "
                    f"({info['estimate_fallback_share']:.1%}): estimate = run time"
                ),
            ),
            ("users", f"{info['users']:,}"),
            ("queues", _format_queues(info["queues"])),
        ]
    if info.get("gpu_request_jobs"):
        rows.append(
            ("GPU requests", f"{info['gpu_request_jobs']:,} jobs (from the Slurm side file)")
        )
    if info["anomalies"]:
        for kind, count in sorted(info["anomalies"].items()):
            lines = ", ".join(str(n) for n in info["anomaly_examples"].get(kind, []))
            rows.append(("skipped", f"{kind}: {count:,} (e.g. lines {lines})"))
    else:
        rows.append(("anomalies", "none"))
    width = max(len(label) for label, _ in rows) + 2
    width = max(width, 17)
    return "\n".join(f"{label:<{width}}{text}" for label, text in rows)


def _format_stats(stats: dict[str, float], number: str) -> str:
    keys = ("min", "median", "mean", "max")
    return ", ".join(f"{key} {number.format(stats[key])}" for key in keys)


def _format_queues(queues: list[int]) -> str:
    """List queue ids, abbreviated when there are many.

    >>> _format_queues([-1])
    '1 (unknown)'
    >>> _format_queues(list(range(12)))
    '12 (0, 1, 2, 3, 4, 5, 6, 7, ...)'
    """
    if queues == [-1]:
        return "1 (unknown)"
    shown = ", ".join(str(q) for q in queues[:8]) + (", ..." if len(queues) > 8 else "")
    return f"{len(queues)} ({shown})"
