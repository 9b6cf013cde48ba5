"""The docs' parameter tables, generated from the declarations (``market_hpc.parameters``).

``docs/parameters.md`` lists the keyword parameters of each family's schedulers in a
generated block (``<!-- NAME:start -->`` .. ``<!-- NAME:end -->``, written by
``scripts/policy_tables.py``); a test compares each block with :func:`parameter_table`, so a
parameter declared on a class appears there with no other edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from market_hpc.parameters import Param


@dataclass(frozen=True)
class TableBlock:
    """One generated parameter table.

    Attributes:
        page: The page under ``docs/`` that holds it.
        base: The module and class name of the family's base class
            (``market_hpc.policies.cp:CpScheduler``): every registered scheduler whose class
            derives from it is in the table (``""``: none is chosen by its class).
        setting: How its parameters are written in a scenario (``policy.params`` or
            ``policy.window``).
        rename: A parameter's name in the scenario, where it differs from the constructor's.
        families: Declared families (``SchedulerEntry.family``) whose every scheduler is in
            the table, for families built by factory functions rather than one base class.
        except_base: A base class (as ``base``) whose schedulers are left out: they have a
            table of their own (CPH is of the heterogeneity family and a CP dispatcher).
    """

    page: str
    base: str = ""
    setting: str = "policy.params"
    rename: Mapping[str, str] = field(default_factory=dict)
    families: tuple[str, ...] = ()
    except_base: str = ""


BLOCKS = {
    "bbsched-parameters": TableBlock(
        "parameters.md",
        "market_hpc.policies.bbsched.window:WindowScheduler",
        "policy.window",
        {"window": "size"},
    ),
    "cp-parameters": TableBlock("parameters.md", "market_hpc.policies.cp:CpScheduler"),
    "market-parameters": TableBlock("parameters.md", families=("market", "market baseline")),
    "hetero-parameters": TableBlock(
        "parameters.md",
        families=("heterogeneity",),
        except_base="market_hpc.policies.cp:CpScheduler",
    ),
    "slurm-parameters": TableBlock("parameters.md", families=("slurm",)),
}
"""The generated parameter tables, by block name."""


def family_members(
    base: type | None, families: tuple[str, ...] = (), except_base: type | None = None
) -> dict[str, Mapping[str, Param]]:
    """The declared parameters of every registered scheduler whose class derives from
    ``base`` or whose declared family is one of ``families``, leaving out those whose class
    derives from ``except_base``, by name (sorted)."""
    from market_hpc.policies import registry

    def derives(factory: object, cls: type | None) -> bool:
        return cls is not None and isinstance(factory, type) and issubclass(factory, cls)

    registry.scheduler_names()
    return {
        name: entry.parameters
        for name, entry in sorted(registry.SCHEDULERS.items())
        if entry.parameters is not None
        and (derives(entry.factory, base) or entry.family in families)
        and not derives(entry.factory, except_base)
    }


def _each(values: dict[str, str]) -> str:
    """One text when every scheduler has the same, else ``text (`a`, `b`); ...``."""
    texts: dict[str, list[str]] = {}
    for name, text in values.items():
        texts.setdefault(text, []).append(name)
    if len(texts) == 1:
        return next(iter(texts))
    return "; ".join(
        f"{text} ({', '.join(f'`{n}`' for n in names)})" for text, names in texts.items()
    )


def parameter_table(members: Mapping[str, Mapping[str, Param]], rename: Mapping[str, str]) -> str:
    """The markdown table of ``members``' parameters: one row per parameter (in order of
    first declaration) with its type, what is valid, its default and who takes it.

    >>> from market_hpc.validation import Range
    >>> print(parameter_table({"a": {"k": Param("int", Range(1, 9), default=2)},
    ...                        "b": {"k": Param("int", Range(1, 9), default=3)}}, {}))
    | parameter | type | valid | default | schedulers |
    |---|---|---|---|---|
    | `k` | int | a finite number in [1, 9] | 2 (`a`); 3 (`b`) | all |
    """
    rows: dict[str, dict[str, Param]] = {}
    for scheduler, declared in members.items():
        for name, param in declared.items():
            rows.setdefault(name, {})[scheduler] = param
    lines = ["| parameter | type | valid | default | schedulers |", "|---|---|---|---|---|"]
    for name, params in rows.items():
        takers = "all" if len(params) == len(members) else ", ".join(f"`{n}`" for n in params)
        kind = _each({n: p.kind for n, p in params.items()})
        valid = _each({n: p.describe() for n, p in params.items()})
        default = _each({n: p.default_text() for n, p in params.items()})
        lines.append(f"| `{rename.get(name, name)}` | {kind} | {valid} | {default} | {takers} |")
    return "\n".join(lines)


def block_table(block: TableBlock) -> str:
    """The table of one generated block, read from the registry."""
    import importlib

    def load(path: str) -> type | None:
        if not path:
            return None
        module, _, qualname = path.partition(":")
        found: type = getattr(importlib.import_module(module), qualname)
        return found

    members = family_members(load(block.base), block.families, load(block.except_base))
    return parameter_table(members, block.rename)
