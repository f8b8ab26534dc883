"""``OpenAIChatClient``: a model behind the Chat Completions API (``/v1/chat/completions``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

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
from ._common import (
    RESPONSES_ONLY,
    OpenAIClientBase,
    arguments_json,
    parse_arguments,
    result_text,
    tool_schemas,
    user_parts,
)

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
        completion = await self.call(lambda: self.sdk.chat.completions.create(**payload))
        choice = completion.choices[0]
        contents: list[Any] = []
        if choice.message.content:
            contents.append(TextContent(choice.message.content))
        for call in choice.message.tool_calls or ():
            fn = getattr(call, "function", None)
            if fn is not None:
                contents.append(
                    FunctionCallContent(call_id=call.id, name=fn.name, arguments=parse_arguments(fn.arguments))
                )
        usage = completion.usage
        return ChatResponse(
            [Message("assistant", contents)],
            response_id=completion.id,
            model=completion.model,
            finish_reason=choice.finish_reason,
            usage=Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens) if usage else None,
        )

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
        calls: dict[int, dict[str, str]] = {}
        usage = finish = response_id = model = None
        async with aclosing(self.stream(lambda: self.sdk.chat.completions.create(**payload))) as chunks:
            async for chunk in chunks:
                response_id, model = chunk.id or response_id, chunk.model or model
                if chunk.usage is not None:
                    usage = Usage(input_tokens=chunk.usage.prompt_tokens, output_tokens=chunk.usage.completion_tokens)
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    delta = choice.delta
                    for part in delta.tool_calls or ():
                        slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                        slot["id"] = part.id or slot["id"]
                        if part.function is not None:
                            slot["name"] = part.function.name or slot["name"]  # sent once; some servers repeat it
                            slot["arguments"] += part.function.arguments or ""
                    if delta.content:
                        yield ChatResponseUpdate([delta.content], response_id=response_id, model=model)
        tool_calls = [
            FunctionCallContent(call_id=c["id"], name=c["name"], arguments=parse_arguments(c["arguments"]))
            for _, c in sorted(calls.items())
        ]
        yield ChatResponseUpdate(tool_calls, response_id=response_id, model=model, usage=usage, finish_reason=finish)


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
