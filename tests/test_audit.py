"""``market-hpc audit``: hand-made run folders, one per kind of violation, each failing
with its pinned message; real runs (a market run with holds, a KTH EASY replay) pass, and
a market run's profit is recomputed from its files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from conftest import real_trace

from market_hpc.cli import main
from market_hpc.core.recorder import SEGMENT_COLUMNS
from market_hpc.experiment.audit import audit_run, node_placements
from market_hpc.experiment.config import config_from_dict, load_scenario
from market_hpc.experiment.run import simulate

ROOT = Path(__file__).resolve().parent.parent

# Two nodes of 4 cores and 1 GPU, a 100 GB burst buffer. Job 1 is held at t=10 and
# resumes on node 1; jobs 2 and 3 run once.
JOBS = [
    # job_id, submit, start, end, status
    (1, 0.0, 0.0, 30.0, "finished"),
    (2, 5.0, 5.0, 15.0, "finished"),
    (3, 0.0, 0.0, 10.0, "finished"),
]
SEGMENTS = [
    # job_id, segment, start, end, nodes, units, cores, gpus, mics, mem, bb, before, after, ended
    (1, 1, 0.0, 10.0, "0:2", 2, 2, 0, 0, 0, 0.0, 0.0, 0.5, "held"),
    (1, 2, 20.0, 30.0, "1:2", 2, 2, 0, 0, 0, 0.0, 0.5, 1.0, "finished"),
    (2, 1, 5.0, 15.0, "0:2", 2, 2, 0, 0, 0, 0.0, 0.0, 1.0, "finished"),
    (3, 1, 0.0, 10.0, "1:1", 1, 2, 1, 0, 0, 60.0, 0.0, 1.0, "finished"),
]


def write_run(directory: Path, jobs: list[tuple], segments: list[tuple]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "config": {
            "platform": "nodes=2,cores=4,gpus=1",
            "exclusive": False,
            "workload": {"burst_buffer": {"capacity_gb": 100.0}},
        },
        "workload": {},
    }
    (directory / "config.json").write_text(json.dumps(config))
    pd.DataFrame(
        jobs, columns=["job_id", "submit_time", "start_time", "end_time", "status"]
    ).to_csv(directory / "jobs.csv", index=False)
    pd.DataFrame(segments, columns=list(SEGMENT_COLUMNS)).to_csv(
        directory / "segments.csv", index=False
    )
    return directory


def changed(rows: list[tuple], index: int, **values: object) -> list[tuple]:
    row = dict(zip(SEGMENT_COLUMNS, rows[index]))
    row.update(values)
    return [*rows[:index], tuple(row[name] for name in SEGMENT_COLUMNS), *rows[index + 1 :]]


def test_hand_made_run_passes(tmp_path: Path) -> None:
    report = audit_run(write_run(tmp_path, JOBS, SEGMENTS))
    assert report.ok, report.violation
    assert (report.jobs, report.segments) == (3, 4)


VIOLATIONS = {
    "node over-allocation": (
        JOBS,
        changed(SEGMENTS, 2, nodes="0:3", units=3, cores=3),
        "node 0 over-allocated at t=5: cores 5 in use of capacity 4 (jobs 1, 2)",
    ),
    "GPU over-allocation": (
        [*JOBS, (4, 2.0, 2.0, 8.0, "finished")],
        [*SEGMENTS, (4, 1, 2.0, 8.0, "1:1", 1, 1, 1, 0, 0, 0.0, 0.0, 1.0, "finished")],
        "node 1 over-allocated at t=2: gpus 2 in use of capacity 1 (jobs 3, 4)",
    ),
    "burst-buffer over-allocation": (
        [*JOBS, (5, 3.0, 3.0, 9.0, "finished")],
        [*SEGMENTS, (5, 1, 3.0, 9.0, "1:1", 1, 1, 0, 0, 0, 50.0, 0.0, 1.0, "finished")],
        "burst buffer over-allocated at t=3: 110 GB in use of 100 GB (jobs 3, 5)",
    ),
    "start before submit": (
        [JOBS[0], (2, 6.0, 5.0, 15.0, "finished"), JOBS[2]],
        SEGMENTS,
        "job 2 segment 1 starts at t=5 before its submit at t=6",
    ),
    "job listed twice": (
        [*JOBS, JOBS[1]],
        SEGMENTS,
        "job 2 is listed 2 times in jobs.csv: it must end once",
    ),
    "job finishing twice": (
        JOBS,
        changed(SEGMENTS, 0, ended="finished"),
        "job 1 ends twice: segment 1 ended 'finished' and segment 2 follows",
    ),
    "overlapping segments": (
        JOBS,
        changed(SEGMENTS, 1, start=8.0),
        "job 1 segment 2 starts at t=8 before segment 1 ends at t=10: its segments overlap",
    ),
    "lost work across a hold": (
        JOBS,
        changed(SEGMENTS, 1, progress_before=0.3),
        (
            "job 1 segment 2 starts at progress 0.3 but segment 1 ended at progress 0.5: "
            "work not conserved across the hold"
        ),
    ),
    "job never ending": (
        [*JOBS[:2], (3, 0.0, 0.0, 10.0, "queued")],
        SEGMENTS,
        "job 3 has status 'queued': it never ended",
    ),
    "finished short of its work": (
        JOBS,
        changed(SEGMENTS, 2, progress_after=0.9),
        "job 2 finished at progress 0.9, not 1",
    ),
}


@pytest.mark.parametrize("kind", list(VIOLATIONS))
def test_each_violation_is_named(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs, segments, message = VIOLATIONS[kind]
    run_dir = write_run(tmp_path / "run", jobs, segments)
    report = audit_run(run_dir)
    assert report.violation == message
    assert main(["audit", str(run_dir)]) == 1
    assert f"FAILED: {message}" in capsys.readouterr().out


def test_node_placements() -> None:
    rows, nodes, units = node_placements(["0:2;5:1", None, "3:4"])
    assert (rows.tolist(), nodes.tolist(), units.tolist()) == ([0, 0, 2], [0, 5, 3], [2, 1, 4])


def test_market_run_with_holds(tmp_path: Path) -> None:
    """maxVH holds jobs: the segments show it, the audit passes, and the profit (with hold
    penalties) is recomputed from market_jobs.csv."""
    config = load_scenario(ROOT / "scenarios" / "market_taskgraphs.toml")
    config = replace(config, policy=replace(config.policy, hold_penalty=0.1))
    run_dir = simulate(config).write(tmp_path / "run")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["holds"] > 0
    segments = pd.read_csv(run_dir / "segments.csv")
    assert (segments["ended"] == "held").sum() == summary["holds"]
    assert segments.groupby("job_id")["segment"].max().max() > 1
    pd.testing.assert_frame_equal(
        pd.read_parquet(run_dir / "segments.parquet"), segments, check_dtype=False
    )
    report = audit_run(run_dir)
    assert report.ok, report.violation

    market = pd.read_csv(run_dir / "market_jobs.csv")
    jobs = pd.read_csv(run_dir / "jobs.csv")
    assert len(market) == len(jobs)
    assert market["hold_count"].sum() == summary["holds"]
    recomputed = market["value"].sum() - market["hold_penalty_charged"].sum()
    assert recomputed == pytest.approx(summary["total_profit"], rel=1e-12)
    assert market["hold_penalty_charged"].sum() == pytest.approx(summary["penalties"], rel=1e-12)
    assert market["profile"].str.count(";").min() >= 1  # run time per core count


@pytest.mark.traces
def test_kth_easy_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(real_trace("KTH-SP2-1996-2.1-cln.swf.gz"))
    out = tmp_path / "kth"
    assert (
        main(
            [
                "replay",
                trace,
                "--platform",
                "kth-sp2",
                "--scheduler",
                "easy",
                "--first-n",
                "3000",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert main(["audit", str(out)]) == 0
    assert ": ok (" in capsys.readouterr().out
    segments = pd.read_csv(out / "segments.csv")
    jobs = pd.read_csv(out / "jobs.csv")
    finished = jobs[jobs["status"] == "finished"]
    assert len(segments) == len(finished) and (segments["ended"] == "finished").all()
    merged = finished.merge(segments, on="job_id")
    assert (merged["nodes_x"] == merged["nodes_y"]).all()


def test_streamed_segments_in_chunks(tmp_path: Path) -> None:
    """A run's segments written a few rows at a time read back as the whole frame."""
    from market_hpc.experiment.streaming import StreamedResult, simulate_streaming
    from tests.test_streaming_replay import synthetic_trace

    trace = synthetic_trace(tmp_path / "s.swf")
    config = config_from_dict(
        {
            "name": "s",
            "platform": "nodes=4,cores=4",
            "workload": {"trace": str(trace)},
            "policy": {"scheduler": "easy"},
        }
    )
    streamed = simulate_streaming(config)
    assert isinstance(streamed, StreamedResult)
    streamed.chunk_rows = 7
    run_dir = streamed.write(tmp_path / "run")
    whole = simulate(config)
    assert whole.segments is not None
    pd.testing.assert_frame_equal(
        pd.read_parquet(run_dir / "segments.parquet"), whole.segments, check_dtype=False
    )
    assert audit_run(run_dir).ok


