"""Driving ``market-hpc viz`` in headless Chromium: the server, a page, and what a user does
(pick an option, move a slider, press Step/Reset) with waits on what the page shows. The
driver is ``benchmarks/viz_page.py`` (shared with ``benchmarks/viz_step.py --browser``);
this module adds pytest's skips and failures and the page checks after each test.

The selectors are the same on Mesa 3.3 and 3.5: the step count is the app's own
"Step: N" (``.mhpc-steps``, ``visualization.components.StepInfo``), not Mesa's
"Step: N" (3.3) / "Time: N.0" (3.5) line, which the app replaces.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from viz_page import (  # the driver shared with benchmarks/viz_step.py --browser
    CHROMIUM,
    OPEN_MENU,
    PAUSE,
    PLAY,
    REPO,
    PlayRun,
    Server,
    ServerError,
    browser_page,
    click_step,
    measure_play,
    reset_and_read,
    running_server,
    select,
    slide,
    step_count,
    wait_steps,
)

__all__ = [
    "OPEN_MENU",
    "PAUSE",
    "PLAY",
    "REPO",
    "PlayRun",
    "Server",
    "click_step",
    "eventually",
    "measure_play",
    "open_page",
    "playwright_or_skip",
    "reset_and_read",
    "select",
    "serve",
    "settled",
    "slide",
    "step_count",
    "type_into",
    "wait_steps",
]


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


def serve(tmp_path_factory: pytest.TempPathFactory, *scenario: str) -> Iterator[Server]:
    """Run ``market-hpc viz [SCENARIO]`` on a free loopback port until the generator closes."""
    log = tmp_path_factory.mktemp("viz") / "server.log"
    try:
        with running_server(log, *scenario) as server:
            yield server
    except ServerError as exc:
        pytest.fail(str(exc))


def open_page(
    sync_api: Any, server: Server, viewport: tuple[int, int] = (1500, 1300)
) -> Iterator[Any]:
    """A fresh browser session on the app (its own model) in a ``viewport`` (width, height)
    window, with request and error logs; afterwards neither the page nor the server log
    shows an error."""
    with browser_page(sync_api, server, viewport) as tab:
        yield tab
        assert not tab.errors, tab.errors
        body = tab.inner_text("body")
        assert "Traceback" not in body, body[body.find("Traceback") :][:3000]
        # Mesa's controller catches a failing step, prints the traceback and shows one line.
        assert not re.search(r"error in (step|visualization)", body), body
        log = server.log.read_text()
        assert "Traceback" not in log, log[log.find("Traceback") :][:3000]


def type_into(page, label: str, text: str) -> None:  # type: ignore[no-untyped-def]
    field = page.get_by_role("textbox", name=re.compile("^" + re.escape(label)))
    field.fill(text)
    field.press("Enter")


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
