"""Driving ``market-hpc viz`` in headless Chromium without pytest: the server, a page, the
controls, and Play measured from the page's step counter.

Shared by ``benchmarks/viz_step.py --browser`` and the browser tests (``tests/viz_browser.py``
wraps these with pytest's skips and failures). Playwright drives Debian's
``/usr/bin/chromium`` (never ``playwright install``). The step count is the app's own
"Step: N" (``.mhpc-steps``, ``visualization.components.StepInfo``: ``model.steps``), the
same on Mesa 3.3 and 3.5.
"""

from __future__ import annotations

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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

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
PLAY, PAUSE = "\u25b6", "\u275a\u275a"  # Mesa's Play and Pause buttons


class ServerError(RuntimeError):
    """The server exited or did not answer in time (the message holds its log)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_served(url: str, server: subprocess.Popen, log: Path) -> None:  # type: ignore[type-arg]
    """Return once ``url`` answers 200.

    Raises:
        ServerError: the server exited, or did not answer within ``STARTUP_SECONDS``.
    """
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise ServerError(f"server exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    raise ServerError(
        f"server did not answer {url} within {STARTUP_SECONDS:.0f} s:\n{log.read_text()}"
    )


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
    """A running ``market-hpc viz``: its URL, its log and the launcher's process id (solara
    runs as its child)."""

    url: str
    log: Path
    pid: int


@contextmanager
def running_server(log: Path, *scenario: str) -> Iterator[Server]:
    """``market-hpc viz [SCENARIO]`` of this checkout on a free loopback port, its output in
    ``log``, stopped on exit.

    Raises:
        ServerError: it did not start.
    """
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
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
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_served(url, server, log)
        yield Server(url, log, server.pid)
    finally:
        stop(server)


@contextmanager
def browser_page(
    sync_api: Any, server: Server, viewport: tuple[int, int] = (1500, 1300)
) -> Iterator[Any]:
    """A fresh browser session on the app (its own model) in a ``viewport`` (width, height)
    window, loaded (Step button and node grid shown), with request and error logs in
    ``page.requested`` and ``page.errors``."""
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


def reset_and_read(page, expected: str) -> str:  # type: ignore[no-untyped-def]
    """Reset, wait for ``expected`` in the status line, return the status line.

    Raises:
        AssertionError: the status line lacks ``expected`` after 20 s (with what it shows).
    """
    page.get_by_role("button", name="Reset").click()
    status_line = page.locator(".mhpc-status")
    try:
        page.wait_for_function(
            "text => document.querySelector('.mhpc-status').innerText.includes(text)",
            arg=expected,
            timeout=20_000,
        )
    except Exception:  # noqa: BLE001 - say what the page showed instead
        raise AssertionError(
            f"status line lacks {expected!r}: {status_line.inner_text()}\n"
            f"{page.locator('.mhpc-tile').nth(1).inner_text()}"
        ) from None
    wait_steps(page, 0, timeout=10_000)
    return status_line.inner_text()


def click_step(page, times: int) -> None:  # type: ignore[no-untyped-def]
    first = step_count(page)
    for done in range(1, times + 1):
        page.get_by_role("button", name="Step").click()
        wait_steps(page, first + done)


class PlayRun(NamedTuple):
    """What the step counter showed over one Play and the pause after it."""

    first_step: int  # the counter when Play's first step was shown (the clock starts here)
    last_step: int  # the counter ``seconds`` later, still playing
    seconds: float
    paused_at: int  # the counter once Pause has taken effect (Step enabled again)
    paused_later: int  # the counter ``pause_seconds`` after that
    probed: tuple[Any, Any] = (None, None)  # ``probe()`` at ``first_step`` and ``last_step``

    @property
    def steps_per_second(self) -> float:
        return (self.last_step - self.first_step) / self.seconds


def wait_past(page, steps: int, timeout: int = 30_000) -> int:  # type: ignore[no-untyped-def]
    """Wait until the counter shows more than ``steps``; return what it shows then."""
    page.wait_for_function(
        "steps => Number(document.querySelector('.mhpc-steps').innerText"
        ".replace('Step: ', '')) > steps",
        arg=steps,
        timeout=timeout,
    )
    return step_count(page)


def measure_play(  # type: ignore[no-untyped-def]
    page,
    seconds: float,
    settle_seconds: float = 1.0,
    pause_seconds: float = 3.0,
    probe: Callable[[], Any] = lambda: None,
) -> PlayRun:
    """Press Play, start the clock when the counter first moves, read it ``seconds`` later
    while still playing, press Pause, and read it ``settle_seconds`` after Step is enabled
    again and ``pause_seconds`` after that.

    Timing from the first shown step leaves out the click's round trip and Mesa's first
    sleep; the counter is read from the page, so a step counts once the browser shows it.
    ``probe()`` is called right after each of the two reads (e.g. CPU seconds so far).
    The settling wait lets a step already under way when Pause was seen end and be drawn
    (Mesa's loop steps once more when Pause comes during its sleep).
    """
    before = step_count(page)
    page.get_by_role("button", name=PLAY).click()
    first = wait_past(page, before)
    began, at_first = time.monotonic(), probe()
    page.wait_for_timeout(1000 * seconds)
    last, elapsed, at_last = step_count(page), time.monotonic() - began, probe()
    page.get_by_role("button", name=PAUSE).click(timeout=20_000)
    page.get_by_role("button", name="Step").and_(page.locator(":enabled")).wait_for(timeout=20_000)
    page.wait_for_timeout(1000 * settle_seconds)
    paused_at = step_count(page)
    page.wait_for_timeout(1000 * pause_seconds)
    return PlayRun(first, last, elapsed, paused_at, step_count(page), (at_first, at_last))


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a ``/proc`` stat file after the command's ``)``: state ppid ... utime(11)
    stime cutime cstime(14); None when the process or thread ended meanwhile."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _tree(root: int) -> set[int]:
    """``root`` and its live descendants."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(entry / "stat")):
            parents[int(entry.name)] = int(fields[1])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return tree


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system, reaped children's included) of process ``root`` and its
    live descendants, read from ``/proc`` (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in _tree(root):
        if fields := _stat_fields(Path(f"/proc/{pid}/stat")):
            total += sum(int(value) for value in fields[11:15]) / tick
    return total


def thread_cpu_seconds(root: int) -> dict[tuple[int, int], float]:
    """CPU seconds (user + system) of each thread of process ``root`` and its live
    descendants, by (process id, thread id)."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for pid in _tree(root):
        for task in Path(f"/proc/{pid}/task").glob("*"):
            if fields := _stat_fields(task / "stat"):
                seconds[pid, int(task.name)] = sum(int(value) for value in fields[11:13]) / tick
    return seconds
