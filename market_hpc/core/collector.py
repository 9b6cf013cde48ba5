"""``TimeSeriesCollector``: Mesa's ``DataCollector`` over the recorder's time series.

The recorder samples the model once per instant with events, on every path that advances
time (``step()``, ``run()``, ``run_model()``): one row per Mesa step. This collector hands
those rows to Mesa's readers (``model_vars``, ``get_model_vars_dataframe()``, and
``mesa.batch_run``), so the collected data and ``timeseries.csv`` are one table, and the
fast ``run()`` loop pays nothing for Mesa's per-reporter bookkeeping. Agent reporters
(optional) are collected the Mesa way, by ``collect()`` after each ``step()``.
"""

from __future__ import annotations

from typing import Any

import mesa
import pandas as pd

from market_hpc.core.recorder import TIMESERIES_COLUMNS, Recorder


class TimeSeriesCollector(mesa.DataCollector):  # type: ignore[misc]  # Mesa is untyped
    """The model's ``datacollector``: model variables are ``TIMESERIES_COLUMNS``.

    Row ``i`` of ``get_model_vars_dataframe()`` is the state after step ``i + 1`` (its
    ``time`` column is the simulated clock), the same rows and values as
    ``model.timeseries_frame()`` and the CLI's ``timeseries.csv``. A model built with
    ``record_timeseries=False`` collects no rows.

    Args:
        recorder: The model's recorder, which samples every instant.
        agent_reporters: Mesa agent reporters, collected by ``collect()`` (``step()``).
        agenttype_reporters: Mesa per-agent-class reporters, collected the same way.
    """

    def __init__(
        self,
        recorder: Recorder,
        agent_reporters: dict[str, Any] | None = None,
        agenttype_reporters: dict[type, dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(agent_reporters=agent_reporters, agenttype_reporters=agenttype_reporters)
        self.recorder = recorder

    columns = TIMESERIES_COLUMNS

    @property
    def collects_per_step(self) -> bool:
        """Whether ``collect()`` has agent data to gather after each step."""
        return bool(self.agent_reporters or self.agenttype_reporters)

    @property
    def model_vars(self) -> dict[str, list[Any]]:
        """Mesa's ``{column: [value per step]}`` (what ``mesa.batch_run`` reads)."""
        frame = self.recorder.timeseries_frame()
        return {name: frame[name].tolist() for name in frame.columns}

    @model_vars.setter
    def model_vars(self, _value: Any) -> None:
        pass  # Mesa's constructor resets it; the rows live in the recorder

    @property
    def _collection_steps(self) -> list[int]:
        # Mesa >= 3.5's batch_run maps a step to a row through this list: row i for step i,
        # as Mesa 3.3 (``model_vars[name][step]``), so the last step reads the final state.
        return list(range(self.recorder.sample_count))

    @_collection_steps.setter
    def _collection_steps(self, _value: Any) -> None:
        pass

    def collect(self, model: mesa.Model) -> None:
        """Collect the agent reporters (model variables are sampled by the recorder)."""
        if self.collects_per_step:
            super().collect(model)  # no model reporters are registered: agents only

    def get_model_vars_dataframe(self) -> pd.DataFrame:
        """The time series, one row per step: equal to ``model.timeseries_frame()``."""
        return self.recorder.timeseries_frame()
