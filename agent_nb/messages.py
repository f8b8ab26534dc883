"""Messages, their contents, and the responses that carry them.

Everything here is a frozen pydantic model: messages are shared between executors
and never copied per hop, and every one of them round-trips through JSON unchanged.

```python
msg = Message("user", ["What is the plan?"])
Message.model_validate_json(msg.model_dump_json()) == msg  # True
```
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import Field

from .contents import (
    IS_NONE,
    UNSET,
    Content,
    DataContent,
    Extra,
    FunctionCallContent,
    FunctionResultContent,
    Model,
    TextContent,
    UriContent,
    UserInputRequestContent,
    UserInputResponseContent,
    made,
    made_as,
    made_from,
    plain_contents,
    plain_text,
    shorten,
    to_contents,
    tool_work_as_text,
)
from .errors import bad_argument

__all__ = [
    "ROLES",
    "AgentResponse",
    "AgentResponseUpdate",
    "ChatResponse",
    "ChatResponseUpdate",
    "Content",
    "DataContent",
    "FunctionCallContent",
    "FunctionResultContent",
    "Message",
    "Role",
    "TextContent",
    "UriContent",
    "Usage",
    "UserInputRequestContent",
    "UserInputResponseContent",
    "estimate_tokens",
    "to_messages",
    "tool_work_as_text",
]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


def _text_of(contents: Sequence[Any]) -> str:
    if len(contents) == 1:  # most messages: one content
        only = contents[0]
        return only.text if only.type == "text" else ""
    return " ".join(c.text for c in contents if c.type == "text")


class Message(Model):
    """One chat message: a role, its contents, and who wrote it.

    ``Message("user", ["hi"])`` and ``Message(role="user", contents=["hi"])`` are the same;
    a bare string is one text content.
    """

    role: Role
    contents: tuple[Content, ...] = ()
    author_name: str | None = None
    """The agent (or person) that wrote it; kept when the role is reassigned."""
    message_id: str | None = None
    additional_properties: Extra = None
    """What another framework keeps on this message that agent_nb has no field for (Agent Framework's
    ``additional_properties``), carried unchanged; JSON values."""

    def __init__(self, role: Any = UNSET, contents: Any = UNSET, /, **data: Any) -> None:
        if (
            type(self) is Message
            and role.__class__ is str
            and role in ROLES
            and contents is not UNSET
            and data.keys() <= _PLAIN
        ):
            # the common shape (a role, texts or contents made, an author): checked here, made without pydantic
            made = plain_contents(contents)
            author, message_id = data.get("author_name"), data.get("message_id")
            if made is not None and plain_text(author) and plain_text(message_id):
                fields = {
                    "role": role,
                    "contents": made,
                    "author_name": author,
                    "message_id": message_id,
                    "additional_properties": None,
                }
                made_as(self, fields, {"role", "contents", *data})
                return
        if role is not UNSET:
            data["role"] = role
        if "role" in data and data["role"] not in ROLES:
            raise bad_argument("Message", "role", data["role"], f"use one of: {', '.join(ROLES)}")
        if contents is not UNSET:
            data["contents"] = contents
        if "contents" in data:
            data["contents"] = to_contents(data["contents"], lambda: _where(data))
        made_from(self, data)

    @property
    def text(self) -> str:
        """The text contents joined by spaces (empty when there are none)."""
        return _text_of(self.contents)

    def with_role(self, role: Role) -> Message:
        """A copy under another role, keeping contents, author and id."""
        if role not in ROLES:
            raise bad_argument("Message.with_role", "role", role, f"use one of: {', '.join(ROLES)}")
        if type(self) is not Message:  # a subclass may keep more than its fields
            return self.model_copy(update={"role": role})
        fields = dict(self.__dict__)  # valid already: a copy of them, the role changed
        fields["role"] = role
        return made(Message, fields, {*self.__pydantic_fields_set__, "role"})

    def __repr__(self) -> str:
        parts = [repr(self.role), repr(shorten(self.text))]
        kinds = sorted({c.type for c in self.contents} - {"text"})
        if kinds:
            parts.append(f"+{','.join(kinds)}")
        if self.author_name is not None:
            parts.append(f"author_name={self.author_name!r}")
        if self.message_id is not None:
            parts.append(f"message_id={self.message_id!r}")
        return f"Message({', '.join(parts)})"

    __str__ = __repr__


class Usage(Model):
    """Token counts of one or more model calls (estimated by the offline clients)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total: int | None = Field(default=None, exclude_if=IS_NONE)
    """The total a provider reported when it is not input + output (tokens it counts apart, such as
    reasoning); ``None`` otherwise. ``total_tokens`` reads it."""
    details: dict[str, int] | None = Field(default=None, exclude_if=IS_NONE)
    """Further counts a provider reported (cached input, reasoning output, ...), by the name it gave them."""

    @property
    def total_tokens(self) -> int:
        return self.total if self.total is not None else self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        total = None if self.total is None and other.total is None else self.total_tokens + other.total_tokens
        details = None
        if self.details or other.details:
            details = dict(self.details or {})
            for name, count in (other.details or {}).items():
                details[name] = details.get(name, 0) + count
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total=total,
            details=details,
        )


