"""JupyterLab and Voila on loopback for the browser tests, driven by headless Debian chromium (playwright).

Servers are started by PID with an isolated Jupyter configuration (no trust database, no news
toast) and stopped by SIGTERM, which shuts their kernels down. Tests import this module as
``from jupyter_lab import ...`` (pytest puts ``tests/`` on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
TIMEOUT_MS = 90_000  # a server and a kernel starting on two busy cores
TOKEN = "agent-nb-test"
BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs it)"),
]
"""The marks of a test that drives chromium (``pytestmark = BROWSER``)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def isolated_env(base: Path, settings: Mapping[str, Mapping[str, Any]] = {}) -> dict[str, str]:
    """The environment of a server whose Jupyter directories are all under ``base`` (so nothing is trusted).

    ``settings`` maps a JupyterLab plugin's settings path (``"notebook-extension/tracker"``) to its values.
    """
    env = dict(os.environ)
    for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces")]:  # fmt: skip
        env[var] = str(base / "jupyter" / sub)
    plugins = {"apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False}, **(settings or {})}
    for plugin, values in plugins.items():  # the news toast would cover the page
        path = base / "jupyter" / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env["PYTHONPATH"] = str(ROOT)
    return env


def serve(args: list[str], cwd: Path, ready: str, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start a server and wait, bounded, until ``ready`` answers; its log's tail explains a failed start."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{args[2]} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(ready, timeout=2)
            return proc
        except urllib.error.HTTPError:
            return proc  # any answer means it listens
        except OSError:
            time.sleep(0.25)
    stop(proc)
    raise TimeoutError(f"{args[2]} did not start in 120 s:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)  # servers shut their kernels down on SIGTERM
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def lab(root: Path, base: Path, env: dict[str, str], notebook: str) -> Iterator[str]:
    """JupyterLab serving ``root``; the URL that opens ``notebook``."""
    port = free_port()
    args = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.token={TOKEN}",
            "--ServerApp.ip=127.0.0.1", f"--port={port}", "--allow-root", f"--ServerApp.root_dir={root}"]  # fmt: skip
    proc = serve(args, root, f"http://127.0.0.1:{port}/api/status?token={TOKEN}", base / "lab.log", env)
    try:
        yield f"http://127.0.0.1:{port}/lab/tree/{notebook}?token={TOKEN}"
    finally:
        stop(proc)


@contextlib.contextmanager
def stored_notebook(notebook: Path, base: Path, *, trusted: bool = False) -> Iterator[str]:
    """JupyterLab serving a copy of ``notebook`` with its stored outputs, untrusted (an isolated Jupyter
    config has no trust database), every cell in the DOM (none rendered lazily); the URL that opens it.

    ``trusted=True`` signs the copy in that isolated trust database first: the notebook as it is after
    its owner ran it (outputs shown with their stylesheets and SVG). A ``base / "root"`` prepared
    beforehand (several notebooks in it) is served as it is.
    """
    root = base / "root"
    if not root.exists():
        root.mkdir()
        shutil.copy(notebook, root / notebook.name)
    env = isolated_env(base, {"notebook-extension/tracker": {"windowingMode": "none"}})
    if trusted:
        subprocess.run([sys.executable, "-m", "jupyter", "trust", str(root / notebook.name)], env=env,
                       check=True, capture_output=True, timeout=120)  # fmt: skip
    with lab(root, base, env, notebook.name) as url:
        yield url


@contextlib.contextmanager
def chromium_page(width: int = 1400, height: int = 1400) -> Iterator[Any]:
    """A tab of a fresh headless chromium profile, with the browser tests' timeouts, of that viewport."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, args=FLAGS, viewport={"width": width, "height": height}
            )
            tab = context.pages[0] if context.pages else context.new_page()
            tab.set_default_timeout(TIMEOUT_MS)
            yield tab
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def artifacts(tmp_path: Path) -> Path:
    """Where screenshots go: ``$AGENT_NB_ARTIFACTS``, else the test's temporary directory."""
    out = Path(os.environ.get("AGENT_NB_ARTIFACTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out
