"""Lublin & Feitelson (2003) generator: determinism, statistics, sample traces."""

from __future__ import annotations

import gzip
import runpy
from pathlib import Path

import numpy as np
import pytest

from market_hpc.errors import ConfigError
from market_hpc.workload import lublin_feitelson, read_swf, synthetic

TRACES = Path(__file__).resolve().parents[1] / "traces"


@pytest.fixture(scope="module")
def big() -> tuple:
    return lublin_feitelson(20_000, 128, seed=11)


def arrays(jobs: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.array([j.units for j in jobs])
    runs = np.array([j.run_time for j in jobs])
    submits = np.array([j.submit for j in jobs])
    estimates = np.array([j.estimate for j in jobs])
    return sizes, runs, submits, estimates


def test_same_seed_same_jobs_other_seed_other_jobs() -> None:
    a = lublin_feitelson(500, 100, seed=3)
    assert a == lublin_feitelson(500, 100, seed=3)
    assert a != lublin_feitelson(500, 100, seed=4)


def test_job_shape(big: tuple) -> None:
    _sizes, runs, submits, estimates = arrays(big)
    assert [j.job_id for j in big] == list(range(1, 20_001))
    assert all(j.unit == (1, 0, 0, 0) and j.user == -1 and j.queue == -1 for j in big)
    assert (np.diff(submits) >= 0).all() and submits[0] > 0
    assert (submits == np.floor(submits)).all() and (runs == np.floor(runs)).all()
    assert runs.min() >= 1 and runs.max() <= np.exp(synthetic.MAX_LOG_RUN_TIME)
    assert (estimates >= runs).all() and (estimates % 60 == 0).all()
    assert (estimates <= np.ceil(runs * synthetic.OVERESTIMATE_MAX / 60) * 60).all()


def test_size_statistics(big: tuple) -> None:
    sizes = arrays(big)[0]
    assert 1 <= sizes.min() and sizes.max() <= 128
    assert np.mean(sizes == 1) == pytest.approx(synthetic.SERIAL_PROB, abs=0.015)
    power_of_two = (sizes > 1) & ((sizes & (sizes - 1)) == 0)
    # Rounded jobs are powers of two; a few unrounded sizes land on one by chance.
    assert synthetic.POW2_PROB - 0.015 <= np.mean(power_of_two) <= synthetic.POW2_PROB + 0.04
    assert (sizes[sizes > 1] >= 2).all()
    assert (sizes == 128).any()


def test_run_time_grows_with_size(big: tuple) -> None:
    sizes, runs, _, _ = arrays(big)
    assert np.median(runs[sizes >= 32]) > 2 * np.median(runs[sizes == 1])


def test_daily_cycle_peaks_in_the_afternoon(big: tuple) -> None:
    hours = (arrays(big)[2] % 86400 // 3600).astype(int)
    per_hour = np.bincount(hours, minlength=24)
    assert per_hour[12:15].mean() > 2.5 * per_hour[3:6].mean()
    assert int(synthetic.daily_weights().argmax()) // 2 == 13


@pytest.mark.parametrize("max_procs", [1, 2, 3, 5, 100, 240, 1000])
def test_sizes_within_any_machine(max_procs: int) -> None:
    sizes = arrays(lublin_feitelson(3000, max_procs, seed=5))[0]
    assert sizes.min() >= 1 and sizes.max() <= max_procs
    if max_procs == 1:
        assert (sizes == 1).all()
    else:
        assert (sizes > 1).any()


def test_load_factor_divides_arrival_times() -> None:
    base = arrays(lublin_feitelson(1000, 64, seed=9))
    fast = arrays(lublin_feitelson(1000, 64, seed=9, load_factor=2.0))
    assert np.abs(fast[2] - base[2] / 2).max() <= 1.0
    assert (fast[0] == base[0]).all() and (fast[1] == base[1]).all()


def test_zero_jobs() -> None:
    assert lublin_feitelson(0, 16, seed=1) == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_jobs": -1}, "n_jobs must be an integer >= 0"),
        ({"n_jobs": 2.5}, "n_jobs must be an integer >= 0"),
        ({"max_procs": 0}, "max_procs must be an integer >= 1"),
        ({"seed": -3}, "seed must be an integer >= 0"),
        ({"load_factor": 0.0}, r"load_factor: got 0.0; valid: a finite number > 0"),
        ({"load_factor": float("nan")}, r"load_factor: got nan; valid: a finite number > 0"),
    ],
)
def test_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    args = {"n_jobs": 10, "max_procs": 16, "seed": 1} | kwargs
    with pytest.raises(ConfigError, match=message):
        lublin_feitelson(**args)


@pytest.mark.parametrize(
    ("name", "n_jobs", "procs"),
    [("lf-kth-like-2000.swf", 2000, 100), ("lf-240p-5000.swf.gz", 5000, 240)],
)
def test_sample_traces_read_back(name: str, n_jobs: int, procs: int) -> None:
    path = TRACES / name
    assert path.stat().st_size < 300_000
    workload = read_swf(path)
    assert len(workload.jobs) == n_jobs and workload.report.skipped == 0
    assert max(j.units for j in workload.jobs) <= procs
    assert f"; MaxProcs: {procs}" in workload.header


def test_make_samples_regenerates_exactly(tmp_path: Path) -> None:
    script = runpy.run_path(str(TRACES / "make_samples.py"))
    paths = script["build"](tmp_path)
    for path in paths:
        committed = (TRACES / path.name).read_bytes()
        fresh = path.read_bytes()
        if path.name.endswith(".gz"):  # compare content: zlib versions may differ in bytes
            committed, fresh = gzip.decompress(committed), gzip.decompress(fresh)
        assert fresh == committed, path.name
