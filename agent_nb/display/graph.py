"""The workflow graph: a neutral description, a layered layout, and inline SVG.

The layout is computed here in Python (no Graphviz, no JavaScript, no network): cycles are
broken at their back edges, nodes are put in layers by their longest path from the start,
ordered within layers to reduce crossings, and edges are drawn as curves. Conditional
edges are dashed and labelled, back edges are dashed too (a reply to the layer above runs beside
the edge down; a longer cycle curves around the right side), the start is marked. Layers go down
the page (``direction="TB"``) or across it (``"LR"``, compact: a chain of agents is one row, so a
projector shows the graph and the columns on one screen). In an HTML output the SVG is also given
as a picture, for the renderers that remove inline SVG (``graph_html``).
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..contents import shorten
from .html import container, escape, stylesheet

if TYPE_CHECKING:
    from ..trace import Trace
    from ..workflow.workflow import Workflow

__all__ = ["Graph", "Link", "Node", "graph_html", "graph_of", "graph_svg", "workflow_html"]

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 196, 46, 28, 40, 16
LR_GAP_X, LR_GAP_Y = 44, 14
"""Across the page, layers stand side by side: room between them for the arrows, little between rows."""

Direction = Literal["TB", "LR"]


@dataclass(frozen=True)
class Node:
    """One executor as drawn."""

    id: str
    kind: str
    mode: str | None = None
    """Context mode (with the filter's name for ``custom``) of agent executors."""
    start: bool = False
    status: str | None = None
    """``not run``, ``restored`` (put back from a checkpoint, not run since), ``ran``, ``warned`` (ran,
    with a warning), ``failed`` or ``waiting``; ``None`` when there is no run to show."""
    inner: Graph | None = None
    """A sub-workflow's own graph (with its run's statuses), drawn inside the node's box."""

    @property
    def caption(self) -> str:
        return self.kind if self.mode is None else f"{self.kind} · {self.mode}"


@dataclass(frozen=True)
class Link:
    """One edge as drawn."""

    source: str
    target: str
    kind: str = "direct"
    label: str | None = None
    conditional: bool = False


@dataclass(frozen=True)
class Graph:
    """What a display needs to know of a workflow (and, for a run, what each executor did)."""

    name: str
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    start: str

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)


def _mode_of(executor: object, ran: str | None = None) -> str | None:
    """The caption's mode: the one a run used (``ran``), or the executor's own.

    A sub-workflow says what it holds, and its mode when it is not ``full``.
    """
    mode = ran
    if mode is None and (own := getattr(executor, "context_mode", None)) is not None:
        fn = getattr(executor, "context_filter", None)
        mode = f"custom({getattr(fn, '__name__', 'filter')})" if own == "custom" and fn is not None else str(own)
    if getattr(executor, "kind", None) == "workflow":
        holds = f"{len(executor.workflow.executors)} executors"  # type: ignore[attr-defined]
        return holds if mode in (None, "full") else f"{holds} · {mode}"
    return mode


def _status(trace: Trace, executor_id: str) -> str:
    snaps = [s for s in trace if s.executor_id == executor_id]
    if not snaps:
        return "restored" if executor_id in trace.restored else "not run"
    if any(s.error is not None for s in snaps):
        return "failed"
    if snaps[-1].status == "waiting":
        return "waiting"
    if any(s.warnings for s in snaps):
        return "warned"
    return "ran" if any(s.status in ("answered", "ran") for s in snaps) else "waiting"


def _inner(executor: object, eid: str, trace: Trace | None) -> Graph | None:
    """A sub-workflow node's own graph; with a trace, the statuses of its last run inside this one."""
    if getattr(executor, "kind", None) != "workflow":
        return None
    ran = [s.inner for s in trace if s.executor_id == eid and s.inner is not None] if trace is not None else []
    return graph_of(executor.workflow, ran[-1] if ran else None)  # type: ignore[attr-defined]


