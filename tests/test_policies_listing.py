"""``market-hpc policies`` and the docs table of what each family reads and ignores."""

from __future__ import annotations

import re
from pathlib import Path

from market_hpc.cli import main
from market_hpc.policies.capabilities import family_table
from market_hpc.policies.registry import builtin_capabilities

DOCS = Path(__file__).resolve().parent.parent / "docs" / "concepts.md"


def test_policies_lists_schedulers_allocators_and_bidders(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for expected in [
        "  fifo [classic; built in]: first come, first served; the head blocks the queue",
        (
            "      handles: cores, gpus, mics, mem, bb; rigid, moldable (requested size), "
            "task-graph "
            "(requested size)"
        ),
        (
            "  maxvh [market; built in]: market (Singh et al.): maximum value queued job first, "
            "with "
            "holding"
        ),
        "      handles: cores, gpus, mics, mem, bb; moldable, task-graph, value curves needed",
        "      allocators: max-bid (default max-bid)",
        (
            "  queues-hybrid [queues; built in]: hybrid queues: partitions plus a common pool by "
            "priority factor"
        ),
        (
            "      handles: cores, gpus, mics, mem, bb; rigid, moldable (requested size), "
            "task-graph "
            "(requested size), queues"
        ),
        "  first-fit [built in]: lowest-index nodes first",
        "      places: cores, gpus, mics, mem per unit, bb checked; spans nodes",
        "  free-cores [built in]: bid the node's free cores (Singh et al., HPCS'15)",
    ]:
        assert expected in lines, expected
    assert lines[0] == "schedulers (name [family; origin]: summary / handles / allocators):"


def test_an_undeclared_plugin_is_listed_as_such(capsys) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.policies import registry

    names = registry.snapshot()
    try:
        registry.register_scheduler("tmp-undeclared", "a test scheduler")(lambda allocator: None)
        main(["policies"])
    finally:
        registry.restore(names)
    out = capsys.readouterr().out
    assert re.search(
        r"  tmp-undeclared \[plugin; module [\w.]+\]: a test scheduler\n      handles: undeclared "
        r"\(assumed: cores, gpus, mics, mem, bb; rigid, moldable \(requested size\), task-graph "
        r"\(requested size\)\)",
        out,
    ), out


def test_the_docs_table_is_generated_from_the_registry() -> None:
    text = DOCS.read_text()
    start, end = "<!-- family-table:start -->\n", "\n<!-- family-table:end -->"
    assert start in text and end in text
    table = text[text.index(start) + len(start) : text.index(end)]
    assert table == family_table(builtin_capabilities())


LEARNED_SUMMARY = (
    "a trained dispatcher: learned:PATH loads the MaskablePPO model saved at PATH "
    "(market_hpc.rl.learned)"
)


def test_prefix_families_are_listed_with_summary_and_family(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index(f"  learned:PATH [learned; built in]: {LEARNED_SUMMARY}")
    assert lines[at + 1] == (
        "      handles: cores, gpus, mics, mem, bb; rigid, moldable (requested size), "
        "task-graph (requested size)"
    )
    assert lines[at + 2] == (
        "      allocators: balanced, best-fit, first-fit, priority-weighted, weighted "
        "(default first-fit)"
    )
    assert lines[at - 3].startswith("  hcp19 ") and lines[at + 3].startswith(
        "  ljf "
    )  # sorted by name


def test_a_plugin_family_is_listed_by_its_placeholder(capsys) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.policies import registry

    names = registry.snapshot()
    try:
        registry.register_scheduler_family("tmp-family", "a test family", argument="NAME")(
            lambda allocator, argument: None
        )
        registry.register_scheduler_family("tmp-plain", "a family without a placeholder")(
            lambda allocator, argument: None
        )
        main(["policies"])
    finally:
        registry.restore(names)
    out = capsys.readouterr().out
    assert re.search(
        r"\n  tmp-family:NAME \[plugin; module [\w.]+\]: a test family\n      handles: undeclared ",
        out,
    ), out
    assert re.search(
        r"\n  tmp-plain:ARGUMENT \[plugin; module [\w.]+\]: a family without a placeholder\n", out
    )
    assert "tmp-family" not in "\n".join(registry.scheduler_names())


def test_replay_help_names_the_prefix_families() -> None:
    from market_hpc.cli.commands import build_parser

    parser = build_parser()
    replay = next(
        action
        for action in parser._subparsers._group_actions[0].choices.values()  # type: ignore[union-attr]
        if action.prog.endswith(" replay")
    )
    scheduler = next(action for action in replay._actions if "--scheduler" in action.option_strings)
    assert scheduler.help is not None
    assert scheduler.help.endswith(f", wfp3, wfp3-easy; or learned:PATH ({LEARNED_SUMMARY})")


def test_policies_name_lists_each_declared_parameter_with_type_range_and_default(capsys) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.cli import main

    assert main(["policies", "bbsched"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "scheduler bbsched [bbsched; built in]: BBSched: GA Pareto set of (nodes, burst buffer) "
        "+ the paper's decision rule"
    )
    assert lines[1] == "scheduler bbsched parameters (name: type; valid; default):"
    assert "  exact_budget: int; an integer in [0, 2^53 - 1]; default 4000000" in lines
    assert "  window: int; an integer in [1, 1e+06]; default 20" in lines
    assert len(lines) == 2 + 12
    assert main(["policies", "locality"]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "  distance: float-list; a list of numbers, each a finite number >= 0; default required",
        "  weight: float; a finite number >= 0; default 1.0",
    ]
