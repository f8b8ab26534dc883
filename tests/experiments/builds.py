"""Targets, clients and inputs the experiment tests share (imported as ``from builds import ...``).

They are plain module-level functions and classes, so a Dask worker gets them by value (the
experiment ships a test module's code with it) and builds its own clients.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from agent_nb import AgentExecutor, ChatAgent, EchoChatClient, Message, MirrorChatClient, WorkflowBuilder
from agent_nb.errors import ModelBadRequest, ModelRateLimited
from agent_nb.routing import RoutingChatClient
from agent_nb.workflow import Workflow

NAMES = ("planner", "researcher", "writer")


def questions(n: int) -> list[dict[str, Any]]:
    """Inputs whose fact ("budget N") the writer has in ``full`` mode and loses in ``last_agent``."""
    return [
        {
            "id": f"q{i:02d}",
            "input": f"Plan a rainy Sunday in Lisbon for two of us; the budget is {i} euros",
            "expected": f"budget is {i}",
        }
        for i in range(n)
    ]


def chain(config: dict[str, Any], client: Any = None) -> Workflow:
    """planner -> researcher -> writer; ``writer.context_mode`` / ``writer.context_filter`` from the config."""
    client = client or MirrorChatClient(words=8)
    executors = [AgentExecutor(ChatAgent(client, name=n)) for n in NAMES]
    mode = config.get("writer.context_mode", "full")
    executors[2].set_context_mode(mode, config.get("writer.context_filter") if mode == "custom" else None)
    return (
        WorkflowBuilder(start_executor=executors[0])
        .add_edge(executors[0], executors[1])
        .add_edge(executors[1], executors[2])
        .build()
    )


def routed_chain() -> Workflow:
    """A ready workflow whose agents share a router: ``fast`` echoes, ``smart`` describes what it was given."""
    router = RoutingChatClient({"fast": EchoChatClient(), "smart": MirrorChatClient(words=8)})
    executors = [AgentExecutor(ChatAgent(router, name=n)) for n in NAMES]
    return (
        WorkflowBuilder(start_executor=executors[0])
        .add_edge(executors[0], executors[1])
        .add_edge(executors[1], executors[2])
        .build()
    )


def only_user(messages: Sequence[Message]) -> list[Message]:
    """A custom filter: the user's own messages."""
    return [m for m in messages if m.role == "user" and m.author_name is None]


class Slow:
    """A chat client that waits ``delay`` seconds (or ``delay(text)``) before its inner client answers."""

    def __init__(self, inner: Any, delay: Any) -> None:
        self.inner, self.delay = inner, delay
        self.capabilities = inner.capabilities
        self.history_mode = inner.history_mode

    def _wait(self, messages: Sequence[Message]) -> float:
        return self.delay(messages[-1].text) if callable(self.delay) else self.delay

    async def get_response(self, messages: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self._wait(messages))
        return await self.inner.get_response(messages, *args, **kwargs)

    async def get_streaming_response(
        self, messages: Sequence[Message], *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        await asyncio.sleep(self._wait(messages))
        async for update in self.inner.get_streaming_response(messages, *args, **kwargs):
            yield update


class Flaky:
    """Raises ``error`` for the first ``times`` requests whose last text contains ``marker``, then answers."""

    def __init__(self, inner: Any, marker: str, times: int, error: type[Exception] = ModelRateLimited) -> None:
        self.inner, self.marker, self.times, self.error = inner, marker, times, error
        self.capabilities = inner.capabilities
        self.history_mode = inner.history_mode
        self.failed = 0

    def _maybe_fail(self, messages: Sequence[Message]) -> None:
        if self.marker in messages[-1].text and self.failed < self.times:
            self.failed += 1
            raise self.error(f"refused {self.marker!r} ({self.failed} of {self.times})")

    async def get_response(self, messages: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
        self._maybe_fail(messages)
        return await self.inner.get_response(messages, *args, **kwargs)

    async def get_streaming_response(
        self, messages: Sequence[Message], *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        self._maybe_fail(messages)
        async for update in self.inner.get_streaming_response(messages, *args, **kwargs):
            yield update


def boom_chain(config: dict[str, Any]) -> Workflow:
    """``chain``, whose model refuses (not retryable) every request about "boom"."""
    return chain(config, Flaky(MirrorChatClient(words=8), "boom", 10**9, ModelBadRequest))


def stored(path: Path) -> int:
    """How many cells the store file at ``path`` holds, read as another program would (0 before it exists)."""
    try:
        with sqlite3.connect(path) as db:
            return int(db.execute("SELECT COUNT(*) FROM cells").fetchone()[0])
    except sqlite3.OperationalError:  # no cells table yet
        return 0


def finished(path: Path) -> int:
    """How many of the stored cells finished (those stopped while running are stored as ``cancelled``)."""
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM cells WHERE status != 'cancelled'").fetchone()[0])


async def until_stored(path: Path, cells: int, task: asyncio.Future[Any]) -> None:
    """Wait, bounded, until the running experiment ``task`` has stored ``cells`` cells (it must still run)."""
    for _ in range(1000):
        if stored(path) >= cells:
            return
        assert not task.done(), task.result()
        await asyncio.sleep(0.02)
    raise AssertionError(f"fewer than {cells} cells stored in 20 s")


def stable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without what timing changes (latency), for comparing runs."""
    return [{k: v for k, v in r.items() if k != "latency_s"} for r in records]