def graph_of(workflow: Workflow, trace: Trace | None = None) -> Graph:
    """The graph of ``workflow``; with a ``trace``, each node's status and the modes that run used."""
    nodes = []
    for eid, ex in workflow.executors.items():
        mode = _mode_of(ex)
        status = None
        if trace is not None:
            status = _status(trace, eid)
            ran = [s.mode for s in trace if s.executor_id == eid and s.mode]
            if ran:  # the mode of that run, which may differ from the executor's mode now
                mode = _mode_of(ex, ran[-1])
        nodes.append(Node(eid, ex.kind, mode, eid == workflow.start_executor_id, status, _inner(ex, eid, trace)))
    links = tuple(
        Link(e.source, e.target, e.kind, e.label, e.condition is not None or e.label is not None)
        for e in workflow.edges
    )
    return Graph(workflow.name, tuple(nodes), links, workflow.start_executor_id)


# -- layout ------------------------------------------------------------------------------


@dataclass
class _Layout:
    pos: dict[str, tuple[float, float]] = field(default_factory=dict)
    size: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Each node's width and height: a sub-workflow's box holds its own graph."""
    inner: dict[str, _Layout] = field(default_factory=dict)
    """The layout of each sub-workflow's own graph, inside its box."""
    back: set[tuple[str, str]] = field(default_factory=set)
    layer: dict[str, int] = field(default_factory=dict)
    right: float = 0.0
    """The right edge of the widest layer (the bottom edge of the tallest, across): a back edge curves
    beyond it, past every node."""
    width: float = 0.0
    height: float = 0.0
    direction: Direction = "TB"


def _back_edges(graph: Graph) -> set[tuple[str, str]]:
    """Edges that close a cycle, found by a depth-first walk from the start (iterative: 50 deep is fine)."""
    out: dict[str, list[str]] = {n.id: [] for n in graph.nodes}
    for link in graph.links:
        out[link.source].append(link.target)
    back, done, on_path = set(), set(), set()
    roots = [graph.start] + [n.id for n in graph.nodes if n.id != graph.start]
    for root in roots:
        if root in done:
            continue
        stack = [(root, iter(out[root]))]
        on_path.add(root)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                back.add((node, child))
            elif child not in done:
                on_path.add(child)
                stack.append((child, iter(out[child])))
    return back


def _layers(graph: Graph, back: set[tuple[str, str]]) -> list[list[str]]:
    ids = [n.id for n in graph.nodes]
    forward = [(lk.source, lk.target) for lk in graph.links if (lk.source, lk.target) not in back]
    rank = dict.fromkeys(ids, 0)
    for _ in ids:  # longest path by relaxation; a DAG settles within len(ids) rounds
        changed = False
        for s, t in forward:
            if rank[t] < rank[s] + 1:
                rank[t], changed = rank[s] + 1, True
        if not changed:
            break
    layers: list[list[str]] = [[] for _ in range(max(rank.values(), default=0) + 1)]
    for eid in ids:
        layers[rank[eid]].append(eid)
    preds = {eid: [s for s, t in forward if t == eid] for eid in ids}
    succs = {eid: [t for s, t in forward if s == eid] for eid in ids}
    for _ in range(4):  # barycentre sweeps, down then up
        for sweep, neighbours, step in ((range(1, len(layers)), preds, -1), (range(len(layers) - 2, -1, -1), succs, 1)):
            for i in sweep:
                where = {eid: k for k, eid in enumerate(layers[i + step])}
                now = {eid: float(k) for k, eid in enumerate(layers[i])}
                layers[i].sort(key=functools.partial(_centre, where=where, neighbours=neighbours, now=now))
    return layers


def _centre(eid: str, where: dict[str, int], neighbours: dict[str, list[str]], now: dict[str, float]) -> float:
    """The mean position of a node's neighbours in the next layer (its own place when it has none)."""
    spots = [where[n] for n in neighbours[eid] if n in where]
    return sum(spots) / len(spots) if spots else now[eid]


