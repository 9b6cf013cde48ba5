"""The registry of synthetic workload generators: one entry per ``workload.generator``.

Each entry names the scenario keys (``[workload]``) its generator reads, checks the
values only it gives a meaning to, and builds the jobs with the report written to
``config.json``. Configuration validation (:class:`~market_hpc.experiment.config.WorkloadConfig`)
and generation (:func:`~market_hpc.experiment.run.build_workload`) both go through
:func:`generator_entry`, so a generator is described once and an unknown name is refused
with the valid choices. The generator modules are imported when an entry builds jobs,
not before (a trace replay imports none of them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.errors import ConfigError, UnknownNameError

Build = Callable[[Any, int, Platform], tuple[list[Job], dict[str, Any]]]
"""``build(spec, seed, platform) -> (jobs, report)`` with ``spec`` a ``WorkloadConfig``."""


@dataclass(frozen=True)
class GeneratorEntry:
    """One synthetic workload generator.

    Attributes:
        name: The ``workload.generator`` value.
        parameters: ``[workload]`` keys the generator reads (besides the run's seed and
            platform).
        own_parameters: Of those, the keys no other workload source reads: set for
            another source, they are refused (``check_own_parameters``).
        build: Makes the jobs and the report.
        check: Validates the values of ``own_parameters`` (called only for this generator).
    """

    name: str
    parameters: tuple[str, ...]
    build: Build
    own_parameters: tuple[str, ...] = ()
    check: Callable[[Any], None] | None = None


def _lublin_feitelson(spec: Any, seed: int, platform: Platform) -> tuple[list[Job], dict[str, Any]]:
    from market_hpc.workload.synthetic import lublin_feitelson

    max_procs = spec.max_procs or platform.total_cores
    jobs = list(lublin_feitelson(spec.jobs, max_procs, seed))
    return jobs, {"generator": spec.generator, "jobs": len(jobs), "max_procs": max_procs}


def _taskgraphs(spec: Any, seed: int, platform: Platform) -> tuple[list[Job], dict[str, Any]]:
    from market_hpc.workload.applications import library_job_set

    cores = platform.total_cores
    jobs = list(
        library_job_set(
            spec.jobs,
            seed,
            load=spec.load,
            curves=spec.curves,
            platform_cores=cores,
            curve_shape=spec.curve_shape,
        )
    )
    return jobs, {
        "generator": spec.generator,
        "jobs": len(jobs),
        "load": spec.load,
        "curves": spec.curves,
        "curve_shape": spec.curve_shape,
        "applications": "bundled HLRS-like library",
    }


def _eurora(spec: Any, seed: int, platform: Platform) -> tuple[list[Job], dict[str, Any]]:
    from market_hpc.workload.eurora import eurora_like, workload_statistics

    jobs = list(eurora_like(spec.jobs, seed, spec.month))
    return jobs, {"generator": spec.generator, "month": spec.month, **workload_statistics(jobs)}


def _check_month(spec: Any) -> None:
    from market_hpc.workload.eurora import MONTHS

    if spec.month is not None and spec.month not in MONTHS:
        raise UnknownNameError("workload.month", spec.month, MONTHS)


def _kit(spec: Any, seed: int, platform: Platform) -> tuple[list[Job], dict[str, Any]]:
    from market_hpc.workload.kit import kit_like

    jobs = list(kit_like(spec.jobs, seed, spec.load, platform))
    return jobs, {"generator": spec.generator, "jobs": len(jobs), "load": spec.load}


GENERATORS: dict[str, GeneratorEntry] = {
    entry.name: entry
    for entry in (
        GeneratorEntry("lublin-feitelson", ("jobs", "max_procs"), _lublin_feitelson),
        GeneratorEntry("taskgraphs", ("jobs", "load", "curves", "curve_shape"), _taskgraphs),
        GeneratorEntry(
            "eurora", ("jobs", "month"), _eurora, own_parameters=("month",), check=_check_month
        ),
        GeneratorEntry("kit", ("jobs", "load"), _kit),  # PCP'20's KIT ForHLR II (workload.kit)
    )
}
"""Every generator, by name."""


def generator_entry(name: str) -> GeneratorEntry:
    """The registry entry of ``name``.

    Raises:
        UnknownNameError: ``name`` is no generator; the message lists the valid ones.

    >>> generator_entry("kit").parameters
    ('jobs', 'load')
    >>> generator_entry("poisson")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.UnknownNameError: unknown workload.generator 'poisson'; valid choices: eurora,
    kit, lublin-feitelson, taskgraphs
    """
    entry = GENERATORS.get(name)
    if entry is None:
        raise UnknownNameError("workload.generator", name, GENERATORS)
    return entry


def check_own_parameters(spec: Any) -> None:
    """Refuse a generator's own parameter set for another workload source, and check the
    own parameters of the configured generator.

    Args:
        spec: A ``WorkloadConfig``; its own parameters are ``None`` when not set.

    Raises:
        ConfigError: A parameter set for a source that does not read it, or a bad value.
    """
    for entry in GENERATORS.values():
        for key in entry.own_parameters:
            if getattr(spec, key) is not None and spec.generator != entry.name:
                raise ConfigError(
                    f'workload.{key} applies to generator = "{entry.name}" only, got '
                    f"generator={spec.generator!r}"
                )
    if spec.generator is not None:
        entry = generator_entry(spec.generator)
        if entry.check is not None:
            entry.check(spec)


def generate(spec: Any, seed: int, platform: Platform) -> tuple[list[Job], dict[str, Any]]:
    """Build the jobs of ``spec.generator`` and the report of what was generated.

    Args:
        spec: A ``WorkloadConfig`` naming a generator.
        seed: The run's seed.
        platform: The run's platform.

    Raises:
        UnknownNameError: ``spec.generator`` is no generator.
    """
    return generator_entry(spec.generator).build(spec, seed, platform)
