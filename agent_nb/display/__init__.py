"""Displays: workflows, runs and traces as HTML, SVG, text and images.

Pure functions of data: nothing here calls IPython; options (limits, theme) are
arguments, so tests render exact output. Every string is escaped, nothing is loaded
from the network, no script runs. Objects display themselves in a notebook through the
render protocol (``agent_nb.rendering``): ``registry`` says which function here draws which
type, and these functions can also be called directly, for finer control.
"""

from . import registry  # noqa: F401 - registers the renderers (last: it imports the rest)
from .context import columns_html, snapshot_html, trace_html
from .graph import Graph, Link, Node, graph_of, graph_svg
from .html import escape, page
from .mermaid import to_dot, to_mermaid
from .run import RunView, run_view
from .state import MessagesView, messages_html, routes_html, session_html
from .timeline import timeline_html

__all__ = [
    "Graph",
    "Link",
    "MessagesView",
    "Node",
    "RunView",
    "columns_html",
    "escape",
    "graph_of",
    "graph_svg",
    "messages_html",
    "page",
    "routes_html",
    "run_view",
    "session_html",
    "snapshot_html",
    "timeline_html",
    "to_dot",
    "to_mermaid",
    "trace_html",
]
