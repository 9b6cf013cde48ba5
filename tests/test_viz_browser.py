"""The browser app (``market-hpc viz``) in a real headless Chromium, offline.

Starts one server on a free loopback port for the module and drives Debian's
``/usr/bin/chromium`` with Playwright (helpers in ``viz_browser.py``): Step changes the
grid, the plots and the clock with every request served from loopback (no CDN); Reset
replays the same run; each control is changed and its effect read back from the page after
Reset; Play runs 10 s on Curie and prints the step rate; Play moves the step counter and
Pause stops it, in the page and through ``benchmarks/viz_step.py --browser``; Play and
Pause, clicked over and over beside two busy-looping processes, never loop renders; one
screenshot per platform preset is saved under ``out/viz/``; a second server shows a scenario
file and keeps it across Reset. The same selectors work on Mesa 3.3 (Python 3.11) and Mesa
3.5 (``run-tests`` runs these on Python 3.13 too). Skips, with the reason, only where
Playwright, the viz extra or Chromium is missing.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from viz_browser import (
    OPEN_MENU,
    REPO,
    Server,
    click_step,
    eventually,
    measure_play,
    open_page,
    playwright_or_skip,
    reset_and_read,
    select,
    serve,
    settled,
    slide,
    step_count,
    type_into,
    wait_steps,
)

pytestmark = pytest.mark.browser  # run-tests runs these on the newest Python and Mesa too

LOCAL_HOSTS = {"127.0.0.1", "localhost"}


@pytest.fixture(scope="module")
def sync_api():  # type: ignore[no-untyped-def]
    """Playwright's sync API, or a skip naming what is missing."""
    return playwright_or_skip()


