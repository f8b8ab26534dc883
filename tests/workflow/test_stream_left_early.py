"""Leaving a streamed run early stops it, rolls it back and frees the workflow at once."""

from __future__ import annotations

import asyncio
import gc

import pytest
from doubles import Gate

from agent_nb import (
    AgentExecutor,
    AgentExecutorResponse,
    AgentSession,
    ChatAgent,
    Executor,
    MirrorChatClient,
    SQLiteHistoryProvider,
    WorkflowBuilder,
    WorkflowBusyError,
    WorkflowContext,
    handler,
)


class Stuck(Executor):
    """Waits at a gate the test never opens (only on the first run), and notes its cancellation."""

    def __init__(self, id: str) -> None:
        super().__init__(id)
        self.gate, self.ends = Gate(), []

    @handler
    async def on(self, response: AgentExecutorResponse, ctx: WorkflowContext) -> None:
        if not self.ends:
            try:
                await self.gate.reached()
            except asyncio.CancelledError:
                self.ends.append("cancelled")
                raise
        await ctx.yield_output("done")


@pytest.fixture
def setup(tmp_path):
    history = SQLiteHistoryProvider(tmp_path / "history.sqlite")
    session = AgentSession("first")
    first = AgentExecutor(ChatAgent(MirrorChatClient(), name="first", history=history), session=session)
    slow = Stuck("slow")
    workflow = WorkflowBuilder(start_executor=first).add_edge(first, slow).build()
    yield workflow, first, slow, history, session
    history.close()


async def reach_the_slow_one(stream) -> None:
    async for event in stream:
        if event.type == "executor_invoked" and event.executor_id == "slow":
            return


async def assert_rolled_back_and_free(workflow, first, slow, history, session) -> None:
    again = await workflow.run("again")  # accepted at once, from this task, not "already running"
    assert again.status == "completed" and "done" in again.get_outputs()
    assert slow.ends == ["cancelled"]
    # nothing of the stopped run is left: not in the executor's conversation, not in the history
    assert first.conversation.to_list()[0].text == "again"
    assert [m.text for m in await history.load(session)] == ["again", 'I see 1 message: user "again"']


async def test_break_out_of_a_stream_that_is_not_kept_stops_the_run_at_once(setup):
    workflow = setup[0]
    async for event in workflow.run("x", stream=True):
        if event.type == "executor_invoked" and event.executor_id == "slow":
            break
    await assert_rolled_back_and_free(*setup)


async def test_break_out_of_a_kept_stream_then_a_new_run_stops_the_old_one_first(setup):
    workflow, *_ = setup
    stream = workflow.run("x", stream=True)
    await reach_the_slow_one(stream)
    await asyncio.wait_for(setup[2].gate.started.wait(), 5)
    await assert_rolled_back_and_free(*setup)  # the same task asks for a new run: the stream was left
    assert stream.result is None  # the stopped run has no result
    assert [e async for e in stream] == []  # and gives nothing more


async def test_aclose_stops_the_run_and_waits_for_its_roll_back(setup):
    workflow, *_ = setup
    stream = workflow.run("x", stream=True)
    await reach_the_slow_one(stream)
    await stream.aclose()
    await assert_rolled_back_and_free(*setup)


async def test_dropping_the_stream_stops_the_run(setup):
    workflow, *_ = setup
    stream = workflow.run("x", stream=True)
    await reach_the_slow_one(stream)
    del stream
    gc.collect()
    await assert_rolled_back_and_free(*setup)


async def test_another_task_cannot_take_a_stream_someone_is_still_reading(setup):
    workflow, _, slow, *_ = setup
    stream = workflow.run("x", stream=True)
    await reach_the_slow_one(stream)

    async def elsewhere():
        return await workflow.run("meanwhile")

    with pytest.raises(WorkflowBusyError, match=r"a streamed run of it is still open.*aclose\(\)"):
        await asyncio.ensure_future(elsewhere())
    assert slow.ends == []  # the open stream was left alone
    await stream.aclose()


async def test_a_stream_read_to_the_end_frees_the_workflow_and_keeps_its_result(setup):
    workflow, _, slow, history, session = setup
    slow.ends.append("let it through")
    stream = workflow.run("x", stream=True)
    events = [e async for e in stream]
    assert events[-1].type == "completed" and stream.result is not None and stream.result.status == "completed"
    assert len(await history.load(session)) == 2
    assert (await workflow.run("next")).status == "completed"
