"""Plots with matplotlib (imported here, on first use): context sizes, route costs, the graph as an image.

Each function returns a ``matplotlib.figure.Figure`` (no pyplot state is touched) that
draws itself as PNG in a notebook; ``figure.savefig("graph.png")`` writes it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure  # this module is imported only when a plot is asked for
from matplotlib.ticker import MaxNLocator

from ..messages import estimate_tokens
from .graph import NODE_H, NODE_W, Graph, layout

if TYPE_CHECKING:
    from ..workflow.result import RunResult

__all__ = ["context_sizes", "graph_figure", "route_costs"]


class NotebookFigure(Figure):
    """A figure that a notebook shows as an image without pyplot or ``%matplotlib inline``."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def _figure(**kwargs: Any) -> Figure:
    return NotebookFigure(**kwargs)


def context_sizes(results: Sequence[RunResult], *, measure: str = "messages") -> Figure:
    """Per agent executor, the size of its context in each turn (``measure``: ``messages`` or ``tokens``)."""
    if measure not in ("messages", "tokens"):
        raise ValueError(f"measure must be 'messages' or 'tokens', not {measure!r}")
    fig = _figure(figsize=(6, 3.2), layout="constrained")
    ax = fig.add_subplot()
    series: dict[str, list[float | None]] = {}
    for turn, result in enumerate(results):
        for s in result.trace:
            if s.given is None:
                continue
            size = len(s.given) if measure == "messages" else estimate_tokens(s.given)
            values = series.setdefault(s.executor_id, [None] * len(results))
            values[turn] = size
    turns = list(range(1, len(results) + 1))
    for eid, values in series.items():
        ax.plot(turns, [float("nan") if v is None else v for v in values], marker="o", label=eid)
    ax.set_xlabel("run")
    ax.set_ylabel(f"{measure} given")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 1.5 messages
    ax.set_title("context size per executor")
    ax.set_xticks(turns)
    if series:
        ax.legend(fontsize=8)
    return fig


def route_costs(results: Sequence[RunResult]) -> Figure:
    """Per route: the tokens used and the mean latency of the answers it gave."""
    tokens: dict[str, int] = {}
    latency: dict[str, list[float]] = {}
    for result in results:
        for s in result.trace:
            r = s.response
            if r is None:
                continue
            route = r.route or r.model or "unrouted"
            tokens[route] = tokens.get(route, 0) + (r.usage.total_tokens if r.usage else 0)
            latency.setdefault(route, []).append(s.duration * 1000)
    fig = _figure(figsize=(7, 3), layout="constrained")
    left, right = fig.subplots(1, 2)
    names = list(tokens)
    left.bar(names, [tokens[n] for n in names])
    left.set_title("tokens per route")
    right.bar(names, [sum(latency[n]) / len(latency[n]) for n in names])
    right.set_title("mean latency per route (ms)")
    return fig


def graph_figure(graph: Graph) -> Figure:
    """The graph as a static image (the same layout as the SVG), for documents and PNG export."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    lay = layout(graph)
    scale = 100.0
    fig = _figure(figsize=(max(lay.width / scale, 2.0), max(lay.height / scale, 1.5)))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.height, 0)
    ax.axis("off")
    colours = {"ran": "#dafbe1", "failed": "#ffebe9", "waiting": "#fff8c5", "not run": "#f6f8fa"}
    for link in graph.links:
        (sx, sy), (tx, ty) = lay.pos[link.source], lay.pos[link.target]
        back = (link.source, link.target) in lay.back
        start = (sx + NODE_W, sy + NODE_H / 2) if back else (sx + NODE_W / 2, sy + NODE_H)
        end = (tx + NODE_W, ty + NODE_H / 2) if back else (tx + NODE_W / 2, ty)
        style = "dashed" if link.conditional or back else "solid"
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, linestyle=style,
                                     connectionstyle="arc3,rad=-0.4" if back else "arc3", color="#57606a"))  # fmt: skip
        if link.label:
            ax.text((start[0] + end[0]) / 2 + 6, (start[1] + end[1]) / 2, link.label, fontsize=7, color="#57606a")
    for node in graph.nodes:
        x, y = lay.pos[node.id]
        ax.add_patch(FancyBboxPatch((x, y), NODE_W, NODE_H, boxstyle="round,pad=0,rounding_size=8",
                                    facecolor=colours.get(node.status or "", "#ffffff"),
                                    edgecolor="#0969da" if node.start else "#8c959f",
                                    linewidth=2.2 if node.start else 1.0))  # fmt: skip
        ax.text(x + 10, y + 18, node.id, fontsize=9, fontweight="bold", va="center")
        ax.text(x + 10, y + 34, node.caption, fontsize=7, color="#57606a", va="center")
    return fig
