"""Platforms: presets, inline specs, TOML files, and their errors."""

from __future__ import annotations

import pytest

from market_hpc.domain.platform import PRESETS, load_platform
from market_hpc.errors import ConfigError, UnknownNameError

pytestmark = pytest.mark.smoke


@pytest.mark.parametrize(
    ("name", "nodes", "cores", "gpus", "mics"),
    [
        ("kth-sp2", 100, 100, 0, 0),
        ("nasa-ipsc", 128, 128, 0, 0),
        ("hpc2n", 120, 240, 0, 0),
        ("curie", 5544, 93312, 288, 0),
        ("eurora", 64, 1024, 64, 64),
        ("kit-fh2", 1173, 1152 * 20 + 21 * 48, 84, 0),
        ("hlrs-3x9", 3, 27, 0, 0),
    ],
)
def test_presets(name, nodes, cores, gpus, mics):
    platform = load_platform(name)
    assert platform.n_nodes == nodes
    assert platform.total.tolist()[:3] == [cores, gpus, mics]


def test_curie_matches_its_trace_header():
    curie = load_platform("curie")
    counts = {t.name: (t.count, t.count * t.cores) for t in curie.node_types}
    assert counts == {"thin": (5040, 80640), "fat": (360, 11520), "hybrid": (144, 1152)}


def test_inline_spec():
    platform = load_platform("nodes=4,cores=8,gpus=2,mem=16,bb=100")
    assert platform.capacity.tolist() == [[8, 2, 0, 16384]] * 4
    assert platform.burst_buffer == 100


def test_capacity_is_read_only():
    with pytest.raises(ValueError):
        load_platform("kth-sp2").capacity[0, 0] = 5


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nodes=4", "platform spec 'nodes=4': missing cores="),
        ("nodes=4,cores=x", "platform spec 'nodes=4,cores=x': cores='x' is not a number"),
        (
            "nodes=0,cores=2",
            "platform spec 'nodes=0,cores=2': nodes: got '0'; valid: an integer in [1, 2^53 - 1]",
        ),
        # nan once raised a bare ValueError, 2.5 nodes became 2, bb=nan passed
        ("nodes=nan,cores=2", "platform spec 'nodes=nan,cores=2': nodes='nan' is not a number"),
        (
            "nodes=2.5,cores=2",
            (
                "platform spec 'nodes=2.5,cores=2': nodes: got '2.5'; valid: an integer in [1, "
                "2^53 - "
                "1]"
            ),
        ),
        (
            "nodes=2,cores=2,bb=-1",
            "platform spec 'nodes=2,cores=2,bb=-1': bb: got '-1'; valid: a finite number >= 0",
        ),
        (
            "nodes=2,cores=2,gpu=1",
            "unknown platform key 'gpu'; valid choices: bb, cores, gpus, mem, mics, nodes",
        ),
        ("nodes=2;cores=2", "platform spec 'nodes=2;cores=2': nodes='2;cores=2' is not a number"),
        ("nodes=2,cores", "platform spec 'nodes=2,cores': item 'cores' is not key=value"),
    ],
)
def test_inline_errors(spec, message):
    with pytest.raises(ConfigError) as info:
        load_platform(spec)
    assert str(info.value) == message


def test_unknown_preset_lists_the_presets():
    with pytest.raises(UnknownNameError) as info:
        load_platform("kth")
    for name in PRESETS:
        assert name in str(info.value)
    assert str(info.value).startswith("unknown platform preset 'kth'; valid choices: ")


def test_toml_platform(tmp_path):
    path = tmp_path / "mini.toml"
    path.write_text(
        'name = "mini"\nburst_buffer = 10\n'
        '[[node_type]]\nname = "thin"\ncount = 2\ncores = 4\nmem = 8\n'
        '[[node_type]]\nname = "gpu"\ncount = 1\ncores = 2\ngpus = 2\n'
    )
    platform = load_platform(str(path))
    assert platform.capacity.tolist() == [[4, 0, 0, 8192], [4, 0, 0, 8192], [2, 2, 0, 0]]
    assert platform.node_type_index.tolist() == [0, 0, 1]


def test_toml_platform_errors(tmp_path):
    bad_key = tmp_path / "bad.toml"
    bad_key.write_text("[[node_type]]\ncount = 1\ncores = 2\nfpgas = 1\n")
    with pytest.raises(
        UnknownNameError, match=r"unknown node_type key in .*bad.toml \(node_type #1\) 'fpgas'"
    ):
        load_platform(str(bad_key))
    missing = tmp_path / "missing.toml"
    with pytest.raises(
        ConfigError, match=r"cannot read platform file .*missing.toml: No such file"
    ):
        load_platform(str(missing))
    broken = tmp_path / "broken.toml"
    broken.write_text("[[node_type]\n")
    with pytest.raises(ConfigError, match=r"broken.toml: invalid TOML"):
        load_platform(str(broken))
    empty = tmp_path / "empty.toml"
    empty.write_text('name = "x"\n')
    with pytest.raises(ConfigError, match=r"needs at least one \[\[node_type\]\] table"):
        load_platform(str(empty))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "count = nan\ncores = 4",
            r"node_type #1 count: got nan; valid: an integer in \[1, 2\^53 - 1\]",
        ),
        (
            'count = 2\ncores = "4"',
            r"node_type #1 cores: got '4'; valid: an integer in \[1, 2\^53 - 1\]",
        ),
        (
            "count = 2\ncores = 4\nmem = inf",
            r"node_type #1 mem: got inf; valid: a finite number in \[0, 8\.79609e\+12\]",
        ),
    ],
)
def test_toml_platform_numbers_are_checked(tmp_path, table, message):
    # int("4") and float(nan) once went through; nan raised a bare ValueError
    path = tmp_path / "numbers.toml"
    path.write_text(f"[[node_type]]\n{table}\n")
    with pytest.raises(ConfigError, match=r"numbers\.toml: " + message):
        load_platform(str(path))


@pytest.mark.parametrize("mem", ["1e308", "1e15", "8796093022208"])
def test_too_much_memory_is_refused_as_typed_in_gb(mem, tmp_path):
    with pytest.raises(
        ConfigError, match=rf"mem: got '{mem}'; valid: a finite number in \[0, 8\.79609e\+12\]"
    ):
        load_platform(f"nodes=2,cores=4,mem={mem}")
    path = tmp_path / "p.toml"
    path.write_text(f"[[node_type]]\ncount = 2\ncores = 4\nmem = {mem}\n")
    with pytest.raises(
        ConfigError,
        match=r"node_type #1 mem: got .*; valid: a finite number in \[0, 8\.79609e\+12\]",
    ):
        load_platform(str(path))


def test_the_largest_memory_a_node_holds_exactly_is_accepted():
    assert (
        load_platform("nodes=2,cores=4,mem=8796093022207").node_types[0].mem == 8796093022207 * 1024
    )
