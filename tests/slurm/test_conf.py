"""Reading a slurm.conf: the modelled keys, [policy.params] over them, unmodelled keys
listed once in summary.json, and an unreadable key an error naming file and line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from market_hpc.errors import ConfigError
from market_hpc.experiment.config import load_scenario
from market_hpc.policies import make_policy
from market_hpc.policies.slurm.conf import read_slurm_conf, slurm_time

SITE = """# a site's scheduling section
ClusterName=site
SlurmctldHost=head
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairShare=10000
PriorityWeightJobSize=100
PriorityWeightPartition=500
PriorityWeightQOS=20
PriorityMaxAge=7-0
PriorityDecayHalfLife=14-0
PriorityFavorSmall=YES
PriorityCalcPeriod=2
PriorityFlags=NO_FAIR_TREE,SMALL_RELATIVE_TO_TIME
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=60,bf_window=2880,bf_resolution=300,\\
bf_max_job_test=1000,bf_max_job_start=50,bf_continue,bf_busy_nodes
NodeName=c[01-04] CPUs=32 RealMemory=128000
NodeName=g01 CPUs=32 Gres=gpu:4
PartitionName=batch Nodes=c[01-04] Default=YES MaxTime=2-00:00:00 PriorityTier=1 PriorityJobFactor=1
PartitionName=gpu Nodes=g01 MaxTime=720 PriorityTier=2 PriorityJobFactor=4 OverSubscribe=NO
PreemptType=preempt/partition_prio
PreemptMode=SUSPEND,GANG
"""


def test_the_modelled_keys_become_parameters(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(SITE)
    read = read_slurm_conf(conf)
    assert read.params == {
        "priority_type": "multifactor",
        "weight_age": 1000,
        "weight_fairshare": 10000,
        "weight_job_size": 100,
        "weight_partition": 500,
        "weight_qos": 20,
        "max_age": 604800.0,
        "decay_half_life": 1209600.0,
        "favor_small": True,
        "calc_period": 120.0,
        "scheduler_type": "backfill",
        "bf_interval": 60.0,
        "bf_window": 172800.0,
        "bf_resolution": 300.0,
        "bf_max_job_test": 1000,
        "bf_max_job_start": 50,
        "bf_continue": True,
        "preempt": True,
        "preempt_mode": "suspend",
    }
    batch, gpu = read.partitions
    assert (batch.name, batch.nodes, batch.max_time, batch.priority_tier, batch.default) == (
        "batch",
        (0, 1, 2, 3),
        172800.0,
        1,
        True,
    )
    assert (gpu.name, gpu.nodes, gpu.max_time, gpu.priority_tier, gpu.priority_job_factor) == (
        "gpu",
        (4,),
        43200.0,
        2,
        4,
    )
    assert read.unmodelled == (
        "ClusterName",
        "SlurmctldHost",
        "PriorityFlags=SMALL_RELATIVE_TO_TIME",
        "SchedulerParameters:bf_busy_nodes",
        "NodeName.realmemory",
        "NodeName.gres",
        "PreemptMode=GANG",
        "PartitionName.oversubscribe",
    )


def test_params_override_the_conf(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(SITE)
    policy = make_policy(
        "slurm", scheduler_params={"slurm_conf": str(conf), "bf_interval": 5.0, "weight_age": 0}
    )
    assert (
        policy.settings.bf_interval,
        policy.settings.weights.age,
        policy.settings.weights.fairshare,
    ) == (5.0, 0, 10000)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "PriorityWeightAge=lots",
            "slurm.conf:2: PriorityWeightAge=lots is invalid; valid: an integer in [0, 4294967295]",
        ),
        (
            "PriorityType=priority/fancy",
            (
                "slurm.conf:2: PriorityType=priority/fancy is invalid; valid: one of "
                "priority/basic, priority/multifactor"
            ),
        ),
        (
            "PriorityMaxAge=soon",
            (
                "slurm.conf:2: PriorityMaxAge=soon is invalid; valid: "
                "[days-]hours:minutes[:seconds] "
                "or minutes"
            ),
        ),
        (
            "SchedulerParameters=bf_window=-3",
            (
                "slurm.conf:2: SchedulerParameters:bf_window=-3 is invalid; valid: an "
                "integer in [1, 4294967295]"
            ),
        ),
        (
            "PartitionName=p Nodes=x[1-2]",
            (
                "slurm.conf:2: PartitionName=p Nodes=x[1-2] is invalid; valid: names from "
                "the NodeName lines: n1"
            ),
        ),
        (
            "PartitionName=p MaxTime=forever",
            (
                "slurm.conf:2: PartitionName=p MaxTime=forever is invalid; valid: minutes, "
                "[days-]hours:minutes:seconds or UNLIMITED"
            ),
        ),
        ("just words", "slurm.conf:2: 'just' is not a Key=value setting"),
    ],
)
def test_an_unreadable_key_names_file_and_line(tmp_path, line, message):
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"NodeName=n1 CPUs=4\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        read_slurm_conf(conf)
    assert str(caught.value) == f"{tmp_path}/{message}"


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(
        ConfigError, match=r"^policy.slurm_conf: cannot read '.*nope.conf': No such file"
    ):
        read_slurm_conf(tmp_path / "nope.conf")


def test_times():
    assert [slurm_time(t) for t in ("30", "0:30", "1:00:00", "1-12", "2-00:00:00")] == [
        1800.0,
        30.0,
        3600.0,
        129600.0,
        172800.0,
    ]
    assert math.isinf(slurm_time("INFINITE"))


def scenario(tmp_path: Path, policy: str) -> Path:
    trace = Path(__file__).resolve().parents[2] / "traces" / "lf-kth-like-2000.swf"
    path = tmp_path / "run.toml"
    path.write_text(
        f'name = "s"\nplatform = "nodes=8,cores=4"\n[workload]\ntrace = "{trace}"\nfirst_n = 60\n'
        f"[policy]\n{policy}\n"
    )
    return path


def test_a_scenario_reads_its_slurm_conf_relative_to_itself(tmp_path):
    (tmp_path / "site.conf").write_text(
        "PriorityType=priority/multifactor\nPriorityWeightAge=10\nFoo=1\n"
    )
    config = load_scenario(
        scenario(
            tmp_path,
            'scheduler = "slurm"\nslurm_conf = "site.conf"\n[policy.params]\nweight_age = 5',
        )
    )
    assert config.policy.slurm_conf == str(tmp_path / "site.conf")
    assert config.policy.params == {"slurm_conf": str(tmp_path / "site.conf"), "weight_age": 5}


def test_slurm_conf_needs_the_slurm_scheduler(tmp_path):
    (tmp_path / "site.conf").write_text("PriorityWeightAge=10\n")
    with pytest.raises(
        ConfigError,
        match=r"^policy.slurm_conf: only scheduler 'slurm' reads a slurm.conf; "
        r"policy.scheduler is 'easy'$",
    ):
        load_scenario(scenario(tmp_path, 'scheduler = "easy"\nslurm_conf = "site.conf"'))


def test_a_bad_line_fails_when_the_scenario_is_read(tmp_path):
    (tmp_path / "site.conf").write_text("PriorityWeightAge=10\nPriorityFavorSmall=maybe\n")
    with pytest.raises(
        ConfigError,
        match=r"site.conf:2: PriorityFavorSmall=maybe is invalid; valid: one of yes, no$",
    ):
        load_scenario(scenario(tmp_path, 'scheduler = "slurm"\nslurm_conf = "site.conf"'))


def test_cli_run_lists_the_unmodelled_keys_once_in_the_summary(tmp_path):
    from market_hpc.cli.commands import main

    (tmp_path / "site.conf").write_text(
        "ClusterName=a\nPriorityType=priority/multifactor\nPriorityWeightAge=10\n"
        "SchedulerParameters=bf_interval=10,bf_yield_interval=5\nClusterName=b\n"
    )
    code = main(
        [
            "run",
            str(scenario(tmp_path, 'scheduler = "slurm"\nslurm_conf = "site.conf"')),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code in (0, None)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["slurm_conf_unmodelled_keys"] == [
        "ClusterName",
        "SchedulerParameters:bf_yield_interval",
    ]
    assert (
        summary["jobs_completed"] + summary["jobs_rejected"] == 60
        and summary["jobs_completed"] > 50
    )


def test_cli_run_exits_2_naming_the_bad_line(tmp_path, capsys):
    from market_hpc.cli.commands import main

    (tmp_path / "site.conf").write_text("PriorityWeightJobSize=-1\n")
    code = main(
        [
            "run",
            str(scenario(tmp_path, 'scheduler = "slurm"\nslurm_conf = "site.conf"')),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "site.conf:1: PriorityWeightJobSize=-1 is invalid" in err[0]
