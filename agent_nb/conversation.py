"""``Conversation``: an immutable view over a shared, append-only message log.

A chain of N agents in ``full`` mode hands each agent the conversation so far plus
its predecessor's reply. Copying that list at every hop costs O(N) per hop and keeps
O(N²) message references alive. Instead every executor holds a *view* — the log and
a length — and extending the newest view appends to the shared log in place. Views
never see beyond their own length, so sharing is safe; extending an older view
(a fork, as in fan-out) copies once.

The log also keeps, built lazily and once per message, each message as *another*
agent would receive it (an agent's assistant reply reassigned to the ``user`` role)
and where each author's own replies sit, so that handing an agent its input with
roles reassigned is a slice plus a patch of that agent's own messages.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, TypeGuard, overload

from .messages import ONLY_MESSAGES, Message, tool_work_as_text

__all__ = ["EMPTY", "Conversation"]


def _check(items: list[Any]) -> list[Message]:
    if not set(map(type, items)) <= ONLY_MESSAGES:  # one C-level pass; subclasses take the slow path
        for m in items:
            if not isinstance(m, Message):
                raise TypeError(f"a Conversation holds Message objects, not {type(m).__name__}")
    return items


def handed_over(message: Message) -> Message:
    """Another agent's message as input for this one: a ``user`` message, its author kept.

    Tool calls and results are that agent's own work; a provider would reject them in a
    user message, so they are handed over as text.
    """
    if not any(c.type == "function_call" or c.type == "function_result" for c in message.contents):
        return message.with_role("user")
    return Message("user", [tool_work_as_text(c) for c in message.contents], author_name=message.author_name)


def _shares(messages: Iterable[Message]) -> TypeGuard[Conversation]:
    """Whether ``messages`` is a Conversation, whose storage can be shared.

    Lists and tuples are told apart first, without ``isinstance`` on an ABC.
    """
    kind = messages.__class__
    return kind is Conversation or (kind is not list and kind is not tuple and isinstance(messages, Conversation))


class _Log:
    """The shared storage behind one or more views."""

    __slots__ = ("inputs", "messages", "own")

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.inputs: list[Message] = []
        """``messages[i]`` as another agent's input, built up to ``len(inputs)``."""
        self.own: dict[str, list[int]] = {}
        """Author name -> ascending positions of that author's assistant messages."""

    def index(self, stop: int) -> None:
        msgs, inputs, own = self.messages, self.inputs, self.own
        start = len(inputs)
        inputs.extend(msgs[start:stop])  # most messages are their own input; patch the few that are not
        for i, m in enumerate(msgs[start:stop], start):
            if m.author_name is not None and (m.role == "assistant" or m.role == "tool"):
                inputs[i] = handed_over(m)
                own.setdefault(m.author_name, []).append(i)


class Conversation(Sequence[Message]):
    """An immutable sequence of messages that shares storage with the conversations it came from.

    ```python
    conv = Conversation([Message("user", "hi")])
    longer = conv + [Message("assistant", "hello", author_name="greeter")]
    len(conv), len(longer)  # (1, 2): conv is unchanged
    ```
    """

    __slots__ = ("_log", "_stop")
    _log: _Log
    _stop: int

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        if _shares(messages):
            self._log, self._stop = messages._log, messages._stop
            return
        items = _check(list(messages))
        self._log = _Log(items)
        self._stop = len(items)

    @classmethod
    def _view(cls, log: _Log, stop: int) -> Conversation:
        view = cls.__new__(cls)
        view._log, view._stop = log, stop
        return view

    def __len__(self) -> int:
        return self._stop

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self.to_list()[index]
        if index < 0:
            index += self._stop
        if not 0 <= index < self._stop:
            raise IndexError("conversation index out of range")
        return self._log.messages[index]

    def __iter__(self) -> Iterator[Message]:
        return islice(self._log.messages, self._stop)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Conversation):
            return self.to_list() == other.to_list()
        if isinstance(other, (list, tuple)):
            return self.to_list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Conversation({len(self)} messages)"

    def storage(self) -> tuple[object, int]:
        """The log this view reads, and its length: views of one log hold the same message at each place."""
        return self._log, self._stop

    def to_list(self) -> list[Message]:
        """A new list of the messages (one C-level copy)."""
        return self._log.messages[: self._stop]

    def head(self, n: int) -> Conversation:
        """The first ``n`` messages, sharing storage."""
        return Conversation._view(self._log, max(0, min(n, self._stop)))

    def __add__(self, other: Iterable[Message]) -> Conversation:
        return self.extend(other)

    def extend(self, messages: Iterable[Message], *, validate: bool = True) -> Conversation:
        """A new conversation: these messages followed by ``messages`` (``self`` is unchanged).

        ``validate=False`` skips the type check, for callers that already know every item is a Message.
        """
        log, stop = self._log, self._stop
        if _shares(messages):
            if stop == 0:
                return messages
            new = messages.to_list()
        else:
            new = _check(list(messages)) if validate else list(messages)
        if not new:
            return self
        if stop == 0:  # a fresh log: empty conversations may be shared, their log must never grow
            return Conversation._view(_Log(new), len(new))
        if stop != len(log.messages):  # someone already extended the shared log: fork
            forked = _Log(log.messages[:stop])
            forked.inputs = log.inputs[:stop]
            forked.own = {a: pos[: bisect_left(pos, stop)] for a, pos in log.own.items()}
            log = forked
        log.messages.extend(new)
        return Conversation._view(log, len(log.messages))

    def as_input_for(self, names: Iterable[str]) -> list[Message]:
        """The messages as the agent called one of ``names`` should receive them.

        Assistant and tool messages written by *other* agents become ``user`` messages (see
        ``handed_over``); the agent's own messages and messages without an author keep their role.
        """
        log, stop = self._log, self._stop
        if len(log.inputs) < stop:
            log.index(stop)
        out = log.inputs[:stop]
        msgs = log.messages
        for name in names:
            for i in log.own.get(name, ()):
                if i >= stop:
                    break
                out[i] = msgs[i]
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (Conversation, (self.to_list(),))


EMPTY = Conversation()
"""The empty conversation; safe to share, since extending an empty view starts a new log."""
