"""A dialogue's transcript, each turn marked with its route and modes, and its standalone page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .html import SAYS, badge_html, container, escape, page
from .run import run_view

if TYPE_CHECKING:
    from ..dialogue import Dialogue, Exchange

__all__ = ["EMPTY_TRANSCRIPT", "dialogue_page", "running_turn_html", "transcript_html", "turn_html"]

EMPTY_TRANSCRIPT = '<div class="meta">no turns yet: send a message</div>'


def turn_html(e: Exchange, max_chars: int = 2000) -> str:
    """One finished turn: its route and modes, the user's message, each agent's reply."""
    routes = sorted({r for r in e.routes.values() if r})
    facts = [f"turn {e.number}"]
    if routes:
        facts.append("route " + ", ".join(routes))
    facts.append(" · ".join(f"{eid}: {mode}" for eid, mode in e.modes.items()))
    out = [f'<div class="turn" data-turn="{e.number}"><div class="meta">{escape(" · ".join(facts))}</div>']
    out.append(f'<div class="msg user"><span class="who">user</span>{SAYS}{escape(e.text)}</div>')
    for executor, reply in e.answers:
        route = e.routes.get(executor)
        badge = badge_html("route", route) if route else ""
        shown = reply if len(reply) <= max_chars else reply[:max_chars] + "…"
        out.append(
            f'<div class="msg assistant" data-executor="{escape(executor)}" data-route="{escape(route or "")}">'
            f'<span class="who">assistant · {escape(executor)}{badge}</span>{SAYS}{escape(shown)}</div>'
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
    parts = [turn_html(e, max_chars) for e in exchanges]
    if pending is not None:
        parts.append(running_turn_html(len(exchanges) + 1, pending, live))
    return "".join(parts) or EMPTY_TRANSCRIPT


def running_turn_html(number: int, pending: str, live: Sequence[tuple[str, str]] = ()) -> str:
    """The turn under way: the user's message and each agent's reply so far."""
    parts = [f'<div class="turn running"><div class="meta">turn {number} · running</div>']
    parts.append(f'<div class="msg user"><span class="who">user</span>{SAYS}{escape(pending)}</div>')
    for executor, text in live:
        parts.append(
            f'<div class="msg assistant live" data-executor="{escape(executor)}">'
            f'<span class="who">assistant · {escape(executor)}</span>{SAYS}{escape(text)}</div>'
        )
    parts.append("</div>")
    return "".join(parts)


def dialogue_page(dialogue: Dialogue) -> str:
    """A self-contained HTML page: the transcript, then the run view of every turn."""
    body = [f"<h2>{escape(dialogue.workflow.name)}</h2>", transcript_html(dialogue.exchanges)]
    results = dialogue.results
    for i in range(len(results)):
        body.append(run_view(results, turn=i))
    return page(f"{dialogue.workflow.name}: conversation", container("".join(body)))
