"""A view for one scheduling pass that counts the burst buffer its own starts take.

Allocators check a job's burst-buffer request against ``view.free_bb``. A scheduler
that starts several jobs in one decision must show them what the pass has left, or
two starts that each fit the pool alone could together exceed it (the model then
rejects the decision). ``PassView`` is the scheduler's view with ``free_bb`` reduced
by every start it has made so far; everything else is read from the view it wraps.
"""

from __future__ import annotations

from typing import Any

from market_hpc.domain.job import Job
from market_hpc.policies.base import View


class PassView:
    """``view`` with the burst buffer left after this pass's starts.

    >>> from types import SimpleNamespace
    >>> from market_hpc.domain.job import Job
    >>> passing = PassView(SimpleNamespace(free_bb=100.0, time=5.0))
    >>> passing.take(Job(1, 0.0, 10.0, 10.0, units=1, bb=60.0))
    >>> passing.free_bb, passing.time
    (40.0, 5.0)
    """

    __slots__ = ("free_bb", "view")

    def __init__(self, view: View) -> None:
        self.view = view
        self.free_bb = view.free_bb

    def take(self, job: Job) -> None:
        """Count a job started in this pass."""
        self.free_bb -= job.bb

    def __getattr__(self, name: str) -> Any:
        return getattr(self.view, name)


__all__ = ["PassView"]
