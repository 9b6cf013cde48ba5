"""Declared keyword parameters: what a policy class takes, its type, range and default.

A built-in scheduler, allocator or bidder declares its parameters once, on its class, beside
``__init__`` (as scikit-learn's ``_parameter_constraints``)::

    class BbSched(WindowScheduler):
        parameters: ClassVar[Mapping[str, Param]] = {
            **WindowScheduler.parameters,
            "solver": Param("str", choices=SOLVERS),
            ...
        }

The type and range are declared; the default is the ``__init__`` signature's, read once
when the class is registered (:func:`declared_parameters`). The registry's configuration
check (``policies.params.check_params``), ``market-hpc policies NAME`` and the docs'
parameter tables are derived from these declarations. A class without ``parameters``
(a plugin's) declares nothing: its factory checks its own parameters.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from market_hpc.errors import ConfigError
from market_hpc.validation import Range


class _Required:
    """The default of a parameter the constructor requires (it has no default)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
WIRING = ("allocator", "config")
"""Constructor arguments the run passes itself, never parameters: the composed allocator,
the hybrid queues' configuration (from ``[queues]``)."""


@dataclass(frozen=True)
class Param:
    """One declared keyword parameter.

    Attributes:
        kind: ``int``, ``float``, ``bool``, ``str``, ``str-list``, ``float-list``,
            ``wait-table`` (queue number to a positive expected wait in seconds) or
            ``number-table`` (a name or id to a number >= 0).
        valid: The range of an ``int``/``float`` (of each item of a ``float-list``).
        choices: The valid values of a ``str`` (of each item of a ``str-list``).
        optional: ``None`` is valid too (the factory's default).
        scalar_too: A ``float-list`` also takes one number (meaning it for every item).
        default: The constructor's default, read from its signature when the class is
            registered (:func:`declared_parameters`); ``REQUIRED`` when it has none.
    """

    kind: str
    valid: Range | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False
    scalar_too: bool = False
    default: Any = field(default=None, compare=False)  # REQUIRED once declared_parameters ran

    def describe(self) -> str:
        """What is valid, in words."""
        if self.kind in ("int", "float"):
            text = (
                self.valid.describe()
                if self.valid
                else f"a finite number{' (integer)' * (self.kind == 'int')}"
            )
        elif self.kind == "bool":
            text = "true or false"
        elif self.kind == "str":
            text = f"one of {', '.join(self.choices)}" if self.choices else "a string"
        elif self.kind == "str-list":
            text = f"a list of {', '.join(self.choices)}" if self.choices else "a list of strings"
        elif self.kind == "float-list":
            text = f"a list of numbers, each {self.valid.describe() if self.valid else 'finite'}"
        elif self.kind == "number-table":
            text = "a table of name = number (>= 0)"
        else:
            text = "a table of queue number = expected wait in seconds (> 0)"
        return text + (" (or absent)" if self.optional else "")

    def default_text(self) -> str:
        """The default, as a scenario file writes it (``required`` when there is none).

        >>> Param("bool", default=True).default_text(), Param("str", default="auto").default_text()
        ('true', "'auto'")
        """
        if self.default is REQUIRED:
            return "required"
        if self.default is None:
            return "none"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return repr(self.default)

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is of this parameter's type and in its range."""
        if value is None:
            return self.optional
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "int":
            return (
                isinstance(value, int)
                and not isinstance(value, bool)
                and (self.valid is None or self.valid.contains(value))
            )
        if self.kind == "float":
            return _number(value, self.valid)
        if self.kind == "str":
            return isinstance(value, str) and (not self.choices or value in self.choices)
        if self.kind == "str-list":
            return _sequence(value) and all(
                isinstance(item, str) and (not self.choices or item in self.choices)
                for item in value
            )
        if self.kind == "float-list":
            if self.scalar_too and _number(value, self.valid):
                return True
            return (
                _sequence(value)
                and len(value) > 0
                and all(_number(item, self.valid) for item in value)
            )
        if self.kind == "number-table":
            return isinstance(value, Mapping) and all(
                _number(number, Range(0.0, 2.0**50)) for number in value.values()
            )
        return isinstance(value, Mapping) and all(
            _integral(key) and _number(wait, POSITIVE) for key, wait in value.items()
        )


