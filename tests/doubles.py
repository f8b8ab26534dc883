"""Test doubles shared by the tests: small agents that record what they were given."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent_nb import AgentResponse, AgentResponseUpdate, AgentSession, Message


class RecordingAgent:
    """Answers ``"<name> saw <n>"`` and remembers every call (messages, session, kwargs)."""

    def __init__(self, name: str | None, *, fail: BaseException | None = None) -> None:
        self.name = name
        self.fail = fail
        self.calls: list[dict[str, Any]] = []

    def create_session(self) -> AgentSession:
        return AgentSession()

    @property
    def seen(self) -> list[list[Message]]:
        return [c["messages"] for c in self.calls]

    def run(self, messages: Any = None, *, session: Any = None, stream: bool = False, **kwargs: Any) -> Any:
        self.calls.append({"messages": list(messages), "session": session, "stream": stream, **kwargs})
        text = f"{self.name} saw {len(messages)}"
        if stream:
            return self._stream(text)
        return self._respond(text)

    async def _respond(self, text: str) -> AgentResponse:
        if self.fail is not None:
            raise self.fail
        return AgentResponse([Message("assistant", text, author_name=self.name)])

    async def _stream(self, text: str) -> AsyncIterator[AgentResponseUpdate]:
        for i, word in enumerate(text.split(" ")):
            if self.fail is not None and i == 1:
                raise self.fail
            yield AgentResponseUpdate([word if i == 0 else " " + word], author_name=self.name)


class GatedClient:
    """Wraps a chat client: a streamed answer stops after its first piece until ``gate`` is set.

    It lets a test look at a turn while it runs (Send disabled, the first tokens shown).
    """

    def __init__(self, inner: Any) -> None:
        import asyncio

        self.inner = inner
        self.gate = asyncio.Event()
        self.started = asyncio.Event()

    async def get_response(self, messages: Any, options: Any = None, *, session: Any = None) -> Any:
        self.started.set()
        await self.gate.wait()
        return await self.inner.get_response(messages, options, session=session)

    async def get_streaming_response(self, messages: Any, options: Any = None, *, session: Any = None) -> Any:
        first = True
        async for update in self.inner.get_streaming_response(messages, options, session=session):
            yield update
            if first:
                first = False
                self.started.set()
                await self.gate.wait()
