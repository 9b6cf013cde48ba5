"""Redundant rules that make PCP'20's optimum easier to prove.

None of them removes every optimal solution, so the model's optimum is unchanged; they
give CP-SAT's LP and propagation what the 2-D packing hides. Each is a pure function of
the instance (``CpInstance`` at ``t = 0``, usually the reduced one) so that it can be
checked by hand:

* **Event bound** (``event_bounds``). With positive weights every optimal schedule is
  *left-shifted*: a job starting at ``s > 0`` where no box (running or queued) ends
  could start at ``s - 1`` on the same positions and lower the objective. So a job
  starts now or at some box's end, never before the earliest end of a running job or of
  another modelled job: ``s_i in {0} U [e_i, horizon]``.
* **Start-now Booleans and slot knapsacks** (``slot_limits``). ``now_i = (s_i == 0)``
  with the linear links ``s_i + e_i now_i >= e_i`` and ``s_i + H now_i <= H``. At
  ``t = 0`` every running job is active, so a node ``n`` holds at most
  ``min_r floor(free_{n,r} / sigma_r)`` units of shape ``sigma`` now, and a unit that asks
  at least ``sigma`` in every type uses one of those slots. Per distinct unit shape:
  ``sum units_i now_i <= slots`` over the jobs whose unit dominates it. With the event
  bound, the LP's bound becomes a knapsack over who starts now, not 0.
* **Identical jobs** (``identical_pairs``). Two modelled jobs with the same units, unit,
  duration and weight can swap schedules without changing the objective: the later
  one in priority order never starts before the earlier one (``s_i <= s_j``). The
  greedy plan (shelves in priority order) satisfies it.
* **Slot cumulatives** (``slot_cumulatives``). The time-indexed form of the slot
  knapsacks: per unit shape, a ``cumulative`` of the dominating jobs' units against the
  slots free over time as the running jobs end (fixed blocks from 0). Timetabling on it
  pushes a job that cannot get its units at a given time past the next end, which the
  2-D packing over hundreds of nodes only finds by search.
* **Objective bound** (``objective_bound``). ``sum w_i s_i >= LB``, with ``LB`` the best
  fluid relaxation of one resource type (pooled) or of one unit shape's slots, each
  over the free capacity the running jobs leave as they end (``fluid_start_bound``).
"""

from __future__ import annotations

import math

import numpy as np

from market_hpc.algorithms.cp.instance import CpInstance

CUTS = ("event", "slots", "identical", "bound", "cumulative")
"""Names of the redundant rules ``Pcp20Model`` can add (all by default)."""


def event_bounds(instance: CpInstance) -> list[int]:
    """Per modelled job, the earliest positive start an optimal schedule can use: the
    earliest end of a running job or of *another* modelled job started now.

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[4]]), (CpJob(1, 1, (2,), 10, 1), CpJob(2, 1, (2,), 3, 1),
    ...                   CpJob(3, 1, (4,), 7, 1)), (CpRunning(5, ((0, (1,)),)),))
    >>> event_bounds(inst)
    [3, 5, 3]
    """
    running = min((job.remaining for job in instance.running), default=None)
    durations = [job.duration for job in instance.jobs]
    order = sorted(range(len(durations)), key=durations.__getitem__)
    bounds = []
    for i in range(len(durations)):
        other = [durations[j] for j in order[:2] if j != i][:1]
        candidates = other + ([running] if running is not None else [])
        bounds.append(max(1, min(candidates)) if candidates else 1)
    return bounds