def check_direction(direction: str) -> Direction:
    if direction not in ("TB", "LR"):
        raise ValueError(f"direction must be 'TB' (layers down the page) or 'LR' (across it), not {direction!r}")
    return direction  # type: ignore[return-value]


NEST_HEAD = 28
"""Room at the top of a sub-workflow's box for its own id and caption, above its graph (whose margin adds more)."""


def layout(graph: Graph, direction: Direction = "TB") -> _Layout:
    check_direction(direction)
    back = _back_edges(graph)
    layers = _layers(graph, back)
    result = _Layout(back=back, direction=direction)
    for node in graph.nodes:
        result.size[node.id] = (NODE_W, NODE_H)
        if node.inner is not None:
            sub = result.inner[node.id] = layout(node.inner, direction)
            result.size[node.id] = (max(NODE_W, sub.width), NEST_HEAD + sub.height)
    side = 40 if back else 0  # room for back edges curving around the right side (below, across)
    across = direction == "LR"
    along, gap_along, gap_between = (1, LR_GAP_Y, LR_GAP_X) if across else (0, GAP_X, GAP_Y)
    extent = [sum(result.size[e][along] for e in layer) + (len(layer) - 1) * gap_along for layer in layers]
    widest = max(extent, default=0.0)
    at = float(PAD)  # where the next layer starts, down the page (across it)
    for r, layer in enumerate(layers):
        k = PAD + (widest - extent[r]) / 2  # a layer is centred on the widest (tallest, across)
        for eid in layer:
            result.pos[eid] = (at, k) if across else (k, at)
            result.layer[eid] = r
            k += result.size[eid][along] + gap_along
        at += max(result.size[e][1 - along] for e in layer) + gap_between
    result.right = PAD + widest
    if across:
        result.width = at - gap_between + PAD
        result.height = result.right + PAD + side
    else:
        result.width = PAD * 2 + widest + side
        result.height = at - gap_between + PAD
    return result


# -- SVG ---------------------------------------------------------------------------------

_STYLE = stylesheet("graph")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _path_across(link: Link, lay: _Layout) -> tuple[str, tuple[float, float], bool]:
    """An edge's path and label spot when layers stand side by side; whether it is drawn dashed."""
    (sx, sy), (tx, ty) = lay.pos[link.source], lay.pos[link.target]
    (sw, sh), (tw, th) = lay.size[link.source], lay.size[link.target]
    back = (link.source, link.target) in lay.back
    if back and lay.layer[link.source] == lay.layer[link.target] + 1:
        # a reply to the layer just before: under the way there, right to left
        x1, y1, x2, y2 = sx, sy + sh / 2 + 12, tx + tw + 6, ty + th / 2 + 12
        mid = (x1 + x2) / 2
        return f"M{x1:.0f},{y1:.0f} C{mid:.0f},{y1:.0f} {mid:.0f},{y2:.0f} {x2:.0f},{y2:.0f}", (mid, y1 + 12), True
    if back or link.source == link.target:
        x1, y1, x2, y2 = sx + sw / 2, sy + sh, tx + tw / 2 + 8, ty + th
        bulge = (y1 + 30) if link.source == link.target else max(lay.right, y1, y2) + 30
        d = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{bulge:.0f} {x2:.0f},{bulge:.0f} {x2:.0f},{y2 + 6:.0f}"
        return d, ((x1 + x2) / 2, bulge - 4), True
    x1, y1, x2, y2 = sx + sw, sy + sh / 2, tx, ty + th / 2
    mid = (x1 + x2) / 2
    d = f"M{x1:.0f},{y1:.0f} C{mid:.0f},{y1:.0f} {mid:.0f},{y2:.0f} {x2 - 6:.0f},{y2:.0f}"
    return d, (x1 + 4, (y1 + y2) / 2 - 6), link.conditional


