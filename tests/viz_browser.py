"""Driving ``market-hpc viz`` in headless Chromium: the server, a page, and what a user does
(pick an option, move a slider, press Step/Reset) with waits on what the page shows.

The selectors are the same on Mesa 3.3 and 3.5: the step count is the app's own
"Step: N" (``.mhpc-steps``, ``visualization.components.StepInfo``), not Mesa's
"Step: N" (3.3) / "Time: N.0" (3.5) line, which the app replaces.
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STARTUP_SECONDS = 40.0
OPEN_MENU = ".menuable__content__active"  # Vuetify keeps closed menus in the page


def playwright_or_skip() -> Any:
    """Playwright's sync API, or a skip naming what is missing (Playwright, the viz
    extra or Chromium)."""
    api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (dev extra)"
    )
    missing = [name for name in ("solara", "altair") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"viz extra not installed ({', '.join(missing)} missing): pip install 'market_hpc[viz]'"
        )
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    return api


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_served(url: str, server: subprocess.Popen, log: Path) -> None:  # type: ignore[type-arg]
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


def stop(server: subprocess.Popen) -> None:  # type: ignore[type-arg]
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


def serve(tmp_path_factory: pytest.TempPathFactory, *scenario: str) -> Iterator[Server]:
    """Run ``market-hpc viz [SCENARIO]`` on a free loopback port until the generator closes."""
    port = free_port()
    log = tmp_path_factory.mktemp("viz") / "server.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "market_hpc",
                "viz",
                *scenario,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            cwd=REPO,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_served(url, server, log)
        yield Server(url, log)
    finally:
        stop(server)


def open_page(
    sync_api: Any, server: Server, viewport: tuple[int, int] = (1500, 1300)
) -> Iterator[Any]:
    """A fresh browser session on the app (its own model) in a ``viewport`` (width, height)
    window, with request and error logs; afterwards neither the page nor the server log
    shows an error."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            tab = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
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
            assert "Traceback" not in body, body[body.find("Traceback") :][:3000]
            # Mesa's controller catches a failing step, prints the traceback and shows one line.
            assert not re.search(r"error in (step|visualization)", body), body
            log = server.log.read_text()
            assert "Traceback" not in log, log[log.find("Traceback") :][:3000]
        finally:
            browser.close()


def step_count(page) -> int:  # type: ignore[no-untyped-def]
    """Steps taken, as the sidebar shows them ("Step: N", the app's ``StepInfo``, which
    replaces Mesa's own display: "Step: N" on Mesa 3.3, "Time: N.0" on 3.5)."""
    return int(page.locator(".mhpc-steps").inner_text().removeprefix("Step: "))


def wait_steps(page, steps: int, timeout: int = 20_000) -> None:  # type: ignore[no-untyped-def]
    page.locator(".mhpc-steps").filter(has_text=re.compile(f"^Step: {steps}$")).wait_for(
        timeout=timeout
    )


def select(page, label: str, value: str) -> None:  # type: ignore[no-untyped-def]
    page.locator(".v-select").filter(has_text=label).first.click()
    menu = page.locator(OPEN_MENU)
    options = menu.get_by_role("option")
    option = menu.get_by_role("option", name=value, exact=True)
    options.first.wait_for(timeout=10_000)
    for _ in range(10):  # Vuetify renders long menus in pages of 20: scroll to load more
        if option.count():
            break
        options.last.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
    option.click()
    page.locator(OPEN_MENU).wait_for(state="detached", timeout=5_000)


def slide(page, label: str, presses: int) -> None:  # type: ignore[no-untyped-def]
    """Move a slider ``presses`` steps (negative: to the left) with the keyboard, one key
    at a time: each press makes a server round trip, and a key pressed before the slider
    shows the previous one is overwritten by the server's older value."""
    thumb = page.locator(".v-input").filter(has_text=label).first.locator("[role=slider]")
    thumb.focus()
    for _ in range(abs(presses)):
        before = thumb.get_attribute("aria-valuenow")
        page.keyboard.press("ArrowRight" if presses > 0 else "ArrowLeft")
        page.wait_for_function(
            "([el, old]) => el.getAttribute('aria-valuenow') !== old",
            arg=[thumb.element_handle(), before],
            timeout=10_000,
        )
        page.wait_for_timeout(60)
    final = thumb.get_attribute("aria-valuenow")
    page.wait_for_timeout(200)
    assert thumb.get_attribute("aria-valuenow") == final, f"slider {label!r} moved back"


def type_into(page, label: str, text: str) -> None:  # type: ignore[no-untyped-def]
    field = page.get_by_role("textbox", name=re.compile("^" + re.escape(label)))
    field.fill(text)
    field.press("Enter")


def reset_and_read(page, expected: str) -> str:  # type: ignore[no-untyped-def]
    """Reset, wait for ``expected`` in the status line, return the status line."""
    page.get_by_role("button", name="Reset").click()
    status_line = page.locator(".mhpc-status")
    try:
        page.wait_for_function(
            "text => document.querySelector('.mhpc-status').innerText.includes(text)",
            arg=expected,
            timeout=20_000,
        )
    except Exception:  # noqa: BLE001 - say what the page showed instead
        pytest.fail(
            f"status line lacks {expected!r}: {status_line.inner_text()}\n"
            f"{page.locator('.mhpc-tile').nth(1).inner_text()}"
        )
    wait_steps(page, 0, timeout=10_000)
    return status_line.inner_text()


def click_step(page, times: int) -> None:  # type: ignore[no-untyped-def]
    first = step_count(page)
    for done in range(1, times + 1):
        page.get_by_role("button", name="Step").click()
        wait_steps(page, first + done)


def eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``check()`` holds within ``seconds`` (tiles and pictures update one after the
    other: the picture can still be the previous one when the text has changed)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def settled(read: Callable[[], object], seconds: float = 10.0) -> object:
    """``read()`` once two reads in a row agree (every tile has drawn the same step)."""
    previous, deadline = read(), time.monotonic() + seconds
    while (current := read()) != previous and time.monotonic() < deadline:
        previous = current
        time.sleep(0.2)
    return current
