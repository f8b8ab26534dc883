"""The stored notebook exported by nbconvert's sanitizing HTML exporter, with no kernel and no network.

nbconvert 7's sanitizer keeps a fixed, short list of tags (no ``<style>``, ``<img>``, ``<svg>``,
``<del>``, ``<details>``, headings or sections) and shows every other tag as text, so any styled output
— agent_nb's views, a pandas table — becomes markup soup; the list cannot be configured. What reads
is the text form every agent_nb display carries (``text/plain``: the run's report, the graph's edges,
dropped messages marked ``✗``), picked by one option (README, "Test your notebooks in CI").
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[2]
TEXT_FIRST = ["image/png", "text/plain"]


def export(**config) -> str:
    notebook = nbformat.read(ROOT / "notebooks" / "08_seeing_context.ipynb", as_version=4)
    page, _ = HTMLExporter(sanitize_html=True, **config).from_notebook_node(notebook)
    return page


def outputs_of(page: str) -> str:
    """The outputs' part of the page (each output area starts with its prompt, ``Out[n]:``)."""
    return "".join(
        re.findall(r'<div class="jp-OutputArea jp-Cell-outputArea">(.*?)</div>\s*</div>\s*</div>', page, re.S)
    )


def test_sanitized_with_the_text_forms_first_every_view_reads() -> None:
    from traitlets.config import Config

    config = Config({"NbConvertBase": {"display_data_priority": TEXT_FIRST}})
    page = export(config=config)
    raw = outputs_of(page)
    assert "&lt;div" not in raw and "&lt;style" not in raw and "&lt;svg" not in raw  # no markup shown as text
    shown = html.unescape(raw)
    assert "planner -> researcher" in shown and "researcher -> writer" in shown  # the graph, as its edges
    writer = shown.split("[3] writer · agent · context_mode=last_agent")[1]
    assert "dropped   2 messages" in writer and "✗ user: Plan a rainy Sunday in Lisbon for two" in writer
    assert "[handed over] user, from researcher (was assistant)" in writer  # origins and reassignment
    assert "writer: last_agent (also: writer: full; writer: custom(user_messages))" in shown  # the runs, named
    assert raw.count('src="data:image/png;base64,') == 1  # the plot stays a picture
    assert ">flowchart LR\n    n0[" in shown  # the Mermaid text, as text (not a quoted str)
    assert "https://" not in "".join(re.findall(r'src="([^"]+)"', raw))  # no output loads from the network


def test_sanitized_as_is_the_markup_shows_as_text_which_is_why_the_option_is_needed() -> None:
    shown = outputs_of(export())
    assert "&lt;style&gt;" in shown and "&lt;section class=" in shown  # nbconvert's list, not agent_nb's markup
