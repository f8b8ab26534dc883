"""The user's chat drawn: bubbles with badges, and the chat as the first column of a run view."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..messages import Message
from .html import bubble, fold_list

__all__ = ["chat_column", "chat_html"]


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
