"""The live market in the browser: Mesa's SolaraViz over ``HPCModel``.

Serve it with ``market-hpc viz [SCENARIO]`` (or ``solara run visualization/app.py``).
Controls: policy (every registered scheduler, read from the registry when the page is
built, so policies registered later appear too), allocator (every registered one, or the
scheduler's default), platform (every preset, inline specs, or a custom platform with
GPU/MIC counts), workload (generator or SWF trace file), jobs, load, shares of GPU and
MIC jobs, holding penalty, seed; Mesa's Reset / Play / Step. Tiles: status line with the
simulated clock, node grid, queue, time series, job details.

Works with Mesa 3.3 (the newest for Python 3.11) to 3.5. Where they differ:

* Mesa 3.5's sidebar shows ``Time: {model.time}`` where 3.3 showed ``Step: {model.steps}``;
  Mesa advances ``model.time`` by one per step for a model no Mesa simulator drives, so
  for this event-driven model it is a step count that would contradict the simulated
  clock. ``StepInfo`` replaces Mesa's ``ShowSteps`` on every version: ``Step: N`` and the
  simulated clock.
* Mesa >= 3.4 owns ``Model.scenario`` and 3.5's Reset passes a new ``Scenario`` as
  ``scenario=`` to a model whose constructor takes that name, so the scenario file is the
  fixed parameter ``scenario_file``.

Play: Mesa sleeps ``play_interval`` between steps and the tiles render in between; the
interval is 60 ms and a step renders in a few tens of ms (SVG plots, numpy grid): 6.4
steps/s on the default page of an idle 2-core machine (``benchmarks/viz_step.py
--browser``). Each step waits for the picture of the previous one and the tiles read the
model under its lock (``visualization/pacing.py``), so a render pass slower than the
interval (a loaded machine) slows Play down instead of looping renders ("Too many renders
triggered") or drawing a model halfway through a step. Mesa's Play Interval slider steps
from 1 ms by 10 ms, which the browser would snap 60 ms to 61 ms: its steps start at
10 ms here (``on_steps``).

Rendering offline needs the pinned ``viz`` extra (solara 1.58.2 with solara-assets
1.58.2, ipyvuetify < 3, ipyvue < 3): it serves every script from the local assets; newer
solara loads its JavaScript from a CDN.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# ``solara run`` executes this file by path; make the ``visualization`` package importable.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import warnings

# A quiet server log: two warnings on every page load say nothing about this app. Solara's
# rules-of-hooks check flags Mesa's own ComponentsView (Mesa's code, one warning per
# session), and solara warns that a session cookie on plain http to 127.0.0.1 falls back
# to samesite=lax (what a local server wants). Only these two are silenced; set before
# Mesa's components are defined.
warnings.filterwarnings(
    "ignore", message=r".*mesa[/\\]visualization[/\\]solara_viz\.py:\d+: ", category=UserWarning
)
warnings.filterwarnings(
    "ignore", message="Cookies with samesite=none require https", category=UserWarning
)

import solara
from mesa.visualization import Slider, SolaraViz, solara_viz

from market_hpc.domain.platform import PRESETS
from market_hpc.policies.registry import allocator_names, scheduler_names
from visualization import pacing
from visualization.components import COMPONENTS, LAYOUT, StepInfo
from visualization.model import (
    AUTO,
    CUSTOM,
    DEFAULT_ALLOCATOR,
    DEFAULT_PLATFORM,
    DEFAULT_POLICY,
    EXTRA_PLATFORMS,
    SCENARIO_ENV,
    WORKLOADS,
    VizModel,
    scenario_defaults,
)

TITLE = "market_hpc: the live market"
PLAY_INTERVAL_MS = 60


def _layout(num_components: int) -> list[dict[str, int]]:
    if num_components == len(LAYOUT):
        return [dict(item) for item in LAYOUT]
    return _mesa_layout(num_components)


@solara.component
def _ValueSlider(name: str, options: Slider, on_change: Any) -> None:
    """One slider whose label ends in its current value (``load factor: 2.5``)."""
    value, set_value = solara.use_state(options.value)

    def changed(new: float) -> None:
        set_value(new)
        on_change(name, new)

    slider = solara.SliderFloat if options.is_float_slider else solara.SliderInt
    shown = f"{value:g}" if isinstance(value, float) else f"{value:,}"
    slider(
        f"{options.label}: {shown}",
        value=value,
        min=options.min,
        max=options.max,
        step=options.step,
        on_value=changed,
        thumb_label=False,
    )


@solara.component
def _user_inputs(user_params: dict[str, Any], on_change: Any = None) -> None:
    """Mesa's ``UserInputs`` with every model slider showing its value in its label
    (Mesa's show it only on the thumb while dragged)."""
    for name, options in user_params.items():
        if isinstance(options, Slider):
            _ValueSlider(name, options, on_change)
        else:
            _mesa_user_inputs({name: options}, on_change=on_change)


class _SolaraForMesa:
    """``solara`` as Mesa's ``solara_viz`` module sees it: everything is solara's, except
    that ``SliderInt`` ends its label in its value and starts its steps where they meet
    that value. Mesa's own Play Interval and Render Interval sliders then read
    ``Play Interval (ms): 100`` like the model's sliders."""

    def __getattr__(self, name: str) -> Any:
        return getattr(solara, name)

    @staticmethod
    def SliderInt(label: str, value: Any = 0, min: int = 0, step: int = 1, **kwargs: Any) -> Any:
        current = value.value if isinstance(value, solara.Reactive) else value
        return solara.SliderInt(
            f"{label}: {current:,}",
            value=value,
            min=on_steps(current, min, step),
            step=step,
            **kwargs,
        )


def on_steps(value: int, low: int, step: int) -> int:
    """The lowest slider value, at or above ``low``, whose steps pass through ``value``.

    The browser moves a value between a slider's steps (``low + k * step``) to the
    nearest one and sends it back: Mesa's Play Interval slider (1 ms to 500 ms in steps
    of 10, on Mesa 3.3 to 3.5) would turn the app's 60 ms into 61 ms.

    >>> on_steps(100, 1, 10), on_steps(1, 1, 2), on_steps(250, 10, 10)
    (10, 1, 10)
    """
    return low + (value - low) % step if step > 0 else low


# SolaraViz (3.3 to 3.5) takes no layout argument and no step display: both are module
# functions it looks up when it renders, replaced here for this app only.
solara_viz.solara = _SolaraForMesa()  # type: ignore[assignment]
_mesa_layout = solara_viz.make_initial_grid_layout
solara_viz.make_initial_grid_layout = _layout
solara_viz.ShowSteps = StepInfo
pacing.install(solara_viz)  # Play waits for each picture: no render loop (pacing.py)
_mesa_user_inputs = getattr(solara_viz, "UserInputs", None)
if _mesa_user_inputs is not None:  # (a Mesa without it keeps its own sliders)
    solara_viz.UserInputs = _user_inputs


def model_params(scenario: str) -> dict[str, object]:
    """SolaraViz controls, starting from the scenario's values when one is given."""
    start: dict[str, Any] = {
        "policy": DEFAULT_POLICY,
        "platform": DEFAULT_PLATFORM,
        "seed": 1,
        "hold_penalty": 0.1,
        "load": 2.0,
        "allocator": DEFAULT_ALLOCATOR,
    }
    if scenario:
        start.update(scenario_defaults(scenario))
    platforms = list(dict.fromkeys([*EXTRA_PLATFORMS, *PRESETS, str(start["platform"]), CUSTOM]))
    params: dict[str, object] = {
        "policy": {
            "type": "Select",
            "label": "policy (scheduler)",
            "value": start["policy"],
            "values": scheduler_names(),
        },
        "allocator": {
            "type": "Select",
            "label": "allocator",
            "value": start["allocator"],
            "values": [DEFAULT_ALLOCATOR, *allocator_names()],
        },
        "platform": {
            "type": "Select",
            "label": "platform",
            "value": start["platform"],
            "values": platforms,
        },
        "nodes": Slider("custom platform: nodes", 32, 1, 512, 1),
        "cores": Slider("custom platform: cores per node", 16, 1, 128, 1),
        "gpus": Slider("custom platform: GPUs per node", 0, 0, 8, 1),
        "mics": Slider("custom platform: MICs per node", 0, 0, 8, 1),
    }
    if not scenario:
        params |= {
            "workload": {
                "type": "Select",
                "label": "workload",
                "value": AUTO,
                "values": list(WORKLOADS),
            },
            "trace": {
                "type": "InputText",
                "label": "trace file (SWF, for workload 'trace file')",
                "value": "",
            },
            "jobs": Slider("jobs (generated, or first N of the trace)", 1500, 100, 5000, 100),
            "gpu_share": Slider("share of GPU jobs", 0.0, 0.0, 1.0, 0.05),
            "mic_share": Slider("share of MIC jobs", 0.0, 0.0, 1.0, 0.05),
        }
    params |= {
        "load": Slider("load factor", float(start["load"]), 0.25, 5.0, 0.25),
        "hold_penalty": Slider(
            "holding penalty (share of max value)", float(start["hold_penalty"]), 0.0, 1.0, 0.05
        ),
        "seed": Slider("seed", int(start["seed"]), 0, 99, 1),
        "scenario_file": scenario,  # fixed: not a control
    }
    return params


def initial_values(params: dict[str, object]) -> dict[str, object]:
    """The constructor arguments the controls start at."""
    values: dict[str, object] = {}
    for name, param in params.items():
        if isinstance(param, Slider):
            values[name] = param.value
        elif isinstance(param, dict):
            values[name] = param["value"]
        else:
            values[name] = param
    return values


_params = model_params(os.environ.get(SCENARIO_ENV, ""))


@solara.component
def Page() -> None:
    """The app; every browser session gets its own model."""
    model = solara.use_memo(lambda: VizModel(**initial_values(_params)), [])  # type: ignore[arg-type]
    solara.Title(TITLE)
    SolaraViz(
        model,
        components=[(component, 0) for component in COMPONENTS],
        model_params=_params,
        name=TITLE,
        play_interval=PLAY_INTERVAL_MS,
    )
