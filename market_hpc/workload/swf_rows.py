"""Write SWF files from field rows (all 18 fields), for conversions and schedule exports.

:func:`~market_hpc.workload.swf.write_swf` writes a workload (jobs to replay);
:func:`write_swf_rows` writes whatever fields are known, e.g. the wait times of a
simulated schedule or the status of a Slurm job.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from market_hpc.errors import ConfigError
from market_hpc.workload.swf import write_trace_text
from market_hpc.workload.swf_format import N_FIELDS, format_number


def swf_text(rows: np.ndarray, header: Iterable[str] = ()) -> str:
    """SWF text of ``(n, 18)`` field rows (``-1`` unknown; integers without a point).

    >>> rows = [[1, 0, 5, 60, 4, -1, -1, 4, 120, -1, 1, 2, -1, -1, 1, 1, -1, -1]]
    >>> print(swf_text(np.array(rows, dtype=float), ["Version: 2.2"]), end="")
    ; Version: 2.2
    1 0 5 60 4 -1 -1 4 120 -1 1 2 -1 -1 1 1 -1 -1
    """
    rows = np.asarray(rows, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] != N_FIELDS:
        raise ConfigError(f"SWF rows must have {N_FIELDS} fields, got shape {rows.shape}")
    out = [
        line if line.lstrip().startswith(";") else f"; {line}"
        for text in header
        for line in (text.splitlines() or [""])
    ]
    out.extend(" ".join(format_number(value) for value in row) for row in rows.tolist())
    return "\n".join(out) + "\n"


def write_swf_rows(
    rows: np.ndarray, path: str | os.PathLike[str], header: Iterable[str] = ()
) -> None:
    """Write field rows as an SWF file (gzip, without timestamp, when it ends in ``.gz``).

    Raises:
        ConfigError: The rows are not ``(n, 18)`` or the file cannot be written.
    """
    write_trace_text(swf_text(rows, header), path)
