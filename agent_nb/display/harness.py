"""The harness drawn: the user's chat as a column of its own, and the run view of one turn beside it.

Seeing the chat next to the orchestrator's context is the point: a message that is in
the chat but never in the orchestrator's column is what the orchestrator never saw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..messages import Message
from ..trace.text import message_body
from ..trace.who_has import matcher, strings_of
from .chat import chat_html
from .graph import workflow_html
from .html import container, escape
from .run import run_view

if TYPE_CHECKING:
    from ..harness.harness import Harness, Turn
    from ..harness.views import Comparison, HarnessView

__all__ = ["comparison_html", "harness_html", "harness_view_html", "turn_html", "unseen_by"]

UNSEEN = "never reached the orchestrator"


def _turn_of(message: Message) -> int:
    head = (message.message_id or "t0.")[1:].split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def unseen_by(harness: Harness, up_to_turn: int) -> dict[str, str]:
    """Chat messages whose content never entered the top orchestrator's context, up to a turn."""
    root = harness.orchestrator.id
    snapshots = [s for t in harness.turns[:up_to_turn] for s in t.result.trace if s.executor_id == root]
    unique = {id(m): m for s in snapshots for m in s.given or ()}  # each holds the whole context: each message once
    known = [t for m in unique.values() for t in strings_of(m, offered=False)]
    marks: dict[str, str] = {}
    for m in harness.transcript:
        if _turn_of(m) > up_to_turn or m.author_name == root:
            continue
        body = message_body(m).removeprefix("▸ ").strip()
        key = body.split(" [", 1)[0] if m.role == "assistant" else body  # a card's content, not its buttons
        if key:
            test = matcher(key)
            if not any(test(t) for t in known):
                marks[m.message_id or ""] = UNSEEN
    return marks


def harness_view_html(view: HarnessView) -> str:
    """One turn's run view, with the user's chat up to that turn as its first column."""
    harness, number = view.harness, view.index + 1
    chat = [m for m in harness.transcript if _turn_of(m) <= number]
    results = [t.result for t in harness.turns]
    return run_view(results, turn=view.index, chat=chat, chat_marks=unseen_by(harness, number), **view.options)


def harness_html(harness: Harness) -> str:
    """The last turn's view; before the first turn, the harness's graph."""
    if not harness.turns:
        return workflow_html(harness.workflow)
    return harness_view_html(harness.view())


def turn_html(turn: Turn) -> str:
    """One turn: what the user did and what the chat showed in reply."""
    return container(f'<div class="meta">turn {turn.number}</div>{chat_html((turn.user, *turn.shown))}')


def comparison_html(comparison: Comparison) -> str:
    """Each harness's chat as a column, with the gaps found in it."""
    cols = []
    for h in comparison.harnesses:
        gaps = h.gaps()
        found = escape(", ".join(gaps.kinds()) or "none")
        cols.append(
            f'<section class="col chat"><header><h3>{escape(type(h).__name__)}</h3>'
            f'<div class="meta">{escape(h.workflow.name)} · {len(h.transcript)} messages · gaps: {found}</div>'
            f'</header><div class="card">{chat_html(h.transcript, unseen_by(h, len(h.turns)))}</div></section>'
        )
    return container(f'<div class="cols">{"".join(cols)}</div>')
