"""The configuration-time check on the run path: a scenario whose workload needs what its
scheduler ignores is refused before any simulation (the market auctions on a burst-buffer
market workload, accelerators under the market rule); rigid schedulers run the market
rule's moldable jobs at their requested size across nodes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from market_hpc.errors import ConfigError
from market_hpc.experiment.config import load_scenario
from market_hpc.experiment.run import simulate

TRACE = Path(__file__).resolve().parent.parent / "traces" / "lf-kth-like-2000.swf"


def scenario(tmp_path: Path, scheduler: str, extra: str = "") -> Path:
    path = tmp_path / "run.toml"
    path.write_text(f"""name = "composition"
platform = "kth-sp2"
seed = 1
timeseries = false

[workload]
trace = "{TRACE}"
first_n = 60
market = true
{extra}
[policy]
scheduler = "{scheduler}"
""")
    return path


BB = """
[workload.burst_buffer]
scenario = "S1"
machine = "theta"
"""


def test_market_auction_on_a_burst_buffer_market_workload_is_refused_before_the_run(tmp_path: Path) -> None:
    config = load_scenario(scenario(tmp_path, "maxvh", BB))
    with pytest.raises(ConfigError, match=re.escape("scheduler 'maxvh' cannot run this workload: it ignores the "
                                                    "burst buffer, requested by ")) as refused:
        simulate(config)
    message = str(refused.value)
    assert re.search(r"requested by \d+ jobs \(e\.g\. job \d+\) \(handled by: bb-baseline, .*easy, .*fifo", message)
    assert "maxv," not in message.split("handled by:")[1]


def test_rigid_scheduler_runs_market_jobs_at_their_requested_size(tmp_path: Path) -> None:
    result = simulate(load_scenario(scenario(tmp_path, "fifo", BB)))
    frame = result.jobs
    assert set(frame["status"]) <= {"finished", "rejected"}
    assert frame["nodes"].str.contains(";").any()  # jobs wider than a KTH node span nodes


def test_the_market_rule_names_the_alternative_for_accelerator_jobs() -> None:
    from market_hpc.domain.job import Job
    from market_hpc.workload.market_rule import apply_market_rule

    with pytest.raises(ConfigError, match=re.escape(
        "job 1: the market rule needs plain processor requests, got unit (2, 1, 0, 3072) (cores per unit, GPUs, "
        "memory); the market auctions place single cores only: run this workload without workload.market, under "
        "a scheduler that handles them (market-hpc policies lists what each scheduler handles)"
    )):
        apply_market_rule([Job(1, 0.0, 10.0, 10.0, units=2, unit=(2, 1, 0, 3072))])


def test_a_streamed_replay_refuses_a_market_scheduler_before_the_run(tmp_path: Path) -> None:
    from market_hpc.experiment.streaming import can_stream, simulate_streaming

    config = load_scenario(_plain(scenario(tmp_path, "maxvh")))
    assert not can_stream(config)  # read whole, so the refusal counts the jobs
    with pytest.raises(ConfigError, match=re.escape(
        "scheduler 'maxvh' cannot run this workload: it does not run rigid jobs (no speedup profile): 60 jobs "
        "(e.g. job ")):
        simulate_streaming(config)


def _plain(path: Path) -> Path:
    path.write_text(path.read_text().replace("market = true", "market = false"))
    return path
