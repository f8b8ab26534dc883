"""Which renderer draws which type: the table behind every agent_nb object's display.

The types live in their own layers and know nothing of HTML (see ``agent_nb.rendering``);
importing ``agent_nb.display`` runs this module once and registers every renderer.
"""

from __future__ import annotations

from typing import Any

from ..dialogue import Dialogue
from ..harness.gaps import Findings
from ..harness.harness import Harness, Turn
from ..harness.views import Comparison, HarnessView
from ..rendering import register
from ..routing import RoutingChatClient
from ..sessions import AgentSession
from ..trace import ContextSnapshot, ContextTable, FactTable, Trace
from ..workflow import RunResult, Workflow
from .context import snapshot_html, trace_html
from .graph import Direction, graph_of, workflow_html
from .harness import comparison_html, harness_html, harness_view_html, turn_html
from .html import container
from .mermaid import to_dot, to_mermaid
from .run import RunView, run_view
from .state import MessagesView, routes_html, session_html
from .tables import context_table_html, fact_table_html, findings_html
from .transcript import dialogue_page

__all__: list[str] = []


def _figure(workflow: Workflow, direction: Direction = "TB") -> Any:
    from .plots import graph_figure  # matplotlib only when a figure is asked for

    return graph_figure(graph_of(workflow), direction=direction)


register(AgentSession, "html", session_html)
register(RoutingChatClient, "html", routes_html)
register(ContextSnapshot, "html", lambda s: container(snapshot_html(s)))
register(Trace, "html", trace_html)
register(FactTable, "html", fact_table_html)
register(ContextTable, "html", context_table_html)
register(Workflow, "html", workflow_html)
register(Workflow, "mermaid", lambda w, direction="TD": to_mermaid(graph_of(w), direction=direction))
register(Workflow, "dot", lambda w: to_dot(graph_of(w)))
register(Workflow, "figure", _figure)
register(RunResult, "html", run_view)
register(RunView, "html", RunView.html)
register(MessagesView, "html", MessagesView.html)
register(Turn, "html", turn_html)
register(Harness, "html", harness_html)
register(HarnessView, "html", harness_view_html)
register(Comparison, "html", comparison_html)
register(Findings, "html", findings_html)
register(Dialogue, "page", dialogue_page)
