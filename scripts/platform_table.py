#!/usr/bin/env python3
"""Write the platform presets' table (what ``market-hpc platforms`` prints) into
``docs/concepts.md`` and ``README.md``, between ``<!-- platform-table:start -->`` and
``<!-- platform-table:end -->``.

    python scripts/platform_table.py           # rewrite both blocks
    python scripts/platform_table.py --check   # exit 1 when a block differs

``tests/test_platforms_command.py`` fails when a block differs from the command's output.
"""

from __future__ import annotations

import argparse
import sys

from doc_blocks import ROOT, read_block, write_block

from market_hpc.cli.platforms_cmd import platforms_table

BLOCK = "platform-table"
PAGES = (ROOT / "docs" / "concepts.md", ROOT / "README.md")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare, exit 1 on a difference")
    args = parser.parse_args()
    body = "\n".join(platforms_table()) + "\n"
    stale = []
    for page in PAGES:
        if args.check:
            if read_block(page.read_text(), BLOCK) != body:
                stale.append(page)
        elif write_block(page, BLOCK, body):
            print(f"{page.relative_to(ROOT)}: platform table rewritten")
    for page in stale:
        print(
            f"{page.relative_to(ROOT)}: platform table differs from market-hpc platforms",
            file=sys.stderr,
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
