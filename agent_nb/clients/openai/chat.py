"""``OpenAIChatClient``: a model behind the Chat Completions API (``/v1/chat/completions``)."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, NamedTuple

from ...messages import (
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    TextContent,
    Usage,
)
from ..base import HistoryMode
from ..redaction import TextScrubber
from ._answers import Malformed, an_object, get
from ._common import RESPONSES_ONLY, OpenAIClientBase
from ._contents import arguments_json, parse_arguments, result_text, tool_schemas, user_parts

if TYPE_CHECKING:
    from ...sessions import AgentSession

__all__ = ["OpenAIChatClient"]


class OpenAIChatClient(OpenAIClientBase):
    """A model behind the Chat Completions API; caller-managed history, so it can be a route.

    Extra keywords are default request options: ``temperature``, ``max_tokens``, ``seed``, ...
    (see the package docstring for how options carry over between the two APIs).
    """

    history_mode: HistoryMode = "caller"
    _OTHER_OPTIONS = RESPONSES_ONLY - {"max_output_tokens", "instructions", "text"}
    ENDPOINT = "/chat/completions"
    ANSWER = "a chat completion"

    def request(self, messages: Sequence[Message], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The exact keyword arguments sent to ``chat.completions.create``."""
        payload = self._options(options)
        if "max_output_tokens" in payload:
            limit = payload.pop("max_output_tokens")
            payload.setdefault("max_tokens", limit)
        text = payload.pop("text", None)
        if isinstance(text, Mapping) and "format" in text:
            payload.setdefault("response_format", _response_format(text["format"]))
        instructions = payload.pop("instructions", None)
        if instructions:
            messages = [Message("system", instructions), *messages]
        choice = payload.get("tool_choice")
        if isinstance(choice, Mapping) and "name" in choice:  # the Responses form
            payload["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        if "tools" in payload:
            tools = tool_schemas(payload.pop("tools"))
            if tools:
                payload["tools"] = [{"type": "function", "function": t} for t in tools]
        payload["messages"] = [entry for m in messages for entry in chat_messages(m)]
        return payload

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        payload = self.request(messages, options)
        completion = await self.call(lambda: self.sdk.chat.completions.create(**payload), payload)
        data = self.answer_data(completion, payload)
        try:
            return _completion(data)
        except Malformed as why:
            problem = why.describe()
        raise self.bad_answer(problem, data, payload, stream=False)

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        payload = self.request(messages, options)
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
        secrets = self._scrubber(payload)  # compiled once, for every chunk of this answer
        text = TextScrubber(secrets)
        calls: dict[int, dict[str, str]] = {}
        usage: Usage | None = None
        finish = response_id = model = None
        recent: deque[Any] = deque(maxlen=3)
        seen = 0
        async with aclosing(self.stream(lambda: self.sdk.chat.completions.create(**payload), payload)) as chunks:
            async for chunk in chunks:
                seen += 1
                recent.append(chunk)
                problem = None
                try:
                    piece = _chunk(chunk)
                except Malformed as why:
                    problem = f"event {seen} of the stream is not a chat completion chunk: {why.describe()}"
                if problem is not None:
                    raise self.bad_answer(problem, chunk, payload, stream=True)
                response_id = secrets.scrub(piece.id, answer=True) if piece.id else response_id
                model = secrets.scrub(piece.model, answer=True) if piece.model else model
                usage = piece.usage or usage
                finish = piece.finish or finish
                for index, call_id, name, arguments in piece.calls:
                    slot = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call_id or slot["id"]
                    slot["name"] = name or slot["name"]  # sent once; some servers repeat it
                    slot["arguments"] += arguments
                shown = text.feed(piece.text) if piece.text else ""
                if shown:
                    yield ChatResponseUpdate([shown], response_id=response_id, model=model)
        if finish is None:
            raise self.bad_answer(
                f"the stream ended after {seen} event{'s' if seen != 1 else ''} without a finish_reason "
                "(the answer is not complete)",
                list(recent) or None,
                payload,
                stream=True,
                cut=True,
            )
        rest = text.flush()
        contents: list[Any] = [rest] if rest else []
        contents += [
            FunctionCallContent(
                call_id=secrets.scrub(c["id"], answer=True),
                name=secrets.scrub(c["name"], answer=True),
                arguments=parse_arguments(secrets.scrub(c["arguments"], answer=True)),
            )
            for _, c in sorted(calls.items())
        ]
        yield ChatResponseUpdate(contents, response_id=response_id, model=model, usage=usage, finish_reason=finish)


class _Chunk(NamedTuple):
    id: str | None
    model: str | None
    usage: Usage | None
    finish: str | None
    text: str
    calls: list[tuple[int, str | None, str | None, str]]


def _usage(data: Mapping[str, Any]) -> Usage | None:
    usage = get(data, "usage", dict)
    if usage is None:
        return None
    return Usage(
        input_tokens=get(usage, "prompt_tokens", int, "usage") or 0,
        output_tokens=get(usage, "completion_tokens", int, "usage") or 0,
    )


def _completion(data: Mapping[str, Any]) -> ChatResponse:
    """A whole answer (checked field by field) as a ``ChatResponse``."""
    choices = get(data, "choices", list, required=True)
    if not choices:
        raise Malformed("choices", "a list of at least one choice", choices)
    choice = an_object(choices[0], "choices[0]")
    message = get(choice, "message", dict, "choices[0]", required=True)
    contents: list[Any] = []
    content = get(message, "content", str, "choices[0].message")
    if content:
        contents.append(TextContent(content))
    for i, call in enumerate(get(message, "tool_calls", list, "choices[0].message") or ()):
        where = f"choices[0].message.tool_calls[{i}]"
        fn = get(an_object(call, where), "function", dict, where)
        if fn is not None:
            contents.append(
                FunctionCallContent(
                    call_id=get(call, "id", str, where) or "",
                    name=get(fn, "name", str, f"{where}.function", required=True),
                    arguments=parse_arguments(get(fn, "arguments", str, f"{where}.function")),
                )
            )
    return ChatResponse(
        [Message("assistant", contents)],
        response_id=get(data, "id", str),
        model=get(data, "model", str),
        finish_reason=get(choice, "finish_reason", str, "choices[0]"),
        usage=_usage(data),
    )


def _chunk(data: Any) -> _Chunk:
    """One streamed chunk, checked field by field."""
    data = an_object(data, "the event")
    text: list[str] = []
    calls: list[tuple[int, str | None, str | None, str]] = []
    finish = None
    for i, choice in enumerate(get(data, "choices", list, required=True)):
        where = f"choices[{i}]"
        choice = an_object(choice, where)
        finish = get(choice, "finish_reason", str, where) or finish
        delta = get(choice, "delta", dict, where) or {}
        text.append(get(delta, "content", str, f"{where}.delta") or "")
        for j, part in enumerate(get(delta, "tool_calls", list, f"{where}.delta") or ()):
            at = f"{where}.delta.tool_calls[{j}]"
            part = an_object(part, at)
            fn = get(part, "function", dict, at) or {}
            index = get(part, "index", int, at)
            calls.append(
                (
                    j if index is None else index,
                    get(part, "id", str, at),
                    get(fn, "name", str, f"{at}.function"),
                    get(fn, "arguments", str, f"{at}.function") or "",
                )
            )
    return _Chunk(get(data, "id", str), get(data, "model", str), _usage(data), finish, "".join(text), calls)


def chat_messages(m: Message) -> list[dict[str, Any]]:
    """One message in Chat Completions form (a tool message becomes one entry per result)."""
    if m.role == "tool":
        return [
            {"role": "tool", "tool_call_id": c.call_id, "content": result_text(c)}
            for c in m.contents
            if isinstance(c, FunctionResultContent)
        ]
    if m.role == "assistant":
        calls = [c for c in m.contents if isinstance(c, FunctionCallContent)]
        entry: dict[str, Any] = {"role": "assistant", "content": m.text}  # "" rather than null: servers differ
        if calls:
            entry["tool_calls"] = [
                {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": arguments_json(c)}}
                for c in calls
            ]
        return [entry]
    parts = user_parts(m, text="text", image="image_url")
    if all(p["type"] == "text" for p in parts):
        return [{"role": m.role, "content": " ".join(p["text"] for p in parts)}]
    for p in parts:
        if p["type"] == "image_url":
            p["image_url"] = {"url": p["image_url"]}
    return [{"role": m.role, "content": parts}]


def _response_format(fmt: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses API's ``text.format`` as Chat Completions' ``response_format``."""
    if fmt.get("type") != "json_schema":
        return dict(fmt)
    schema = {k: v for k, v in fmt.items() if k != "type"}
    return {"type": "json_schema", "json_schema": schema}
