"""Finished models are let go: Mesa 3.3 keeps every model that made agents in the class
attribute ``mesa.Agent._ids`` (mesa/mesa#3179), so a sweep worker, a streamed replay or a
training loop would keep every model it ran. ``release_model`` drops that reference where
runs end; Mesa 3.5 has no such attribute (the tests then check nothing is left either)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import mesa
import pytest

from market_hpc.core.model import HPCModel, release_model
from market_hpc.experiment import config_from_dict
from market_hpc.experiment.run import simulate
from market_hpc.experiment.streaming import simulate_streaming
from market_hpc.workload.synthetic import lublin_feitelson


def _models_kept() -> int:
    ids = getattr(mesa.Agent, "_ids", None)
    return sum(isinstance(key, HPCModel) for key in ids) if isinstance(ids, dict) else 0


def test_release_model_lets_a_finished_model_be_collected() -> None:
    model = HPCModel(lublin_feitelson(50, 16, seed=1), "nodes=4,cores=4", "easy")
    model.run()
    alive = weakref.ref(model)
    release_model(model)
    release_model(None)  # nothing to release: no error
    del model
    gc.collect()
    assert alive() is None


def test_simulate_keeps_no_model(tmp_path: Path) -> None:
    config = config_from_dict(
        {
            "platform": "nodes=4,cores=4",
            "seed": 1,
            "timeseries": False,
            "workload": {"generator": "lublin-feitelson", "jobs": 60},
            "policy": {"scheduler": "easy"},
        }
    )
    before = _models_kept()
    for _ in range(3):
        simulate(config)
    assert _models_kept() == before


def test_a_streamed_replay_keeps_no_model(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(
        "".join(f"{i} {i * 5} 0 30 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1\n" for i in range(1, 41))
    )
    config = config_from_dict(
        {
            "platform": "nodes=4,cores=2",
            "seed": 1,
            "timeseries": False,
            "workload": {"trace": str(trace)},
            "policy": {"scheduler": "easy"},
        }
    )
    before = _models_kept()
    simulate_streaming(config)
    assert _models_kept() == before


@pytest.mark.skipif(
    not isinstance(getattr(mesa.Agent, "_ids", None), dict),
    reason="this Mesa keeps no models in mesa.Agent._ids",
)
def test_without_release_mesa_keeps_the_model() -> None:
    # the reason for release_model: the test above would fail without it on Mesa 3.3
    model = HPCModel(lublin_feitelson(20, 8, seed=2), "nodes=2,cores=4", "fifo")
    model.run()
    assert model in mesa.Agent._ids
    release_model(model)
    assert model not in mesa.Agent._ids
