"""A library of profiled applications: the "Profiling Results" store of Singh et al.'s Fig. 3.

HLRS jobs come from a centre's recurring applications, profiled once at design time
(Algorithm 1) and reused at run time. The library bundled with the package
(``market_hpc/data/hlrs_like_apps.json``) holds 24 task graphs drawn by
``algorithms.taskgraph.random_task_graph`` from seed 2015 and their GA profiles
(``algorithms.profiling.profile_graph``, seed 2015). ``python -m
market_hpc.workload.applications`` rebuilds it; a test checks that a rebuild gives the
stored file exactly, so the store is never stale.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from market_hpc.algorithms.taskgraph import graph_hash, random_task_graph
from market_hpc.errors import ConfigError
from market_hpc.json_text import json_text
from market_hpc.workload.taskgraph_jobs import JobSet, generate_job_set

LIBRARY_SEED = 2015
LIBRARY_SIZE = 24
LIBRARY_FILE = "hlrs_like_apps.json"
# Value-curve regimes (options of ``generate_job_set``): the spec's suggested decay over
# beta ~ U[1, 3] x RT(1), and a steep one. Holding pays when waiting loses value fast.
CURVE_REGIMES: dict[str, dict[str, Any]] = {"spec": {}, "steep": {"beta_range": (0.2, 0.6)}}


@dataclass(frozen=True)
class Application:
    """A task graph and its design-time profile."""

    graph: nx.DiGraph
    response_times: tuple[float, ...]

    @property
    def key(self) -> str:
        """The graph hash that identifies the application."""
        return graph_hash(self.graph)


def build_library(n_apps: int = LIBRARY_SIZE, seed: int = LIBRARY_SEED) -> list[Application]:
    """Draw ``n_apps`` task graphs and profile each with the GA (Algorithm 1)."""
    from market_hpc.algorithms.profiling import profile_graph

    rng = np.random.default_rng(seed)
    graphs = [random_task_graph(rng) for _ in range(n_apps)]
    return [Application(g, tuple(profile_graph(g, seed=seed).response_times)) for g in graphs]


def library_to_dict(apps: list[Application]) -> dict[str, Any]:
    """Plain-JSON form of a library."""
    return {
        "format": "market_hpc.applications",
        "version": 1,
        "applications": [
            {
                "hash": app.key,
                "tasks": [[int(t), int(w)] for t, w in sorted(app.graph.nodes(data="wcet"))],
                "edges": [
                    [int(u), int(v), float(d)]
                    for u, v, d in sorted(app.graph.edges(data="data", default=0.0))
                ],
                "response_times": list(app.response_times),
            }
            for app in apps
        ],
    }


def library_from_dict(data: dict[str, Any], source: str) -> list[Application]:
    """Parse a library; a graph whose hash differs from the stored one is an error."""
    apps = []
    for index, record in enumerate(data.get("applications", [])):
        try:
            g = nx.DiGraph()
            for task, wcet in record["tasks"]:
                g.add_node(task, wcet=wcet)
            for u, v, volume in record["edges"]:
                g.add_edge(u, v, data=volume)
            app = Application(g, tuple(float(x) for x in record["response_times"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: applications[{index}] is malformed ({exc!r})") from None
        if app.key != record.get("hash"):
            raise ConfigError(f"{source}: applications[{index}] graph does not match its hash")
        apps.append(app)
    if not apps:
        raise ConfigError(f"{source}: no applications")
    return apps


@lru_cache(maxsize=1)
def bundled_library() -> tuple[Application, ...]:
    """The library shipped with the package."""
    text = resources.files("market_hpc.data").joinpath(LIBRARY_FILE).read_text()
    return tuple(library_from_dict(json.loads(text), LIBRARY_FILE))


def library_job_set(
    n_jobs: int, seed: int = 0, *, load: float = 2.0, curves: str = "spec", **options: Any
) -> JobSet:
    """An HLRS-like job set drawn from the bundled applications (no profiling at run time).

    Args:
        n_jobs: Jobs in the set.
        seed: Seed of the set (arrivals, values, which application each job runs).
        load: Offered load of the Poisson arrivals (> 1 overloads the platform).
        curves: A value-curve regime of ``CURVE_REGIMES``.
        options: Passed to ``generate_job_set`` (``platform_cores``, ``curve_shape``...).
    """
    if curves not in CURVE_REGIMES:
        from market_hpc.errors import UnknownNameError

        raise UnknownNameError("value-curve regime", curves, CURVE_REGIMES)
    options = {**CURVE_REGIMES[curves], **options}
    apps = bundled_library()
    profiles = {app.key: app.response_times for app in apps}
    return generate_job_set(
        n_jobs,
        seed,
        profiler=lambda g: profiles[graph_hash(g)],
        load=load,
        graph_pool=[app.graph for app in apps],
        **options,
    )


def main(argv: list[str] | None = None) -> int:
    """Rebuild the bundled library file."""
    target = (
        Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "data" / LIBRARY_FILE
    )
    target.write_text(json_text(library_to_dict(build_library()), indent=1))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
