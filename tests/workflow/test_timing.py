"""Timing changes nothing: what executors of one superstep send, and the state they set, land in the order
the executors started (the graph's order), not in the order they happened to finish."""

from __future__ import annotations

import asyncio

import pytest
from doubles import run_plain_or_streamed

from agent_nb import Executor, WorkflowBuilder, WorkflowContext, handler


class Start(Executor):
    @handler
    async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)


class Source(Executor):
    """Waits ``delay``, sets ``last`` in the shared state, and sends two messages on."""

    def __init__(self, id: str, delay: float) -> None:
        super().__init__(id)
        self.delay = delay

    @handler
    async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
        await asyncio.sleep(self.delay)
        ctx.set_state("last", self.id)
        await ctx.send_message(f"{self.id} 1")
        await ctx.send_message(f"{self.id} 2")


class Sink(Executor):
    """Keeps what reached it, in the order it was handed the messages."""

    def __init__(self, id: str) -> None:
        super().__init__(id)
        self.got: list[str] = []

    @handler
    async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
        self.got.append(text)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("slow_first", [True, False])
async def test_messages_and_state_of_one_superstep_land_in_the_order_their_senders_started(stream, slow_first):
    slow, fast = Source("slow", 0.03), Source("fast", 0)
    first, second = (slow, fast) if slow_first else (fast, slow)
    sink = Sink("sink")
    workflow = (
        WorkflowBuilder(start_executor=Start("start"))
        .add_fan_out_edges("start", [first, second])
        .add_edge(first, sink)
        .add_edge(second, sink)
        .build()
    )
    result = await run_plain_or_streamed(workflow, "go", stream)
    assert result is not None
    assert sink.got == [f"{first.id} 1", f"{first.id} 2", f"{second.id} 1", f"{second.id} 2"]
    assert result.state["last"] == second.id  # set by both; the one that started later wins, however fast it was
