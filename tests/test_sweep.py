"""Sweeps: file validation, expansion, run ids, resume, failures, kill -9, executors,
reports, and HPCModel under ``mesa.batch_run``."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from market_hpc.cli import main
from market_hpc.errors import ConfigError
from market_hpc.experiment import PolicyConfig, RunConfig, config_from_dict, simulate
from market_hpc.experiment.sweep import TIMING_COLUMNS, SweepError, load_sweep, run_id, run_sweep
from market_hpc.experiment.sweep_exec import RunTask, execute_run, make_executor
from market_hpc.experiment.sweep_store import ResultStore
from market_hpc.policies import scheduler_names

DEFAULT_WINDOW = dataclasses.asdict(PolicyConfig().window)  # seed 003 window schedulers' parameters

ROOT = Path(__file__).resolve().parents[1]
# Scenario tables written inline so that sweep keys can follow at the top level.
MARKET_BASE = """
platform = "hlrs-3x9"
workload = { generator = "taskgraphs", jobs = 12 }
policy = { scheduler = "maxvh" }
"""
CLASSIC_BASE = """
platform = "kth-sp2"
timeseries = false
workload = { generator = "lublin-feitelson", jobs = JOBS }
policy = { scheduler = "easy" }
"""
# valid-choice lists as config.py and the registry define them (e.g. "exclusive, name, ...")
POLICY_KEYS = ", ".join(sorted(f"policy.{f.name}" for f in dataclasses.fields(PolicyConfig)))
TOP_KEYS = ", ".join(sorted(f.name for f in dataclasses.fields(RunConfig)))
SCHEDULERS = ", ".join(sorted(scheduler_names()))
BAD_SWF = (
    "; Version: 2.2\n1 0 -1 10 4 -1 -1 4 20 -1 1 1 -1 -1 1 -1 -1 -1\n"
    "2 5 -1 10 x 4 -1 4 20 -1 1 1 -1 -1 1 -1 -1 -1\n"
)


def sweep_file(
    tmp_path: Path, text: str, base: str = MARKET_BASE, name: str = "sweep.toml"
) -> Path:
    path = tmp_path / name
    path.write_text(base + "\n" + text)
    return path


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    return (
        frame.drop(columns=[c for c in TIMING_COLUMNS if c in frame])
        .sort_values("run_id")
        .reset_index(drop=True)
    )


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[grid]\n"policy.foo" = [1]',
            f"policy.foo: unknown config key 'policy.foo'; valid choices: {POLICY_KEYS}",
        ),
        (
            (
                'seeds = 2\n[[zip]]\n"policy.scheduler" = ["maxv", "maxvh"]\n"policy.hold_penalty" '
                "= "
                "[0.1]"
            ),
            (
                "zip group 1: lists must have equal lengths; got policy.scheduler: 2, "
                "policy.hold_penalty: 1"
            ),
        ),
        (
            "seeds = 0",
            (
                "seeds: expected a positive integer N (meaning 1..N) or a non-empty list of "
                "distinct non-negative integers, got 0"
            ),
        ),
        ("seeds = [1, 1]", "seeds lists a seed twice: [1, 1]"),
        (
            '[grid]\n"policy.hold_penalty" = 0.1',
            "grid: policy.hold_penalty must be a non-empty list of values, got 0.1",
        ),
        ('[grid]\n"policy.hold_penalty" = [0.1, 0.1]', "grid: policy.hold_penalty lists 0.1 twice"),
        ("[grid]\nseed = [1, 2]", "grid: seed cannot be swept here; use seeds = N or [..]"),
        (
            '[grid]\n"policy.hold_penalty" = [0.1]\n[[zip]]\n"policy.hold_penalty" = [0.2]',
            "policy.hold_penalty is varied twice (grid and zip groups must not overlap)",
        ),
        (
            '[grid]\n"policy.hold_penalty" = [0.5, 2.0]',
            (
                "point hold_penalty=2.0: policy.hold_penalty: got 2.0; valid: a finite number "
                "in [0, 1]"
            ),
        ),
        (
            '[grid]\n"policy.scheduler" = ["maxv", "nope"]',
            f"point scheduler=nope (seed 0): unknown scheduler 'nope'; valid choices: {SCHEDULERS}",
        ),
        (
            "grids = 1",
            (
                f"base scenario: unknown config key 'grids'; valid choices: {TOP_KEYS} "
                "(or a sweep key: base, seeds, grid, zip, report, quick)"
            ),
        ),
        (
            '[report]\nmetric = "x"',
            "[report] accepts only metrics = [names] and leaderboard = {...}, got {'metric': 'x'}",
        ),
    ],
)
def test_invalid_sweep_files_fail_naming_file_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = sweep_file(tmp_path, text)
    with pytest.raises(SweepError) as caught:
        load_sweep(path)
    assert str(caught.value) == f"{path}: {message}"
    assert isinstance(caught.value, ConfigError)


def test_missing_input_file_and_base_fail_before_running(tmp_path: Path) -> None:
    path = sweep_file(
        tmp_path,
        '[grid]\n"workload.lenient" = [true, false]',
        base='[workload]\ntrace = "missing.swf"\n',
    )
    with pytest.raises(SweepError, match=r"workload.trace: no such file .*missing.swf$"):
        load_sweep(path)
    path = sweep_file(tmp_path, 'base = "nowhere.toml"', base="")
    with pytest.raises(SweepError, match=r"cannot read base scenario .*nowhere.toml: No such file"):
        load_sweep(path)


@pytest.mark.parametrize(
    ("workers", "dask", "message"),
    [
        (0, None, "--workers must be >= 1, got 0"),
        (2, "local:2", "give either --workers or --dask, not both"),
        (
            1,
            "local:0",
            (
                "--dask expects local:N (a LocalCluster of N workers) or a scheduler address "
                "like tcp://HOST:PORT; got 'local:0' (N must be a positive integer)"
            ),
        ),
        (
            1,
            "myhost:8786",
            (
                "--dask expects local:N (a LocalCluster of N workers) or a scheduler "
                "address like tcp://HOST:PORT; got 'myhost:8786'"
            ),
        ),
    ],
)
def test_executor_options_are_validated(workers: int, dask: str | None, message: str) -> None:
    with pytest.raises(SweepError) as caught:
        make_executor(workers, dask)
    assert str(caught.value) == message


# ------------------------------------------------------------------- expansion
def test_grid_zip_and_seeds_expand_in_order(tmp_path: Path) -> None:
    path = sweep_file(
        tmp_path,
        """
