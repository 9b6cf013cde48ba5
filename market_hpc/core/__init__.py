"""The simulation core: the Mesa model, its agents, the view policies see, the recorder.

- :mod:`~market_hpc.core.model` – :class:`HPCModel`, the event-driven step loop;
- :mod:`~market_hpc.core.agents`, :mod:`~market_hpc.core.queue_agents` – node, job, queue and
  resource-manager agents;
- :mod:`~market_hpc.core.view` – the read-only view a policy decides on;
- :mod:`~market_hpc.core.recorder`, :mod:`~market_hpc.core.metrics` – what a run leaves behind;
- :mod:`~market_hpc.core.state`, :mod:`~market_hpc.core.running_jobs`,
  :mod:`~market_hpc.core.free_state`, :mod:`~market_hpc.core.job_columns`,
  :mod:`~market_hpc.core.predictors` – the columns and indexes behind them.

Nothing here is imported by ``algorithms``, ``domain`` or ``policies``: imports point left.
"""