def test_gantt_draws_each_segment(tmp_path: Path) -> None:
    """A held job is drawn as its segments, on their own allocations: nothing during the hold."""
    from market_hpc.experiment.gantt import core_allocations, gantt_rectangles
    from market_hpc.experiment.run_page import execution_pieces, write_run_page

    config = load_scenario(ROOT / "scenarios" / "market_taskgraphs.toml")
    run_dir = simulate(config).write(tmp_path / "run")
    jobs = pd.read_csv(run_dir / "jobs.csv")
    started = jobs[jobs["start_time"].notna()]
    pieces = execution_pieces(run_dir, started)
    segments = pd.read_csv(run_dir / "segments.csv")
    assert len(pieces) == len(segments)
    held = segments.loc[segments["ended"] == "held"].iloc[0]
    resumed = segments[
        (segments["job_id"] == held["job_id"]) & (segments["segment"] == held["segment"] + 1)
    ].iloc[0]
    rects = gantt_rectangles(
        pieces["job_id"].tolist(),
        pieces["start_time"].tolist(),
        pieces["end_time"].tolist(),
        core_allocations(
            pieces["nodes"].tolist(), pieces["cores"].tolist(), pieces["units"].tolist()
        ),
        [9, 9, 9],
    )
    mine = rects.job == held["job_id"]
    assert mine.sum() >= 2
    during_hold = (rects.start[mine] < resumed["start"]) & (rects.end[mine] > held["end"])
    assert not during_hold.any()
    _, notes = write_run_page(run_dir)
    assert any("a hold is a gap" in note for note in notes)


