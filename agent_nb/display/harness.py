"""The harness displays: the user's chat as a column of its own, and the run view of one turn beside it.

Seeing the chat next to the orchestrator's context is the point: a message that is in
the chat but never in the orchestrator's column is what the orchestrator never saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..messages import Message
from ..trace.text import message_body, message_line
from ..trace.who_has import matcher, strings_of
from .bundle import mimebundle
from .html import bubble, fold_list

if TYPE_CHECKING:
    from ..harness.harness import Harness

__all__ = ["Comparison", "HarnessView", "chat_column", "chat_html", "unseen_by"]

UNSEEN = "never reached the orchestrator"


def chat_html(messages: Sequence[Message], marks: Mapping[str, str] | None = None, *, max_chars: int = 400) -> str:
    """Chat messages as bubbles, each with its badge from ``marks`` (by message id)."""
    marks = marks or {}
    return "".join(bubble(m, max_chars=max_chars, badge=marks.get(m.message_id or "")) for m in messages)


def chat_column(
    chat: Sequence[Message], marks: Mapping[str, str], *, max_messages: int = 40, max_chars: int = 400
) -> str:
    """The user's chat as the first column of a run view."""
    body = fold_list(
        chat, max_messages, lambda _, m: bubble(m, max_chars=max_chars, badge=marks.get(m.message_id or ""))
    )
    return (
        f'<section class="col chat" data-executor="user\'s chat"><header><h3>user\'s chat</h3>'
        f'<div class="meta">what the user saw and did · {len(chat)} messages</div></header>'
        f'<div class="card">{body or "<span class=meta>nothing yet</span>"}</div></section>'
    )


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


class HarnessView:
    """The run view of one harness turn, with the user's chat as its first column."""

    def __init__(self, harness: Harness, *, turn: int | None = None, **options: Any) -> None:
        turns = harness.turns
        if not turns:
            raise ValueError(f"{harness!r} has no turns yet: send() something first")
        index = len(turns) - 1 if turn is None else turn
        if not -len(turns) <= index < len(turns):
            raise IndexError(f"turn {turn} does not exist: there are {len(turns)} turns (0 to {len(turns) - 1})")
        self.harness = harness
        self.index = index % len(turns)
        self.options = options

    def html(self) -> str:
        from .run import run_view

        number = self.index + 1
        chat = [m for m in self.harness.transcript if _turn_of(m) <= number]
        results = [t.result for t in self.harness.turns]
        return run_view(results, turn=self.index, chat=chat, chat_marks=unseen_by(self.harness, number), **self.options)

    def to_text(self) -> str:
        turn = self.harness.turns[self.index]
        return f"{turn.to_text()}\n{turn.result.trace.to_text()}"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, str]:
        return mimebundle(self.to_text(), self.html, include, exclude)

    def __repr__(self) -> str:
        return f"HarnessView({self.harness!r}, turn={self.index + 1})"


class Comparison:
    """Harnesses side by side: each one's chat, and the gaps found in it."""

    def __init__(self, *harnesses: Harness) -> None:
        if not harnesses:
            raise ValueError("compare() needs at least one harness")
        self.harnesses = harnesses

    def to_text(self) -> str:
        blocks = []
        for h in self.harnesses:
            lines = [f"{h.workflow.name} · {type(h).__name__}"]
            lines += ["  " + message_line(m, 96) for m in h.transcript]
            gaps = h.gaps()
            lines.append(f"  gaps: {', '.join(gaps.kinds()) or 'none'}")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    def html(self) -> str:
        from .html import container, escape

        cols = []
        for h in self.harnesses:
            gaps = h.gaps()
            found = escape(", ".join(gaps.kinds()) or "none")
            cols.append(
                f'<section class="col chat"><header><h3>{escape(type(h).__name__)}</h3>'
                f'<div class="meta">{escape(h.workflow.name)} · {len(h.transcript)} messages · gaps: {found}</div>'
                f'</header><div class="card">{chat_html(h.transcript, unseen_by(h, len(h.turns)))}</div></section>'
            )
        return container(f'<div class="cols">{"".join(cols)}</div>')

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, str]:
        return mimebundle(self.to_text(), self.html, include, exclude)
