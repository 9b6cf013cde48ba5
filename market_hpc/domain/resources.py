"""Resource kinds held per node.

A node's capacity and a job's unit request are vectors over ``RESOURCES`` in this order.
Memory is in MiB so every quantity is an integer. The burst buffer is not a node
resource: it is one shared pool per platform (``Platform.burst_buffer``), requested per job
as ``Job.bb``.
"""

from __future__ import annotations

RESOURCES: tuple[str, ...] = ("cores", "gpus", "mics", "mem")
N_RESOURCES = len(RESOURCES)
CORES, GPUS, MICS, MEM = range(N_RESOURCES)