def test_sweep_audits_each_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sweep --audit``: a run that passes stays ok; a
    violation marks it failed with the message."""
    from market_hpc.experiment import audit as audit_module
    from market_hpc.experiment.sweep_exec import RunTask, execute_run
    from market_hpc.experiment.sweep_spec import load_sweep

    first = load_sweep(ROOT / "scenarios" / "penalty_sweep.toml").runs[0]
    row = execute_run(RunTask(first.run_id, first.config, str(tmp_path), audit=True))
    assert row["status"] == "ok", row["error"]
    assert audit_run(tmp_path / first.run_id).ok

    def failing(run_dir: Path) -> audit_module.AuditReport:
        return audit_module.AuditReport(Path(run_dir), 1, 1, "job 1 ends twice", 0.0)

    monkeypatch.setattr(audit_module, "audit_run", failing)
    row = execute_run(RunTask(first.run_id, first.config, audit=True))
    assert row["status"] == "failed"
    assert row["error"] == "AuditError: audit failed: job 1 ends twice"


def test_market_run_with_holding_costs(tmp_path: Path) -> None:
    """With a share of a held segment's work lost and a resume cost, the progress chain
    still holds (progress_after is recorded after the loss) and the profit recomputes."""
    config = load_scenario(ROOT / "scenarios" / "market_taskgraphs.toml")
    config = replace(
        config,
        policy=replace(
            config.policy, hold_penalty=0.05, hold_progress_loss=0.5, resume_seconds=5.0
        ),
    )
    run_dir = simulate(config).write(tmp_path / "run")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["holds"] > 0
    report = audit_run(run_dir)
    assert report.ok, report.violation
    market = pd.read_csv(run_dir / "market_jobs.csv")
    recomputed = market["value"].sum() - market["hold_penalty_charged"].sum()
    assert recomputed == pytest.approx(summary["total_profit"], rel=1e-12)


# ------------------------------------------------------------------ unreadable folders: exit 2


def unreadable(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``market-hpc audit`` prints for a folder it cannot read (exit 2)."""
    capsys.readouterr()
    assert main(["audit", str(run_dir)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("market-hpc: error: "), captured.err
    return lines[0].removeprefix("market-hpc: error: ").replace(str(run_dir), "RUN")


CONFIGS = {
    "empty": (b"", "RUN/config.json: line 1: not JSON: Expecting value (column 1)"),
    "not JSON": (
        b"{'config': 1}",
        (
            "RUN/config.json: line 1: not JSON: Expecting property name "
            "enclosed in double quotes (column 2)"
        ),
    ),
    "binary": (b"\xff\xfe\x00", "RUN/config.json: not UTF-8 text"),
    "a list": (
        b"[1, 2]",
        (
            'RUN/config.json: not a JSON object (got list); valid: {"config": {...}} '
            "as market-hpc run writes it"
        ),
    ),
    "no config": (b"{}", "RUN/config.json: key 'config': missing; valid: an object"),
    "config not an object": (
        b'{"config": 3}',
        "RUN/config.json: key 'config': got 3; valid: an object",
    ),
    "no platform": (
        b'{"config": {}}',
        (
            "RUN/config.json: key 'config.platform': missing; valid: "
            "a preset (PRESETS), nodes=N,cores=C[,...] or FILE.toml"
        ),
    ),
    "platform a number": (
        b'{"config": {"platform": 7}}',
        (
            "RUN/config.json: key 'config.platform': "
            "got 7; valid: a preset (PRESETS), nodes=N,cores=C[,...] or FILE.toml"
        ),
    ),
    "unknown platform": (
        b'{"config": {"platform": "moon"}}',
        (
            "RUN/config.json: key "
            "'config.platform': unknown platform preset 'moon'; valid choices: FILE.toml, "
            "PRESETS_SORTED, nodes=N,cores=C[,...]"
        ),
    ),
    "exclusive text": (
        b'{"config": {"platform": "nodes=2,cores=4", "exclusive": "yes"}}',
        "RUN/config.json: key 'config.exclusive': got 'yes'; valid: true, false",
    ),
    "NaN pool": (
        (
            b'{"config": {"platform": "nodes=2,cores=4"}, "workload": {"burst_buffer": '
            b'{"capacity_gb": NaN}}}'
        ),
        (
            "RUN/config.json: key 'workload.burst_buffer.capacity_gb': "
            "got nan; valid: a finite number >= 0 (GB) or null"
        ),
    ),
}


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_a_bad_config_json_is_named(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from market_hpc.domain.platform import PRESETS

    run_dir = write_run(tmp_path / "run", JOBS, SEGMENTS)
    text, message = CONFIGS[kind]
    (run_dir / "config.json").write_bytes(text)
    expected = message.replace("PRESETS_SORTED", ", ".join(sorted(PRESETS))).replace(
        "PRESETS", ", ".join(PRESETS)
    )
    assert unreadable(run_dir, capsys) == expected


def rewrite(
    run_dir: Path,
    name: str,
    edit: dict[tuple[int, str], str] | None = None,
    drop: str | None = None,
) -> Path:
    """Rewrite ``name`` (a CSV file of ``run_dir``), cells replaced as text or a column dropped."""
    frame = pd.read_csv(run_dir / name, dtype=str, keep_default_na=False)
    for (row, column), value in (edit or {}).items():
        frame.loc[row, column] = value
    if drop is not None:
        frame = frame.drop(columns=[drop])
    frame.to_csv(run_dir / name, index=False)
    return run_dir


SEGMENT_HEADER = ",".join(SEGMENT_COLUMNS)
NODES_VALID = "node:units pairs joined by ';' (e.g. 0:2;5:1), units >= 1, numbers below 2^31"
CELLS = {
    # file, row, column, text written, message (line 2 is the first data row)
    "NaN submit": (
        "jobs.csv",
        1,
        "submit_time",
        "NaN",
        "RUN/jobs.csv: line 3, column 'submit_time': got nan; valid: a finite time",
    ),
    "text in a number column": (
        "jobs.csv",
        0,
        "start_time",
        "soon",
        (
            "RUN/jobs.csv: line 2, column 'start_time': got 'soon'; valid: a number "
            "(NaN and inf allowed by the type)"
        ),
    ),
    "inf end of a finished job": (
        "jobs.csv",
        2,
        "end_time",
        "inf",
        (
            "RUN/jobs.csv: line 4, column 'end_time': got inf; valid: a finite time, "
            "empty only for a job that did not finish"
        ),
    ),
    "fractional job id": (
        "jobs.csv",
        0,
        "job_id",
        "1.5",
        "RUN/jobs.csv: line 2, column 'job_id': got '1.5'; valid: a whole number",
    ),
    "unknown status": (
        "jobs.csv",
        0,
        "status",
        "done",
        (
            "RUN/jobs.csv: line 2, column 'status': got 'done'; valid: one of finished, dropped, "
            "rejected, queued, running, held, skipped"
        ),
    ),
    "NaN progress of a finished job": (
        "segments.csv",
        2,
        "progress_after",
        "nan",
        "RUN/segments.csv: line 4, column 'progress_after': got nan; valid: a finite number >= 0",
    ),
    "negative burst buffer": (
        "segments.csv",
        3,
        "bb",
        "-5",
        "RUN/segments.csv: line 5, column 'bb': got -5.0; valid: a finite number >= 0",
    ),
    "NaN burst buffer": (
        "segments.csv",
        3,
        "bb",
        "NaN",
        "RUN/segments.csv: line 5, column 'bb': got nan; valid: a finite number >= 0",
    ),
    "zero units": (
        "segments.csv",
        0,
        "units",
        "0",
        "RUN/segments.csv: line 2, column 'units': got 0; valid: a whole number from 1 to 2^53",
    ),
    "unknown ending": (
        "segments.csv",
        0,
        "ended",
        "paused",
        (
            "RUN/segments.csv: line 2, column 'ended': got 'paused'; valid: one of finished, held, "
            "dropped"
        ),
    ),
    "empty segment number": (
        "segments.csv",
        1,
        "segment",
        "",
        "RUN/segments.csv: line 3, column 'segment': empty; valid: a whole number",
    ),
    "nodes garbage": (
        "segments.csv",
        0,
        "nodes",
        "garbage",
        f"RUN/segments.csv: line 2, column 'nodes': got 'garbage'; valid: {NODES_VALID}",
    ),
    "nodes 1e3:1": (
        "segments.csv",
        0,
        "nodes",
        "1e3:1",
        f"RUN/segments.csv: line 2, column 'nodes': got '1e3:1'; valid: {NODES_VALID}",
    ),
    "nodes 0:1;": (
        "segments.csv",
        1,
        "nodes",
        "1:2;",
        f"RUN/segments.csv: line 3, column 'nodes': got '1:2;'; valid: {NODES_VALID}",
    ),
    "nodes 0:1:2": (
        "segments.csv",
        2,
        "nodes",
        "0:1:2",
        f"RUN/segments.csv: line 4, column 'nodes': got '0:1:2'; valid: {NODES_VALID}",
    ),
    "nodes with zero units": (
        "segments.csv",
        2,
        "nodes",
        "0:0",
        f"RUN/segments.csv: line 4, column 'nodes': got '0:0'; valid: {NODES_VALID}",
    ),
    "nodes with negative units": (
        "segments.csv",
        2,
        "nodes",
        "0:-2",
        f"RUN/segments.csv: line 4, column 'nodes': got '0:-2'; valid: {NODES_VALID}",
    ),
}


@pytest.mark.parametrize("kind", list(CELLS))
def test_a_value_out_of_its_domain_is_named(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name, row, column, text, message = CELLS[kind]
    run_dir = rewrite(write_run(tmp_path / "run", JOBS, SEGMENTS), name, {(row, column): text})
    assert unreadable(run_dir, capsys) == message


FILES = {
    "jobs.csv empty": (
        "jobs.csv",
        b"",
        "RUN/jobs.csv: line 1: empty; valid: a header naming the columns",
    ),
    "jobs.csv binary": (
        "jobs.csv",
        b"\x89PNG\r\n\x1a\n\x00\xff",
        "RUN/jobs.csv: line 1 (header): not UTF-8 text",
    ),
    "segments.csv missing": (
        "segments.csv",
        None,
        ("RUN/segments.csv: no such file (a run folder has it: market-hpc run/replay --out)"),
    ),
    "a row short of fields": (
        "segments.csv",
        f"{SEGMENT_HEADER}\n1,1,0.0,10.0,0:2\n".encode(),
        (
            "RUN/segments.csv: line 2, column 'units': 5 fields where the header has 14; "
            "valid: one value per column"
        ),
    ),
    "a binary cell": (
        "segments.csv",
        f"{SEGMENT_HEADER}\n1,1,0.0,10.0,0:2,2,2,0,0,0,0.0,0.0,0.5,".encode() + b"\xff\xfe\n",
        "RUN/segments.csv: line 2, column 'ended': not UTF-8 text (got b'\\xff\\xfe')",
    ),
    "jobs.parquet empty": (
        "jobs.parquet",
        b"",
        (
            "RUN/jobs.parquet: not readable as Parquet: Could not open "
            "Parquet input source 'RUN/jobs.parquet': Parquet file size is 0 bytes"
        ),
    ),
    "jobs.parquet corrupt": (
        "jobs.parquet",
        b"PAR1 not really PAR1",
        (
            "RUN/jobs.parquet: not readable as "
            "Parquet: Could not open Parquet input source 'RUN/jobs.parquet': Parquet file "
            "size is 20 bytes, smaller than the size reported by footer's (544828524bytes)"
        ),
    ),
}


@pytest.mark.parametrize("kind", list(FILES))
def test_an_unreadable_file_is_named(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name, data, message = FILES[kind]
    run_dir = write_run(tmp_path / "run", JOBS, SEGMENTS)
    if data is None:
        (run_dir / name).unlink()
    else:
        (run_dir / name).write_bytes(data)
    assert unreadable(run_dir, capsys) == message


def test_a_missing_column_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = rewrite(write_run(tmp_path / "run", JOBS, SEGMENTS), "jobs.csv", drop="end_time")
    assert unreadable(run_dir, capsys) == (
        "RUN/jobs.csv: line 1 (header) lacks column(s) end_time; valid: a header with at least "
        "job_id, submit_time, start_time, end_time, status"
    )


def test_not_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert unreadable(tmp_path / "nowhere", capsys) == (
        "RUN: not a folder; valid: a run folder (market-hpc run/replay --out DIR)"
    )


# ------------------------------------------------------------------ what a reviewer reads: exit 1


@pytest.fixture(scope="module")
def market_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real market run with holds (jobs and segments in CSV and Parquet)."""
    config = load_scenario(ROOT / "scenarios" / "market_taskgraphs.toml")
    config = replace(config, policy=replace(config.policy, hold_penalty=0.1))
    return simulate(config).write(tmp_path_factory.mktemp("market") / "run")


def copy_of(run_dir: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(run_dir, tmp_path / "run"))


def failed(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["audit", str(run_dir)]) == 1
    out = capsys.readouterr().out
    return out.split("FAILED: ", 1)[1].rsplit(" (", 1)[0]


def test_a_hand_edited_jobs_csv_is_read(
    market_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """jobs.csv, not its Parquet twin, is audited: an edit shows as a violation, and alone
    (the CSV still self-consistent) as a disagreement with jobs.parquet."""
    run_dir = rewrite(copy_of(market_run, tmp_path), "jobs.csv", {(2, "submit_time"): "5.0"})
    assert failed(run_dir, capsys) == "job 3 segment 1 starts at t=0 before its submit at t=5"
    run_dir = rewrite(run_dir, "jobs.csv", {(2, "submit_time"): "0.0", (2, "value"): "1000.5"})
    assert failed(run_dir, capsys) == (
        "jobs.parquet disagrees with jobs.csv at line 4 (job 3), column 'value': 1000.5 in "
        "jobs.csv, "
        "982.1 in jobs.parquet"
    )


def test_parquet_twins_with_other_rows_or_columns(
    market_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = copy_of(market_run, tmp_path)
    segments = pd.read_parquet(run_dir / "segments.parquet")
    segments.iloc[:-1].to_parquet(run_dir / "segments.parquet", index=False)
    assert failed(run_dir, capsys) == "segments.parquet has 38 rows, segments.csv 39: they disagree"
    segments.rename(columns={"bb": "burst"}).to_parquet(run_dir / "segments.parquet", index=False)
    assert failed(run_dir, capsys) == (
        "segments.parquet disagrees with segments.csv: columns only in segments.csv: bb; only in "
        "segments.parquet: burst"
    )
    segments.assign(nodes=segments["nodes"].str.replace("1:", "2:")).to_parquet(
        run_dir / "segments.parquet", index=False
    )
    message = failed(run_dir, capsys)
    assert message.startswith("segments.parquet disagrees with segments.csv at line ") and (
        ", column 'nodes': '1:" in message
    ), message


def test_a_real_run_passes_and_counts(market_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["audit", str(market_run)]) == 0
    assert capsys.readouterr().out.startswith(f"audit {market_run}: 30 jobs, 39 segments: ok (")


RELATIONS = {
    # the files edited (cells as text) and the violation named
    "wait not start less submit": (
        {"jobs.csv": {(1, "wait_time"): "3.0"}},
        "job 2 waits 3 s in jobs.csv but was submitted at t=0 and started at t=0",
    ),
    "run time not the segments' lengths": (
        {"jobs.csv": {(0, "run_time"): "36.0"}},
        "job 1 runs 36 s in jobs.csv but its segments last 35 s",
    ),
    "jobs.csv nodes not the last segment's": (
        {"jobs.csv": {(0, "nodes"): "2:4"}},
        "job 1 ran on '2:4' in jobs.csv but its last segment on '1:4'",
    ),
    "nodes giving other units": (
        {"jobs.csv": {(0, "nodes"): "1:3"}, "segments.csv": {(0, "nodes"): "1:3"}},
        "job 1 segment 1 holds 4 units but its nodes '1:3' give 3",
    ),
    "a negative node": (
        {"jobs.csv": {(0, "nodes"): "-1:4"}, "segments.csv": {(0, "nodes"): "-1:4"}},
        "job 1 runs on node -1, not one of 0..2",
    ),
    "amounts not whole per unit": (
        {"segments.csv": {(0, "cores"): "5"}},
        (
            "job 1 segment 1 holds cores 5, gpus 0, mics 0, mem 0 on 4 units: "
            "not a whole amount per unit"
        ),
    ),
}


@pytest.mark.parametrize("kind", list(RELATIONS))
def test_files_disagreeing_with_each_other(
    market_run: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    edits, message = RELATIONS[kind]
    run_dir = copy_of(market_run, tmp_path)
    for name, edit in edits.items():
        rewrite(run_dir, name, edit)
        (
            run_dir / name.replace(".csv", ".parquet")
        ).unlink()  # the invariant, not the twin, names it
    assert failed(run_dir, capsys) == message


def test_sweep_counts_violations_and_unreadable_folders_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Of three runs one passes its audit, one breaks an invariant, one cannot be read."""
    from market_hpc.experiment import audit as audit_module
    from market_hpc.experiment.audit_csv import AuditReadError
    from market_hpc.experiment.sweep import run_sweep

    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'platform = "hlrs-3x9"\nworkload = { generator = "taskgraphs", jobs = 6 }\n'
        'policy = { scheduler = "maxvh" }\n[grid]\n"policy.hold_penalty" = [0.0, 0.1, 0.2]\n'
    )
    real = audit_module.audit_run

    def audit(run_dir: Path) -> audit_module.AuditReport:
        penalty = json.loads((Path(run_dir) / "config.json").read_text())["config"]["policy"][
            "hold_penalty"
        ]
        if penalty == 0.1:
            return audit_module.AuditReport(Path(run_dir), 1, 1, "job 1 ends twice", 0.0)
        if penalty == 0.2:
            raise AuditReadError(
                Path(run_dir) / "jobs.csv", "got 'x'; valid: a number", 2, "submit_time"
            )
        return real(run_dir)

    monkeypatch.setattr(audit_module, "audit_run", audit)
    outcome = run_sweep(sweep, tmp_path / "out", progress=False, audit=True)
    assert (outcome.done, outcome.failed, outcome.audit_violations, outcome.audit_unreadable) == (
        1,
        2,
        1,
        1,
    )
    assert outcome.describe() == (
        "3 runs: 1 done, 0 skipped, 2 failed (audit: 1 violating an invariant, "
        f"1 unreadable) ({outcome.executor})"
    )
    errors = sorted(error.split(":", 1)[0] for _, error in outcome.errors)
    assert errors == ["AuditError", "AuditReadError"]


def test_summary_counts_must_match_jobs_csv(
    market_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job cut out of both CSV files (twins deleted) still shows: summary.json counts it."""
    run_dir = copy_of(market_run, tmp_path)
    jobs = pd.read_csv(run_dir / "jobs.csv", dtype=str, keep_default_na=False)
    jobs[jobs["job_id"] != "30"].to_csv(run_dir / "jobs.csv", index=False)
    segments = pd.read_csv(run_dir / "segments.csv", dtype=str, keep_default_na=False)
    segments[segments["job_id"] != "30"].to_csv(run_dir / "segments.csv", index=False)
    for name in ("jobs.parquet", "segments.parquet"):
        (run_dir / name).unlink()
    assert failed(run_dir, capsys) == (
        "summary.json has jobs_completed = 30 but jobs.csv lists 29 finished jobs"
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps({**summary, "jobs_completed": 29.5}))
    assert unreadable(run_dir, capsys) == (
        "RUN/summary.json: key 'jobs_completed': got 29.5; valid: a whole number >= 0"
    )
    (run_dir / "summary.json").write_text("[]")
    assert unreadable(run_dir, capsys) == (
        'RUN/summary.json: not a JSON object (got list); valid: {"jobs_completed": N, ...} as '
        "market-hpc run writes it"
    )
