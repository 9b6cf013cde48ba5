"""``visualization.pacing``: the play loop waits for each picture, and tiles read the model
under its lock (the browser run under CPU load is in ``test_viz_browser.py``)."""

from __future__ import annotations

import inspect
import threading

import pytest

pytest.importorskip("solara", reason="viz extra not installed (pip install 'market_hpc[viz]')")
pytestmark = pytest.mark.filterwarnings("ignore:.*ComponentsView:UserWarning")  # see app.py


def test_a_wait_ends_when_its_update_is_drawn_not_before() -> None:
    from visualization import pacing

    pacing.forget_session()
    assert not pacing.wait_drawn(1, seconds=0)  # nothing drawn yet
    pacing.mark_drawn(1)
    assert pacing.wait_drawn(1, seconds=0)
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(pacing.wait_drawn(3, seconds=60)))
    waiter.start()
    pacing.mark_drawn(2)
    assert outcome == [], "woke on an older picture"
    pacing.mark_drawn(3)
    waiter.join()
    assert outcome == [True]
    pacing.mark_drawn(1)  # an older picture never moves the record back
    assert pacing.wait_drawn(3, seconds=0)
    pacing.forget_session()
    assert not pacing.wait_drawn(1, seconds=0)


def test_every_tile_reads_the_model_under_its_lock() -> None:
    from visualization.components import COMPONENTS, StepInfo

    for component in [*COMPONENTS, StepInfo]:
        assert getattr(component.f, "__wrapped__", None) is not None, (
            component
        )  # pacing.reads_model


def test_a_step_holds_the_models_lock() -> None:
    from market_hpc.core.model import HPCModel
    from visualization.model import VizModel

    model = VizModel(jobs=100)
    held: list[bool] = []

    def spy(self: VizModel) -> None:  # HPCModel.step, called by VizModel.step
        held.append(self.lock._is_owned())  # type: ignore[attr-defined]

    patch = pytest.MonkeyPatch()
    patch.setattr(HPCModel, "step", spy)
    try:
        model.step()
    finally:
        patch.undo()
    assert held == [True]


def test_mesas_controller_calls_the_module_force_update_the_app_replaces() -> None:
    from mesa.visualization import solara_viz

    from visualization import pacing

    source = inspect.getsource(solara_viz)
    controller = source[source.index("def ModelController(") :]
    controller = controller[: controller.index("\ndef ", 1)]
    assert "force_update()" in controller
    original = solara_viz.force_update
    try:
        assert pacing.install(solara_viz)
        assert solara_viz.force_update is pacing.paced_force_update
    finally:
        solara_viz.force_update = original
