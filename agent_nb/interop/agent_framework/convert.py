"""Messages, responses and updates between agent_nb and Agent Framework, both ways, without loss.

Roles, author names, message ids, text, tool calls and their results, data, URIs, approval
requests and answers, every key of a message's and a content's ``additional_properties`` (kept
in agent_nb's field of that name), usage with every count Agent Framework's ``UsageDetails``
carries (total, cached, reasoning, a provider's own: agent_nb's ``Usage.total`` and
``Usage.details``), and a response's route, repairs and finish reason all cross. What one side
cannot hold natively travels in the other's ``additional_properties["agent_nb"]`` (a key the
bridge keeps for itself) and is read back from there: a tool result that is not a
string (Agent Framework keeps results as text), an approval's prompt and choices, an input
request that approves no call, a response's route.

What does not travel, and why:

- ``raw_representation``: the provider's own object (an SDK's response or chunk), not data; it
  means something only to that provider's SDK, and agent_nb keeps its messages as JSON
  (checkpoints, traces, cassettes). It is left out both ways.
- values of ``additional_properties`` that are not JSON (an object of some SDK): refused, naming
  the key, for the same reason.
- a content's ``annotations`` (citations), a response's ``conversation_id``, ``created_at``,
  ``continuation_token`` and its own ``additional_properties`` beyond route and repairs: agent_nb's
  messages and responses have no place for them (a conversation lives with the caller, see
  ``AgentNbChatClient``); they are left out.
- Agent Framework contents agent_nb has no counterpart for (reasoning text, service errors, hosted
  tools) are refused, naming the content and the message, unless ``unsupported="drop"`` is given;
  then they are left out and counted in ``Converted.dropped``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import agent_framework as af
from agent_framework.exceptions import ContentError
from pydantic import TypeAdapter, ValidationError

from ...contents import (
    Content,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    UriContent,
    UserInputRequestContent,
    UserInputResponseContent,
)
from ...errors import ArgumentError, bad_argument
from ...messages import AgentResponse, AgentResponseUpdate, ChatResponse, ChatResponseUpdate, Message, Usage

__all__ = [
    "KEY",
    "Converted",
    "Unsupported",
    "agent_response_from_framework",
    "agent_response_to_framework",
    "agent_update_from_framework",
    "messages_from_framework",
    "messages_to_framework",
    "response_from_framework",
    "response_to_framework",
    "update_from_framework",
    "update_to_framework",
    "usage_from_framework",
    "usage_to_framework",
]

KEY = "agent_nb"
"""The key of ``additional_properties`` under which what Agent Framework cannot hold natively travels."""
ROLES = ("system", "user", "assistant", "tool")
Unsupported = Literal["refuse", "drop"]
_CONTENT: TypeAdapter[Any] = TypeAdapter(Content)


@dataclass
class Converted:
    """What a conversion from Agent Framework met on the way: usage contents, and contents left out."""

    usage: Usage | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    """Agent Framework content types left out (``unsupported="drop"``), with how many of each."""

    def add_usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def note(self) -> str | None:
        """One line saying what was left out, or ``None``."""
        if not self.dropped:
            return None
        parts = ", ".join(f"{n} {kind}" for kind, n in sorted(self.dropped.items()))
        return f"Agent Framework contents left out (agent_nb messages cannot hold them): {parts}"


# -- agent_nb -> Agent Framework ----------------------------------------------------------


_COUNTS = ("input_token_count", "output_token_count", "total_token_count")


def usage_to_framework(usage: Usage | None) -> dict[str, int] | None:
    """agent_nb usage as Agent Framework's ``UsageDetails``, every count kept (``None`` stays ``None``)."""
    if usage is None:
        return None
    return {
        "input_token_count": usage.input_tokens,
        "output_token_count": usage.output_tokens,
        "total_token_count": usage.total_tokens,
        **(usage.details or {}),
    }


