"""RLScheduler's Table V protocol (``market_hpc.rl.rlscheduler``): gym's 2019 seeding and
its draw, the sequence semantics on hand-checked cases, the Table V figures on the real
traces (skipped without them), and ``examples/rlscheduler_table5.py``'s refusals."""

from __future__ import annotations

import importlib.util
import itertools
import os
from pathlib import Path

import pytest

from market_hpc.errors import ConfigError
from market_hpc.rl.rlscheduler import (
    RLTrace,
    gym_np_random,
    read_rlscheduler_trace,
    rlscheduler_starts,
    schedule_sequence,
    sequence_bsld,
)

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "traces"
HPC2N = TRACES / "HPC2N-2002-2.1-cln.swf.gz"
# RLScheduler's data/lublin_256.swf (Lublin's model, 10,000 jobs on 256 processors), gzipped
LUBLIN = Path(
    os.environ.get("MARKET_HPC_LUBLIN256", str(REPO / "tests" / "data" / "lublin_256.swf.gz"))
)


def _trace(submit: list[int], run: list[int], request: list[int], procs: list[int]) -> RLTrace:
    ids = tuple(range(1, len(submit) + 1))
    return RLTrace(ids, tuple(submit), tuple(run), tuple(request), tuple(procs), 4, 4)


def test_gym_seeding_and_the_draw() -> None:
    # gym 0.15's seeding.np_random(1): the seed hashed, a legacy RandomState.
    assert gym_np_random(1).randint(0, 2**31) == gym_np_random(1).randint(0, 2**31)
    assert gym_np_random(0).randint(0, 2**31) != gym_np_random(1).randint(0, 2**31)
    # RLScheduler's ten HPC2N (and Lublin-256) sequences: env.seed(1), batch_job_slice 10,000.
    assert rlscheduler_starts(202_876, 1024, 10, seed=1, batch_job_slice=10_000) == [
        1981,
        2756,
        4299,
        8850,
        3316,
        2714,
        5228,
        7762,
        4022,
        7085,
    ]
    assert rlscheduler_starts(10_000, 1024, 3, seed=1) == [1981, 2756, 4299]
    with pytest.raises(ConfigError, match="need a range of more than 2049 jobs; got 2000"):
        rlscheduler_starts(2000, 1024, 1)
    with pytest.raises(ConfigError, match="seed: got -1; valid: a non-negative integer"):
        gym_np_random(-1)


# Four 1-processor nodes. A (4 procs, 0-100) runs; B (4 procs, submit 1) is chosen next
# and waits; C (1 proc, submit 2, 10 s) arrives while B waits.
#   no backfilling: B starts at 100, C at 200 (it waits for B although it fits nowhere
#   earlier: B holds the whole machine until 200).
#   SJF: at t = 0 only A is queued; at 1 B arrives alone, is chosen and *sticks*: C,
#   shorter, arrives at 2 but B keeps its place (the project's sjf would start C first).
SUBMIT, RUN, REQUEST, PROCS = [0, 1, 2], [100, 100, 10], [100, 100, 10], [4, 4, 1]


def test_the_chosen_job_waits_until_it_fits() -> None:
    trace = _trace(SUBMIT, RUN, REQUEST, PROCS)
    # bsld: A 1; B (99 + 100) / 100 = 1.99; C (198 + 10) / 10 = 20.8
    assert schedule_sequence(trace, 0, 3, "sjf", False, 4, 1.0) == pytest.approx([1.0, 1.99, 20.8])
    assert schedule_sequence(trace, 0, 3, "fcfs", False, 4, 1.0) == pytest.approx([1.0, 1.99, 20.8])


def test_backfilling_only_jobs_that_end_before_the_chosen_jobs_earliest_start() -> None:
    # B needs all 4 processors: its earliest start is A's requested end, 100. With A on 3
    # processors, C (1 proc) fits; C ends (by request) at 2 + 10 < 100: backfilled at 2.
    trace = _trace(SUBMIT, RUN, REQUEST, [3, 4, 1])
    started = schedule_sequence(trace, 0, 3, "fcfs", True, 4, 1.0)
    assert started == pytest.approx([1.0, 1.0, 1.99])  # A, C, B
    # C requesting 200 s would end after 100: not backfilled, it waits for B (starts at 200).
    long_c = _trace(SUBMIT, RUN, [100, 100, 200], [3, 4, 1])
    assert schedule_sequence(long_c, 0, 3, "fcfs", True, 4, 1.0)[2] == pytest.approx(20.8)


def test_disjoint_held_out_slices() -> None:
    from market_hpc.rl.env import start_indices
    from market_hpc.rl.evaluate import disjoint_starts

    starts = disjoint_starts(202_876, 1024, 10, seed=1, span=(0.7, 1.0))
    assert starts == sorted(starts) and all(b - a >= 1024 for a, b in itertools.pairwise(starts))
    # The training episodes (256 jobs starting in (0, 0.7)) end before the first held-out job.
    assert start_indices((0.0, 0.7), 202_876, 256)[1] + 256 <= starts[0]
    assert starts[-1] + 1024 <= 202_876
    with pytest.raises(ConfigError, match="3 disjoint 1024-job slices do not fit in"):
        disjoint_starts(3000, 1024, 3, seed=0)


