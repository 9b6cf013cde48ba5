"""``market-hpc demo``: the embedded default study.

Until the market policies land this compares the classic schedulers on a synthetic
Lublin-Feitelson workload sized for the KTH-SP2 platform, several seeds, and writes
``comparison.csv`` plus a bar plot.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from market_hpc.experiment.config import config_from_dict
from market_hpc.experiment.run import simulate

DEMO_POLICIES = (("fifo", "first-fit"), ("sjf", "first-fit"), ("easy", "first-fit"), ("easy", "best-fit"))


def run_demo(out: Path, seeds: int = 3, quick: bool = False) -> pd.DataFrame:
    """Run the study, print the table, write ``comparison.csv`` and ``comparison.png``."""
    rows = []
    n_jobs = 300 if quick else 3000
    for seed in range(1, seeds + 1):
        for scheduler, allocator in DEMO_POLICIES:
            config = config_from_dict({
                "name": "demo", "platform": "kth-sp2", "seed": seed,
                "workload": {"generator": "lublin-feitelson", "jobs": n_jobs, "load_factor": 1.5},
                "policy": {"scheduler": scheduler, "allocator": allocator},
            })
            summary = simulate(config).summary
            rows.append({"policy": f"{scheduler}+{allocator}", "seed": seed,
                         **{k: summary[k] for k in ("mean_wait", "mean_bounded_slowdown",
                                                    "utilisation_cores", "jobs_completed")}})
    table = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "comparison.csv", index=False)
    means = table.groupby("policy", sort=False).mean(numeric_only=True).drop(columns="seed")
    print(means.to_string(float_format=lambda v: f"{v:,.2f}"))
    _plot(means, out / "comparison.png")
    print(f"wrote {out / 'comparison.csv'} and {out / 'comparison.png'}")
    return table


def _plot(means: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    means["mean_bounded_slowdown"].plot.bar(ax=ax, color="#4477aa")
    ax.set_ylabel("mean bounded slowdown")
    ax.set_title("classic schedulers, synthetic overload (mean over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
