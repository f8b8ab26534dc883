"""Plots with matplotlib (imported here, on first use): context sizes, route costs, the graph as an image.

Each function returns a ``matplotlib.figure.Figure`` (no pyplot state is touched) that
draws itself as PNG in a notebook; ``figure.savefig("graph.png")`` writes it.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure  # this module is imported only when a plot is asked for
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

from ..messages import estimate_tokens
from .graph import NEST_HEAD, Direction, Graph, layout
from .runs import labelled_runs

if TYPE_CHECKING:
    from ..workflow.result import RunResult

__all__ = ["context_sizes", "graph_figure", "route_costs", "themed"]


class NotebookFigure(Figure):
    """A figure that a notebook shows as an image without pyplot or ``%matplotlib inline``."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def _figure(**kwargs: Any) -> Figure:
    return NotebookFigure(**kwargs)


_INK = {"auto": "#8b949e", "light": "#1f2328", "dark": "#e6edf3"}
_PAPER = {"auto": "none", "light": "#ffffff", "dark": "#0d1117"}


def themed(fig: Figure, theme: str = "auto") -> Figure:
    """Colour a drawn figure for the notebook.

    ``"auto"`` is transparent with a grey that reads on a light and on a dark notebook alike (a
    picture cannot follow the theme); ``"light"`` and ``"dark"`` are solid.
    """
    if theme not in _INK:
        raise ValueError(f"theme must be 'auto', 'light' or 'dark', not {theme!r}")
    ink, paper = _INK[theme], _PAPER[theme]
    fig.patch.set_facecolor(paper)
    fig.patch.set_alpha(0.0 if paper == "none" else 1.0)
    for text in fig.findobj(Text):
        text.set_color(ink)  # titles, labels, ticks, legends
    for ax in fig.axes:
        ax.set_facecolor(paper)
        ax.tick_params(colors=ink, which="both")
        for spine in ax.spines.values():
            spine.set_color(ink)
        legend = ax.get_legend()
        if legend is not None:
            legend.get_frame().set_facecolor(paper)
            legend.get_frame().set_edgecolor(ink)
    return fig


def context_sizes(
    results: Sequence[RunResult] | Mapping[str, RunResult],
    *,
    measure: str = "messages",
    labels: Sequence[str] | None = None,
    theme: str = "auto",
) -> Figure:
    """Per agent executor, the size of what its model received in each run, as bars grouped by run.

    ``measure``: ``messages`` or ``tokens`` (estimated). The runs are named by what differs between
    them (a context mode, a route, the input), by a mapping's keys, or by ``labels``.
    """
    if measure not in ("messages", "tokens"):
        raise ValueError(f"measure must be 'messages' or 'tokens', not {measure!r}")
    runs, names = labelled_runs(results, labels)
    series: dict[str, list[float]] = {}
    for turn, result in enumerate(runs):
        for s in result.trace:
            if s.given is None and s.model_input is None:
                continue  # it only cached its input: its model got nothing
            context = s.context()
            size = len(context) if measure == "messages" else estimate_tokens(context)
            series.setdefault(s.executor_id, [math.nan] * len(runs))[turn] = float(size)
    fig = _figure(figsize=(max(6.0, 1.6 * len(runs) + 2), 3.4), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / max(len(series), 1)
    for k, (eid, values) in enumerate(series.items()):
        spots = [i - 0.4 + width * (k + 0.5) for i in range(len(runs))]
        bars = ax.bar(spots, values, width, label=eid)
        ax.bar_label(bars, fmt="%d", fontsize=7, padding=1)
    ax.set_xticks(range(len(runs)), [_wrapped(n) for n in names], fontsize=8)
    ax.set_ylabel(f"{measure} its model received", fontsize=9)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 1.5 messages
    ax.set_title("context size per executor, by run", fontsize=10)
    if series:
        ax.legend(fontsize=8, title="executor", title_fontsize=8)
    return themed(fig, theme)


def _wrapped(label: str, width: int = 18) -> str:
    """A run's label on an axis: its parts on lines of their own, long ones wrapped."""
    return "\n".join(textwrap.fill(part, width, break_long_words=False) for part in label.split(" · "))


def route_costs(results: Sequence[RunResult], *, theme: str = "auto") -> Figure:
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
    return themed(fig, theme)


def graph_figure(graph: Graph, *, direction: Direction = "TB") -> Figure:
    """The graph as a static image (the same layout as the SVG), for documents and PNG export."""
    lay = layout(graph, direction)
    scale = 100.0
    fig = _figure(figsize=(max(lay.width / scale, 2.0), max(lay.height / scale, 1.5)))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.height, 0)
    ax.axis("off")
    _draw_graph(ax, graph, lay, 0.0, 0.0)
    return fig


_IDLE = "#f6f8fa"
_FILLS = {"ran": "#dafbe1", "failed": "#ffebe9", "waiting": "#fff8c5", "not run": _IDLE, "restored": _IDLE}
_FILLS["warned"] = _FILLS["waiting"]


def _draw_graph(ax: Any, graph: Graph, lay: Any, dx: float, dy: float) -> None:
    """Draw a laid-out graph at ``(dx, dy)``; a sub-workflow's box, then its own graph inside it."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    across = lay.direction == "LR"
    for link in graph.links:
        (sx, sy), (tx, ty) = lay.pos[link.source], lay.pos[link.target]
        (sw, sh), (tw, th) = lay.size[link.source], lay.size[link.target]
        sx, sy, tx, ty = sx + dx, sy + dy, tx + dx, ty + dy
        back = (link.source, link.target) in lay.back
        if across:
            start = (sx + sw / 2, sy + sh) if back else (sx + sw, sy + sh / 2)
            end = (tx + tw / 2, ty + th) if back else (tx, ty + th / 2)
        else:
            start = (sx + sw, sy + sh / 2) if back else (sx + sw / 2, sy + sh)
            end = (tx + tw, ty + th / 2) if back else (tx + tw / 2, ty)
        style = "dashed" if link.conditional or back else "solid"
        span = abs(start[0] - end[0]) if across else 0.0
        rad = min(0.4, 70 / span) if span else 0.4  # across, a cycle's curve stays in the room below the nodes
        bend = f"arc3,rad={-rad:.3f}" if back else "arc3"
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, linestyle=style,
                                     connectionstyle=bend, color="#57606a"))  # fmt: skip
        if link.label:
            below = rad * span / 2 + 8 if across and back else 0.0  # under a cycle's curve
            x, y = (start[0] + end[0]) / 2 + 6, (start[1] + end[1]) / 2 + below
            ax.text(x, y, link.label, fontsize=7, color="#57606a")
    for node in graph.nodes:
        x, y = lay.pos[node.id]
        x, y = x + dx, y + dy
        w, h = lay.size[node.id]
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=8",
                                    facecolor=_FILLS.get(node.status or "", "#ffffff"),
                                    alpha=0.35 if node.inner is not None else 1.0,
                                    edgecolor="#0969da" if node.start else "#8c959f",
                                    linewidth=2.2 if node.start else 1.0))  # fmt: skip
        ax.text(x + 10, y + 18, node.id, fontsize=9, fontweight="bold", va="center")
        ax.text(x + 10, y + 34, node.caption, fontsize=7, color="#57606a", va="center")
        if node.inner is not None:
            sub = lay.inner[node.id]
            _draw_graph(ax, node.inner, sub, x + (w - sub.width) / 2, y + NEST_HEAD)
