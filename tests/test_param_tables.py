"""A policy is declared once, on its class: its parameters, name, family and capabilities
reach the configuration check, ``market-hpc policies``, the docs' parameter tables and
``policy.window`` with no other edit (``market_hpc.policies.param_tables``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from market_hpc.cli import main
from market_hpc.errors import ConfigError
from market_hpc.experiment import config as config_module
from market_hpc.experiment.config import PolicyConfig, WindowConfig
from market_hpc.parameters import Param, constructor_keywords
from market_hpc.policies import make_policy, registry
from market_hpc.policies.base import Allocator
from market_hpc.policies.bbsched import schedulers
from market_hpc.policies.bbsched.schedulers import WINDOW_SCHEDULERS, BbSched
from market_hpc.policies.bbsched.window import WindowScheduler
from market_hpc.policies.cp import Pcp20
from market_hpc.policies.param_tables import BLOCKS, block_table, family_members, parameter_table

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = r"<!-- {0}:start -->\n(.*?)<!-- {0}:end -->"


def docs_block(page: str, name: str) -> str:
    found = re.findall(BLOCK.format(re.escape(name)), (DOCS / page).read_text(), re.DOTALL)
    assert len(found) == 1, f"docs/{page}: block {name} found {len(found)} times"
    return str(found[0])


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_each_docs_parameter_table_is_the_declarations(name: str) -> None:
    block = BLOCKS[name]
    assert docs_block(block.page, name) == block_table(block) + "\n", (
        f"docs/{block.page}: {name} differs from the declarations; run "
        "python scripts/policy_tables.py to rewrite it"
    )


def test_the_bbsched_table_has_each_window_setting_once() -> None:
    rows = docs_block("parameters.md", "bbsched-parameters").splitlines()[2:]
    settings = [row.split("|")[1].strip().strip("`") for row in rows]
    assert sorted(settings) == sorted(WINDOW_DEFAULTS)
    assert "| `exact_budget` | int | an integer in [0, 2^53 - 1] | 4000000 | `bbsched` |" in rows


WINDOW_DEFAULTS = {
    ("size" if name == "window" else name): default
    for cls in WINDOW_SCHEDULERS
    for name, default in constructor_keywords(cls).items()
}


def test_window_config_defaults_are_the_bbsched_declarations() -> None:
    fields = {field.name: field.default for field in dataclasses.fields(WindowConfig)}
    assert fields == WINDOW_DEFAULTS  # every declared window parameter, with its default
    assert (
        fields["exact_budget"]
        == registry.parameters_of("scheduler", "bbsched")["exact_budget"].default
    )  # type: ignore[index]


def test_a_window_parameter_declared_on_a_window_scheduler_is_a_policy_window_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Patient(BbSched):  # not registered: only policy.window reads the declaration
        label = "tmp-patient-bbsched"
        parameters: ClassVar[Mapping[str, Param]] = {
            **BbSched.parameters,
            "patience": Param("int", registry_range(1, 9)),
        }

        def __init__(self, allocator: Allocator, patience: int = 3, **params: Any):
            super().__init__(allocator, **params)

    monkeypatch.setattr(schedulers, "WINDOW_SCHEDULERS", (Patient, *WINDOW_SCHEDULERS))
    window = config_module._window_config()
    assert {f.name: f.default for f in dataclasses.fields(window)} == {
        **WINDOW_DEFAULTS,
        "patience": 3,
    }
    assert window(patience=9).patience == 9
    with pytest.raises(ConfigError) as refused:
        window(patience=10)
    assert str(refused.value) == "policy.window.patience: got 10; valid: an integer in [1, 9]"
    with pytest.raises(ConfigError) as refused:
        window(rule="best")
    assert str(refused.value) == "unknown policy.window.rule 'best'; valid choices: code, paper"


@pytest.fixture
def registered() -> Iterator[None]:
    names = registry.snapshot()
    try:
        yield
    finally:
        registry.restore(names)


def test_a_new_declared_parameter_reaches_config_listing_and_docs(
    registered: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    @registry.register_scheduler
    class TieBreaking(BbSched):
        label = "tmp-tie-bbsched"
        summary = "BBSched with a tie-break among equal Pareto points"
        parameters: ClassVar[Mapping[str, Param]] = {
            **BbSched.parameters,
            "tie_break": Param("str", choices=("first", "last")),
        }

        def __init__(self, allocator: Allocator, tie_break: str = "first", **params: Any):
            super().__init__(allocator, **params)
            self.tie_break = tie_break

    with pytest.raises(ConfigError) as refused:
        PolicyConfig(scheduler="tmp-tie-bbsched", params={"tie_break": "middle"})
    assert str(refused.value) == (
        "scheduler 'tmp-tie-bbsched': policy.params.tie_break = 'middle' is invalid; valid: "
        "one of first, last"
    )
    assert make_policy("tmp-tie-bbsched", scheduler_params={"tie_break": "last"}).tie_break == (
        "last"
    )
    assert main(["policies", "tmp-tie-bbsched"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(
        r"scheduler tmp-tie-bbsched \[bbsched; module [\w.]+\]: BBSched with a tie-break among "
        r"equal Pareto points",
        lines[0],
    )
    assert "  tie_break: str; one of first, last; default 'first'" in lines
    table = block_table(BLOCKS["bbsched-parameters"])
    assert "| `tie_break` | str | one of first, last | 'first' | `tmp-tie-bbsched` |" in table
    assert "| `rule` | str | one of paper, code | 'paper' | `bbsched`, `tmp-tie-bbsched` |" in table


def test_a_new_cp_parameter_reaches_config_listing_and_docs(
    registered: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    @registry.register_scheduler
    class Pcp20Probe(Pcp20):
        label = "tmp-pcp20"
        summary = "PCP'20 with a probe"
        parameters: ClassVar[Mapping[str, Param]] = {
            **Pcp20.parameters,
            "probe_every": Param("int", registry_range(1, 10)),
        }

        def __init__(self, allocator: Allocator, probe_every: int = 2, **params: Any):
            super().__init__(allocator, **params)
            self.probe_every = probe_every

    with pytest.raises(ConfigError) as refused:
        PolicyConfig(scheduler="tmp-pcp20", params={"probe_every": 0})
    assert str(refused.value) == (
        "scheduler 'tmp-pcp20': policy.params.probe_every = 0 is invalid; valid: an integer in "
        "[1, 10]"
    )
    assert main(["policies", "tmp-pcp20"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"scheduler tmp-pcp20 \[cp; module [\w.]+\]: PCP'20 with a probe\n", out)
    assert "  probe_every: int; an integer in [1, 10]; default 2\n" in out
    assert "| `probe_every` | int | an integer in [1, 10] | 2 | `tmp-pcp20` |" in block_table(
        BLOCKS["cp-parameters"]
    )
    assert registry.allocators_for("tmp-pcp20") == ["best-fit", "first-fit"]  # inherited


def registry_range(low: int, high: int) -> Any:
    from market_hpc.validation import Range

    return Range(low, high, integer=True)


def test_the_family_shows_in_the_listing_for_every_scheduler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for name in registry.scheduler_names():
        entry = registry.scheduler_entry(name)
        assert f"\n  {name} [{entry.family}; " in out
    families = {registry.scheduler_entry(name).family for name in registry.scheduler_names()}
    assert {"classic", "cp", "bbsched", "queues", "market", "heterogeneity", "slurm"} <= families


def test_a_bare_registration_needs_a_label_and_summary(registered: None) -> None:
    class Nameless(WindowScheduler):
        label = ""

    with pytest.raises(ConfigError, match="needs the class to declare label and summary"):
        registry.register_scheduler(Nameless)


def test_the_explicit_decorator_form_still_registers_a_plugin(registered: None) -> None:
    def factory(allocator: Allocator) -> Any:
        return make_policy("fifo", allocator.name)

    registry.register_scheduler("tmp-explicit", "an explicit entry", allocators=("best-fit",))(
        factory
    )
    entry = registry.scheduler_entry("tmp-explicit")
    assert (entry.summary, entry.allocators, entry.family) == (
        "an explicit entry",
        ("best-fit",),
        "plugin",
    )


def test_parameter_rows_name_who_takes_them() -> None:
    members = family_members(WindowScheduler)
    assert list(members)[:2] == ["bb-baseline", "bb-binpacking"]
    table = parameter_table(members, {"window": "size"})
    assert "| `normalise` | bool | true or false | true | `bb-binpacking` |" in table


def test_families_built_by_factories_get_their_tables_by_declared_family() -> None:
    # the auctions are made by factory functions (no common class): their table is chosen
    # by SchedulerEntry.family; CPH (heterogeneity family, a CP dispatcher) stays in the CP
    # table only
    from market_hpc.policies.cp import CpScheduler

    market = family_members(None, ("market", "market baseline"))
    assert {"maxv", "minvrh", "maxvlh", "easy-mold"} <= set(market)
    assert all(set(params) <= {"penalty", "max_holds"} for params in market.values())
    assert "max_holds" in market["maxvlh"] and "max_holds" not in market["maxv"]
    hetero = family_members(None, ("heterogeneity",), except_base=CpScheduler)
    assert set(hetero) == {"ebf", "prb"}
    assert "cph" in family_members(None, ("heterogeneity",))
    assert "cph" in family_members(CpScheduler)
    rows = docs_block("parameters.md", "market-parameters").splitlines()
    assert (
        "| `max_holds` | int | an integer in [0, 1000] | 2 | "
        "`maxvdlh`, `maxvlh`, `minvrlh`, `sjqlh` |" in rows
    )
