"""The readings of BBSched's starvation bound (Fan et al., HPDC'19): what counts as an
"iteration" of a job in the window (``policies/bbsched/starvation.py``), each pinned by a
hand-checked run in which the readings start a wide job at different times."""

from __future__ import annotations

import pytest

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.experiment import config_from_dict
from market_hpc.policies import make_policy
from market_hpc.policies.bbsched.starvation import Starvation

# 10 nodes, FCFS, w = 20. Invocations: t = 0, 1, 2, 12, 20, 30, 40, 1,000, and one more.
WIDE_JOBS = [
    Job(1, 0.0, 1000.0, 1000.0, units=4),  # runs until t = 1,000: 6 nodes free
    Job(2, 1.0, 100.0, 100.0, units=8),  # W: does not fit before t = 1,000
    Job(3, 2.0, 10.0, 10.0, units=2),  # S1, S2 at t = 2: two jobs fit (a choice)
    Job(4, 2.0, 10.0, 10.0, units=2),
    Job(5, 20.0, 10.0, 10.0, units=2),  # S3, S4 at t = 20: a choice again
    Job(6, 20.0, 10.0, 10.0, units=2),
    Job(7, 40.0, 2000.0, 2000.0, units=4),  # L: fits at t = 40, runs past W's shadow time
]


def _run(scheduler: str, **params: object) -> tuple[dict[int, float], dict[str, float]]:
    policy = make_policy(scheduler, "first-fit", scheduler_params=params)
    model = HPCModel(WIDE_JOBS, "nodes=10,cores=1,bb=10", policy=policy, seed=1)
    model.run()
    return model.recorder.jobs_frame().set_index("job_id")["start_time"].to_dict(), policy.stats


@pytest.mark.parametrize("scheduler", ["bb-constrained-cpu", "bbsched"])
@pytest.mark.parametrize(
    ("params", "w_start", "l_start", "blocks", "backstop"),
    [
        # every invocation counts: W is in the window at t = 1, 2, 12 (3 > 2.5), starving
        # from t = 20 and holding the reservation at t = 20, 30, 40 (shadow 1,000, extra
        # 2 nodes): L (4 nodes, past the shadow time) may not start; W at 1,000, L at 1,100
        ({"starvation": 2.5, "starvation_by": "invocations"}, 1000.0, 1100.0, 3, 0),
        # only invocations with a choice count: t = 2 and t = 20, 2 (not > 2.5): W is not
        # starving at t = 40, L (the lone candidate) starts, W waits for it until 2,040
        ({"starvation": 2.5, "starvation_by": "optimised"}, 2040.0, 40.0, 0, 0),
        # 2 > 1.5: W is starving from t = 30 (blocks at 30 and 40)
        ({"starvation": 1.5, "starvation_by": "optimised"}, 1000.0, 1100.0, 2, 0),
        # W never fits before t = 1,000, so it is never passed over: L starts at 40
        (
            {"starvation": 0.5, "starvation_by": "passed-over", "starvation_backstop": 1e6},
            2040.0,
            40.0,
            0,
            0,
        ),
        # the backstop: at t = 40 W has been 39 s (> 30) in a window, count 0: starving, it
        # holds the reservation (block at 40); at 1,000 it is fixed in, and L (passed over at
        # t = 40: it fitted 6 free nodes, 1 > 0.5) is starving and does not fit (block)
        (
            {"starvation": 0.5, "starvation_by": "passed-over", "starvation_backstop": 30.0},
            1000.0,
            1100.0,
            2,
            1,
        ),
    ],
)
def test_what_counts_as_an_iteration(
    scheduler: str,
    params: dict,
    w_start: float,
    l_start: float,  # type: ignore[type-arg]
    blocks: int,
    backstop: int,
) -> None:
    start, stats = _run(scheduler, **params)
    assert (
        start[3] == start[4] == 2.0 and start[5] == start[6] == 20.0
    )  # end by the shadow time: start anyway
    assert (start[2], start[7]) == (w_start, l_start)
    assert stats["forced_blocks"] == blocks and stats["backstop_jobs"] == backstop
    assert stats["invocations"] == 9 and stats["eligible_two_plus"] == stats["optimiser_runs"] == 2


