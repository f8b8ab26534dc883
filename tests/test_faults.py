"""Faults injected across the stack: whatever breaks and wherever, every store is as it was, and the next run works.

One three-agent chain — histories in one SQLite file, the middle agent routed, a tool, file
checkpoints — is broken in the middle agent's model in every way ``FaultyChatClient`` knows
(an error, a hang, a cancellation, garbage), before the first chunk, after some chunks, or
inside a tool round. Each time: the run fails with an agent_nb error (or is cancelled), the
histories, sessions, routes and conversations are exactly as before, the checkpoints taken
before the failure still resume, and the same workflow then runs to the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_nb import (
    AgentExecutor,
    AgentNbError,
    AgentSession,
    ChatAgent,
    ChatResponseUpdate,
    FileCheckpointStorage,
    FunctionCallContent,
    FunctionChatClient,
    Message,
    MirrorChatClient,
    ModelUnavailable,
    RoutingChatClient,
    SQLiteHistoryProvider,
    TextContent,
    WorkflowBuilder,
    tool,
)
from agent_nb.testing.faults import GARBAGE, FaultyChatClient


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


def researcher_model(messages: list[Message], options: Any) -> Any:
    """Calls the tool once, then answers with what it found."""
    last = messages[-1]
    if last.role == "tool":
        return f"found {last.contents[0].result}"
    return Message(
        "assistant", [FunctionCallContent(call_id=f"c{len(messages)}", name="lookup", arguments={"city": "Porto"})]
    )


class Shop:
    """The chain, its stores, and what they hold."""

    def __init__(self, tmp: Path, faulty: FaultyChatClient, *, stream: bool) -> None:
        self.tmp, self.faulty, self.stream = tmp, faulty, stream
        self.history = SQLiteHistoryProvider(tmp / "history.sqlite")
        self.storage = FileCheckpointStorage(tmp / "checkpoints")
        self.router = RoutingChatClient({"fast": faulty, "smart": MirrorChatClient()})
        self.sessions = {n: AgentSession(n) for n in ("planner", "researcher", "writer")}
        self.router.set_active_route(self.sessions["researcher"], "fast")
        self.workflow = self.build()

    def build(self) -> Any:
        agents = [
            ChatAgent(MirrorChatClient(), name="planner", history=self.history),
            ChatAgent(self.router, name="researcher", history=self.history, tools=[lookup]),
            ChatAgent(MirrorChatClient(), name="writer", history=self.history),
        ]
        executors = [AgentExecutor(a, session=self.sessions[a.name]) for a in agents]
        return (
            WorkflowBuilder(start_executor=executors[0], checkpoint_storage=self.storage).add_chain(executors).build()
        )

    def stores(self) -> dict[str, Any]:
        with contextlib.closing(sqlite3.connect(self.tmp / "history.sqlite")) as db:  # as another program reads it
            rows = db.execute("SELECT session_id, seq, message FROM agent_nb_messages ORDER BY 1, 2").fetchall()
        return {
            "history rows": rows,
            "sessions": {n: dict(s.state) for n, s in self.sessions.items()},
            "conversations": {e: list(x.conversation) for e, x in self.workflow.executors.items()},
            "pending": self.workflow.pending_requests,
        }

    async def run(self, text: str) -> Any:
        if not self.stream:
            return await self.workflow.run(text)
        stream = self.workflow.run(text, stream=True)
        async for _ in stream:
            pass
        return stream.result


WHERE = {  # which of the researcher's model calls breaks: its 2nd run's first call, or its tool round
    "first call": {3},
    "inside a tool round": {4},
}


def cases() -> list[Any]:
    out = []
    for how in ("raise", "hang", "cancel"):
        for where, calls in WHERE.items():
            for stream, after in ((False, 0), (True, 0), (True, 2)):
                label = f"{how}-{where}-{'stream' if stream else 'run'}" + (f"-after-{after}-chunks" if after else "")
                out.append(pytest.param(how, "empty", calls, stream, after, id=label))
    for garbage in GARBAGE:
        out.append(pytest.param("garbage", garbage, {3}, False, 0, id=f"garbage-{garbage}"))
    return out


@pytest.mark.parametrize(("how", "garbage", "calls", "stream", "after"), cases())
async def test_a_fault_anywhere_leaves_every_store_as_it_was(
    tmp_path: Path, how: str, garbage: str, calls: set[int], stream: bool, after: int
) -> None:
    inner = FunctionChatClient(researcher_model)
    faulty = FaultyChatClient(inner, how=how, on_calls=calls, after_chunks=after, garbage=garbage)  # type: ignore[arg-type]
    shop = Shop(tmp_path, faulty, stream=stream)
    assert (await shop.run("Plan a day in Porto")).status == "completed"  # calls 1 and 2: fine
    before = shop.stores()
    checkpoints_before = {c.id for c in shop.storage.list()}

    task = asyncio.ensure_future(shop.run("And tomorrow?"))
    if how == "hang":
        await faulty.signal().wait()  # the model hangs: the caller gives up
        task.cancel()
    if how in ("hang", "cancel"):
        with pytest.raises(asyncio.CancelledError):
            await task
    elif how == "garbage" and garbage in ("system", "a call of a missing tool"):
        # kept as the agent's own message / answered "there is no tool": nothing to refuse, the run goes on
        assert (await task).status == "completed"
        return
    else:
        with pytest.raises(AgentNbError):
            await task

    assert shop.stores() == before  # histories, sessions, routes, conversations, pending requests
    new = [c for c in shop.storage.list() if c.id not in checkpoints_before]
    assert new, "the checkpoints taken before the failure are kept"

    faulty.on_calls = frozenset()  # the fault is gone: resume from the last checkpoint before it
    resumed = await shop.build().run(checkpoint_id=new[-1].id, checkpoint_storage=shop.storage)
    assert resumed.status == "completed"
    # the histories are those of the two runs done without a fault: no turn lost, none twice
    (tmp_path / "reference").mkdir()
    reference = Shop(tmp_path / "reference", FaultyChatClient(inner, on_calls=()), stream=stream)
    await reference.run("Plan a day in Porto")
    await reference.run("And tomorrow?")
    for name, session in shop.sessions.items():
        got = [m.text for m in await shop.history.load(session)]
        assert got == [m.text for m in await reference.history.load(reference.sessions[name])], name


async def test_the_same_workflow_runs_to_the_end_once_the_fault_is_gone(tmp_path: Path) -> None:
    faulty = FaultyChatClient(FunctionChatClient(researcher_model), how="raise", on_calls={1})
    shop = Shop(tmp_path, faulty, stream=False)
    with pytest.raises(AgentNbError, match="route 'fast' of router 'router'"):
        await shop.run("Plan a day in Porto")
    assert shop.stores()["history rows"] == []
    done = await shop.run("Plan a day in Porto")
    assert done.status == "completed"
    sessions = {row[0] for row in shop.stores()["history rows"]}
    assert sessions == {"planner", "researcher", "writer"}  # one run's turns, once each
    rows = shop.stores()["history rows"]
    assert len(rows) == len({(r[0], r[1]) for r in rows})


async def test_a_fault_while_recording_keeps_the_good_cassette(tmp_path: Path) -> None:
    from agent_nb.clients.replay import RecordingChatClient, ReplayChatClient

    path = tmp_path / "trip.json"
    good = RecordingChatClient(MirrorChatClient(), path)
    await ChatAgent(good, name="a").run("hi")
    recorded = path.read_bytes()
    broken = RecordingChatClient(FaultyChatClient(MirrorChatClient(), how="raise"), path)
    with pytest.raises(AgentNbError):
        await ChatAgent(broken, name="a").run("hi")
    assert path.read_bytes() == recorded
    replayed = await ChatAgent(ReplayChatClient(path), name="a").run("hi")
    assert replayed.text == 'I see 1 message: user "hi"'


async def test_each_failing_call_raises_an_error_of_its_own() -> None:
    given = ValueError("the proxy dropped the call")
    for error in (given, KeyError):
        faulty = FaultyChatClient(MirrorChatClient(), how="raise", error=error)
        raised = []
        for _ in range(2):
            with pytest.raises(type(given) if error is given else KeyError) as info:
                await faulty.get_response([Message("user", "hi")])
            raised.append(info.value)
        assert raised[0] is not raised[1] and given not in raised  # the one given is never raised itself
        assert all(len(list(_frames(e))) == len(list(_frames(raised[0]))) for e in raised)  # no traceback piles up
    assert raised[1].args == ("FaultyChatClient(MirrorChatClient(), how='raise'): call 2 failed on purpose",)
    with pytest.raises(TypeError, match=r"error='boom' \(str\) is not accepted; give an exception"):
        FaultyChatClient(MirrorChatClient(), error="boom")  # type: ignore[arg-type]


def _frames(error: BaseException) -> Any:
    tb = error.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


async def test_a_stream_that_breaks_off_closes_the_stream_it_wraps() -> None:
    closed = []

    class Chunks:
        capabilities = None

        async def get_streaming_response(self, messages: Any, options: Any = None, *, session: Any = None) -> Any:
            try:
                for word in ("one", "two", "three", "four"):
                    yield ChatResponseUpdate([TextContent(word)], role="assistant")
            finally:
                closed.append(True)

    faulty = FaultyChatClient(Chunks(), how="raise", after_chunks=2)  # type: ignore[arg-type]
    seen = []
    with pytest.raises(ModelUnavailable):
        async for update in faulty.get_streaming_response([Message("user", "hi")]):
            seen.append(update.text)
    assert seen == ["one", "two"] and closed == [True]  # closed at once, not when collected
