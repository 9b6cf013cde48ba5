"""Scenario configuration: validation at the boundary with precise errors."""

from __future__ import annotations

import pytest

from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.experiment.config import config_from_dict, load_scenario, parse_value

pytestmark = pytest.mark.smoke

BASE = {"workload": {"generator": "lublin-feitelson", "jobs": 50}}


def test_defaults_and_round_trip():
    config = config_from_dict(BASE)
    assert config.policy.scheduler == "fifo" and config.seed == 0 and config.platform == "kth-sp2"
    assert config_from_dict(config.to_dict()) == config


def test_unknown_top_level_key_lists_valid_keys():
    with pytest.raises(UnknownNameError) as info:
        config_from_dict({**BASE, "sead": 1})
    assert str(info.value) == (
        "unknown config key 'sead'; valid choices: exclusive, name, platform, policy, queues, "
        "seed, timeseries, workload"
    )


def test_unknown_nested_key_names_its_path():
    with pytest.raises(
        UnknownNameError,
        match=r"unknown config key 'policy.schedular'; valid choices: "
        r"policy.allocator, policy.bidder, policy.every_step, policy.hold_penalty, "
        r"policy.hold_progress_loss, "
        r"policy.params, policy.predictor, policy.resume_seconds, "
        r"policy.scheduler",
    ):
        config_from_dict({**BASE, "policy": {"schedular": "easy"}})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({**BASE, "seed": "one"}, "seed: expected int, got 'one'"),
        ({**BASE, "seed": True}, "seed: expected int, got True"),
        (
            {"workload": {"generator": "lublin-feitelson", "load_factor": 0}},
            "workload.load_factor: got 0.0; valid: a finite number > 0",
        ),
        ({"workload": {}}, "workload needs exactly one of trace, jobset or generator; got none"),
        (
            {"workload": {"trace": "a.swf", "generator": "taskgraphs"}},
            (
                "workload needs exactly one of trace, jobset or generator; got trace='a.swf', "
                "generator='taskgraphs'"
            ),
        ),
        (
            {**BASE, "policy": {"hold_penalty": 1.5}},
            "policy.hold_penalty: got 1.5; valid: a finite number in [0, 1]",
        ),
        (
            {"workload": {"generator": "kit", "load_factor": float("nan")}},
            "workload.load_factor: got nan; valid: a finite number",
        ),
        (
            {**BASE, "policy": {"resume_seconds": float("inf")}},
            "policy.resume_seconds: got inf; valid: a finite number",
        ),
        (
            {**BASE, "policy": {"resume_seconds": 2.0**51}},
            (
                "policy.resume_seconds: got 2251799813685248.0; valid: a finite number in [0, 2^50 "
                "(1.1e15 s)]"
            ),
        ),
        ({**BASE, "seed": -1}, "seed: got -1; valid: an integer in [0, 2^53 - 1]"),
        (
            {**BASE, "policy": {"window": {"mutation": 2.0}}},
            "policy.window.mutation: got 2.0; valid: a finite number in [0, 1]",
        ),
        ({"platform": "kth-sp2"}, "scenario needs a [workload] table (trace, jobset or generator)"),
        ({**BASE, "policy": "easy"}, "policy: expected a table, got 'easy'"),
    ],
)
def test_bad_values(data, message):
    with pytest.raises(ConfigError) as info:
        config_from_dict(data)
    assert str(info.value) == message


def test_unknown_generator():
    with pytest.raises(
        UnknownNameError,
        match="unknown workload.generator 'lf'; valid choices: eurora, kit, lublin-feitelson, "
        "taskgraphs",
    ):
        config_from_dict({"workload": {"generator": "lf"}})


def test_scenario_file_relative_trace_and_overrides(tmp_path):
    (tmp_path / "sub").mkdir()
    scenario = tmp_path / "sub" / "s.toml"
    scenario.write_text(
        'platform = "hpc2n"\n[workload]\ntrace = "t.swf"\n[policy]\nscheduler = "easy"\n'
    )
    config = load_scenario(scenario, {"policy.allocator": "best-fit", "seed": 4})
    assert config.workload.trace == str((tmp_path / "sub" / "t.swf").resolve())
    assert (config.policy.allocator, config.seed, config.platform) == ("best-fit", 4, "hpc2n")


