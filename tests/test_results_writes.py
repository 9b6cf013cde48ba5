"""Results folders are written whole or not at all, and refused before the run when they
cannot be; every JSON file parses strictly; bad inputs are refused with a named cause."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from market_hpc.cli import main
from market_hpc.errors import ConfigError, TraceFormatError
from market_hpc.experiment import config_from_dict

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
JOB = "{id} {submit} 0 100 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n"


def _trace(folder: Path, jobs: int = 4) -> Path:
    path = folder / "t.swf"
    path.write_text("".join(JOB.format(id=n + 1, submit=10 * (n + 1)) for n in range(jobs)))
    return path


def _replay(trace: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "replay",
            str(trace),
            "--platform",
            "nodes=2,cores=4",
            "--scheduler",
            "easy",
            "--out",
            str(out),
            *extra,
        ]
    )


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def previous(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Path, dict[str, bytes]]:
    """A trace and a results folder holding an earlier run (plus its page and plots)."""
    trace = _trace(tmp_path)
    out = tmp_path / "out"
    assert _replay(trace, out) == 0
    (out / "schedule.html").write_text("<html>earlier run</html>")
    (out / "plots").mkdir()
    (out / "plots" / "old.png").write_bytes(b"png")
    capsys.readouterr()
    return trace, out, _snapshot(out)


def test_an_existing_results_folder_is_refused_without_overwrite(previous, capsys) -> None:
    trace, out, before = previous
    assert _replay(trace, out) == 2
    assert _error_line(capsys) == (
        f"market-hpc: error: cannot write {out}: the folder already exists and is "
        "not empty (give --overwrite to replace its contents)"
    )
    assert _snapshot(out) == before


def test_overwrite_replaces_the_folder_and_nothing_stale_survives(previous, capsys) -> None:
    trace, out, _ = previous
    assert _replay(trace, out, "--overwrite") == 0
    assert sorted(path.name for path in out.iterdir()) == [
        "config.json",
        "jobs.csv",
        "jobs.parquet",
        "segments.csv",
        "segments.parquet",
        "summary.json",
        "timeseries.csv",
    ]
    assert not [path for path in out.parent.iterdir() if path.name.startswith(".staging-")]


def test_an_existing_file_as_out_is_refused_before_the_run(tmp_path, capsys) -> None:
    trace = _trace(tmp_path)
    target = tmp_path / "results"
    target.write_text("keep me")
    assert _replay(trace, target) == 2
    assert (
        _error_line(capsys)
        == f"market-hpc: error: cannot write {target}: it is a file, not a folder"
    )
    assert target.read_text() == "keep me"
    assert "replay of" not in capsys.readouterr().out  # nothing was simulated


def test_a_folder_under_a_file_is_refused(tmp_path, capsys) -> None:
    trace = _trace(tmp_path)
    (tmp_path / "somefile").write_text("x")
    out = tmp_path / "somefile" / "out"
    assert _replay(trace, out) == 2
    assert (
        _error_line(capsys)
        == f"market-hpc: error: cannot write {out}: {tmp_path / 'somefile'} is a file, not a folder"
    )


@pytest.mark.skipif(
    ROOT, reason="root ignores permissions (the folder-under-a-file test covers root)"
)
def test_a_read_only_folder_is_refused_and_left_intact(previous, capsys) -> None:
    trace, out, before = previous
    parent = out.parent
    parent.chmod(0o555)
    try:
        assert _replay(trace, out, "--overwrite") == 2
        assert _error_line(capsys) == f"market-hpc: error: cannot write {out}: Permission denied"
    finally:
        parent.chmod(0o755)
    assert _snapshot(out) == before


def test_a_full_disk_mid_write_leaves_the_previous_results(previous, capsys, monkeypatch) -> None:
    from market_hpc.experiment import results_out

    trace, out, before = previous
    real_write_csv = results_out.write_csv

    def fills_the_disk(frame, handle, header=True, **options):  # type: ignore[no-untyped-def]
        if "timeseries" in getattr(handle, "name", ""):
            handle.write(b"time,queue_le")  # cut mid-row, as a full disk does
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write_csv(frame, handle, header=header, **options)

    monkeypatch.setattr(results_out, "write_csv", fills_the_disk)
    assert _replay(trace, out, "--overwrite") == 2
    assert _error_line(capsys) == (
        f"market-hpc: error: cannot write {out / 'timeseries.csv'}: "
        f"No space left on device; {out} left unchanged"
    )
    assert _snapshot(out) == before
    assert not [path for path in out.parent.iterdir() if path.name.startswith(".staging-")]


def test_a_full_disk_on_a_new_folder_leaves_nothing(tmp_path, capsys, monkeypatch) -> None:
    from market_hpc.experiment import results_out

    def fills_the_disk(frame, handle, header=True, **options):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(results_out, "write_csv", fills_the_disk)
    out = tmp_path / "new"
    assert _replay(_trace(tmp_path), out) == 2
    assert _error_line(capsys).endswith(
        f"{out / 'jobs.csv'}: No space left on device; {out} left unchanged"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["t.swf"]


def test_sweep_out_under_a_file_is_refused_before_any_run(tmp_path, capsys) -> None:
    (tmp_path / "somefile").write_text("x")
    sweep = tmp_path / "s.toml"
    sweep.write_text('[base]\nplatform = "nodes=2,cores=4"\n')
    out = tmp_path / "somefile" / "out"
    assert main(["sweep", str(sweep), "--out", str(out)]) == 2
    assert (
        _error_line(capsys)
        == f"market-hpc: error: cannot write {out}: {tmp_path / 'somefile'} is a file, not a folder"
    )


# ----------------------------------------------------------------- strict JSON


def test_every_json_file_of_a_run_parses_strictly_and_names_the_allocator(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert _replay(_trace(tmp_path), out) == 0
    for path in out.glob("*.json"):
        _strict(path.read_text())
    summary = _strict((out / "summary.json").read_text())
    assert summary["policy"] == "easy+first-fit" and summary["allocator"] == "first-fit"


def test_non_finite_numbers_are_written_as_null(tmp_path) -> None:
    import numpy as np

    from market_hpc.experiment.run import write_json_files

    summary = {
        "queue_periods": [{"period": 0, "mean_wait": math.nan, "ratio": np.float64(np.inf)}],
        "mean_wait": -math.inf,
        "count": np.int64(3),
    }
    write_json_files(tmp_path, summary, {"seed": 1})
    assert _strict((tmp_path / "summary.json").read_text()) == {
        "queue_periods": [{"period": 0, "mean_wait": None, "ratio": None}],
        "mean_wait": None,
        "count": 3,
    }


# ----------------------------------------------------------------- policy parameters


def _config(scheduler: str, **params: Any) -> Any:
    return config_from_dict(
        {
            "platform": "nodes=2,cores=4",
            "workload": {"trace": "t.swf"},
            "policy": {"scheduler": scheduler, "params": params},
        }
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (math.nan, "nan"),
        (math.inf, "inf"),
        (1e308, "1e+308"),
        (2.5, "2.5"),
        (True, "True"),
        ("ten", "'ten'"),
    ],
)
def test_a_bad_queue_limit_is_refused_when_the_config_is_read(value, shown) -> None:
    with pytest.raises(ConfigError) as refused:
        _config("pcp20", queue_limit=value)
    assert str(refused.value) == (
        f"scheduler 'pcp20': policy.params.queue_limit = {shown} is invalid; "
        "valid: an integer in [1, 10000]"
    )


def test_an_unknown_parameter_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as refused:
        _config("maxvh", max_holds=1)
    assert (
        str(refused.value)
        == "scheduler 'maxvh': unknown parameter 'max_holds'; valid parameters: penalty"
    )
    with pytest.raises(
        ConfigError,
        match=r"^scheduler 'easy': unknown parameter 'window'; valid parameters: "
        r"none \(it takes no parameters\)$",
    ):
        _config("easy", window=3)


def test_max_holds_sets_the_look_ahead_limit() -> None:
    from market_hpc.experiment.run import _make_policy

    policy = _make_policy(_config("maxvlh", max_holds=1))
    assert policy.max_holds == 1 and policy.lookahead


def test_every_built_in_declares_exactly_its_constructor_keywords() -> None:
    """A parameter added to ``__init__`` and not to the class's ``parameters`` (or the
    reverse) fails here: names and defaults, read from the signatures independently."""
    import inspect

    from market_hpc.parameters import REQUIRED
    from market_hpc.policies.registry import (
        ALLOCATORS,
        BIDDERS,
        SCHEDULERS,
        _load_builtin,
        origin,
        parameters_of,
    )

    def keywords(factory) -> dict:  # type: ignore[no-untyped-def,type-arg]
        found: dict = {}  # type: ignore[type-arg]
        chain = [
            kind.__dict__["__init__"]
            for kind in getattr(factory, "__mro__", ())
            if "__init__" in kind.__dict__ and kind is not object
        ] or [factory]
        for function in chain:
            parameters = inspect.signature(function).parameters.values()
            for item in parameters:
                if item.kind in (item.POSITIONAL_OR_KEYWORD, item.KEYWORD_ONLY) and (
                    item.name not in ("self", "allocator", "config")
                ):
                    found.setdefault(
                        item.name, REQUIRED if item.default is item.empty else item.default
                    )
            if not any(item.kind is item.VAR_KEYWORD for item in parameters):
                return found
        settings = getattr(factory, "params_to", None)  # the slurm scheduler's
        if settings is not None:
            defaults = settings()
            for name in settings.__dataclass_fields__:
                if settings.__dataclass_fields__[name].metadata.get("parameter", True):
                    found.setdefault(name, getattr(defaults, name))
        return found

    _load_builtin()
    kinds = [
        ("scheduler", {name: entry.factory for name, entry in SCHEDULERS.items()}),
        ("allocator", {name: pair[0] for name, pair in ALLOCATORS.items()}),
        ("bidder", {name: pair[0] for name, pair in BIDDERS.items()}),
    ]
    checked = 0
    for kind, factories in kinds:
        for name, factory in factories.items():
            if origin(factory) != "built in":
                continue
            declared = parameters_of(kind, name)
            assert declared is not None, (kind, name)
            expected = keywords(factory)
            assert {key: param.default for key, param in declared.items()} == expected, name
            for key, param in declared.items():  # each default is valid by its declaration
                assert param.default in (None, REQUIRED) or param.accepts(param.default), key
            checked += 1
    assert checked == 43 + 6 + 4  # schedulers, allocators, bidders built in


def test_a_declaration_that_differs_from_the_constructor_fails_at_registration() -> None:
    from typing import ClassVar

    from market_hpc.errors import ConfigError
    from market_hpc.parameters import Param
    from market_hpc.policies.classic import Fifo
    from market_hpc.policies.registry import register_scheduler, restore, snapshot

    class Drifted(Fifo):
        parameters: ClassVar = {"depth": Param("int")}

        def __init__(self, allocator, depth: int = 3, width: int = 2) -> None:  # type: ignore[no-untyped-def]
            super().__init__(allocator)

    class Undeclared(Fifo):  # a plugin's subclass with its own keywords: undeclared
        def __init__(self, allocator, depth: int = 3) -> None:  # type: ignore[no-untyped-def]
            super().__init__(allocator)

    names = snapshot()
    try:
        with pytest.raises(
            ConfigError,
            match=r"scheduler 'tmp-drifted': '.*Drifted' declares parameters \['depth'\] "
            r"but its constructor takes \['depth', 'width'\]",
        ):
            register_scheduler("tmp-drifted", "a test scheduler")(Drifted)
        register_scheduler("tmp-undeclared", "a test scheduler")(Undeclared)
        from market_hpc.policies.registry import parameters_of

        assert parameters_of("scheduler", "tmp-undeclared") is None
        assert parameters_of("scheduler", "fifo") == {}
    finally:
        restore(names)


def test_hold_penalty_reaches_a_market_scheduler_given_params() -> None:
    from market_hpc.experiment.run import _make_policy

    config = config_from_dict(
        {
            "platform": "nodes=2,cores=4",
            "workload": {"trace": "t.swf"},
            "policy": {"scheduler": "maxvlh", "hold_penalty": 0.25, "params": {"max_holds": 1}},
        }
    )
    assert _make_policy(config).penalty == 0.25


# ----------------------------------------------------------------- workload inputs


@pytest.mark.parametrize("stream", [True, False])
def test_a_time_window_that_keeps_no_job_is_an_error(tmp_path, stream) -> None:
    from market_hpc.experiment.run import simulate
    from market_hpc.experiment.streaming import simulate_streaming

    trace = _trace(tmp_path)
    workload: dict[str, Any] = {"trace": str(trace), "end": 0}
    if not stream:
        workload["market"] = True  # not streamed
    config = config_from_dict(
        {
            "platform": "nodes=2,cores=4",
            "workload": workload,
            "policy": {"scheduler": "maxv" if not stream else "easy"},
        }
    )
    with pytest.raises(ConfigError) as refused:
        (simulate_streaming if stream else simulate)(config)
    assert (
        str(refused.value)
        == f"workload.end = 0 keeps no job of {trace}: its jobs are submitted from 10 to 40 s"
    )


def test_a_no_break_space_between_fields_is_refused(tmp_path, capsys) -> None:
    from market_hpc.workload import read_swf
    from market_hpc.workload.swf_stream import stream_swf

    trace = _trace(tmp_path)
    lines = trace.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace(" ", "\u00a0", 2)
    trace.write_text("".join(lines), encoding="utf-8")
    message = (
        f"{trace}:3: field 1 (job id): '3\\xa030\\xa00' holds U+00A0 (NO-BREAK SPACE) as a "
        "separator; "
        "SWF fields are separated by ASCII spaces or tabs"
    )
    for reader in (read_swf, stream_swf):
        with pytest.raises(TraceFormatError) as refused:
            reader(str(trace))
        assert str(refused.value) == message


def test_a_replayed_trace_is_named_absolutely_in_config_json(tmp_path, monkeypatch, capsys) -> None:
    _trace(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "t.swf", "--platform", "nodes=2,cores=4", "--out", "out"]) == 0
    config = _strict((tmp_path / "out" / "config.json").read_text())
    assert config["config"]["workload"]["trace"] == str((tmp_path / "t.swf").resolve())


def test_demo_refuses_an_existing_results_folder_before_the_study(tmp_path, capsys) -> None:
    out = tmp_path / "demo"
    out.mkdir()
    (out / "comparison.csv").write_text("earlier")
    assert main(["demo", "--quick", "--seeds", "1", "--out", str(out)]) == 2
    assert _error_line(capsys) == (
        f"market-hpc: error: cannot write {out}: the folder already exists and is "
        "not empty (give --overwrite to replace its contents)"
    )
    assert (out / "comparison.csv").read_text() == "earlier"


def test_the_demo_replaces_its_own_default_folder(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    stale = tmp_path / "out" / "demo" / "stale.txt"
    stale.parent.mkdir(parents=True)
    stale.write_text("from an earlier demo")
    assert main(["demo", "--quick", "--seeds", "1"]) == 0  # the README's first command, run again
    assert (tmp_path / "out" / "demo" / "comparison.csv").is_file() and not stale.exists()


def test_json_files_are_written_only_through_json_text() -> None:
    """``json.dumps`` outside ``json_text`` would allow NaN; only hashing may use it."""
    package = Path(__file__).resolve().parents[1] / "market_hpc"
    hashing = {
        "experiment/sweep_spec.py",
        "algorithms/taskgraph.py",  # digests, never written
        "experiment/run_folder.py",  # a value quoted in an error message, never written
        "rl/registry.py",  # checks that parameters are JSON values (NaN refused), never written
    }
    found = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "json.dump" in path.read_text(encoding="utf-8")
    }
    assert found - hashing == {"json_text.py"}


def test_allocator_and_bidder_parameters_are_checked() -> None:
    import numpy as np

    from market_hpc.policies.registry import make_allocator, make_bidder

    with pytest.raises(
        ConfigError, match=r"^allocator 'weighted': unit_free = 1 is invalid; valid: true or false$"
    ):
        make_allocator("weighted", unit_free=1)
    with pytest.raises(
        ConfigError,
        match=r"^bidder 'energy': idle_factor = nan is invalid; "
        r"valid: a finite number in \[0, 1\]$",
    ):
        make_bidder("energy", idle_factor=math.nan)
    assert make_bidder("energy", watts_per_core=np.array([1.0, 2.0])).name == "energy"


def test_a_page_that_cannot_be_written_is_one_line(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert _replay(_trace(tmp_path), out) == 0
    (tmp_path / "somefile").write_text("x")
    page = tmp_path / "somefile" / "page.html"
    capsys.readouterr()
    assert main(["plot", str(out), "--out", str(page)]) == 2
    assert _error_line(capsys) == (
        f"market-hpc: error: cannot write {page.with_suffix('.svg')}: "
        "Not a directory (none of the 6 files written, the previous "
        "ones unchanged)"
    )
