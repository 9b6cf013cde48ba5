"""``market-hpc viz``: serve the browser app (``visualization/app.py``) with solara.

The app is a leaf outside the package; this launcher only finds it and starts
``python -m solara run APP`` in a child process, so nothing here imports solara or the
app. Loopback by default: the app has no authentication.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from market_hpc.errors import ConfigError

APP_ENV = "MARKET_HPC_VIZ_APP"
SCENARIO_ENV = "MARKET_HPC_VIZ_SCENARIO"  # read by visualization/model.py
INSTALL_HINT = "install with pip install 'market_hpc[viz]'"
NEEDED_MODULES = ("solara", "altair")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def find_app() -> Path:
    """``visualization/app.py`` beside the package (a source checkout) or ``$MARKET_HPC_VIZ_APP``.

    Raises:
        ConfigError: when the app file is not there.
    """
    override = os.environ.get(APP_ENV)
    app = (
        Path(override)
        if override
        else Path(__file__).resolve().parent.parent / "visualization" / "app.py"
    )
    if not app.is_file():
        raise ConfigError(
            f"browser app not found at {app}: it ships with the source checkout "
            f"(visualization/app.py); set {APP_ENV} to its path"
        )
    return app


def check_viz_extra() -> None:
    """Fail with the install command when the ``viz`` extra is missing.

    Raises:
        ConfigError: naming the missing modules.
    """
    missing = [name for name in NEEDED_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"the browser app needs the viz extra ({', '.join(missing)} missing): {INSTALL_HINT}"
        )


def check_not_a_sweep(path: str) -> None:
    """Refuse a sweep file, saying what it is and what to run instead.

    Raises:
        ConfigError: ``path`` has sweep keys (``grid``, ``zip``, ``seeds``, ``base``,
            ``report``).
    """
    from market_hpc.experiment.sweep_spec import RESERVED_KEYS
    from market_hpc.tomlfile import read_toml

    found = [key for key in RESERVED_KEYS if key in read_toml(path, "scenario")]
    if found:
        raise ConfigError(
            f"{path} is a sweep file (it has {', '.join(found)}), not a scenario: `market-hpc viz` "
            f"shows one scenario. Run the sweep with `market-hpc sweep {path} --out DIR` and see "
            "its plots with `market-hpc report DIR`, or give `market-hpc viz` a scenario file "
            "(a sweep's point written without the sweep keys, e.g. scenarios/sample_overload.toml)"
        )


def check_port_free(host: str, port: int) -> None:
    """Refuse a port out of range or already in use on ``host``, before the server starts
    (solara would print its URL and give up on the taken port minutes later).

    The probe binds with ``SO_REUSEADDR``, as uvicorn does: a port left in TIME_WAIT by a
    stopped server is free, one another server listens on is not.

    Raises:
        ConfigError: naming the port (or host) and what to pass instead.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(f"--port: got {port!r}; valid: a port number 1..65535 not in use")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(
            f"--host: cannot resolve {host!r} ({exc}); valid: an address of this "
            "machine, e.g. 127.0.0.1 (the default) or 0.0.0.0"
        ) from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(
                    f"--port {port}: {host}:{port} is already in use (another "
                    "server, an earlier market-hpc viz?); valid: a free port, "
                    "e.g. --port " + str(port + 1 if port < 65535 else 8765)
                ) from None
            raise ConfigError(
                f"--host {host} --port {port}: cannot listen there "
                f"({exc.strerror or exc}); valid: an address of this machine and a "
                "free port (ports below 1024 need root)"
            ) from None


def server_command(app: Path, host: str, port: int) -> list[str]:
    """The solara 1.58 command line serving ``app``."""
    return [
        sys.executable,
        "-m",
        "solara",
        "run",
        str(app),
        "--host",
        host,
        "--port",
        str(port),
        "--production",
        "--no-open",
        "--no-check-version",
    ]


def server_env(scenario: str | None) -> dict[str, str]:
    """Environment of the server: the scenario for the app, no telemetry."""
    env = dict(os.environ)
    env["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "False"
    env["SOLARA_THEME_SHOW_BANNER"] = "False"  # its fixed footer covered the job-details tile
    env["SOLARA_THEME_TITLE"] = "market_hpc: the live market"
    env[SCENARIO_ENV] = str(Path(scenario).resolve()) if scenario else ""
    return env


def serve(scenario: str | None = None, host: str = "127.0.0.1", port: int = 8765) -> int:
    """Serve the app until interrupted; return the server's exit code.

    Raises:
        ConfigError: missing viz extra, app file, an invalid scenario, or a port that is
            taken or out of range (checked before the server starts).
    """
    check_viz_extra()
    app = find_app()
    if scenario:
        from market_hpc.experiment.config import load_scenario

        check_not_a_sweep(scenario)
        load_scenario(scenario)
    check_port_free(host, port)
    if host not in LOOPBACK:
        print(
            f"market-hpc viz: serving on {host}, reachable from other machines; the app has "
            "no authentication",
            file=sys.stderr,
        )
    print(f"market-hpc viz: http://{host}:{port}/ (Ctrl-C stops it)", flush=True)
    with subprocess.Popen(server_command(app, host, port), env=server_env(scenario)) as server:
        # Ctrl-C reaches the server through the terminal; pass a SIGTERM on too.
        previous = signal.signal(signal.SIGTERM, lambda *_: server.terminate())
        try:
            return server.wait()
        finally:
            signal.signal(signal.SIGTERM, previous)


def add_viz_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``market-hpc viz`` on the CLI's subcommands."""
    viz = sub.add_parser(
        "viz",
        help="serve the live market in the browser (Mesa SolaraViz)",
        description="Serve visualization/app.py with solara. Needs the viz "
        f"extra ({INSTALL_HINT}).",
    )
    viz.add_argument(
        "scenario",
        nargs="?",
        help="scenario TOML whose workload to show (default: jobs generated from the controls)",
    )
    viz.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    viz.add_argument("--port", type=int, default=8765, help="port (default: 8765)")
    viz.set_defaults(func=lambda args: serve(args.scenario, args.host, args.port))
