"""Check the ``slurm`` scheduler against a real Slurm on this machine.

Starts Debian's ``munge``, MariaDB, ``slurmdbd``, ``slurmctld`` and ``slurmd`` on localhost
(one node declaring 32 CPUs, ``SlurmdParameters=config_overrides``; installs
``slurm-wlm``, ``slurmdbd``, ``munge`` and ``mariadb-server`` when missing; needs root),
submits a compressed workload drawn from an archive trace (``sleep`` jobs of 2-60 s with
the trace's sizes, users and time limits scaled down), reads ``sacct``, replays the same
jobs in the simulator under the same slurm.conf and prints the agreement
(``market_hpc/studies/slurm_compare.py``). One run per configuration in ``CONFIGS``; each
configuration's slurm.conf and sacct export are kept under ``--out``. It runs in real
time (a few minutes per configuration) and stops the daemons at the end.

    python benchmarks/slurm_validate.py --out /tmp/slurm-validate [--jobs 100] [--only fifo]
    python benchmarks/slurm_validate.py --compare DIR      # re-compare recorded exports
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from market_hpc.studies.slurm_compare import FORMAT, compare, parse_sacct, replay

TRACE = Path("/work/shared/traces/KTH-SP2-1996-2.1-cln.swf.gz")
HOST = "localhost"
CPUS = 32
USERS = ("mhu1", "mhu2", "mhu3", "mhu4")
BASE = """ClusterName=mhval
SlurmctldHost={host}
SlurmUser=root
AuthType=auth/munge
NodeName={host} CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=UNLIMITED State=UP
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={host}
AccountingStorageEnforce=associations
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=600
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldDebug=info
FirstJobId={first}
"""
CONFIGS = {
    "fifo": """PriorityType=priority/basic
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=10
""",
    "multifactor-fairshare": """PriorityType=priority/multifactor
