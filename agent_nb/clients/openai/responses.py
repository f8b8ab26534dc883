"""``OpenAIResponsesClient`` (the Responses API, ``/v1/responses``) and ``import_conversation``."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ...errors import ModelError, UsageError
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
from ..redaction import TextScrubber, scrub_tree
from ._answers import Malformed, an_object, as_json, get
from ._common import CHAT_ONLY, OpenAIClientBase
from ._contents import arguments_json, parse_arguments, result_text, tool_schemas, user_parts

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from ...sessions import AgentSession

__all__ = ["OpenAIResponsesClient", "import_conversation"]

_SERVICE_KEYS = ("store", "previous_response_id", "conversation")


class OpenAIResponsesClient(OpenAIClientBase):
    """A model behind the Responses API.

    With ``store=False`` (the default) the whole conversation is sent each time:
    caller-managed, so it can be a route. With ``store=True`` the service keeps the
    conversation: each request sends only the new messages and the previous response's id,
    kept in the session. Such a client cannot be a route; ``import_conversation`` brings
    its conversation back to the caller.
    """

    _OTHER_OPTIONS = CHAT_ONLY - {"max_completion_tokens"} | {"seed", "stop"}
    ENDPOINT = "/responses"
    ANSWER = "a response"

    def __init__(self, model: str, *, store: bool = False, **settings: Any) -> None:
        super().__init__(model, **settings)
        self.store = store

    @property
    def history_mode(self) -> HistoryMode:
        return "service" if self.store else "caller"

    def _check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        extra = options.get("extra_body")
        if isinstance(extra, Mapping) and any(k in extra for k in _SERVICE_KEYS):
            raise UsageError(
                f"{type(self).__name__}: {', '.join(k for k in _SERVICE_KEYS if k in extra)} in extra_body would "
                "hand the conversation to the service behind agent_nb's back; use store=True instead"
            )
        return super()._check_options(options)

    def _state_key(self) -> str:
        return f"openai.previous_response_id.{self.model}"

    def request(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None, *, previous: str | None = None
    ) -> dict[str, Any]:
        """The exact keyword arguments sent to ``responses.create``."""
        payload = self._options(options)
        for name in ("max_tokens", "max_completion_tokens"):
            if name in payload:
                limit = payload.pop(name)
                payload.setdefault("max_output_tokens", limit)
        fmt = payload.pop("response_format", None)
        if isinstance(fmt, Mapping):
            payload.setdefault("text", {"format": _text_format(fmt)})
        choice = payload.get("tool_choice")
        if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):  # the Chat form
            payload["tool_choice"] = {"type": "function", "name": choice["function"]["name"]}
        if "tools" in payload:
            tools = tool_schemas(payload.pop("tools"))
            if tools:
                payload["tools"] = [{"type": "function", "strict": False, **t} for t in tools]
        payload["store"] = self.store
        if previous is not None:
            payload["previous_response_id"] = previous
            last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
            messages = messages[last + 1 :]  # the service has everything up to its last answer
        payload["input"] = [item for m in messages for item in response_items(m)]
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
        answer = await self.call(lambda: self.sdk.responses.create(**payload), payload)
        data = self.answer_data(answer, payload)
        problem = None
        try:
            contents = [
                c
                for i, entry in enumerate(get(data, "output", list, required=True))
                for c in output_contents(an_object(entry, f"output[{i}]"), f"output[{i}]")
            ]
            response_id, model, usage = get(data, "id", str), get(data, "model", str), _usage(data)
            finish = _finish(data, contents)
        except Malformed as why:
            problem = why.describe()
        if problem is not None:
            raise self.bad_answer(problem, data, payload, stream=False)
        if data.get("status") == "failed":
            raise ModelError(self._failure(data, payload))
        self._remember(session, response_id)
        return ChatResponse(
            [Message("assistant", contents)],
            response_id=response_id,
            model=model,
            finish_reason=finish,
            usage=usage,
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
        secrets = self._scrubber(payload)  # compiled once, for every event of this answer
        text = TextScrubber(secrets)
        calls: list[Any] = []
        final: tuple[str | None, str | None, Usage | None, dict[str, Any]] | None = None
        recent: deque[Any] = deque(maxlen=3)
        seen = 0
        async with aclosing(self.stream(lambda: self.sdk.responses.create(**payload), payload)) as events:
            async for event in events:
                seen += 1
                recent.append(event)
                problem = failure = None
                delta = ""
                try:
                    kind = get(an_object(event, "the event"), "type", str, required=True)
                    if kind == "response.output_text.delta":
                        delta = get(event, "delta", str, required=True)
                    elif kind == "response.output_item.done":
                        done = get(event, "item", dict, required=True)
                        if done.get("type") == "function_call":
                            calls.extend(output_contents(scrub_tree(done, secrets, answer=True), "item"))
                    elif kind in ("response.completed", "response.incomplete"):
                        response = scrub_tree(get(event, "response", dict, required=True), secrets, answer=True)
                        _finish(response, calls)  # every field is checked here, in the event it came with
                        final = (get(response, "id", str), get(response, "model", str), _usage(response), response)
                    elif kind in ("response.failed", "error"):
                        failure = self._failure(event, payload)
                except Malformed as why:
                    problem = f"event {seen} of the stream is not one of the Responses API: {why.describe()}"
                if problem is not None:
                    raise self.bad_answer(problem, event, payload, stream=True)
                if failure is not None:
                    raise ModelError(failure)
                shown = text.feed(delta) if delta else ""
                if shown:
                    yield ChatResponseUpdate([shown], model=self.model)
        if final is None:
            raise self.bad_answer(
                f"the stream ended after {seen} event{'s' if seen != 1 else ''} without response.completed "
                "(the answer is not complete)",
                list(recent) or None,
                payload,
                stream=True,
                cut=True,
            )
        response_id, model, usage, response = final
        self._remember(session, response_id)
        rest = text.flush()
        yield ChatResponseUpdate(
            [*([rest] if rest else []), *calls],
            response_id=response_id,
            model=model or self.model,
            usage=usage,
            finish_reason=_finish(response, calls),
        )

    def _failure(self, event: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> str:
        """The server's own words for a failed response: scrubbed first, then cut to length."""
        response = event.get("response") if isinstance(event.get("response"), Mapping) else event
        error = response.get("error") if isinstance(response, Mapping) else None
        detail = error.get("message") if isinstance(error, Mapping) else None
        said = detail or event.get("message") or as_json(event)
        return f"{self._where(options)}: the response failed: {self.scrub(str(said), options)[:300]}"