def test_scenario_file_errors(tmp_path):
    with pytest.raises(
        ConfigError, match=r"cannot read scenario .*nope.toml: No such file or directory"
    ):
        load_scenario(tmp_path / "nope.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("platform = \n")
    with pytest.raises(ConfigError, match=r"broken.toml: invalid TOML"):
        load_scenario(broken)


def test_a_scenario_saved_with_a_byte_order_mark_reads_as_without(tmp_path):
    text = (
        'name = "s"\nplatform = "hpc2n"\n[workload]\ngenerator = '
        '"lublin-feitelson"\n[policy]\nscheduler = "easy"\n'
    )
    plain, marked = tmp_path / "plain.toml", tmp_path / "marked.toml"
    plain.write_text(text)
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_scenario(marked) == load_scenario(plain)


def test_parse_value():
    assert parse_value("3") == 3 and parse_value("0.25") == 0.25 and parse_value("false") is False
    assert parse_value("best-fit") == "best-fit"


def test_a_market_schedulers_penalty_is_policy_hold_penalty_only():
    with pytest.raises(ConfigError) as refused:
        config_from_dict({**BASE, "policy": {"scheduler": "maxvh", "params": {"penalty": 0.2}}})
    assert str(refused.value) == (
        "policy.params.penalty is not a scenario key (scheduler 'maxvh'); use policy.hold_penalty "
        "= 0.2: "
        "it is both the penalty the policy decides with and the one each hold is charged"
    )
    assert (
        config_from_dict(
            {**BASE, "policy": {"scheduler": "maxvh", "hold_penalty": 0.2}}
        ).policy.hold_penalty
        == 0.2
    )


@pytest.mark.parametrize(
    ("scheduler", "params", "message"),
    [
        (
            "bbsched",
            {"population": 1_000_000},
            (
                "scheduler 'bbsched': policy.params.population = 1000000 is invalid; valid: an "
                "integer "
                "in [2, 1000]"
            ),
        ),
        (
            "bbsched",
            {"generations": 10_000_000},
            (
                "scheduler 'bbsched': policy.params.generations = 10000000 is invalid; valid: an "
                "integer in [0, 100000]"
            ),
        ),
        (
            "bbsched",
            {"generations": 5_000, "population": 1000},
            (
                "scheduler 'bbsched': generations x population = 5,000 x 1,000 = 5,000,000 "
                "chromosome-generations per "
                "GA solve (about 50 s at 10 us each); at most 1,000,000 (100 x the paper's 500 x "
                "20)"
            ),
        ),
        (
            "pcp19",
            {"workers": 1024},
            (
                "scheduler 'pcp19': policy.params.workers = 1024 is invalid; valid: an integer in "
                "[1, "
                "64]"
            ),
        ),
        (
            "pcp19",
            {"deterministic_time": 86_400.0},
            (
                "scheduler 'pcp19': policy.params.deterministic_time = 86400.0 is invalid; valid: "
                "a finite number "
                "> 0 and <= 60"
            ),
        ),
        (
            "pcp19",
            {"deterministic_time": 30.0},
            (
                "scheduler 'pcp19': policy.params allow up to 930 s of solver time per decision "
                "(30 s x (1 + 2 + 4 + 8 + "
                "16)); at most 600 s (lower deterministic_time, wall_seconds or max_retries, or "
                "set decision_budget)"
            ),
        ),
        (
            "pcp20",
            {"max_retries": 100, "time_control": "paper"},
            (
                "scheduler 'pcp20': policy.params allow up to 2,626 s of solver time per decision "
                "(100 retries of 1 s + "
                "0.5 s per retry); at most 600 s (lower deterministic_time, wall_seconds or "
                "max_retries, or set "
                "decision_budget)"
            ),
        ),
    ],
)
def test_parameters_that_bound_work_have_ranges_a_run_finishes_within(scheduler, params, message):
    with pytest.raises(ConfigError) as refused:
        config_from_dict({**BASE, "policy": {"scheduler": scheduler, "params": params}})
    assert str(refused.value) == message


def test_work_bounds_keep_the_papers_settings_and_count_policy_window():
    for scheduler, params in (
        ("pcp20", {"time_control": "paper"}),
        ("pcp19", {"deterministic_time": 1.0}),
        ("pcp19", {"deterministic_time": 30.0, "decision_budget": 5.0}),
        ("bbsched", {"generations": 500, "population": 20}),
    ):
        config_from_dict({**BASE, "policy": {"scheduler": scheduler, "params": params}})
    with pytest.raises(
        ConfigError, match=r"^scheduler 'bbsched': generations x population = 100,000 x 20 = "
    ):
        config_from_dict(
            {**BASE, "policy": {"scheduler": "bbsched", "window": {"generations": 100_000}}}
        )
    with pytest.raises(
        ConfigError, match=r"^policy.window.population: got 5000; valid: an integer in \[2, 1000\]$"
    ):
        config_from_dict(
            {**BASE, "policy": {"scheduler": "bbsched", "window": {"population": 5000}}}
        )