_PLAIN = frozenset({"author_name", "message_id"})
"""The keywords the common shape of a message may have (anything else goes through pydantic)."""


def _where(data: dict[str, Any]) -> str:
    """The message being made, as an error names it."""
    author = data.get("author_name")
    return f"a {data.get('role', '')} message" + (f" from {author}" if author else "")


def _to_messages(value: Any) -> Any:
    if value.__class__ is list or value.__class__ is tuple:
        return tuple(value)
    if isinstance(value, (Message, dict)):
        return (value,)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise bad_argument("a response", "messages", value, "give a Message, or a list of them")
    return tuple(value)


_R = TypeVar("_R", bound="_Response")


class _Update(Model):
    """A streamed increment: some contents of one message."""

    contents: tuple[Content, ...] = ()
    role: Role = "assistant"
    author_name: str | None = None
    message_id: str | None = None
    """Updates of one message share it; a change of id (or role or author) starts a new message."""
    response_id: str | None = None
    model: str | None = None
    route: str | None = None
    repairs: tuple[str, ...] = ()
    usage: Usage | None = None

    def __init__(self, contents: Any = UNSET, /, **data: Any) -> None:
        if contents is not UNSET:
            data["contents"] = contents
        if "contents" in data:
            data["contents"] = to_contents(data["contents"], lambda: _where(data))
        made_from(self, data)

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.contents if c.type == "text")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({shorten(self.text)!r}, author_name={self.author_name!r})"

    __str__ = __repr__


