"""Policy plugins (entry point group ``market_hpc.policies``): the example package under
``examples/market-hpc-plugin-example`` (installed by ./run-tests) reaches the CLI, scenario
files, sweeps in process and on Dask, and the browser view's policy list; broken plugins
(real ``EntryPoint`` objects pointing at modules in tests/) fail naming themselves and
leave every other policy working."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pandas as pd
import pytest

from market_hpc import HPCModel, Job, lublin_feitelson, make_policy, read_swf, write_swf
from market_hpc.cli import main
from market_hpc.errors import PluginError, UnknownNameError
from market_hpc.experiment.sweep import run_sweep
from market_hpc.policies import plugins, registry
from market_hpc.policies.plugins import GROUP, PluginWarning

EXAMPLE = "market-hpc-plugin-example"
ENTRY_POINTS = [ep for ep in metadata.entry_points(group=GROUP) if ep.name == "example"]
if not ENTRY_POINTS:
    pytest.fail(
        f"the example plugin is not installed: pip install -e examples/{EXAMPLE} "
        "(./run-tests does)",
        pytrace=False,
    )


def test_the_installed_example_plugin_is_loaded_with_its_package_named() -> None:
    assert "saf" in registry.scheduler_names() and "fullest-node" in registry.bidder_names()
    assert "example = market_hpc_plugin_example.policies" in plugins.loaded_plugins()
    assert plugins._distribution(ENTRY_POINTS[0]) == f"{EXAMPLE} 0.1.0"
    assert registry.allocators_for("saf") == ["best-fit", "first-fit"]
    # the conformance suite (tests/test_conformance.py) runs every registered pair: plugins too
    from market_hpc.testing import registered_pairs

    assert {("saf", "best-fit"), ("saf", "first-fit")} <= set(registered_pairs(market=False))


def test_the_plugins_scheduler_passes_the_conformance_checks_as_a_class_too() -> None:
    # By name it runs in tests/test_conformance.py with each allocator; here as a plugin
    # author's test would hand over its class (the undeclared capabilities: every resource).
    from market_hpc_plugin_example.policies import SmallestAreaFirst

    from market_hpc.testing import check_policy

    assert check_policy(SmallestAreaFirst, "best-fit") == [
        "check_decisions_are_executable",
        "check_decisions_are_executable_exclusive",
        "check_decide_does_not_mutate_the_view",
        "check_decide_does_not_mutate_the_view_exclusive",
        "check_same_seed_same_results",
    ]


def test_saf_starts_the_smallest_estimated_area_first_and_skips_what_does_not_fit() -> None:
    # Four single-core nodes, three jobs at t=0. Areas: A 4x10=40, B 1x100=100, C 2x10=20.
    # SAF: C (2 nodes), then A does not fit (needs 4, 2 free) and is skipped, B starts.
    # FIFO starts A alone.
    jobs = [
        Job(1, 0.0, 10.0, 10.0, units=4),
        Job(2, 0.0, 100.0, 100.0, units=1),
        Job(3, 0.0, 10.0, 10.0, units=2),
    ]
    starts = {}
    for scheduler in ("saf", "fifo"):
        model = HPCModel(jobs, "nodes=4,cores=1", scheduler)
        model.run()
        frame = model.jobs_frame().set_index("job_id")
        starts[scheduler] = frame["start_time"].to_dict()
    assert starts["saf"] == {1: 100.0, 2: 0.0, 3: 0.0}
    assert starts["fifo"] == {1: 0.0, 2: 10.0, 3: 10.0}


def test_the_fullest_node_bidder_packs_where_free_cores_spreads() -> None:
    # Two 4-core nodes; a 3-core job runs on node 0, then 1-core market jobs arrive.
    # free-cores bids 1 and 4: they go to node 1; fullest-node bids 1 and 1/4: node 0.
    from market_hpc.workload.market_rule import apply_market_rule

    jobs = apply_market_rule([Job(1, 0.0, 100.0, 100.0, units=3), Job(2, 1.0, 10.0, 10.0, units=1)])
    nodes = {}
    for bidder in ("free-cores", "fullest-node"):
        model = HPCModel(jobs, "nodes=2,cores=4", "maxv", bidder=registry.make_bidder(bidder))
        model.run()
        nodes[bidder] = model.jobs_frame().set_index("job_id")["nodes"].to_dict()
    assert nodes["free-cores"][1] == nodes["fullest-node"][1] == "0:3"
    assert nodes["free-cores"][2] == "1:1" and nodes["fullest-node"][2] == "0:1"


def _trace(tmp_path: Path) -> Path:
    trace = tmp_path / "trace.swf"
    write_swf(lublin_feitelson(n_jobs=150, max_procs=16, seed=5, load_factor=2.0), trace)
    return trace


def test_the_cli_replays_with_the_plugin_scheduler_and_bidder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path)
    assert (
        main(
            [
                "replay",
                str(trace),
                "--platform",
                "nodes=16,cores=1",
                "--scheduler",
                "saf",
                "--out",
                str(tmp_path / "saf"),
            ]
        )
        == 0
    )
    model = HPCModel(read_swf(trace).jobs, "nodes=16,cores=1", "saf")
    model.run()
    written = pd.read_csv(tmp_path / "saf" / "jobs.csv")
    assert written["start_time"].tolist() == model.jobs_frame()["start_time"].tolist()
    placed = {}
    for bidder in ("free-cores", "fullest-node"):  # --bidder reaches the auction through the config
        assert (
            main(
                [
                    "replay",
                    str(trace),
                    "--platform",
                    "nodes=4,cores=4",
                    "--scheduler",
                    "maxvh",
                    "--bidder",
                    bidder,
                    "--out",
                    str(tmp_path / bidder),
                ]
            )
            == 0
        )
        placed[bidder] = pd.read_csv(tmp_path / bidder / "jobs.csv")["nodes"].tolist()
    assert placed["free-cores"] != placed["fullest-node"]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert re.search(r"--scheduler SCHEDULER one of .*\bsaf\b", text)
    assert re.search(r"--bidder BIDDER .*\bfullest-node\b", text)


SWEEP = """
platform = "nodes=16,cores=1"
timeseries = false
workload = {{ trace = "{trace}" }}
policy = {{ scheduler = "easy" }}
seeds = 1
[grid]
"policy.scheduler" = ["easy", "saf"]
"""


def test_a_sweep_runs_the_plugin_in_process_and_on_dask(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(SWEEP.format(trace=_trace(tmp_path)))
    local = run_sweep(sweep, tmp_path / "local", progress=False)
    assert local.done == 2
    rows = pd.read_parquet(tmp_path / "local" / "results.parquet").set_index("scheduler")
    assert rows.loc["saf", "status"] == "ok" and rows.loc["saf", "jobs_completed"] == 150
    assert rows.loc["saf", "mean_wait"] != rows.loc["easy", "mean_wait"]
    pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed")
    # One worker process: it finds the plugin through its own entry points.
    on_dask = run_sweep(sweep, tmp_path / "dask", dask="local:1", progress=False)
    assert on_dask.done == 2
    remote = pd.read_parquet(tmp_path / "dask" / "results.parquet").set_index("scheduler")
    assert remote.loc["saf", "mean_wait"] == rows.loc["saf", "mean_wait"]


def test_an_unknown_bidder_fails_before_a_sweep_runs_and_the_default_keeps_run_ids(
    tmp_path: Path,
) -> None:
    from market_hpc import config_from_dict
    from market_hpc.experiment.sweep_spec import SweepError

    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        SWEEP.format(trace=_trace(tmp_path)).replace(
            'scheduler = "easy" }', 'scheduler = "maxvh", bidder = "nope" }'
        )
    )
    with pytest.raises(
        SweepError, match=r"unknown bidder 'nope'; valid choices: energy, free-cores, fullest-node"
    ):
        run_sweep(sweep, tmp_path / "out", progress=False)
    # a config without a bidder hashes as before bidders were configurable (sweeps resume)
    assert (
        "bidder"
        not in config_from_dict(
            {"platform": "kth-sp2", "workload": {"generator": "kit"}}
        ).to_dict()["policy"]
    )
    assert (
        config_from_dict(
            {
                "platform": "kth-sp2",
                "workload": {"generator": "kit"},
                "policy": {"bidder": "energy"},
            }
        ).to_dict()["policy"]["bidder"]
        == "energy"
    )


def test_the_browser_view_lists_the_plugin_scheduler() -> None:
    pytest.importorskip("solara", reason="the viz extra is not installed")
    from visualization.app import model_params

    assert "saf" in model_params("")["policy"]["values"]  # type: ignore[index]


# ---------------------------------------------------------------- broken plugins
def _entry_point(name: str, value: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name=name, value=value, group=GROUP)


@pytest.fixture
def fresh_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "_FAILURES", [])
    monkeypatch.setattr(plugins, "_LOADED", [])


@pytest.mark.usefixtures("fresh_failures")
def test_broken_plugins_fail_naming_themselves_and_the_rest_keep_working() -> None:
    easy = registry.scheduler_entry("easy").factory
    broken = [
        _entry_point("missing-dep", "plugin_import_error"),
        _entry_point("not-a-policy", "plugin_cases:NOT_A_POLICY"),
        _entry_point("duplicate", "plugin_cases:register_a_duplicate"),
        _entry_point("empty", "plugin_cases:register_nothing"),
        _entry_point("no-such-module", "plugin_cases_absent"),
    ]
    good = _entry_point("fine", "plugin_cases:register_fine")
    with pytest.warns(PluginWarning) as caught:
        failures = plugins.load_plugins(registry, [*broken, good])
    messages = sorted(str(failure) for failure in failures)
    assert sorted(str(w.message) for w in caught) == messages
    assert messages == [
        (
            "policy plugin 'duplicate = plugin_cases:register_a_duplicate': scheduler 'easy' is "
            "already "
            "registered (its factory: market_hpc.policies.classic.Easy)"
        ),
        (
            "policy plugin 'empty = plugin_cases:register_nothing': registered no scheduler, "
            "allocator "
            "or bidder"
        ),
        (
            "policy plugin 'missing-dep = plugin_import_error': ImportError: No module named "
            "'solver_we_do_not_have'"
        ),
        (
            "policy plugin 'no-such-module = plugin_cases_absent': ModuleNotFoundError: No module "
            "named "
            "'plugin_cases_absent'"
        ),
        (
            "policy plugin 'not-a-policy = plugin_cases:NOT_A_POLICY': names a dict; it must name "
            "a module or a "
            "function that registers policies"
        ),
    ]
    assert all(isinstance(failure, PluginError) for failure in failures)
    # the good plugin loaded; the half-registered one was undone; the built-ins are intact
    assert plugins.loaded_plugins() == ["fine = plugin_cases:register_fine"]
    assert (
        "fifo-again" in registry.scheduler_names()
        and "half-registered" not in registry.scheduler_names()
    )
    assert registry.scheduler_entry("easy").factory is easy
    assert make_policy("easy", "first-fit").name == "easy+first-fit"
    assert make_policy("saf").name == "saf+first-fit"
    with pytest.raises(
        UnknownNameError,
        match=r"unknown scheduler 'half-registered'; valid choices: .*; "
        r"plugins that failed to load: policy plugin 'duplicate = .*",
    ):
        registry.scheduler_entry("half-registered")
    del registry.SCHEDULERS["fifo-again"]


def test_a_plugin_whose_factory_builds_no_policy_fails_when_built() -> None:
    from market_hpc.errors import ConfigError

    registry.register_scheduler("not-a-policy", "returns a string")(lambda allocator: "nothing")
    try:
        with pytest.raises(
            ConfigError,
            match=r"scheduler 'not-a-policy' \(test_plugins\): its factory returned "
            r"a str, which has no decide\(view, rng\) method",
        ):
            make_policy("not-a-policy")
    finally:
        del registry.SCHEDULERS["not-a-policy"]
