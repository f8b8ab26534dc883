"""Test doubles shared by the tests: small agents that record what they were given.

Tests import this module as ``from doubles import ...`` (never through a ``tests.`` package: the
folder has no ``__init__.py``, and pytest puts it on ``sys.path`` when it loads ``tests/conftest.py``).
A child Python started by a test gets the same path from ``subprocess_env``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent_nb import AgentResponse, AgentResponseUpdate, AgentSession, Executor, Message, WorkflowContext, handler


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


class Gate:
    """A place where the code under test stops until the test lets it go on (no sleeping, no polling).

    The code under test awaits ``gate.reached()``: ``started`` is set, then it waits until the test
    calls ``gate.open()``. The test awaits ``gate.started.wait()`` to know the code got there.
    """

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.opened = asyncio.Event()

    async def reached(self) -> None:
        self.started.set()
        await self.opened.wait()

    def open(self) -> None:
        self.opened.set()


TESTS = Path(__file__).resolve().parent


async def run_plain_or_streamed(workflow: Any, value: Any, stream: bool) -> Any:
    """``workflow.run(value)``, or the same run streamed to its end: its ``RunResult`` either way."""
    if not stream:
        return await workflow.run(value)
    async with workflow.run(value, stream=True) as events:
        async for _ in events:
            pass
    return events.result


def subprocess_env(test_file: str | Path) -> dict[str, str]:
    """The environment for a child Python that imports these helpers and the test module ``test_file``.

    ``PYTHONPATH`` gets what pytest's default ("prepend") import mode puts on ``sys.path``: this
    folder, for ``from doubles import ...``, and the test module's own folder, so that the child
    imports the module by its base name (``from test_checkpoints import chain``), as pytest does.
    """
    paths = [str(TESTS), str(Path(test_file).resolve().parent)]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


class Holder(Executor):
    """Keeps a value in its checkpointed state (whatever a test gives it), and records its input as ``seen``."""

    def __init__(self, id: str, value: Any) -> None:
        super().__init__(id)
        self.value = value

    @handler
    async def take(self, text: str, ctx: WorkflowContext) -> None:
        ctx.set_state("seen", text)

    def snapshot_state(self) -> dict[str, Any]:
        return {"value": self.value}

    def restore_state(self, state: dict[str, Any]) -> None:
        self.value = state["value"]
