"""Value curves: hand-checked values, vectorisation, monotonicity, areas, JSON."""

from __future__ import annotations

import dataclasses
import json
import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market_hpc.algorithms.valuecurve import (
    CURVE_KINDS,
    ExponentialCurve,
    LinearDecayCurve,
    PiecewiseLinearCurve,
    StepCurve,
    ValueCurve,
    curve_from_dict,
    value_density,
)
from market_hpc.errors import ConfigError, UnknownNameError

FIG2 = 500.0  # paper Fig. 2(b): value 500 if completed within 15 time-units

EXAMPLES: list[ValueCurve] = [
    StepCurve(FIG2, 15.0),
    LinearDecayCurve(FIG2, 15.0, 35.0),
    PiecewiseLinearCurve(((0, 500), (15, 500), (25, 100), (35, 0))),
    PiecewiseLinearCurve(((5, 500), (15, 500), (15, 200), (30, 50), (30, 0), (40, 0))),
    ExponentialCurve(FIG2, 15.0, tau=10.0, floor=0.01),
    ExponentialCurve(FIG2, 15.0, tau=10.0, floor=0.0, horizon=40.0),
    ExponentialCurve(FIG2, 0.0, tau=3.0, floor=0.2, horizon=100.0),
]


def test_fig2_step_earns_500_within_15_time_units() -> None:
    curve = StepCurve(FIG2, 15.0)
    assert [curve.value_at(e) for e in (-1.0, 0.0, 15.0, 15.000001, 99.0)] == [
        500.0,
        500.0,
        500.0,
        0.0,
        0.0,
    ]
    assert curve.zero_time == 15.0
    assert curve.remaining_value(0.0) == 7500.0
    assert curve.remaining_value(20.0) == 0.0


def test_linear_decay_hand_values() -> None:
    curve = LinearDecayCurve(FIG2, 15.0, 35.0)
    assert curve.value_at(10.0) == 500.0
    assert curve.value_at(20.0) == 375.0
    assert curve.value_at(30.0) == 125.0
    assert curve.value_at(40.0) == 0.0
    assert curve.remaining_value(10.0) == 500 * 5 + 500 * 20 / 2
    assert curve.remaining_value(30.0) == 125 * 5 / 2
    assert curve.remaining_value(35.0) == 0.0


def test_piecewise_with_vertical_drop_takes_left_limit() -> None:
    curve = EXAMPLES[3]
    assert curve.value_at(0.0) == 500.0  # flat before the first point
    assert curve.value_at(15.0) == 500.0
    assert curve.value_at(15.0 + 1e-9) == pytest.approx(200.0)
    assert curve.value_at(22.5) == 125.0
    assert curve.value_at(30.0) == 50.0
    assert curve.value_at(30.5) == 0.0
    assert curve.zero_time == 30.0
    assert curve.remaining_value(15.0) == (200 + 50) * 15 / 2
    assert curve.remaining_value(0.0) == 500 * 15 + (200 + 50) * 15 / 2


def test_exponential_hand_values() -> None:
    curve = ExponentialCurve(FIG2, 15.0, tau=10.0, floor=0.01)
    assert curve.value_at(25.0) == pytest.approx(500 * math.exp(-1))
    assert curve.zero_time == pytest.approx(15 + 10 * math.log(100))
    assert curve.value_at(curve.zero_time) == pytest.approx(5.0)  # left limit: the floor
    assert curve.value_at(curve.zero_time + 1e-9) == 0.0
    assert curve.remaining_value(0.0) == pytest.approx(500 * 15 + 500 * 10 * 0.99)
    capped = ExponentialCurve(FIG2, 15.0, tau=10.0, floor=0.0, horizon=25.0)
    assert capped.zero_time == 25.0
    assert capped.remaining_value(15.0) == pytest.approx(500 * 10 * (1 - math.exp(-1)))


