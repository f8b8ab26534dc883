"""Displays of state: a session (its route, its stored history), a router's routes, a list of messages."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..clients.base import capabilities_of, history_mode_of
from ..messages import Message, estimate_tokens
from ..rendering import Displayable
from .html import Theme, bubble, container, escape, fold_list

if TYPE_CHECKING:
    from ..routing import RoutingChatClient
    from ..sessions import AgentSession

__all__ = ["MessagesView", "messages_html", "routes_html", "session_html"]


def messages_html(messages: Sequence[Message], *, title: str | None = None, max_messages: int = 60,
                  max_chars: int = 400) -> str:  # fmt: skip
    """A conversation as bubbles, with its size."""
    heading = escape(title) + " · " if title else ""
    head = f'<div class="meta">{heading}{len(messages)} messages · ~{estimate_tokens(messages)} tokens</div>'
    return head + fold_list(messages, max_messages, lambda _, m: bubble(m, max_chars=max_chars))


class MessagesView(Displayable):
    """Any list of messages (a loaded history, a response) as a display."""

    def __init__(self, messages: Sequence[Message], *, title: str | None = None, theme: Theme = "auto") -> None:
        self.messages, self.title, self.theme = list(messages), title, theme

    def to_text(self) -> str:
        return "\n".join(f"{m.role}{' · ' + m.author_name if m.author_name else ''}: {m.text}" for m in self.messages)

    def html(self) -> str:
        """The messages as an HTML fragment."""
        return container(messages_html(self.messages, title=self.title), self.theme)


def _value(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:119] + "…"


def session_html(session: AgentSession, *, theme: Theme = "auto", history_key: str = "history") -> str:
    """A session: its id, its routes, its state, and the history an InMemoryHistoryProvider keeps in it."""
    rows = []
    for key, value in session.state.items():
        if key == history_key and isinstance(value, list):
            rows.append(f"<tr><th>{escape(key)}</th><td>{len(value)} messages (below)</td></tr>")
        else:
            rows.append(f"<tr><th>{escape(key)}</th><td>{escape(_value(value))}</td></tr>")
    body = f"<h3>session {escape(session.session_id)}</h3>"
    body += f"<table>{''.join(rows)}</table>" if rows else '<div class="meta">no state</div>'
    stored = session.state.get(history_key)
    if isinstance(stored, list) and stored:
        try:
            from ..history import _messages

            body += messages_html(_messages().validate_python(stored), title="stored history")
        except ValueError:
            body += '<div class="error">the stored history is not a list of messages</div>'
    return container(body, theme)


def routes_html(router: RoutingChatClient, *, theme: Theme = "auto") -> str:
    """A router's routes: which client, how it keeps history, what it accepts, which is the default."""
    default = router.default_route or next(iter(router.routes), None)
    rows = []
    for name, client in router.routes.items():
        caps = capabilities_of(client)
        accepts = [k for k in ("tool_calls", "images", "system_messages") if getattr(caps, k)]
        if caps.context_window:
            accepts.append(f"context {caps.context_window}")
        mark = " (default)" if name == default else ""
        rows.append(
            f"<tr><th>{escape(name + mark)}</th><td>{escape(repr(client))}</td>"
            f"<td>{escape(history_mode_of(client))}</td><td>{escape(', '.join(accepts))}</td></tr>"
        )
    policy = f'<span class="meta">history policy: {escape(router.history_policy)}</span>'
    return container(
        f"<h3>router {escape(router.name)} {policy}</h3>"
        f"<table><tr><th>route</th><th>client</th><th>history</th><th>accepts</th></tr>{''.join(rows)}</table>",
        theme,
    )
