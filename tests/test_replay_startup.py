"""How ``market-hpc replay`` starts: Mesa imported first, the cyclic GC paused while
importing and the imported objects frozen for the run, all undone when ``main`` returns
(also on an error), so callers in process keep a normal GC."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Modules a plain trace replay does not need (summaries, generators, task-graph jobs).
NOT_FOR_REPLAY = {
    "market_hpc.workload.info",
    "market_hpc.workload.synthetic",
    "market_hpc.workload.taskgraph_jobs",
    "market_hpc.algorithms.taskgraph",
}


def write_trace(path: Path, n: int = 30) -> Path:
    lines = [
        f"{i} {5 * i} -1 {20 + i % 7} {1 + i % 3} -1 -1 -1 -1 -1 1 1 -1 -1 1 -1 -1 -1"
        for i in range(1, n + 1)
    ]
    path.write_text("; Version: 2.2\n" + "\n".join(lines) + "\n")
    return path


def test_replay_imports_mesa_before_the_rest(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.swf")
    probe = (
        "import gc, json, sys\n"
        "from market_hpc.cli import main\n"
        f"code = main(['replay', {str(trace)!r}, '--platform', 'nodes=4,cores=1', '--out', "
        f"{str(tmp_path / 'out')!r}])\n"
        "order = list(sys.modules)  # in the order imports completed\n"
        "print(json.dumps([code, order.index('mesa'), order.index('market_hpc.workload.swf'),"
        " order.index('market_hpc.experiment.config'), gc.isenabled(), gc.get_freeze_count(),"
        f" sorted(set({sorted(NOT_FOR_REPLAY)!r}) & set(order))]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    code, mesa, swf, config, enabled, frozen, unneeded = json.loads(
        done.stdout.strip().splitlines()[-1]
    )
    assert unneeded == []
    assert code == 0 and (tmp_path / "out" / "jobs.csv").exists()
    assert (
        mesa < swf and mesa < config
    )  # (imported by market_hpc.experiment, they came first before)
    assert enabled and frozen == 0


def test_gc_restored_in_process_after_a_run_and_after_an_error(tmp_path: Path, capsys) -> None:
    from market_hpc.cli import main

    assert gc.isenabled() and gc.get_freeze_count() == 0
    trace = write_trace(tmp_path / "t.swf")
    assert main(["replay", str(trace), "--platform", "nodes=4,cores=1"]) == 0
    assert "jobs_completed" in capsys.readouterr().out
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert main(["replay", str(tmp_path / "absent.swf"), "--platform", "nodes=4,cores=1"]) == 2
    assert "cannot read trace" in capsys.readouterr().err
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_gc_left_off_when_the_caller_turned_it_off(tmp_path: Path) -> None:
    from market_hpc.cli import main

    gc.disable()
    try:
        assert (
            main(["replay", str(write_trace(tmp_path / "t.swf")), "--platform", "nodes=4,cores=1"])
            == 0
        )
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_classic_replay_imports_only_the_policy_modules_it_names(tmp_path: Path) -> None:
    """The registry imports built-in policy modules until the name it looks up is there: a
    FIFO replay loads neither the other families (CP, Slurm, the market auctions, the
    learned dispatchers) nor the plugins; a name no built-in registers, or listing the
    names, loads everything."""
    trace = write_trace(tmp_path / "t.swf")
    other_families = [
        "market_hpc.policies.cp",
        "market_hpc.policies.slurm.scheduler",
        "market_hpc.algorithms.market.auction",
        "market_hpc.rl.registry",
        "market_hpc.policies.plugins",
    ]
    probe = (
        "import json, sys\n"
        "from market_hpc.cli import main\n"
        f"code = main(['replay', {str(trace)!r}, '--platform', 'nodes=4,cores=1', '--out', "
        f"{str(tmp_path / 'out')!r}])\n"
        f"after_fifo = sorted(set({other_families!r}) & set(sys.modules))\n"
        "from market_hpc.policies import registry\n"
        "try:\n"
        "    registry.scheduler_entry('no-such-policy')\n"
        "except Exception as error:\n"
        "    named = 'easy' in str(error) and 'maxvh' in str(error)\n"
        f"print(json.dumps([code, after_fifo, named, sorted(set({other_families!r}) - "
        "set(sys.modules))]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    code, after_fifo, named, missing = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 0 and after_fifo == []
    assert named and missing == []  # the unknown name's error lists every family's names


def test_a_replay_does_not_import_the_http_stack(tmp_path: Path) -> None:
    """Only ``trace fetch`` downloads: a replay leaves ``workload.http_fetch`` (and with it
    ``http.client`` and ``urllib.request``) unimported."""
    trace = write_trace(tmp_path / "t.swf")
    probe = (
        "import json, sys\n"
        "from market_hpc.cli import main\n"
        f"code = main(['replay', {str(trace)!r}, '--platform', 'nodes=4,cores=1', '--out', "
        f"{str(tmp_path / 'out')!r}])\n"
        "names = ['market_hpc.workload.http_fetch', 'http.client', 'urllib.request']\n"
        "print(json.dumps([code, [name for name in names if name in sys.modules]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, []]
