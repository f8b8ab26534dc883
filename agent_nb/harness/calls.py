"""What moves between the parts of a harness: the user's input, a call to a component, its result.

They are frozen and small: a call carries the caller's conversation and context as the same
tuples of messages the caller holds, never copies.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..contents import shorten
from ..messages import Message

__all__ = ["REPLY", "ComponentCall", "ComponentResult", "UserInput", "click_of", "reply_text"]

REPLY = "user: "
"""How a typed reply reads in a topic's implicit text."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def click_of(message: Message | None) -> str | None:
    """The action a user clicked, when ``message`` is a card click (``None`` for typed text)."""
    if message is None:
        return None
    for c in message.contents:
        if c.type == "user_input_response":
            return c.text
    return None


def reply_text(message: Message) -> str:
    """What the user answered: the clicked action or the typed text."""
    clicked = click_of(message)
    return message.text if clicked is None else clicked


@dataclass(frozen=True, slots=True)
class UserInput:
    """One turn of the user: a typed message, or a click on a card's action button."""

    turn: int
    message: Message

    def describe(self) -> str:
        clicked = click_of(self.message)
        if clicked is not None:
            return f"turn {self.turn}: the user clicked {clicked!r}"
        return f"turn {self.turn}: the user said {shorten(repr(self.message.text), 50)}"

    def texts(self) -> Iterator[str]:
        yield reply_text(self.message)


@dataclass(frozen=True, slots=True)
class ComponentCall:
    """An orchestrator (or a topic, for its generative-answers node) calls a component.

    ``inputs`` are the explicit inputs the caller filled from its own active context;
    ``conversation`` is the caller's conversation, which sub-agents take in (a tool never
    does); ``context`` is the caller's whole active context (its calls, results and notes
    too), which knowledge and generative answers take in. Both are the caller's own
    tuples, never copies. ``reply`` resumes a component that waits on the user.
    """

    caller: str
    component: str
    call_id: str
    turn: int
    request: Message
    inputs: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    conversation: tuple[Message, ...] = ()
    reply: Message | None = None
    context: tuple[Message, ...] = ()

    def describe(self) -> str:
        if self.reply is not None:
            return f"{self.caller} hands the user's reply {reply_text(self.reply)!r} to {self.component}"
        inputs = ", ".join(f"{k}={v!r}" for k, v in self.inputs.items())
        return f"{self.caller} calls {self.component}({inputs}) [{self.call_id}]"

    def texts(self) -> Iterator[Any]:
        """What the call passes explicitly: its inputs (the conversation travels implicitly)."""
        yield from self.inputs.values()


@dataclass(frozen=True, slots=True)
class ComponentResult:
    """What comes back to the caller: explicit outputs, and the implicit plain text of the exchange.

    ``implicit`` does not say whether the user saw it. ``proposed`` holds, in a centralised
    harness, what the component would have shown the user: the caller decides. ``waiting``
    is the question or card the component now waits on (it holds the conversation).
    """

    component: str
    caller: str
    call_id: str
    turn: int
    outputs: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    implicit: str = ""
    proposed: tuple[Message, ...] = ()
    waiting: Message | None = None
    wrote: tuple[str, ...] = field(default=())
    """Ids of the chat messages the component (and its nodes) wrote during the call."""

    @property
    def responded(self) -> bool:
        """Whether the component says it answered the user (its ``responded`` output)."""
        return bool(self.outputs.get("responded"))

    def describe(self) -> str:
        parts = [f"{self.component} → {self.caller}"]
        parts.append("outputs " + (", ".join(f"{k}={v!r}" for k, v in self.outputs.items()) or "none"))
        if self.implicit:
            parts.append(f"implicit {shorten(repr(self.implicit), 40)}")
        if self.waiting is not None:
            parts.append("waiting on the user")
        return " · ".join(parts)

    def texts(self) -> Iterator[Any]:
        yield from self.outputs.values()
        yield self.implicit
        yield from self.proposed
