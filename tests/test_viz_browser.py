"""The browser app (``market-hpc viz``) in a real headless Chromium, offline.

Starts one server on a free loopback port for the module and drives Debian's
``/usr/bin/chromium`` with Playwright: Step changes the grid, the plots and the clock with
every request served from loopback (no CDN); each control is changed and its effect read
back from the page after Reset; Play runs 10 s on Curie and prints the step rate; one
screenshot per platform preset is saved under ``out/viz/``. Skips, with the reason, only
where Playwright, the viz extra or Chromium is missing. The first tests check the
pictures' data without a browser.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # visualization/ is a leaf beside the package, not installed

from market_hpc.viz import server_command
from visualization.model import VizModel, generated_jobs, with_accelerators
from visualization.node_grid import cell_owners, grid_geometry, node_grid_pixels
from visualization.panels import queue_rows
from visualization.plots import TimeSeriesPlot

pytestmark = pytest.mark.browser  # run-tests runs these on the newest Python and Mesa too

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
STARTUP_SECONDS = 40.0


@pytest.mark.parametrize("platform", ["nodes=8,cores=4", "eurora"])
@pytest.mark.parametrize("policy", ["maxvdh", "easy"])
def test_node_grid_cells_match_the_allocation(policy: str, platform: str) -> None:
    model = VizModel(policy=policy, platform=platform, jobs=200, seed=3)
    for _ in range(25):
        model.step()
    owners = cell_owners(model)
    geometry = grid_geometry(model.platform)
    used = model.platform.capacity - model.free
    for resource, offset in geometry.offsets.items():
        width = int(model.platform.capacity[:, resource].max())
        busy = (owners[:, offset:offset + width] > 0).sum(axis=1)
        assert busy.tolist() == used[:, resource].tolist()
    running = {r.job.job_id for r in model.running_by_end}
    assert set(np.unique(owners[owners > 0]).tolist()) == running
    assert node_grid_pixels(model).dtype == np.uint8


def test_market_queue_lists_top_value_density_first() -> None:
    model = VizModel(policy="maxvd", platform="nodes=2,cores=4", jobs=120, load=4.0, seed=2)
    for _ in range(30):
        model.step()
    rows = queue_rows(model, limit=5)
    assert rows and len(rows) <= 5
    densities = [row.density for row in rows]
    assert None not in densities
    assert densities == sorted((d for d in densities if d is not None), reverse=True)


def test_launcher_serves_on_loopback_in_production_mode() -> None:
    command = server_command(REPO / "visualization" / "app.py", "127.0.0.1", 8765)
    assert command[:4] == [sys.executable, "-m", "solara", "run"]
    assert {"--production", "--no-open", "--no-check-version"} <= set(command)


def test_newest_sample_is_inside_the_time_series_plot() -> None:
    model = VizModel(policy="easy", platform="nodes=8,cores=4", workload="lublin-feitelson", jobs=80, seed=2)
    plot = TimeSeriesPlot(model.platform, model.time_unit)
    for _ in range(30):
        model.step()
        plot.update(model)
    svg = plot.svg()
    newest = [float(x) for x in re.findall(r"<circle cx='([0-9.]+)'", svg)]
    assert len(newest) == 6  # profit, cores, queued, running, holds, drops
    for panel in plot.panels:
        right = panel.left + panel.width
        assert all(x <= right - 0.02 * panel.width for x in newest if panel.left <= x <= right + 1)
    assert "<polyline" in svg and "utilisation (%)" in svg


def test_curie_grid_has_one_labelled_section_per_partition() -> None:
    model = VizModel(policy="easy", platform="curie", workload="lublin-feitelson", jobs=200, seed=1,
                     gpu_share=0.5)
    geometry = grid_geometry(model.platform)
    assert [(s.name, s.first, s.count) for s in geometry.sections] == [
        ("thin", 0, 5040), ("fat", 5040, 360), ("hybrid", 5400, 144)]
    assert geometry.cell(5400)[1] == geometry.sections[2].left + 1
    for _ in range(40):
        model.step()
    owners = cell_owners(model)
    used = model.platform.capacity - model.free
    assert ((owners[:, :32] > 0).sum(axis=1) == used[:, 0]).all()
    gpu = geometry.offsets[2 - 1]
    assert ((owners[:, gpu:gpu + 2] > 0).sum(axis=1) == used[:, 1]).all()
    assert used[:, 1].sum() > 0, "no GPU job placed with gpu_share = 0.5"
    pixels = node_grid_pixels(model)
    assert pixels.shape[1] <= 760 and pixels.shape[0] <= 440


def test_accelerator_shares_and_workloads_reach_the_model() -> None:
    model = VizModel(policy="easy", allocator="balanced", platform="custom", nodes=6, cores=8, gpus=2,
                     mics=2, workload="lublin-feitelson", jobs=300, gpu_share=0.3, mic_share=0.3, seed=4)
    assert model.error is None and model.policy_name == "easy + balanced"
    jobs = generated_jobs("easy", model.platform, 300, 2.0, 4, "lublin-feitelson")
    jobs = with_accelerators(jobs, model.platform, 0.3, 0.3, 4)
    kinds = [(job.unit[1] > 0, job.unit[2] > 0) for job in jobs]
    assert 0.15 < kinds.count((True, False)) / len(jobs) < 0.45
    assert 0.1 < kinds.count((False, True)) / len(jobs) < 0.45
    for _ in range(60):
        model.step()
    assert model.recorder.busy_resource_seconds[1] > 0 and model.recorder.busy_resource_seconds[2] > 0
    trace = VizModel(policy="ebf", workload="trace file", trace=str(REPO / "traces" / "lf-kth-like-2000.swf"),
                     platform="kth-sp2", jobs=100)
    assert trace.error is None and trace.n_jobs == 100
    broken = VizModel(policy="maxv", allocator="first-fit")
    assert broken.error is not None and "valid choices: max-bid" in broken.error
    broken.step()  # stopped, not a traceback
    assert not broken.running


def test_viz_refuses_a_sweep_file_naming_what_to_run() -> None:
    from market_hpc.errors import ConfigError
    from market_hpc.viz import check_not_a_sweep

    with pytest.raises(ConfigError, match=r"heterogeneity.toml is a sweep file \(it has seeds, grid, zip, "
                                          r"report\).*market-hpc sweep .*market-hpc report DIR"):
        check_not_a_sweep(str(REPO / "scenarios" / "heterogeneity.toml"))
    check_not_a_sweep(str(REPO / "scenarios" / "sample_overload.toml"))


@pytest.fixture(scope="module")
def sync_api():  # type: ignore[no-untyped-def]
    """Playwright's sync API, or a skip naming what is missing."""
    api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
    missing = [name for name in ("solara", "altair") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"viz extra not installed ({', '.join(missing)} missing): "
                    "pip install 'market_hpc[viz]'")
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    return api


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_served(url: str, server: subprocess.Popen, log: Path) -> None:  # type: ignore[type-arg]
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"server exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    pytest.fail(f"server did not answer {url} within {STARTUP_SECONDS:.0f} s:\n{log.read_text()}")


