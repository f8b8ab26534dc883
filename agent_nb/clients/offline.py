"""Deterministic chat clients that need no network: echo, scripted, function and mirror.

Each takes the settings of ``OfflineChatClient`` as keywords: ``stream_delay``,
``capabilities``, ``history_mode``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Union

from ..errors import ScriptExhausted, bad_argument
from ..messages import ChatResponse, Message
from .base import OfflineChatClient

__all__ = ["EchoChatClient", "FunctionChatClient", "MirrorChatClient", "ScriptedChatClient", "describe"]

Reply = Union[str, Message, ChatResponse]  # noqa: UP007 - runtime alias on Python 3.10


def _as_answer(reply: Reply) -> Message | ChatResponse:
    return Message("assistant", reply) if isinstance(reply, str) else reply


class EchoChatClient(OfflineChatClient):
    """Answers with the text of the last user message."""

    model = "echo"

    async def reply(self, messages: list[Message], options: Mapping[str, Any]) -> Message:
        for m in reversed(messages):
            if m.role == "user":
                return Message("assistant", m.text)
        return Message("assistant", "(no user message to echo)")


class ScriptedChatClient(OfflineChatClient):
    """Answers with ``replies`` in order: strings, or messages (with tool calls, say).

    ``replies`` is a list (any iterable) of ``str``, ``Message`` or ``ChatResponse``; anything
    else (``None``, a reply that is ``None``, a bare string) is an ``ArgumentError`` at once.

    Every request is kept in ``requests`` as ``(messages, options)`` so tests can check
    exactly what the model was sent.
    """

    model = "scripted"

    def __init__(self, replies: Iterable[Reply], **settings: Any) -> None:
        accepted = "give a list of replies, each a str, a Message or a ChatResponse"
        if isinstance(replies, (str, Message, ChatResponse)):
            raise bad_argument("ScriptedChatClient", "replies", replies, accepted, f"for one reply: [{replies!r}]")
        if not isinstance(replies, Iterable):
            raise bad_argument("ScriptedChatClient", "replies", replies, accepted)
        given = list(replies)
        for i, reply in enumerate(given):
            if not isinstance(reply, (str, Message, ChatResponse)):
                error = bad_argument(
                    "ScriptedChatClient", f"replies[{i}]", reply, "each reply is a str, a Message or a ChatResponse"
                )
                error.argument = "replies"  # the parameter; the message says which reply
                raise error
        super().__init__(**settings)
        self.replies: list[Message | ChatResponse] = [_as_answer(r) for r in given]
        self.requests: list[tuple[list[Message], dict[str, Any]]] = []

    @property
    def used(self) -> int:
        """How many replies have been given."""
        return len(self.requests)

    async def reply(self, messages: list[Message], options: Mapping[str, Any]) -> Message | ChatResponse:
        n = len(self.replies)
        if self.used >= n:
            raise ScriptExhausted(
                f"ScriptedChatClient was scripted with {n} repl{'y' if n == 1 else 'ies'} and all {n} "
                f"{'was' if n == 1 else 'were'} used; request {n + 1} has no reply. Script more replies, "
                "or check why the agent called the model again.",
                scripted=n,
                used=self.used,
            )
        self.requests.append((list(messages), dict(options)))
        return self.replies[self.used - 1]

    def __repr__(self) -> str:
        return f"ScriptedChatClient(replies={len(self.replies)}, used={self.used})"


class FunctionChatClient(OfflineChatClient):
    """Answers with ``fn(messages, options)``; ``fn`` may be sync or async.

    It returns a string, a ``Message`` or a ``ChatResponse``.
    """

    model = "function"

    def __init__(
        self, fn: Callable[[list[Message], Mapping[str, Any]], Reply | Awaitable[Reply]], **settings: Any
    ) -> None:
        super().__init__(**settings)
        self.fn = fn

    async def reply(self, messages: list[Message], options: Mapping[str, Any]) -> Message | ChatResponse:
        answer = self.fn(messages, options)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, (str, Message, ChatResponse)):
            name = getattr(self.fn, "__name__", repr(self.fn))
            raise TypeError(
                f"the function {name!r} of FunctionChatClient returned {type(answer).__name__}; "
                "return a str, a Message or a ChatResponse"
            )
        return _as_answer(answer)

    def __repr__(self) -> str:
        return f"FunctionChatClient({getattr(self.fn, '__name__', '?')})"


def _first_words(text: str, n: int) -> str:
    words = text.split()
    return " ".join(words[:n]) + ("…" if len(words) > n else "")


def describe(messages: list[Message], *, words: int = 5) -> str:
    """A short, stable description of ``messages``: count, then role, author and first words of each."""
    parts = []
    for m in messages:
        who = m.role if m.author_name is None else f"{m.role} from {m.author_name}"
        part = f'{who} "{_first_words(m.text, words)}"'
        calls = [c.name for c in m.contents if c.type == "function_call"]
        results = [c.call_id for c in m.contents if c.type == "function_result"]
        if calls:
            part += f" calls {', '.join(calls)}"
        if results:
            part += f" answers {', '.join(results)}"
        parts.append(part)
    noun = "message" if len(messages) == 1 else "messages"
    return f"I see {len(messages)} {noun}: " + " · ".join(parts) if parts else "I see 0 messages."


class MirrorChatClient(OfflineChatClient):
    """Answers with what it received: how many messages, and role, author and first words of each.

    Put it behind every agent of a workflow and each agent's reply *is* its active
    context, so a notebook shows what a context mode kept without any other tool.
    """

    model = "mirror"

    def __init__(self, *, words: int = 5, **settings: Any) -> None:
        super().__init__(**settings)
        self.words = words

    async def reply(self, messages: list[Message], options: Mapping[str, Any]) -> Message:
        return Message("assistant", describe(messages, words=self.words))