def test_special_cases_agree_with_piecewise_linear() -> None:
    pairs: list[tuple[ValueCurve, ValueCurve]] = [
        (StepCurve(300.0, 12.0), PiecewiseLinearCurve(((0, 300), (12, 300), (12, 0)))),
        (LinearDecayCurve(300.0, 12.0, 40.0), PiecewiseLinearCurve(((0, 300), (12, 300), (40, 0)))),
    ]
    grid = np.linspace(-5.0, 50.0, 221)
    for special, general in pairs:
        assert special.zero_time == general.zero_time
        assert special.max_value == general.max_value
        np.testing.assert_allclose(special.values(grid), general.values(grid), rtol=1e-12)
        for elapsed in grid:
            assert special.remaining_value(elapsed) == pytest.approx(
                general.remaining_value(elapsed), rel=1e-12, abs=1e-9
            )


@pytest.mark.parametrize("curve", EXAMPLES, ids=lambda c: c.kind)
def test_vectorised_equals_scalar(curve: ValueCurve) -> None:
    z = curve.zero_time
    grid = np.concatenate([np.linspace(-5.0, z + 10.0, 401), [0.0, 15.0, 30.0, z, z + 1e-12]])
    scalar = np.array([curve.value_at(float(e)) for e in grid])
    np.testing.assert_allclose(curve.values(grid), scalar, rtol=1e-13, atol=0.0)
    assert curve.values(grid).shape == grid.shape


@pytest.mark.parametrize("curve", EXAMPLES, ids=lambda c: c.kind)
def test_remaining_value_matches_numeric_integration(curve: ValueCurve) -> None:
    z = curve.zero_time
    for start in (-3.0, 0.0, 7.5, 15.0, 0.5 * z, 0.9 * z, z, z + 1.0):
        grid = np.linspace(start, max(z, start), 200_001)
        values = curve.values(grid)
        numeric = float(np.sum((values[1:] + values[:-1]) * np.diff(grid)) / 2.0)
        assert curve.remaining_value(start) == pytest.approx(numeric, rel=1e-4, abs=1e-2)


def curves() -> st.SearchStrategy[ValueCurve]:
    value = st.floats(1.0, 1000.0)
    time = st.floats(0.0, 200.0)
    gap = st.floats(0.5, 200.0)
    step = st.builds(StepCurve, value, time)
    linear = st.builds(lambda v, t, g: LinearDecayCurve(v, t, t + g), value, time, gap)
    expo = st.builds(
        lambda v, t, tau, floor: ExponentialCurve(v, t, tau=tau, floor=floor),
        value,
        time,
        st.floats(0.5, 50.0),
        st.floats(0.001, 0.9),
    )

    @st.composite
    def piecewise(draw: st.DrawFn) -> PiecewiseLinearCurve:
        steps = draw(st.lists(st.tuples(st.floats(0.0, 50.0), st.floats(0.0, 1.0)), min_size=1))
        time_now, value_now = draw(time), draw(value)
        points = [(time_now, value_now)]
        for dt, drop in steps:
            time_now += dt
            value_now *= drop
            points.append((time_now, value_now))
        points.append((time_now + draw(st.floats(0.0, 10.0)), 0.0))
        return PiecewiseLinearCurve(tuple(points))

    return st.one_of(step, linear, expo, piecewise())


@settings(max_examples=200, deadline=None)
@given(curves(), st.lists(st.floats(-10.0, 800.0), min_size=2, max_size=30))
def test_curves_are_non_increasing_and_zero_after_zero_time(
    curve: ValueCurve, elapsed: list[float]
) -> None:
    ordered = sorted(elapsed)
    values = [curve.value_at(e) for e in ordered]
    assert all(a >= b for a, b in pairwise(values))
    assert all(0.0 <= v <= curve.max_value for v in values)
    assert curve.value_at(curve.zero_time + 1e-6) == 0.0
    assert curve.values(np.array(ordered)).tolist() == pytest.approx(values, rel=1e-12)
    areas = [curve.remaining_value(e) for e in ordered]
    assert all(a >= b - 1e-9 * max(1.0, a) for a, b in pairwise(areas))
    assert curve.remaining_value(curve.zero_time) == 0.0


@settings(max_examples=100, deadline=None)
@given(curves())
def test_json_round_trip(curve: ValueCurve) -> None:
    again = curve_from_dict(json.loads(json.dumps(curve.to_dict())))
    assert again == curve
    assert type(again) is type(curve)