def test_passed_over_counts_a_job_that_fitted_and_did_not_start() -> None:
    """The FCFS baseline under ``passed-over`` (bound 0.5, no effective backstop): at
    t = 40 L fits 6 free nodes but EASY holds them for W, so L is passed over (1 > 0.5)
    and starving; at t = 1,000 it is fixed in before W, which waits for it until 3,000."""
    start, _ = _run(
        "bb-baseline", starvation=0.5, starvation_by="passed-over", starvation_backstop=1e6
    )
    assert start[7] == 1000.0 and start[2] == 3000.0
    start, _ = _run(
        "bb-baseline", starvation=1.5, starvation_by="passed-over", starvation_backstop=1e6
    )
    assert start[2] == 1000.0 and start[7] == 1100.0  # passed over once: 1 is not > 1.5


def test_counts_by_reading() -> None:
    """Counts after one invocation: window [a, b, c, d], 5 nodes and 3 GB free, d starts."""
    a, b = Job(1, 0.0, 10.0, 10.0, units=4), Job(2, 0.0, 10.0, 10.0, units=9)
    c, d = Job(3, 0.0, 10.0, 10.0, units=1, bb=5.0), Job(4, 0.0, 10.0, 10.0, units=1)
    counts = {}
    for by, choice in [
        ("invocations", False),
        ("optimised", True),
        ("optimised", False),
        ("passed-over", False),
    ]:
        rule = Starvation(1, by, backstop=10.0)
        rule.entered([a, b, c, d], 0.0)
        rule.counted([a, b, c, d], {4}, 5.0, 3.0, had_choice=choice)
        counts[by, choice] = tuple(rule.count.get(i, 0.0) for i in (1, 2, 3, 4))
    assert counts["invocations", False] == (
        1.0,
        1.0,
        1.0,
        1.0,
    )  # counted as it entered (d is forgotten once started)
    assert (
        counts["optimised", True] == (1.0, 1.0, 1.0, 0.0)
        and counts["optimised", False] == (0.0,) * 4
    )
    assert counts["passed-over", False] == (
        1.0,
        0.0,
        0.0,
        0.0,
    )  # b: 9 nodes > 5; c: 5 GB > 3; d started
    rule = Starvation(1, "seconds")
    rule.entered([a], 0.0)
    assert not rule.starving(a, 1.0) and rule.starving(a, 1.5)


def test_default_reading_is_50_invocations_without_a_backstop() -> None:
    """The paper's literal default (50 scheduling invocations in the window; no time
    backstop), the same in the policy and in ``policy.window``."""
    from market_hpc.experiment.config import WindowConfig

    rule = make_policy("bbsched", "first-fit").starvation_rule
    assert (rule.bound, rule.by, rule.backstop) == (50.0, "invocations", 0.0)
    config = WindowConfig()
    assert (config.starvation, config.starvation_by, config.starvation_backstop) == (
        50.0,
        "invocations",
        0.0,
    )


def test_starvation_readings_are_validated() -> None:
    with pytest.raises(UnknownNameError, match="passed-over"):
        make_policy("bbsched", "first-fit", scheduler_params={"starvation_by": "iterations"})
    with pytest.raises(ConfigError, match="starvation_backstop"):
        make_policy(
            "bb-baseline",
            "first-fit",
            scheduler_params={"starvation_by": "passed-over", "starvation_backstop": 0},
        )
    with pytest.raises(ConfigError, match="starvation_backstop must be >= 0"):
        make_policy("bb-baseline", "first-fit", scheduler_params={"starvation_backstop": -1.0})
    base = {
        "platform": "nodes=8,cores=1",
        "workload": {"generator": "lublin-feitelson", "jobs": 10},
        "policy": {"scheduler": "bbsched"},
    }
    with pytest.raises(UnknownNameError, match=r"policy.window.starvation_by.*optimised"):
        config_from_dict(
            {**base, "policy": {"scheduler": "bbsched", "window": {"starvation_by": "window"}}}
        )
    with pytest.raises(ConfigError, match="policy.window.starvation_backstop"):
        config_from_dict(
            {**base, "policy": {"scheduler": "bbsched", "window": {"starvation_by": "passed-over"}}}
        )
    config = config_from_dict(
        {
            **base,
            "policy": {
                "scheduler": "bbsched",
                "window": {"starvation_by": "passed-over", "starvation_backstop": 86400},
            },
        }
    )
    assert config.policy.window.starvation_backstop == 86400
