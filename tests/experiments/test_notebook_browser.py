"""notebooks/09_experiments.ipynb with its stored outputs, opened UNTRUSTED in JupyterLab in a real browser.

The isolated Jupyter data dir has no trust database entry for the copy, so JupyterLab sanitizes its HTML
outputs (no <style>, no scripts): the experiment tables, the plot, the run view and the compare line must
still be there and legible. Nothing is executed. The screenshot goes to $AGENT_NB_ARTIFACTS (or the test's
temporary directory): look at it.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "09_experiments.ipynb"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
TIMEOUT_MS = 90_000  # a server starting on two busy cores
TOKEN = "agent-nb-test"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make test installs it)"),
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(args: list[str], cwd: Path, ready: str, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
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
    _stop(proc)
    raise TimeoutError(f"{args[2]} did not start in 120 s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)  # servers shut their kernels down on SIGTERM
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _first_table_cell(notebook: Path) -> str:
    """The text of the first percentage cell of the stored context-mode table (text/html, else text/plain)."""
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            plain = "".join(data.get("text/plain", ""))
            if "writer.context_mode" not in plain or "cells" not in plain:
                continue
            cells = re.findall(r"<td>([^<]*%[^<]*)</td>", "".join(data.get("text/html", "")))
            if cells:
                return html.unescape(cells[0])
            return re.split(r"\s{2,}", plain.splitlines()[2])[2]  # row "full", column after "cells"
    raise AssertionError(f"{notebook.name} stores no context-mode table")


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    """JupyterLab serving a copy of the notebook, outputs kept, with an isolated (trust-less) Jupyter config."""
    base = tmp_path_factory.mktemp("experiments-nb")
    root = base / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    env = dict(os.environ)
    for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces")]:  # fmt: skip
        env[var] = str(base / "jupyter" / sub)
    settings = base / "jupyter" / "settings" / "@jupyterlab"
    news = settings / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))  # else a toast covers the page
    tracker = settings / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))  # every cell in the DOM, none rendered lazily
    env["PYTHONPATH"] = str(ROOT)
    port = _port()
    args = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.token={TOKEN}",
            "--ServerApp.ip=127.0.0.1", f"--port={port}", "--allow-root", f"--ServerApp.root_dir={root}"]  # fmt: skip
    proc = _serve(args, root, f"http://127.0.0.1:{port}/api/status?token={TOKEN}", base / "lab.log", env)
    yield f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK.name}?token={TOKEN}"
    _stop(proc)


@pytest.fixture
def page():
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=FLAGS, viewport={"width": 1400, "height": 1400}
        )
        tab = context.pages[0] if context.pages else context.new_page()
        tab.set_default_timeout(TIMEOUT_MS)
        yield tab
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


def _artifacts(tmp_path: Path) -> Path:
    out = Path(os.environ.get("AGENT_NB_ARTIFACTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_stored_outputs_are_legible_untrusted(page, lab_url, tmp_path):
    from playwright.sync_api import expect

    shots = _artifacts(tmp_path)
    first_cell = _first_table_cell(NOTEBOOK)
    page.goto(lab_url)
    notebook = page.locator(".jp-NotebookPanel .jp-Notebook")
    scroller = page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer")  # the notebook's scrolling box
    expect(notebook.locator(".jp-OutputArea-output img").first).to_be_attached()
    outputs = notebook.locator(".jp-OutputArea-output")
    try:
        scroller.evaluate("n => n.scrollTo(0, n.scrollHeight)")  # anything still lazy renders now
        # untrusted: the stored <style> was sanitized away, so what follows is what an untrusted reader sees
        expect(outputs.filter(has_text="writer.context_mode").first).to_be_attached()
        assert outputs.locator("style").count() == 0, "the notebook was opened trusted: its <style> survived"

        modes = outputs.locator("table").filter(has=page.locator("th", has_text="writer.context_mode"))
        expect(modes).to_have_count(1)
        modes.scroll_into_view_if_needed()
        expect(modes.locator("td", has_text=first_cell).first).to_be_visible()
        expect(modes.locator("tr")).to_have_count(4)  # a header and three modes: rows, not a run-on line

        harness = outputs.locator("table").filter(has=page.locator("th", has_text="harness"))
        harness = harness.filter(has=page.locator("th", has_text="has_gap('duplicate answer')"))
        expect(harness).to_have_count(1)
        harness.scroll_into_view_if_needed()
        expect(harness.locator("th", has_text="has_gap('duplicate answer')")).to_be_visible()
        expect(harness.locator("td", has_text="centralized")).to_be_visible()

        plot = outputs.locator("img").first
        plot.scroll_into_view_if_needed()
        expect(plot).to_be_visible()
        assert plot.evaluate("img => img.complete && img.naturalWidth") > 0, "the plot image did not load"

        view = page.locator(".jp-Cell").filter(has_text="result.cell(lost.k).view()").locator(".jp-OutputArea-output")
        expect(view).to_have_count(1)
        view.scroll_into_view_if_needed()
        for name in ("planner", "researcher", "writer"):
            expect(view.get_by_text(name).filter(visible=True).first).to_be_visible()
        page.screenshot(path=str(shots / "experiments-untrusted-run-view.png"))

        compare = outputs.filter(has_text="loses 20").first
        compare.scroll_into_view_if_needed()
        expect(compare.get_by_text("loses 20")).to_be_visible()
        page.screenshot(path=str(shots / "experiments-untrusted-tables.png"))
        harness.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "experiments-untrusted-harness.png"))
    except BaseException:
        page.screenshot(path=str(shots / "experiments-untrusted-failed.png"), full_page=True)
        raise
