"""What each scheduler handles, and the configuration-time check that a workload needs
nothing a scheduler lacks.

A scheduler declares ``Capabilities``: the node resources and burst buffer it accounts
for, the job kinds it runs, whether it needs value curves, whether it reads queue ids.
``check_composition`` compares them with what a built workload needs
(``workload_needs``) and refuses, before any simulation, a scheduler that lacks
something, naming what it lacks, how many jobs need it (with an example job id) and the
registered schedulers that handle it. No decision is then refused mid-run because a
policy ignored a resource.

Decisions:

* A rigid scheduler runs a moldable job (the market rule's trace jobs, task-graph jobs)
  at its requested size: ``job.units`` units of ``job.unit``, on as many nodes as its
  allocator chooses, taking ``profile[units - 1]`` (for the market rule: the trace's run
  time). Moldability is an attribute rigid policies may ignore. A moldable job that
  cannot run at its requested size (larger than the platform, or a request beyond its
  profile) is refused for rigid schedulers: it would wait forever.
* Queue ids are an attribute every scheduler may ignore (it then serves one queue); only
  the hybrid-queue schedulers read them.
* A scheduler that declares nothing (a plugin written before capabilities existed) is
  listed as "undeclared" and assumed to handle what the built-ins of its kind handle
  (``UNDECLARED`` for dispatchers composed with an allocator, ``UNDECLARED_MARKET`` for
  ``market=True`` ones), so it keeps working where it worked before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from market_hpc.errors import ConfigError

if TYPE_CHECKING:
    from market_hpc.domain.job import Job
    from market_hpc.domain.platform import Platform

RESOURCES = ("cores", "gpus", "mics", "mem", "bb")
"""Node resources (columns of a job's unit vector) and the shared burst buffer."""
KINDS = ("rigid", "moldable", "task-graph")
"""Job kinds: a fixed request; a speedup profile (market rule); a task graph with one."""
RESOURCE_LABELS = {
    "cores": "cores",
    "gpus": "GPUs",
    "mics": "MICs",
    "mem": "memory",
    "bb": "the burst buffer",
}


@dataclass(frozen=True)
class Capabilities:
    """What a scheduler handles.

    Attributes:
        resources: Subset of ``RESOURCES`` its decisions account for.
        kinds: Subset of ``KINDS`` it runs.
        molds: Whether it chooses a moldable job's width (else it runs moldable jobs at
            their requested size).
        value_curves: Whether every job needs a value curve (market auctions).
        queues: Whether it reads queue ids (hybrid-queue partitions).
        family: Short family label for listings and docs.
        reads: What it reads, one phrase (docs table).
        ignores: What it ignores, one phrase (docs table).
        declared: ``False`` for the assumed capabilities of an undeclared plugin.
    """

    resources: frozenset[str]
    kinds: frozenset[str]
    molds: bool = False
    value_curves: bool = False
    queues: bool = False
    family: str = ""
    reads: str = ""
    ignores: str = ""
    declared: bool = True

    def __post_init__(self) -> None:
        unknown = (set(self.resources) - set(RESOURCES)) | (set(self.kinds) - set(KINDS))
        if unknown or "cores" not in self.resources or not self.kinds:
            raise ConfigError(
                "capabilities: resources must include 'cores' and be among "
                f"{', '.join(RESOURCES)}; "
                f"kinds among {', '.join(KINDS)} (at least one); got resources "
                f"{sorted(self.resources)}, kinds {sorted(self.kinds)}"
            )

    def handles(self, need: str) -> bool:
        """Whether it handles one resource or job kind."""
        return need in self.resources or need in self.kinds

    def describe(self) -> str:
        """One line: ``cores, gpus, ...; rigid, moldable (requested size), ...``."""
        kinds = [
            kind if kind == "rigid" or self.molds else f"{kind} (requested size)"
            for kind in KINDS
            if kind in self.kinds
        ]
        extra = (["value curves needed"] if self.value_curves else []) + (
            ["queues"] if self.queues else []
        )
        text = (
            f"{', '.join(r for r in RESOURCES if r in self.resources)}; {', '.join(kinds + extra)}"
        )
        return text if self.declared else f"undeclared (assumed: {text})"


def handles(
    resources: Iterable[str] = RESOURCES,
    kinds: Iterable[str] = KINDS,
    *,
    molds: bool = False,
    value_curves: bool = False,
    queues: bool = False,
    family: str = "",
    reads: str = "",
    ignores: str = "",
) -> Capabilities:
    """Build ``Capabilities`` (the ``handles=`` argument of ``register_scheduler``).

    >>> handles(("cores",), ("moldable",), molds=True).describe()
    'cores; moldable'
    """
    return Capabilities(
        frozenset(resources), frozenset(kinds), molds, value_curves, queues, family, reads, ignores
    )


UNDECLARED = Capabilities(frozenset(RESOURCES), frozenset(KINDS), family="plugin", declared=False)
UNDECLARED_MARKET = Capabilities(
    frozenset({"cores"}),
    frozenset({"moldable", "task-graph"}),
    molds=True,
    value_curves=True,
    family="plugin",
    declared=False,
)

_RIGID_IGNORES = "queue ids, value curves, moldability (runs the requested size)"
# What each family of built-in schedulers handles, reads and ignores; each scheduler class
# names its family's as its ``handles`` (the registry reads it there; the matrix test pins
# them).
CLASSIC = handles(
    family="classic",
    reads="cores, GPUs, MICs, memory (via the allocator), burst buffer; estimates",
    ignores=_RIGID_IGNORES,
)
HETEROGENEITY = handles(
    family="heterogeneity",
    reads=(
        "every node resource per unit, burst buffer; estimates (PRB: the queue's expected wait)"
    ),
    ignores=_RIGID_IGNORES,
)
CP = handles(
    family="cp",
    reads="every node resource per unit, burst buffer; estimates",
    ignores=_RIGID_IGNORES,
)
BBSCHED = handles(
    family="bbsched",
    reads=(
        "cores and burst buffer in the window's objectives; other node resources via the allocator"
    ),
    ignores=_RIGID_IGNORES,
)
QUEUES_SHARED = handles(
    queues=True,
    family="queues",
    reads=(
        "queue ids (one EASY over the machine), every node resource per unit, burst buffer; "
        "estimates"
    ),
    ignores="value curves, moldability (runs the requested size)",
)
# A moldable job runs at its requested size, like a rigid one: in its queue's partition
# when that holds the size, else machine-wide (as a rigid job larger than its partition).
QUEUES_PARTITIONED = handles(
    queues=True,
    family="queues",
    reads="queue ids (partitions), every node resource per unit, burst buffer; estimates",
    ignores="value curves, moldability (runs the requested size)",
)
MARKET = handles(
    RESOURCES,
    ("moldable", "task-graph"),
    molds=True,
    value_curves=True,
    family="market",
    reads=(
        "free resources of each node (bids; cores, GPUs, MICs, memory per unit), burst buffer, "
        "value curves, "
        "speedup profiles; a spans_nodes job (market rule) takes several nodes' offers"
    ),
    ignores="estimates, queue ids; task-graph jobs stay on one node",
)
MARKET_BASELINE = handles(
    ("cores", "bb"),
    ("moldable", "task-graph"),
    molds=True,
    family="market baseline",
    reads=(
        "free cores (of several nodes for a spans_nodes job), burst buffer (checked, not "
        "reserved), speedup profiles, estimates"
    ),
    ignores="GPUs, MICs, memory, value curves, queue ids",
)


# ----------------------------------------------------------------- workload needs
@dataclass(frozen=True)
class Need:
    """Jobs of a workload that need one thing: how many, and the first one's id."""

    count: int
    example: int


@dataclass(frozen=True)
class WorkloadNeeds:
    """What a built workload needs of a scheduler (``workload_needs``).

    Attributes:
        needs: Resource or kind name -> the jobs needing it.
        no_value_curve: Jobs without a value curve (market auctions need one).
        oversized_moldable: Moldable jobs that cannot run at their requested size.
    """

    needs: dict[str, Need] = field(default_factory=dict)
    no_value_curve: Need | None = None
    oversized_moldable: Need | None = None


def _kind(job: Job) -> str:
    if job.profile is None:
        return "rigid"
    return "task-graph" if "task_graph" in job.payload else "moldable"


def workload_needs(jobs: Sequence[Job], platform: Platform) -> WorkloadNeeds:
    """Scan ``jobs`` once: which resources and job kinds they request.

    >>> from market_hpc.domain.job import Job
    >>> from market_hpc.domain.platform import load_platform
    >>> job = Job(4, 0.0, 1.0, 1.0, unit=(1, 1, 0, 0), bb=2.0)
    >>> needs = workload_needs([job], load_platform("nodes=1,cores=2"))
    >>> sorted(needs.needs), needs.needs["gpus"]
    (['bb', 'cores', 'gpus', 'rigid'], Need(count=1, example=4))
    """
    from market_hpc.algorithms.allocation import units_fit
    from market_hpc.domain.job import CORE_UNIT

    counts: dict[str, list[int]] = {}  # key -> [jobs, first job id]
    no_curve = [0, -1]  # jobs without a value curve, the first one's id
    oversized: list[int] = []
    room: dict[tuple[int, ...], int] = {}
    plain: tuple[list[int], list[int]] | None = None  # cores and rigid entries, for the common case

    def note(key: str, job_id: int) -> None:
        entry = counts.setdefault(key, [0, job_id])
        entry[0] += 1

    for job in jobs:
        unit = job.unit
        if "value_curve" not in job.payload:
            if not no_curve[0]:
                no_curve[1] = job.job_id
            no_curve[0] += 1
        if unit == CORE_UNIT and job.profile is None and not job.bb:  # a plain rigid trace job
            if plain is None:
                plain = (
                    counts.setdefault("cores", [0, job.job_id]),
                    counts.setdefault("rigid", [0, job.job_id]),
                )
            plain[0][0] += 1
            plain[1][0] += 1
            continue
        for index, name in enumerate(RESOURCES[:4]):
            if unit[index] > 0:
                note(name, job.job_id)
        if job.bb > 0:
            note("bb", job.job_id)
        note(_kind(job), job.job_id)
        if job.profile is not None:
            fits = room.get(unit)
            if fits is None:
                fits = room[unit] = int(units_fit(platform.capacity, unit).sum())
            if job.units > fits or job.units > len(job.profile):
                oversized.append(job.job_id)
    return WorkloadNeeds(
        {key: Need(count, example) for key, (count, example) in counts.items()},
        Need(no_curve[0], no_curve[1]) if no_curve[0] else None,
        Need(len(oversized), oversized[0]) if oversized else None,
    )


# ------------------------------------------------------------------ the check
def _handlers(need: str, table: dict[str, Capabilities]) -> str:
    names = [name for name, caps in sorted(table.items()) if caps.handles(need)]
    return ", ".join(names) if names else "none registered"


def _jobs(need: Need) -> str:
    return f"{need.count} job{'s' if need.count != 1 else ''} (e.g. job {need.example})"


def lacks(caps: Capabilities, needs: WorkloadNeeds, table: dict[str, Capabilities]) -> list[str]:
    """Sentences naming each thing ``caps`` lacks that ``needs`` asks for (empty: it composes)."""
    found = []
    for resource in RESOURCES:
        need = needs.needs.get(resource)
        if need is not None and resource not in caps.resources:
            found.append(
                f"it ignores {RESOURCE_LABELS[resource]}, requested by {_jobs(need)} "
                f"(handled by: {_handlers(resource, table)})"
            )
    for kind in KINDS:
        need = needs.needs.get(kind)
        if need is not None and kind not in caps.kinds:
            what = "rigid jobs (no speedup profile)" if kind == "rigid" else f"{kind} jobs"
            found.append(
                f"it does not run {what}: {_jobs(need)} (run by: {_handlers(kind, table)})"
            )
    if caps.value_curves and needs.no_value_curve is not None:
        curve_free = ", ".join(
            name for name, other in sorted(table.items()) if not other.value_curves
        )
        found.append(
            f"it needs value curves, missing for {_jobs(needs.no_value_curve)} (use a task-graph "
            f"job set or workload.market = true; schedulers that need none: {curve_free})"
        )
    if not caps.molds and needs.oversized_moldable is not None:
        molders = ", ".join(name for name, other in sorted(table.items()) if other.molds)
        found.append(
            f"it runs moldable jobs at their requested size, which the platform cannot hold for "
            f"{_jobs(needs.oversized_moldable)} (schedulers that mold jobs to a node: {molders})"
        )
    return found


def refusal(
    scheduler: str, caps: Capabilities, needs: WorkloadNeeds, table: dict[str, Capabilities]
) -> str | None:
    """The configuration-time refusal of ``scheduler`` on a workload, or ``None``."""
    found = lacks(caps, needs, table)
    if not found:
        return None
    return f"scheduler {scheduler!r} cannot run this workload: " + "; ".join(found)


# ------------------------------------------------------- allocators and bidders
UNDECLARED_TEXT = "undeclared"
"""What ``market-hpc policies`` shows for an allocator without ``places`` or a bidder without
``prices`` (a plugin's)."""


def family_table(table: Mapping[str, Capabilities]) -> str:
    """The docs table "What each family reads and what it ignores" (markdown), one row per
    family and capability set (by family, then first name), from ``table``
    (``registry.builtin_capabilities()``: the built-ins').

    >>> family_table({"easy": CLASSIC}).splitlines()[0]
    '| family | schedulers | handles | reads | ignores |'
    """
    rows: dict[tuple[str, str, str, str], list[str]] = {}
    for name, caps in table.items():
        rows.setdefault((caps.family, caps.describe(), caps.reads, caps.ignores), []).append(name)
    lines = ["| family | schedulers | handles | reads | ignores |", "|---|---|---|---|---|"]
    for (family, described, reads, ignores), names in sorted(
        rows.items(), key=lambda row: (row[0][0], row[1])
    ):
        lines.append(
            f"| {family} | {', '.join(f'`{n}`' for n in names)} | {described} | {reads} "
            f"| {ignores} |"
        )
    return "\n".join(lines)
