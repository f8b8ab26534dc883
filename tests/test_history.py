"""History providers: real SQLite files, sessions isolated, restarts survived, failures store nothing."""

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from doubles import Gate

from agent_nb import (
    AgentSession,
    ChatAgent,
    EchoChatClient,
    FunctionCallContent,
    FunctionChatClient,
    FunctionResultContent,
    HistoryError,
    InMemoryHistoryProvider,
    Message,
    MirrorChatClient,
    ModelError,
    ScriptedChatClient,
    SQLiteHistoryProvider,
)

TURN = [
    Message("user", "hello"),
    Message("assistant", [FunctionCallContent(call_id="c1", name="f", arguments={"x": 1})], author_name="a"),
    Message("tool", [FunctionResultContent(call_id="c1", result=[1, 2])], author_name="a"),
    Message("assistant", "done", author_name="a"),
]


def outside(path, statement: str) -> None:
    """Run ``statement`` on the file as another program would: its own connection, closed after."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute(statement)


@pytest.fixture(params=["memory", "sqlite"])
def provider(request, tmp_path):
    if request.param == "memory":
        yield InMemoryHistoryProvider()
    else:
        with SQLiteHistoryProvider(tmp_path / "history.sqlite") as p:
            yield p


async def test_save_then_load_returns_the_same_messages(provider):
    session = AgentSession()
    assert await provider.load(session) == []
    await provider.save(session, TURN[:2])
    await provider.save(session, TURN[2:])
    assert await provider.load(session) == TURN
    await provider.save(session, [])
    assert await provider.load(session) == TURN


async def test_sessions_are_isolated(provider):
    a, b = AgentSession(), AgentSession()
    await provider.save(a, [Message("user", "for a")])
    await provider.save(b, [Message("user", "for b")])
    assert [m.text for m in await provider.load(a)] == ["for a"]
    assert [m.text for m in await provider.load(b)] == ["for b"]


async def test_in_memory_history_travels_with_the_session():
    provider = InMemoryHistoryProvider()
    session = AgentSession()
    await provider.save(session, TURN)
    restored = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())))
    assert await InMemoryHistoryProvider().load(restored) == TURN


async def test_in_memory_history_replaces_its_list_on_save():
    provider, session = InMemoryHistoryProvider(), AgentSession()
    await provider.save(session, TURN[:1])
    before = session.state["history"]
    await provider.save(session, TURN[1:])
    assert len(before) == 1 and session.state["history"] is not before  # a snapshot of the state stays valid


async def test_sqlite_uses_wal_and_survives_a_restart(tmp_path):
    path = tmp_path / "chats.sqlite"
    session = AgentSession("s-1")
    with SQLiteHistoryProvider(path) as provider:
        await provider.save(session, TURN)
    code = textwrap.dedent(
        f"""
        import asyncio
        from agent_nb import AgentSession, SQLiteHistoryProvider, Message
        p = SQLiteHistoryProvider({str(path)!r})
        s = AgentSession("s-1")
        msgs = asyncio.run(p.load(s))
        asyncio.run(p.save(s, [Message("user", "from another process")]))
        print(len(msgs), msgs[1].contents[0].name)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["4", "f"]
    with SQLiteHistoryProvider(path) as again:
        assert [m.text for m in await again.load(session)][-1] == "from another process"
        assert again.sessions() == ["s-1"]
        assert again.delete("s-1") == 5 and await again.load(session) == []
    with contextlib.closing(sqlite3.connect(path)) as db:
        (mode,) = db.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


async def test_sqlite_one_transaction_per_turn(tmp_path):
    path = tmp_path / "h.sqlite"
    provider = SQLiteHistoryProvider(path)
    session = AgentSession()
    await provider.save(session, [Message("user", "kept")])
    outside(  # the disk refuses the second row of the next turn
        path,
        "CREATE TRIGGER refuse BEFORE INSERT ON agent_nb_messages WHEN NEW.message LIKE '%refused%' "
        "BEGIN SELECT RAISE(ABORT, 'disk says no'); END",
    )
    with pytest.raises(HistoryError, match=r"could not write 1 session.*: disk says no") as refused:
        await provider.save(session, [Message("user", "first of the turn"), Message("user", "refused")])
    assert isinstance(refused.value.__cause__, sqlite3.IntegrityError)  # SQLite's own error, never hidden
    assert [m.text for m in await provider.load(session)] == ["kept"]  # the first row was rolled back too


async def test_a_corrupt_history_is_a_clear_error(tmp_path):
    path = tmp_path / "h.sqlite"
    provider = SQLiteHistoryProvider(path)
    session = AgentSession("s")
    await provider.save(session, [Message("user", "ok")])
    outside(path, 'UPDATE agent_nb_messages SET message = \'{"role": "robot"}\'')
    with pytest.raises(HistoryError, match=r"stored history of session 's' cannot be read as messages"):
        await provider.load(session)


# -- the five steps, through ChatAgent ---------------------------------------------------


