"""The configuration-time check on the run path: a scenario whose workload needs what its
scheduler ignores is refused before any simulation (a market scheduler on rigid jobs);
rigid schedulers run the market rule's moldable jobs at their requested size across nodes;
and the market auctions run what they now account for (issue 34): burst-buffer requests,
GPU and MIC jobs on ``eurora``, trace jobs across KTH's one-core nodes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from market_hpc.errors import ConfigError
from market_hpc.experiment.config import load_scenario
from market_hpc.experiment.run import simulate

TRACE = Path(__file__).resolve().parent.parent / "traces" / "lf-kth-like-2000.swf"


def scenario(tmp_path: Path, scheduler: str, extra: str = "", first_n: int = 60) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(f"""name = "composition"
platform = "kth-sp2"
seed = 1
timeseries = false

[workload]
trace = "{TRACE}"
first_n = {first_n}
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


MARKET = ("sjq", "sjqh", "maxv", "maxvh", "maxvd", "maxvdh", "minvr", "minvrh", "maxvlh")
"""The seed 002 auctions of the issue 34 study, and one look-ahead variant."""


def market_runs(
    config_text: Path, schedulers: tuple[str, ...] = MARKET
) -> dict[str, tuple[list, object]]:
    """Each scheduler on one built workload: its jobs frame and segments, the invariants
    checked (``assert_schedule_invariants`` with the segment audit)."""
    from invariants import assert_schedule_invariants

    from market_hpc.domain.platform import load_platform
    from market_hpc.experiment.run import build_workload
    from market_hpc.workload.burst_buffer import with_capacity

    base = load_scenario(config_text)
    platform = with_capacity(load_platform(base.platform), base.workload.burst_buffer)
    jobs, _ = build_workload(base, platform)
    platform = with_capacity(platform, base.workload.burst_buffer, jobs)
    out = {}
    text = config_text.read_text()
    for scheduler in schedulers:
        config_text.write_text(
            text.replace(f'scheduler = "{base.policy.scheduler}"', f'scheduler = "{scheduler}"')
        )
        result = simulate(
            load_scenario(config_text), jobs=jobs
        )  # a mid-run refusal raises PolicyError here
        assert_schedule_invariants(jobs, result.jobs, platform, segments=result.segments)
        out[scheduler] = (jobs, result)
    return out


S4 = """load_factor = 1.5

[workload.burst_buffer]
scenario = "S4"
machine = "theta"
target_load = 0.9
"""


def test_market_auctions_run_a_burst_buffer_workload_on_the_traces_platform(tmp_path: Path) -> None:
    """(a) A KTH-like slice at 1.5x its load with S4 burst-buffer requests, the pool sized
    for a 0.9 offered load, on KTH's 100 one-core nodes: every auction runs it through (no
    start the core refuses), every invariant holds, the burst buffer is used while jobs
    span nodes, and the holding variants hold jobs (freeing their burst buffer too)."""
    runs = market_runs(scenario(tmp_path, "maxvh", S4, first_n=120))
    for scheduler, (jobs, result) in runs.items():
        frame = result.jobs
        started = frame[frame["start_time"].notna()]
        assert (started["bb"] > 0).any(), scheduler
        assert started["nodes"].str.contains(";").any(), scheduler  # jobs span KTH's one-core nodes
        assert set(frame["status"]) <= {"finished", "dropped"}, scheduler
    assert all(
        result.summary["holds"]
        for scheduler, (_, result) in runs.items()
        if scheduler.endswith("h")
    )


def test_rigid_scheduler_runs_market_jobs_at_their_requested_size(tmp_path: Path) -> None:
    result = simulate(load_scenario(scenario(tmp_path, "fifo", BB)))
    frame = result.jobs
    assert set(frame["status"]) <= {"finished", "rejected"}
    assert frame["nodes"].str.contains(";").any()  # jobs wider than a KTH node span nodes


