"""A tiny version of scenarios/overload_study.toml through sweep and report: its base scenario
(the all-families workload, the queue period, the leaderboard), a few hundred jobs of a
small trace, two policies per family, two slices, twice the recorded load."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pandas as pd
import pytest
from test_all_families import write_swf

from market_hpc.experiment.report import write_report
from market_hpc.experiment.sweep import load_sweep, run_sweep

REPO = Path(__file__).resolve().parent.parent
POLICIES = [
    ("fifo", "first-fit", "none"),
    ("easy", "first-fit", "none"),
    ("ebf", "weighted", "none"),
    ("ebf", "balanced", "none"),
    ("maxv", "max-bid", "none"),
    ("maxvh", "max-bid", "none"),
    ("hcp19", "best-fit", "none"),
    ("greedy-plan", "best-fit", "none"),
    ("bbsched", "first-fit", "none"),
    ("bb-baseline", "first-fit", "none"),
    ("queues-hybrid", "first-fit", "hybrid"),
    ("queues-partitioned", "first-fit", "dqr"),
]


def smoke_sweep(folder: Path) -> Path:
    trace = write_swf(folder / "tiny.swf", n_jobs=160, seed=11, max_procs=8)
    platform = folder / "gpu8.toml"
    platform.write_text(
        'name = "gpu8"\n[[node_type]]\nname = "gpu"\ncount = 2\ncores = 8\ngpus = 2\n'
        '[[node_type]]\nname = "thin"\ncount = 6\ncores = 8\n'
    )
    quoted = lambda values: "[" + ", ".join(f'"{v}"' for v in values) + "]"
    file = folder / "smoke.toml"
    file.write_text(f'''base = "{REPO / "scenarios" / "overload_study_base.toml"}"
platform = "{platform}"
[workload]
trace = "{trace}"
[queues]
period_days = 0.1
samples = 5
[grid]
"workload.load_factor" = [2.0]
[[zip]]
"policy.scheduler" = {quoted(p for p, _, _ in POLICIES)}
"policy.allocator" = {quoted(a for _, a, _ in POLICIES)}
"queues.strategy" = {quoted(s for _, _, s in POLICIES)}
[[zip]]
"workload.start" = [0.0, 9600.0]
"workload.end" = [9600.0, 19200.0]
[report]
leaderboard = {{ baseline = "easy", replicate = ["start"], setting = ["load_factor"] }}
''')
    return file


@pytest.mark.smoke
def test_tiny_overload_study_runs_every_family_and_ranks_them(tmp_path: Path) -> None:
    sweep = load_sweep(smoke_sweep(tmp_path))
    assert len(sweep.runs) == len(POLICIES) * 2
    outcome = run_sweep(sweep, tmp_path / "out", progress=False)
    rows = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert outcome.failed == 0, rows.loc[rows["status"] != "ok", ["scheduler", "error"]].to_string()
    assert (
        rows.groupby("start")["jobs_total"].first().sum() == 160
        and (rows["value_earned"] > 0).all()
    )
    assert rows["offered_load_cores"].min() > 1.0  # twice the recorded load overloads the cores
    write_report(tmp_path / "out", progress=False)
    report = tmp_path / "out" / "report"
    board = pd.read_csv(report / "leaderboard_mean_bounded_slowdown.csv")
    assert len(board) == len(POLICIES) and set(board["rank"]) <= set(range(1, len(POLICIES) + 1))
    assert (report / "pareto_load_2.png").is_file() and (report / "rank_heatmap.png").is_file()
    cost = pd.read_csv(report / "cost.csv")
    assert len(cost) == len(POLICIES) and (cost["run_cpu_s_mean"] > 0).all()


def test_the_cp_budget_sweep_runs_on_the_study_s_own_slices_and_tracks() -> None:
    # scenarios/overload_cp_budget.toml copies the study's slice and track groups (a sweep
    # file cannot include another's): the copies must not drift from the study
    import tomllib

    def groups(name: str) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        spec = tomllib.loads((REPO / "scenarios" / name).read_text())
        return spec["zip"][1:], spec["quick"]["zip"][1:]

    assert groups("overload_cp_budget.toml") == groups("overload_study.toml")


def test_the_study_runs_the_cp_dispatchers_at_the_budget_its_page_names() -> None:
    # docs/overload.md: PCP'20 and HCP'19 decide within 0.03 work units in the study (within
    # 50x EASY's CPU on every slice); every other policy takes no parameters there
    import tomllib

    for name in ("overload_study.toml", "overload_study_2x.toml", "overload_more_slices.toml"):
        spec = tomllib.loads((REPO / "scenarios" / name).read_text())
        groups = [spec["zip"][0], *([spec["quick"]["zip"][0]] if "quick" in spec else [])]
        for group in groups:
            params = dict(zip(group["policy.scheduler"], group["policy.params"], strict=True))
            assert params.pop("pcp20") == params.pop("hcp19") == {"decision_budget": 0.03}
            assert all(value == {} for value in params.values()), name


def test_the_more_slices_sweep_keeps_the_study_s_windows_of_its_traces() -> None:
    # scenarios/overload_more_slices.toml copies the study's KTH-SP2 and HPC2N slices (and
    # adds 10 more each): the copies must not drift from the study's windows
    import tomllib

    def windows(name: str) -> set[tuple[str, float, float, float]]:
        group = tomllib.loads((REPO / "scenarios" / name).read_text())["zip"][1]
        rows = zip(
            group["workload.trace"],
            group["workload.start"],
            group["workload.end"],
            group["queues.period_days"],
            strict=True,
        )
        return {row for row in rows if row[0] in ("kth-sp2", "hpc2n")}

    study, more = windows("overload_study.toml"), windows("overload_more_slices.toml")
    assert len(study) == 10 and study <= more and len(more) == 30
    for trace in ("kth-sp2", "hpc2n"):  # disjoint slices: the replicates share no job
        spans = sorted((start, end) for name, start, end, _ in more if name == trace)
        assert all(end <= later for (_, end), (later, _) in pairwise(spans)), trace