def _sequence(value: Any) -> bool:
    """A list, tuple or array (not text, not a table)."""
    return (
        hasattr(value, "__len__")
        and hasattr(value, "__iter__")
        and not isinstance(value, (str, bytes, Mapping))
    )


def _integral(value: Any) -> bool:
    try:
        return float(int(value)) == float(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _number(value: Any, valid: Range | None) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy scalars too
        return False
    return valid.contains(value) if valid else math.isfinite(float(value))


POSITIVE = Range(0.0, math.inf, low_open=True)
FRACTION = Range(0.0, 1.0)


def constructor_keywords(factory: Callable[..., Any]) -> dict[str, Any]:
    """The keyword parameters ``factory`` takes, by name, with their defaults (``REQUIRED``
    when none); through a class's bases while an ``__init__`` forwards ``**params``, and
    into the dataclass a class names as ``params_to`` when its ``**params`` go there (the
    ``slurm`` scheduler's settings; fields with ``metadata={"parameter": False}`` are not
    parameters).

    >>> class Base:
    ...     def __init__(self, allocator, window: int = 20) -> None: ...
    >>> class Child(Base):
    ...     def __init__(self, allocator, rule: str = "paper", **params) -> None: ...
    >>> constructor_keywords(Child)
    {'rule': 'paper', 'window': 20}
    >>> constructor_keywords(lambda allocator, penalty=0.0: None)
    {'penalty': 0.0}
    """
    if isinstance(factory, type):
        functions = [
            kind.__dict__["__init__"]
            for kind in factory.__mro__
            if "__init__" in kind.__dict__ and kind is not object
        ]
    else:
        functions = [factory]
    found: dict[str, Any] = {}
    for function in functions:
        items = list(inspect.signature(function).parameters.values())
        if isinstance(factory, type):
            items = items[1:]  # self
        forwards = False
        for item in items:
            if item.kind is item.VAR_KEYWORD:
                forwards = True
            elif item.kind in (item.POSITIONAL_OR_KEYWORD, item.KEYWORD_ONLY) and (
                item.name not in WIRING
            ):
                default = REQUIRED if item.default is item.empty else item.default
                found.setdefault(item.name, default)
        if not forwards:
            return found
    target = getattr(factory, "params_to", None)
    if target is not None and dataclasses.is_dataclass(target):
        for member in dataclasses.fields(target):
            if member.init and member.metadata.get("parameter", True):
                if member.default is not dataclasses.MISSING:
                    default = member.default
                elif member.default_factory is not dataclasses.MISSING:
                    default = member.default_factory()
                else:
                    default = REQUIRED
                found.setdefault(member.name, default)
    return found


def declared_parameters(
    kind: str,
    name: str,
    factory: Callable[..., Any],
    declared: Mapping[str, Param] | None = None,
) -> dict[str, Param] | None:
    """The parameters ``factory`` declares (its ``parameters``, or ``declared`` given to the
    registry), each with its default read from the signature; ``None`` when it declares
    none. Called once, when ``factory`` is registered.

    Args:
        kind: ``scheduler``, ``allocator`` or ``bidder`` (for the message).
        name: The registered name (for the message).
        factory: The class or function registered.
        declared: Declarations given at registration (for a factory function).

    Raises:
        ConfigError: ``factory`` declares its own parameters (not inherited ones) and they
            are not the keywords its constructor takes (both lists named).
    """
    own = declared is not None or (
        not isinstance(factory, type) or "parameters" in factory.__dict__
    )
    table = declared if declared is not None else getattr(factory, "parameters", None)
    if table is None:
        return None
    keywords = constructor_keywords(factory)
    if set(table) != set(keywords):
        if not own:  # a subclass (a plugin's) with its own __init__ and no declaration
            return None
        raise ConfigError(
            f"{kind} {name!r}: {getattr(factory, '__qualname__', factory)!r} declares "
            f"parameters {sorted(table)} but its constructor takes {sorted(keywords)}"
        )
    return {key: dataclasses.replace(param, default=keywords[key]) for key, param in table.items()}
