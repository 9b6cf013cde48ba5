"""Play without a render loop: the step thread waits for each picture, and the tiles never
read a model halfway through a step.

Mesa's controller (``mesa.visualization.solara_viz.ModelController``, 3.3 to 3.5) plays in
a solara task thread: ``sleep(play interval)``, ``model.step()``, ``force_update()``, again.
``force_update`` asks for a render and returns at once when another thread is rendering
(reacton leaves the render to that thread). So when a render pass takes longer than one
interval plus one step (a loaded machine: every tile redrawn, SVG plots, the node grid),
the thread that renders (the one handling a click: Play, Pause, Reset) finds a new request
at the end of every pass and never leaves its render loop; after 50 to 100 passes reacton
stops with "Too many renders triggered, your render loop does not stop", and meanwhile
the click it handles (Pause) is not seen. The same thread's tiles also read the model while
the step thread changes it (a queued job gone from ``job_agents``: a ``KeyError`` tile).

Two fixes, both here, neither in Mesa's code:

- :func:`paced_force_update` replaces the ``force_update`` Mesa's controller calls: after
  asking for the render it waits until a tile has drawn that update (an effect, which runs
  once the render pass is done). Mesa's loop then sleeps its interval and steps: the next
  request comes at least one interval after the previous picture, whoever rendered it, so
  a render pass never finds a request it did not cause and the loop ends.
- :func:`reads_model` runs a tile's body under the model's lock, which
  ``VizModel.step`` holds while it steps.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import solara
from mesa.visualization.utils import update_counter

RENDER_WAIT_SECONDS = 5.0
"""Longest wait for a picture (a closed tab renders nothing; the loop then goes on)."""

_drawn: dict[str, int] = {}  # kernel id -> the last update_counter value a tile drew
_condition = threading.Condition()

F = TypeVar("F", bound=Callable[..., Any])


def _kernel() -> str:
    try:
        return str(solara.get_kernel_id())
    except Exception:  # noqa: BLE001 - outside a solara server (tests, notebooks): one key
        return ""


def mark_drawn(counter: int) -> None:
    """Record that this session's tiles drew update ``counter`` (wakes the waiting step)."""
    key = _kernel()
    with _condition:
        if counter > _drawn.get(key, -1):
            _drawn[key] = counter
        _condition.notify_all()


def wait_drawn(counter: int, seconds: float = RENDER_WAIT_SECONDS) -> bool:
    """Wait until this session's tiles drew update ``counter``; whether they did in time."""
    key = _kernel()
    with _condition:
        return _condition.wait_for(lambda: _drawn.get(key, -1) >= counter, timeout=seconds)


def paced_force_update() -> None:
    """Mesa's ``force_update`` (one more ``update_counter``), then wait for its picture."""
    update_counter.value += 1
    wait_drawn(update_counter.value)


def forget_session() -> None:
    """Drop this session's record (when its page closes)."""
    with _condition:
        _drawn.pop(_kernel(), None)


def reads_model(component: F) -> F:
    """Run a tile's body (``component(model, ...)``) under ``model.lock`` and record, once
    the render pass is done, which update it drew (:func:`mark_drawn`)."""

    @functools.wraps(component)
    def body(model: Any, *args: Any, **kwargs: Any) -> Any:
        counter = update_counter.get()
        solara.use_effect(lambda: mark_drawn(counter), [counter])
        with model.lock:
            return component(model, *args, **kwargs)

    return body  # type: ignore[return-value]


def install(solara_viz: Any) -> bool:
    """Make Mesa's controller call :func:`paced_force_update`; whether it could (a Mesa
    whose controller does not call a module-level ``force_update`` keeps its own)."""
    if not callable(getattr(solara_viz, "force_update", None)):
        return False
    solara_viz.force_update = paced_force_update
    return True