def slot_demand(unit: tuple[int, ...], shape: tuple[int, ...]) -> int:
    """Slots of ``shape`` that one ``unit`` (dominating it) takes on its node at least:
    ``min_r floor(unit_r / shape_r)`` over the types ``shape`` asks for.

    A node with free ``f`` has ``min_r floor(f_r / sigma_r)`` slots; since
    ``floor((f - u) / s) <= floor(f / s) - floor(u / s)`` per type, placing ``u`` takes
    away at least this many (a 20-core unit takes both 10-core slots of a free 20-core
    node, not one).

    >>> slot_demand((20, 0), (10, 0)), slot_demand((20, 3), (10, 2)), slot_demand((15,), (10,))
    (2, 1, 1)
    """
    return min(u // s for u, s in zip(unit, shape) if s > 0)


def slot_members(instance: CpInstance, shape: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """The modelled jobs whose unit dominates ``shape`` (indices, in ``instance.jobs``
    order) and the slots of ``shape`` each takes: ``units * slot_demand(unit, shape)``.

    >>> from market_hpc.algorithms.cp.instance import CpJob
    >>> inst = CpInstance(np.array([[20]]), (CpJob(1, 2, (20,), 5, 1), CpJob(2, 1, (5,), 5, 1)))
    >>> slot_members(inst, (10,))
    ([0], [4])
    """
    members = [
        i for i, job in enumerate(instance.jobs) if all(a >= b for a, b in zip(job.unit, shape))
    ]
    return members, [
        instance.jobs[i].units * slot_demand(instance.jobs[i].unit, shape) for i in members
    ]


def slot_limits(instance: CpInstance) -> list[tuple[list[int], list[int], int]]:
    """Knapsacks on the jobs started now: ``(job indices, slots each takes, slots)`` per
    distinct unit shape ``sigma`` whose dominating jobs' demand exceeds the slots free
    now (others are omitted: they never bind). Slots: per node ``min_r floor(free /
    sigma_r)`` over the types ``sigma`` asks for, summed; a job takes ``units *
    slot_demand(unit, sigma)``.

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[20], [20]]),
    ...                   (CpJob(1, 2, (20,), 5, 1), CpJob(2, 1, (10,), 5, 1),
    ...                    CpJob(3, 1, (10,), 5, 1)),
    ...                   (CpRunning(9, ((0, (5,)),)),))
    >>> slot_limits(inst)   # 20-core units: node 1 only; 10-core units: 1 + 2
    [([0], [2], 1), ([0, 1, 2], [4, 1, 1], 3)]
    """
    free = instance.capacity - instance.used
    limits = []
    shapes = sorted({job.unit for job in instance.jobs}, reverse=True)
    for shape in shapes:
        need = np.asarray(shape, dtype=np.int64)
        asked = np.flatnonzero(need > 0)
        if not len(asked):
            continue
        slots = int((free[:, asked] // need[asked]).min(axis=1).sum())
        members, demands = slot_members(instance, shape)
        if sum(demands) > slots:
            limits.append((members, demands, slots))
    return limits


def identical_pairs(instance: CpInstance) -> list[tuple[int, int]]:
    """``(i, j)`` index pairs, ``i`` before ``j`` in priority order, of consecutive
    identical jobs (same units, unit, duration and weight): ``s_i <= s_j``.

    >>> from market_hpc.algorithms.cp.instance import CpJob
    >>> jobs = (CpJob(1, 1, (2,), 5, 7), CpJob(2, 1, (2,), 6, 7), CpJob(3, 1, (2,), 5, 7),
    ...         CpJob(4, 1, (2,), 5, 7))
    >>> identical_pairs(CpInstance(np.array([[4]]), jobs))
    [(0, 2), (2, 3)]
    """
    last: dict[tuple[int, tuple[int, ...], int, int], int] = {}
    pairs = []
    for i, job in enumerate(instance.jobs):
        key = (job.units, job.unit, job.duration, job.weight)
        if key in last:
            pairs.append((last[key], i))
        last[key] = i
    return pairs


def fluid_start_bound(jobs: list[tuple[int, int, int]], profile: list[tuple[int, int]]) -> float:
    """A lower bound on ``sum w_j s_j`` over the schedules of ``jobs`` on one cumulative
    resource whose free capacity is ``profile``.

    ``jobs``: ``(weight, duration, demand)`` with ``demand > 0``; ``profile``:
    ``(from time, free capacity)``, times increasing from 0, the last one lasting
    forever. A job run at ``[s, s + d)`` with its demand has mean busy time
    ``s + d / 2``; relaxing it to a *fluid* job (any rate up to its demand, total energy
    ``d * demand``) gives ``sum w_j (M_j - d_j / 2)``, whose minimum over fluid schedules
    the greedy rule reaches: at every instant the capacity goes to the jobs with the
    highest ``w / (d * demand)`` first, each up to its demand (an exchange argument: moving
    energy of a higher ratio job earlier and of a lower one later never costs more).

    >>> fluid_start_bound([(1, 4, 2), (1, 4, 2)], [(0, 2)])      # one after the other: 0 + 4
    4.0
    >>> # nothing free before 5: 3 * 5 + 7
    >>> fluid_start_bound([(3, 2, 1), (1, 2, 1)], [(0, 0), (5, 1)])
    22.0
    >>> # the 2nd gets 1 core for 2 s, then 2: M = 1.75
    >>> fluid_start_bound([(1, 2, 2), (1, 2, 2)], [(0, 3)])
    0.75
    """
    n = len(jobs)
    energy = [d * q for _, d, q in jobs]
    order = sorted(range(n), key=lambda j: (-jobs[j][0] / energy[j], j))
    left = [float(e) for e in energy]
    moment = [0.0] * n  # integral of t * rate
    t, k = 0.0, 0
    pending = list(order)
    while pending:
        cap = profile[k][1]
        change = float(profile[k + 1][0]) if k + 1 < len(profile) else float("inf")
        rates: list[tuple[int, float]] = []
        room = float(cap)
        for j in pending:
            if room <= 0:
                break
            rate = min(float(jobs[j][2]), room)
            rates.append((j, rate))
            room -= rate
        if not rates:
            if change == float("inf"):
                return 0.0  # never any capacity: no bound (cannot happen for jobs that fit)
            t, k = change, k + 1
            continue
        step = min(change - t, min(left[j] / rate for j, rate in rates))
        for j, rate in rates:
            moment[j] += rate * (t * step + step * step / 2)
            left[j] -= rate * step
        t += step
        if t >= change:
            k += 1
        pending = [j for j in pending if left[j] > 1e-9 * energy[j]]
    return sum(w * (moment[j] / energy[j] - d / 2) for j, (w, d, _) in enumerate(jobs))


def objective_bound(instance: CpInstance) -> int:
    """The largest fluid bound (``fluid_start_bound``) over two kinds of cumulative
    relaxation of the instance, rounded up (the objective is an integer):

    * per resource type, the pooled free capacity over time (the running jobs' ends)
      against each job's total demand ``units * unit_r``;
    * per distinct unit shape ``sigma``, the slots ``sum_n min_r floor(free_{n,r}(t) /
      sigma_r)`` over time against the slots (``slot_demand``) of the jobs whose unit
      dominates ``sigma``.

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[2], [2]]),
    ...                   (CpJob(1, 1, (2,), 4, 10), CpJob(2, 1, (2,), 4, 10)),
    ...                   (CpRunning(3, ((0, (2,)),)),))
    >>> objective_bound(inst)   # one 2-core slot now, two from 3: the 2nd job starts at >= 3
    30
    """
    jobs = instance.jobs
    if not jobs:
        return 0
    times, free = free_profile(instance)
    capacity = instance.capacity
    best = 0.0
    # a relaxation whose jobs all fit at 0 together bounds nothing (every M_j = d_j / 2): skipped
    for r in range(capacity.shape[1]):
        members = [
            (job.weight, job.duration, job.units * job.unit[r]) for job in jobs if job.unit[r] > 0
        ]
        profile = [(time, int(free[k, :, r].sum())) for k, time in enumerate(times)]
        if sum(q for _, _, q in members) > profile[0][1]:
            best = max(best, fluid_start_bound(members, profile))
    for shape in sorted({job.unit for job in jobs}):
        if not any(shape):
            continue
        indices, demands = slot_members(instance, shape)
        members = [(jobs[i].weight, jobs[i].duration, q) for i, q in zip(indices, demands)]
        slots = slot_profile(free, shape)
        if sum(demands) > slots[0]:
            best = max(best, fluid_start_bound(members, list(zip(times, slots))))
    return max(0, math.ceil(best - 1e-6 * max(1.0, best)))


def free_profile(instance: CpInstance) -> tuple[list[int], np.ndarray]:
    """``(times, free)``: from ``times[k]`` on (0, then each distinct running end), node
    ``n`` has ``free[k, n, r]`` of type ``r`` free.

    >>> from market_hpc.algorithms.cp.instance import CpRunning
    >>> times, free = free_profile(CpInstance(np.array([[4], [4]]), (),
    ...     (CpRunning(3, ((0, (4,)),)), CpRunning(5, ((0, (0,)), (1, (1,)))))))
    >>> times, free[:, :, 0].tolist()
    ([0, 3, 5], [[0, 3], [4, 3], [4, 4]])
    """
    times = [0] + sorted({job.remaining for job in instance.running})
    capacity = instance.capacity.astype(np.int64)
    jobs, nodes, amounts = instance.usage_rows
    # a job is busy in segments 0 .. last - 1: its amounts go in at ``last`` and the busy
    # amount of segment k is the sum of what goes in after k (a reverse cumulative sum)
    last = np.searchsorted(times, [job.remaining for job in instance.running])
    ending = np.zeros((len(times) + 1, *capacity.shape), dtype=np.int64)
    np.add.at(ending, (last[jobs], nodes), amounts)
    busy = np.cumsum(ending[::-1], axis=0)[::-1][1:]
    return times, np.maximum(capacity[None, :, :] - busy, 0)


def slot_profile(free: np.ndarray, shape: tuple[int, ...]) -> list[int]:
    """Units of ``shape`` that fit the free resources, per segment of ``free_profile``:
    ``sum_n min_r floor(free[k, n, r] / shape_r)`` over the types ``shape`` asks for.

    >>> slot_profile(np.array([[[0], [3]], [[4], [3]]]), (2,))
    [1, 3]
    """
    need = np.asarray(shape, dtype=np.int64)
    asked = np.flatnonzero(need > 0)
    return [int(s) for s in (free[:, :, asked] // need[asked]).min(axis=2).sum(axis=1)]


def slot_cumulatives(
    instance: CpInstance,
) -> list[tuple[list[int], list[int], list[tuple[int, int]], int]]:
    """Redundant cumulatives over unit slots: per distinct unit shape ``sigma`` whose
    dominating jobs could ever exceed the slots, ``(job indices, demands, blocks,
    capacity)``: a job uses ``units * slot_demand(unit, sigma)`` slots, ``capacity`` is
    the slots once every running job ended,
    and ``blocks`` are fixed ``(end, demand)`` intervals from 0 that take away what the
    running jobs still hold (``capacity - slots`` of each segment, as nested blocks).
    A unit that asks at least ``sigma`` in every type takes at least ``slot_demand``
    slots of its node at every instant it runs, so every schedule respects them (the
    time-indexed form of ``slot_limits``).

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[20], [20], [20]]),
    ...                   (CpJob(1, 2, (20,), 5, 1), CpJob(2, 2, (20,), 5, 1)),
    ...                   (CpRunning(4, ((0, (20,)),)), CpRunning(9, ((1, (5,)),))))
    >>> slot_cumulatives(inst)   # slots 1 until 4, 2 until 9, then 3
    [([0, 1], [2, 2], [(4, 1), (9, 1)], 3)]
    """
    times, free = free_profile(instance)
    cumulatives = []
    for shape in sorted({job.unit for job in instance.jobs}, reverse=True):
        if not any(shape):
            continue
        members, demands = slot_members(instance, shape)
        slots = slot_profile(free, shape)
        if sum(demands) <= min(slots):
            continue  # never binds
        capacity = slots[-1]
        blocks = []
        for k in range(
            len(times) - 1
        ):  # segment k lacks capacity - slots[k]; nest: block to times[k+1]
            lack = capacity - slots[k] - (capacity - slots[k + 1])
            if lack > 0:
                blocks.append((times[k + 1], lack))
        cumulatives.append((members, demands, blocks, capacity))
    return cumulatives