class _Response(Model):
    """Messages a model or an agent produced in one call."""

    messages: tuple[Message, ...] = ()
    response_id: str | None = None
    model: str | None = None
    """The model that answered, when known."""
    route: str | None = None
    """The route of a ``RoutingChatClient`` that answered, when routed."""
    repairs: tuple[str, ...] = ()
    """What a routing client changed in the history so the route would accept it."""
    usage: Usage | None = None

    def __init__(self, messages: Any = UNSET, /, **data: Any) -> None:
        defaults = _RESPONSE_DEFAULTS.get(type(self)) if not data else None
        if (
            defaults is not None
            and (messages.__class__ is list or messages.__class__ is tuple)
            and _all_messages(messages)
        ):
            # the common shape (messages made, nothing else): nothing for pydantic to check
            fields = dict(defaults)
            fields["messages"] = tuple(messages)
            made_as(self, fields, {"messages"})
            return
        if messages is not UNSET:
            data["messages"] = messages
        if "messages" in data:
            data["messages"] = _to_messages(data["messages"])
        made_from(self, data)

    @property
    def text(self) -> str:
        """The texts of all messages, one per line."""
        return "\n".join(t for t in (m.text for m in self.messages) if t)

    @classmethod
    def from_updates(cls: type[_R], updates: Iterable[_Update], **data: Any) -> _R:
        """Aggregate streamed updates: consecutive updates of one message become one message.

        Adjacent text pieces are joined into a single text content.
        """
        messages: list[Message] = []
        key: tuple[Any, ...] | None = None
        contents: list[Any] = []
        usage: Usage | None = None
        response_id = model = route = None
        repairs: tuple[str, ...] = ()

        pieces: list[str] = []  # adjacent text pieces, joined once (a long stream has thousands)

        def join() -> None:
            if len(pieces) > 1:
                contents[-1] = TextContent("".join(pieces))
            pieces.clear()

        def flush() -> None:
            join()
            if key is not None and contents:
                messages.append(Message(key[0], contents, author_name=key[1], message_id=key[2]))

        for update in updates:
            this = (update.role, update.author_name, update.message_id)
            if this != key:
                flush()
                key, contents = this, []
            for c in update.contents:
                if c.type == "text" and pieces:
                    pieces.append(c.text)
                    continue
                join()
                contents.append(c)
                if c.type == "text":
                    pieces.append(c.text)
            if update.usage is not None:
                usage = update.usage if usage is None else usage + update.usage
            response_id = update.response_id or response_id
            model = update.model or model
            route = update.route or route
            repairs = repairs + update.repairs
        flush()
        data.setdefault("usage", usage)
        data.setdefault("response_id", response_id)
        data.setdefault("model", model)
        data.setdefault("route", route)
        data.setdefault("repairs", repairs)
        return cls(messages, **data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({shorten(self.text)!r}, messages={len(self.messages)})"

    __str__ = __repr__


class AgentResponseUpdate(_Update):
    """One streamed increment of an agent's answer."""

    if TYPE_CHECKING:  # the positional form, for type checkers (at run time the base's, one call fewer)

        def __init__(self, contents: Any = UNSET, /, **data: Any) -> None: ...


class AgentResponse(_Response):
    """What an agent answered in one run: its messages, with ``author_name`` set to the agent."""

    if TYPE_CHECKING:  # the positional form, for type checkers (at run time the base's, one call fewer)

        def __init__(self, messages: Any = UNSET, /, **data: Any) -> None: ...


class ChatResponseUpdate(_Update):
    """One streamed increment from a chat client."""

    finish_reason: str | None = None

    if TYPE_CHECKING:  # the positional form, for type checkers (at run time the base's, one call fewer)

        def __init__(self, contents: Any = UNSET, /, **data: Any) -> None: ...


class ChatResponse(_Response):
    """What a chat client answered to one request."""

    finish_reason: str | None = None

    if TYPE_CHECKING:  # the positional form, for type checkers (at run time the base's, one call fewer)

        def __init__(self, messages: Any = UNSET, /, **data: Any) -> None: ...


def _all_messages(items: Sequence[Any]) -> bool:
    for item in items:  # noqa: SIM110 - a loop: all() over a generator costs more than the test
        if item.__class__ is not Message:
            return False
    return True


_RESPONSE_DEFAULTS: dict[type[_Response], dict[str, Any]] = {
    kind: {name: field.default for name, field in kind.model_fields.items()} for kind in (AgentResponse, ChatResponse)
}
"""A response's fields as pydantic would fill them in, for the constructor's own path (messages given only)."""

# The __init__ methods above only map positional arguments to fields. Telling pydantic so
# lets it build these models straight from JSON or dicts without calling them: nested
# validation (a stored conversation, a streamed chunk) is then several times faster.
for _model in (TextContent, Message, AgentResponseUpdate, AgentResponse, ChatResponseUpdate, ChatResponse):
    _model.__pydantic_custom_init__ = False


def estimate_tokens(messages: Sequence[Message] | str) -> int:
    """A deterministic token estimate (about four characters a token) for offline displays.

    Everything a model reads counts: texts, a tool call's name and arguments, a tool result,
    a prompt and its answer (a 100,000-character tool result costs what the same text would).
    """
    if isinstance(messages, str):
        return math.ceil(len(messages) / 4)
    total = 0
    for m in messages:
        characters = 0
        for c in m.contents:
            characters += len(c.text) if c.type == "text" else _characters(c)  # text, the common case, inline
        total += -(-characters // 4) + 3  # ceil(characters / 4), in integers
    return total


def _characters(content: Any) -> int:
    """The length of what a model reads of one content (data, such as an image, is not counted)."""
    kind = content.type
    if kind == "text":
        return len(content.text)
    if kind == "function_call":
        arguments = content.arguments
        return len(content.name) + len(arguments if isinstance(arguments, str) else _json(arguments))
    if kind == "function_result":
        result = content.result
        shown = result if isinstance(result, str) else "" if result is None else _json(result)
        return len(shown) + len(content.exception or "")
    if kind == "user_input_request":
        return len(content.prompt) + sum(map(len, content.options))
    if kind == "user_input_response":
        return len(content.text)
    if kind == "uri":
        return len(content.uri)
    return 0


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def to_messages(
    value: str | Message | Iterable[str | Message] | None, *, role: Role = "user", where: str = "the input"
) -> list[Message]:
    """Normalise what a caller passes as input: a string becomes a ``role`` message (``where`` names it in errors)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [Message(role, value)]
    if isinstance(value, Message):
        return [value]
    if type(value) is list and set(map(type, value)) <= ONLY_MESSAGES:  # the common case, checked in C
        return list(value)
    if isinstance(value, (Mapping, bytes)) or not isinstance(value, Iterable):
        raise bad_argument(where, "messages", value, _INPUT)
    out: list[Message] = []
    for item in value:
        if type(item) is Message or isinstance(item, Message):
            out.append(item)
        elif isinstance(item, str):
            out.append(Message(role, item))
        else:
            raise bad_argument(where, "messages", item, _INPUT)
    return out


_INPUT = "give a str, a Message, or a list of them"


ONLY_MESSAGES = frozenset({Message})
"""``set(map(type, items)) <= ONLY_MESSAGES`` checks in one C-level pass that every item is a Message."""