PriorityFlags=NO_FAIR_TREE
PriorityWeightFairShare=10000
PriorityWeightAge=1000
PriorityWeightJobSize=0
PriorityMaxAge=0:10:00
PriorityDecayHalfLife=0:10:00
PriorityCalcPeriod=1
DebugFlags=Priority
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=10
""",
    "backfill-small-window": """PriorityType=priority/basic
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5,bf_window=2,bf_resolution=5,bf_max_job_test=100,sched_interval=10
""",
}
DBD = """AuthType=auth/munge
DbdHost={host}
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_mhval
LogFile={root}/slurmdbd.log
PidFile={root}/slurmdbd.pid
"""


def run(*command: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def install() -> None:
    """Install the daemons when missing (Debian; root)."""
    if all(
        shutil.which(name) for name in ("slurmctld", "slurmd", "slurmdbd", "munged", "mariadbd")
    ):
        return
    run("apt-get", "update", "-qq")
    run(
        "apt-get",
        "install",
        "-y",
        "-qq",
        "slurm-wlm",
        "slurmdbd",
        "munge",
        "mariadb-server",
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )


def start_base(root: Path) -> None:
    """munge, MariaDB and slurmdbd (once for every configuration)."""
    for path, owner in (
        ("/run/munge", "munge"),
        ("/var/log/munge", "munge"),
        ("/var/lib/munge", "munge"),
        ("/run/mysqld", "mysql"),
    ):
        Path(path).mkdir(parents=True, exist_ok=True)
        shutil.chown(path, owner, owner)
    if subprocess.run(["munge", "-n"], capture_output=True, check=False).returncode != 0:
        run("runuser", "-u", "munge", "--", "/usr/sbin/munged")
    if (
        subprocess.run(["mysql", "-e", "select 1"], capture_output=True, check=False).returncode
        != 0
    ):
        subprocess.Popen(
            [
                "runuser",
                "-u",
                "mysql",
                "--",
                "/usr/sbin/mariadbd",
                "--datadir=/var/lib/mysql",
                "--socket=/run/mysqld/mysqld.sock",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(
            lambda: (
                subprocess.run(
                    ["mysql", "-e", "select 1"], capture_output=True, check=False
                ).returncode
                == 0
            ),
            "mariadb",
        )
    for user in USERS:
        if subprocess.run(["id", user], capture_output=True, check=False).returncode != 0:
            run("useradd", "-M", "-s", "/bin/false", user)


def wait_for(ready, what: str, seconds: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up in {seconds:g} s")
        time.sleep(0.5)


def slurm_conf(root: Path, name: str) -> Path:
    path = root / name / "slurm.conf"
    path.parent.mkdir(parents=True, exist_ok=True)
    first = 1000 * (1 + list(CONFIGS).index(name))  # distinct ids in the one accounting database
    path.write_text(
        BASE.format(root=root / name, first=first, host=HOST, cpus=CPUS) + CONFIGS[name]
    )
    for sub in ("state", "spool"):
        target = root / name / sub
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
    return path


def start_slurm(root: Path, conf: Path, env: dict[str, str]) -> None:
    """slurmdbd (first), the cluster's associations, slurmctld and slurmd."""
    dbd = root / "dbd" / "slurmdbd.conf"  # slurmdbd reads slurmdbd.conf beside $SLURM_CONF
    dbd.parent.mkdir(exist_ok=True)
    dbd.write_text(DBD.format(host=HOST, root=root))
    dbd.chmod(0o600)
    if (
        subprocess.run(
            ["sacctmgr", "-n", "list", "cluster"], capture_output=True, env=env, check=False
        ).returncode
        != 0
    ):
        run("mysql", "-e", "drop database if exists slurm_acct_mhval")  # no jobs of earlier runs
        subprocess.Popen(
            ["/usr/sbin/slurmdbd"], env={**env, "SLURM_CONF": str(dbd.parent / "slurm.conf")}
        )
        wait_for(
            lambda: (
                subprocess.run(
                    ["sacctmgr", "-n", "list", "cluster"], capture_output=True, env=env, check=False
                ).returncode
                == 0
            ),
            "slurmdbd",
        )
    run("sacctmgr", "-i", "add", "cluster", "mhval", env=env, check=False)
    run(
        "sacctmgr",
        "-i",
        "add",
        "account",
        "mhacct",
        "cluster=mhval",
        "fairshare=1",
        env=env,
        check=False,
    )
    for user in (*USERS, "root"):
        run(
            "sacctmgr",
            "-i",
            "add",
            "user",
            user,
            "account=mhacct",
            "fairshare=1",
            env=env,
            check=False,
        )
    run("/usr/sbin/slurmctld", "-c", "-f", str(conf), env=env)  # -c: no state from a previous run
    run("/usr/sbin/slurmd", "-f", str(conf), env=env)
    wait_for(lambda: "idle" in run("sinfo", "-h", "-o", "%t", env=env, check=False), "slurmd")


def stop_slurm(root: Path, name: str, env: dict[str, str]) -> None:
    for pid_file in ("slurmd.pid", "slurmctld.pid"):
        path = root / name / pid_file
        if path.exists():
            subprocess.run(["kill", path.read_text().strip()], check=False)
    time.sleep(2)


def stop_base(root: Path) -> None:
    """slurmdbd, MariaDB and munge (what this script started)."""
    path = root / "slurmdbd.pid"
    if path.exists():
        subprocess.run(["kill", path.read_text().strip()], check=False)
    subprocess.run(["mysqladmin", "shutdown"], capture_output=True, check=False)
    munge_pid = Path("/run/munge/munged.pid")
    if munge_pid.exists():
        subprocess.run(["kill", munge_pid.read_text().strip()], check=False)