async def test_an_agent_with_history_remembers_the_conversation(provider):
    agent = ChatAgent(MirrorChatClient(), name="mirror", instructions="Be brief.", history=provider)
    session = agent.create_session()
    await agent.run("first question", session=session)
    r = await agent.run("second question", session=session)
    assert r.text.startswith("I see 4 messages: system")  # instructions, turn 1 (2 messages), the new input
    stored = await provider.load(session)
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]  # instructions are not stored
    assert stored[1].author_name == "mirror"


async def test_a_failed_turn_stores_nothing_and_says_so(provider):
    agent = ChatAgent(ScriptedChatClient(["fine"]), name="a", history=provider)
    session = agent.create_session()
    await agent.run("one", session=session)
    before = await provider.load(session)
    with pytest.raises(ModelError) as info:
        await agent.run("two", session=session)
    message = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert f"nothing of this turn was stored: the history of session {session.session_id!r} is as it was" in message
    assert await provider.load(session) == before


async def test_a_failing_client_is_wrapped_with_the_cause(provider):
    def broken(messages, options):
        raise ConnectionResetError("peer went away")

    agent = ChatAgent(FunctionChatClient(broken), name="a", history=provider)
    session = agent.create_session()
    expected = (
        r"agent 'a': the chat client failed \(ConnectionResetError: peer went away\); nothing of this turn was stored"
    )
    with pytest.raises(ModelError, match=expected) as info:
        await agent.run("hi", session=session)
    assert isinstance(info.value.__cause__, ConnectionResetError)
    assert await provider.load(session) == []


async def test_a_turn_cancelled_after_its_tools_ran_stores_nothing_and_says_so(provider):
    gate, ran = Gate(), []

    def note(text: str) -> str:
        ran.append(text)
        return "noted"

    async def model(messages, options):
        if messages[-1].role == "tool":
            await gate.reached()  # the second round never comes back: the gate is never opened
            return "late"
        return Message("assistant", [FunctionCallContent(call_id="c1", name="note", arguments={"text": "x"})])

    agent = ChatAgent(FunctionChatClient(model), name="a", history=provider, tools=[note])
    session = agent.create_session()
    task = asyncio.ensure_future(agent.run("hi", session=session))
    await gate.started.wait()  # the tool ran and the model's second round is under way
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    assert ran == ["x"] and await provider.load(session) == []
    assert any("nothing of this turn was stored" in n for n in getattr(info.value, "__notes__", []))


async def test_a_storage_error_is_not_called_a_model_error(tmp_path):
    path = tmp_path / "h.sqlite"
    provider = SQLiteHistoryProvider(path)
    session = AgentSession("s")
    await provider.save(session, [Message("user", "ok")])
    outside(path, "UPDATE agent_nb_messages SET message = '{}'")
    with pytest.raises(HistoryError, match="cannot be read as messages") as info:
        await ChatAgent(EchoChatClient(), name="a", history=SQLiteHistoryProvider(path)).run("hi", session=session)
    assert not isinstance(info.value, ModelError)
    assert any("is as it was" in n for n in info.value.__notes__)


async def test_without_a_session_a_run_is_stateless(tmp_path):
    provider = SQLiteHistoryProvider(tmp_path / "h.sqlite")
    agent = ChatAgent(MirrorChatClient(), name="a", history=provider)
    await agent.run("one")
    assert (await agent.run("two")).text == 'I see 1 message: user "two"'
    assert provider.sessions() == []


async def test_calls_left_for_the_caller_are_answered_by_the_caller_next(provider):
    call = Message("assistant", [FunctionCallContent(call_id="c9", name="approve", arguments={})])
    agent = ChatAgent(ScriptedChatClient([call, "thanks"]), name="a", history=provider)  # no tools of its own
    session = agent.create_session()
    first = await agent.run("pay the bill", session=session)
    assert first.messages[0].contents[0].call_id == "c9"
    assert "has no tools: the calls were not run" in first.repairs[0]
    result = Message("tool", [FunctionResultContent(call_id="c9", result="approved")])
    assert (await agent.run([result], session=session)).text == "thanks"
    stored = await provider.load(session)
    assert [c.result for c in stored[2].contents] == ["approved"]  # the caller's answer, nothing made up


async def test_a_stray_tool_call_does_not_leave_the_session_stuck(provider):
    call = Message("assistant", [FunctionCallContent(call_id="c9", name="approve", arguments={})])
    client = ScriptedChatClient([call, "sorry, I cannot approve anything"])
    agent = ChatAgent(client, name="a", history=provider)  # no tools: the model should not have called one
    session = agent.create_session()
    await agent.run("pay the bill", session=session)
    answer = await agent.run("did it work?", session=session)  # nobody answered c9: the session still goes on
    assert answer.text == "sorry, I cannot approve anything"
    stored = await provider.load(session)
    told = stored[2]  # right after the call, as every API wants: the model is told it was not run
    assert told.role == "tool" and told.contents[0].exception == "not run: agent 'a' has no tool 'approve'"
    assert [m.text for m in stored[3:]] == ["did it work?", "sorry, I cannot approve anything"]


