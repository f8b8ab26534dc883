"""The timeline: supersteps across, executors down, what each did and how long it took."""

from __future__ import annotations

from ..trace import Trace
from .html import Theme, container, escape

__all__ = ["timeline_html"]

_MARKS = {"answered": "●", "ran": "●", "cached": "○", "failed": "✗"}


def timeline_html(trace: Trace, *, durations: bool = True, theme: Theme = "auto") -> str:
    """A table of supersteps × executors; ``durations=False`` leaves timings out (stable output)."""
    steps = sorted({s.superstep for s in trace})
    longest = max((s.duration for s in trace), default=0.0) or 1.0
    head = "".join(f"<th>{n}</th>" for n in steps)
    rows = []
    for eid in trace.executor_ids:
        cells = []
        for step in steps:
            snaps = [s for s in trace if s.executor_id == eid and s.superstep == step]
            parts = []
            for s in snaps:
                status = escape(s.status)
                mark = f'<span class="status {status}" title="{status}">{_MARKS.get(s.status, "·")}</span>'
                if durations:
                    width = max(int(60 * s.duration / longest), 1)
                    mark += f' <span class="bar" style="width:{width}px"></span>{s.duration * 1000:.1f} ms'
                parts.append(mark)
            cells.append(f"<td>{'<br>'.join(parts)}</td>")
        rows.append(f"<tr><th>{escape(eid)}</th>{''.join(cells)}</tr>")
    legend = '<div class="meta">● answered or ran · ○ cached for a later turn · ✗ failed</div>'
    return container(
        f'<table class="timeline"><tr><th>executor · superstep</th>{head}</tr>{"".join(rows)}</table>{legend}', theme
    )
