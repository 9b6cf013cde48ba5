"""Arbitrary numbers into the SWF reader, the scenario loader and the model.

Each either works and conserves every job (``jobs.csv`` has one row per job line or
job given), or raises a ``MarketHpcError``: never a hang, another exception or a lost
job. Each example runs under an alarm, so a hang fails the test instead of stalling it.
"""

from __future__ import annotations

import contextlib
import math
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.errors import InvalidNumberError, MarketHpcError
from market_hpc.experiment import config_from_dict, simulate
from market_hpc.experiment.streaming import simulate_streaming

PLATFORM = "nodes=2,cores=4"
EXAMPLES = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
ALARM_SECONDS = 60  # a run here takes well under a second; only a hang gets near this


class Hang(Exception):
    """Raised by the alarm: the example did not finish (a test failure, not an outcome)."""


@contextlib.contextmanager
def no_hang(seconds: int = ALARM_SECONDS) -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise Hang(f"no result after {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ----------------------------------------------------------------- SWF reader
def number_text(value: float) -> str:
    return repr(value) if not float(value).is_integer() or abs(value) > 1e15 else str(int(value))


NUMBERS = st.one_of(
    st.integers(-3, 64).map(str),
    st.integers(-(2**63), 2**63).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(
        lambda v: str(v) if not math.isfinite(v) else number_text(v)
    ),
    st.sampled_from(
        [
            "-1",
            "0",
            "1e18",
            "4e18",
            "1125899906842624",
            "1125899906842625",
            "2.5",
            ".5",
            "1_0",
            "\u0661\u0662",
            "0x10",
            "NaN",
            "-inf",
            "1e400",
            "+7",
            "abc",
            "1e-300",
        ]
    ),
)


def mostly(valid: st.SearchStrategy, odd: st.SearchStrategy, one_in: int = 6) -> st.SearchStrategy:
    """``valid`` values, and ``odd`` ones about once in ``one_in`` draws."""
    return st.integers(1, one_in).flatmap(lambda k: odd if k == 1 else valid)


@st.composite
def job_lines(draw: st.DrawFn) -> list[str]:
    lines = []
    for job_id in range(1, draw(st.integers(1, 6)) + 1):
        fields = [
            mostly(st.just(str(job_id)), NUMBERS),
            mostly(st.integers(0, 100).map(str), NUMBERS),
            st.just("-1"),
            mostly(st.integers(0, 50).map(str), NUMBERS),
            mostly(st.integers(1, 8).map(str), NUMBERS),
            st.just("-1"),
            st.just("-1"),
            mostly(st.just("-1"), NUMBERS),
            mostly(st.just("-1"), NUMBERS),
        ]
        lines.append(
            " ".join(
                [
                    *(draw(field) for field in fields),
                    "-1",
                    "1",
                    "3",
                    "-1",
                    "-1",
                    "1",
                    "-1",
                    "-1",
                    "-1",
                ]
            )
        )
    return lines


def replay_rows(path: Path, streamed: bool) -> int:
    config = config_from_dict(
        {
            "workload": {"trace": str(path)},
            "platform": PLATFORM,
            "timeseries": False,
            "policy": {"scheduler": "easy"},
        }
    )
    result = simulate_streaming(config) if streamed else simulate(config)
    return len(result.jobs)


@EXAMPLES
@given(
    lines=job_lines(), start=st.sampled_from(["", "\ufeff"]), end=st.sampled_from(["\n", "\r\n"])
)
def test_swf_reader_conserves_jobs_or_names_the_error(
    lines: list[str], start: str, end: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.swf"
        path.write_bytes((start + "; fuzz\n" + end.join(lines) + end).encode())
        outcomes = []
        for streamed in (False, True):
            with no_hang():
                try:
                    outcomes.append(replay_rows(path, streamed))
                except MarketHpcError as error:
                    assert str(error)
                    outcomes.append(type(error).__name__)
        event("replayed" if isinstance(outcomes[0], int) else f"refused: {outcomes[0]}")
        assert outcomes[0] == outcomes[1]  # the two readers agree
        if isinstance(outcomes[0], int):
            assert outcomes[0] == len(lines)  # jobs.csv: one row per job line


# ------------------------------------------------------------- scenario loader
ANY_NUMBER = mostly(
    st.sampled_from([0, 1, 0.5, 2, 0.25, 3.0]),
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-(2**70), 2**70),
        st.sampled_from([1e-300, 1e300, 2.0**50, 2.0**51, -1]),
    ),
    one_in=4,
)
KEYS = {
    "workload.load_factor": ANY_NUMBER,
    "policy.hold_penalty": ANY_NUMBER,
    "policy.resume_seconds": ANY_NUMBER,
    "policy.hold_progress_loss": ANY_NUMBER,
    "seed": ANY_NUMBER,
    "workload.serial_fraction": ANY_NUMBER,
    "policy.window.starvation": ANY_NUMBER,
}
TRACE_LINES = [
    f"{i} {t} -1 {r} {p} -1 -1 {p} {r + 5} -1 1 3 -1 -1 1 -1 -1 -1"
    for i, t, r, p in [
        (1, 0, 30, 2),
        (2, 5, 60, 4),
        (3, 5, 0, 1),
        (4, 100, 20, 8),
        (5, 10**6, 7, 3),
    ]
]


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz") / "small.swf"
    path.write_text("; small\n" + "\n".join(TRACE_LINES) + "\n")
    return path


