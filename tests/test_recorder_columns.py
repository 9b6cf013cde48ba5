"""Job results kept as columns read back exactly: frame, chunked CSV, rows, streams."""

from __future__ import annotations

import numpy as np
import pytest

from market_hpc.core.model import HPCModel
from market_hpc.core.recorder import JOB_COLUMNS
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError


def jobs(count: int = 60) -> list[Job]:
    rng = np.random.default_rng(3)
    return [
        Job(
            i,
            float(rng.integers(0, 50)),
            float(rng.integers(0, 20)),
            float(rng.integers(1, 30)),
            units=int(rng.integers(1, 7)),
        )
        for i in range(1, count + 1)
    ]


def test_chunked_csv_equals_the_frame_and_rows_match(tmp_path) -> None:
    model = HPCModel(jobs(), "nodes=3,cores=2", "easy", "best-fit")
    model.run()
    frame = model.recorder.jobs_frame()
    model.recorder.write_jobs_csv(tmp_path / "jobs.csv", chunk_rows=7)
    assert (tmp_path / "jobs.csv").read_text() == frame.to_csv(index=False)
    rows = model.recorder.rows
    by_id = frame.set_index("job_id")
    for row in rows:
        record = dict(zip(JOB_COLUMNS, row))
        expected = by_id.loc[record["job_id"]]
        assert record["nodes"] == expected["nodes"] and record["status"] == expected["status"]
        assert record["start_time"] == expected["start_time"] or np.isnan(record["start_time"])
    assert len(rows) == len(frame) and list(reversed(rows)) == list(rows)[::-1]
    series = model.recorder.timeseries_frame()
    assert series["queue_length"].dtype == np.int64 and series["time"].dtype == np.float64


def test_a_sorted_stream_gives_the_same_results_and_a_bad_one_is_refused() -> None:
    workload = jobs()
    ordered = sorted(workload, key=lambda j: (j.submit, j.job_id))
    frames = []
    for source in (workload, iter(ordered)):
        model = HPCModel(source, "nodes=3,cores=2", "fifo", "first-fit", record_timeseries=False)
        model.run()
        frames.append(model.recorder.jobs_frame())
    assert frames[0].equals(frames[1])
    with pytest.raises(ConfigError, match="not sorted"):
        HPCModel(iter(ordered[::-1]), "nodes=3,cores=2", "fifo", "first-fit").run()
    with pytest.raises(ConfigError, match="duplicate job ids"):
        again = Job(ordered[0].job_id, ordered[-1].submit + 1.0, 1.0, 1.0)
        HPCModel(iter([*ordered, again]), "nodes=3,cores=2", "fifo", "first-fit").run()