async def test_a_stream_left_early_stores_nothing(provider):
    agent = ChatAgent(EchoChatClient(), name="a", history=provider)
    session = agent.create_session()
    stream = agent.run("one two three", session=session, stream=True)
    async for _ in stream:
        break
    await stream.aclose()
    assert await provider.load(session) == []
    async for _ in agent.run("one two three", session=session, stream=True):
        pass
    assert [m.text for m in await provider.load(session)] == ["one two three", "one two three"]


async def test_in_memory_history_notices_a_list_changed_in_place():
    provider, session = InMemoryHistoryProvider(), AgentSession()
    await provider.save(session, TURN)
    assert len(await provider.load(session)) == 4
    del session.state["history"][2:]  # trimmed in place by the application
    assert await provider.load(session) == TURN[:2]


async def test_sqlite_reads_only_new_rows_and_keeps_message_identity(tmp_path):
    path = tmp_path / "h.sqlite"
    mine, other = SQLiteHistoryProvider(path), SQLiteHistoryProvider(path)
    session = AgentSession("shared")
    await mine.save(session, TURN[:2])
    first = await mine.load(session)
    await other.save(session, TURN[2:])  # another writer appends
    second = await mine.load(session)
    assert second == TURN and all(a is b for a, b in zip(first, second[:2], strict=True))
    mine.delete(session)
    assert await mine.load(session) == [] and await other.load(session) == []


async def test_sqlite_never_serves_a_history_another_provider_reset(tmp_path):
    path = tmp_path / "history.sqlite"
    mine, other = SQLiteHistoryProvider(path), SQLiteHistoryProvider(path)
    session = AgentSession("s")
    await mine.save(session, [Message("user", "old 1"), Message("assistant", "old 2")])
    assert [m.text for m in await mine.load(session)] == ["old 1", "old 2"]  # now cached
    for new in (["new 1", "new 2"], ["new 1", "new 2", "new 3"], ["new 1"]):  # as many rows, more, fewer
        other.delete(session)
        await other.save(session, [Message("user", t) for t in new])
        assert [m.text for m in await mine.load(session)] == new
    await other.save(session, [Message("user", "appended")])
    assert [m.text for m in await mine.load(session)] == ["new 1", "appended"]  # an append is read alone


async def test_sqlite_never_serves_a_history_another_process_rewrote(tmp_path):
    path = tmp_path / "history.sqlite"
    mine = SQLiteHistoryProvider(path)
    session = AgentSession("s")
    await mine.save(session, [Message("user", "old 1"), Message("assistant", "old 2")])
    assert len(await mine.load(session)) == 2
    script = textwrap.dedent(
        f"""
        import asyncio
        from agent_nb import AgentSession, Message, SQLiteHistoryProvider
        other = SQLiteHistoryProvider({str(path)!r})
        other.delete("s")
        asyncio.run(other.save(AgentSession("s"), [Message("user", "theirs 1"), Message("user", "theirs 2")]))
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert [m.text for m in await mine.load(session)] == ["theirs 1", "theirs 2"]


async def test_sqlite_never_extends_a_cache_of_a_session_another_provider_rewrote(tmp_path):
    path = tmp_path / "history.sqlite"
    mine, other = SQLiteHistoryProvider(path), SQLiteHistoryProvider(path)
    session = AgentSession("s")
    await mine.save(session, [Message("user", "old 1"), Message("user", "old 2")])
    assert len(await mine.load(session)) == 2  # cached
    other.delete(session)
    await other.save(session, [Message("user", "NEW 1"), Message("user", "NEW 2")])  # as many rows as before
    await mine.save(session, [Message("user", "third")])  # mine writes after them ...
    assert [m.text for m in await mine.load(session)] == ["NEW 1", "NEW 2", "third"]  # ... and reads the file's


async def test_what_another_agent_wrote_to_a_shared_history_reaches_the_model_as_user_like_a_handed_over_reply():
    from agent_nb import AgentExecutor, ChatAgent, InMemoryHistoryProvider, MirrorChatClient, WorkflowBuilder

    history = InMemoryHistoryProvider()
    guide = ChatAgent(MirrorChatClient(), name="guide", history=history)
    critic = ChatAgent(MirrorChatClient(), name="critic", history=history)
    session = guide.create_session()
    first, second = AgentExecutor(guide, session=session), AgentExecutor(critic, session=session)
    wf = WorkflowBuilder(start_executor=first).add_edge(first, second).build()
    await wf.run("A museum?")
    result = await wf.run("And a cafe?")
    request = result.trace.last("critic").model_input
    from_history = [m for m, o in zip(request.messages, request.origins, strict=True) if o == "history"]
    guide_said = [m for m in from_history if m.author_name == "guide"]
    assert guide_said and {m.role for m in guide_said} == {"user"}  # never the critic's own assistant turn
    own = [m for m in from_history if m.author_name == "critic"]
    assert own and {m.role for m in own} == {"assistant"}  # its own replies keep their role
    stored = await history.load(session)
    assert any(m.role == "assistant" and m.author_name == "guide" for m in stored)  # the history is as written