def _edge(link: Link, lay: _Layout) -> str:
    if lay.direction == "LR":
        d, label_xy, dashed = _path_across(link, lay)
        return _edge_svg(link, d, label_xy, ' stroke-dasharray="5 4"' if dashed else "")
    (sx, sy), (tx, ty) = lay.pos[link.source], lay.pos[link.target]
    (sw, sh), (tw, th) = lay.size[link.source], lay.size[link.target]
    dash = ' stroke-dasharray="5 4"' if link.conditional else ""
    back = (link.source, link.target) in lay.back
    if back and lay.layer[link.source] == lay.layer[link.target] + 1:
        # a reply to the layer just above (a component answering its caller): beside the way down
        x1, y1 = sx + sw / 2 + 14, sy
        x2, y2 = tx + tw / 2 + 14, ty + th
        mid = (y1 + y2) / 2
        d = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{mid:.0f} {x2:.0f},{mid:.0f} {x2:.0f},{y2 + 6:.0f}"
        label_xy = ((x1 + x2) / 2 + 4, mid - 4)
        dash = ' stroke-dasharray="5 4"'
    elif back or link.source == link.target:
        x1, y1 = sx + sw, sy + sh / 2
        x2, y2 = tx + tw, ty + th / 2
        # a cycle: around every node, so it crosses none; a loop on itself stays beside its node
        bulge = (x1 + 34) if link.source == link.target else max(lay.right, x1, x2) + 30
        d = f"M{x1:.0f},{y1:.0f} C{bulge:.0f},{y1:.0f} {bulge:.0f},{y2:.0f} {x2 + 6:.0f},{y2:.0f}"
        label_xy = (bulge - 4, (y1 + y2) / 2)
        dash = ' stroke-dasharray="5 4"'
    else:
        x1, y1 = sx + sw / 2, sy + sh
        x2, y2 = tx + tw / 2, ty
        mid = (y1 + y2) / 2
        d = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{mid:.0f} {x2:.0f},{mid:.0f} {x2:.0f},{y2 - 6:.0f}"
        label_xy = ((x1 + x2) / 2 + 4, mid + 4)
    return _edge_svg(link, d, label_xy, dash)


def _edge_svg(link: Link, d: str, label_xy: tuple[float, float], dash: str) -> str:
    out = (
        f'<path class="e {escape(link.kind)}" d="{d}" stroke="#57606a" fill="none"{dash} marker-end="url(#anb-arrow)"/>'
    )
    if link.label:
        x, y = label_xy
        out += f'<text class="lbl" x="{x:.0f}" y="{y:.0f}" font-size="11">{escape(_clip(link.label, 24))}</text>'
    return out


def _joins(graph: Graph, lay: _Layout) -> list[str]:
    """One "all of" mark above each fan-in target: it waits for every source."""
    out = []
    for target in dict.fromkeys(lk.target for lk in graph.links if lk.kind == "fan_in"):
        x, y = lay.pos[target]
        x, y = (x - 6, y - 4) if lay.direction == "LR" else (x + lay.size[target][0] / 2 + 10, y - 8)
        out.append(f'<text class="lbl" x="{x:.0f}" y="{y:.0f}" font-size="11">all of</text>')
    return out