def test_curves_are_frozen_and_hashable() -> None:
    curve = StepCurve(FIG2, 15.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        curve.deadline = 3.0  # type: ignore[misc]
    assert len({curve, StepCurve(500, 15)}) == 1
    assert set(CURVE_KINDS) == {"step", "linear_decay", "piecewise_linear", "exponential"}


def test_from_dict_errors() -> None:
    with pytest.raises(UnknownNameError) as unknown:
        curve_from_dict({"kind": "sigmoid"})
    assert str(unknown.value) == (
        "unknown value curve kind 'sigmoid'; valid choices: "
        "exponential, linear_decay, piecewise_linear, step"
    )
    with pytest.raises(ConfigError, match=r"needs a 'kind' key \(one of exponential, "):
        curve_from_dict({"max_value": 1.0})
    with pytest.raises(ConfigError) as info:
        curve_from_dict({"kind": "step", "max_value": 1.0})
    assert str(info.value) == "value curve 'step': missing key 'deadline'"
    with pytest.raises(ConfigError) as info:
        curve_from_dict({"kind": "step", "max_value": 1.0, "deadline": 2.0, "slope": 1})
    assert str(info.value) == (
        "value curve 'step': unexpected key 'slope'; valid: max_value, deadline"
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: StepCurve(0.0, 5.0), "StepCurve: max_value must be a finite number > 0, got 0.0"),
        (
            lambda: StepCurve(5.0, -1.0),
            "StepCurve: deadline must be a finite number >= 0, got -1.0",
        ),
        (
            lambda: StepCurve("x", 1.0),  # type: ignore[arg-type]
            "StepCurve: max_value must be a finite number > 0, got 'x'",
        ),
        (
            lambda: LinearDecayCurve(5.0, 10.0, 10.0),
            (
                "LinearDecayCurve: zero_time must be > plateau_end=10.0, got 10.0 "
                "(use StepCurve for a vertical drop)"
            ),
        ),
        (
            lambda: PiecewiseLinearCurve(((0, 5), (3, 6), (4, 0))),
            (
                "PiecewiseLinearCurve: point 1 (3.0, 6.0) raises the value above 5.0; "
                "values must be non-increasing"
            ),
        ),
        (
            lambda: PiecewiseLinearCurve(((0, 5), (3, 4), (2, 0))),
            (
                "PiecewiseLinearCurve: point 2 (2.0, 0.0) goes back in time from 3.0; "
                "elapsed times must be non-decreasing"
            ),
        ),
        (
            lambda: PiecewiseLinearCurve(((0, 5), (3, 1))),
            (
                "PiecewiseLinearCurve: point 1 (3.0, 1.0) must have value 0 so the curve has "
                "a zero time"
            ),
        ),
        (
            lambda: PiecewiseLinearCurve(((0, 0), (3, 0))),
            (
                "PiecewiseLinearCurve: point 0 (0.0, 0.0) must have value > 0 "
                "(it is the maximum value)"
            ),
        ),
        (
            lambda: PiecewiseLinearCurve(((-1, 5), (3, 0))),
            (
                "PiecewiseLinearCurve: point 0 (-1.0, 5.0) must have finite elapsed >= 0 "
                "and value >= 0"
            ),
        ),
        (
            lambda: PiecewiseLinearCurve(((0, 5),)),
            "PiecewiseLinearCurve: need at least 2 points, got 1",
        ),
        (
            lambda: ExponentialCurve(5.0, 1.0, tau=2.0, floor=0.0),
            "ExponentialCurve: floor=0 needs a horizon, else it never reaches 0",
        ),
        (
            lambda: ExponentialCurve(5.0, 1.0, tau=2.0, floor=1.0),
            "ExponentialCurve: floor must be in [0, 1), got 1.0",
        ),
        (
            lambda: ExponentialCurve(5.0, 4.0, tau=2.0, horizon=3.0),
            "ExponentialCurve: horizon must be > plateau_end=4.0, got 3.0",
        ),
    ],
)
def test_invalid_parameters_are_named(build: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build()  # type: ignore[operator]
    assert str(info.value) == message


def test_value_density() -> None:
    assert value_density(500.0, 4) == 125.0
    with pytest.raises(ValueError, match="cores must be >= 1, got 0"):
        value_density(500.0, 0)
