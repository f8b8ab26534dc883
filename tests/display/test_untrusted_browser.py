"""notebooks/08_seeing_context.ipynb with its stored outputs, opened UNTRUSTED in JupyterLab in a real browser.

Untrusted, JupyterLab removes every <style> and inline <svg> of an output and keeps inline styles,
<img> with a data URL and <del>. What a student sees before "Run All" must still read: the graph as
a picture (no stray text of the removed SVG), each message on its own line as "origin role: text",
dropped messages struck through, the legend true. Nothing is executed. Screenshots go to
$AGENT_NB_ARTIFACTS (or the test's temporary directory).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jupyter_lab import BROWSER, artifacts, chromium_page, stored_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "08_seeing_context.ipynb"
pytestmark = BROWSER


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    with stored_notebook(NOTEBOOK, tmp_path_factory.mktemp("seeing-context-nb")) as url:
        yield url


@pytest.fixture
def page():
    with chromium_page() as tab:
        yield tab


def test_the_run_views_read_untrusted_graph_columns_and_struck_messages(page, lab_url, tmp_path):
    from playwright.sync_api import expect

    shots = artifacts(tmp_path)
    page.goto(lab_url)
    notebook = page.locator(".jp-NotebookPanel .jp-Notebook")
    outputs = notebook.locator(".jp-OutputArea-output")
    expect(outputs.locator("img.graph-still").first).to_be_attached()
    try:
        assert outputs.locator("style").count() == 0, "the notebook was opened trusted: its <style> survived"
        assert outputs.locator("svg").count() == 0  # what JupyterLab removes untrusted: the picture stands in

        view = (
            page.locator(".jp-Cell")
            .filter(has_text='writer.context_mode = "last_agent"')
            .locator(".jp-OutputArea-output")
        )
        expect(view).to_have_count(1)
        view.scroll_into_view_if_needed()
        picture = view.locator("img.graph-still")
        expect(picture).to_be_visible()
        assert picture.evaluate("img => img.complete && img.naturalWidth") > 100, "the graph's picture did not load"
        assert "planner → researcher" in (picture.get_attribute("alt") or "")
        expect(view.locator(".graph-live")).to_be_hidden()  # the removed SVG's text does not run into the page

        writer = view.locator("section.col").filter(has=page.locator("h3", has_text="writer"))
        expect(writer).to_have_count(1)
        struck = writer.locator(".msg.dropped del")
        expect(struck).to_have_count(2)  # last_agent dropped the question and the planner's reply
        assert "line-through" in struck.first.evaluate("e => getComputedStyle(e).textDecorationLine")
        lines = [t.strip() for t in writer.locator(".msg").all_inner_texts()]
        assert any(re.match(r"^user \(dropped\): Plan a rainy Sunday", t) for t in lines), lines
        assert any(t.startswith("[instructions] system: Write the final plan.") for t in lines), lines
        assert any(t.startswith("[handed over] user · researcher (assistant handed over as user): ") for t in lines)
        assert "superstep 3 · last_agent · answered" in writer.inner_text()
        legend = view.locator("del", has_text="struck through")
        expect(legend).to_have_count(1)  # the legend says struck through, and it is
        page.screenshot(path=str(shots / "seeing-context-untrusted.png"))
    except BaseException:
        page.screenshot(path=str(shots / "seeing-context-untrusted-failed.png"), full_page=True)
        raise


def test_the_runs_blocks_open_untrusted_and_one_executor_across_runs_reads(page, lab_url, tmp_path):
    from playwright.sync_api import expect

    shots = artifacts(tmp_path)
    page.goto(lab_url)
    runs = page.locator(".jp-Cell").filter(has_text="RunView([full, last_agent, custom], turn=1)")
    blocks = runs.locator(".jp-OutputArea-output details")
    try:
        expect(blocks.filter(has=page.locator("summary", has_text="writer: full"))).to_have_count(1)
        picked = blocks.filter(has=page.locator("summary", has_text="writer: last_agent"))
        assert picked.evaluate("d => d.open"), "the run picked by turn=1 is not the open one"
        closed = blocks.filter(has=page.locator("summary", has_text="writer: custom(user_messages)"))
        assert not closed.evaluate("d => d.open")
        closed.locator("summary").click()
        expect(closed.locator("section.col").first).to_be_visible()  # a click opens it: no script needed

        across = page.locator(".jp-Cell").filter(has_text='executor="writer"').locator(".jp-OutputArea-output")
        heads = [t.strip() for t in across.locator("section.col h3").all_inner_texts()]
        assert heads == ["writer: full", "writer: last_agent", "writer: custom(user_messages)"]
    except BaseException:
        page.screenshot(path=str(shots / "runs-untrusted-failed.png"), full_page=True)
        raise
