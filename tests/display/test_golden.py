"""Golden tests: what the displays show, compared with expectations stored under ``golden/``.

Each test renders one object through the public API (``str()``, ``_repr_mimebundle_()``) and
compares it with a file beside this module:

- ``*.txt``: the plain text exactly (``str(result.trace)``, a bundle's ``text/plain``);
- ``*.outline``: the *structure* of a bundle's ``text/html``, one node a line, indented by depth:
  each element's tag with its ``class`` and ``data-*`` attributes, and each text node (quoted,
  whitespace collapsed). Everything else is left out on purpose: the contents of ``<style>``
  elements (the theme), and the other attributes (inline styles, SVG coordinates, titles), so
  that a change of look does not fail these tests but a change of what is shown, or of how it
  is structured, does.

The runs are deterministic (offline clients, a deterministic planner), so nothing needs to be
normalised in practice; as a guard, ``normalise`` replaces what would vary between runs if it
ever appeared: memory addresses (``0x7f...`` → ``0xADDR``), UUIDs and long hex ids (→ ``<id>``),
and durations (``12.5 ms``, ``0.2 s`` → ``<duration>``).

A difference fails with a unified diff. When a change of display is intended, write the new
expectations and review them with ``git diff``::

    AGENT_NB_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/display/test_golden.py -p no:randomly

Without that variable a missing expectation file is a failure, never written silently.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agent_nb import AgentExecutor, ChatAgent, Message, MirrorChatClient, Workflow, WorkflowBuilder
from agent_nb.harness import StandardHarness
from agent_nb.harness.scenarios import opening_hours

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("AGENT_NB_UPDATE_GOLDEN") == "1"
QUESTION = "Plan a rainy Sunday in Lisbon"

# -- normalising and outlining ------------------------------------------------------------------

_VARYING = [
    (re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "0xADDR"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b"), "<id>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|s)\b"), "<duration>"),
]


def normalise(text: str) -> str:
    """``text`` with what could differ from one run to the next replaced by placeholders."""
    for pattern, placeholder in _VARYING:
        text = pattern.sub(placeholder, text)
    return text


VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)


class _Outliner(HTMLParser):
    """Builds the outline of an HTML fragment; an end tag that closes nothing open is an error."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.open: list[str] = []

    def _element(self, tag: str, attrs: list[tuple[str, str | None]]) -> str:
        kept = [(k, v or "") for k, v in attrs if k == "class" or k.startswith("data-")]
        return tag + "".join(f" {k}={json.dumps(normalise(' '.join(v.split())), ensure_ascii=False)}" for k, v in kept)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.lines.append("  " * len(self.open) + self._element(tag, attrs))
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.lines.append("  " * len(self.open) + self._element(tag, attrs))  # <rect/>: nothing inside

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.open or self.open[-1] != tag:
            line, column = self.getpos()
            innermost = f"<{self.open[-1]}>" if self.open else "nothing"
            raise ValueError(f"</{tag}> at line {line}, column {column} closes {innermost}, the element open there")
        self.open.pop()

    def handle_data(self, data: str) -> None:
        if self.open and self.open[-1] == "style":
            return  # the theme, not the structure
        text = " ".join(data.split())
        if text:
            self.lines.append("  " * len(self.open) + json.dumps(normalise(text), ensure_ascii=False))


def outline(html: str) -> str:
    """The structure of ``html``: one element or text node a line (see the module's docstring)."""
    parser = _Outliner()
    parser.feed(html)
    parser.close()
    if parser.open:
        raise ValueError(f"elements left open at the end: {parser.open}")
    return "\n".join(parser.lines)


def check_golden(name: str, actual: str) -> None:
    """Compare ``actual`` with ``golden/<name>``, or write it there under ``AGENT_NB_UPDATE_GOLDEN=1``."""
    path = GOLDEN / name
    actual = actual if actual.endswith("\n") else actual + "\n"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="\n")
        return
    if not path.exists():
        pytest.fail(
            f"no stored expectation {path.relative_to(GOLDEN.parent)}; write it with "
            "AGENT_NB_UPDATE_GOLDEN=1 and review it before committing",
            pytrace=False,
        )
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"golden/{name} (stored)",
            tofile=f"golden/{name} (now)",
        )
        pytest.fail(
            f"golden/{name} differs from what is shown now:\n{''.join(diff)}\n"
            "If the change is intended, run with AGENT_NB_UPDATE_GOLDEN=1 and review the new file.",
            pytrace=False,
        )


# -- what is shown ------------------------------------------------------------------------------


def users_only(messages: list[Message]) -> list[Message]:
    """The custom filter: what the user said, no agent's reply."""
    return [m for m in messages if m.role == "user" and m.author_name is None]


