"""Per-paper studies beside experiment (which they use; nothing in experiment imports them): the
embedded demo, the market's paper figures, the hybrid queues study and the Slurm check.
"""