@pytest.fixture(scope="module")
def viz_server(sync_api, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``market-hpc viz`` (controls' workload), shared by the module."""
    yield from serve(tmp_path_factory)


@pytest.fixture(scope="module")
def scenario_server(sync_api, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``market-hpc viz scenarios/sample_overload.toml``."""
    yield from serve(tmp_path_factory, str(REPO / "scenarios" / "sample_overload.toml"))


SCREENSHOTS = REPO / "out" / "viz"
KTH_SAMPLE = REPO / "traces" / "lf-kth-like-2000.swf"


@pytest.fixture
def page(sync_api, viz_server: Server):  # type: ignore[no-untyped-def]
    """The app with the controls' workload."""
    yield from open_page(sync_api, viz_server)


@pytest.fixture
def scenario_page(sync_api, scenario_server: Server):  # type: ignore[no-untyped-def]
    """The app showing a scenario file."""
    yield from open_page(sync_api, scenario_server)


def test_browser_steps_the_live_market_offline(page) -> None:  # type: ignore[no-untyped-def]
    nodes, plots = page.locator("img.mhpc-nodes"), page.locator(".mhpc-timeseries")
    plots.wait_for(timeout=30_000)
    assert page.title() == "market_hpc: the live market"
    assert not page.get_by_text("Page 0", exact=True).is_visible(), "Mesa's single tab is shown"
    assert not page.get_by_text("This website runs on").is_visible(), "Solara's banner covers tiles"

    def view() -> tuple[bytes, str, str]:
        return nodes.screenshot(), plots.inner_html(), page.locator(".mhpc-clock").inner_text()

    before = settled(view)
    click_step(page, 5)
    assert eventually(lambda: view()[0] != before[0]), "node grid did not change after five steps"
    after = settled(view)
    assert after[1] != before[1], "time series did not change after five steps"
    page.get_by_text(f"Simulated time: {after[2]}", exact=True).wait_for(timeout=10_000)
    assert not page.get_by_text(re.compile(r"^Time: ")).count(), "Mesa's step count shown as time"
    # Reset rebuilds the model from the same parameters: the first picture and clock come
    # back, and five steps draw the same grid and plots again (one seed, bit for bit).
    page.get_by_role("button", name="Reset").click()
    wait_steps(page, 0)
    assert eventually(lambda: view() == before), (
        "Reset did not bring back the first grid, plot and clock"
    )
    click_step(page, 5)
    assert eventually(lambda: view() == after), (
        "five steps after Reset drew another grid, plot or clock"
    )
    _play_then_select_a_job(page)
    assert page.locator(".mhpc-curve polyline").count() == 1, "no value curve for the selected job"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "market_default.png"), full_page=True)
    foreign = sorted(
        {
            u
            for u in page.requested
            if urlsplit(u).scheme not in ("data", "blob")
            and urlsplit(u).hostname not in LOCAL_HOSTS
        }
    )
    assert not foreign, f"requests left the machine: {foreign}"
    assert page.requested


def _play_then_select_a_job(page) -> None:  # type: ignore[no-untyped-def]
    """Play until the queue fills, pause, open the top queued job's details."""
    page.get_by_role("button", name="\u25b6").click()
    page.wait_for_function(
        "() => /Step: ([3-9][0-9]|[0-9]{3,})$/.test(document.body.innerText.trim().split('\\n')"
        ".find(line => line.startsWith('Step: ')) || '')",
        timeout=30_000,
    )
    page.get_by_role("button", name="\u275a\u275a").click()
    page.get_by_role("button", name="Step").and_(page.locator(":enabled")).wait_for(timeout=10_000)
    top = page.locator(".mhpc-table tbody button").first
    top.wait_for(timeout=10_000)
    top.click()
    page.locator(".mhpc-job").wait_for(timeout=10_000)


def test_every_control_changes_the_model(page) -> None:  # type: ignore[no-untyped-def]
    """Each control, changed in the page and applied with Reset, shows in the status line."""
    select(page, "policy (scheduler)", "easy")
    reset_and_read(page, "easy on")
    select(page, "allocator", "balanced")
    reset_and_read(page, "easy + balanced on")
    select(page, "platform", "custom")
    slide(page, "custom platform: nodes", -4)  # 32 -> 28 nodes
    slide(page, "custom platform: cores per node", -4)  # 16 -> 12 cores
    slide(page, "custom platform: GPUs per node", 2)
    slide(page, "custom platform: MICs per node", 1)
    reset_and_read(page, "28 x 12 cores, 2 GPUs, 1 MICs")
    select(page, "workload", "lublin-feitelson")
    slide(page, "jobs (generated", -2)  # 1500 -> 1300 jobs
    slide(page, "share of GPU jobs", 4)  # 0.2
    slide(page, "share of MIC jobs", 4)  # 0.2
    slide(page, "load factor", 1)  # 2.25
    slide(page, "holding penalty", 1)  # 0.15
    slide(page, "seed", 2)  # 3
    for shown in (
        "jobs (generated, or first N of the trace): 1,300",
        "load factor: 2.25",
        "holding penalty (share of max value): 0.15",
        "seed: 3",
    ):
        assert page.get_by_text(shown, exact=True).is_visible(), f"slider label {shown!r} missing"
    line = reset_and_read(
        page,
        "1,300 jobs; workload lublin-feitelson, 20 % GPU jobs, 20 % MIC jobs, "
        "load 2.25, holding penalty 0.15, seed 3",
    )
    assert "GPUs busy" in line and "MICs busy" in line
    click_step(page, 60)
    busy = {
        name: int(page.locator(f".mhpc-{name}").inner_text().rstrip(" %"))
        for name in ("GPUs", "MICs")
    }
    assert busy["GPUs"] > 0 and busy["MICs"] > 0, busy
    select(page, "workload", "eurora")
    select(page, "platform", "eurora")
    select(page, "policy (scheduler)", "ebf")
    select(page, "allocator", "weighted")
    reset_and_read(page, "ebf + weighted on eurora")
    select(page, "workload", "trace file")
    type_into(page, "trace file", str(KTH_SAMPLE))
    select(page, "platform", "kth-sp2")
    select(page, "allocator", "default")
    line = reset_and_read(page, f"workload trace {KTH_SAMPLE.name}")
    assert "1,300 jobs" in line
    click_step(page, 3)
    select(page, "policy (scheduler)", "maxv")
    select(page, "allocator", "first-fit")
    reset_and_read(page, "stopped")
    assert (
        "does not work with allocator 'first-fit'" in page.locator(".mhpc-tile").nth(1).inner_text()
    )


def test_policy_control_lists_every_registered_scheduler(page) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.policies.registry import scheduler_names

    page.locator(".v-select").filter(has_text="policy (scheduler)").first.click()
    options = page.locator(OPEN_MENU).get_by_role("option")
    listed: list[str] = []
    while len(listed) < len(scheduler_names()):  # Vuetify renders long menus in pages of 20
        before = len(listed)
        options.last.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        listed = options.all_inner_texts()
        if len(listed) == before:
            break
    page.keyboard.press("Escape")
    assert sorted(text.strip() for text in listed) == scheduler_names()


def test_play_on_curie_for_ten_seconds(page) -> None:  # type: ignore[no-untyped-def]
    select(page, "platform", "curie")
    select(page, "policy (scheduler)", "easy")
    reset_and_read(page, "easy on curie")
    click_step(page, 1)
    first = step_count(page)
    began = time.monotonic()
    page.get_by_role("button", name="\u25b6").click()
    page.wait_for_timeout(10_000)
    page.get_by_role("button", name="\u275a\u275a").click()
    elapsed = time.monotonic() - began
    page.get_by_role("button", name="Step").and_(page.locator(":enabled")).wait_for(timeout=10_000)
    steps = step_count(page) - first
    print(
        f"\nPlay on Curie (5,544 nodes), headless Chromium: {steps} steps in {elapsed:.1f} s = "
        f"{steps / elapsed:.1f} steps/s (load average {os.getloadavg()[0]:.1f})"
    )
    assert steps > 0


def test_play_moves_the_counter_and_pause_stops_it(page) -> None:  # type: ignore[no-untyped-def]
    """Play for 5 s as ``benchmarks/viz_step.py --browser`` measures it: the page's step
    counter moves at least 3 steps, and once Pause has taken effect it stays still for 3 s."""
    run = measure_play(page, seconds=5)
    assert run.last_step - run.first_step >= 3, run
    assert run.paused_at >= run.last_step, run
    assert run.paused_later == run.paused_at, run


def test_viz_step_browser_measures_play_and_pause(sync_api) -> None:  # type: ignore[no-untyped-def]
    """``benchmarks/viz_step.py --browser`` on one case at a load factor the page's slider
    reaches by keyboard: its own server and page, the controls set and Reset, 4 s of Play;
    it prints the steps played, the pause check and the in-process row, and exits 0 (the
    counter moved, then stood still while paused)."""
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "viz_step.py"),
            "--browser",
            "--case",
            "easy@kth-sp2",
            "--load",
            "2.5",
            "--seconds",
            "4",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,  # a guard against a hang, not a measure
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    interval = re.search(
        r"^PLAY_INTERVAL_MS = (\d+)$",
        (Path(__file__).resolve().parents[1] / "visualization" / "app.py").read_text(),
        re.MULTILINE,
    )
    assert interval, "visualization/app.py sets no PLAY_INTERVAL_MS"
    expected = f"load factor 2.5, seed 1, play interval {interval.group(1)} ms; load average "
    assert expected in lines[0], lines
    played = re.fullmatch(
        r"  easy@kth-sp2: steps (\d+) -> (\d+) in [\d.]+ s = [\d.]+ steps/s \(load average "
        r"[\d./]+ \(1/5/15 min\) at Play\); paused: (\d+) -> (\d+)",
        lines[1],
    )
    assert played, lines
    first, last, paused_at, paused_later = map(int, played.groups())
    assert last - first >= 3 and paused_at >= last and paused_later == paused_at, lines[1]
    assert lines[2].split() == [
        "case",
        "nodes",
        "browser",
        "step",
        "render",
        "bound",
        "server",
        "thread",
        "chromium",
        "idle",
    ]
    assert re.fullmatch(r" +easy@kth-sp2 +100( +-?[\d.]+){8}", lines[4]), lines
    assert lines[5].startswith("load average at the end "), lines


