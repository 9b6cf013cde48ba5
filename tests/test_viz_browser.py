"""The browser app (``market-hpc viz``) in a real headless Chromium, offline.

Starts the server on a free loopback port, drives Debian's ``/usr/bin/chromium`` with
Playwright, clicks Step five times and checks the node grid, the plots and the clock
changed, with every request served from loopback (no CDN). Skips, with the reason, only
where Playwright, the viz extra or Chromium is missing. The first tests check the
pictures' data without a browser.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # visualization/ is a leaf beside the package, not installed

from market_hpc.viz import server_command
from visualization.model import VizModel
from visualization.node_grid import cell_owners, grid_geometry, node_grid_pixels
from visualization.panels import queue_rows

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


@pytest.fixture
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


@pytest.fixture
def viz_server(sync_api, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``market-hpc viz`` on a free loopback port; yields its URL."""
    port = _free_port()
    log = tmp_path / "server.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "market_hpc", "viz", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_served(url, server, log)
        yield url
    finally:
        _stop(server)


def test_browser_steps_the_live_market_offline(sync_api, viz_server: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = viz_server
    requested: list[str] = []
    page_errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1250})
            page.on("request", lambda request: requested.append(request.url))
            page.on("websocket", lambda socket_: requested.append(socket_.url))
            page.on("pageerror", lambda error: page_errors.append(str(error)))
            page.goto(url)
            step = page.get_by_role("button", name="Step")
            step.wait_for(timeout=30_000)
            nodes, plots = page.locator("img.mhpc-nodes"), page.locator("img.mhpc-timeseries")
            nodes.wait_for(timeout=30_000)
            plots.wait_for(timeout=30_000)
            page.get_by_text("Step: 0", exact=True).wait_for(timeout=10_000)
            assert "Traceback" not in page.inner_text("body")
            before = (nodes.screenshot(), plots.screenshot(), page.locator(".mhpc-clock").inner_text())
            for done in range(1, 6):
                step.click()
                page.get_by_text(f"Step: {done}", exact=True).wait_for(timeout=10_000)
            page.wait_for_function(
                "clock => document.querySelector('.mhpc-clock').innerText !== clock",
                arg=before[2], timeout=10_000)
            after = (nodes.screenshot(), plots.screenshot(), page.locator(".mhpc-clock").inner_text())
            _play_then_select_a_job(page)
            shot = tmp_path / "viz.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"browser screenshot: {shot}")
            body = page.inner_text("body")
        finally:
            browser.close()
    assert "Traceback" not in body
    assert not page_errors, page_errors
    assert after[0] != before[0], "node grid did not change after five steps"
    assert after[1] != before[1], "time series did not change after five steps"
    assert after[2] != before[2]
    foreign = sorted({u for u in requested
                      if urlsplit(u).scheme not in ("data", "blob") and urlsplit(u).hostname not in LOCAL_HOSTS})
    assert not foreign, f"requests left the machine: {foreign}"
    assert requested


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
