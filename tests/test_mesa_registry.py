"""Job agents and Mesa's registries: whoever reads ``model.agents`` (or
``agents_by_type``, ``agent_types``, a ``DataCollector`` with agent reporters) sees
exactly the job agents in the system, though they register with Mesa only when read."""

from __future__ import annotations

import mesa
import pytest

from market_hpc.core.agents import JobAgent, QueueAgent, ResourceManagerAgent
from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job

pytestmark = pytest.mark.smoke


def _jobs(n: int) -> list[Job]:
    # Two single-core nodes, jobs of 1-2 cores arriving
    # every 10 s and running 25-45 s: a queue builds.
    return [
        Job(job_id=i, submit=10.0 * i, run_time=25.0 + 10 * (i % 3), units=1 + i % 2, estimate=60.0)
        for i in range(1, n + 1)
    ]


def _job_ids(model: HPCModel) -> set[int]:
    return {agent.job.job_id for agent in model.agents_by_type.get(JobAgent, [])}


def test_registries_list_exactly_the_jobs_in_the_system_at_every_read() -> None:
    model = HPCModel(_jobs(30), "nodes=2,cores=1", "fifo", "first-fit")
    seen_ids: dict[int, int] = {}
    reads = 0
    while model.running:
        model.step()
        if model.now % 20 == 0:  # read at some instants only: the others pass unregistered
            reads += 1
            in_system = set(model.job_agents)
            assert _job_ids(model) == in_system
            assert {a.job.job_id for a in model.agents if isinstance(a, JobAgent)} == in_system
            if in_system:  # (Mesa keeps a class's entry once any agent of it registered)
                assert JobAgent in model.agent_types
            for agent in model.job_agents.values():
                assert agent.registered and agent.model is model
                # an agent keeps the id it got when first registered
                assert seen_ids.setdefault(agent.job.job_id, agent.unique_id) == agent.unique_id
    assert reads > 5 and len(seen_ids) > 5
    ids = list(seen_ids.values())
    assert len(set(ids)) == len(ids)  # distinct Mesa ids
    # registered in arrival order: ids grow with the job id (jobs arrive in id order)
    assert [seen_ids[j] for j in sorted(seen_ids)] == sorted(ids)
    assert model.recorder.finished == 30
    assert _job_ids(model) == set()  # every job left: deregistered from Mesa too
    # the other agents registered at construction as usual
    assert (
        len(model.agents_by_type[QueueAgent]) == 1
        and len(model.agents_by_type[ResourceManagerAgent]) == 1
    )


def test_a_replay_that_never_reads_the_registries_registers_no_job_agent() -> None:
    model = HPCModel(_jobs(12), "nodes=2,cores=1", "fifo", "first-fit")
    model.run(until=60.0)
    waiting = list(model.job_agents.values())
    assert waiting and not any(agent.registered for agent in waiting)
    assert _job_ids(model) == {agent.job.job_id for agent in waiting}
    assert all(agent.registered for agent in waiting)
    model.run()
    assert model.recorder.finished == 12 and _job_ids(model) == set()


def test_datacollector_agent_reporters_see_the_jobs_in_the_system() -> None:
    model = HPCModel(_jobs(12), "nodes=2,cores=1", "fifo", "first-fit")
    collector = mesa.DataCollector(
        agenttype_reporters={JobAgent: {"status": lambda a: a.status.value}}
    )
    counts = []
    while model.running:
        model.step()
        collector.collect(model)
        counts.append(len(model.job_agents))
    frame = collector.get_agenttype_vars_dataframe(JobAgent)
    per_step = frame.groupby(level="Step").size()
    # every step with jobs in the system has one row per job agent
    assert [per_step.get(step, 0) for step in range(1, len(counts) + 1)] == counts
    assert set(frame["status"]) <= {"queued", "running"}
