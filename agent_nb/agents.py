"""Agents: what a workflow executor wraps.

``SupportsAgentRun`` is the structural protocol every agent meets; ``ChatAgent`` is the
one agent_nb ships: instructions plus a chat client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from .clients.base import ChatClient
from .messages import AgentResponse, AgentResponseUpdate, ChatResponse, Message, to_messages
from .sessions import AgentSession

__all__ = ["ChatAgent", "SupportsAgentRun"]

AgentInput = str | Message | Iterable[str | Message] | None


@runtime_checkable
class SupportsAgentRun(Protocol):
    """What a workflow needs of an agent.

    ``run`` returns an awaitable ``AgentResponse``; with ``stream=True`` an async iterable
    of ``AgentResponseUpdate`` (an ``async def run`` that returns the iterable is accepted too).
    An agent that takes per-executor run arguments accepts the keywords ``client_kwargs``
    and ``function_invocation_kwargs``; they are passed only when a run sets them.
    """

    @property
    def name(self) -> str | None: ...

    def create_session(self) -> AgentSession: ...

    def run(self, messages: Any = None, *, session: AgentSession | None = None, stream: bool = False) -> Any: ...


class ChatAgent:
    """An agent made of instructions and a chat client.

    It sends its instructions (as a system message) followed by the messages it is given,
    and answers with messages whose ``author_name`` is its ``name``.

    ```python
    agent = ChatAgent(MirrorChatClient(), name="planner", instructions="Plan the trip.")
    response = await agent.run("Plan a weekend in Lisbon")
    ```
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        name: str,
        instructions: str | None = None,
        description: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("ChatAgent needs a non-empty name: it identifies the agent's messages and executor")
        if not hasattr(client, "get_response"):
            raise TypeError(f"ChatAgent {name!r}: client must be a ChatClient, got {type(client).__name__}")
        self.client = client
        self.name = name
        self.instructions = instructions
        self.description = description
        self.options: dict[str, Any] = dict(options or {})

    def create_session(self) -> AgentSession:
        return AgentSession()

    def _request(self, messages: AgentInput) -> list[Message]:
        given = to_messages(messages)
        if self.instructions:
            return [Message("system", self.instructions), *given]
        return given

    def _options(self, client_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
        return {**self.options, **client_kwargs} if client_kwargs else self.options

    def run(
        self,
        messages: AgentInput = None,
        *,
        session: AgentSession | None = None,
        stream: bool = False,
        client_kwargs: Mapping[str, Any] | None = None,
        function_invocation_kwargs: Mapping[str, Any] | None = None,
    ) -> Awaitable[AgentResponse] | AsyncIterator[AgentResponseUpdate]:
        """Answer ``messages``; with ``stream=True``, yield the answer as it is produced.

        ``client_kwargs`` are merged over ``options`` and reach the chat client.
        ``function_invocation_kwargs`` are meant for function tools; a ChatAgent has none, so it ignores them.
        """
        request = self._request(messages)
        options = self._options(client_kwargs)
        if stream:
            return self._stream(request, options)
        return self._respond(request, options)

    async def _respond(self, request: list[Message], options: dict[str, Any]) -> AgentResponse:
        response = await self.client.get_response(request, options)
        return self._own(response)

    async def _stream(self, request: list[Message], options: dict[str, Any]) -> AsyncIterator[AgentResponseUpdate]:
        async for update in self.client.get_streaming_response(request, options):
            yield AgentResponseUpdate(
                update.contents,
                role=update.role,
                author_name=update.author_name or self.name,
                message_id=update.message_id,
                response_id=update.response_id,
                model=update.model,
                usage=update.usage,
            )

    def _own(self, response: ChatResponse) -> AgentResponse:
        messages = [
            m
            if m.author_name is not None
            else Message(m.role, m.contents, author_name=self.name, message_id=m.message_id)
            for m in response.messages
        ]
        return AgentResponse(messages, response_id=response.response_id, model=response.model, usage=response.usage)

    def __repr__(self) -> str:
        return f"ChatAgent(name={self.name!r}, client={self.client!r})"
