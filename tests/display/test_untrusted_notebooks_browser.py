"""Every stored notebook opened UNTRUSTED in JupyterLab, as a student first sees it (before Run All).

JupyterLab then removes each output's <style> and inline <svg>. Whatever agent_nb drew must still
read: each graph as a picture that loads (the removed SVG's text hidden), no stylesheet or markup
shown as text, every message bubble its own line that starts with who said it, every dropped message
struck through (``<del>``), every column headed by its executor, and no widget left as an error:
where no kernel runs one, its static snapshot shows. One JupyterLab serves all the notebooks.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from jupyter_lab import BROWSER, artifacts, chromium_page, stored_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
pytestmark = BROWSER
WHO = re.compile(r"^(\[[a-z ]+\] )?(user|assistant|system|tool)\b")


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    base = tmp_path_factory.mktemp("all-notebooks")
    (base / "root").mkdir()
    for notebook in NOTEBOOKS:
        shutil.copy(notebook, base / "root" / notebook.name)
    with stored_notebook(NOTEBOOKS[0], base) as url:
        yield url


@pytest.fixture(scope="module")
def page():
    with chromium_page() as tab:
        yield tab


def settled(page, outputs) -> None:
    """Wait until the notebook has stopped adding outputs (JupyterLab renders them in batches)."""
    count, still = -1, 0
    while still < 3:
        page.wait_for_timeout(300)
        now = outputs.count()
        still, count = (still + 1, now) if now == count else (0, now)


@pytest.mark.parametrize("notebook", [n.name for n in NOTEBOOKS])
def test_each_stored_notebook_reads_untrusted(page, lab_url, notebook, tmp_path):
    from playwright.sync_api import expect

    shots = artifacts(tmp_path)
    page.goto(lab_url.replace(NOTEBOOKS[0].name, notebook))
    outputs = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")
    expect(outputs.first).to_be_attached()
    settled(page, outputs)
    try:
        assert outputs.locator("style").count() == 0, "opened trusted: a <style> survived"
        assert outputs.locator("svg").count() == 0, "an inline <svg> survived untrusted"
        texts = outputs.all_inner_texts()
        leaked = [t[:120] for t in texts if "--anb-" in t or re.search(r"</?(div|section|span|svg)\b", t)]
        assert not leaked, f"stylesheet or markup shown as text: {leaked}"
        assert not [t for t in texts if "Error displaying widget" in t], "a widget without its kernel shows an error"

        pictures = outputs.locator("img.graph-still").evaluate_all(
            "imgs => imgs.map(i => [i.complete && i.naturalWidth > 50, i.getAttribute('alt') || ''])"
        )
        assert all(loaded for loaded, _ in pictures), f"a graph's picture did not load: {pictures}"
        vague = [alt for _, alt in pictures if not re.match(r"workflow .+: (.+ → .+|executors? .+)", alt)]
        assert not vague, f"a graph's picture says too little: {vague}"
        shown = outputs.locator(".graph-live").evaluate_all("els => els.filter(e => e.offsetParent !== null).length")
        assert shown == 0, "the removed SVG's text shows"

        bubbles = [t.strip() for t in outputs.locator(".msg").all_inner_texts()]
        unlabelled = [t[:80] for t in bubbles if t and not WHO.match(t)]
        assert not unlabelled, f"a message that does not say who said it: {unlabelled}"
        unstruck = outputs.locator(".msg.dropped").evaluate_all(
            "ms => ms.filter(m => !m.querySelector('del') ||"
            " !getComputedStyle(m.querySelector('del')).textDecorationLine.includes('line-through')).length"
        )
        assert unstruck == 0, f"{unstruck} dropped messages are not struck through"
        heads = outputs.locator("section.col h3").all_text_contents()  # closed runs' columns too
        assert all(h.strip() for h in heads), "a column without its executor's name"
    except BaseException:
        page.screenshot(path=str(shots / f"{notebook}-untrusted-failed.png"), full_page=True)
        raise