def test_screenshot_of_each_platform_preset(page) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.domain.platform import PRESETS

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    select(page, "policy (scheduler)", "easy")
    select(page, "workload", "lublin-feitelson")
    slide(page, "share of GPU jobs", 4)
    slide(page, "share of MIC jobs", 4)
    for name in PRESETS:
        select(page, "platform", name)
        reset_and_read(page, f"easy on {name}")
        click_step(page, 12)
        path = SCREENSHOTS / f"preset_{name}.png"
        page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        assert path.stat().st_size > 10_000


def test_scenario_file_steps_and_resets_with_new_parameters(scenario_page) -> None:  # type: ignore[no-untyped-def]
    """``market-hpc viz SCENARIO``: the scenario's workload, policy and allocator; Reset keeps
    the scenario file and applies the changed controls (Mesa 3.5's Reset passes its own
    ``Scenario`` object to a constructor parameter named ``scenario``)."""
    page = scenario_page
    line = page.locator(".mhpc-status").inner_text()
    assert (
        "easy + best-fit on kth-sp2" in line and "workload scenario sample_overload.toml" in line
    ), line
    assert "load 1.5" in line and "2,000 jobs" in line, line
    assert (
        page.get_by_role("textbox", name=re.compile("^trace file")).count() == 0
    )  # no workload controls
    click_step(page, 4)
    assert page.locator(".mhpc-clock").inner_text() != "00:00:00"
    select(page, "allocator", "first-fit")
    slide(page, "seed", 2)
    line = reset_and_read(page, "easy + first-fit on kth-sp2")
    assert "workload scenario sample_overload.toml" in line and "seed 3" in line, line
    click_step(page, 4)
    running = re.search(r"running ([0-9,]+)", page.locator(".mhpc-status").inner_text())
    assert running and int(running.group(1).replace(",", "")) > 0, "no job started after Reset"


