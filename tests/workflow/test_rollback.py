"""A failed or cancelled run leaves every store as it was: histories (in memory and SQLite), sessions, shared state."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import pytest
from doubles import Gate

from agent_nb import (
    AgentExecutor,
    AgentSession,
    ChatAgent,
    Executor,
    FunctionChatClient,
    InMemoryHistoryProvider,
    Message,
    MirrorChatClient,
    SQLiteHistoryProvider,
    StepFailed,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


class Switch:
    """A model that answers, or fails while ``broken``; it keeps every request it was sent."""

    def __init__(self, name: str) -> None:
        self.name, self.broken, self.requests = name, False, []

    def __call__(self, messages: list[Message], options: dict) -> str:
        self.requests.append([m.text for m in messages])
        if self.broken:
            raise RuntimeError(f"{self.name} is down")
        return f"{self.name} answered {len(messages)}"


def chain(history, *models: Switch, sessions=None):
    sessions = sessions or [AgentSession(m.name) for m in models]
    executors = [
        AgentExecutor(ChatAgent(FunctionChatClient(m), name=m.name, history=history), session=sessions[i])
        for i, m in enumerate(models)
    ]
    return WorkflowBuilder(start_executor=executors[0]).add_chain(executors).build(), executors


async def texts(history, session: AgentSession) -> list[str]:
    return [m.text for m in await history.load(session)]


async def test_a_chain_whose_second_agent_fails_writes_nothing_to_any_history(history):
    planner, writer = Switch("planner"), Switch("writer")
    workflow, (a, b) = chain(history, planner, writer)
    writer.broken = True
    with pytest.raises(StepFailed) as failed:
        await workflow.run("Plan a trip")
    message = str(failed.value)
    assert "Nothing of this run was kept" in message and "history" in message
    assert await texts(history, a.session) == [] and await texts(history, b.session) == []

    writer.broken = False
    await workflow.run("Plan a trip")
    assert planner.requests[-1] == ["Plan a trip"]  # the abandoned turn is nowhere in what the model sees
    assert await texts(history, a.session) == ["Plan a trip", "planner answered 1"]


async def test_a_completed_run_writes_every_turn_once_and_in_order(history):
    workflow, (a, b) = chain(history, Switch("planner"), Switch("writer"))
    await workflow.run("one")
    await workflow.run("two")
    assert await texts(history, a.session) == ["one", "planner answered 1", "two", "planner answered 3"]
    assert await texts(history, b.session) == [
        *["one", "planner answered 1", "writer answered 2"],  # full mode: the conversation so far is its input
        *["two", "planner answered 3", "writer answered 5"],
    ]


async def test_a_shared_session_sees_this_runs_turns_before_they_are_written(history):
    shared = AgentSession("shared")
    planner, writer = Switch("planner"), Switch("writer")
    workflow, _ = chain(history, planner, writer, sessions=[shared, shared])
    await workflow.run("hi")
    # the writer loaded the session after the planner's turn: it saw it, though nothing was written yet
    assert writer.requests[-1][:2] == ["hi", "planner answered 1"]
    after = await texts(history, shared)
    assert after[:2] == ["hi", "planner answered 1"] and after[-1] == f"writer answered {len(writer.requests[-1])}"

    writer.broken = True
    before = await texts(history, shared)
    with pytest.raises(StepFailed):
        await workflow.run("again")
    assert await texts(history, shared) == before


async def test_a_cancelled_run_writes_nothing(history, tmp_path: Path):
    gate = Gate()

    class Slow(Switch):
        async def __call__(self, messages, options):  # type: ignore[override]
            await gate.reached()
            return "late"

    planner = Switch("planner")
    workflow, (a, b) = chain(history, planner, Slow("writer"))
    task = asyncio.ensure_future(workflow.run("hi"))
    await gate.started.wait()  # the planner's turn is done (held); the writer is mid-turn
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await texts(history, a.session) == [] and await texts(history, b.session) == []


async def test_another_process_sees_nothing_of_a_failed_run(tmp_path: Path):
    path = tmp_path / "history.sqlite"
    with SQLiteHistoryProvider(path) as history:
        planner, writer = Switch("planner"), Switch("writer")
        workflow, _ = chain(history, planner, writer)
        writer.broken = True
        with pytest.raises(StepFailed):
            await workflow.run("hi")
    with contextlib.closing(sqlite3.connect(path)) as db:  # the file itself, as any other program reads it
        assert db.execute("SELECT COUNT(*) FROM agent_nb_messages").fetchone() == (0,)


async def test_an_agent_run_outside_a_workflow_still_saves_its_turn_at_once(history):
    agent = ChatAgent(MirrorChatClient(), name="solo", history=history)
    session = agent.create_session()
    await agent.run("hi", session=session)
    assert len(await texts(history, session)) == 2


async def test_a_store_that_refuses_the_runs_history_fails_the_run_with_its_own_error():
    class Refusing(InMemoryHistoryProvider):
        async def save(self, session, messages):
            raise OSError(28, "No space left on device")

    workflow, (a, _) = chain(Refusing(), Switch("planner"), Switch("writer"))
    from agent_nb import RunError

    with pytest.raises(RunError) as failed:
        await workflow.run("hi")
    message = str(failed.value)
    assert "ran to the end, but its history could not be written" in message
    assert "No space left on device" in message and "Nothing of it was written" in message
    assert isinstance(failed.value.__cause__, OSError)
    assert a.session.state == {}  # the executors and their sessions are back as before the run


async def test_a_turn_saved_by_a_task_that_outlives_its_run_is_written_not_lost(history):
    started: list[asyncio.Task] = []
    agent = ChatAgent(MirrorChatClient(), name="later", history=history)
    session = AgentSession("later")

    class Spawner(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext) -> None:
            gate = asyncio.Event()

            async def after_the_run() -> None:
                await gate.wait()
                await agent.run("saved after the run", session=session)

            started.append(asyncio.ensure_future(after_the_run()))
            started.append(gate)  # type: ignore[arg-type]

    workflow = WorkflowBuilder(start_executor=Spawner("spawner")).build()
    assert (await workflow.run("go")).status == "completed"
    task, gate = started
    gate.set()
    await task
    assert [m.text for m in await history.load(session)] == [
        "saved after the run",
        'I see 1 message: user "saved after the run"',
    ]


async def test_a_history_written_in_part_before_a_store_refused_is_said_to_be_written(tmp_path: Path):
    class Refusing(InMemoryHistoryProvider):
        async def save(self, session, messages):
            raise OSError(28, "No space left on device")

    with SQLiteHistoryProvider(tmp_path / "first.sqlite") as first:
        planner = AgentExecutor(
            ChatAgent(FunctionChatClient(Switch("planner")), name="planner", history=first), session=AgentSession("p")
        )
        writer = AgentExecutor(ChatAgent(FunctionChatClient(Switch("writer")), name="writer", history=Refusing()))
        workflow = WorkflowBuilder(start_executor=planner).add_edge(planner, writer).build()
        from agent_nb import RunError

        with pytest.raises(RunError) as failed:
            await workflow.run("hi")
        message = str(failed.value)
        assert "Some of it was written before the failure" in message and "first.sqlite" in message
        assert "would write those sessions' turns a second time" in message
        assert "Nothing of this run was kept" not in " ".join([message, *getattr(failed.value, "__notes__", [])])
        assert len(await first.load(AgentSession("p"))) == 2  # it was written, as said