def draw_workload(
    count: int, seed: int = 49, span: float = 150.0
) -> list[tuple[float, int, int, int, str]]:
    """``(submit offset s, cpus, sleep s, time limit min, user)`` of ``count`` consecutive
    KTH-SP2 jobs from a seeded offset: sizes scaled from 100 to 32 CPUs, run times mapped
    log-linearly onto 2-60 s, limits to whole minutes keeping the trace's request/run
    ratio (1-5 min), submit times compressed onto ``span`` seconds, the slice's users dealt
    round-robin, busiest first, onto four local users.
    """
    rows = []
    with gzip.open(TRACE, "rt") as handle:
        for line in handle:
            fields = line.split()
            if not fields or line.startswith(";") or len(fields) < 18:
                continue
            size = int(fields[7]) if int(fields[7]) > 0 else int(fields[4])
            run_time, request = float(fields[3]), float(fields[8])
            if size > 0 and run_time > 0:
                rows.append(
                    (
                        float(fields[1]),
                        size,
                        run_time,
                        request if request > 0 else run_time,
                        fields[11],
                    )
                )
    rng = np.random.default_rng(seed)
    first = int(rng.integers(0, len(rows) - count))
    chosen = rows[first : first + count]
    busiest = sorted({r[4] for r in chosen}, key=lambda u: -sum(r[4] == u for r in chosen))
    user_of = {u: USERS[i % len(USERS)] for i, u in enumerate(busiest)}
    low, high = np.log(min(r[2] for r in chosen)), np.log(max(r[2] for r in chosen))
    origin = chosen[0][0]
    scale = span / max(chosen[-1][0] - origin, 1.0)
    jobs = []
    for submit, size, run_time, request, user in chosen:
        seconds = round(2 + 58 * (np.log(run_time) - low) / max(high - low, 1e-9))
        limit = int(min(5, max(1, np.ceil(seconds * min(request / run_time, 5.0) / 60))))
        cpus = max(1, min(CPUS, round(size * CPUS / 100)))
        jobs.append(((submit - origin) * scale, cpus, seconds, limit, user_of[user]))
    return jobs


def submit(jobs: list[tuple[float, int, int, int, str]], env: dict[str, str]) -> list[int]:
    """Submit each job at its offset (real time) as its user; the ids in order."""
    began = time.monotonic()
    ids = []
    for offset, cpus, seconds, limit, user in jobs:
        delay = began + offset - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        out = run(
            "sbatch",
            "--parsable",
            f"--uid={user}",
            "--account=mhacct",
            "-n",
            str(cpus),
            f"--time={limit}",
            "-o",
            "/dev/null",
            "-D",
            "/tmp",
            f"--wrap=sleep {seconds}",
            env=env,
        )
        ids.append(int(out.strip().split(";")[0]))
    return ids


def wait_all(ids: list[int], env: dict[str, str]) -> None:
    """Until none of ``ids`` is pending or running."""
    wanted = ",".join(map(str, ids))
    wait_for(
        lambda: not run("squeue", "-h", "-j", wanted, "-o", "%i", env=env, check=False).strip(),
        "the workload",
        seconds=3600.0,
    )


def export(ids: list[int], path: Path, env: dict[str, str]) -> None:
    """sacct --parsable2 of ``ids`` (epoch times) into ``path``."""
    wait_for(
        lambda: (
            len(
                [
                    line
                    for line in run(
                        "sacct",
                        "-X",
                        "-n",
                        "-P",
                        "-j",
                        ",".join(map(str, ids)),
                        "-o",
                        "JobID,End",
                        env=env,
                        check=False,
                    ).splitlines()
                    if line and not line.endswith("Unknown")
                ]
            )
            >= len(ids)
        ),
        "sacct",
        seconds=120.0,
    )
    text = run(
        "sacct",
        "-X",
        "-P",
        "-j",
        ",".join(map(str, ids)),
        f"--format={FORMAT}",
        env={**env, "SLURM_TIME_FORMAT": "%s"},
    )
    path.write_text(text)


def report(root: Path, names: list[str]) -> None:
    for name in names:
        exported = root / name / "sacct.txt"
        if exported.exists():
            records = parse_sacct(exported.read_text(), str(exported))
            print(compare(records, replay(records, root / name / "slurm.conf")).line(name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/slurm-validate"))
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--only", choices=sorted(CONFIGS), action="append")
    parser.add_argument(
        "--compare", type=Path, help="re-compare the exports recorded under this directory"
    )
    args = parser.parse_args()
    names = args.only or list(CONFIGS)
    if args.compare:
        report(args.compare, names)
        return
    root = args.out.resolve()
    root.mkdir(parents=True, exist_ok=True)
    install()
    start_base(root)
    jobs = draw_workload(args.jobs)
    try:
        for name in names:
            conf = slurm_conf(root, name)
            env = {**os.environ, "SLURM_CONF": str(conf)}
            start_slurm(root, conf, env)
            try:
                ids = submit(jobs, env)
                wait_all(ids, env)
                export(ids, root / name / "sacct.txt", env)
            finally:
                stop_slurm(root, name, env)
    finally:
        stop_base(root)
    report(root, names)


if __name__ == "__main__":
    main()