@EXAMPLES
@given(values=st.fixed_dictionaries({}, optional=KEYS))
def test_scenario_numbers_conserve_jobs_or_name_the_key(
    small_trace: Path, values: dict[str, object]
) -> None:
    data: dict[str, object] = {
        "workload": {"trace": str(small_trace)},
        "platform": PLATFORM,
        "timeseries": False,
        "policy": {"scheduler": "easy"},
    }
    from market_hpc.experiment.config import set_path

    for key, value in values.items():
        set_path(data, key, value)
    with no_hang():
        try:
            config = config_from_dict(data)
        except InvalidNumberError as error:
            event("refused by the loader")
            assert error.source in values or error.source == "load factor"
            return
        except MarketHpcError:
            return
        try:
            result = simulate_streaming(config)
        except InvalidNumberError as error:  # a load factor that stretches times too far
            assert error.source == "load factor" and "workload.load_factor" in values
            event("refused when scaling")
            return
    event("replayed")
    assert len(result.jobs) == len(TRACE_LINES)


# ------------------------------------------------------------- model constructor
TIMES = mostly(
    st.integers(0, 100).map(float),
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([4e18, 2.0**50, 2.0**51, -0.5, 1e-300, 0.5]),
    ),
    one_in=12,
)


@st.composite
def jobs_and_costs(draw: st.DrawFn) -> tuple[list[tuple], dict[str, object]]:
    ids = st.lists(
        mostly(st.integers(1, 50), st.integers(-2, 0), one_in=12),
        min_size=1,
        max_size=6,
        unique=draw(st.booleans()),
    )
    specs = [
        (
            job_id,
            draw(TIMES),
            draw(TIMES),
            draw(TIMES),
            draw(mostly(st.integers(1, 9), st.integers(-1, 0))),
        )
        for job_id in draw(ids)
    ]
    fractions = mostly(st.sampled_from([0.0, 0.5, 1.0]), TIMES)
    costs = {
        "resume_seconds": draw(TIMES),
        "hold_progress_loss": draw(fractions),
        "hold_penalty": draw(fractions),
    }
    return specs, costs


