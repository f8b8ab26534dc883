"""The requests form in a real browser: Voila serves notebooks/05_checkpoints.ipynb.

Headless Debian chromium finds the pending refund, clicks Approve, and reads the outcome the
form shows. The screenshot goes to $AGENT_NB_ARTIFACTS (or the test's temporary directory).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_lab import artifacts, free_port, serve, stop

from tests.widgets.test_playground_browser import (  # noqa: F401 - the page fixture is used by name
    ROOT,
    _shot_on_failure,
    page,
    served,
)

NOTEBOOK = ROOT / "notebooks" / "05_checkpoints.ipynb"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def voila_url(served):  # noqa: F811 - the fixture imported above
    base, root, env = served
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, root / NOTEBOOK.name)
    port = free_port()
    args = [sys.executable, "-m", "voila", NOTEBOOK.name, "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1"]
    proc = serve(args, root, f"http://127.0.0.1:{port}/__ready__", base / "voila-requests.log", env)
    yield f"http://127.0.0.1:{port}/"
    stop(proc)


def test_approve_a_refund_in_voila(page, voila_url, tmp_path: Path) -> None:  # noqa: F811
    from playwright.sync_api import expect

    shots = artifacts(tmp_path)
    page.goto(voila_url)
    form = page.locator(".anb-requests").first
    with _shot_on_failure(page, shots / "requests-failed.png"):
        request = form.locator(".anb-request")
        expect(request).to_have_count(1)
        expect(request).to_contain_text("support wants to call refund(order='A7', amount=20.0). Allow it?")
        request.locator("button", has_text="Approve").click()
        status = form.locator(".anb-status")
        expect(status).to_contain_text("approved · the run is completed")
        expect(status).to_contain_text("support: Done: refunded 20.0 EUR on order A7.")
        expect(form).to_contain_text("no pending requests")
        page.screenshot(path=str(shots / "requests-approved.png"), full_page=True)
