"""The ``ChatClient`` protocol and the base of the deterministic offline clients."""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..messages import ChatResponse, ChatResponseUpdate, Message, Usage, estimate_tokens

__all__ = ["ChatClient", "OfflineChatClient"]

_WORDS = re.compile(r"\s*\S+|\s+")


@runtime_checkable
class ChatClient(Protocol):
    """Anything that turns a list of messages into a model's answer.

    ``get_response`` returns the whole answer; ``get_streaming_response`` yields it in
    increments. ``options`` carries per-request settings (model, temperature, tools, ...).
    """

    async def get_response(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None
    ) -> ChatResponse: ...

    def get_streaming_response(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None
    ) -> AsyncIterator[ChatResponseUpdate]: ...


class OfflineChatClient(ABC):
    """Base of the offline clients: subclasses implement ``reply``; streaming is word by word.

    Usage is estimated from the text (about four characters a token) so that token
    displays work offline. ``stream_delay`` (seconds between words) makes streaming
    visible in a notebook; it is 0 by default.
    """

    model: str = "offline"

    def __init__(self, *, stream_delay: float = 0.0) -> None:
        self.stream_delay = stream_delay

    @abstractmethod
    async def reply(self, messages: list[Message], options: Mapping[str, Any]) -> Message | ChatResponse:
        """The answer to one request; a subclass's only duty."""

    async def get_response(self, messages: Sequence[Message], options: Mapping[str, Any] | None = None) -> ChatResponse:
        request = list(messages)
        answer = await self.reply(request, options or {})
        if isinstance(answer, ChatResponse):
            return answer
        usage = Usage(input_tokens=estimate_tokens(request), output_tokens=estimate_tokens([answer]))
        return ChatResponse([answer], model=self.model, usage=usage, finish_reason="stop")

    async def get_streaming_response(
        self, messages: Sequence[Message], options: Mapping[str, Any] | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        response = await self.get_response(messages, options)
        last = len(response.messages) - 1
        previous: tuple[str, str | None, str | None] | None = None
        for i, message in enumerate(response.messages):
            message_id = message.message_id
            if previous == (message.role, message.author_name, message_id):
                message_id = f"{response.response_id or 'message'}-{i}"  # else the stream would join the two
            previous = (message.role, message.author_name, message_id)
            pieces: list[list[Any]] = [[p] for p in _WORDS.findall(message.text)]
            others = [c for c in message.contents if c.type != "text"]
            if others or not pieces:
                pieces.append(others)
            for j, contents in enumerate(pieces):
                final = i == last and j == len(pieces) - 1
                yield ChatResponseUpdate(
                    contents,
                    role=message.role,
                    author_name=message.author_name,
                    message_id=message_id,
                    model=response.model,
                    usage=response.usage if final else None,
                    finish_reason=response.finish_reason if final else None,
                )
                if not final:
                    await asyncio.sleep(self.stream_delay)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
