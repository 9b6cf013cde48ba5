"""One exception hierarchy for the whole package.

Every error names what was wrong, what was received and, where there is a finite set,
what is valid.
"""

from __future__ import annotations

from collections.abc import Iterable


class MarketHpcError(Exception):
    """Base class of every error raised by market_hpc."""


class ConfigError(MarketHpcError):
    """A configuration value, key, preset or file is invalid."""


class InvalidNumberError(ConfigError, ValueError):
    """A number (time, size, factor, id) is not finite or out of range.

    Also a ``ValueError``, as ``Job``'s checks raised before they were named here.
    """

    def __init__(self, source: str, value: object, valid: str) -> None:
        self.source = source
        self.value = value
        self.valid = valid
        super().__init__(f"{source}: got {value!r}; valid: {valid}")


class UnknownNameError(ConfigError):
    """A name (policy, preset, key) is not one of the known choices."""

    def __init__(self, kind: str, name: str, choices: Iterable[str], note: str = "") -> None:
        self.kind = kind
        self.name = name
        self.choices = sorted(choices)
        super().__init__(f"unknown {kind} {name!r}; valid choices: {', '.join(self.choices)}{note}")


class PluginError(ConfigError):
    """An installed policy plugin (entry point group ``market_hpc.policies``) failed to load.

    Attributes:
        entry_point: The entry point, as ``name = module:object``.
        distribution: The package that declares it (``None`` when unknown).
    """

    def __init__(self, entry_point: str, distribution: str | None, message: str) -> None:
        self.entry_point = entry_point
        self.distribution = distribution
        source = f" from {distribution}" if distribution else ""
        super().__init__(f"policy plugin {entry_point!r}{source}: {message}")


class TraceFormatError(MarketHpcError):
    """A workload file has a malformed line or field."""

    def __init__(self, path: str, line: int | None, message: str, field: str | None = None) -> None:
        self.path = path
        self.line = line
        self.field = field
        where = path if line is None else f"{path}:{line}"
        what = f" field {field}:" if field else ""
        super().__init__(f"{where}:{what} {message}")


class PolicyError(MarketHpcError):
    """A policy returned a decision the model cannot execute."""

    def __init__(self, policy: str, time: float, message: str) -> None:
        self.policy = policy
        self.time = time
        super().__init__(f"policy {policy!r} at t={time:g}: {message}")


class OutputError(MarketHpcError):
    """A results file or folder cannot be written (exists, no permission, disk full).

    Attributes:
        path: The file or folder that could not be written.
    """

    def __init__(self, path: str, cause: str) -> None:
        self.path = path
        self.cause = cause
        super().__init__(f"cannot write {path}: {cause}")
