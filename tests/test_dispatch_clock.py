"""The dispatcher's clocks: every decision's wall time, and the process CPU clock read only
around the decisions that follow ``CPU_SAMPLE_SECONDS`` of unsampled deciding
(``core.agents.ResourceManagerAgent.dispatch``)."""

from __future__ import annotations

import pytest

from market_hpc.core import agents
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job


class FakeClocks:
    """Each decision takes ``wall`` seconds of wall time and ``cpu`` of process CPU; the
    clocks count their reads."""

    def __init__(self, wall: float, cpu: float) -> None:
        self.wall, self.cpu = wall, cpu
        self.wall_reads = self.cpu_reads = 0

    def perf_counter(self) -> float:  # read before and after each decision
        self.wall_reads += 1
        return (self.wall_reads // 2) * self.wall  # 0, w | w, 2w | ...

    def process_time(self) -> float:  # read before and after a sampled decision
        self.cpu_reads += 1
        return (self.cpu_reads // 2) * self.cpu


def test_the_cpu_clock_is_read_around_one_decision_per_sampling_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clocks = FakeClocks(wall=0.008, cpu=0.002)
    monkeypatch.setattr(agents, "_time", clocks)
    jobs = [Job(i, float(10 * i), 5.0, 5.0, units=1) for i in range(30)]  # one decision each
    model = HPCModel(jobs, platform="nodes=1,cores=1", scheduler="fifo", seed=0)
    model.run()
    manager = model.manager
    decisions = manager.decisions
    assert decisions == 30
    assert manager.decide_seconds == pytest.approx(decisions * 0.008)
    # 8 ms a decision, sampled every 20 ms: the 1st, then after 3 unsampled ones (24 ms),
    # i.e. decisions 1, 4, 7, ..., 28: 10 of 30, two CPU reads each
    assert clocks.cpu_reads == 2 * 10
    assert manager.decide_cpu_seconds == pytest.approx(decisions * 0.002)  # CPU / wall = 1/4


def test_a_slow_decision_is_always_sampled(monkeypatch: pytest.MonkeyPatch) -> None:
    clocks = FakeClocks(wall=1.5 * agents.CPU_SAMPLE_SECONDS, cpu=0.01)
    monkeypatch.setattr(agents, "_time", clocks)
    jobs = [Job(i, float(10 * i), 5.0, 5.0, units=1) for i in range(5)]
    model = HPCModel(jobs, platform="nodes=1,cores=1", scheduler="fifo", seed=0)
    model.run()
    assert clocks.cpu_reads == 2 * model.manager.decisions == 10
    assert model.manager.decide_cpu_seconds == pytest.approx(5 * 0.01)
