"""notebooks/09_experiments.ipynb with its stored outputs, opened UNTRUSTED in JupyterLab in a real browser.

The isolated Jupyter data dir has no trust database entry for the copy, so JupyterLab sanitizes its HTML
outputs (no <style>, no scripts): the experiment tables, the plot, the run view and the compare line must
still be there and legible. Nothing is executed. The screenshot goes to $AGENT_NB_ARTIFACTS (or the test's
temporary directory): look at it.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from jupyter_lab import BROWSER, artifacts, chromium_page, stored_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "09_experiments.ipynb"
pytestmark = BROWSER


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
    with stored_notebook(NOTEBOOK, tmp_path_factory.mktemp("experiments-nb")) as url:
        yield url


@pytest.fixture
def page():
    with chromium_page() as tab:
        yield tab


def test_stored_outputs_are_legible_untrusted(page, lab_url, tmp_path):
    from playwright.sync_api import expect

    shots = artifacts(tmp_path)
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

        plot = outputs.locator("img:not(.graph-still)").first  # the plot, not a run view's graph
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
