"""Trained dispatchers as schedulers: ``learned:PATH`` in any config, sweep or ``replay``.

``PATH`` is a MaskablePPO model saved by :func:`save_learned`
(``examples/train_dispatcher.py``): the model's zip and, beside it, ``PATH.json`` with the
environment options it was trained with (window, backfilling) and its observation and reward
by registered name, with their parameters (``rl.registry.ModelSpec``): the scheduler
rebuilds that observation, and refuses a model whose observation is not registered in the
loading process. At each decision the scheduler builds the decision the way the environment
offers it (``market_hpc.rl.dispatch.InstantDispatcher``): it asks the model for a slot,
starts that job if it fits, and asks again until a chosen job does not fit (then, when
trained with backfilling, EASY runs around it) or nothing more can fit. So the trained
policy decides in ``replay``, ``sweep`` and ``report`` exactly as it did in training.

Loading a model needs the ``rl`` extra (torch, stable-baselines3, sb3-contrib);
:class:`DispatchingPolicy` itself needs only numpy (any object with sb3's ``predict``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from market_hpc.errors import ConfigError
from market_hpc.json_text import json_text
from market_hpc.policies.base import Allocator, Decision, View
from market_hpc.policies.capabilities import KINDS, RESOURCES, handles
from market_hpc.policies.registry import register_scheduler_family
from market_hpc.rl.dispatch import DispatchOptions, InstantDispatcher
from market_hpc.rl.registry import (
    GROUP,
    OBSERVATIONS,
    ModelSpec,
    Observation,
    load_plugins,
    make_observation,
)

OPTIONS_SUFFIX = ".json"
"""The environment options are saved as ``PATH + OPTIONS_SUFFIX`` beside the model."""


class Predictor(Protocol):
    """What a trained model offers (stable-baselines3's ``predict`` with action masks)."""

    def predict(
        self, observation: np.ndarray, *, action_masks: np.ndarray, deterministic: bool
    ) -> tuple[Any, Any]: ...


class DispatchingPolicy:
    """A ``Policy`` that decides job by job with ``predictor``, as the environment offers.

    Args:
        allocator: Where chosen jobs go.
        predictor: Chooses a slot from an observation and a mask.
        options: The environment options it was trained with (window, backfilling).
        name: The policy's name (``{name}+{allocator}``).
        observation: What the predictor reads (default: the ``default`` observation).
    """

    def __init__(
        self,
        allocator: Allocator,
        predictor: Predictor,
        options: DispatchOptions,
        name: str = "learned",
        observation: Observation | None = None,
    ) -> None:
        self.allocator = allocator
        self.predictor = predictor
        self.options = options
        self.observation = (
            make_observation("default", options.window) if observation is None else observation
        )
        self.dispatcher = InstantDispatcher(options, allocator)
        self.name = f"{name}+{allocator.name}"
        self.steps = 0

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        dispatcher = self.dispatcher
        if dispatcher.begin(view):
            observe = self.observation
            while True:
                action, _ = self.predictor.predict(
                    np.asarray(observe(dispatcher), dtype=np.float32),
                    action_masks=dispatcher.mask(),
                    deterministic=True,
                )
                self.steps += 1
                _, over = dispatcher.choose(int(action))
                if over:
                    break
        return dispatcher.finish()


def options_path(path: str | Path) -> Path:
    """Where the environment options of the model at ``path`` are saved."""
    return Path(str(path) + OPTIONS_SUFFIX)


def save_learned(
    model: Any,
    path: str | Path,
    options: DispatchOptions,
    spec: ModelSpec | None = None,
    **extra: Any,
) -> Path:
    """Save a trained model (``model.save(path)``) and beside it its environment options
    and ``spec``, the observation and reward it was trained with (``env.model_spec``;
    default: the defaults); ``extra`` (e.g. the training trace and time) is kept in the
    options file too. Returns the model file's path."""
    path = Path(path)
    saved_spec = (ModelSpec() if spec is None else spec).to_json()
    clash = sorted(set(extra) & {"options", *saved_spec})
    if clash:
        raise ConfigError(f"save_learned: {clash[0]!r} is saved from the options and spec")
    model.save(str(path))
    saved = path if path.suffix == ".zip" else path.with_name(path.name + ".zip")
    options_path(saved).write_text(
        json_text({"options": asdict(options), **saved_spec, **extra}, default=str)
    )
    return saved


def load_options(path: str | Path) -> tuple[DispatchOptions, dict[str, Any]]:
    """The environment options saved beside the model at ``path``, and the rest of that file.

    Raises:
        ConfigError: the file is missing or not what :func:`save_learned` writes.
    """
    where = options_path(path)
    if not where.is_file():
        raise ConfigError(
            f"learned:{path}: {where} is missing; a model saved by "
            "market_hpc.rl.learned.save_learned "
            "has its environment options beside it"
        )
    try:
        data = json.loads(where.read_text())
        options = DispatchOptions(**data["options"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"learned:{path}: {where} is not an options file of save_learned: {exc}"
        ) from None
    return options, {k: v for k, v in data.items() if k != "options"}


def load_spec(path: str | Path, saved: dict[str, Any]) -> ModelSpec:
    """The observation and reward of the model at ``path``, from the rest of its options file
    (:func:`load_options`'s second value; a file written before they had names gives the
    defaults).

    Raises:
        ConfigError: the entries are not what :func:`save_learned` writes.
    """
    try:
        return ModelSpec.from_json(saved)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"learned:{path}: {options_path(path)} has no readable observation and reward "
            f"entries: {exc!r}"
        ) from None


def saved_observation(path: str | Path, spec: ModelSpec, window: int) -> Observation:
    """The observation the model at ``path`` was trained on, rebuilt from ``spec``.

    Raises:
        ConfigError: in one line, naming the model, the observation it was saved with and
            the registered ones, when that name is not registered in this process (nor by
            an installed plugin); or the saved parameters are refused.
    """
    name = spec.observation
    if name not in OBSERVATIONS:
        load_plugins()
    if name not in OBSERVATIONS:
        raise ConfigError(
            f"learned:{path}: the model was saved with observation {name!r}, which is not "
            f"registered in this process; registered: {', '.join(OBSERVATIONS)}; register it "
            f"with @market_hpc.rl.registry.register_observation({name!r}) in a module imported "
            f"before the model is loaded, or name that module in an installed package's "
            f"{GROUP!r} entry point"
        )
    try:
        return make_observation(name, window, spec.observation_params)
    except ConfigError as exc:
        raise ConfigError(f"learned:{path}: {exc}") from None


def load_model(path: str | Path) -> Any:
    """Load a MaskablePPO model on the CPU.

    Raises:
        ConfigError: the ``rl`` extra is not installed, or the file is missing.
    """
    try:
        from sb3_contrib import MaskablePPO
    except ImportError as exc:
        raise ConfigError(
            f"learned:{path} needs the rl extra (pip install 'market_hpc[rl]'): {exc}"
        ) from None
    if not Path(path).is_file():
        raise ConfigError(f"learned:{path}: no such model file")
    return MaskablePPO.load(str(path), device="cpu")


class GreedyPredictor:
    """A loaded model's deterministic choice (the argmax of its masked logits, what
    ``model.predict(..., deterministic=True)`` returns) without stable-baselines3's
    per-call preprocessing: one forward pass of the actor, a few times faster at batch 1.

    Torch runs on one thread here: at batch 1 a second thread only adds synchronisation
    (measured 3.7 ms against 50 ms a call on a busy 2-core machine).
    """

    def __init__(self, model: Any) -> None:
        import torch

        torch.set_num_threads(1)
        self._torch = torch
        self.policy = model.policy
        self.policy.set_training_mode(False)

    def predict(
        self, observation: np.ndarray, *, action_masks: np.ndarray, deterministic: bool = True
    ) -> tuple[int, None]:
        torch, policy = self._torch, self.policy
        with torch.no_grad():
            obs = torch.as_tensor(observation, dtype=torch.float32).unsqueeze(0)
            features = policy.extract_features(obs, policy.pi_features_extractor)
            logits = policy.action_net(policy.mlp_extractor.forward_actor(features))[0]
            logits[~torch.as_tensor(action_masks, dtype=torch.bool)] = -torch.inf
            return int(torch.argmax(logits)), None


_CAPABILITIES = handles(
    RESOURCES,
    KINDS,
    family="learned",
    reads="cores, GPUs, memory, burst buffer, estimates, waits, value curves (as features); "
    "every node resource via the allocator",
    ignores="queue ids, moldability (runs the requested size)",
)


@register_scheduler_family(
    "learned",
    "a trained dispatcher: learned:PATH loads the MaskablePPO model saved at PATH "
    "(market_hpc.rl.learned)",
    handles=_CAPABILITIES,
    argument="PATH",
)
def learned(allocator: Allocator, path: str) -> DispatchingPolicy:
    """The ``learned:PATH`` scheduler: the model at ``PATH`` with the options, observation and
    reward saved beside it (the observation is checked before the model is loaded)."""
    options, saved = load_options(path)
    observation = saved_observation(path, load_spec(path, saved), options.window)
    model = load_model(path)
    shape = getattr(getattr(model, "observation_space", None), "shape", None)
    if shape is not None and tuple(shape) != (observation.size,):
        raise ConfigError(
            f"learned:{path}: the model observes {tuple(shape)}, the saved options give "
            f"({observation.size},)"
        )
    return DispatchingPolicy(
        allocator,
        GreedyPredictor(model),
        options,
        name=f"learned:{path}",
        observation=observation,
    )
