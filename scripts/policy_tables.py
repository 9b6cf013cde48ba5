"""Write the docs' parameter tables (``market_hpc.policies.param_tables.BLOCKS``) from the
policies' declarations into their pages' generated blocks.

    python scripts/policy_tables.py           # rewrite the blocks
    python scripts/policy_tables.py --check   # only report the blocks that differ
"""

from __future__ import annotations

import argparse
import sys

from doc_blocks import ROOT, read_block, write_block

from market_hpc.policies.param_tables import BLOCKS, block_table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report, do not write")
    args = parser.parse_args()
    stale = []
    for name, block in BLOCKS.items():
        page = ROOT / "docs" / block.page
        table = block_table(block)
        if args.check:
            if read_block(page.read_text(), name) != table + "\n":
                stale.append(f"{block.page}: {name}")
        elif write_block(page, name, table):
            print(f"wrote {block.page}: {name}")
    for line in stale:
        print(f"differs: {line}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
