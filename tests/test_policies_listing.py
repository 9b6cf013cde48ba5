"""``market-hpc policies`` and the docs table of what each family reads and ignores."""

from __future__ import annotations

import re
from pathlib import Path

from market_hpc.cli import main
from market_hpc.policies.capabilities import family_table

DOCS = Path(__file__).resolve().parent.parent / "docs" / "concepts.md"


def test_policies_lists_schedulers_allocators_and_bidders(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for expected in [
        "  fifo [classic; built in]: first come, first served; the head blocks the queue",
        "      handles: cores, gpus, mics, mem, bb; rigid, moldable (requested size), task-graph (requested size)",
        "  maxvh [market; built in]: market (Singh et al.): maximum value queued job first, with holding",
        "      handles: cores; moldable, task-graph, value curves needed",
        "      allocators: max-bid (default max-bid)",
        "  queues-hybrid [queues; built in]: hybrid queues: partitions plus a common pool by priority factor",
        "      handles: cores, gpus, mics, mem, bb; rigid, moldable (requested size), task-graph (requested size), queues",
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
    assert re.search(r"  tmp-undeclared \[plugin; module [\w.]+\]: a test scheduler\n      handles: undeclared "
                     r"\(assumed: cores, gpus, mics, mem, bb; rigid, moldable \(requested size\), task-graph "
                     r"\(requested size\)\)", out), out


def test_the_docs_table_is_generated_from_the_registry() -> None:
    text = DOCS.read_text()
    start, end = "<!-- family-table:start -->\n", "\n<!-- family-table:end -->"
    assert start in text and end in text
    table = text[text.index(start) + len(start):text.index(end)]
    assert table == family_table()
