"""Give rigid SWF jobs what the market needs: a speedup profile and a value curve.

Singh et al.'s market uses moldable task-graph jobs; archive traces only record how long a
job ran on the processors it got. This documented rule turns each trace job into a
moldable market job:

* **Speedup profile (Amdahl).** With serial fraction ``f`` the job's response time on
  ``c`` cores is ``T1 * (f + (1 - f) / c)`` for ``c = 1..P`` (P = its processor request),
  with ``T1`` chosen so that ``RT(P)`` equals the trace's run time: on the processors it
  asked for, the job runs exactly as recorded. Fewer cores make it slower, never faster.
* **Value curve.** The job is worth what it costs to run as requested, one unit per
  core-hour: ``V_max = P * run_time / 3600`` (at least ``min_value``). It keeps full value
  while it completes within ``plateau_slack`` seconds of what it would need on its full
  request (``RT(P) + plateau_slack`` after arrival), then loses value linearly and is
  worth nothing ``decay`` seconds later, where ``decay = decay_factor * max(RT(1),
  min_decay)``.
* **Zero-length jobs** (run time 0: a Slurm job that failed at launch, common in sacct
  exports) get a flat profile of ``ZERO_LENGTH_RUN_TIME`` (1 s, SWF's resolution) on
  every width, as the market's response times must be > 0; their value is
  ``min_value`` and their best width one core.
* The rule is deterministic (no randomness): the same trace gives the same market.

* **Units and nodes.** A job's width counts units of its unit vector (one core for a
  plain processor request; e.g. 2 cores + 1 GPU + 3 GB for an Eurora-like unit), and its
  value counts the cores it asked for (``units * cores per unit``). Its payload sets
  ``spans_nodes``: the market auctions may place it on several nodes, as the trace's
  platform ran it (``algorithms.market_offers``; docs/market.md). The paper's
  single-node rule stays for task-graph jobs. (Before, a machine whose jobs span nodes
  had to be pooled into one node, ``nodes=1,cores=N``; ``scenarios/hpc2n_market.toml``
  still does, and decides exactly as before.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from market_hpc.algorithms.valuecurve import LinearDecayCurve
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError

ZERO_LENGTH_RUN_TIME = 1.0  # seconds a zero-length job takes in the market, on any width
#: Response time on fewer units than requested of a job that may not mold
#: (``workload.all_families.molding = false``): past the end of every value curve, so no
#: auction ever prices such a width above 0 (and the core refuses it). 2**40 s keeps a
#: predictor's rescaling (``core.model``) below ``MAX_SECONDS``.
NARROWER_TIME = 2.0**40


@dataclass(frozen=True)
class MarketRule:
    """Parameters of the trace-to-market rule (see the module docstring).

    Attributes:
        serial_fraction: Amdahl serial fraction ``f`` in [0, 1).
        plateau_slack: Seconds of full value after the fastest possible completion.
        decay_factor: Value decays to zero over this many times the serial run time...
        min_decay: ...but over at least this many seconds.
        min_value: Floor of ``V_max`` so zero-length jobs are still worth something.
    """

    serial_fraction: float = 0.05
    plateau_slack: float = 4 * 3600.0
    decay_factor: float = 1.0
    min_decay: float = 24 * 3600.0
    min_value: float = 0.01

    def __post_init__(self) -> None:
        if not 0.0 <= self.serial_fraction < 1.0:
            raise ConfigError(
                f"market rule serial_fraction must be in [0, 1), got {self.serial_fraction}"
            )
        for name in ("plateau_slack", "decay_factor", "min_decay", "min_value"):
            if getattr(self, name) <= 0 and name != "plateau_slack":
                raise ConfigError(f"market rule {name} must be > 0, got {getattr(self, name)}")
        if self.plateau_slack < 0:
            raise ConfigError(f"market rule plateau_slack must be >= 0, got {self.plateau_slack}")

    def profile(self, run_time: float, procs: int) -> tuple[float, ...]:
        """Amdahl response times on 1..procs cores, equal to ``run_time`` on ``procs``.

        >>> [round(t, 2) for t in MarketRule(serial_fraction=0.0).profile(10.0, 4)]
        [40.0, 20.0, 13.33, 10.0]
        >>> MarketRule().profile(0.0, 3)          # zero-length: flat, 1 s
        (1.0, 1.0, 1.0)
        """
        if run_time <= 0:
            return (ZERO_LENGTH_RUN_TIME,) * procs
        f = self.serial_fraction
        serial = run_time / (f + (1.0 - f) / procs)
        times = [serial * (f + (1.0 - f) / c) for c in range(1, procs + 1)]
        times[-1] = float(run_time)
        return tuple(times)

    def rigid_profile(self, run_time: float, procs: int) -> tuple[float, ...]:
        """The profile of a job that runs only at its request: ``run_time`` (1 s when 0)
        on ``procs`` units, ``NARROWER_TIME`` on fewer.

        >>> MarketRule().rigid_profile(10.0, 3)
        (1099511627776.0, 1099511627776.0, 10.0)
        """
        return (NARROWER_TIME,) * (procs - 1) + (
            float(run_time) if run_time > 0 else ZERO_LENGTH_RUN_TIME,
        )

    def curve(self, run_time: float, procs: int, serial_time: float) -> LinearDecayCurve:
        """The job's value curve (elapsed time since arrival -> value).

        >>> MarketRule().curve(3600.0, 2, 7000.0)
        LinearDecayCurve(max_value=2.0, plateau_end=18000.0, zero_time=104400.0)
        """
        max_value = max(procs * run_time / 3600.0, self.min_value)
        plateau = run_time + self.plateau_slack
        decay = self.decay_factor * max(serial_time, self.min_decay)
        return LinearDecayCurve(max_value, plateau, plateau + decay)

    def apply(self, job: Job) -> Job:
        """The market version of one rigid trace job: moldable over 1..units units of its
        unit vector (one core for a plain processor request), on any nodes (``spans_nodes``)."""
        run_time = float(job.run_time)
        profile = self.profile(run_time, job.units)
        curve = self.curve(run_time, job.units * job.unit[0], profile[0])
        # Amdahl with f < 1 is strictly decreasing, so c* is the full request; a
        # zero-length job is as fast on one core.
        payload = {
            **job.payload,
            "value_curve": curve,
            "c_star": job.units if run_time > 0 else 1,
            "spans_nodes": True,
        }
        # run_time and estimate stay as recorded: classic schedulers see the same job.
        return replace(job, profile=profile, payload=payload)


def apply_market_rule(jobs: Iterable[Job], rule: MarketRule | None = None) -> list[Job]:
    """Apply ``rule`` (default parameters when ``None``) to every job."""
    chosen = rule or MarketRule()
    return [chosen.apply(job) for job in jobs]
