"""``python -m market_hpc``."""

import sys

from market_hpc.cli import main

sys.exit(main())
