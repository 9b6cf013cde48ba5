"""Slurm's multifactor priority and backfill planning, as pure functions.

Read from SchedMD's source (``src/plugins/priority/multifactor/priority_multifactor.c``,
``src/plugins/sched/backfill/backfill.c``, ``src/slurmctld/job_scheduler.c``); each rule
names the function it comes from. The ``slurm`` scheduler (``policies.slurm``) composes them.
"""
