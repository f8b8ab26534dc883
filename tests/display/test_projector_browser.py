"""notebooks/08_seeing_context.ipynb as its owner sees it after running it (trusted), in JupyterLab at a
projector's 1280×720, in a real browser: the compact view's graph and every column on one screen, the
runs' blocks opening one at a time on a click (no script), and the Mermaid text drawn as a diagram.
Screenshots go to $AGENT_NB_ARTIFACTS (or the test's temporary directory).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest
from jupyter_lab import BROWSER, artifacts, chromium_page, stored_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "08_seeing_context.ipynb"
WIDTH, HEIGHT = 1280, 720
pytestmark = BROWSER


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    with stored_notebook(NOTEBOOK, tmp_path_factory.mktemp("projector-nb"), trusted=True) as url:
        yield url


@pytest.fixture
def page():
    with chromium_page(WIDTH, HEIGHT) as tab:
        yield tab


def output_of(page, code: str):
    return page.locator(".jp-Cell").filter(has_text=code).locator(".jp-OutputArea-output")


def inside(box: dict[str, float]) -> bool:
    return box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= WIDTH and box["y"] + box["height"] <= HEIGHT


def test_the_compact_view_puts_the_graph_and_every_column_on_one_projector_screen(page, lab_url, tmp_path):
    from playwright.sync_api import expect

    shots = artifacts(tmp_path)
    page.goto(lab_url)
    view = output_of(page, "RunView(last_agent, compact=True)")
    expect(view).to_have_count(1)
    graph = view.locator(".graph-live svg")
    expect(graph).to_be_visible()  # trusted: the live SVG, not the picture
    view.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    try:
        columns = view.locator("section.col")
        expect(columns).to_have_count(3)
        boxes = {"graph": graph.bounding_box()} | {
            f"column {i + 1}": columns.nth(i).bounding_box() for i in range(columns.count())
        }
        outside = {name: box for name, box in boxes.items() if box is None or not inside(box)}
        assert not outside, f"not inside the {WIDTH}×{HEIGHT} screen: {outside}"
        page.screenshot(path=str(shots / "projector-compact.png"))
    except BaseException:
        page.screenshot(path=str(shots / "projector-compact-failed.png"))
        raise


def test_the_runs_open_one_at_a_time_and_the_mermaid_text_is_drawn(page, lab_url, tmp_path):
    from playwright.sync_api import expect

    shots = artifacts(tmp_path)
    page.goto(lab_url)
    view = output_of(page, "RunView([full, last_agent, custom], turn=1)")
    blocks = view.locator("details.run-pick")
    expect(blocks).to_have_count(3)
    try:
        opened = [blocks.nth(i).evaluate("d => d.open") for i in range(3)]
        assert opened == [False, True, False]
        expect(blocks.nth(1).locator("section.col")).to_have_count(3)
        expect(blocks.nth(0).locator("section.col").first).to_be_hidden()
        blocks.nth(2).locator("summary").click()
        expect(blocks.nth(2).locator("section.col").first).to_be_visible()
        assert [blocks.nth(i).evaluate("d => d.open") for i in range(3)] == [False, False, True]  # one at a time
        assert "custom(user_messages)" in blocks.nth(2).locator("summary").inner_text()

        diagram = output_of(page, 'workflow.to_mermaid(direction="LR")')
        drawn = diagram.locator("figure[data-jp-mermaid-version] img")  # JupyterLab's own Mermaid drew it
        expect(drawn).to_be_visible()
        assert drawn.evaluate("img => img.complete && img.naturalWidth") >= 100  # it loaded
        assert "researcher" in unquote(drawn.get_attribute("src") or "")  # the diagram of this workflow
        assert "flowchart" not in diagram.inner_text()  # a diagram, not the text
        diagram.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "projector-mermaid.png"))
    except BaseException:
        page.screenshot(path=str(shots / "projector-runs-failed.png"), full_page=True)
        raise
