"""Write slurm-sample.sacct: a hand-made sacct --parsable2 export covering every case of
market_hpc.workload.slurm (synthetic, seed 7; not a real cluster's data)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

HEADER = ("JobID|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqCPUS|NNodes|State|Partition|ReqMem|"
          "AllocTRES|ReqTRES|User")
USERS = ["alice", "bob", "carol", "dave", "erin"]


def stamp(time: datetime) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def duration(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{days}-" if days else "") + f"{hours:02d}:{minutes:02d}:{secs:02d}"


def sample_lines() -> list[str]:
    rng = random.Random(7)
    lines, job, clock = [HEADER], 5000, datetime(2024, 3, 4, 8, 0, 0)
    for i in range(60):
        clock += timedelta(seconds=rng.randint(30, 900))
        job += 1
        cpus = rng.choice([1, 4, 8, 16, 32, 64, 128])
        nodes = max(1, cpus // 32)
        part = "gpu" if i % 7 == 0 else "batch"
        limit = rng.choice([3600, 7200, 14400, 86400])
        run = rng.randint(60, limit)
        state = "COMPLETED"
        if i % 11 == 3:
            state, run = "TIMEOUT", limit
        elif i % 13 == 5:
            state = "FAILED"
        start = clock + timedelta(seconds=rng.randint(0, 3600))
        end = start + timedelta(seconds=run)
        gres = ",gres/gpu=2,gres/gpu:a100=2" if part == "gpu" else ""
        user = USERS[i % 5]
        shown_limit = "UNLIMITED" if i % 17 == 9 else duration(limit)
        job_id = f"{job}" if i % 9 != 4 else f"{job}_1"
        lines.append(f"{job_id}|{stamp(clock)}|{stamp(start)}|{stamp(end)}|{duration(run)}|"
                     f"{shown_limit}|{cpus}|{cpus}|{nodes}|{state}|{part}|{4 * cpus}G|"
                     f"cpu={cpus},mem={4 * cpus}G,node={nodes}{gres}|cpu={cpus}{gres}|{user}")
        batch = min(cpus, 32)
        lines.append(f"{job_id}.batch|{stamp(start)}|{stamp(start)}|{stamp(end)}|{duration(run)}||"
                     f"{batch}|{batch}|1|{state}||||cpu={batch}|")
        lines.append(f"{job_id}.extern|{stamp(start)}|{stamp(start)}|{stamp(end)}|{duration(run)}||"
                     f"{cpus}|{cpus}|{nodes}|COMPLETED||||cpu={cpus}|")
        if i % 9 == 4:
            lines.append(f"{job}_[2-6]|{stamp(clock)}|Unknown|Unknown|00:00:00|{duration(limit)}|0|"
                         f"{cpus}|0|PENDING|{part}|{4 * cpus}G||cpu={cpus}|{user}")
        if i % 10 == 6:
            job += 1
            submit = clock + timedelta(seconds=120)
            lines.append(f"{job}|{stamp(submit)}|None|{stamp(submit + timedelta(seconds=300))}|"
                         f"00:00:00|01:00:00|0|16|0|CANCELLED by 1000|batch|64G||cpu=16|{user}")
        if i % 15 == 8:
            job += 1
            submit = clock + timedelta(seconds=60)
            begin = submit + timedelta(seconds=600)
            finish = begin + timedelta(seconds=1800)
            for component, count in ((0, 32), (1, 8)):
                lines.append(f"{job}+{component}|{stamp(submit)}|{stamp(begin)}|{stamp(finish)}|"
                             f"00:30:00|02:00:00|{count}|{count}|1|COMPLETED|batch|{4 * count}G|"
                             f"cpu={count}|cpu={count}|{user}")
                lines.append(f"{job}+{component}.0|{stamp(begin)}|{stamp(begin)}|{stamp(finish)}|"
                             f"00:30:00||{count}|{count}|1|COMPLETED||||cpu={count}|")
    job += 1
    lines.append(f"{job}|{stamp(clock)}|{stamp(clock + timedelta(seconds=60))}|Unknown|02:00:00|"
                 "1-00:00:00|32|32|1|RUNNING|batch|128G|cpu=32|cpu=32|alice")
    return lines


if __name__ == "__main__":
    target = Path(__file__).with_name("slurm-sample.sacct")
    target.write_text("\n".join(sample_lines()) + "\n")
    print(f"wrote {target}")
