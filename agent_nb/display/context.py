"""The trace as HTML: one column per executor, one card per invocation.

Each card shows what arrived, what the context mode dropped (struck through), the
exact messages the agent was given (reassigned roles marked), and what it answered.
"""

from __future__ import annotations

from ..messages import estimate_tokens
from ..trace import ContextSnapshot, Trace, describe_value
from .html import CSS, bubble, escape

__all__ = ["trace_html"]


def _card(s: ContextSnapshot, max_chars: int) -> str:
    head = f"superstep {s.superstep}"
    if s.context_mode:
        head += f" · {escape(s.context_mode)}"
    if s.context_filter:
        head += f" ({escape(s.context_filter)})"
    head += f" · {escape(s.status)}"
    out = [f'<div class="card {escape(s.status)}"><div class="meta">{head}</div>']
    out.append(f'<div class="label">received</div><div>{escape(describe_value(s.received))}</div>')
    if s.dropped:
        by = s.context_filter or s.context_mode or "filter"
        out.append(f'<div class="label">dropped by {escape(by)} ({len(s.dropped)})</div>')
        out.extend(bubble(m, dropped=True, max_chars=max_chars) for m in s.dropped)
    if s.given is not None:
        tokens = estimate_tokens(s.given)
        out.append(f'<div class="label">given to the agent ({len(s.given)} · ~{tokens} tokens)</div>')
        out.extend(
            bubble(m, reassigned=moved, max_chars=max_chars) for m, moved in zip(s.given, s.reassigned(), strict=True)
        )
    elif s.kind == "agent" and s.kept:
        out.append(f'<div class="label">cached ({len(s.kept)})</div>')
        out.extend(bubble(m, max_chars=max_chars) for m in s.kept)
    if s.response is not None:
        model = f" · {escape(s.response.model)}" if s.response.model else ""
        out.append(f'<div class="label">answered{model}</div>')
        out.extend(bubble(m, max_chars=max_chars) for m in s.response.messages)
    for sent in s.sent:
        to = ", ".join(sent.targets) or "nobody"
        out.append(f'<div class="meta">sent {escape(describe_value(sent.message))} → {escape(to)}</div>')
    if s.error is not None:
        out.append(f'<div class="label">error</div><div class="error">{escape(s.error)}</div>')
    out.append("</div>")
    return "".join(out)


def trace_html(trace: Trace, *, max_chars: int = 400, title: str | None = None) -> str:
    """An HTML fragment (with its scoped stylesheet) showing every executor's context side by side."""
    cols = []
    for eid in trace.executor_ids:
        snaps = [s for s in trace if s.executor_id == eid]
        kind = snaps[0].kind if snaps else "not run"
        meta = f"{escape(kind)} · {len(snaps)} invocation{'s' if len(snaps) != 1 else ''}"
        cards = "".join(_card(s, max_chars) for s in snaps) or '<div class="card meta">did not run</div>'
        cols.append(f'<div class="col"><h3>{escape(eid)} <span class="meta">{meta}</span></h3>{cards}</div>')
    heading = f"<h2>{escape(title)}</h2>" if title else ""
    return f'<div class="anb"><style>{CSS}</style>{heading}<div class="cols">{"".join(cols)}</div></div>'