@EXAMPLES
@given(case=jobs_and_costs(), scheduler=st.sampled_from(["fifo", "easy", "sjf"]))
def test_model_numbers_conserve_jobs_or_name_the_argument(
    case: tuple[list[tuple], dict[str, object]], scheduler: str
) -> None:
    specs, costs = case
    with no_hang():
        try:
            jobs = [
                Job(job_id, submit, run, estimate, units=units)
                for job_id, submit, run, estimate, units in specs
            ]
        except InvalidNumberError as error:
            event("refused by Job")
            assert error.source.startswith("job ")
            return
        try:
            model = HPCModel(jobs, PLATFORM, scheduler, record_timeseries=False, **costs)  # type: ignore[arg-type]
        except MarketHpcError as error:
            event("refused by HPCModel")
            assert "HPCModel(" in str(error) or "duplicate job ids" in str(error)
            return
        model.run()
    event("ran")
    frame = model.recorder.jobs_frame()
    assert sorted(frame["job_id"]) == sorted(job.job_id for job in jobs)
    assert set(frame["status"]) <= {"finished", "rejected"}


# ------------------------------------------------- the audit's cases, one by one
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"run_time": math.nan},
            "job 1: run_time: got nan; valid: a finite number in [0, 2^50 (1.1e15 s)]",
        ),
        (
            {"submit": math.nan},
            "job 1: submit: got nan; valid: a finite number in [0, 2^50 (1.1e15 s)]",
        ),
        (
            {"run_time": -0.5},
            "job 1: run_time: got -0.5; valid: a finite number in [0, 2^50 (1.1e15 s)]",
        ),
        (
            {"submit": 4e18},
            "job 1: submit: got 4e+18; valid: a finite number in [0, 2^50 (1.1e15 s)]",
        ),
        (
            {"estimate": math.inf},
            "job 1: estimate: got inf; valid: a finite number in [0, 2^50 (1.1e15 s)]",
        ),
        ({"units": 0}, "job 1: units: got 0; valid: an integer in [1, 2^53 - 1]"),
        ({"bb": -1.0}, "job 1: bb: got -1.0; valid: a finite number >= 0"),
        ({"job_id": -1}, "job -1: job_id: got -1; valid: an integer in [0, 2^53 - 1]"),
        ({"submit": "5"}, "job 1: submit: got '5'; valid: a finite number in [0, 2^50 (1.1e15 s)]"),
        (
            {"profile": (10.0, math.nan)},
            (
                "job 1: profile[1] (run time on 2 cores): got nan; valid: a finite number > 0 and "
                "<= "
                "2^50 (1.1e15 s)"
            ),
        ),
    ],
)
def test_job_refuses_bad_numbers_naming_the_field(fields: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {
        "job_id": 1,
        "submit": 0.0,
        "run_time": 10.0,
        "estimate": 10.0,
        **fields,
    }
    with pytest.raises(InvalidNumberError) as caught:
        Job(**arguments)  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)  # what Job raised before, still true


@pytest.mark.parametrize(
    ("argument", "value", "valid"),
    [
        ("resume_seconds", math.nan, "a finite number in [0, 2^50 (1.1e15 s)]"),
        ("hold_progress_loss", 1.5, "a finite number in [0, 1]"),
        ("hold_penalty", math.nan, "a finite number in [0, 1]"),
        ("seed", -1, "an integer in [0, 2^53 - 1]"),
    ],
)
def test_model_refuses_bad_numbers_naming_the_argument(
    argument: str, value: object, valid: str
) -> None:
    with pytest.raises(InvalidNumberError) as caught:
        HPCModel([Job(1, 0.0, 1.0, 1.0)], PLATFORM, **{argument: value})  # type: ignore[arg-type]
    assert str(caught.value) == f"HPCModel({argument}=...): got {value!r}; valid: {valid}"


def test_numpy_scalars_still_make_jobs() -> None:
    import numpy as np

    job = Job(np.int64(3), np.float64(1.5), 2.0, 2.0, units=np.int64(2))  # type: ignore[arg-type]
    assert (job.job_id, job.submit, job.units) == (3, 1.5, 2)
