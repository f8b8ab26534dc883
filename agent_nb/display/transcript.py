"""A dialogue's transcript, each turn marked with its route and modes, and its standalone page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .html import badge_html, container, escape, page
from .run import run_view

if TYPE_CHECKING:
    from ..dialogue import Dialogue, Exchange

__all__ = ["dialogue_page", "transcript_html"]


def _turn(e: Exchange, max_chars: int) -> str:
    routes = sorted({r for r in e.routes.values() if r})
    facts = [f"turn {e.number}"]
    if routes:
        facts.append("route " + ", ".join(routes))
    facts.append(" · ".join(f"{eid}: {mode}" for eid, mode in e.modes.items()))
    out = [f'<div class="turn" data-turn="{e.number}"><div class="meta">{escape(" · ".join(facts))}</div>']
    out.append(f'<div class="msg user"><span class="who">user</span>{escape(e.text)}</div>')
    for executor, reply in e.answers:
        route = e.routes.get(executor)
        badge = badge_html("route", route) if route else ""
        shown = reply if len(reply) <= max_chars else reply[:max_chars] + "…"
        out.append(
            f'<div class="msg assistant" data-executor="{escape(executor)}" data-route="{escape(route or "")}">'
            f'<span class="who">assistant · {escape(executor)}{badge}</span>{escape(shown)}</div>'
        )
    if e.error:
        out.append(f'<div class="error">this turn failed and changed nothing: {escape(e.error)}</div>')
    out.append("</div>")
    return "".join(out)


def transcript_html(
    exchanges: Sequence[Exchange],
    *,
    live: Sequence[tuple[str, str]] = (),
    pending: str | None = None,
    max_chars: int = 2000,
) -> str:
    """The turns so far; ``pending`` is the message of a turn still running, ``live`` its replies so far."""
    parts = [_turn(e, max_chars) for e in exchanges]
    if pending is not None:
        parts.append(f'<div class="turn running"><div class="meta">turn {len(exchanges) + 1} · running</div>')
        parts.append(f'<div class="msg user"><span class="who">user</span>{escape(pending)}</div>')
        for executor, text in live:
            parts.append(
                f'<div class="msg assistant live" data-executor="{escape(executor)}">'
                f'<span class="who">assistant · {escape(executor)}</span>{escape(text)}</div>'
            )
        parts.append("</div>")
    return "".join(parts) or '<div class="meta">no turns yet: send a message</div>'


def dialogue_page(dialogue: Dialogue) -> str:
    """A self-contained HTML page: the transcript, then the run view of every turn."""
    body = [f"<h2>{escape(dialogue.workflow.name)}</h2>", transcript_html(dialogue.exchanges)]
    results = dialogue.results
    for i in range(len(results)):
        body.append(run_view(results, turn=i))
    return page(f"{dialogue.workflow.name}: conversation", container("".join(body)))
