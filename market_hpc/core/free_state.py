"""The model's free resources: a dense array and a free-core index kept in step.

``FreeResources`` owns the ``(n_nodes, N_RESOURCES)`` free array every policy may read and
the :class:`~market_hpc.algorithms.free_index.FreeCoreIndex` the indexed allocators place
from. Plain core starts and ends (the hot path) update the index at once and the array
lazily: their changes are logged and applied in one vectorised pass when the array is
read; a log that grows long is dropped between instants and the cores column copied from
the index's runs instead (:meth:`FreeResources.rest`), so no start or end costs work over
all nodes. Everything
else (multi-resource units, node-exclusive allocation) updates the array rows and then
the index from them.
"""

from __future__ import annotations

import numpy as np

from market_hpc.algorithms.free_index import FreeCoreIndex
from market_hpc.algorithms.node_runs import NodeRuns


class FreeResources:
    """Free resources of one platform (``capacity``: its ``(n_nodes, N_RESOURCES)`` array)."""

    __slots__ = ("_array", "_log", "_log_limit", "_readonly", "index")

    def __init__(self, capacity: np.ndarray) -> None:
        self._array = capacity.copy()
        self._readonly = self._array.view()
        self._readonly.flags.writeable = False
        self._log: list[tuple[NodeRuns, int]] = []  # core moves not yet in ``_array``
        self._log_limit = max(1024, len(capacity) // 4)
        self.index = FreeCoreIndex(self._array[:, 0].tolist())

    @property
    def array(self) -> np.ndarray:
        """The free array, up to date and writeable (the model's own)."""
        self._flush()
        return self._array

    @property
    def readonly(self) -> np.ndarray:
        """The free array, up to date and read-only (what views hand to policies)."""
        self._flush()
        return self._readonly

    def has_cores(self, runs: NodeRuns) -> bool:
        """Whether every node of ``runs`` has the run's units free, in cores."""
        min_free = self.index.min_free
        return all(min_free(first, first + count) >= units for first, count, units in runs.runs)

    def move_cores(self, runs: NodeRuns, sign: int, indexed: bool = False) -> None:
        """Take (``sign=-1``) or give back (``+1``) the cores of a plain core allocation
        (``indexed``: the index already holds the change, a claimed proposal)."""
        log = self._log
        log.append((runs, sign))  # one entry per move; its runs are expanded when flushed
        if not indexed:
            self.index.move(runs, sign)  # all runs in one splice

    def rest(self) -> None:
        """Called where the index holds exactly the free cores (between instants, no pass
        under way): a long log is dropped and the array's cores column copied from the
        index's runs instead (one vectorised pass; replays that never read the array
        never expand the log entry by entry)."""
        if len(self._log) > self._log_limit:
            runs = self.index.runs()
            self._array[:, 0] = np.repeat(
                [free for _, _, free in runs], [count for _, count, _ in runs]
            )
            self._log.clear()

    def index_rows(self, runs: NodeRuns, cores: np.ndarray) -> None:
        """Add ``cores`` (one entry per allocated node, in node order) to the index after
        the array rows changed by them."""
        offset = 0
        give = self.index.give
        for first, count, _ in runs.runs:
            give(first, cores[offset : offset + count].tolist())
            offset += count

    def _flush(self) -> None:
        log = self._log
        if not log:
            return
        if len(log) <= 4:
            array = self._array
            for runs, sign in log:
                for first, count, units in runs.runs:
                    array[first : first + count, 0] += sign * units
        else:
            flat = [
                value
                for runs, sign in log
                for first, count, units in runs.runs
                for value in (first, first + count, sign * units)
            ]
            firsts, ends, deltas = np.array(flat, dtype=np.int64).reshape(-1, 3).T
            size = len(self._array) + 1
            change = np.bincount(firsts, deltas, size) - np.bincount(ends, deltas, size)
            self._array[:, 0] += np.cumsum(change[:-1]).astype(np.int64)
        log.clear()


def check_runs(runs: NodeRuns, n_nodes: int) -> bool:
    """Whether runs are non-empty, disjoint, in increasing node order and on the platform.

    >>> (check_runs(NodeRuns(((0, 2, 1), (3, 1, 2))), 4),
    ...  check_runs(NodeRuns(((1, 2, 1), (2, 1, 1))), 4))
    (True, False)
    """
    end = 0
    for first, count, units in runs.runs:
        if first < end or count < 1 or units < 1 or first + count > n_nodes:
            return False
        end = first + count
    return True