def test_partitions_pool_and_burst_buffer_are_drawn(page) -> None:  # type: ignore[no-untyped-def]
    """queues-hybrid: the node grid's legend names each partition and the pool; a
    burst-buffer policy: the pool bar shows used and free GB once jobs run."""
    select(page, "workload", "lublin-feitelson")
    select(page, "policy (scheduler)", "queues-hybrid")
    reset_and_read(page, "queues-hybrid on")
    legend = page.locator(".mhpc-partitions")
    legend.wait_for(timeout=10_000)
    text = legend.inner_text()
    assert "narrow: nodes 0-" in text and "shared pool: nodes" in text, text
    assert page.locator(".mhpc-band i").count() == 3, (
        text
    )  # narrow, wide, pool (large: reservation)
    click_step(page, 10)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "queues_hybrid.png"), full_page=True)
    select(page, "policy (scheduler)", "bbsched")
    select(page, "allocator", "first-fit")
    reset_and_read(page, "bbsched + first-fit on")
    assert page.locator(".mhpc-partitions").count() == 0
    bar = page.locator(".mhpc-bb")
    bar.wait_for(timeout=10_000)
    click_step(page, 15)
    assert eventually(lambda: not bar.inner_text().startswith("burst buffer: 0 GB used")), (
        bar.inner_text()
    )
    assert re.search(
        r"burst buffer: [\d,]+ GB used, [\d,]+ GB free of 40,040 GB", bar.inner_text()
    )  # target load 0.75
    page.screenshot(path=str(SCREENSHOTS / "bbsched_pool.png"), full_page=True)