def _extra(own: Mapping[str, Any] | None, ours: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """``additional_properties`` for Agent Framework: a copy of agent_nb's, and what the bridge keeps under ``KEY``."""
    if not own and not ours:
        return None
    return {**(own or {}), **(ours or {})}


def _call_to_framework(call: FunctionCallContent) -> af.Content:
    return af.Content.from_function_call(
        call.call_id, call.name, arguments=call.arguments, additional_properties=_extra(call.additional_properties)
    )


def _carried(content: Content) -> af.Content:
    """A content with no Agent Framework counterpart: its words as text, itself under ``KEY``."""
    words = getattr(content, "prompt", "") or getattr(content, "text", "")
    return af.Content("text", text=words, additional_properties={KEY: content.model_dump(mode="json")})


def _content_to_framework(content: Content, asked: Mapping[str, FunctionCallContent | af.Content]) -> af.Content:
    crossed = _crossed(content, asked)
    if content.additional_properties and crossed.additional_properties.get(KEY, {}).get("type") is None:
        crossed.additional_properties = {**content.additional_properties, **crossed.additional_properties}
    return crossed


def _crossed(content: Content, asked: Mapping[str, FunctionCallContent | af.Content]) -> af.Content:
    if content.type == "text":
        return af.Content.from_text(content.text)
    if content.type == "function_call":
        return _call_to_framework(content)
    if content.type == "function_result":
        result = content.result
        kept = None if isinstance(result, str) else {KEY: {"result": result}}  # the framework keeps text only
        return af.Content.from_function_result(
            content.call_id,
            result=result if isinstance(result, str) else json.dumps(result),
            exception=content.exception,
            additional_properties=kept,
        )
    if content.type in ("data", "uri"):
        try:
            if content.type == "data":
                return af.Content.from_data(data=content.data, media_type=content.media_type)
            return af.Content.from_uri(uri=content.uri, media_type=content.media_type)
        except ContentError:  # what Agent Framework refuses (an empty URI, an odd media type) crosses as it is
            return _carried(content)
    if content.type == "user_input_request" and content.function_call is not None:
        asking: dict[str, Any] = {"prompt": content.prompt, "options": list(content.options)}
        return af.Content.from_function_approval_request(
            content.request_id,
            _call_to_framework(content.function_call),
            additional_properties={KEY: asking} if content.prompt or content.options else None,
        )
    if content.type == "user_input_response" and content.approved is not None and content.request_id in asked:
        call = asked[content.request_id]
        return af.Content.from_function_approval_response(
            content.approved,
            content.request_id,
            call if isinstance(call, af.Content) else _call_to_framework(call),
            additional_properties={KEY: {"text": content.text}} if content.text else None,
        )
    return _carried(content)


def messages_to_framework(
    messages: Iterable[Message], *, asked: Mapping[str, FunctionCallContent | af.Content] | None = None
) -> list[af.Message]:
    """agent_nb messages as Agent Framework messages.

    An approval answer becomes a ``function_approval_response`` when the call it approves is known
    (Agent Framework's answer names its call): asked among the messages, or in ``asked`` (request
    id -> the call, or the very Agent Framework call that asked, with its own identity); otherwise it
    travels under ``KEY``.
    """
    out: list[af.Message] = []
    asked = dict(asked or {})
    for m in messages:
        for c in m.contents:
            if c.type == "user_input_request" and c.function_call is not None:
                asked.setdefault(c.request_id, c.function_call)
        contents = [_content_to_framework(c, asked) for c in m.contents]
        out.append(
            af.Message(
                m.role,
                contents,
                author_name=m.author_name,
                message_id=m.message_id,
                additional_properties=_extra(m.additional_properties),
            )
        )
    return out


def _said(route: str | None, repairs: Sequence[str]) -> dict[str, Any] | None:
    extra: dict[str, Any] = {}
    if route is not None:
        extra["route"] = route
    if repairs:
        extra["repairs"] = list(repairs)
    return {KEY: extra} if extra else None


def response_to_framework(response: ChatResponse) -> af.ChatResponse:
    """A response as Agent Framework's; its route (and repairs) on the response and on each of its messages.

    An Agent Framework agent keeps the messages, not the response: on them, who answered stays known.
    """
    said = _said(response.route, response.repairs)
    messages = messages_to_framework(response.messages)
    if said is not None:
        for m in messages:
            kept = m.additional_properties.get(KEY)
            m.additional_properties[KEY] = {**kept, **said[KEY]} if isinstance(kept, dict) else said[KEY]
    return af.ChatResponse(
        messages=messages,
        response_id=response.response_id,
        model=response.model,
        finish_reason=response.finish_reason,  # type: ignore[arg-type]
        usage_details=usage_to_framework(response.usage),  # type: ignore[arg-type]
        additional_properties=_said(response.route, response.repairs),
    )


def update_to_framework(update: ChatResponseUpdate) -> af.ChatResponseUpdate:
    """A streamed update as Agent Framework's; its usage as a usage content, as Agent Framework streams it."""
    contents = [_content_to_framework(c, {}) for c in update.contents]
    if update.usage is not None:
        contents.append(af.Content.from_usage(usage_to_framework(update.usage)))  # type: ignore[arg-type]
    return af.ChatResponseUpdate(
        contents=contents,
        role=update.role,
        author_name=update.author_name,
        message_id=update.message_id,
        response_id=update.response_id,
        model=update.model,
        finish_reason=update.finish_reason,  # type: ignore[arg-type]
        additional_properties=_said(update.route, update.repairs),
    )


def agent_response_to_framework(response: AgentResponse) -> af.AgentResponse:
    """An agent's answer as Agent Framework's ``AgentResponse``."""
    return af.AgentResponse(
        messages=messages_to_framework(response.messages),
        response_id=response.response_id,
        usage_details=usage_to_framework(response.usage),  # type: ignore[arg-type]
        additional_properties=_said(response.route, response.repairs),
    )


# -- Agent Framework -> agent_nb ----------------------------------------------------------


def usage_from_framework(details: Mapping[str, Any] | None) -> Usage | None:
    """Agent Framework's ``UsageDetails`` as agent_nb usage (``None`` when it says nothing).

    Every count crosses: input and output, the total when it is not their sum (``Usage.total``),
    and the others by their names (``Usage.details``); a count given as ``None`` says nothing.
    """
    if not details:
        return None
    inputs, outputs = int(details.get("input_token_count") or 0), int(details.get("output_token_count") or 0)
    total = details.get("total_token_count")
    more = {k: int(v) for k, v in details.items() if k not in _COUNTS and v is not None}
    return Usage(
        input_tokens=inputs,
        output_tokens=outputs,
        total=None if total is None or int(total) == inputs + outputs else int(total),
        details=more or None,
    )


def _kept(content: Any) -> dict[str, Any]:
    extra = (getattr(content, "additional_properties", None) or {}).get(KEY)
    return extra if isinstance(extra, dict) else {}


def _data(uri: str, where: str) -> bytes:
    head, sep, body = uri.rpartition(",")  # base64 has no comma; a media type may
    if not (uri.startswith("data:") and sep and head.endswith(";base64")):
        raise bad_argument(where, "a data content's uri", uri[:60], "a base64 data URI (data:<type>;base64,...)")
    try:
        return base64.b64decode(body, validate=True)
    except binascii.Error as exc:
        raise bad_argument(where, "a data content's uri", uri[:60], f"valid base64 ({exc})") from None


def _own(item: Any) -> dict[str, Any] | None:
    """An Agent Framework message's or content's ``additional_properties``, but the bridge's own key."""
    extra = getattr(item, "additional_properties", None) or {}
    own = {k: v for k, v in extra.items() if k != KEY}
    return own or None


def _call_from_framework(call: Any) -> FunctionCallContent:
    arguments = call.arguments if call.arguments is not None else {}
    return FunctionCallContent(
        call_id=call.call_id, name=call.name, arguments=arguments, additional_properties=_own(call)
    )


def _content_from_framework(c: Any, where: str) -> Content | None:
    """One Agent Framework content as agent_nb's; ``None`` for usage (read by the caller) and unsupported ones."""
    kept = _kept(c)
    kind = c.type
    if "type" in kept:  # an agent_nb content that crossed as text
        try:
            return _CONTENT.validate_python(kept)  # type: ignore[no-any-return]
        except ValidationError as exc:
            raise bad_argument(where, f"additional_properties[{KEY!r}]", kept, f"an agent_nb content ({exc})") from None
    own = {"additional_properties": extra} if (extra := _own(c)) else {}
    try:
        return _content_of(c, kind, kept, own, where)
    except ArgumentError as exc:
        raise ArgumentError(f"{where}, its {kind!r} content: {exc}", argument="additional_properties") from None


def _content_of(c: Any, kind: str, kept: dict[str, Any], own: dict[str, Any], where: str) -> Content | None:
    if kind == "text":
        return TextContent(c.text or "", **own)
    if kind == "function_call":
        return _call_from_framework(c)
    if kind == "function_result":
        result = kept.get("result", c.result)
        return FunctionResultContent(call_id=c.call_id, result=result, exception=c.exception, **own)
    if kind == "data":
        return DataContent(data=_data(c.uri or "", where), media_type=c.media_type or "", **own)
    if kind == "uri":
        return UriContent(uri=c.uri, media_type=c.media_type, **own)
    if kind == "function_approval_request":
        return UserInputRequestContent(
            request_id=c.id,
            prompt=kept.get("prompt", ""),
            options=tuple(kept.get("options", ())),
            function_call=_call_from_framework(c.function_call),
            **own,
        )
    if kind == "function_approval_response":
        text = kept.get("text", "")
        return UserInputResponseContent(request_id=c.id, approved=bool(c.approved), text=text, **own)
    return None


def _message_from_framework(m: Any, unsupported: Unsupported, seen: Converted) -> Message:
    role = str(getattr(m.role, "value", m.role))
    where = f"Agent Framework {role} message" + (f" of {m.author_name!r}" if m.author_name else "")
    if role not in ROLES:
        raise bad_argument(where, "role", role, f"one of {', '.join(ROLES)}: agent_nb messages have no other role")
    contents: list[Content] = []
    for c in m.contents:
        if c.type == "usage":
            seen.add_usage(usage_from_framework(c.usage_details))
            continue
        converted = _content_from_framework(c, where)
        if converted is not None:
            contents.append(converted)
        elif unsupported == "drop":
            seen.dropped[c.type] = seen.dropped.get(c.type, 0) + 1
        else:
            raise ArgumentError(
                f"{where}: its {c.type!r} content has no agent_nb counterpart, so converting it would lose it. "
                "Pass unsupported='drop' to leave such contents out (they are counted in the result), or remove "
                "them from the message first",
                argument="unsupported",
            )
    return Message(
        role,
        contents,
        author_name=m.author_name,
        message_id=m.message_id,
        additional_properties=_message_extra(m, where),
    )


def _message_extra(m: Any, where: str) -> dict[str, Any] | None:
    """A message's ``additional_properties``, every key but the bridge's own, checked to be JSON.

    Under ``KEY`` a message holds only what ``response_to_framework`` said of its response (its
    route, its repairs): agent_nb keeps that on the response, where it is read from.
    """
    extra = _own(m)
    if not extra:
        return None
    try:
        Message("user", additional_properties=extra)
    except ArgumentError as exc:
        raise ArgumentError(f"{where}: {exc}", argument="additional_properties") from None
    return extra


def messages_from_framework(
    messages: Iterable[Any], *, unsupported: Unsupported = "refuse", seen: Converted | None = None
) -> list[Message]:
    """Agent Framework messages as agent_nb messages (``seen`` collects usage and what was left out)."""
    if unsupported not in ("refuse", "drop"):
        raise bad_argument("messages_from_framework", "unsupported", unsupported, "'refuse' or 'drop'")
    seen = seen if seen is not None else Converted()
    return [_message_from_framework(m, unsupported, seen) for m in messages]


def _route(extra: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(extra.get("route"), str):
        out["route"] = extra["route"]
    if isinstance(extra.get("repairs"), list):
        out["repairs"] = tuple(str(r) for r in extra["repairs"])
    return out


def _finish(reason: Any) -> str | None:
    return None if reason is None else str(getattr(reason, "value", reason))


def response_from_framework(response: Any, *, unsupported: Unsupported = "refuse") -> tuple[ChatResponse, Converted]:
    """An Agent Framework ``ChatResponse`` as agent_nb's, and what the conversion met (usage, drops)."""
    seen = Converted()
    messages = messages_from_framework(response.messages, unsupported=unsupported, seen=seen)
    seen.add_usage(usage_from_framework(response.usage_details))
    out = ChatResponse(
        messages,
        response_id=response.response_id,
        model=response.model,
        finish_reason=_finish(response.finish_reason),
        usage=seen.usage,
        **_route(_kept(response)),
    )
    return out, seen


def update_from_framework(update: Any, *, unsupported: Unsupported = "refuse") -> tuple[ChatResponseUpdate, Converted]:
    """An Agent Framework ``ChatResponseUpdate`` as agent_nb's; a usage content becomes its ``usage``."""
    seen = Converted()
    wrapper = af.Message(update.role or "assistant", list(update.contents), author_name=update.author_name)
    (message,) = messages_from_framework([wrapper], unsupported=unsupported, seen=seen)
    out = ChatResponseUpdate(
        message.contents,
        role=message.role,
        author_name=update.author_name,
        message_id=update.message_id,
        response_id=update.response_id,
        model=getattr(update, "model", None),  # an agent's update has none
        finish_reason=_finish(getattr(update, "finish_reason", None)),
        usage=seen.usage,
        **_route(_kept(update)),
    )
    return out, seen


def agent_response_from_framework(
    response: Any, *, unsupported: Unsupported = "refuse"
) -> tuple[AgentResponse, Converted]:
    """An Agent Framework ``AgentResponse`` as agent_nb's, and what the conversion met."""
    seen = Converted()
    messages = messages_from_framework(response.messages, unsupported=unsupported, seen=seen)
    seen.add_usage(usage_from_framework(response.usage_details))
    out = AgentResponse(messages, response_id=response.response_id, usage=seen.usage, **_route(_kept(response)))
    return out, seen


def agent_update_from_framework(
    update: Any, *, unsupported: Unsupported = "refuse"
) -> tuple[AgentResponseUpdate, Converted]:
    """An Agent Framework ``AgentResponseUpdate`` as agent_nb's."""
    chat, seen = update_from_framework(update, unsupported=unsupported)
    out = AgentResponseUpdate(
        chat.contents,
        role=chat.role,
        author_name=chat.author_name,
        message_id=chat.message_id,
        response_id=chat.response_id,
        usage=chat.usage,
        route=chat.route,
        repairs=chat.repairs,
    )
    return out, seen
