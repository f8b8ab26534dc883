"""OpenAI clients on the official SDK's async client: Chat Completions and Responses.

Both work with any OpenAI-compatible server through ``base_url`` (llama.cpp's server,
vLLM, Ollama). The API key comes from ``api_key`` or ``OPENAI_API_KEY`` and is never
shown: not in a repr, an error message or a trace. Server errors become agent_nb errors:
``ModelRateLimited``, ``ModelTimeout``, ``ModelUnavailable`` (retryable) and
``ModelBadRequest`` (with the server's own message).

```python
local = OpenAIChatClient("gemma", base_url="http://127.0.0.1:8080/v1")
hosted = OpenAIResponsesClient("gpt-4.1-mini")  # store=False: caller-managed, so it can be routed
```
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import (
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
    UsageError,
    did_you_mean,
)
from ..messages import (
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    TextContent,
    Usage,
    tool_work_as_text,
)
from ..tools import FunctionTool
from .base import Capabilities, HistoryMode

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from ..sessions import AgentSession

__all__ = ["OpenAIChatClient", "OpenAIResponsesClient", "import_conversation"]

_LOCAL_KEY = "not-needed"  # OpenAI-compatible local servers ignore the key, the SDK insists on one


def _sdk_module() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - openai is a dependency
        raise ImportError("the OpenAI clients need the openai package: pip install agent_nb") from exc
    return openai


def _arguments(raw: str | None) -> dict[str, Any] | str:
    """Parsed tool-call arguments, or the raw text when the model sent something that is not JSON."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    return value if isinstance(value, dict) else raw


def _arguments_json(call: FunctionCallContent) -> str:
    if not isinstance(call.arguments, str):
        return json.dumps(call.arguments)
    # A model's broken arguments (cut off, not JSON) were answered with an error already; servers
    # that parse the history would refuse the whole request over them, so they travel as {}.
    return call.arguments if isinstance(_arguments(call.arguments), dict) else "{}"


def _result_text(result: FunctionResultContent) -> str:
    if result.exception:
        return f"Error: {result.exception}"
    return result.result if isinstance(result.result, str) else json.dumps(result.result, default=str)


def _image_url(content: Any) -> str | None:
    media = getattr(content, "media_type", None) or ""
    if not media.startswith("image/"):
        return None
    if content.type == "data":
        return f"data:{media};base64,{base64.b64encode(content.data).decode()}"
    return str(content.uri)


def _tool_schemas(tools: Iterable[Any]) -> list[dict[str, Any]]:
    out = []
    for t in tools:
        if isinstance(t, FunctionTool):
            out.append(t.schema())
        elif isinstance(t, Mapping):
            out.append(dict(t.get("function", t)))
        else:
            out.append(FunctionTool(t).schema())
    return out


