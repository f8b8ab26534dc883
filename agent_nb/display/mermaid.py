"""The workflow graph as text for documents: Mermaid and Graphviz DOT.

Both are plain text; nothing here renders or calls a service. Ids are quoted or replaced
by safe node names, labels escaped for each language. The Mermaid text is a ``str`` that a
notebook also offers as ``text/vnd.mermaid``: JupyterLab (4.1 and later) draws it as a diagram,
with its own bundled Mermaid, and every other front end shows the text.
"""

from __future__ import annotations

import re
from typing import Any

from .graph import Graph

__all__ = ["Mermaid", "to_dot", "to_mermaid"]


class Mermaid(str):
    """Mermaid source: ``print()`` it or paste it anywhere; as a cell's value, the front end draws it where it can."""

    __slots__ = ()

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        return {"text/vnd.mermaid": str(self), "text/plain": str(self)}

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))  # the text itself, not a quoted str repr


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def to_mermaid(graph: Graph, *, direction: str = "TD") -> Mermaid:
    """A Mermaid ``flowchart``: conditional edges dashed and labelled, the start node marked, sub-workflows boxed."""
    if direction not in ("TD", "TB", "LR", "RL", "BT"):
        raise ValueError(f"direction must be one of TD, TB, LR, RL, BT (Mermaid's), not {direction!r}")
    lines = [f"flowchart {direction}", *_mermaid_body(graph, "n", "    ")]
    return Mermaid("\n".join(lines) + "\n")


def _mermaid_body(graph: Graph, prefix: str, indent: str) -> list[str]:
    """Nodes and edges; a sub-workflow as a ``subgraph`` holding its own (edges to it join its box)."""
    names = {n.id: f"{prefix}{i}" for i, n in enumerate(graph.nodes)}
    lines = []
    for n in graph.nodes:
        start = "▶ " if n.start else ""
        label = f"{start}{_mermaid_text(n.id)}<br/><small>{_mermaid_text(n.caption)}</small>"
        if n.inner is None:
            lines.append(f'{indent}{names[n.id]}["{label}"]')
            continue
        lines.append(f'{indent}subgraph {names[n.id]}["{label}"]')
        lines += _mermaid_body(n.inner, f"{names[n.id]}_", indent + "    ")
        lines.append(f"{indent}end")
    for link in graph.links:
        arrow = "-.->" if link.conditional else "-->"
        text = link.label or ("all of" if link.kind == "fan_in" else "")
        label = f'|"{_mermaid_text(text)}"|' if text else ""
        lines.append(f"{indent}{names[link.source]} {arrow}{label} {names[link.target]}")
    return lines


def _dot_id(text: str) -> str:
    return '"' + re.sub(r'(["\\])', r"\\\1", text) + '"'


def to_dot(graph: Graph) -> str:
    """A Graphviz ``digraph`` (for tools that have Graphviz; agent_nb itself never needs it)."""
    lines = [f"digraph {_dot_id(graph.name)} {{", "    rankdir=TB;", '    node [shape=box, style="rounded"];']
    for n in graph.nodes:
        node_attrs = f"label={_dot_id(n.id + chr(10) + n.caption)}"
        if n.start:
            node_attrs += ", penwidth=2.5"
        lines.append(f"    {_dot_id(n.id)} [{node_attrs}];")
    for link in graph.links:
        attrs: list[str] = []
        if link.conditional:
            attrs.append("style=dashed")
        text = link.label or ("all of" if link.kind == "fan_in" else "")
        if text:
            attrs.append(f"label={_dot_id(text)}")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"    {_dot_id(link.source)} -> {_dot_id(link.target)}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"
