"""Mutation check of PCP'20's redundant rules, hint and schedule relaxation (Galleguillos
et al.): each one-line mutation must fail a test.

    python benchmarks/cp_mutations.py

Applies each mutation to the source, runs ``tests/cp/test_cuts.py`` and
``tests/cp/test_relax.py`` (and, for the relaxation's strength-only lines, the pinned
PCP'20 decisions of ``tests/cp/test_decisions.py``), restores the file,
and prints which test failed (CAUGHT) or SURVIVED when no test noticed
(``mutation_check.py``). Edits files in place: never run it beside other runs of this tree.
"""

from mutation_check import run_mutations

CUTS, PLAN, MODEL = (
    "market_hpc/algorithms/cp/cuts.py",
    "market_hpc/algorithms/cp/listplan.py",
    "market_hpc/algorithms/cp/rules.py",
)
RELAX, PCP20 = "market_hpc/algorithms/cp/relax.py", "market_hpc/algorithms/cp/pcp20.py"
M = [
    (
        "event bound one second late",
        CUTS,
        "bounds.append(max(1, min(candidates)) if candidates else 1)",
        "bounds.append(max(1, min(candidates)) + 1 if candidates else 1)",
    ),
    (
        "event bound counts the job's own end",
        CUTS,
        "other = [durations[j] for j in order[:2] if j != i][:1]",
        "other = [durations[j] for j in order[:1]]",
    ),
    (
        "one slot fewer per shape",
        CUTS,
        "        slots = int((free[:, asked] // need[asked]).min(axis=1).sum())",
        "        slots = int((free[:, asked] // need[asked]).min(axis=1).sum()) - 1",
    ),
    # (dropped: "slot members: dominated jobs too". A dominated job's
    # slot_demand is 0, so the members filter only saves work and the mutation is equivalent.)
    (
        "identical twins strictly ordered",
        MODEL,
        "model.add(starts[i] <= starts[j])",
        "model.add(starts[i] < starts[j])",
    ),
    (
        "twins by shape only (duration ignored)",
        CUTS,
        "key = (job.units, job.unit, job.duration, job.weight)",
        "key = (job.units, job.unit)",
    ),
    (
        "fluid: lowest ratio first",
        CUTS,
        "order = sorted(range(n), key=lambda j: (-jobs[j][0] / energy[j], j))",
        "order = sorted(range(n), key=lambda j: (jobs[j][0] / energy[j], j))",
    ),
    (
        "fluid: mean busy time not halved",
        CUTS,
        "return sum(w * (moment[j] / energy[j] - d / 2)",
        "return sum(w * (moment[j] / energy[j] - d / 4)",
    ),
    (
        "free profile: running jobs never end",
        CUTS,
        "            free[:last, node] -= np.asarray(amounts, dtype=np.int64)",
        "            free[:, node] -= np.asarray(amounts, dtype=np.int64)",
    ),
    (
        "slot cumulative: one block too many",
        CUTS,
        "            if lack > 0:\n                blocks.append((times[k + 1], lack))",
        "            if lack >= 0:\n                blocks.append((times[k + 1], lack + 1))",
    ),
    (
        "list plan: positions overlap by one",
        PLAN,
        "starts = [a + k * u for a, b in rr for k in range((b - a) // u)][:count]",
        "starts = [a + k * max(1, u - 1) for a, b in rr for k in range((b - a) // u)][:count]",
    ),
    (
        "list plan: ended blocks still busy",
        PLAN,
        "        if end <= now:\n            continue",
        "        if end < 0:\n            continue",
    ),
    (
        "list plan: planned jobs never release",
        PLAN,
        "            planned_use[node] -= count * np.asarray(amounts, dtype=np.int64)",
        "            pass",
    ),
    (
        "slot demand: one slot per unit",
        CUTS,
        "return min(u // s for u, s in zip(unit, shape) if s > 0)",
        "return 1",
    ),
    (
        "relaxation: an unproven schedule is a proof",
        PCP20,
        'if relaxed.starts is None or relaxed.status != "OPTIMAL":',
        "if relaxed.starts is None:",
    ),
    (
        "relaxation: the hint always optimal",
        PCP20,
        "if relaxed.objective >= plan.objective(instance):  # the hint",
        "if True:  # the hint",
    ),
    ("placement: starts not fixed", PCP20, "_assign(domain, [starts[key], starts[key]])", "pass"),
    (
        "relaxation: twins strictly ordered",
        RELAX,
        "model.add(starts[i] <= starts[j])",
        "model.add(starts[i] < starts[j])",
    ),
    (
        "relaxation: slot blocks dropped",
        RELAX,
        "demands + [lack for _, lack in lacks], capacity)",
        "demands + [0 for _, lack in lacks], capacity)",
    ),
    (
        "relaxation: running jobs not in the pooled cumulative",
        RELAX,
        "[int(usage[r]) for _, usage in blocks]",
        "[0 for _, usage in blocks]",
    ),
    (
        "no event domains (model and relaxation: cp_rules.new_start)",
        MODEL,
        "if 1 < event <= top:",
        "if False:",
    ),
    (
        "relaxation: its bound not passed to the search",
        PCP20,
        "        if relaxed.bound > built.lower_bound:",
        "        if False:",
    ),
    (
        "start-now cut without the fit check",
        PCP20,
        "if fits_now(instance, sorted(now), limits) is not False:",
        "if False:",
    ),
    ("start-now cut never added", PCP20, "            forbidden.append(now)", "            pass"),
    (
        "start-now cut: no clause",
        RELAX,
        "        model.add_bool_or([~now[i] for i in sorted(group)])",
        "        pass",
    ),
    (
        "start-now flag: one-sided link",
        RELAX,
        "                model.add(starts[i] >= 1).only_enforce_if(~flag)",
        "                pass",
    ),
    (
        "fits now: one unit more per node",
        RELAX,
        "                          <= int(free[node, r]))",
        "                          <= int(free[node, r]) + 1)",
    ),
    (
        "settle cap: one segment early",
        RELAX,
        "    return times[first] if 0 < first < len(times) else None",
        "    return times[first - 1] if 1 < first < len(times) else None",
    ),
    (
        "settle cap: slot counts ignored",
        RELAX,
        (
            "            fits &= np.asarray(slot_profile(free, shape)) >= "
            "sum(slot_members(instance, "
            "shape)[1])"
        ),
        "            pass",
    ),
    (
        "settle cap: pooled counts ignored",
        RELAX,
        (
            "        fits &= free[:, :, r].sum(axis=1) >= sum(job.units * job.unit[r] for job in "
            "instance.jobs)"
        ),
        "        pass",
    ),
    (
        "settle cap: also at time 0",
        RELAX,
        "    return times[first] if 0 < first < len(times) else None",
        "    return times[first] if first < len(times) else None",
    ),
    (
        "settle cap: never applied",
        RELAX,
        "            model.add(start <= settled)",
        "            pass",
    ),
]
PINNED = (
    "tests/cp/test_decisions.py::"
    "test_cp_decisions_and_models_match_the_unoptimised_code[pcp20-default-core]"
)
tests = ["tests/cp/test_cuts.py", "tests/cp/test_relax.py", PINNED]

if __name__ == "__main__":
    raise SystemExit(run_mutations(M, tests))