class _OpenAIClient:
    """What both clients share: configuration, the SDK client, options, error mapping."""

    _OPTIONS: frozenset[str] = frozenset()

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        capabilities: Capabilities | None = None,
        timeout: float | None = None,
        max_retries: int = 2,
        **defaults: Any,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.capabilities = capabilities or Capabilities()
        self.defaults = self._check_options(defaults)
        self._timeout = timeout
        self._max_retries = max_retries
        self._client = client
        self._api_key = api_key

    def _key(self) -> str:
        key = self._api_key or os.environ.get("OPENAI_API_KEY")
        if key:
            return key
        if self.base_url:
            return _LOCAL_KEY
        raise UsageError(
            f"{self!r} has no API key: pass api_key=..., set OPENAI_API_KEY, or give base_url= for a local server"
        )

    @property
    def sdk(self) -> AsyncOpenAI:
        """The SDK's async client (made on first use)."""
        if self._client is None:
            openai = _sdk_module()
            kwargs: dict[str, Any] = {"api_key": self._key(), "max_retries": self._max_retries}
            if self.base_url:
                kwargs["base_url"] = self.base_url
            if self._timeout is not None:
                kwargs["timeout"] = self._timeout
            self._client = openai.AsyncOpenAI(**kwargs)
        return self._client

    async def aclose(self) -> None:
        """Close the connections of the SDK client (also one passed in as ``client=``)."""
        if self._client is not None:
            await self._client.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        for key in options:
            if key not in self._OPTIONS:
                raise UsageError(
                    f"{type(self).__name__} does not know the option {key!r}{did_you_mean(key, self._OPTIONS)}; "
                    f"known: {', '.join(sorted(self._OPTIONS))} (anything else goes in extra_body={{...}})"
                )
        return dict(options)

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        merged = {**self.defaults, **self._check_options(options or {})}
        merged.setdefault("model", self.model)
        return merged

    def _scrub(self, text: str) -> str:
        """Whatever a server echoes back, the key never reaches a message."""
        for secret in (self._api_key, os.environ.get("OPENAI_API_KEY"), getattr(self._client, "api_key", None)):
            if secret and secret != _LOCAL_KEY:
                text = text.replace(secret, "***")
        return text

    def _error(self, exc: Exception) -> Exception:
        openai = _sdk_module()
        where = f"{self!r}"
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeout(f"{where}: the server did not answer in time; try again or raise timeout=")
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(
                self._scrub(f"{where}: cannot reach the server ({exc}); is it running at {self.base_url or 'the API'}?")
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            body = exc.body if isinstance(exc.body, dict) else {}
            detail = body.get("error", body)
            said = detail.get("message") if isinstance(detail, dict) else None
            said = self._scrub(str(said or exc.message))
            if status == 429:
                return ModelRateLimited(f"{where}: rate limited (429): {said}; wait, or route elsewhere")
            if status >= 500:
                return ModelUnavailable(f"{where}: the server failed ({status}): {said}")
            if status in (401, 403):
                return ModelBadRequest(
                    f"{where}: the server refused the API key ({status}): {said}; check the key (not shown)",
                    status=status,
                )
            return ModelBadRequest(f"{where}: the server refused the request ({status}): {said}", status=status)
        if isinstance(exc, openai.OpenAIError):
            return ModelError(self._scrub(f"{where}: {type(exc).__name__}: {exc}"))
        return exc

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}({self.model!r}{where})"