def _text_format(fmt: Mapping[str, Any]) -> dict[str, Any]:
    """Chat Completions' ``response_format`` as the Responses API's ``text.format``."""
    if fmt.get("type") != "json_schema":
        return dict(fmt)
    return {"type": "json_schema", **dict(fmt.get("json_schema", {}))}


def response_items(m: Message) -> list[dict[str, Any]]:
    """One message as Responses API input items (``type`` always given: some servers insist)."""
    if m.role == "tool":
        return [
            {"type": "function_call_output", "call_id": c.call_id, "output": result_text(c)}
            for c in m.contents
            if isinstance(c, FunctionResultContent)
        ]
    if m.role == "assistant":
        items: list[dict[str, Any]] = []
        if m.text:
            items.append({"type": "message", "role": "assistant", "content": m.text})
        items.extend(
            {"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": arguments_json(c)}
            for c in m.contents
            if isinstance(c, FunctionCallContent)
        )
        return items
    parts = user_parts(m, text="input_text", image="input_image")
    for p in parts:
        if p["type"] == "input_image":
            p["detail"] = "auto"
    return [{"type": "message", "role": m.role, "content": parts}]


def output_contents(entry: Mapping[str, Any], where: str = "output") -> list[Any]:
    """The contents of one output item (a message's texts, a function call); other kinds have none here."""
    kind = get(entry, "type", str, where)
    if kind == "message":
        texts = []
        for i, part in enumerate(get(entry, "content", list, where) or ()):
            at = f"{where}.content[{i}]"
            if get(an_object(part, at), "type", str, at) == "output_text":
                texts.append(get(part, "text", str, at))
        return [TextContent(t) for t in texts if t]
    if kind == "function_call":
        return [
            FunctionCallContent(
                call_id=get(entry, "call_id", str, where, required=True),
                name=get(entry, "name", str, where, required=True),
                arguments=parse_arguments(get(entry, "arguments", str, where)),
            )
        ]
    return []


