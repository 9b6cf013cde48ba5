"""Trained dispatchers as schedulers: the policy path decides as the environment offers
(scripted predictors, no torch), and a saved MaskablePPO model runs as ``learned:PATH``
in a run, a sweep and its report (the rl extra; skipped without it)."""

from __future__ import annotations

import numpy as np
import pytest

from market_hpc.core.model import HPCModel
from market_hpc.policies import make_allocator
from market_hpc.rl.dispatch import DispatchOptions
from market_hpc.rl.learned import DispatchingPolicy
from market_hpc.workload.synthetic import lublin_feitelson

PLATFORM = "nodes=8,cores=8"
JOBS = lublin_feitelson(400, 64, seed=5, load_factor=1.6)


class FirstSlot:
    def predict(self, observation, *, action_masks, deterministic):  # type: ignore[no-untyped-def]
        return 0, None


@pytest.mark.parametrize(("scheduler", "backfill"), [("fifo", False), ("easy", True)])
def test_a_dispatching_policy_decides_as_the_environment_offers(
    scheduler: str, backfill: bool
) -> None:
    reference = HPCModel(JOBS, PLATFORM, scheduler=scheduler, record_timeseries=False)
    reference.run()
    policy = DispatchingPolicy(
        make_allocator("first-fit"), FirstSlot(), DispatchOptions(window=16, backfill=backfill)
    )
    model = HPCModel(JOBS, PLATFORM, policy=policy, record_timeseries=False)
    model.run()
    assert model.jobs_frame().equals(reference.jobs_frame())
    assert policy.steps > 0 and policy.name == "learned+first-fit"


def _tiny_model(tmp_path, backfill: bool):  # type: ignore[no-untyped-def]
    sb3_contrib = pytest.importorskip(
        "sb3_contrib", reason="the rl extra (sb3-contrib, torch) is not installed"
    )
    pytest.importorskip("gymnasium", reason="gymnasium is not installed")
    from market_hpc.rl.env import HPCDispatchEnv
    from market_hpc.rl.learned import save_learned

    env = HPCDispatchEnv(list(JOBS), PLATFORM, episode_jobs=64, window=16, backfill=backfill)
    if backfill:  # RLScheduler's kernel network
        from market_hpc.rl.kernel import KernelPolicy

        policy, kwargs = KernelPolicy, {}
    else:
        policy, kwargs = "MlpPolicy", {"net_arch": [16]}
    model = sb3_contrib.MaskablePPO(
        policy,
        env,
        n_steps=64,
        batch_size=32,
        n_epochs=1,
        seed=0,
        policy_kwargs=kwargs,
        device="cpu",
    )
    model.learn(128)
    return save_learned(model, tmp_path / "tiny", env.options, trace="lublin-feitelson"), env


@pytest.mark.rl
@pytest.mark.parametrize("backfill", [False, True])
def test_a_saved_model_runs_as_a_scheduler_as_it_acts_in_the_environment(
    tmp_path, backfill: bool
) -> None:  # type: ignore[no-untyped-def]
    # The environment asks sb3's predict; the scheduler its own forward pass (GreedyPredictor).
    from market_hpc.policies import make_policy
    from market_hpc.rl.learned import load_model

    path, env = _tiny_model(tmp_path, backfill)
    assert path.name == "tiny.zip" and (tmp_path / "tiny.zip.json").is_file()
    model = load_model(path)
    obs, _ = env.reset(options={"start": 0})
    done = False
    while not done:
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, done, _, _ = env.step(action)
    assert env.model is not None
    in_env = env.model.jobs_frame()
    policy = make_policy(f"learned:{path}")
    run = HPCModel(JOBS[:64], PLATFORM, policy=policy, record_timeseries=False)
    run.run()
    assert run.jobs_frame()[["job_id", "start_time", "nodes"]].equals(
        in_env[["job_id", "start_time", "nodes"]]
    )


@pytest.mark.rl
def test_a_saved_model_in_a_sweep_and_its_report(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.experiment.report import write_report
    from market_hpc.experiment.sweep import run_sweep

    path, _ = _tiny_model(tmp_path, backfill=True)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f"""
name = "learned-sweep"
platform = "{PLATFORM}"
seeds = 2

[workload]
generator = "lublin-feitelson"
jobs = 200
load_factor = 1.5

[policy]
scheduler = "easy"

[grid]
"policy.scheduler" = ["easy", "wfp3-easy", "learned:{path}"]
""")
    outcome = run_sweep(sweep, tmp_path / "out", progress=False)
    assert " 0 failed" in outcome.describe()
    import pandas as pd

    table = pd.read_csv(tmp_path / "out" / "results.csv")
    assert f"learned:{path}" in set(table["scheduler"])
    assert (table["status"] == "ok").all()
    assert np.isfinite(table["mean_bounded_slowdown"]).all()
    written = write_report(tmp_path / "out")
    assert written


@pytest.mark.rl
def test_the_committed_hpc2n_model_runs_as_a_scheduler_with_the_options_it_was_trained_with() -> (
    None
):
    # examples/models/hpc2n.zip is the model docs/learned-dispatchers.md evaluates; a change
    # to the observation layout or the loader would break it here (shape or load error).
    pytest.importorskip("sb3_contrib", reason="the rl extra (sb3-contrib, torch) is not installed")
    from pathlib import Path

    from market_hpc.policies import make_policy
    from market_hpc.rl.learned import load_options

    path = Path(__file__).resolve().parents[2] / "examples" / "models" / "hpc2n.zip"
    options, meta = load_options(path)
    assert (options.window, options.backfill, meta["platform"], meta["steps"]) == (
        128,
        False,
        "hpc2n",
        434184,
    )
    jobs = lublin_feitelson(300, 240, seed=3, load_factor=1.5)
    frames = []
    for _ in range(2):
        policy = make_policy(f"learned:{path}")
        run = HPCModel(jobs, "hpc2n", policy=policy, record_timeseries=False)
        run.run()
        frames.append(run.jobs_frame())
    assert frames[0].equals(frames[1])  # deterministic: the greedy action of the network
    assert len(frames[0]) == 300 and (frames[0]["start_time"] >= frames[0]["submit_time"]).all()
    assert policy.steps > 0 and policy.name == f"learned:{path}+first-fit"
