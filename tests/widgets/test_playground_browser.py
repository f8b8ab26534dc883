"""The playground in a real browser: JupyterLab and Voila serve notebooks/03_playground.ipynb.

Headless Debian chromium types a message, presses Send, switches the route and an agent's
context mode, and reads what the page shows. Screenshots go to $AGENT_NB_ARTIFACTS (or the
test's temporary directory): look at them.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_lab import BROWSER, artifacts, chromium_page, free_port, isolated_env, lab, serve, stop

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "03_playground.ipynb"
pytestmark = BROWSER


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A root with the notebook (outputs cleared: no stale widgets) and an isolated Jupyter config."""
    base = tmp_path_factory.mktemp("playground")
    root = base / "root"
    root.mkdir()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, root / NOTEBOOK.name)
    env = isolated_env(base)
    return base, root, env


@pytest.fixture(scope="module")
def lab_url(served):
    base, root, env = served
    with lab(root, base, env, NOTEBOOK.name) as url:
        yield url


@pytest.fixture(scope="module")
def voila_url(served):
    base, root, env = served
    port = free_port()
    args = [sys.executable, "-m", "voila", NOTEBOOK.name, "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1"]
    proc = serve(args, root, f"http://127.0.0.1:{port}/__ready__", base / "voila.log", env)  # GET / would run it
    yield f"http://127.0.0.1:{port}/"
    stop(proc)


@pytest.fixture
def page():
    with chromium_page() as tab:
        yield tab


@contextlib.contextmanager
def _shot_on_failure(page, path: Path):
    try:
        yield
    except BaseException:
        page.screenshot(path=str(path), full_page=True)
        raise


def converse(page, shots: Path, name: str) -> None:
    """Send, send with Enter, switch route, send, switch the writer to last_agent, send — checking what shows."""
    from playwright.sync_api import expect

    playground = page.locator(".anb-playground").first
    text = playground.locator(".widget-text input").first
    send = playground.locator("button", has_text="Send")
    transcript = playground.locator(".anb-transcript")

    def say(message: str, *, enter: bool = False) -> None:
        text.fill(message)
        expect(send).to_be_enabled()
        if enter:
            text.press("Enter")  # Enter sends, as Send does
        else:
            send.click()
        expect(transcript.locator(".turn:not(.running)").filter(has_text=message)).to_have_count(1)

    say("Plan a rainy Sunday in Lisbon")
    expect(transcript.locator('.msg.assistant[data-route="smart"]')).to_have_count(3)  # it starts on smart
    say("Make it indoors only", enter=True)
    smart = transcript.locator('.msg.assistant[data-route="smart"]')
    expect(smart).to_have_count(6)
    # each agent's model got its whole history: the planner's second reply lists the first turn's message
    expect(smart.nth(3)).to_contain_text('I see 3 messages: user "Plan a rainy Sunday in…"')
    playground.locator(".widget-dropdown").filter(has_text="route").locator("select").select_option("fast")
    say("Back to the echo")
    expect(transcript.locator('.msg.assistant[data-route="fast"]')).to_have_count(3)
    page.screenshot(path=str(shots / f"{name}-route.png"), full_page=True)

    writer_column = playground.locator('section.col[data-executor="writer"]')
    expect(writer_column).not_to_contain_text("dropped by last_agent")
    playground.locator(".widget-dropdown").filter(has_text="writer").locator("select").select_option("last_agent")
    say("Add a museum")
    expect(writer_column).to_contain_text("dropped by last_agent")
    expect(transcript).to_contain_text("turn 4 · route fast")
    expect(transcript).to_contain_text("writer: last_agent")
    page.screenshot(path=str(shots / f"{name}-last-agent.png"), full_page=True)


def test_in_jupyterlab(page, lab_url, tmp_path):
    from playwright.sync_api import expect

    shots = artifacts(tmp_path)
    page.goto(lab_url)
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    expect(page.locator(".jp-StatusBar-TextItem").filter(has_text=re.compile(r"\| Idle$"))).to_have_count(1)
    page.locator(".lm-MenuBar-item", has_text="Run").click()
    page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
    expect(page.locator(".jp-Cell").last.locator(".jp-InputPrompt")).not_to_have_text("[*]:")
    expect(page.locator(".jp-InputPrompt").filter(has_text="[*]")).to_have_count(0)
    expect(page.locator(".jp-OutputArea-output").filter(has_text="turn 3: routes ['fast'], writer last_agent"))
    with _shot_on_failure(page, shots / "lab-failed.png"):
        converse(page, shots, "lab")


def test_in_voila(page, voila_url, tmp_path):
    shots = artifacts(tmp_path)
    page.goto(voila_url)
    page.wait_for_selector(".anb-playground")
    with _shot_on_failure(page, shots / "voila-failed.png"):
        converse(page, shots, "voila")
        export_downloads(page, shots)


def export_downloads(page, shots: Path) -> None:
    """Export, and the visitor's own browser saves the file (the server's directory is not theirs)."""
    from playwright.sync_api import expect

    playground = page.locator(".anb-playground").first
    for button, suffix, inside in (("Export HTML", ".html", "Add a museum"), ("Export JSON", ".json", '"turns"')):
        playground.locator("button", has_text=button).click()
        link = playground.locator(f'.anb-status a[download$="{suffix}"]')
        expect(link).to_have_count(1)
        with page.expect_download() as caught:
            link.click()
        download = caught.value
        saved = shots / f"voila-download{suffix}"
        download.save_as(saved)
        assert download.suggested_filename == f"trip{suffix}" and inside in saved.read_text(encoding="utf-8")
