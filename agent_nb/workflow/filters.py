"""Context filters for ``context_mode="custom"``: ``list[Message] -> list[Message]``.

Each has a readable ``__name__``, which the trace and the displays show.
"""

from __future__ import annotations

from collections.abc import Callable

from ..messages import Message

__all__ = ["last_messages", "user_messages", "users_and_last_reply"]


def user_messages(messages: list[Message]) -> list[Message]:
    """Only what users wrote: every other agent's work is left out."""
    return [m for m in messages if m.role == "user"]


def users_and_last_reply(messages: list[Message]) -> list[Message]:
    """Every user message plus the last assistant message (the documented example filter)."""
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    return [m for m in messages if m.role == "user" or m is last]


def last_messages(n: int) -> Callable[[list[Message]], list[Message]]:
    """The last ``n`` messages: a sliding window."""
    if n < 1:
        raise ValueError(f"last_messages needs n >= 1, got {n}")

    def last_n(messages: list[Message]) -> list[Message]:
        return messages[-n:]

    last_n.__name__ = f"last_{n}_messages"
    return last_n