def three_agents() -> Workflow:
    """A chain on the offline mirror: ``full``, then ``custom`` (``users_only``), then ``last_agent``."""
    mirror = MirrorChatClient()
    planner = AgentExecutor(ChatAgent(mirror, name="planner", instructions="Split the request into steps."))
    researcher = AgentExecutor(
        ChatAgent(mirror, name="researcher", instructions="Find places for each step."),
        context_mode="custom",
        context_filter=users_only,
    )
    writer = AgentExecutor(ChatAgent(mirror, name="writer"), context_mode="last_agent")
    return WorkflowBuilder(start_executor=planner, name="golden").add_chain([planner, researcher, writer]).build()


async def test_the_whole_text_of_a_run():
    result = await three_agents().run(QUESTION)
    check_golden("run.trace.txt", normalise(str(result.trace)))
    check_golden("run.plain.txt", normalise(result._repr_mimebundle_()["text/plain"]))


async def test_the_structure_of_a_run_view():
    result = await three_agents().run(QUESTION)
    check_golden("run.html.outline", outline(result._repr_mimebundle_()["text/html"]))


def test_the_graph_of_a_workflow():
    bundle = three_agents()._repr_mimebundle_()
    check_golden("workflow.plain.txt", normalise(bundle["text/plain"]))
    check_golden("workflow.html.outline", outline(bundle["text/html"]))


async def test_who_has_a_fact():
    harness = await opening_hours().aplay(StandardHarness)
    bundle = harness.trace.who_has("9:00")._repr_mimebundle_()
    check_golden("who_has.txt", normalise(bundle["text/plain"]))
    check_golden("who_has.html.outline", outline(bundle["text/html"]))


async def test_the_findings_of_a_harness_run():
    harness = await opening_hours().aplay(StandardHarness)
    bundle = harness.gaps()._repr_mimebundle_()
    check_golden("findings.txt", normalise(bundle["text/plain"]))
    check_golden("findings.html.outline", outline(bundle["text/html"]))


async def test_the_displays_are_the_same_run_after_run():
    """What the golden files rely on: two fresh runs show exactly the same, before any normalising."""
    first, second = await three_agents().run(QUESTION), await three_agents().run(QUESTION)
    assert first._repr_mimebundle_() == second._repr_mimebundle_()
    a, b = await opening_hours().aplay(StandardHarness), await opening_hours().aplay(StandardHarness)
    assert a.gaps()._repr_mimebundle_() == b.gaps()._repr_mimebundle_()
    assert a.trace.who_has("9:00")._repr_mimebundle_() == b.trace.who_has("9:00")._repr_mimebundle_()


# -- the helpers themselves ---------------------------------------------------------------------


def test_the_outline_keeps_tags_classes_data_attributes_and_text_only():
    html = (
        '<div class="anb" style="color:red" id="x1"><style>.anb{color:red}</style>'
        '<section class="col" data-executor="a &amp; b"><h3>a   &amp;\n b</h3><br><rect x="1"/></section></div>'
    )
    assert outline(html).splitlines() == [
        'div class="anb"',
        "  style",
        '  section class="col" data-executor="a & b"',
        "    h3",
        '      "a & b"',
        "    br",
        "    rect",
    ]


def test_the_outline_refuses_html_that_does_not_nest():
    with pytest.raises(ValueError, match="</span> at line 1, column 12 closes <div>, the element open there"):
        outline("<div><b></b></span></div>")
    with pytest.raises(ValueError, match="left open"):
        outline("<div><p>text</p>")


def test_normalise_replaces_what_varies_and_nothing_else():
    text = "at 0x7f3a2b1c, id 3f2b9c1e-8a4d-4e6f-9b1a-2c3d4e5f6a7b, run 9f86d081884c7d65, took 12.5 ms and 2 s"
    assert normalise(text) == "at 0xADDR, id <id>, run <id>, took <duration> and <duration>"
    kept = "superstep 3 · 3 supersteps · ~11 tokens · t1.m2 · 9:00-17:00 · planner"
    assert normalise(kept) == kept


def test_a_missing_expectation_fails_instead_of_being_written(monkeypatch, tmp_path):
    monkeypatch.setitem(globals(), "GOLDEN", tmp_path)
    monkeypatch.setitem(globals(), "UPDATE", False)
    with pytest.raises(pytest.fail.Exception, match="no stored expectation"):
        check_golden("absent.txt", "anything")
    assert not (tmp_path / "absent.txt").exists()
    (tmp_path / "present.txt").write_text("one\ntwo\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception) as failed:
        check_golden("present.txt", "one\nthree")
    assert "-two\n+three" in str(failed.value)
    monkeypatch.setitem(globals(), "UPDATE", True)
    check_golden("written.txt", "new")
    assert (tmp_path / "written.txt").read_text(encoding="utf-8") == "new\n"