def test_refusals() -> None:
    trace = _trace(SUBMIT, RUN, REQUEST, PROCS)
    with pytest.raises(ConfigError, match="score: got 'lifo'; valid: fcfs, sjf, f1, wfp3, unicep"):
        schedule_sequence(trace, 0, 3, "lifo", False, 4, 1.0)
    with pytest.raises(ConfigError, match="wait: got 'x'; valid: real, rlscheduler"):
        schedule_sequence(trace, 0, 3, "wfp3", False, 1, 4.0, wait="x")
    with pytest.raises(ConfigError, match="job 1 requests 4 processors; the platform has 2"):
        schedule_sequence(trace, 0, 3, "fcfs", False, 2, 1.0)


def _table(path: Path, rows: dict[tuple[str, bool, str], float]) -> None:
    trace = read_rlscheduler_trace(str(path))
    starts = rlscheduler_starts(len(trace), 1024, 10, seed=1, batch_job_slice=10_000)
    per_node = trace.max_procs / trace.max_nodes
    for (score, backfill, wait), expected in rows.items():
        got = sum(
            sequence_bsld(trace, s, 1024, score, backfill, trace.max_nodes, per_node, wait)
            for s in starts
        ) / len(starts)
        assert round(got, 2) == expected, (score, backfill, wait)


@pytest.mark.skipif(not HPC2N.exists(), reason="the HPC2N trace is not in ../shared/traces")
def test_hpc2n_table5_rows() -> None:
    # RLScheduler's released code gives these same values on this file (checked by running
    # it with gym's seeding reproduced); the published figures (297.18, 157.71, 118.01;
    # 127.38, 122.04, 71.95) come from its own copy of the trace, which differs slightly.
    _table(
        HPC2N,
        {
            ("fcfs", False, "real"): 296.29,
            ("sjf", False, "real"): 157.67,
            ("f1", False, "real"): 118.30,
            ("fcfs", True, "real"): 126.90,
            ("sjf", True, "real"): 121.80,
            ("f1", True, "real"): 71.95,
            ("unicep", True, "rlscheduler"): 174.49,
        },
    )
    published = {"fcfs": (296.29, 297.18), "sjf": (157.67, 157.71), "f1": (118.30, 118.01)}
    assert all(abs(ours - paper) / paper < 0.005 for ours, paper in published.values())


@pytest.mark.skipif(
    not LUBLIN.exists(),
    reason="Lublin-256 (RLScheduler's data/lublin_256.swf) "
    "is not available; set MARKET_HPC_LUBLIN256",
)
def test_lublin256_table5_rows_equal_the_published_figures() -> None:
    _table(
        LUBLIN,
        {
            ("fcfs", False, "real"): 7273.77,
            ("sjf", False, "real"): 277.35,
            ("f1", False, "real"): 258.37,
            ("fcfs", True, "real"): 235.82,
            ("sjf", True, "real"): 73.31,
            ("f1", True, "real"): 75.07,
            ("unicep", False, "rlscheduler"): 22274.74,
            ("unicep", True, "rlscheduler"): 307.23,
        },
    )


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "rlscheduler_table5", REPO / "examples" / "rlscheduler_table5.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _swf(path: Path, jobs: int, widest: int) -> Path:
    lines = ["; MaxNodes: 8", "; MaxProcs: 8"]
    for i in range(1, jobs + 1):
        procs = widest if i == 7 else 1 + i % 4
        run = 50 + i % 7 * 20
        lines.append(f"{i} {i * 30} 0 {run} {procs} -1 -1 {procs} 200 -1 1 1 1 1 1 1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_script_refuses_a_narrow_platform_naming_the_job(  # type: ignore[no-untyped-def]
    tmp_path, capsys
) -> None:
    trace = _swf(tmp_path / "t.swf", 60, widest=6)
    code = _script().main(
        ["--trace", str(trace), "--platform", "nodes=4,cores=1", "--jobs", "8", "--sequences", "2"]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        (
            "rlscheduler_table5: error: --platform nodes=4,cores=1: 4x[node: cores=1]: "
            "job 7 of t.swf requests 6 processors, the platform has 4; valid: a platform of at "
            "least 6 cores"
        )
    ]


def test_script_runs_both_semantics_on_any_trace(  # type: ignore[no-untyped-def]
    tmp_path, capsys
) -> None:
    trace = _swf(tmp_path / "t.swf", 60, widest=6)
    out = tmp_path / "rows.csv"
    code = _script().main(
        ["--trace", str(trace), "--jobs", "8", "--sequences", "3", "--out", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "machine 8 x 1; rlscheduler draw, sequences start at" in printed
    rows = out.read_text().splitlines()
    assert rows[0] == "semantics,policy,start,bsld"
    # 3 sequences x (10 project + 10 rlscheduler + 4 with RLScheduler's wait reading)
    assert len(rows) == 1 + 3 * 24