def test_curie_grid_is_binned_with_a_legend(page) -> None:  # type: ignore[no-untyped-def]
    """Curie (5,544 nodes): one cell per 4 nodes, the legend says so, the picture is the
    binned grid's size (760 x 400 px of 10 px cells under two label lines)."""
    select(page, "policy (scheduler)", "easy")
    select(page, "workload", "lublin-feitelson")
    select(page, "platform", "curie")
    reset_and_read(page, "easy on curie")
    click_step(page, 20)
    legend = page.locator(".mhpc-bins")
    legend.wait_for(timeout=10_000)
    assert legend.inner_text().startswith("one cell = 4 nodes"), legend.inner_text()
    assert "shade = share in use, 0 % to 100 %: cores" in legend.inner_text()
    assert page.locator(".mhpc-bins .mhpc-ramp").count() == 2  # cores, GPUs (Curie's hybrid nodes)
    for mesa_slider in ("Play Interval (ms)", "Render Interval (steps)"):  # Mesa's own sliders
        assert page.get_by_text(
            re.compile(r"^" + re.escape(mesa_slider) + r": \d+$")
        ).is_visible(), mesa_slider
    image = page.locator("img.mhpc-nodes")
    size = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
    assert size == [760, 432], size
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    image.screenshot(path=str(SCREENSHOTS / "curie_binned_grid.png"))
    page.screenshot(path=str(SCREENSHOTS / "curie_binned.png"), full_page=True)
    select(page, "platform", "nodes=32,cores=16")
    reset_and_read(page, "easy on 32 x 16 cores")
    assert page.locator(".mhpc-bins").count() == 0  # one row per node: no bin legend


def test_play_and_pause_under_cpu_load_never_loop_renders(page) -> None:  # type: ignore[no-untyped-def]
    """Play/Pause four times while two processes spin on the machine's cores: a render pass
    then takes longer than the play interval, which used to keep the click's render loop
    going until reacton stopped it ("Too many renders triggered"), or let a tile read the
    model halfway through a step (a KeyError tile). ``open_page`` also checks the page and
    the server log for tracebacks afterwards."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for _ in range(4):
            page.get_by_role("button", name="\u25b6").click(timeout=20_000)
            page.wait_for_timeout(1_200)
            page.get_by_role("button", name="\u275a\u275a").click(timeout=20_000)
            page.get_by_role("button", name="Step").and_(page.locator(":enabled")).wait_for(
                timeout=20_000
            )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    body = page.inner_text("body")
    assert "Too many renders" not in body and "Traceback" not in body, body[:3000]
    assert step_count(page) > 0


def test_viz_refuses_a_taken_port_at_once() -> None:
    """A port another server listens on: one line naming it and --port, exit 2, and no
    server started (it used to print its URL and fail minutes later)."""
    pytest.importorskip("solara", reason="viz extra not installed")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        launcher = subprocess.Popen(
            [sys.executable, "-m", "market_hpc", "viz", "--port", str(port)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = launcher.communicate(timeout=120)  # a guard against a hang, not a measure
        finally:
            if launcher.poll() is None:
                os.killpg(launcher.pid, signal.SIGKILL)
                launcher.wait()
    assert launcher.returncode == 2, (out, err)
    assert out == ""  # no URL printed
    assert err == (
        f"market-hpc: error: --port {port}: 127.0.0.1:{port} is already in use (another "
        f"server, an earlier market-hpc viz?); valid: a free port, e.g. --port {port + 1}\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "0"], "--port: got 0; valid: a port number 1..65535 not in use"),
        (["--port", "65536"], "--port: got 65536; valid: a port number 1..65535 not in use"),
        (["--host", "no-such-host.invalid"], "--host: cannot resolve 'no-such-host.invalid'"),
    ],
)
def test_viz_refuses_bad_ports_and_hosts(argv, message, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("solara", reason="viz extra not installed")
    from market_hpc.cli import main

    assert main(["viz", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"market-hpc: error: {message}")
    assert captured.err.count("\n") == 1
