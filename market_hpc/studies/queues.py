"""The hybrid queues study (Kondameedi & Vadhiyar), a thin wrapper over the sweep machinery:

    python -m market_hpc.studies.queues [--out out/queues] [--workers 2] [--dask ADDR]

is ``market-hpc sweep scenarios/queues_sweep.toml --out OUT`` (resumable, local processes
or Dask) followed by ``market-hpc report OUT``, which writes ``report/queue_periods.csv``
(one row per strategy, study and period, with where each plan came from) and
``report/queue_claims.csv`` (the paper's comparisons; ``queues_report``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

SWEEP = Path(__file__).resolve().parents[2] / "scenarios" / "queues_sweep.toml"


def main(argv: Sequence[str] | None = None) -> None:
    """Command line entry point."""
    from market_hpc.experiment.report import write_report
    from market_hpc.experiment.sweep import run_sweep

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", type=Path, default=SWEEP)
    parser.add_argument("--out", type=Path, default=Path("out/queues"))
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--dask", default=None)
    args = parser.parse_args(argv)
    run_sweep(args.sweep, args.out, workers=args.workers, dask=args.dask)
    for path in write_report(args.out):
        print(path)


if __name__ == "__main__":
    main()
