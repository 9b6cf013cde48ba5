"""Pause the cyclic garbage collector around work that only allocates.

Building 10^5 jobs, running the event loop or importing the simulation's modules makes
many objects that form no reference cycles; the collector's passes over them reclaim
nothing and cost time (each user states its measured gain). Every such pause is this one
context manager, so each one restores the collector the same way, also on an error, and
leaves a collector that the caller had turned off turned off. It imports nothing from the
package, so every layer may use it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Turn the cyclic GC off inside the block and back on after it, if it was on.

    Yields:
        Nothing; the block runs with the collector off.

    >>> import gc
    >>> with gc_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
