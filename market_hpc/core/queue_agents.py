"""Hybrid queues (Kondameedi & Vadhiyar) in the model: a ``QueueAgent`` per queue, routing
at arrival and reconfiguration events.

``HPCModel(..., queues=config, reconfigurations=[(time, config), ...])`` calls
:func:`install_queues`: the model's queue agent becomes a :class:`RoutedQueueAgent`,
which keeps every waiting job in arrival order (what policies see as ``view.queue``)
and also hands each job to the ``QueueAgent`` of the queue it routes to. A
reconfiguration is a model event (a decision wake-up carrying a callback): running jobs
keep their resources, waiting jobs are routed again under the new configuration, the
dispatcher gets the new configuration, and ``history`` records the configuration in
force from that time on. Every job is checked against every configuration at load: a
job no queue accepts (and no ``catch_all``) is a ``ConfigError`` naming it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from market_hpc.algorithms.queues.partitions import route, unroutable_message
from market_hpc.core.agents import QueueAgent
from market_hpc.core.state import DECISION, SimulationState
from market_hpc.domain.job import Job
from market_hpc.domain.queues import QueueConfig
from market_hpc.errors import ConfigError
from market_hpc.policies.base import PolicyHooks


class QueueHost(SimulationState, Protocol):
    """What the routed queue needs of the model (``market_hpc.core.model.HPCModel``; typed by
    this protocol so that the model's lazy import of this module makes no import cycle)."""

    policy: Any
    policy_hooks: PolicyHooks  # what the model reads of the policy
    queue_agent: Any  # the model's QueueAgent (a mesa.Agent), removed and replaced here

    def _push(self, when: float, order: int, event: Any) -> None: ...


class RoutedQueueAgent(QueueAgent):
    """All waiting jobs (arrival order) plus one ``QueueAgent`` per configured queue.

    Attributes:
        queues: Queue name -> its ``QueueAgent`` (waiting jobs of that queue).
        queue_of: Waiting job id -> queue name.
        history: ``(time, config)`` each time a configuration was put in force.
    """

    def __init__(self, model: QueueHost, config: QueueConfig) -> None:
        super().__init__(model, "all-queues")
        self.queues: dict[str, QueueAgent] = {}
        self.queue_of: dict[int, str] = {}
        self.history: list[tuple[float, QueueConfig]] = []
        self.configure(config)

    def configure(self, config: QueueConfig) -> None:
        """Put ``config`` in force now: new queue agents, waiting jobs routed again."""
        for agent in self.queues.values():
            agent.remove()
        self.config = config
        self.queues = {q.name: QueueAgent(self.model, q.name) for q in config.queues}
        self.queue_of = {}
        for job in self.jobs.values():
            self._place(job)
        self.history.append((self.model.now, config))
        self.model.policy_hooks.configure(config)

    def _place(self, job: Job) -> None:
        index = route(self.config, job.cores, job.estimate)
        if index < 0:  # validated at load; a job pushed from elsewhere must not vanish
            raise ConfigError(unroutable_message(self.config, job.job_id, job.cores, job.estimate))
        name = self.config.queues[index].name
        self.queues[name].push(job)
        self.queue_of[job.job_id] = name

    def push(self, job: Job) -> None:
        """Append ``job`` to the waiting jobs and to its queue."""
        super().push(job)
        self._place(job)

    def take(self, job_id: int) -> None:
        """Remove ``job_id`` from the waiting jobs and from its queue."""
        super().take(job_id)
        self.queues[self.queue_of.pop(job_id)].take(job_id)


def check_routable(config: QueueConfig, jobs: Iterable[Job]) -> None:
    """Raise ``ConfigError`` for the first job ``config`` cannot route."""
    for job in jobs:
        if route(config, job.cores, job.estimate) < 0:
            raise ConfigError(unroutable_message(config, job.job_id, job.cores, job.estimate))


def install_queues(
    model: QueueHost,
    config: QueueConfig,
    reconfigurations: Sequence[tuple[float, QueueConfig]] = (),
    jobs: Sequence[Job] = (),
) -> RoutedQueueAgent:
    """Replace ``model``'s queue agent by a routed one and schedule reconfigurations;
    every job in ``jobs`` must have a queue in every configuration (checked now, at load)."""
    from market_hpc.algorithms.queues.partitions import layout

    for _, later in ((0.0, config), *reconfigurations):
        layout(later, model.platform.n_nodes)  # raises if it needs more nodes than exist
        check_routable(later, jobs)
    model.queue_agent.remove()
    agent = RoutedQueueAgent(model, config)
    model.queue_agent = agent
    for when, later in sorted(reconfigurations, key=lambda item: item[0]):
        model._push(float(when), DECISION, _Reconfigure(later))
    return agent


class _Reconfigure:
    """The reconfiguration event's callback (a class, so it pickles and prints)."""

    def __init__(self, config: QueueConfig) -> None:
        self.config = config

    def __call__(self, model: QueueHost) -> None:
        agent = model.queue_agent
        assert isinstance(agent, RoutedQueueAgent)
        agent.configure(self.config)

    def __repr__(self) -> str:
        return f"Reconfigure({self.config.label or self.config.mode})"
