"""KTH-SP2, FIFO + first-fit on 100 x 1 cores: every start time equals AccaSim 1.1.3's.

The reference hash was computed from AccaSim's own schedule output (benchmarks/
accasim_kth.py runs AccaSim when it is installed and compares job by job): SHA-256 of
"job_id:start_time" lines for all 27,992 jobs sorted by job id, integer times.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import real_trace

from market_hpc.cli import main

ACCASIM_START_TIMES_SHA256 = "2c4835bf063bb16ed3ad689fdc54843d6cbe40c818d391b2c64e3ae9983b3515"
ACCASIM_MEAN_WAIT = 218_832.06


@pytest.mark.traces
def test_kth_fifo_first_fit_matches_accasim_job_by_job(tmp_path):
    trace = real_trace("KTH-SP2-1996-2.1-cln.swf.gz")
    out = tmp_path / "kth"
    code = main(
        [
            "replay",
            str(trace),
            "--platform",
            "nodes=100,cores=1",
            "--scheduler",
            "fifo",
            "--allocator",
            "first-fit",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    import pandas as pd

    jobs = pd.read_parquet(out / "jobs.parquet").sort_values("job_id")
    assert len(jobs) == 27_992
    lines = "\n".join(f"{j}:{int(s)}" for j, s in zip(jobs.job_id, jobs.start_time))
    assert hashlib.sha256(lines.encode()).hexdigest() == ACCASIM_START_TIMES_SHA256
    summary = json.loads((out / "summary.json").read_text())
    assert round(summary["mean_wait"], 2) == ACCASIM_MEAN_WAIT
    assert summary["jobs_completed"] == 27_992 and summary["jobs_rejected"] == 0
    assert ((jobs.end_time - jobs.start_time) == jobs.run_time).all()
    assert (jobs.start_time >= jobs.submit_time).all()