def _usage(response: Mapping[str, Any]) -> Usage | None:
    usage = get(response, "usage", dict, "response")
    if usage is None:
        return None
    return Usage(
        input_tokens=get(usage, "input_tokens", int, "response.usage") or 0,
        output_tokens=get(usage, "output_tokens", int, "response.usage") or 0,
    )


def _finish(response: Mapping[str, Any], contents: Sequence[Any]) -> str:
    if get(response, "status", str, "response") == "incomplete":
        details = get(response, "incomplete_details", dict, "response") or {}
        return str(details.get("reason") or "incomplete")
    return "tool_calls" if any(c.type == "function_call" for c in contents) else "stop"


async def import_conversation(
    source: OpenAIResponsesClient | AsyncOpenAI,
    response_id: str | None = None,
    *,
    conversation_id: str | None = None,
) -> list[Message]:
    """The messages of a service-managed conversation, to store in a history provider and route freely.

    Give the id of its last response (its input items and its output are read) or, for the
    Conversations API, the conversation's id. Text, tool calls and tool results are kept;
    other items (images, files, reasoning) become a ``[kind]`` placeholder text.
    """
    if (response_id is None) == (conversation_id is None):
        raise UsageError("import_conversation needs exactly one of response_id=... or conversation_id=...")
    sdk = source.sdk if isinstance(source, OpenAIResponsesClient) else source
    errors = source if isinstance(source, OpenAIResponsesClient) else OpenAIResponsesClient("import", client=sdk)

    async def fetch() -> list[Any]:
        if conversation_id is not None:
            return [item async for item in sdk.conversations.items.list(conversation_id, order="asc")]
        assert response_id is not None
        items: list[Any] = [item async for item in sdk.responses.input_items.list(response_id, order="asc")]
        items.extend((await sdk.responses.retrieve(response_id)).output)
        return items

    return _items_to_messages(await errors.call(fetch))


def _append(messages: list[Message], role: str, content: Any) -> None:
    """Add a content, to the last message when it has the same role (calls and results group)."""
    if messages and messages[-1].role == role and role in ("assistant", "tool"):
        last = messages.pop()
        messages.append(Message(role, [*last.contents, content]))
    else:
        messages.append(Message(role, [content]))


def _items_to_messages(items: Iterable[Any]) -> list[Message]:
    messages: list[Message] = []
    for item in items:
        kind = getattr(item, "type", "message")
        if kind == "message":
            parts = [
                TextContent(getattr(p, "text", "") or getattr(p, "refusal", "") or f"[{getattr(p, 'type', 'part')}]")
                for p in getattr(item, "content", ())
            ]
            role = item.role if item.role in ("system", "user", "assistant") else "system"  # "developer" too
            messages.append(Message(role, parts))
        elif kind == "function_call":
            call = FunctionCallContent(call_id=item.call_id, name=item.name, arguments=parse_arguments(item.arguments))
            _append(messages, "assistant", call)
        elif kind == "function_call_output":
            _append(messages, "tool", FunctionResultContent(call_id=item.call_id, result=item.output))
        else:
            messages.append(Message("assistant", f"[{kind}]"))
    return messages
