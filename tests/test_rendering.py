"""The render protocol: every displayable type is drawn by a renderer of the display layer, loaded on first use."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import agent_nb
from agent_nb.errors import UsageError
from agent_nb.rendering import Displayable, forms_of, register, render


def displayable_types() -> list[type]:
    for info in pkgutil.walk_packages(agent_nb.__path__, "agent_nb."):
        if info.name.startswith("agent_nb.widgets") or info.name.endswith(".plots") or ".testing" in info.name:
            continue  # ipywidgets, matplotlib and pytest: not displayables of their own
        importlib.import_module(info.name)
    found, todo = set(), [Displayable]
    while todo:
        for sub in todo.pop().__subclasses__():
            # a dataclass(slots=True) replaces the class it decorates: keep the one its module names
            named = getattr(sys.modules[sub.__module__], sub.__qualname__, None) is sub
            if sub.__module__.startswith("agent_nb.") and named and sub not in found:
                found.add(sub)
            todo.append(sub)
    return sorted(found, key=lambda t: f"{t.__module__}.{t.__qualname__}")


def test_every_displayable_type_has_an_html_renderer() -> None:
    types = displayable_types()
    assert len(types) >= 17, [t.__name__ for t in types]  # the display layer's own views included
    assert [t.__name__ for t in types if "html" not in forms_of(t)] == []


def test_a_workflow_is_drawn_in_every_form_it_offers() -> None:
    from agent_nb import MirrorChatClient, SequentialBuilder

    workflow = SequentialBuilder(participants=[agent_nb.ChatAgent(MirrorChatClient(), name="a")]).build()
    assert forms_of(type(workflow)) == ["dot", "figure", "html", "mermaid"]
    assert workflow.to_mermaid().startswith("flowchart TD")
    assert workflow.to_dot().startswith("digraph")
    bundle = workflow._repr_mimebundle_()
    assert bundle["text/plain"] == str(workflow) == workflow.to_text()
    assert "<svg" in bundle["text/html"] and bundle["text/html"] == workflow._repr_html_()


class Note(Displayable):
    def __init__(self, text: str) -> None:
        self.text = text

    def to_text(self) -> str:
        return self.text


def test_a_type_without_a_renderer_shows_its_text_escaped() -> None:
    note = Note("<b>bold</b> & more")
    assert note._repr_mimebundle_() == {
        "text/plain": "<b>bold</b> & more",
        "text/html": "<pre>&lt;b&gt;bold&lt;/b&gt; &amp; more</pre>",
    }
    assert str(note) == "<b>bold</b> & more"


def test_a_registered_renderer_draws_the_type_and_its_subclasses() -> None:
    class Loud(Note):
        pass

    register(Note, "html", lambda n, **options: f"<p>{n.text.upper()}</p>")
    try:
        assert Loud("hi")._repr_html_() == "<p>HI</p>"
        assert forms_of(Loud) == ["html"]
    finally:
        from agent_nb import rendering

        del rendering._RENDERERS[(Note, "html")]


def test_an_unknown_form_names_the_forms_there_are() -> None:
    from agent_nb import AgentSession

    with pytest.raises(UsageError, match=r"no renderer draws a AgentSession as 'svg' \(its forms: html\)"):
        render(AgentSession("s"), "svg")


def test_text_plain_is_always_there_and_html_only_when_asked_for() -> None:
    from agent_nb import AgentSession

    session = AgentSession("s1")
    assert set(session._repr_mimebundle_(include=["text/html"])) == {"text/plain", "text/html"}
    assert session._repr_mimebundle_(exclude=["text/html"]) == {"text/plain": repr(session)}


def test_the_display_layer_is_loaded_by_the_first_display_not_by_imports() -> None:
    code = (
        "import sys\n"
        "import agent_nb, agent_nb.harness, agent_nb.routing, agent_nb.workflow.checkpoints\n"
        "from agent_nb import ChatAgent, MirrorChatClient, SequentialBuilder\n"
        "wf = SequentialBuilder(participants=[ChatAgent(MirrorChatClient(), name='a')]).build()\n"
        "result = wf.run_sync('hi')\n"
        "print(str(result).splitlines()[0], 'agent_nb.display' in sys.modules)\n"
        "html = result._repr_mimebundle_()['text/html']\n"
        "print('agent_nb.display' in sys.modules, 'matplotlib' in sys.modules, '<svg' in html)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == [
        "RunResult(status='completed', outputs=1, snapshots=1) False",
        "True False True",
    ]