def _node(node: Node, lay: _Layout) -> str:
    x, y = lay.pos[node.id]
    w, h = lay.size[node.id]
    classes = ["n"]
    if node.start:
        classes.append("start")
    if node.status:
        classes.append(node.status.replace(" ", ""))
    if node.inner is not None:
        classes.append("nest")
    title = f"{node.id} — {node.caption}" + (f" — {node.status}" if node.status else "")
    # a sub-workflow's box is tinted, not filled: its own nodes, drawn on it, keep their colours
    tint = ' fill-opacity="0.35"' if node.inner is not None else ""
    parts = [
        f'<g class="{" ".join(classes)}"><title>{escape(title)}</title>',
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h:.0f}" rx="8" fill="#fff" stroke="#8c959f"{tint}/>',
        f'<text class="id" x="{x + 10:.0f}" y="{y + 19:.0f}" font-size="13">{escape(_clip(node.id, 22))}</text>',
        f'<text class="cap" x="{x + 10:.0f}" y="{y + 36:.0f}" font-size="11">{escape(_clip(node.caption, 32))}</text>',
    ]
    if node.start:
        parts.append(f'<path class="mark" d="M{x - 9:.0f},{y + 15:.0f} l7,8 l-7,8 z"/>')
    if node.status:
        parts.append(
            f'<text class="cap" x="{x + w - 8:.0f}" y="{y + 19:.0f}" text-anchor="end" font-size="11">'
            f"{escape(node.status)}</text>"
        )
    parts.append("</g>")
    if node.inner is not None:  # beside the node's group, not in it: the status styles of the box stay its own
        sub = lay.inner[node.id]
        parts.append(
            f'<g class="inner" transform="translate({x + (w - sub.width) / 2:.0f},{y + NEST_HEAD:.0f})">'
            f"{_body(node.inner, sub)}</g>"
        )
    return "".join(parts)


def _body(graph: Graph, lay: _Layout) -> str:
    """A laid-out graph's edges, fan-in marks and nodes (a sub-workflow's inside its box)."""
    return (
        "".join(_edge(link, lay) for link in graph.links)
        + "".join(_joins(graph, lay))
        + "".join(_node(n, lay) for n in graph.nodes)
    )


def graph_svg(graph: Graph, *, max_nodes: int = 200, direction: Direction = "TB") -> str:
    """The graph as one inline ``<svg>`` (its own stylesheet scoped to ``.anb-graph``), layers down or across."""
    check_direction(direction)
    if len(graph.nodes) > max_nodes:
        count = f"{len(graph.nodes)} executors (more than {max_nodes} are not drawn)"
        return f'<p class="meta">{escape(graph.name)}: {count}</p>'
    lay = layout(graph, direction)
    summary = f"workflow {graph.name}: {len(graph.nodes)} executors, {len(graph.links)} edges, start {graph.start}"
    return (
        f'<svg class="anb-graph" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(summary)}" '
        f'width="{lay.width:.0f}" height="{lay.height:.0f}" viewBox="0 0 {lay.width:.0f} {lay.height:.0f}">'
        f"<style>{_STYLE}</style>"
        '<defs><marker id="anb-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker></defs>'
        + _body(graph, lay)
        + "</svg>"
    )


def graph_html(graph: Graph, *, max_nodes: int = 200, direction: Direction = "TB") -> str:
    """The graph for an HTML output: inline SVG where the notebook keeps it, a picture where it does not.

    An untrusted notebook (and any sanitizing renderer) removes inline SVG and ``<style>``, and
    keeps ``<img>`` with a data URL and inline ``style`` attributes. So the SVG sits in a block
    hidden by an inline style, which the display's stylesheet overrides, and the same SVG follows
    as an image, which the stylesheet hides: styled, the live SVG shows; sanitized, the picture.
    """
    svg = graph_svg(graph, max_nodes=max_nodes, direction=direction)
    if not svg.startswith("<svg"):
        return svg  # too many executors: a line of text, legible anywhere
    picture = base64.b64encode(svg.encode()).decode("ascii")
    edges = ", ".join(f"{link.source} → {link.target}" for link in graph.links)
    alone = ", ".join(n.id for n in graph.nodes)
    alt = f"workflow {graph.name}: " + (edges or f"{'executor' if len(graph.nodes) == 1 else 'executors'} {alone}")
    return (
        f'<div class="graph-live" style="display:none">{svg}</div>'
        f'<img class="graph-still" alt="{escape(shorten(alt, 400))}" style="background:#fff;border-radius:6px" '
        f'src="data:image/svg+xml;base64,{picture}">'
    )


def workflow_html(workflow: Workflow, *, direction: Direction = "TB") -> str:
    """A workflow's graph as a display (stylesheet included)."""
    return container(graph_html(graph_of(workflow), direction=direction))
