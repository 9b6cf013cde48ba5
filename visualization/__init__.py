"""Browser visualization of the live market: a Mesa SolaraViz app (``app.py``).

A leaf: nothing in ``market_hpc`` imports it. ``market-hpc viz`` serves ``app.py``.
"""