def _stop(server: subprocess.Popen) -> None:  # type: ignore[type-arg]
    # The launcher runs solara as its child: signal the session we started, launcher first.
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
    try:
        os.killpg(server.pid, signal.SIGKILL)  # the solara child, if it outlived the launcher
    except ProcessLookupError:
        pass


class Server(NamedTuple):
    """A running ``market-hpc viz``: its URL and its log."""

    url: str
    log: Path


def _serve(tmp_path_factory: pytest.TempPathFactory, *scenario: str):  # type: ignore[no-untyped-def]
    """Run ``market-hpc viz [SCENARIO]`` on a free loopback port until the generator closes."""
    port = _free_port()
    log = tmp_path_factory.mktemp("viz") / "server.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "market_hpc", "viz", *scenario, "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_served(url, server, log)
        yield Server(url, log)
    finally:
        _stop(server)


@pytest.fixture(scope="module")
def viz_server(sync_api, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``market-hpc viz`` (controls' workload), shared by the module."""
    yield from _serve(tmp_path_factory)


@pytest.fixture(scope="module")
def scenario_server(sync_api, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``market-hpc viz scenarios/sample_overload.toml``."""
    yield from _serve(tmp_path_factory, str(REPO / "scenarios" / "sample_overload.toml"))


# ------------------------------------------------------------------- in the browser
SCREENSHOTS = REPO / "out" / "viz"
KTH_SAMPLE = REPO / "traces" / "lf-kth-like-2000.swf"
OPEN_MENU = ".menuable__content__active"  # Vuetify keeps closed menus in the page


def _open(sync_api, server: Server):  # type: ignore[no-untyped-def]
    """A fresh browser session on the app (its own model), with request and error logs;
    afterwards neither the page nor the server log shows an error."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1500, "height": 1300})
            tab.requested, tab.errors = [], []
            tab.on("request", lambda request: tab.requested.append(request.url))
            tab.on("websocket", lambda socket_: tab.requested.append(socket_.url))
            tab.on("pageerror", lambda error: tab.errors.append(str(error)))
            tab.goto(server.url)
            tab.get_by_role("button", name="Step").wait_for(timeout=30_000)
            tab.locator("img.mhpc-nodes").wait_for(timeout=30_000)
            yield tab
            assert not tab.errors, tab.errors
            body = tab.inner_text("body")
            assert "Traceback" not in body, body[body.find("Traceback"):][:3000]
            # Mesa's controller catches a failing step, prints the traceback and shows one line.
            assert not re.search(r"error in (step|visualization)", body), body
            log = server.log.read_text()
            assert "Traceback" not in log, log[log.find("Traceback"):][:3000]
        finally:
            browser.close()


@pytest.fixture
def page(sync_api, viz_server: Server):  # type: ignore[no-untyped-def]
    """The app with the controls' workload."""
    yield from _open(sync_api, viz_server)


@pytest.fixture
def scenario_page(sync_api, scenario_server: Server):  # type: ignore[no-untyped-def]
    """The app showing a scenario file."""
    yield from _open(sync_api, scenario_server)


def _steps(page) -> int:  # type: ignore[no-untyped-def]
    """Steps taken, as the sidebar shows them ("Step: N", the app's ``StepInfo``, which
    replaces Mesa's own display: "Step: N" on Mesa 3.3, "Time: N.0" on 3.5)."""
    return int(page.locator(".mhpc-steps").inner_text().removeprefix("Step: "))


def _wait_steps(page, steps: int, timeout: int = 20_000) -> None:  # type: ignore[no-untyped-def]
    page.locator(".mhpc-steps").filter(has_text=re.compile(f"^Step: {steps}$")).wait_for(timeout=timeout)


def _select(page, label: str, value: str) -> None:  # type: ignore[no-untyped-def]
    page.locator(".v-select").filter(has_text=label).first.click()
    page.locator(OPEN_MENU).get_by_role("option", name=value, exact=True).click()
    page.locator(OPEN_MENU).wait_for(state="detached", timeout=5_000)


def _slide(page, label: str, presses: int) -> None:  # type: ignore[no-untyped-def]
    """Move a slider ``presses`` steps (negative: to the left) with the keyboard, one key
    at a time: each press makes a server round trip, and a key pressed before the slider
    shows the previous one is overwritten by the server's older value."""
    thumb = page.locator(".v-input").filter(has_text=label).first.locator("[role=slider]")
    thumb.focus()
    for _ in range(abs(presses)):
        before = thumb.get_attribute("aria-valuenow")
        page.keyboard.press("ArrowRight" if presses > 0 else "ArrowLeft")
        page.wait_for_function("([el, old]) => el.getAttribute('aria-valuenow') !== old",
                               arg=[thumb.element_handle(), before], timeout=10_000)
        page.wait_for_timeout(60)
    settled = thumb.get_attribute("aria-valuenow")
    page.wait_for_timeout(200)
    assert thumb.get_attribute("aria-valuenow") == settled, f"slider {label!r} moved back"


def _type(page, label: str, text: str) -> None:  # type: ignore[no-untyped-def]
    field = page.get_by_role("textbox", name=re.compile("^" + re.escape(label)))
    field.fill(text)
    field.press("Enter")


def _reset_and_read(page, expected: str) -> str:  # type: ignore[no-untyped-def]
    """Reset, wait for ``expected`` in the status line, return the status line."""
    page.get_by_role("button", name="Reset").click()
    status_line = page.locator(".mhpc-status")
    try:
        page.wait_for_function("text => document.querySelector('.mhpc-status').innerText.includes(text)",
                               arg=expected, timeout=20_000)
    except Exception:  # noqa: BLE001 - say what the page showed instead
        pytest.fail(f"status line lacks {expected!r}: {status_line.inner_text()}\n"
                    f"{page.locator('.mhpc-tile').nth(1).inner_text()}")
    _wait_steps(page, 0, timeout=10_000)
    return status_line.inner_text()


def _step(page, times: int) -> None:  # type: ignore[no-untyped-def]
    first = _steps(page)
    for done in range(1, times + 1):
        page.get_by_role("button", name="Step").click()
        _wait_steps(page, first + done)


def test_browser_steps_the_live_market_offline(page) -> None:  # type: ignore[no-untyped-def]
    nodes, plots = page.locator("img.mhpc-nodes"), page.locator(".mhpc-timeseries")
    plots.wait_for(timeout=30_000)
    assert page.title() == "market_hpc: the live market"
    assert not page.get_by_text("Page 0", exact=True).is_visible(), "Mesa's single tab is shown"
    assert not page.get_by_text("This website runs on").is_visible(), "Solara's banner covers tiles"

    def view() -> tuple[bytes, str, str]:
        return nodes.screenshot(), plots.inner_html(), page.locator(".mhpc-clock").inner_text()

    before = _settled(view)
    _step(page, 5)
    assert _eventually(lambda: view()[0] != before[0]), "node grid did not change after five steps"
    after = _settled(view)
    assert after[1] != before[1], "time series did not change after five steps"
    page.get_by_text(f"Simulated time: {after[2]}", exact=True).wait_for(timeout=10_000)
    assert not page.get_by_text(re.compile(r"^Time: ")).count(), "Mesa's step count shown as time"
    # Reset rebuilds the model from the same parameters: the first picture and clock come
    # back, and five steps draw the same grid and plots again (one seed, bit for bit).
    page.get_by_role("button", name="Reset").click()
    _wait_steps(page, 0)
    assert _eventually(lambda: view() == before), "Reset did not bring back the first grid, plot and clock"
    _step(page, 5)
    assert _eventually(lambda: view() == after), "five steps after Reset drew another grid, plot or clock"
    _play_then_select_a_job(page)
    assert page.locator(".mhpc-curve polyline").count() == 1, "no value curve for the selected job"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "market_default.png"), full_page=True)
    foreign = sorted({u for u in page.requested
                      if urlsplit(u).scheme not in ("data", "blob") and urlsplit(u).hostname not in LOCAL_HOSTS})
    assert not foreign, f"requests left the machine: {foreign}"
    assert page.requested


def _eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``check()`` holds within ``seconds`` (tiles and pictures update one after the
    other: the picture can still be the previous one when the text has changed)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _settled(read: Callable[[], object], seconds: float = 10.0) -> object:
    """``read()`` once two reads in a row agree (every tile has drawn the same step)."""
    previous, deadline = read(), time.monotonic() + seconds
    while (current := read()) != previous and time.monotonic() < deadline:
        previous = current
        time.sleep(0.2)
    return current


def _play_then_select_a_job(page) -> None:  # type: ignore[no-untyped-def]
    """Play until the queue fills, pause, open the top queued job's details."""
    page.get_by_role("button", name="\u25b6").click()
    page.wait_for_function(
        "() => /Step: ([3-9][0-9]|[0-9]{3,})$/.test(document.body.innerText.trim().split('\\n')"
        ".find(line => line.startsWith('Step: ')) || '')", timeout=30_000)
    page.get_by_role("button", name="\u275a\u275a").click()
    page.get_by_role("button", name="Step").and_(page.locator(":enabled")).wait_for(timeout=10_000)
    top = page.locator(".mhpc-table tbody button").first
    top.wait_for(timeout=10_000)
    top.click()
    page.locator(".mhpc-job").wait_for(timeout=10_000)


def test_every_control_changes_the_model(page) -> None:  # type: ignore[no-untyped-def]
    """Each control, changed in the page and applied with Reset, shows in the status line."""
    _select(page, "policy (scheduler)", "easy")
    _reset_and_read(page, "easy on")
    _select(page, "allocator", "balanced")
    _reset_and_read(page, "easy + balanced on")
    _select(page, "platform", "custom")
    _slide(page, "custom platform: nodes", -4)             # 32 -> 28 nodes
    _slide(page, "custom platform: cores per node", -4)    # 16 -> 12 cores
    _slide(page, "custom platform: GPUs per node", 2)
    _slide(page, "custom platform: MICs per node", 1)
    _reset_and_read(page, "28 x 12 cores, 2 GPUs, 1 MICs")
    _select(page, "workload", "lublin-feitelson")
    _slide(page, "jobs (generated", -2)                    # 1500 -> 1300 jobs
    _slide(page, "share of GPU jobs", 4)                   # 0.2
    _slide(page, "share of MIC jobs", 4)                   # 0.2
    _slide(page, "load factor", 1)                         # 2.25
    _slide(page, "holding penalty", 1)                     # 0.15
    _slide(page, "seed", 2)                                # 3
    line = _reset_and_read(page, "1,300 jobs; workload lublin-feitelson, 20 % GPU jobs, 20 % MIC jobs, "
                                 "load 2.25, holding penalty 0.15, seed 3")
    assert "GPUs busy" in line and "MICs busy" in line
    _step(page, 60)
    busy = {name: int(page.locator(f".mhpc-{name}").inner_text().rstrip(" %")) for name in ("GPUs", "MICs")}
    assert busy["GPUs"] > 0 and busy["MICs"] > 0, busy
    _select(page, "workload", "eurora")
    _select(page, "platform", "eurora")
    _select(page, "policy (scheduler)", "ebf")
    _select(page, "allocator", "weighted")
    _reset_and_read(page, "ebf + weighted on eurora")
    _select(page, "workload", "trace file")
    _type(page, "trace file", str(KTH_SAMPLE))
    _select(page, "platform", "kth-sp2")
    _select(page, "allocator", "default")
    line = _reset_and_read(page, f"workload trace {KTH_SAMPLE.name}")
    assert "1,300 jobs" in line
    _step(page, 3)
    _select(page, "policy (scheduler)", "maxv")
    _select(page, "allocator", "first-fit")
    _reset_and_read(page, "stopped")
    assert "does not work with allocator 'first-fit'" in page.locator(".mhpc-tile").nth(1).inner_text()


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
    _select(page, "platform", "curie")
    _select(page, "policy (scheduler)", "easy")
    _reset_and_read(page, "easy on curie")
    _step(page, 1)
    first = _steps(page)
    began = time.monotonic()
    page.get_by_role("button", name="\u25b6").click()
    page.wait_for_timeout(10_000)
    page.get_by_role("button", name="\u275a\u275a").click()
    elapsed = time.monotonic() - began
    page.get_by_role("button", name="Step").and_(page.locator(":enabled")).wait_for(timeout=10_000)
    steps = _steps(page) - first
    print(f"\nPlay on Curie (5,544 nodes), headless Chromium: {steps} steps in {elapsed:.1f} s = "
          f"{steps / elapsed:.1f} steps/s (load average {os.getloadavg()[0]:.1f})")
    assert steps > 0


def test_screenshot_of_each_platform_preset(page) -> None:  # type: ignore[no-untyped-def]
    from market_hpc.domain.platform import PRESETS

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    _select(page, "policy (scheduler)", "easy")
    _select(page, "workload", "lublin-feitelson")
    _slide(page, "share of GPU jobs", 4)
    _slide(page, "share of MIC jobs", 4)
    for name in PRESETS:
        _select(page, "platform", name)
        _reset_and_read(page, f"easy on {name}")
        _step(page, 12)
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
    assert "easy + best-fit on kth-sp2" in line and "workload scenario sample_overload.toml" in line, line
    assert "load 1.5" in line and "2,000 jobs" in line, line
    assert page.get_by_role("textbox", name=re.compile("^trace file")).count() == 0  # no workload controls
    _step(page, 4)
    assert page.locator(".mhpc-clock").inner_text() != "00:00:00"
    _select(page, "allocator", "first-fit")
    _slide(page, "seed", 2)
    line = _reset_and_read(page, "easy + first-fit on kth-sp2")
    assert "workload scenario sample_overload.toml" in line and "seed 3" in line, line
    _step(page, 4)
    running = re.search(r"running ([0-9,]+)", page.locator(".mhpc-status").inner_text())
    assert running and int(running.group(1).replace(",", "")) > 0, "no job started after Reset"
