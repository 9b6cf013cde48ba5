"""Slurm's scheduling (``slurm``): multifactor priority, main scheduler, backfill, slurm.conf.

Importing the package registers the scheduler.
"""

from market_hpc.policies.slurm import scheduler as scheduler

__all__ = ["scheduler"]