seeds = [3, 5]
[grid]
policy.scheduler = ["maxv", "maxvh"]
[[zip]]
"policy.hold_penalty" = [0.1, 0.2, 0.3]
"workload.load" = [1.5, 2.0, 2.5]
""",
    )
    sweep = load_sweep(path)
    assert [(p.path, p.column) for p in sweep.parameters] == [
        ("policy.scheduler", "scheduler"),
        ("policy.hold_penalty", "hold_penalty"),
        ("workload.load", "load"),
    ]
    assert sweep.seeds == (3, 5)
    assert [
        (r.params["scheduler"], r.params["hold_penalty"], r.params["load"], r.seed)
        for r in sweep.runs[:4]
    ] == [
        ("maxv", 0.1, 1.5, 3),
        ("maxv", 0.1, 1.5, 5),
        ("maxv", 0.2, 2.0, 3),
        ("maxv", 0.2, 2.0, 5),
    ]
    assert len(sweep.runs) == 2 * 3 * 2
    assert len({r.run_id for r in sweep.runs}) == 12
    assert sweep.runs[-1].config["policy"] == {
        "scheduler": "maxvh",
        "allocator": None,
        "hold_penalty": 0.3,
        "predictor": None,
        "resume_seconds": 0.0,
        "hold_progress_loss": 0.0,
        "every_step": False,
        "window": DEFAULT_WINDOW,
    }
    assert load_sweep(sweep_file(tmp_path, "seeds = 4")).seeds == (1, 2, 3, 4)
    assert [r.seed for r in load_sweep(sweep_file(tmp_path, "seed = 9")).runs] == [9]


def test_base_file_is_relative_to_the_sweep_and_inline_tables_override_it(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "bad.swf").write_text(BAD_SWF)
    (tmp_path / "scenarios" / "base.toml").write_text(
        'platform = "kth-sp2"\n[workload]\ntrace = "bad.swf"\nlenient = true\n'
        '[policy]\nscheduler = "easy"\n'
    )
    (tmp_path / "sweeps").mkdir()
    path = sweep_file(
        tmp_path / "sweeps",
        'base = "../scenarios/base.toml"\n[policy]\n'
        'allocator = "best-fit"\n[grid]\n"workload.load_factor" = [1.0, 2.0]',
        base="",
    )
    runs = load_sweep(path).runs
    assert runs[0].config["workload"]["trace"] == str(
        (tmp_path / "scenarios" / "bad.swf").resolve()
    )
    assert runs[0].config["policy"] == {
        "scheduler": "easy",
        "allocator": "best-fit",
        "hold_penalty": 0.0,
        "predictor": None,
        "resume_seconds": 0.0,
        "hold_progress_loss": 0.0,
        "every_step": False,
        "window": DEFAULT_WINDOW,
    }
    assert [r.params for r in runs] == [{"load_factor": 1.0}, {"load_factor": 2.0}]


def test_run_id_is_a_stable_hash_of_the_full_config() -> None:
    data = {
        "platform": "hlrs-3x9",
        "seed": 4,
        "workload": {"generator": "taskgraphs", "jobs": 12},
        "policy": {"scheduler": "maxvh", "hold_penalty": 0.25},
    }
    # pinned canonical form (sorted keys, compact JSON, SHA-256, 16 hex): stored sweeps resume
    assert (
        run_id(
            {
                "platform": "hlrs-3x9",
                "seed": 4,
                "policy": {"scheduler": "maxvh", "hold_penalty": 0.25},
            }
        )
        == "fdb094dbb1858972"
    )
    config = config_from_dict(data).to_dict()
    assert run_id(dict(reversed(list(config.items())))) == run_id(config)
    assert run_id({**config, "name": "renamed"}) == run_id(config)
    assert run_id({**config, "seed": 5}) != run_id(config)
    int_penalty = config_from_dict({**data, "policy": {"scheduler": "maxvh", "hold_penalty": 0}})
    assert run_id(int_penalty.to_dict()) == run_id(
        config_from_dict({**data, "policy": {"scheduler": "maxvh", "hold_penalty": 0.0}}).to_dict()
    )


@pytest.mark.parametrize(
    ("name", "runs", "columns"),
    [
        ("overload_sweep.toml", 27, ["scheduler", "load_factor"]),
        ("penalty_sweep.toml", 240, ["scheduler", "hold_penalty", "curves"]),
        ("penalty_sweep_heldout.toml", 960, ["scheduler", "hold_penalty", "curves"]),
    ],
)
def test_bundled_sweep_files_validate_and_run(name: str, runs: int, columns: list[str]) -> None:
    sweep = load_sweep(ROOT / "scenarios" / name)
    assert len(sweep.runs) == runs
    assert [p.column for p in sweep.parameters] == columns
    first = sweep.runs[0]
    row = execute_run(RunTask(first.run_id, first.config))
    assert row["status"] == "ok", row["error"]


# ------------------------------------------------------------- resume, failures
def test_resume_skips_stored_runs_and_keeps_run_dirs(tmp_path: Path) -> None:
    text = '[grid]\n"policy.scheduler" = ["maxv", "maxvh"]\n'
    out = tmp_path / "out"
    first = run_sweep(sweep_file(tmp_path, "seeds = 2\n" + text), out, keep_runs=True)
    assert (first.total, first.done, first.skipped, first.failed) == (4, 4, 0, 0)
    again = run_sweep(sweep_file(tmp_path, "seeds = 2\n" + text), out)
    assert (again.done, again.skipped) == (0, 4)
    more = run_sweep(sweep_file(tmp_path, "seeds = 3\n" + text), out)
    assert (more.total, more.done, more.skipped, more.failed) == (6, 2, 4, 0)
    frame = pd.read_parquet(out / "results.parquet")
    assert len(frame) == 6 and set(frame["status"]) == {"ok"}
    assert list(frame.columns[:6]) == [
        "run_id",
        "scheduler",
        "seed",
        "status",
        "error",
        "duration_s",
    ]
    assert {"total_profit", "mean_wait", "mean_slowdown", "holds"} <= set(frame.columns)
    assert pd.read_csv(out / "results.csv")["run_id"].tolist() == frame["run_id"].tolist()
    kept = sorted(p.name for p in (out / "runs").iterdir())
    assert kept == sorted(frame["run_id"][frame["seed"] < 3])
    assert (out / "runs" / kept[0] / "summary.json").is_file()
    with ResultStore(out), pytest.raises(SweepError, match="is in use by another sweep"):
        run_sweep(sweep_file(tmp_path, "seeds = 3\n" + text), out)


def test_failing_run_is_recorded_and_retried_while_the_rest_go_on(tmp_path: Path) -> None:
    (tmp_path / "bad.swf").write_text(BAD_SWF)
    path = sweep_file(
        tmp_path,
        '[grid]\n"workload.lenient" = [true, false]',
        base='platform = "kth-sp2"\n[workload]\ntrace = "bad.swf"\n',
    )
    out = tmp_path / "out"
    outcome = run_sweep(path, out)
    assert (outcome.done, outcome.failed) == (1, 1)
    frame = pd.read_parquet(out / "results.parquet").set_index("lenient")
    assert frame.loc[True, "status"] == "ok" and frame.loc[True, "error"] == ""
    assert frame.loc[False, "status"] == "failed"
    assert frame.loc[False, "error"] == (
        f"TraceFormatError: {tmp_path / 'bad.swf'}:3: "
        "field 5 (allocated processors): 'x' is not an ASCII number "
        "(digits 0-9, an optional sign, point and exponent)"
    )
    assert outcome.errors == ((frame.loc[False, "run_id"], frame.loc[False, "error"]),)
    retried = run_sweep(path, out)
    assert (retried.done, retried.skipped, retried.failed) == (0, 1, 1)


def test_integer_columns_stay_integers_through_a_resume(tmp_path: Path) -> None:
    (tmp_path / "bad.swf").write_text(BAD_SWF)
    path = sweep_file(
        tmp_path,
        '[grid]\n"workload.lenient" = [true, false]',
        base='platform = "kth-sp2"\n[workload]\ntrace = "bad.swf"\n',
    )
    out = tmp_path / "out"
    run_sweep(path, out)  # one ok row, one failed row without metrics
    ok_part = next(
        p
        for p in (out / "parts").glob("*.parquet")
        if pq.read_table(p).column("status")[0].as_py() == "ok"
    )
    integers = [f.name for f in pq.read_schema(ok_part) if str(f.type) == "int64"]
    assert "jobs_completed" in integers
    for _ in range(2):  # first run, then a resume that rebuilds the table from it
        schema = pq.read_schema(out / "results.parquet")
        assert {name: str(schema.field(name).type) for name in integers} == dict.fromkeys(
            integers, "int64"
        )
        run_sweep(path, out)
    csv = pd.read_csv(out / "results.csv")
    ok = csv[csv["status"] == "ok"].iloc[0]
    assert float(ok["jobs_completed"]).is_integer()
    assert (
        "."
        not in (out / "results.csv")
        .read_text()
        .splitlines()[1]
        .split(",")[list(csv.columns).index("jobs_completed")]
    )


def test_a_run_whose_result_never_comes_back_from_dask_is_interrupted(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed")
    from market_hpc.experiment.executors import DaskExecutor

    tasks = [RunTask("r1", {}, None), RunTask("r2", {}, None)]
    try:
        # ``len`` raises on a task: the work function itself never does (execute_run records a
        # failing run), so whatever Dask hands back instead of a row is an interruption.
        with DaskExecutor("local:1", work=len) as executor:  # type: ignore[arg-type]
            rows = sorted(executor.run(tasks), key=lambda row: row["run_id"])
    except SweepError as exc:
        pytest.skip(f"dask.distributed cannot start here: {exc}")
    assert [(row["run_id"], row["status"]) for row in rows] == [
        ("r1", "interrupted"),
        ("r2", "interrupted"),
    ]
    assert rows[0]["error"].startswith("TypeError: object of type 'RunTask' has no len()")
    store_dir = tmp_path / "store"
    with ResultStore(store_dir) as store:
        store.add(rows[0])
        assert store.ok_ids() == set()  # a resumed sweep runs it again


def test_the_outcome_line_counts_interrupted_runs_apart() -> None:
    from market_hpc.experiment.sweep import SweepOutcome

    outcome = SweepOutcome(
        Path("out"), 10, 6, 1, 1, (("a", "x"), ("b", "y"), ("c", "z")), "Dask", 2
    )
    assert outcome.describe() == (
        "10 runs: 6 done, 1 skipped, 1 failed, 2 interrupted (re-run the sweep "
        "to resume them) (Dask)"
    )


def start_sweep(
    tmp_path: Path, seeds: int, workers: int
) -> tuple[Path, Path, subprocess.Popen[bytes]]:
    """A sweep of ``seeds`` 2,000-job runs in a child ``market-hpc sweep`` process."""
    path = sweep_file(tmp_path, f"seeds = {seeds}", base=CLASSIC_BASE.replace("JOBS", "2000"))
    out = tmp_path / "out"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "market_hpc",
            "sweep",
            str(path),
            "--out",
            str(out),
            "--workers",
            str(workers),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return path, out, process


def test_kill_9_loses_only_runs_in_flight(tmp_path: Path) -> None:
    path, out, process = start_sweep(tmp_path, 10, 1)
    deadline = time.monotonic() + 60
    try:
        while len(list((out / "parts").glob("*.parquet"))) < 3:
            assert process.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no rows stored within 60 s"
            time.sleep(0.02)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    parts = sorted((out / "parts").glob("*.parquet"))
    planned = {run.run_id for run in load_sweep(path).runs}
    assert 3 <= len(parts) < 10
    for part in parts:
        (row,) = pq.read_table(part).to_pylist()
        assert row["run_id"] == part.stem and row["run_id"] in planned
        assert row["status"] == "ok" and row["jobs_completed"] == 2000
    if (out / "results.parquet").exists():
        assert set(pd.read_parquet(out / "results.parquet")["run_id"]) <= {p.stem for p in parts}
    resumed = run_sweep(path, out)
    assert (resumed.skipped, resumed.done, resumed.failed) == (len(parts), 10 - len(parts), 0)
    assert len(pd.read_parquet(out / "results.parquet")) == 10
    assert not list(out.rglob("*.tmp"))


def running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its reaper does not)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def descendants(pid: int) -> dict[int, str]:
    """Live (not zombie) descendants of ``pid`` and their command lines, from /proc."""
    parents: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        child = int(stat.parent.name)
        states[child] = fields[0]
        parents.setdefault(int(fields[1]), []).append(child)
    found, todo = {}, [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if states.get(child) != "Z":
                try:
                    found[child] = (
                        (Path("/proc") / str(child) / "cmdline")
                        .read_bytes()
                        .replace(b"\0", b" ")
                        .decode()
                    )
                except OSError:
                    continue
            todo.append(child)
    return found


@pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads the process table from /proc"
)
def test_kill_9_of_a_worker_sweep_leaves_no_process_behind(tmp_path: Path) -> None:
    # The two workers and the resource tracker once outlived a kill -9 of the sweep.
    _, out, process = start_sweep(tmp_path, 12, 2)
    children: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while not (len(children) >= 3 and list((out / "parts").glob("*.parquet"))):
            assert process.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, f"no worker rows within 120 s; children {children}"
            children = descendants(process.pid)
            time.sleep(0.05)
        children = descendants(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 30
        alive = {pid: command for pid, command in children.items() if running(pid)}
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = {pid: command for pid, command in alive.items() if running(pid)}
        assert not alive, f"left behind after kill -9 of the sweep: {alive}"
        assert sum("spawn_main" in command for command in children.values()) == 2  # the workers
        assert any("resource_tracker" in command for command in children.values())
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in children:  # only when the test failed: the processes this test started
            if running(pid):
                os.kill(pid, signal.SIGKILL)


# -------------------------------------------------------------------- executors
def test_local_processes_and_dask_give_identical_rows(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed")
    path = sweep_file(
        tmp_path,
        'seeds = 2\n[grid]\n"policy.scheduler" = ["maxv", "maxvh"]\n'
        '"policy.hold_penalty" = [0.0, 0.3]',
    )
    in_process = run_sweep(path, tmp_path / "one")
    local = run_sweep(path, tmp_path / "local", workers=2)
    try:
        on_dask = run_sweep(path, tmp_path / "dask", dask="local:2")
    except SweepError as exc:
        if "cannot start a Dask LocalCluster" in str(exc):
            pytest.skip(f"dask.distributed cannot start here: {exc}")
        raise
    assert [o.done for o in (in_process, local, on_dask)] == [8, 8, 8]
    reference = comparable(pd.read_parquet(tmp_path / "one" / "results.parquet"))
    for folder in ("local", "dask"):
        pd.testing.assert_frame_equal(
            comparable(pd.read_parquet(tmp_path / folder / "results.parquet")), reference
        )


# ---------------------------------------------------------------------- reports
def test_cli_sweep_writes_report_pngs_and_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = sweep_file(
        tmp_path,
        'seeds = 2\n[grid]\n"policy.scheduler" = ["maxv", "maxvh"]\n'
        '"policy.hold_penalty" = [0.0, 0.2, 0.4]',
    )
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "12 runs: 12 done, 0 skipped, 0 failed (in-process)" in printed
    report = out / "report"
    for stem in (
        "total_profit_vs_hold_penalty",
        "total_profit_by_policy",
        "total_profit_heatmap_scheduler_hold_penalty",
    ):
        assert (report / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (report / f"{stem}.csv").is_file()
    lines = pd.read_csv(report / "total_profit_vs_hold_penalty.csv")
    assert list(lines.columns) == ["scheduler", "hold_penalty", "mean", "min", "max", "std", "n"]
    assert len(lines) == 6 and set(lines["n"]) == {2}
    assert main(["report", str(out), "--metric", "holds"]) == 0
    assert (report / "holds_vs_hold_penalty.png").is_file()
    assert main(["report", str(out), "--metric", "nope"]) == 2
    assert "unknown metric 'nope'; valid choices: " in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2


# ------------------------------------------------------------------------- Mesa
@pytest.mark.smoke
def test_hpc_model_runs_under_mesa_batch_run() -> None:
    import inspect

    from mesa import batch_run

    from market_hpc.core.model import HPCModel
    from market_hpc.domain.platform import load_platform
    from market_hpc.workload.applications import library_job_set

    platform = load_platform("hlrs-3x9")
    jobs = list(library_job_set(12, 1, load=2.0, platform_cores=platform.total_cores))
    parameters = {
        "jobs": [jobs],
        "platform": "hlrs-3x9",
        "scheduler": ["maxv", "maxvh"],
        "hold_penalty": 0.2,
    }
    if "rng" in inspect.signature(batch_run).parameters:
        seeding = {"rng": [1, 2]}  # Mesa >= 3.4 passes these as the model's seed argument
    else:
        seeding = {"iterations": 1}
        parameters["seed"] = [1, 2]
    rows = batch_run(
        HPCModel,
        parameters,
        number_processes=1,
        data_collection_period=-1,
        max_steps=10**7,
        display_progress=False,
        **seeding,
    )
    rows.sort(key=lambda row: (row["scheduler"], row["seed"]))
    assert [(row["scheduler"], row["seed"]) for row in rows] == [
        ("maxv", 1),
        ("maxv", 2),
        ("maxvh", 1),
        ("maxvh", 2),
    ]
    for row in rows:
        config = config_from_dict(
            {
                "platform": "hlrs-3x9",
                "seed": row["seed"],
                "workload": {"generator": "taskgraphs", "jobs": 12},
                "policy": {"scheduler": row["scheduler"], "hold_penalty": 0.2},
            }
        )
        summary = simulate(config, jobs=jobs).summary
        # batch_run's row for the last step is the final state: the time series' last row
        assert row["time"] >= summary["makespan"] + min(job.submit for job in jobs)
        assert row["holds"] == summary["holds"] and row["drops"] == summary["jobs_dropped"]
        assert row["profit"] == pytest.approx(summary["total_profit"])
        assert row["queue_length"] == 0 and row["running_jobs"] == 0


def test_progress_lines_when_the_output_is_not_a_terminal() -> None:
    import io

    from market_hpc.experiment.sweep import ProgressLines

    now = [100.0]
    out = io.StringIO()
    lines = ProgressLines(4, interval=5.0, clock=lambda: now[0], stream=out)
    now[0] = 102.0
    lines.update(1)  # 2 s after the start: not due yet
    now[0] = 106.0
    lines.set_postfix(failed=1)
    lines.update(1)  # 6 s: due
    now[0] = 107.0
    lines.update(1)  # 1 s after the last line: not due
    now[0] = 108.0
    lines.update(1)  # the last run: always shown
    assert out.getvalue().splitlines() == [
        "sweep: 2/4 runs done, 1 failed, 6s elapsed, about 6s left",
        "sweep: 4/4 runs done, 1 failed, 8s elapsed, about 0s left",
    ]


# ------------------------------------------------- defaults, schedulers, counts, disk
@pytest.mark.parametrize(
    ("axis", "column", "values", "same_id"),
    [
        ('"policy.params" = [{}, {queue_limit = 5}]', "params", ["{}", '{"queue_limit":5}'], True),
        (
            '"policy.params.queue_limit" = [100, 5]',
            "queue_limit",
            [100, 5],
            False,
        ),  # 100: the default
    ],
)
def test_an_axis_may_take_its_default_and_matches_the_explicit_run(
    tmp_path: Path, axis: str, column: str, values: list[object], same_id: bool
) -> None:
    base = CLASSIC_BASE.replace("JOBS", "15").replace('"easy"', '"pcp19"')
    sweep = load_sweep(sweep_file(tmp_path, f"[grid]\n{axis}", base=base))
    plain = load_sweep(sweep_file(tmp_path, "", base=base, name="plain.toml")).runs[0]
    assert (sweep.runs[0].run_id == plain.run_id) is same_id
    out = tmp_path / "out"
    outcome = run_sweep(sweep, out, progress=False)
    assert (outcome.done, outcome.failed) == (2, 0)
    frame = pd.read_parquet(out / "results.parquet")
    assert frame[column].tolist() == values
    explicit = execute_run(RunTask(plain.run_id, plain.config))
    assert frame["mean_wait"].iloc[0] == explicit["mean_wait"]


def test_all_families_enabled_may_be_swept_from_its_default_false(tmp_path: Path) -> None:
    trace = ROOT / "traces" / "lf-kth-like-2000.swf"
    base = (
        f'platform = "kth-sp2"\ntimeseries = false\nworkload = {{ trace = "{trace}", first_n = 12 '
        "}\n"
        'policy = { scheduler = "easy" }\n'
    )
    sweep = load_sweep(
        sweep_file(tmp_path, '[grid]\n"workload.all_families.enabled" = [false, true]', base=base)
    )
    assert [run.params for run in sweep.runs] == [{"enabled": False}, {"enabled": True}]
    plain = load_sweep(sweep_file(tmp_path, "", base=base, name="plain.toml")).runs[0]
    assert sweep.runs[0].run_id == plain.run_id
    outcome = run_sweep(sweep, tmp_path / "out", progress=False)
    assert (outcome.done, outcome.failed) == (2, 0)


def test_a_base_scheduler_other_than_the_swept_ones_is_only_a_default(tmp_path: Path) -> None:
    base = CLASSIC_BASE.replace("JOBS", "12")  # scheduler easy, which takes no queue_limit
    valid = sweep_file(
        tmp_path,
        '[grid]\n"policy.scheduler" = ["pcp19", "hcp19"]\n"policy.params.queue_limit" = [5, 10]',
        base=base,
    )
    sweep = load_sweep(valid)
    assert [(r.params["scheduler"], r.params["queue_limit"]) for r in sweep.runs] == [
        ("pcp19", 5),
        ("pcp19", 10),
        ("hcp19", 5),
        ("hcp19", 10),
    ]
    inline = sweep_file(
        tmp_path,
        '[grid]\n"policy.scheduler" = ["pcp19", "hcp19"]',
        base=base.replace(
            'policy = { scheduler = "easy" }',
            'policy = { scheduler = "easy", params = { queue_limit = 5 } }',
        ),
        name="inline.toml",
    )
    assert len(load_sweep(inline).runs) == 2
    invalid = sweep_file(
        tmp_path,
        '[grid]\n"policy.scheduler" = ["pcp19", "fifo"]\n"policy.params.queue_limit" = [5]',
        base=base,
        name="bad.toml",
    )
    with pytest.raises(SweepError) as caught:
        load_sweep(invalid)
    assert str(caught.value) == (
        f"{invalid}: point scheduler=fifo, queue_limit=5: scheduler 'fifo': unknown parameter "
        "'queue_limit'; "
        "valid parameters: none (it takes no parameters) (this point's policy.scheduler is 'fifo', "
        "the base "
        "scenario's is 'easy'; policy.params.queue_limit must be a parameter of each point's "
        "scheduler: put "
        "it in one [[zip]] group with policy.scheduler)"
    )


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("seeds = 3000000", "3,000,000 runs (1 point x 3,000,000 seeds)"),
        (
            "[grid]\n"
            + "\n".join(
                f'"policy.params.{key}" = {list(range(1, n + 1))}'
                for key, n in (
                    ("queue_limit", 100),
                    ("solver_seed", 120),
                    ("workers", 50),
                    ("levels", 3),
                )
            ),
            "1,800,000 runs (100 x 120 x 50 x 3 points x 1 seed)",
        ),
    ],
)
def test_a_huge_plan_is_refused_before_any_point_is_built(
    tmp_path: Path, text: str, count: str
) -> None:
    base = CLASSIC_BASE.replace("JOBS", "10").replace('"easy"', '"pcp20"')
    path = sweep_file(tmp_path, text, base=base)
    with pytest.raises(SweepError) as caught:
        load_sweep(path)
    assert str(caught.value) == (
        f"{path}: {count} is more than --max-runs 100,000; shorten the grid lists "
        "or the seeds, split the sweep, or raise --max-runs"
    )
    lines: list[str] = []
    assert len(load_sweep(sweep_file(tmp_path, "seeds = 3"), announce=lines.append).runs) == 3
    assert lines == [
        "sweep sweep.toml: 3 runs (1 point x 3 seeds); checking every point before the first run"
    ]
    with pytest.raises(
        SweepError, match=r": 3 runs \(1 point x 3 seeds\) is more than --max-runs 2;"
    ):
        load_sweep(sweep_file(tmp_path, "seeds = 3"), max_runs=2)


def test_the_cli_prints_the_count_first_and_takes_max_runs(tmp_path: Path, capsys) -> None:
    path = sweep_file(tmp_path, "seeds = 3")
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--max-runs", "2"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"market-hpc: error: {path}: 3 runs (1 point x 3 seeds) is more than --max-runs 2; "
        "shorten the grid lists or the seeds, split the sweep, or raise --max-runs\n"
    )
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--max-runs", "0"]) == 2
    assert "--max-runs" in capsys.readouterr().err


def test_a_full_disk_is_one_line_and_a_rerun_resumes_to_the_same_results(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    import errno

    from market_hpc.experiment import sweep_store

    path = sweep_file(tmp_path, "seeds = 4")
    reference = tmp_path / "reference"
    assert main(["sweep", str(path), "--out", str(reference)]) == 0
    real = sweep_store._arrow_table  # builds each run's part, inside its write (only there)
    parts_written = []

    def fill_disk_on_third(rows):
        parts_written.append(1)
        if len(parts_written) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(rows)

    monkeypatch.setattr(sweep_store, "_arrow_table", fill_disk_on_third)
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(f"market-hpc: error: cannot write {out / 'parts'}/")
    assert err[-1].endswith(
        ".parquet: No space left on device; the runs stored before it are kept; "
        "free space and re-run the sweep to resume"
    )
    assert "Traceback" not in "\n".join(err)
    assert len(list((out / "parts").glob("*.parquet"))) == 2
    assert not list((out / "parts").glob(".*"))  # no temporary file left behind
    monkeypatch.setattr(sweep_store, "_arrow_table", real)
    assert main(["sweep", str(path), "--out", str(out)]) == 0
    assert "4 runs: 2 done, 2 skipped, 0 failed" in capsys.readouterr().out
    resumed, whole = (
        comparable(pd.read_parquet(folder / "results.parquet")) for folder in (out, reference)
    )
    pd.testing.assert_frame_equal(resumed[sorted(resumed.columns)], whole[sorted(whole.columns)])
