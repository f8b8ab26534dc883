"""The timeline: supersteps across, executors down, what each did and how long it took.

Drawing it costs time linear in the trace: the snapshots are grouped by executor and superstep in
one pass, and a row is drawn from its own snapshots only. Each executor has one cell per superstep,
except that ``SPAN`` or more empty cells in a row are drawn as one cell spanning them, so a chain of
*n* executors (*n* rows across *n* supersteps) stays about *n* cells, not *n²*. A table of fewer
than ``SPAN`` supersteps is drawn exactly as one cell per superstep.
"""

from __future__ import annotations

from ..trace import ContextSnapshot, Trace
from .html import Theme, container, escape

__all__ = ["SPAN", "timeline_html"]

_MARKS = {"answered": "●", "ran": "●", "cached": "○", "failed": "✗"}

SPAN = 12
"""A run of at least this many empty cells in a row is drawn as one cell (``colspan``)."""


def _cell(snaps: list[ContextSnapshot], longest: float, durations: bool) -> str:
    parts = []
    for s in snaps:
        status = escape(s.status)
        mark = f'<span class="status {status}" title="{status}">{_MARKS.get(s.status, "·")}</span>'
        if durations:
            width = max(int(60 * s.duration / longest), 1)
            mark += f' <span class="bar" style="width:{width}px"></span>{s.duration * 1000:.1f} ms'
        parts.append(mark)
    return f"<td>{'<br>'.join(parts)}</td>"


def _empty(n: int) -> str:
    if n >= SPAN:
        return f'<td colspan="{n}"></td>'
    return "<td></td>" * n


def timeline_html(trace: Trace, *, durations: bool = True, theme: Theme = "auto") -> str:
    """A table of supersteps × executors; ``durations=False`` leaves timings out (stable output)."""
    cells: dict[str, dict[int, list[ContextSnapshot]]] = {eid: {} for eid in trace.executor_ids}
    durations_seen: list[float] = []
    supersteps: set[int] = set()
    for s in trace:  # the only pass over the snapshots
        durations_seen.append(s.duration)
        supersteps.add(s.superstep)
        row = cells.get(s.executor_id)
        if row is not None:  # an executor the trace does not list has no row
            row.setdefault(s.superstep, []).append(s)
    longest = max(durations_seen, default=0.0) or 1.0
    steps = sorted(supersteps)
    column = {step: i for i, step in enumerate(steps)}
    head = "".join(f"<th>{n}</th>" for n in steps)
    rows = []
    for eid in trace.executor_ids:
        by_step = cells[eid]
        parts = []
        done = 0  # columns drawn so far
        for step in sorted(by_step):
            at = column[step]
            parts.append(_empty(at - done))
            parts.append(_cell(by_step[step], longest, durations))
            done = at + 1
        parts.append(_empty(len(steps) - done))
        rows.append(f"<tr><th>{escape(eid)}</th>{''.join(parts)}</tr>")
    legend = '<div class="meta">● answered or ran · ○ cached for a later turn · ✗ failed</div>'
    return container(
        f'<table class="timeline"><tr><th>executor · superstep</th>{head}</tr>{"".join(rows)}</table>{legend}', theme
    )
