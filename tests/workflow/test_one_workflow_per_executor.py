"""An executor holds one conversation, so it runs in one workflow: never two runs mixing one conversation."""

from __future__ import annotations

import gc

import pytest
from doubles import Gate, RecordingAgent

from agent_nb import (
    AgentExecutor,
    AgentExecutorResponse,
    Executor,
    UsageError,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowValidationError,
    handler,
)


def pair():
    return AgentExecutor(RecordingAgent("planner")), AgentExecutor(RecordingAgent("writer"))


async def test_a_workflow_built_again_from_the_same_executors_takes_them_and_the_older_one_refuses_to_run():
    planner, writer = pair()
    old = WorkflowBuilder(start_executor=planner, name="trip").add_edge(planner, writer).build()
    await old.run("one")
    new = WorkflowBuilder(start_executor=planner, name="trip v2").add_edge(planner, writer).build()
    before = planner.conversation.to_list()
    with pytest.raises(UsageError, match=r"its executor 'planner' now belongs to workflow 'trip v2'.*new executors"):
        await old.run("two")
    assert planner.conversation.to_list() == before  # nothing ran
    assert (await new.run("two")).status == "completed"  # the newer one runs them


async def test_an_executor_running_in_one_workflow_cannot_be_built_into_another():
    gate = Gate()

    class Slow(Executor):
        @handler
        async def on(self, response: AgentExecutorResponse, ctx: WorkflowContext) -> None:
            await gate.reached()

    planner = AgentExecutor(RecordingAgent("planner"))
    slow = Slow("slow")
    running = WorkflowBuilder(start_executor=planner, name="busy").add_edge(planner, slow).build()
    import asyncio

    task = asyncio.ensure_future(running.run("x"))
    await gate.started.wait()
    with pytest.raises(WorkflowValidationError, match=r"executor 'planner' is running in workflow 'busy' now"):
        WorkflowBuilder(start_executor=planner, name="other").build()
    gate.opened.set()
    assert (await task).status == "completed"


async def test_the_older_workflow_runs_again_once_the_newer_is_gone():
    planner, writer = pair()
    old = WorkflowBuilder(start_executor=planner).add_edge(planner, writer).build()
    new = WorkflowBuilder(start_executor=planner).add_edge(planner, writer).build()
    del new
    gc.collect()
    assert (await old.run("hi")).status == "completed"
    newest = WorkflowBuilder(start_executor=planner, name="newest").add_edge(planner, writer).build()
    with pytest.raises(UsageError, match="now belongs to workflow 'newest'"):  # taken again, refused again
        await old.run("again")
    assert newest.executors["planner"] is planner
