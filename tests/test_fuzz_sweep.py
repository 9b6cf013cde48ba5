"""Seeded fuzzing of ``market-hpc sweep``: malformed sweep files (bad TOML, wrong types,
unknown keys, empty axes, zip length mismatches, huge grids) exit 2 with one error line
and no traceback; default-valued axes expand without an error.

Bounded: a fixed number of cases from a fixed seed, each refused before any run starts
(the huge grids by their count, never by building them).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from market_hpc.cli import main
from market_hpc.experiment.sweep import load_sweep

SEED = 20_261_202
CASES = 100
BASE = """platform = "kth-sp2"
timeseries = false
workload = { generator = "lublin-feitelson", jobs = 5 }
policy = { scheduler = "easy" }
"""
COUNT_LINE = re.compile(
    r"^sweep \S+: [\d,]+ runs? \(.*\); checking every point before the first run$"
)
JUNK = [
    '"x"',
    "1",
    "-3",
    "1.5",
    "true",
    "[]",
    "{}",
    '[1, "a"]',
    "{ a = 1 }",
    "nan",
    "inf",
    "1979-05-27",
    "[[1], [2]]",
    '"policy.scheduler"',
    "9223372036854775807",
]
PATHS = [
    "policy.scheduler",
    "policy.allocator",
    "policy.hold_penalty",
    "policy.params",
    "policy.params.queue_limit",
    "workload.jobs",
    "workload.load_factor",
    "workload.all_families.enabled",
    "policy.window.population",
    "platform",
    "seed",
    "timeseries",
    "queues.strategy",
    "policy.nope",
    "workload.x.y",
    "nope",
]


def _bad_toml(rng: random.Random) -> bytes:
    valid = (BASE + '[grid]\n"workload.jobs" = [5, 6]\n').encode()
    choice = rng.randrange(4)
    if choice == 0:  # cut anywhere
        return valid[: rng.randrange(1, len(valid) - 1)] + b"[\n= ="
    if choice == 1:  # random bytes, often not UTF-8
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
    if choice == 2:
        return valid + rng.choice(
            [b"[grid\n", b"seeds = = 1\n", b"[grid]\n", b'"a" = [1,\n', b"\x00\n"]
        )
    return valid.replace(b"=", b":", 1)


WRONG = {  # values of the reserved keys that are never valid
    "seeds": ['"x"', "-3", "0", "1.5", "true", "[]", "{}", '[1, "a"]', "[1.5]", "[-1]", "[1, 1]"],
    "base": ["5", "[]", "{}", "true", '"missing.toml"'],
    "report": ['"x"', "1", "[]", "{ metrics = 5 }", '{ metrics = ["nope"] }', "{ a = 1 }"],
    "quick": ['"x"', "1", "[]", "{ a = 1 }"],
    "zip": ['"x"', "1", "[1, 2]", '{ "workload.jobs" = 5 }', "[{}]"],
    "grid": ['"x"', "1", "[]", '{ "workload.jobs" = 5 }', '{ "workload.jobs" = [] }'],
}


def _wrong_type(rng: random.Random) -> str:
    key = rng.choice(sorted(WRONG))
    return f"{key} = {rng.choice(WRONG[key])}\n" + BASE


def _bad_axis(rng: random.Random) -> str:
    path = rng.choice(PATHS)
    values = rng.choice(["[]", '"easy"', "[1, 1]", "[" + ", ".join(rng.sample(JUNK, 2)) + "]"])
    return BASE + f'[grid]\n"{path}" = {values}\n'


def _unknown_key(rng: random.Random) -> str:
    where = rng.randrange(3)
    name = "".join(rng.choice("abcxyz_") for _ in range(rng.randrange(3, 9)))
    if where == 0:
        return f"{name} = 1\n" + BASE
    if where == 1:
        return BASE + f'[grid]\n"policy.{name}" = [1, 2]\n'
    return BASE + f"[report]\n{name} = 1\n"


def _zip_mismatch(rng: random.Random) -> str:
    a, b = rng.randrange(0, 4), rng.randrange(1, 4)
    if a == b:
        a = 0
    jobs = ", ".join(str(5 + i) for i in range(a))
    loads = ", ".join(f"1.{i}" for i in range(b))
    return BASE + f'[[zip]]\n"workload.jobs" = [{jobs}]\n"workload.load_factor" = [{loads}]\n'


def _huge(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"seeds = {rng.choice([100_001, 3_000_000, 10**9, 10**18, 2**63 - 1])}\n" + BASE
    lengths = [rng.randrange(40, 120) for _ in range(rng.randrange(3, 5))]
    lines = [
        f'"policy.params.{key}" = {list(range(1, n + 1))}'
        for key, n in zip(("queue_limit", "solver_seed", "workers", "levels"), lengths)
    ]
    return BASE.replace('"easy"', '"pcp20"') + "[grid]\n" + "\n".join(lines) + "\n"


DEFAULT_AXES = [  # each lists a value the config drops or normalises as a default
    ("policy.params", "[{}, { queue_limit = 5 }]"),
    ("policy.params.queue_limit", "[100, 7]"),
    ("workload.all_families.enabled", "[false]"),
    ("workload.all_families", "[{}]"),
    ("policy.hold_penalty", "[0, 0.5]"),
    ("policy.window", "[{}, { size = 10 }]"),
    ("queues.strategy", '["none", "static"]'),
]


MAKERS = [_bad_toml, _wrong_type, _bad_axis, _unknown_key, _zip_mismatch, _huge]


def _cases() -> list[tuple[str, bytes]]:
    rng = random.Random(SEED)
    cases = []
    for _ in range(CASES):
        maker = rng.choice(MAKERS)
        text = maker(rng)
        cases.append((maker.__name__, text if isinstance(text, bytes) else text.encode()))
    return cases


def test_malformed_sweep_files_exit_2_with_one_error_line(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    refused: dict[str, int] = {}
    for number, (kind, content) in enumerate(_cases()):
        path = tmp_path / f"case{number}.toml"
        path.write_bytes(content)
        code = main(["sweep", str(path), "--out", str(out)])
        captured = capsys.readouterr()
        lines = captured.err.splitlines()
        context = f"case {number} ({kind}): {content[:200]!r}\nstderr: {captured.err}"
        assert code == 2, context
        assert "Traceback" not in captured.err, context
        assert lines and lines[-1].startswith("market-hpc: error: "), context
        assert all(COUNT_LINE.match(line) for line in lines[:-1]), context
        assert captured.out == "", context
        assert not (out / "parts").exists() or not list((out / "parts").iterdir()), context
        refused[kind] = refused.get(kind, 0) + 1
    assert set(refused) == {maker.__name__ for maker in MAKERS}


@pytest.mark.parametrize(("path", "values"), DEFAULT_AXES)
def test_default_valued_axes_expand(tmp_path: Path, path: str, values: str) -> None:
    sweep_path = tmp_path / "sweep.toml"
    sweep_path.write_text(BASE.replace('"easy"', '"pcp19"') + f'[grid]\n"{path}" = {values}\n')
    sweep = load_sweep(sweep_path)
    assert len(sweep.runs) == len({run.run_id for run in sweep.runs}) == values.count(",") + 1
    column = path.rsplit(".", 1)[-1]
    assert all(column in run.params for run in sweep.runs)