class OpenAIChatClient(_OpenAIClient):
    """A model behind the Chat Completions API (``/v1/chat/completions``); caller-managed history.

    Extra keywords are default request options: ``temperature``, ``max_tokens``, ``seed``, ...
    """

    history_mode: HistoryMode = "caller"
    _OPTIONS = frozenset(
        {
            "model", "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop", "tools",
            "tool_choice", "parallel_tool_calls", "response_format", "presence_penalty", "frequency_penalty",
            "logit_bias", "user", "extra_body", "extra_headers",
        }
    )  # fmt: skip

    def request(self, messages: Sequence[Message], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The exact keyword arguments sent to ``chat.completions.create``."""
        payload = self._options(options)
        if "tools" in payload:
            tools = _tool_schemas(payload.pop("tools"))
            if tools:
                payload["tools"] = [{"type": "function", "function": t} for t in tools]
        payload["messages"] = [d for m in messages for d in _chat_messages(m)]
        return payload

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        payload = self.request(messages, options)
        try:
            completion = await self.sdk.chat.completions.create(**payload)
        except Exception as exc:
            raise self._error(exc) from None
        choice = completion.choices[0]
        contents: list[Any] = []
        if choice.message.content:
            contents.append(TextContent(choice.message.content))
        for call in choice.message.tool_calls or ():
            fn = getattr(call, "function", None)
            if fn is not None:
                contents.append(FunctionCallContent(call_id=call.id, name=fn.name, arguments=_arguments(fn.arguments)))
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
        try:
            stream = await self.sdk.chat.completions.create(**payload)
            async for chunk in stream:
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
                            slot["name"] += part.function.name or ""
                            slot["arguments"] += part.function.arguments or ""
                    if delta.content:
                        yield ChatResponseUpdate([delta.content], response_id=response_id, model=model)
        except Exception as exc:
            raise self._error(exc) from None
        tool_calls = [
            FunctionCallContent(call_id=c["id"], name=c["name"], arguments=_arguments(c["arguments"]))
            for _, c in sorted(calls.items())
        ]
        yield ChatResponseUpdate(tool_calls, response_id=response_id, model=model, usage=usage, finish_reason=finish)


def _chat_messages(m: Message) -> list[dict[str, Any]]:
    """One message in Chat Completions form (a tool message becomes one entry per result)."""
    if m.role == "tool":
        return [
            {"role": "tool", "tool_call_id": c.call_id, "content": _result_text(c)}
            for c in m.contents
            if isinstance(c, FunctionResultContent)
        ]
    if m.role == "assistant":
        calls = [c for c in m.contents if isinstance(c, FunctionCallContent)]
        entry: dict[str, Any] = {"role": "assistant", "content": m.text}  # "" rather than null: servers differ
        if calls:
            entry["tool_calls"] = [
                {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": _arguments_json(c)}}
                for c in calls
            ]
        return [entry]
    parts: list[dict[str, Any]] = []
    for c in m.contents:
        url = _image_url(c)
        if url is not None:
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            text = c.text if c.type == "text" else getattr(tool_work_as_text(c), "text", f"[{c.type}]")
            parts.append({"type": "text", "text": text})
    if all(p["type"] == "text" for p in parts):
        return [{"role": m.role, "content": " ".join(p["text"] for p in parts)}]
    return [{"role": m.role, "content": parts}]


class OpenAIResponsesClient(_OpenAIClient):
    """A model behind the Responses API (``/v1/responses``).

    With ``store=False`` (the default) the whole conversation is sent each time:
    caller-managed, so it can be a route. With ``store=True`` the service keeps the
    conversation: each request sends only the new messages and the previous response's id,
    kept in the session. Such a client cannot be a route; ``import_conversation`` brings
    its conversation back to the caller.
    """

    _OPTIONS = frozenset(
        {
            "model", "temperature", "top_p", "max_output_tokens", "max_tokens", "tools", "tool_choice",
            "parallel_tool_calls", "instructions", "text", "reasoning", "truncation", "user", "metadata",
            "extra_body", "extra_headers",
        }
    )  # fmt: skip

    def __init__(self, model: str, *, store: bool = False, **settings: Any) -> None:
        super().__init__(model, **settings)
        self.store = store

    @property
    def history_mode(self) -> HistoryMode:
        return "service" if self.store else "caller"

    def _state_key(self) -> str:
        return f"openai.previous_response_id.{self.model}"

    def request(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None, *, previous: str | None = None
    ) -> dict[str, Any]:
        """The exact keyword arguments sent to ``responses.create``."""
        payload = self._options(options)
        if "max_tokens" in payload:
            payload["max_output_tokens"] = payload.pop("max_tokens")
        if "tools" in payload:
            tools = _tool_schemas(payload.pop("tools"))
            if tools:
                payload["tools"] = [{"type": "function", **t} for t in tools]
        payload["store"] = self.store
        if previous is not None:
            payload["previous_response_id"] = previous
            last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
            messages = messages[last + 1 :]  # the service has everything up to its last answer
        payload["input"] = [item for m in messages for item in _response_items(m)]
        return payload

    def _previous(self, session: AgentSession | None) -> str | None:
        if not self.store or session is None:
            return None
        value = session.state.get(self._state_key())
        return str(value) if value else None

    def _remember(self, session: AgentSession | None, response_id: str | None) -> None:
        if self.store and session is not None and response_id:
            session.state[self._state_key()] = response_id

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        payload = self.request(messages, options, previous=self._previous(session))
        try:
            response = await self.sdk.responses.create(**payload)
        except Exception as exc:
            raise self._error(exc) from None
        self._remember(session, response.id)
        contents = [c for item in response.output for c in _output_contents(item)]
        return ChatResponse(
            [Message("assistant", contents)],
            response_id=response.id,
            model=response.model,
            finish_reason=_finish(response, contents),
            usage=_usage(response),
        )

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        payload = self.request(messages, options, previous=self._previous(session))
        payload["stream"] = True
        calls: list[Any] = []
        final = None
        try:
            stream = await self.sdk.responses.create(**payload)
            async for event in stream:
                kind = getattr(event, "type", "")
                if kind == "response.output_text.delta" and event.delta:
                    yield ChatResponseUpdate([event.delta], model=self.model)
                elif kind == "response.output_item.done" and getattr(event.item, "type", "") == "function_call":
                    calls.extend(_output_contents(event.item))
                elif kind in ("response.completed", "response.incomplete"):
                    final = event.response
                elif kind in ("response.failed", "error"):
                    raise ModelError(self._scrub(f"{self!r}: the response failed: {event!r:.300}"))
        except ModelError:
            raise
        except Exception as exc:
            raise self._error(exc) from None
        response_id = getattr(final, "id", None)
        self._remember(session, response_id)
        yield ChatResponseUpdate(
            calls,
            response_id=response_id,
            model=getattr(final, "model", None) or self.model,
            usage=_usage(final) if final is not None else None,
            finish_reason=_finish(final, calls) if final is not None else None,
        )


def _response_items(m: Message) -> list[dict[str, Any]]:
    """One message as Responses API input items (``type`` always given: some servers insist)."""
    items: list[dict[str, Any]] = []
    if m.role == "tool":
        return [
            {"type": "function_call_output", "call_id": c.call_id, "output": _result_text(c)}
            for c in m.contents
            if isinstance(c, FunctionResultContent)
        ]
    if m.role == "assistant":
        if m.text:
            items.append({"type": "message", "role": "assistant", "content": m.text})
        items.extend(
            {"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": _arguments_json(c)}
            for c in m.contents
            if isinstance(c, FunctionCallContent)
        )
        return items
    parts: list[dict[str, Any]] = []
    for c in m.contents:
        url = _image_url(c)
        if url is not None:
            parts.append({"type": "input_image", "image_url": url})
        else:
            text = c.text if c.type == "text" else getattr(tool_work_as_text(c), "text", f"[{c.type}]")
            parts.append({"type": "input_text", "text": text})
    return [{"type": "message", "role": m.role, "content": parts}]


def _output_contents(item: Any) -> list[Any]:
    kind = getattr(item, "type", "")
    if kind == "message":
        return [TextContent(p.text) for p in item.content if getattr(p, "type", "") == "output_text" and p.text]
    if kind == "function_call":
        return [FunctionCallContent(call_id=item.call_id, name=item.name, arguments=_arguments(item.arguments))]
    return []


def _usage(response: Any) -> Usage | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    return Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0)


def _finish(response: Any, contents: Sequence[Any]) -> str:
    if getattr(response, "status", None) == "incomplete":
        details = getattr(response, "incomplete_details", None)
        return str(getattr(details, "reason", None) or "incomplete")
    return "tool_calls" if any(c.type == "function_call" for c in contents) else "stop"


async def import_conversation(
    source: OpenAIResponsesClient | AsyncOpenAI,
    response_id: str | None = None,
    *,
    conversation_id: str | None = None,
) -> list[Message]:
    """The messages of a service-managed conversation, to store in a history provider and route freely.

    Give the id of its last response (its input items and its output are read) or, for the
    Conversations API, the conversation's id.
    """
    if (response_id is None) == (conversation_id is None):
        raise UsageError("import_conversation needs exactly one of response_id=... or conversation_id=...")
    sdk = source.sdk if isinstance(source, OpenAIResponsesClient) else source
    errors = source if isinstance(source, OpenAIResponsesClient) else OpenAIResponsesClient("import", client=sdk)
    items: list[Any]
    try:
        if conversation_id is not None:
            items = [item async for item in sdk.conversations.items.list(conversation_id, order="asc")]
        else:
            assert response_id is not None
            items = [item async for item in sdk.responses.input_items.list(response_id, order="asc")]
            items.extend((await sdk.responses.retrieve(response_id)).output)
    except Exception as exc:
        raise errors._error(exc) from None
    return _items_to_messages(items)


def _items_to_messages(items: Iterable[Any]) -> list[Message]:
    messages: list[Message] = []
    for item in items:
        kind = getattr(item, "type", "message")
        if kind == "message":
            texts = [getattr(p, "text", "") for p in getattr(item, "content", ()) if getattr(p, "text", "")]
            role = item.role if item.role in ("system", "user", "assistant") else "system"  # "developer" too
            messages.append(Message(role, [TextContent(t) for t in texts]))
        elif kind == "function_call":
            call = FunctionCallContent(call_id=item.call_id, name=item.name, arguments=_arguments(item.arguments))
            if messages and messages[-1].role == "assistant":
                last = messages.pop()
                messages.append(Message("assistant", [*last.contents, call]))
            else:
                messages.append(Message("assistant", [call]))
        elif kind == "function_call_output":
            result = FunctionResultContent(call_id=item.call_id, result=item.output)
            if messages and messages[-1].role == "tool":
                last = messages.pop()
                messages.append(Message("tool", [*last.contents, result]))
            else:
                messages.append(Message("tool", [result]))
    return messages