def test_the_market_rule_makes_accelerator_jobs_moldable_over_their_units() -> None:
    from market_hpc.domain.job import Job
    from market_hpc.workload.market_rule import apply_market_rule

    (job,) = apply_market_rule([Job(1, 0.0, 10.0, 10.0, units=2, unit=(2, 1, 0, 3072))])
    assert job.unit == (2, 1, 0, 3072) and len(job.profile) == 2 and job.profile[-1] == 10.0
    assert job.payload["c_star"] == 2 and job.payload["spans_nodes"]
    assert job.payload["value_curve"].max_value == 4 * 10.0 / 3600  # the 4 cores it asked for


EURORA = """name = "composition"
platform = "eurora"
seed = 1
timeseries = false

[workload]
generator = "eurora"
jobs = 150
market = true

[policy]
scheduler = "maxvh"
"""


def test_market_auctions_run_gpu_and_mic_jobs_on_eurora(tmp_path: Path) -> None:
    """(b) Eurora-like jobs (units of cores + GPUs or MICs + memory) under the market rule
    on the ``eurora`` platform (32 GPU nodes, 32 MIC nodes): accepted before the run (the
    auctions handle GPUs, MICs and memory), run through with every invariant holding;
    accelerator jobs run on the nodes that have their accelerators."""
    path = tmp_path / "run.toml"
    path.write_text(EURORA)
    for scheduler, (jobs, result) in market_runs(path).items():
        frame = result.jobs.set_index("job_id")
        by_id = {job.job_id: job for job in jobs}
        ran = frame[frame["start_time"].notna()]
        gpu_jobs = [job_id for job_id in ran.index if by_id[job_id].unit[1] > 0]
        mic_jobs = [job_id for job_id in ran.index if by_id[job_id].unit[2] > 0]
        assert gpu_jobs, (
            scheduler
        )  # MIC jobs are 0.7 % of Eurora's: the composition matrix has some
        for job_id in gpu_jobs:  # GPU nodes are 0..31, MIC nodes 32..63
            assert all(
                int(item.split(":")[0]) < 32 for item in ran.loc[job_id, "nodes"].split(";")
            ), scheduler
        for job_id in mic_jobs:
            assert all(
                int(item.split(":")[0]) >= 32 for item in ran.loc[job_id, "nodes"].split(";")
            ), scheduler


def test_market_auctions_grow_trace_jobs_across_one_core_nodes(tmp_path: Path) -> None:
    """(c) Trace jobs on their real platform, KTH's 100 one-core nodes (no pooling into one
    node): a job's width is the cores of several nodes' bids together, up to its request
    (its profile read at that total), so jobs wider than one core start on several nodes."""
    runs = market_runs(scenario(tmp_path, "maxv"), ("sjq", "maxv", "minvrh", "maxvlh"))
    for scheduler, (jobs, result) in runs.items():
        frame = result.jobs.set_index("job_id")
        ran = frame[frame["start_time"].notna()]
        widths = ran["nodes"].map(
            lambda text: sum(int(item.split(":")[1]) for item in text.split(";"))
        )
        assert (widths > 1).any(), scheduler
        assert (ran["units"] == widths).all(), (
            scheduler
        )  # the recorder counts units over every node
        by_id = {job.job_id: job for job in jobs}
        assert all(widths[job_id] <= len(by_id[job_id].profile) for job_id in ran.index), scheduler


def test_a_streamed_replay_refuses_a_market_scheduler_before_the_run(tmp_path: Path) -> None:
    from market_hpc.experiment.streaming import can_stream, simulate_streaming

    config = load_scenario(_plain(scenario(tmp_path, "maxvh")))
    assert not can_stream(config)  # read whole, so the refusal counts the jobs
    with pytest.raises(
        ConfigError,
        match=re.escape(
            "scheduler 'maxvh' cannot run this workload: it does not run rigid jobs (no speedup "
            "profile): 60 jobs "
            "(e.g. job "
        ),
    ):
        simulate_streaming(config)


def _plain(path: Path) -> Path:
    path.write_text(path.read_text().replace("market = true", "market = false"))
    return path
