"""What an agent of a run is given of its session's history held by that run: the turns of earlier
supersteps and its own executor's, never a sibling's of the same superstep (as with the shared state)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_nb import (
    AgentExecutor,
    AgentSession,
    ChatAgent,
    Executor,
    FunctionChatClient,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


def counting(name: str) -> FunctionChatClient:
    """A model that says how many messages it was given."""
    return FunctionChatClient(lambda messages, options: f"{name} saw {len(messages)}")


class Split(Executor):
    """Sends its input on twice (to every target), so a target gets two messages in one superstep."""

    @handler
    async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"{text} (1)")
        await ctx.send_message(f"{text} (2)")


async def stored(history: Any, session: AgentSession) -> list[str]:
    return [m.text for m in await history.load(session)]


async def test_an_executor_sees_its_own_turns_of_the_superstep(history):
    shared = AgentSession("shared")
    agent = AgentExecutor(
        ChatAgent(counting("b"), name="b", history=history), session=shared, context_mode="last_agent"
    )
    await WorkflowBuilder(start_executor=Split("split")).add_edge("split", agent).build().run("hi")
    # both messages reached b in superstep 2; its second turn was given its first (2 messages) and the new input
    assert await stored(history, shared) == ["hi (1)", "b saw 1", "hi (2)", "b saw 3"]


class Inner(Executor):
    """After ``delay``, runs a workflow of its own whose agent keeps its turns in the outer run's session."""

    def __init__(self, id: str, history: Any, session: AgentSession, delay: float) -> None:
        super().__init__(id)
        self.delay = delay
        self.agent = AgentExecutor(ChatAgent(counting("inner"), name="inner", history=history), session=session)

    @handler
    async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
        await asyncio.sleep(self.delay)
        await WorkflowBuilder(start_executor=self.agent).build().run(text)


class Sibling(Executor):
    """After ``delay``, has its agent answer in the shared session, and sends the answer on."""

    def __init__(self, id: str, history: Any, session: AgentSession, delay: float) -> None:
        super().__init__(id)
        self.delay, self.session = delay, session
        self.agent = ChatAgent(counting("sibling"), name="sibling", history=history)

    @handler
    async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
        await asyncio.sleep(self.delay)
        await ctx.send_message((await self.agent.run(text, session=self.session)).text)


@pytest.mark.parametrize("first_done", ["inner", "sibling"])
async def test_a_run_inside_an_executor_holds_its_turns_in_that_executors_place(history, first_done):
    shared = AgentSession("shared")

    class Start(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(text)

    late = {"inner": 0.0, "sibling": 0.0}
    late["sibling" if first_done == "inner" else "inner"] = 0.05  # starts its work once the other has finished
    inner = Inner("inner-run", history, shared, late["inner"])
    sibling = Sibling("sibling", history, shared, late["sibling"])
    after = AgentExecutor(ChatAgent(counting("after"), name="after", history=history), session=shared)
    workflow = WorkflowBuilder(start_executor=Start("start")).add_fan_out_edges("start", [inner, sibling])
    await workflow.add_edge(sibling, after).build().run("hi")
    # superstep 2: the inner run and the sibling each began from the empty session, though one had finished
    # before the other began; their turns are stored in the order they started (inner, then sibling).
    # Superstep 3: `after` is given both turns, and the sibling's answer as its input.
    kept = await stored(history, shared)
    assert kept[:4] == ["hi", "inner saw 1", "hi", "sibling saw 1"]
    assert kept[4:] == ["sibling saw 1", "after saw 5"]


async def test_outside_a_run_a_turn_is_seen_at_once(history):
    session = AgentSession("s")
    agent = ChatAgent(counting("a"), name="a", history=history)
    await agent.run("one", session=session)
    await agent.run("two", session=session)
    assert await stored(history, session) == ["one", "a saw 1", "two", "a saw 3"]


async def test_held_turns_a_checkpoint_cannot_keep_are_warned_about_once_naming_the_session(history):
    from agent_nb import InMemoryCheckpointStorage

    shared = AgentSession("kept-nowhere")

    class Twice(Executor):
        """An agent run inside a handler: no executor of the workflow owns its history."""

        def __init__(self, id: str) -> None:
            super().__init__(id)
            self.helper = ChatAgent(counting("hidden"), name="hidden", history=history)

        @handler
        async def on(self, text: str, ctx: WorkflowContext[str]) -> None:
            await self.helper.run(text, session=shared)
            if not text.endswith("!!"):
                await ctx.send_message(text + "!")

    workflow = WorkflowBuilder(start_executor=Twice("twice")).add_edge("twice", "twice").build()
    result = await workflow.run("hi", checkpoint_storage=InMemoryCheckpointStorage())
    warnings = [e.message for e in result.events if e.type == "warning" and "kept-nowhere" in e.message]
    assert len(warnings) == 1, warnings  # three checkpoints hold it; one warning says so
    assert f"in {type(history).__name__}" in warnings[0] and "a run resumed from a checkpoint will not" in warnings[0]
    assert await stored(history, shared) == ["hi", "hidden saw 1", "hi!", "hidden saw 3", "hi!!", "hidden saw 5"]
