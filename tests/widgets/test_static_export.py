"""The stored notebooks exported by nbconvert, with no kernel and no network: the widgets' snapshots show.

The widgets' state is not stored in the notebooks (``make notebooks``), so nbconvert falls back from the
widget view to the static HTML each widget puts beside itself: the playground's transcript and run view,
not an empty output that would need scripts from the network.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[2]


def test_the_stored_playground_exports_with_its_conversation() -> None:
    notebook = nbformat.read(ROOT / "notebooks" / "03_playground.ipynb", as_version=4)
    assert "widgets" not in notebook.metadata  # no state for a widget manager to load from the network
    page, _ = HTMLExporter().from_notebook_node(notebook)
    assert "unpkg.com" not in page and "children=(HBox" not in page
    assert page.count("run the notebook to talk to it") == 2  # both playgrounds, each as it was when shown
    assert "Make it indoors only" in page and 'data-route="fast"' in page  # the driven one's three turns


def test_every_stored_notebook_keeps_no_widget_state() -> None:
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert "widgets" not in json.loads(path.read_text())["metadata"], path.name
